/*
 * tests/unit/test_shim_attach.c: an attach -t client's frames on the shim's side
 * (agent/shim_attach.h) against a real pty: stdin and resize frames, split at every byte, reach
 * the container's terminal (its input, its size); a hostile client's frame of an unknown type,
 * a length over the limit, or a zero size is refused (the client dropped, the size kept), and
 * the other clients go on.
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "agent/shim_attach.h"

struct fx {
    char dir[64];
    int dfd, master, slave, in_fd;
    struct fatia_shim_attach at;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct termios t;

    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/fatia-ut-attach-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->dfd = open(f->dir, O_RDONLY | O_DIRECTORY);
    assert_true(f->dfd >= 0);
    assert_int_equal(fatia_shim_attach_listen(&f->at, f->dfd, "main"), 0);
    assert_int_equal(openpty(&f->master, &f->slave, NULL, NULL, NULL), 0);
    assert_int_equal(tcgetattr(f->slave, &t), 0);
    cfmakeraw(&t);
    assert_int_equal(tcsetattr(f->slave, TCSANOW, &t), 0);
    f->in_fd = dup(f->master);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char p[128];

    fatia_shim_attach_hangup(&f->at);
    close(f->at.lsock);
    close(f->master);
    close(f->slave);
    close(f->in_fd);
    snprintf(p, sizeof(p), "%s/attach-main.sock", f->dir);
    unlink(p);
    close(f->dfd);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* A connected client, accepted by the shim's side. */
static int client(struct fx *f)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int c = socket(AF_UNIX, SOCK_STREAM, 0);

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/attach-main.sock", f->dir);
    assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_true(fatia_shim_attach_handle(&f->at, f->at.lsock, POLLIN, &f->in_fd, false, f->master));
    return c;
}

/* Lets the shim's side handle what client i sent. */
static void pump(struct fx *f, size_t i)
{
    int fd = f->at.cli[i];
    struct pollfd p = {.fd = fd, .events = POLLIN};

    assert_int_equal(poll(&p, 1, 1000), 1);
    assert_true(fatia_shim_attach_handle(&f->at, fd, p.revents, &f->in_fd, false, f->master));
}

static void size_of(int fd, int *rows, int *cols)
{
    struct winsize ws;
    assert_int_equal(ioctl(fd, TIOCGWINSZ, &ws), 0);
    *rows = ws.ws_row;
    *cols = ws.ws_col;
}

static void test_frames_split(void **state)
{
    struct fx *f = *state;
    const unsigned char msg[] = {'t', 0, 0, 2, 'h', 'i', 4, 0, 4, 0, 30, 0, 90};
    char got[8] = {0};
    int c = client(f), rows, cols;

    for (size_t k = 0; k < sizeof(msg); k++) { /* one byte at a time */
        assert_int_equal(write(c, msg + k, 1), 1);
        pump(f, 0);
    }
    assert_int_equal(f->at.n, 1);
    assert_int_equal(read(f->slave, got, sizeof(got)), 2);
    assert_string_equal(got, "hi");
    size_of(f->slave, &rows, &cols);
    assert_int_equal(rows, 30);
    assert_int_equal(cols, 90);
    close(c);
}

static void test_hostile(void **state)
{
    struct fx *f = *state;
    const unsigned char size[] = {'t', 4, 0, 4, 0, 40, 0, 100};
    const unsigned char zero[] = {4, 0, 4, 0, 0, 0, 50};
    const unsigned char badtype[] = {'t', 7, 0, 1, 'x'};
    const unsigned char toolong[] = {'t', 0, 0x13, 0x88}; /* 5,000 bytes announced */
    int good = client(f), bad1, bad2, rows, cols;

    assert_int_equal(write(good, size, sizeof(size)), (ssize_t)sizeof(size));
    pump(f, 0);
    assert_int_equal(write(good, zero, sizeof(zero)), (ssize_t)sizeof(zero));
    pump(f, 0);
    size_of(f->slave, &rows, &cols);
    assert_int_equal(rows, 40); /* a zero size is no size */
    assert_int_equal(cols, 100);

    bad1 = client(f);
    assert_int_equal(write(bad1, badtype, sizeof(badtype)), (ssize_t)sizeof(badtype));
    pump(f, 1);
    assert_int_equal(f->at.n, 1); /* dropped */
    bad2 = client(f);
    assert_int_equal(write(bad2, toolong, sizeof(toolong)), (ssize_t)sizeof(toolong));
    pump(f, 1);
    assert_int_equal(f->at.n, 1);
    /* the good client still gets output */
    fatia_shim_attach_output(&f->at, 1, "ok", 2);
    {
        unsigned char fr[7];
        assert_int_equal(read(good, fr, sizeof(fr)), 7);
        assert_int_equal(fr[0], 1);
        assert_memory_equal(fr + 5, "ok", 2);
    }
    close(good);
    close(bad1);
    close(bad2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_frames_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
