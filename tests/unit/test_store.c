/*
 * tests/unit/test_store.c: the store says what is wrong with a file (empty, not SQLite, another
 * application's database, a newer schema), upgrades a store of an earlier release in place
 * (tests/data/store/earlier-release.db, made by fatiad at main 6516808), and copies a store
 * consistently while its writer thread commits (fatia_store_backup).
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>

#include "base/error.h"
#include "store/store.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fatia-test-store-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[400];
    (void)state;
    if (!d)
        return -1;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
            unlink(p);
        }
    closedir(d);
    return rmdir(dir);
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int open_why(const char *path, char *why, size_t n, struct fatia_store **ret)
{
    struct fatia_store_opts o = {.why = why, .why_n = n};
    return fatia_store_open(path, &o, ret);
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, text, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static int count_row(void *arg, const struct fatia_store_row *row)
{
    (void)row;
    (*(int *)arg)++;
    return 0;
}

static void test_refuses_what_is_not_a_store(void **state)
{
    char path[128], why[600];
    struct fatia_store *s = NULL;
    (void)state;

    /* zero-length: refused, never an empty cluster */
    path_of(path, sizeof(path), "empty.db");
    write_file(path, "");
    assert_int_equal(open_why(path, why, sizeof(why), &s), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "is empty (0 bytes)"));
    assert_non_null(strstr(why, "empty.db"));

    /* a text file */
    path_of(path, sizeof(path), "text.db");
    write_file(path, "apiVersion: v1\nkind: Pod\n# not a database, but long enough to look like one"
                     "................................................................"
                     "................................................................\n");
    assert_int_equal(open_why(path, why, sizeof(why), &s), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "not a SQLite database"));

    /* another application's SQLite database, marked */
    path_of(path, sizeof(path), "other.db");
    sql(path, "PRAGMA application_id = 1234; CREATE TABLE t(x);");
    assert_int_equal(open_why(path, why, sizeof(why), &s), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "another application (application_id 0x000004d2)"));

    /* an unmarked SQLite database that is not fatia's */
    path_of(path, sizeof(path), "plain.db");
    sql(path, "CREATE TABLE objects(x); PRAGMA user_version = 1;");
    assert_int_equal(open_why(path, why, sizeof(why), &s), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "not a fatia store"));

    /* a fatia store of a newer schema */
    path_of(path, sizeof(path), "newer.db");
    assert_int_equal(open_why(path, why, sizeof(why), &s), 0);
    fatia_store_close(s);
    sql(path, "PRAGMA user_version = 99;");
    assert_int_equal(open_why(path, why, sizeof(why), &s), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "schema version 99"));
    assert_non_null(strstr(why, "newer fatia release"));
}

static uint64_t pragma(const char *path, const char *name)
{
    char q[64];
    sqlite3 *db;
    sqlite3_stmt *st;
    uint64_t v = 0;

    snprintf(q, sizeof(q), "PRAGMA %s", name);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void copy_file(const char *from, const char *to)
{
    char buf[65536];
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    size_t n;

    assert_non_null(in);
    assert_non_null(out);
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static void test_new_and_earlier_stores(void **state)
{
    char path[128], why[600];
    struct fatia_store *s;
    int n = 0;
    (void)state;

    /* a new store is marked */
    path_of(path, sizeof(path), "new.db");
    assert_int_equal(open_why(path, why, sizeof(why), &s), 0);
    fatia_store_close(s);
    assert_int_equal(pragma(path, "application_id"), FATIA_STORE_APPLICATION_ID);
    assert_int_equal(pragma(path, "user_version"), 1);

    /* a store of an earlier release (no application_id): read-only opens it as it is ... */
    path_of(path, sizeof(path), "earlier.db");
    copy_file("tests/data/store/earlier-release.db", path);
    assert_int_equal(pragma(path, "application_id"), 0);
    {
        struct fatia_store_opts ro = {.read_only = true, .why = why, .why_n = sizeof(why)};
        assert_int_equal(fatia_store_open(path, &ro, &s), 0);
        fatia_store_close(s);
        assert_int_equal(pragma(path, "application_id"), 0);
    }
    /* ... and a writer marks it in place, with every object kept */
    assert_int_equal(open_why(path, why, sizeof(why), &s), 0);
    assert_int_equal(fatia_store_rv(s), 33);
    assert_int_equal(fatia_store_load(s, count_row, &n), 0);
    assert_int_equal(n, 24);
    fatia_store_close(s);
    assert_int_equal(pragma(path, "application_id"), FATIA_STORE_APPLICATION_ID);
    assert_int_equal(open_why(path, why, sizeof(why), &s), 0);
    fatia_store_close(s);
}

static void op(struct fatia_store_op *o, uint64_t rv, const char *name, const char *json)
{
    *o = (struct fatia_store_op){.rv = rv,
                                 .type = FATIA_STORE_ADDED,
                                 .group = "",
                                 .kind = "ConfigMap",
                                 .ns = "default",
                                 .name = name,
                                 .uid = "u",
                                 .json = json,
                                 .json_len = strlen(json)};
}

/* Backups taken while the writer commits are each the state at one commit: rv N holds exactly
 * the objects 1..N (every commit adds one object). */
static void test_backup_while_writing(void **state)
{
    char path[128], copy[128], why[600], names[400][16];
    struct fatia_store_op ops[400];
    struct fatia_store_batch batches[400], *d;
    struct fatia_store *s;
    size_t reaped = 0;
    (void)state;

    path_of(path, sizeof(path), "live.db");
    path_of(copy, sizeof(copy), "copy.db");
    assert_int_equal(open_why(path, why, sizeof(why), &s), 0);
    assert_int_equal(fatia_store_writer_start(s), 0);
    for (int i = 0; i < 400; i++) {
        snprintf(names[i], sizeof(names[i]), "cm-%d", i);
        op(&ops[i], (uint64_t)i + 1, names[i], "{\"kind\":\"ConfigMap\"}");
        batches[i] = (struct fatia_store_batch){.ops = &ops[i], .n = 1};
    }
    for (int i = 0; i < 400; i++) {
        assert_int_equal(fatia_store_submit(s, &batches[i]), 0);
        if (i % 50 == 25) {
            struct fatia_store_opts ro = {.read_only = true};
            struct fatia_store *c;
            int n = 0;
            assert_int_equal(fatia_store_backup(path, copy, why, sizeof(why)), 0);
            assert_int_equal(fatia_store_open(copy, &ro, &c), 0);
            assert_int_equal(fatia_store_check(c), 0);
            assert_int_equal(fatia_store_load(c, count_row, &n), 0);
            assert_int_equal((uint64_t)n, fatia_store_rv(c));
            fatia_store_close(c);
        }
        while ((d = fatia_store_reap(s))) {
            assert_int_equal(d->result, 0);
            reaped++;
        }
    }
    while (reaped < 400) {
        usleep(1000);
        while ((d = fatia_store_reap(s)))
            reaped++;
    }
    assert_int_equal(fatia_store_backup(path, copy, why, sizeof(why)), 0);
    fatia_store_close(s);
    /* the last copy opens as a store for writing (what fatiad does after a restore) */
    assert_int_equal(open_why(copy, why, sizeof(why), &s), 0);
    assert_int_equal(fatia_store_rv(s), 400);
    fatia_store_close(s);

    /* a backup of what is not a store says so, and leaves no file behind */
    path_of(path, sizeof(path), "empty2.db");
    write_file(path, "");
    path_of(copy, sizeof(copy), "nothing.db");
    assert_int_equal(fatia_store_backup(path, copy, why, sizeof(why)), -FATIA_E_CORRUPT);
    assert_non_null(strstr(why, "is empty"));
    assert_int_equal(access(copy, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refuses_what_is_not_a_store),
        cmocka_unit_test(test_new_and_earlier_stores),
        cmocka_unit_test(test_backup_while_writing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
