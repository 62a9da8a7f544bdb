/*
 * cli/cmd_validate.c: `fatia validate -f PATH...`: decode and validate every object, say which
 * are fine, report every problem with file:line:column, object and field path.
 *
 * Files are processed in order and each document is decoded with a diagnostic list of its own,
 * so that its errors print right under its line; a parse error ends its file (the YAML parser
 * cannot resume) but not the run. Exit 1 if any document was invalid or any file unreadable.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/error.h"
#include "base/json.h"
#include "base/vec.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/input.h"
#include "demand/demand.h"
#include "model/crd_kind.h"
#include "model/objset.h"

/* A CustomResourceDefinition among the inputs defines its kind for the documents after it, as
 * fatiad serves it once applied (model/crd_kind.c: the schema, its defaults and pruning; the
 * patterns and CEL rules are fatiad's alone, apiserver/crd_rules.c). A CRD of a compiled kind
 * changes nothing, as fatiad refuses it. */
static void serve_crd(const json_t *crd)
{
    const json_t *spec = json_object_get(crd, "spec");
    const char *group = fatia_json_str(spec, "group");
    const char *plural = fatia_json_str(json_object_get(spec, "names"), "plural");
    const struct fatia_kind *k,
        *old = group && plural ? fatia_kind_by_resource(group, plural) : NULL;
    char why[512];

    if (old && !fatia_kind_is_custom(old))
        return;
    if (fatia_kind_custom_new(crd, &k, why, sizeof(why)) < 0)
        return;
    if (old)
        fatia_kind_custom_unregister(old);
    if (fatia_kind_custom_register(k) < 0)
        fatia_kind_custom_free(k);
}

static const char usage[] =
    "Usage: fatia validate -f PATH... [-R] [-o table|json|yaml]\n"
    "\n"
    "Decode and validate every object in the given files or directories (their *.yaml, *.yml\n"
    "and *.json files; '-' reads stdin), as fatiad would on apply. Prints one line per object\n"
    "(ok KIND/NAME, or KIND/NAMESPACE/NAME) and every error with file:line:column and the\n"
    "field path. The verdict is fatiad's for a create with kubectl's default validation: a\n"
    "metadata.generateName stands for the name, unknown fields are errors (--field-validation\n"
    "Warn makes them warnings, as kubectl --validate=warn). A CustomResourceDefinition among\n"
    "the inputs defines its kind for the documents after it (its CEL rules and patterns are\n"
    "checked by fatiad only).\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH   file, directory or '-' (repeatable)\n"
    "      --field-validation Strict|Warn   unknown fields: errors (default) or warnings\n"
    "  -R, --recursive       descend into subdirectories\n"
    "  -o, --output FORMAT   table (default), json or yaml\n"
    "  -q, --quiet           print errors only\n"
    "\n"
    "Exit status: 0 all valid, 1 some object invalid or some file unreadable, 2 usage.\n";

struct result {
    const char *id_kind; /* borrowed */
    char *id;
    const char *file;
    unsigned line;
    bool ok;
};

static json_t *diag_json(const struct fatia_diag_entry *e)
{
    return json_pack("{s:s,s:s?,s:I,s:I,s:s?,s:s?,s:s}", "level",
                     e->level == FATIA_DIAG_ERROR ? "error" : "warning", "file", e->file, "line",
                     (json_int_t)e->line, "column", (json_int_t)e->col, "object", e->object, "path",
                     e->path, "message", e->msg);
}

static void print_diag(const struct fatia_diag *d, json_t *jdiags)
{
    if (jdiags) {
        for (size_t i = 0; i < d->n; i++)
            json_array_append_new(jdiags, diag_json(&d->v[i]));
        return;
    }
    fatia_diag_print(d, stdout);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {FATIA_CLI_INPUT_OPTIONS,
                                         {"quiet", no_argument, NULL, 'q'},
                                         {"field-validation", required_argument, NULL, 'V'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct fatia_cli_input in;
    bool quiet = false, strict = true;
    struct fatia_objset set;
    json_t *jobjs = NULL, *jdiags = NULL;
    size_t n_ok = 0, n_bad = 0, n_warn = 0, n_files_bad = 0;
    int c, r, rc = FATIA_EXIT_OK;

    fatia_cli_input_init(&in, &fatia_cmd_validate, FATIA_OUT_TABLE);
    while ((c = getopt_long(argc, argv, "f:Ro:qh", opts, NULL)) != -1) {
        r = fatia_cli_input_opt(&in, c, optarg);
        if (r < 0)
            goto usage;
        if (r > 0)
            continue;
        switch (c) {
        case 'q':
            quiet = true;
            break;
        case 'V':
            if (!strcmp(optarg, "Strict"))
                strict = true;
            else if (!strcmp(optarg, "Warn"))
                strict = false;
            else {
                fatia_cli_input_release(&in);
                return fatia_cli_usage_error(&fatia_cmd_validate,
                                             "--field-validation: Strict or Warn");
            }
            break;
        case 'h':
            fatia_cli_input_release(&in);
            return fatia_cli_help(&fatia_cmd_validate);
        default:
            fatia_cli_input_release(&in);
            return fatia_cli_usage_error(&fatia_cmd_validate, "unknown option");
        }
    }
    if ((r = fatia_cli_input_args(&in, optind, argc, argv, true)) < 0)
        goto usage;
    if (in.out != FATIA_OUT_TABLE) {
        jobjs = json_array();
        jdiags = json_array();
    }

    fatia_objset_init(&set);
    for (size_t p = 0; p < in.paths.n; p++) {
        struct fatia_diag file_diag;
        size_t first = set.docs.n;

        fatia_diag_init(&file_diag);
        r = fatia_docset_load_path(&set.docs, in.paths.v[p], in.recursive, &file_diag);
        if (r == -ENOMEM) {
            fprintf(stderr, "fatia validate: out of memory\n");
            rc = FATIA_EXIT_FAIL;
            fatia_diag_release(&file_diag);
            break;
        }
        for (size_t i = first; i < set.docs.n; i++) {
            const struct fatia_doc *d = &set.docs.docs[i];
            /* what fatiad decides for a create of this document (ops.c): one rule */
            struct fatia_decode_opts o = {.file = d->file,
                                          .map = set.docs.map,
                                          .pos = d->pos,
                                          .allow_generate_name = true,
                                          .strict_unknown = strict};
            struct fatia_diag dd;
            struct fatia_object *obj = NULL;
            char id[320] = "";
            bool ok;

            fatia_diag_init(&dd);
            r = fatia_object_decode(d->root, &o, &fatia_demand_checks, &dd, &obj);
            fatia_objset_check_duplicate(&set, d, &dd);
            if (r == 0 && obj->kind == fatia_kind_by_resource("apiextensions.k8s.io",
                                                              "customresourcedefinitions"))
                serve_crd(obj->obj); /* its kind, for the documents after it */
            if (r == 0) {
                snprintf(id, sizeof(id), "%s", obj->id);
                if (obj->warning)
                    fatia_diag_add(&dd, FATIA_DIAG_WARNING, d->file, d->pos.line, d->pos.col,
                                   obj->id, "apiVersion", "%s", obj->warning);
                fatia_object_free(obj);
            } else {
                const char *kind = fatia_json_str(d->root, "kind");
                json_t *meta = json_object_get(d->root, "metadata");
                const char *name = fatia_json_str(meta, "name");
                const struct fatia_kind *k = kind ? fatia_kind_by_name(kind) : NULL;
                if (k) {
                    fatia_object_format_id(k, fatia_json_str(meta, "namespace"), name ? name : "?",
                                           id, sizeof(id));
                } else {
                    snprintf(id, sizeof(id), "%s/%s", kind ? kind : "object", name ? name : "?");
                    for (char *q = id; *q && *q != '/'; q++)
                        *q = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
                }
            }
            ok = !fatia_diag_has_errors(&dd);
            n_ok += ok;
            n_bad += !ok;
            n_warn += dd.n - dd.n_errors;
            if (jobjs) {
                json_array_append_new(jobjs,
                                      json_pack("{s:s,s:s,s:I,s:b}", "object", id, "file", d->file,
                                                "line", (json_int_t)d->pos.line, "valid", ok));
            } else if (!quiet || !ok) {
                printf("%s %s\n", ok ? "ok" : "invalid", id);
            }
            print_diag(&dd, jdiags);
            fatia_diag_release(&dd);
        }
        if (fatia_diag_has_errors(&file_diag))
            n_files_bad++;
        print_diag(&file_diag, jdiags);
        fatia_diag_release(&file_diag);
    }
    if (n_bad || n_files_bad)
        rc = FATIA_EXIT_FAIL;
    if (jobjs) {
        json_t *doc = json_pack("{s:o,s:o,s:{s:I,s:I,s:I}}", "objects", jobjs, "diagnostics",
                                jdiags, "summary", "valid", (json_int_t)n_ok, "invalid",
                                (json_int_t)n_bad, "warnings", (json_int_t)n_warn);
        if (fatia_cli_print(doc, in.out) != FATIA_EXIT_OK)
            rc = FATIA_EXIT_FAIL;
        json_decref(doc);
    } else {
        fflush(stdout);
        fprintf(stderr, "%zu valid, %zu invalid, %zu warnings%s\n", n_ok, n_bad, n_warn,
                n_files_bad ? ", some files could not be read" : "");
    }
    fatia_objset_release(&set);
    fatia_kind_custom_free_all();
    fatia_cli_input_release(&in);
    return rc;
usage:
    rc = fatia_cli_input_exit(&in, r);
    fatia_cli_input_release(&in);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_validate = {
    .name = "validate",
    .summary = "decode and validate manifests, reporting every error with its place",
    .usage = usage,
    .run = run,
};
