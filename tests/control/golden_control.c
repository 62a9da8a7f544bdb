/*
 * tests/control/golden_control.c: the producer of the admission engine's golden cases
 * (tests/golden/control/NNNN-slug/), run through the same driver as `fatia schedule -o json`.
 * The one golden runner, tests/golden/run (suite "control"), calls it once per case and compares
 * what it prints with expected.json (numbers and key order do not matter there);
 * FATIA_GOLDEN_UPDATE=1 makes the runner rewrite expected.json from it.
 *
 * A case directory holds input.yaml and expected.json. input.yaml starts with comment lines:
 *     # source: <the Kueue document section or upstream test case it transcribes>   (required)
 *     # fixture: ../fixtures/<file>.yaml     (optional, repeatable: shared objects, loaded first)
 *     # args: --cycles 1 --now 2026-01-01T00:00:10Z --requeue-batch 1s       (optional)
 * The producer loads the fixtures and the input as `fatia schedule -f FIXTURE... -f input.yaml
 * ARGS` would, runs the engine, and prints the JSON (jansson's 2-space indent, as expected.json
 * is written). A case without a source line fails: every case says what it transcribes.
 *
 * To reproduce one by hand:
 *     fatia schedule -f tests/golden/control/fixtures/F.yaml -f tests/golden/control/C/input.yaml
 *         -o json ARGS
 *
 * Usage: golden_control CASE_DIR (exit 0 with the JSON on stdout, or 1 with why on stderr).
 */
#include "base/compat.h"

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

/* Parses "--cycles N", "--now TIME" and "--requeue-batch D" from an args line. */
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
        } else if (!strcmp(tok, "--requeue-batch")) {
            if (fatia_parse_duration_usec(val, &o->requeue_batch) < 0 || o->requeue_batch < 0) {
                snprintf(why, n, "args: bad --requeue-batch '%s'", val);
                return -1;
            }
        } else {
            snprintf(why, n, "args: unknown option '%s'", tok);
            return -1;
        }
    }
    return 0;
}

static int run_case(const char *dir)
{
    char path[4096], why[512] = "";
    char *input, *line, *save = NULL, *paths[16];
    size_t n_paths = 0;
    bool has_source = false;
    struct fatia_schedule_opts opts = {0};
    struct fatia_schedule_report rep;
    struct fatia_objset set;
    struct fatia_diag diag;
    int r, fails = 0;

    snprintf(path, sizeof(path), "%s/input.yaml", dir);
    input = read_text(path);
    if (!input) {
        fprintf(stderr, "FAIL %s: cannot read %s\n", dir, path);
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
            if (asprintf(&paths[n_paths], "%s/%s", dir, f) < 0)
                abort();
            n_paths++;
        } else if (fatia_str_has_prefix(line, "# args:")) {
            if (parse_args(line + 7, &opts, why, sizeof(why)) < 0) {
                fprintf(stderr, "FAIL %s: %s\n", dir, why);
                fails++;
            }
        }
    }
    free(input);
    if (!has_source) {
        fprintf(stderr, "FAIL %s: input.yaml has no '# source:' line\n", dir);
        fails++;
    }
    if (asprintf(&paths[n_paths], "%s/input.yaml", dir) < 0)
        abort();
    n_paths++;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    r = fatia_objset_load(&set, paths, n_paths, false, NULL, &diag);
    if (r < 0 || fatia_diag_has_errors(&diag)) {
        fprintf(stderr, "FAIL %s: the input does not validate:\n", dir);
        fatia_diag_print(&diag, stderr);
        fails++;
        goto out;
    }
    fatia_diag_release(&diag);
    fatia_diag_init(&diag);
    r = fatia_control_schedule(&set, &opts, &rep, &diag);
    if (r < 0) {
        fprintf(stderr, "FAIL %s: schedule: %d\n", dir, r);
        fatia_diag_print(&diag, stderr);
        fails++;
        goto out;
    }
    if (!fails) {
        char *got = json_dumps(rep.result, JSON_INDENT(2));
        if (!got)
            abort();
        fputs(got, stdout);
        free(got);
    }
    json_decref(rep.result);
    json_decref(rep.usage);
out:
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    for (size_t i = 0; i < n_paths; i++)
        free(paths[i]);
    return fails;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: golden_control CASE_DIR\n");
        return 2;
    }
    return run_case(argv[1]) ? 1 : 0;
}
