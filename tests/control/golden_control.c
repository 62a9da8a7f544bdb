/*
 * tests/control/golden_control.c: the golden cases of the admission engine
 * (tests/golden/control/NNNN-slug/), run through the same driver as `fatia schedule -o json`.
 *
 * A case directory holds input.yaml and expected.json. input.yaml starts with comment lines:
 *     # source: <the Kueue document section or upstream test case it transcribes>   (required)
 *     # fixture: ../fixtures/<file>.yaml     (optional, repeatable: shared objects, loaded first)
 *     # args: --cycles 1 --now 2026-01-01T00:00:10Z                          (optional)
 * The runner loads the fixtures and the input as `fatia schedule -f FIXTURE... -f input.yaml
 * ARGS` would, runs the engine, and compares the JSON with expected.json (numbers and key order
 * do not matter). A case without a source line fails: every case says what it transcribes.
 *
 * To reproduce one by hand:
 *     fatia schedule -f tests/golden/control/fixtures/F.yaml -f tests/golden/control/C/input.yaml
 *         -o json ARGS
 * FATIA_GOLDEN_WRITE=1 writes the actual output of cases that have no expected.json yet (for a
 * new case, whose output must then be checked by hand against its source before committing).
 *
 * Usage: golden_control [DIR [MIN]] (default tests/golden/control, run from the source tree; the
 * run fails when the directory holds fewer than MIN cases).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <dirent.h>

#include "base/clock.h"
#include "base/json.h"
#include "base/str.h"
#include "control/control.h"
#include "model/objset.h"

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parses "--cycles N" and "--now TIME" from an args line. */
static int parse_args(const char *line, struct fatia_schedule_opts *o, char *why, size_t n)
{
    char buf[512], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", line);
    for (tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *val = strtok_r(NULL, " \t", &save);
        if (!val) {
            snprintf(why, n, "args: %s needs a value", tok);
            return -1;
        }
        if (!strcmp(tok, "--cycles")) {
            if (fatia_parse_int(val, 1, FATIA_SCHEDULE_MAX_CYCLES, &o->cycles) < 0) {
                snprintf(why, n, "args: bad --cycles '%s'", val);
                return -1;
            }
        } else if (!strcmp(tok, "--now")) {
            if (fatia_time_parse_rfc3339(val, &o->now) < 0) {
                snprintf(why, n, "args: bad --now '%s'", val);
                return -1;
            }
            o->have_now = true;
        } else {
            snprintf(why, n, "args: unknown option '%s'", tok);
            return -1;
        }
    }
    return 0;
}

static int run_case(const char *dir, const char *name)
{
    char path[4096], why[512] = "";
    char *input, *line, *save = NULL, *paths[16];
    size_t n_paths = 0;
    bool has_source = false;
    struct fatia_schedule_opts opts = {0};
    struct fatia_schedule_report rep;
    struct fatia_objset set;
    struct fatia_diag diag;
    json_t *want = NULL;
    json_error_t jerr;
    int r, fails = 0;

    snprintf(path, sizeof(path), "%s/%s/input.yaml", dir, name);
    input = read_text(path);
    if (!input) {
        fprintf(stderr, "FAIL %s: cannot read %s\n", name, path);
        return 1;
    }
    for (line = strtok_r(input, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] != '#')
            break;
        if (fatia_str_has_prefix(line, "# source:") && strlen(line) > 12)
            has_source = true;
        else if (fatia_str_has_prefix(line, "# fixture:") && n_paths < 15) {
            char *f = line + 10;
            while (*f == ' ')
                f++;
            if (asprintf(&paths[n_paths], "%s/%s/%s", dir, name, f) < 0)
                abort();
            n_paths++;
        } else if (fatia_str_has_prefix(line, "# args:")) {
            if (parse_args(line + 7, &opts, why, sizeof(why)) < 0) {
                fprintf(stderr, "FAIL %s: %s\n", name, why);
                fails++;
            }
        }
    }
    free(input);
    if (!has_source) {
        fprintf(stderr, "FAIL %s: input.yaml has no '# source:' line\n", name);
        fails++;
    }
    if (asprintf(&paths[n_paths], "%s/%s/input.yaml", dir, name) < 0)
        abort();
    n_paths++;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    r = fatia_objset_load(&set, paths, n_paths, false, NULL, &diag);
    if (r < 0 || fatia_diag_has_errors(&diag)) {
        fprintf(stderr, "FAIL %s: the input does not validate:\n", name);
        fatia_diag_print(&diag, stderr);
        fails++;
        goto out;
    }
    fatia_diag_release(&diag);
    fatia_diag_init(&diag);
    r = fatia_control_schedule(&set, &opts, &rep, &diag);
    if (r < 0) {
        fprintf(stderr, "FAIL %s: schedule: %d\n", name, r);
        fatia_diag_print(&diag, stderr);
        fails++;
        goto out;
    }
    snprintf(path, sizeof(path), "%s/%s/expected.json", dir, name);
    want = json_load_file(path, 0, &jerr);
    if (!want && getenv("FATIA_GOLDEN_WRITE")) {
        json_dump_file(rep.result, path, JSON_INDENT(2));
        fprintf(stderr, "WROTE %s (check it against the source before committing)\n", path);
    } else if (!want) {
        fprintf(stderr, "FAIL %s: cannot read expected.json: %s\n", name, jerr.text);
        fails++;
    } else if (!fatia_json_equal(want, rep.result)) {
        char *got = json_dumps(rep.result, JSON_INDENT(2));
        char *exp = json_dumps(want, JSON_INDENT(2));
        fprintf(stderr, "FAIL %s: output differs\n--- expected\n%s\n--- got\n%s\n", name, exp, got);
        free(got);
        free(exp);
        fails++;
    }
    json_decref(rep.result);
    json_decref(rep.usage);
out:
    json_decref(want);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    if (!fails)
        printf("ok %s\n", name);
    return fails;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/golden/control";
    char **names = NULL;
    size_t n = 0, cap = 0;
    int fails = 0;
    struct dirent *de;
    DIR *d = opendir(dir);

    if (!d) {
        fprintf(stderr, "golden_control: cannot open %s\n", dir);
        return 1;
    }
    while ((de = readdir(d))) {
        char p[4096];
        struct stat st;
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "fixtures"))
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof(*names));
        }
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        fails += run_case(dir, names[i]);
        free(names[i]);
    }
    free(names);
    printf("%zu cases, %d failed\n", n, fails);
    if (argc > 2 && n < (size_t)strtoul(argv[2], NULL, 10)) {
        fprintf(stderr, "golden_control: only %zu cases (at least %s expected)\n", n, argv[2]);
        return 1;
    }
    return fails ? 1 : 0;
}
