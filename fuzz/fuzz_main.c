/*
 * fuzz/fuzz_main.c: a replay driver for libFuzzer targets, so that gcc and ASan builds run every
 * corpus as a test (systemd's fuzz-main.c). Arguments are files or directories; each file is one
 * input. Exits non-zero only by crashing (or on an unreadable argument).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <dirent.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

static int run_path(const char *path, size_t *count)
{
    struct stat st;
    struct dirent *de;
    DIR *d;
    int r = 0;

    if (stat(path, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    d = opendir(path);
    if (!d)
        return -1;
    while ((de = readdir(d))) {
        char full[4096];
        if (de->d_name[0] == '.')
            continue;
        snprintf(full, sizeof(full), "%s/%s", path, de->d_name);
        if (run_path(full, count) < 0)
            r = -1;
    }
    closedir(d);
    return r;
}

int main(int argc, char **argv)
{
    size_t count = 0;

    for (int i = 1; i < argc; i++) {
        if (run_path(argv[i], &count) < 0) {
            fprintf(stderr, "fuzz replay: cannot read '%s'\n", argv[i]);
            return 1;
        }
    }
    printf("replayed %zu inputs\n", count);
    return 0;
}
