/*
 * bench/api_fanout.c: watch fan-out of fatiad: one write reaches N watchers how fast?
 *
 *     api_fanout HOST PORT TOKEN WATCHERS ROUNDS
 *
 * Opens WATCHERS plain-HTTP watches on WorkloadPriorityClasses (fatiad --no-tls), then ROUNDS
 * times patches one object from a separate connection and measures, for every watcher, the time
 * from sending the patch to receiving its MODIFIED event, and the time until the last watcher
 * has it. Prints `name: value unit` lines (medians over rounds). A standalone program (plain
 * sockets, epoll) so that the load generator is small and pinnable, and bench/api.sh can build
 * it with cc alone.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <unistd.h>

#define MAXW 1024

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int dial(const char *host, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    inet_pton(AF_INET, host, &a.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        perror("connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("write");
            exit(1);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Reads one HTTP response with a Content-Length body; returns the status. */
static int read_response(int fd)
{
    char buf[65536];
    size_t have = 0, need = 0;
    char *body = NULL;

    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
        if (r <= 0) {
            perror("read");
            exit(1);
        }
        have += (size_t)r;
        buf[have] = '\0';
        if (!body && (body = strstr(buf, "\r\n\r\n"))) {
            char *cl = strcasestr(buf, "Content-Length:");
            body += 4;
            need = cl ? strtoul(cl + 15, NULL, 10) : 0;
        }
        if (body && have - (size_t)(body - buf) >= need)
            return (int)strtol(buf + 9, NULL, 10);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[(size_t)((double)(n - 1) * p)];
}

int main(int argc, char **argv)
{
    const char *host, *token;
    int port, nw, rounds, ep, writer;
    int fds[MAXW];
    char req[4096];
    double *lat, *last;
    size_t nlat = 0;

    if (argc != 6) {
        fprintf(stderr, "usage: api_fanout HOST PORT TOKEN WATCHERS ROUNDS\n");
        return 2;
    }
    host = argv[1];
    port = (int)strtol(argv[2], NULL, 10);
    token = argv[3];
    nw = (int)strtol(argv[4], NULL, 10);
    rounds = (int)strtol(argv[5], NULL, 10);
    if (nw < 1 || nw > MAXW || rounds < 1)
        return 2;
    lat = calloc((size_t)nw * (size_t)rounds, sizeof(double));
    last = calloc((size_t)rounds, sizeof(double));

    /* the object every round patches */
    writer = dial(host, port);
    {
        const char *body = "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":"
                           "\"WorkloadPriorityClass\",\"metadata\":{\"name\":\"fanout\"},"
                           "\"value\":0}";
        int n = snprintf(req, sizeof(req),
                         "POST /apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses HTTP/1.1\r\n"
                         "Host: x\r\nAuthorization: Bearer %s\r\nContent-Type: "
                         "application/json\r\nContent-Length: %zu\r\n\r\n%s",
                         token, strlen(body), body);
        send_all(writer, req, (size_t)n);
        read_response(writer); /* 201, or 409 when it exists already */
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < nw; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        int n;
        fds[i] = dial(host, port);
        n = snprintf(req, sizeof(req),
                     "GET /apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses?watch=1&"
                     "fieldSelector=metadata.name%%3Dfanout HTTP/1.1\r\n"
                     "Host: x\r\nAuthorization: Bearer %s\r\n\r\n",
                     token);
        send_all(fds[i], req, (size_t)n);
        epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e);
    }
    /* let the watches start, and swallow their replay */
    {
        struct epoll_event ev[64];
        char buf[65536];
        double until = now_ms() + 500;
        while (now_ms() < until) {
            int n = epoll_wait(ep, ev, 64, 50);
            for (int i = 0; i < n; i++)
                (void)!read(fds[ev[i].data.u32], buf, sizeof(buf));
        }
    }
    for (int r = 0; r < rounds; r++) {
        char body[128], buf[65536];
        int got = 0, n;
        unsigned char done[MAXW] = {0};
        double t0;
        struct epoll_event ev[64];

        snprintf(body, sizeof(body), "{\"value\":%d}", r + 1);
        n = snprintf(
            req, sizeof(req),
            "PATCH /apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/fanout HTTP/1.1\r\n"
            "Host: x\r\nAuthorization: Bearer %s\r\nContent-Type: "
            "application/merge-patch+json\r\nContent-Length: %zu\r\n\r\n%s",
            token, strlen(body), body);
        t0 = now_ms();
        send_all(writer, req, (size_t)n);
        while (got < nw) {
            int k = epoll_wait(ep, ev, 64, 5000);
            if (k <= 0) {
                fprintf(stderr, "api_fanout: round %d: only %d of %d watchers got the event\n", r,
                        got, nw);
                return 1;
            }
            for (int i = 0; i < k; i++) {
                int w = (int)ev[i].data.u32;
                ssize_t m = read(fds[w], buf, sizeof(buf) - 1);
                if (m <= 0) {
                    fprintf(stderr, "api_fanout: watcher %d closed\n", w);
                    return 1;
                }
                buf[m] = '\0';
                if (!done[w] && strstr(buf, "MODIFIED")) {
                    done[w] = 1;
                    lat[nlat++] = now_ms() - t0;
                    got++;
                }
            }
        }
        last[r] = now_ms() - t0;
        read_response(writer);
        usleep(20000);
    }
    printf("watch_fanout_watchers: %d\n", nw);
    printf("watch_fanout_p50: %.3f ms\n", pct(lat, nlat, 0.50));
    printf("watch_fanout_p99: %.3f ms\n", pct(lat, nlat, 0.99));
    printf("watch_fanout_all_delivered_median: %.3f ms\n", pct(last, (size_t)rounds, 0.50));
    return 0;
}
