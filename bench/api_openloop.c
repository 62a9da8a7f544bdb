/*
 * bench/api_openloop.c: creates at a fixed arrival rate, latency without coordinated omission.
 *
 *     api_openloop HOST PORT TOKEN NAMESPACE RATE SECONDS [CONNECTIONS]
 *
 * Model. Request i is due at t0 + i / RATE whatever happened to the requests before it (an open
 * loop, as wrk2 and the Kubernetes density tests drive an API server); its latency is counted
 * from the moment it was due, not from the moment it was sent, so a server that stalls is
 * charged for every request that waited behind the stall (Gil Tene's "coordinated omission").
 * A due request goes out on an idle keep-alive connection of a pool of CONNECTIONS (default 64);
 * when every connection is busy it waits in a FIFO for the first one to free, its clock running.
 * Each request creates a LocalQueue of about 2 KB with a unique name (the object of
 * bench/api_write.lua, so the figures compare with bench/create-cost.sh's closed loop).
 *
 * Why not wrk's pacing: wrk is a closed loop: 40 connections each pausing 19 ms reach at most
 * 40 / (19 ms + latency) requests/s, fall into step behind any pause (40 requests arrive
 * together), and measure from the send, so "the p99 at 2,000/s" is neither at 2,000/s nor what
 * a client arriving at 2,000/s sees. Debian 12 packages no wrk2.
 *
 * Prints `RESULT rate=... p50=... p90=... p99=... max=... non201=... late=...` (ms), where rate
 * is the completed 201s per second and late the requests that waited for a connection.
 * Plain HTTP (fatiad --no-tls), epoll, one thread, cc alone (bench/create-cost.sh builds it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXC 1024
#define BUFN 65536

struct conn {
    int fd;
    int busy;       /* a request is out on it */
    double due;     /* when that request was due (ms) */
    size_t have;    /* response bytes read */
    char buf[BUFN]; /* the response so far */
};

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
        perror("api_openloop: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            perror("api_openloop: write");
            exit(1);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* The status of a complete response in c->buf, 0 while it is incomplete. */
static int complete(struct conn *c)
{
    char *body, *cl;
    size_t need;

    c->buf[c->have] = '\0';
    body = strstr(c->buf, "\r\n\r\n");
    if (!body)
        return 0;
    cl = strcasestr(c->buf, "Content-Length:");
    need = cl && cl < body ? strtoul(cl + 15, NULL, 10) : 0;
    if (c->have - (size_t)(body + 4 - c->buf) < need)
        return 0;
    return (int)strtol(c->buf + 9, NULL, 10);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
    return n ? v[(size_t)((double)(n - 1) * p)] : 0;
}

static void fire(struct conn *c, const char *token, const char *ns, uint64_t seq, double due,
                 const char *pad)
{
    char body[4096], req[8192];
    int nb, nr;

    nb = snprintf(body, sizeof(body),
                  "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"LocalQueue\","
                  "\"metadata\":{\"name\":\"o-%d-%llu\",\"namespace\":\"%s\",\"annotations\":"
                  "{\"bench.fatia.dev/pad\":\"%s\"}},\"spec\":{\"clusterQueue\":\"team-a\"}}",
                  (int)getpid(), (unsigned long long)seq, ns, pad);
    nr = snprintf(req, sizeof(req),
                  "POST /apis/kueue.x-k8s.io/v1beta2/namespaces/%s/localqueues HTTP/1.1\r\n"
                  "Host: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"
                  "Content-Length: %d\r\n\r\n%s",
                  ns, token, nb, body);
    c->busy = 1;
    c->due = due;
    c->have = 0;
    send_all(c->fd, req, (size_t)nr);
}

int main(int argc, char **argv)
{
    static struct conn conns[MAXC];
    const char *host, *token, *ns;
    int port, nc, ep, idle[MAXC], nidle = 0;
    double rate, secs, t0, *lat, *queue;
    size_t total, sent = 0, done = 0, nlat = 0, qhead = 0, qtail = 0, non201 = 0, late = 0;
    char pad[1801];

    if (argc < 7 || argc > 8) {
        fprintf(stderr, "usage: api_openloop HOST PORT TOKEN NAMESPACE RATE SECONDS [CONNS]\n");
        return 2;
    }
    host = argv[1];
    port = (int)strtol(argv[2], NULL, 10);
    token = argv[3];
    ns = argv[4];
    rate = strtod(argv[5], NULL);
    secs = strtod(argv[6], NULL);
    nc = argc == 8 ? (int)strtol(argv[7], NULL, 10) : 64;
    if (rate <= 0 || secs <= 0 || nc < 1 || nc > MAXC)
        return 2;
    total = (size_t)(rate * secs);
    lat = calloc(total + 1, sizeof(*lat));
    queue = calloc(total + 1, sizeof(*queue));
    if (!lat || !queue)
        return 1;
    memset(pad, 'x', 1800);
    pad[1800] = '\0';
    ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < nc; i++) {
        struct epoll_event e = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        conns[i].fd = dial(host, port);
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &e);
        idle[nidle++] = i;
    }
    t0 = now_ms();
    while (done < total) {
        struct epoll_event ev[64];
        double now = now_ms(), next;
        int n, wait_ms;

        /* every request due by now joins the FIFO, then the FIFO drains onto idle connections */
        while (sent < total && t0 + (double)sent * 1e3 / rate <= now)
            queue[qtail++] = t0 + (double)sent++ * 1e3 / rate;
        while (qhead < qtail && nidle > 0) {
            if (now - queue[qhead] > 1.0)
                late++;
            fire(&conns[idle[--nidle]], token, ns, qhead, queue[qhead], pad);
            qhead++;
        }
        next = sent < total ? t0 + (double)sent * 1e3 / rate : now + 100;
        wait_ms = next > now ? (int)(next - now) : 0;
        n = epoll_wait(ep, ev, 64, wait_ms);
        for (int k = 0; k < n; k++) {
            struct conn *c = &conns[ev[k].data.u32];
            ssize_t r = read(c->fd, c->buf + c->have, BUFN - 1 - c->have);
            int status;

            if (r <= 0) {
                fprintf(stderr, "api_openloop: the server closed a connection\n");
                return 1;
            }
            c->have += (size_t)r;
            status = complete(c);
            if (!status)
                continue;
            lat[nlat++] = now_ms() - c->due;
            if (status != 201)
                non201++;
            c->busy = 0;
            done++;
            idle[nidle++] = (int)ev[k].data.u32;
        }
    }
    {
        double elapsed = (now_ms() - t0) / 1e3;
        qsort(lat, nlat, sizeof(*lat), cmp_double);
        printf("RESULT rate=%.1f p50=%.3f p90=%.3f p99=%.3f max=%.3f non201=%zu late=%zu\n",
               (double)(done - non201) / elapsed, pct(lat, nlat, 0.5), pct(lat, nlat, 0.9),
               pct(lat, nlat, 0.99), nlat ? lat[nlat - 1] : 0, non201, late);
    }
    return 0;
}
