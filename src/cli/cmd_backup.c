/*
 * cli/cmd_backup.c: `fatia backup` and `fatia restore`: a consistent copy of fatiad's store, and
 * putting one back.
 *
 * backup works on a running fatiad: the store copies itself with SQLite's online backup API in
 * one read transaction (store.h, fatia_store_backup), so the file is the cluster at one commit,
 * and fatiad's writes go on meanwhile (WAL readers never block the writer).
 *
 * restore is offline only: it takes the data directory's lock (fatiad.lock, the one fatiad
 * holds while it runs) for the whole restore, and refuses when a fatiad holds it. Swapping the
 * database under a running fatiad would leave its cache, its watchers' resourceVersions and its
 * writer thread describing a store that is gone; stopping fatiad first makes the restored state
 * the only one. The store it replaces is kept beside it as store.db.pre-restore (with its WAL),
 * so a mistaken restore can be undone by hand.
 *
 * Both print what the copy holds (objects, resourceVersion) after checking it opens as a store.
 * Files are created 0600 whatever the umask: a store holds every object of the cluster.
 */
#include "base/compat.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "store/store.h"

static const char backup_usage[] =
    "Usage: fatia backup [--data-dir DIR] FILE\n"
    "\n"
    "Copies fatiad's store (DIR/store.db) to FILE, consistently: the state at one commit. fatiad\n"
    "may be running; its writes go on meanwhile. FILE is replaced if it exists.\n"
    "\n"
    "  -d, --data-dir DIR     fatiad's data directory (default .fatia; $FATIA_DATA_DIR is the\n"
    "                         catalog's directory, never fatiad's)\n"
    "\n"
    "Example:\n"
    "  fatia backup --data-dir .fatia fatia-$(date +%F).db\n";

static const char restore_usage[] =
    "Usage: fatia restore [--data-dir DIR] FILE\n"
    "\n"
    "Makes the store FILE (made by `fatia backup`) fatiad's store in DIR. Offline only: refused\n"
    "while a fatiad runs on DIR. The store it replaces is kept as DIR/store.db.pre-restore.\n"
    "After a restore, clients list again (their resourceVersions may be newer than the store's).\n"
    "\n"
    "  -d, --data-dir DIR     fatiad's data directory (created if missing; default .fatia)\n";

struct counts {
    size_t objects;
};

static int count_row(void *arg, const struct fatia_store_row *row)
{
    (void)row;
    ((struct counts *)arg)->objects++;
    return 0;
}

/* Opens path read-only as a store and says what it holds. */
static int describe(const char *verb, const char *path)
{
    char why[600] = "";
    struct fatia_store_opts o = {.read_only = true, .why = why, .why_n = sizeof(why)};
    struct fatia_store *st;
    struct counts n = {0};
    int r;

    r = fatia_store_open(path, &o, &st);
    if (r < 0) {
        fprintf(stderr, "fatia %s: the copy '%s' does not open as a store: %s\n", verb, path,
                why[0] ? why : fatia_strerror(r));
        return r;
    }
    r = fatia_store_load(st, count_row, &n);
    if (r == 0)
        printf("%s: %zu objects, resourceVersion %" PRIu64 "\n", path, n.objects,
               fatia_store_rv(st));
    else
        fprintf(stderr, "fatia %s: reading '%s': %s\n", verb, path, fatia_strerror(r));
    fatia_store_close(st);
    return r;
}

/* Shared option parsing: -d DIR and one FILE. Returns an exit code, or -1 to go on. */
static int parse(const struct fatia_cli_cmd *cmd, int argc, char **argv, const char **ret_dir,
                 const char **ret_file)
{
    static const struct option opts[] = {{"data-dir", required_argument, NULL, 'd'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = ".fatia"; /* never $FATIA_DATA_DIR: that names the catalog's directory */
    int c;

    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            dir = optarg;
            break;
        case 'h':
            return fatia_cli_help(cmd);
        default:
            return fatia_cli_usage_error(cmd, "unknown option");
        }
    }
    if (optind != argc - 1)
        return fatia_cli_usage_error(cmd, "expected one FILE");
    *ret_dir = dir;
    *ret_file = argv[optind];
    return -1;
}

static int run_backup(int argc, char **argv)
{
    const char *dir, *file;
    char src[4096], why[600];
    struct stat st;
    int rc, r;

    rc = parse(&fatia_cmd_backup, argc, argv, &dir, &file);
    if (rc >= 0)
        return rc;
    snprintf(src, sizeof(src), "%s/store.db", dir);
    if (stat(src, &st) < 0) {
        fprintf(stderr, "fatia backup: no store in '%s' ('%s': %s)\n", dir, src,
                fatia_strerror(errno));
        return FATIA_EXIT_FAIL;
    }
    umask(077);
    r = fatia_store_backup(src, file, why, sizeof(why));
    if (r < 0) {
        fprintf(stderr, "fatia backup: %s\n", why[0] ? why : fatia_strerror(r));
        return FATIA_EXIT_FAIL;
    }
    return describe("backup", file) < 0 ? FATIA_EXIT_FAIL : FATIA_EXIT_OK;
}

/* Moves path (and its -wal, if any) to path.pre-restore; drops its -shm. */
static int set_aside(const char *path)
{
    char from[4200], to[4200];

    snprintf(to, sizeof(to), "%s.pre-restore", path);
    if (rename(path, to) < 0)
        return errno == ENOENT ? 0 : -errno;
    snprintf(from, sizeof(from), "%s-wal", path);
    snprintf(to, sizeof(to), "%s.pre-restore-wal", path);
    (void)unlink(to);
    if (rename(from, to) < 0 && errno != ENOENT)
        return -errno;
    snprintf(from, sizeof(from), "%s-shm", path);
    (void)unlink(from);
    return 0;
}

static int run_restore(int argc, char **argv)
{
    const char *dir, *file;
    char path[4096], lock[4096], tmp[4200], why[600];
    int rc = FATIA_EXIT_FAIL, lock_fd, r;

    rc = parse(&fatia_cmd_restore, argc, argv, &dir, &file);
    if (rc >= 0)
        return rc;
    rc = FATIA_EXIT_FAIL;
    umask(077);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "fatia restore: cannot create '%s': %s\n", dir, fatia_strerror(errno));
        return FATIA_EXIT_FAIL;
    }
    snprintf(lock, sizeof(lock), "%s/fatiad.lock", dir);
    lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) {
        fprintf(stderr, "fatia restore: cannot open '%s': %s\n", lock, fatia_strerror(errno));
        return FATIA_EXIT_FAIL;
    }
    if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr,
                "fatia restore: '%s' is in use by a running fatiad (it holds '%s'): stop it "
                "first; restore works offline only\n",
                dir, lock);
        goto out;
    }
    snprintf(path, sizeof(path), "%s/store.db", dir);
    snprintf(tmp, sizeof(tmp), "%s/store.db.restoring", dir);
    r = fatia_store_backup(file, tmp, why, sizeof(why));
    if (r < 0) {
        fprintf(stderr, "fatia restore: %s\n", why[0] ? why : fatia_strerror(r));
        goto out;
    }
    r = set_aside(path);
    if (r == 0 && rename(tmp, path) < 0)
        r = -errno;
    if (r < 0) {
        fprintf(stderr, "fatia restore: cannot put the store in place as '%s': %s\n", path,
                fatia_strerror(r));
        goto out;
    }
    {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
    }
    if (describe("restore", path) == 0)
        rc = FATIA_EXIT_OK;

out:
    close(lock_fd);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_backup = {
    .name = "backup",
    .summary = "copy fatiad's store consistently, while it runs",
    .usage = backup_usage,
    .run = run_backup,
};

const struct fatia_cli_cmd fatia_cmd_restore = {
    .name = "restore",
    .summary = "put a backup in place as fatiad's store (fatiad stopped)",
    .usage = restore_usage,
    .run = run_restore,
};
