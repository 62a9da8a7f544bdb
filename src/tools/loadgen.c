/*
 * tools/loadgen.c: the benchmark client (see loadgen.h for the workloads and the metrics).
 *
 * A client, not part of the serving plane: it lives in the tools library (fatia_tools), which
 * the CLI links, above the gateway library whose HTTP/1.1 client (upstream.c), SSE scanner and
 * Prometheus scanner it uses.
 *
 * Plan first, then run: every request is planned before the first is sent (arrival time in
 * engine seconds, output length, and its prompt as a list of text segments (seed, tokens)), so
 * the run itself only formats bodies and reads streams. A segment's text is a deterministic
 * token stream of its seed, so a shorter segment of the same seed is a prefix of a longer one:
 * that is how a tenant's system prompt, truncated to a short context, still shares its head.
 *
 * The run is one libevent loop: a timer releases each request at its arrival time (divided by
 * the speed-up), an exchange streams its answer through the SSE scanner, and every token's
 * arrival time is recorded. Prompts are built when sent (a 14k-token prompt is 56 KB; two
 * thousand of them are not kept).
 */
#include "base/compat.h"

#include "tools/loadgen.h"

#include <sys/resource.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <math.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/log.h"
#include "base/vec.h"
#include "gateway/netaddr.h"
#include "gateway/prom.h"
#include "gateway/sse.h"
#include "gateway/upstream.h"

struct seg {
    uint64_t seed;
    uint32_t tokens;
};

struct plan {
    double at; /* engine seconds from the start */
    uint32_t out_tokens;
    uint32_t in_tokens;
    size_t seg0, n_segs; /* into the run's segment pool */
};

struct lreq;

struct run {
    const struct fatia_loadgen_config *cfg;
    struct event_base *base;
    struct fatia_upstream up;
    struct fatia_url url;
    struct plan *plans;
    size_t n_plans, next;
    FATIA_VEC(struct seg) segs;
    struct event *ev_arrive;
    fatia_usec_t t0, t_last_done;
    uint32_t in_flight, done, max_in_flight;
    struct fatia_loadgen_result res;
    FATIA_VEC(double) ttft;
    FATIA_VEC(double) tpot;
    FATIA_VEC(double) itl;
    FATIA_VEC(double) e2el;
    FATIA_VEC(uint32_t) waiting; /* plans held back by max_concurrency */
    double e_min, e_max;         /* span of the engines' virtual times, when stamped */
    double a_max;                /* the last engine arrival */
    bool any_stamped;
    size_t waiting_head;
};

struct lreq {
    struct run *run;
    size_t idx;
    struct fatia_upx *x;
    struct fatia_buf body;
    char head[512];
    struct fatia_sse sse;
    fatia_usec_t t_send, t_first, t_last;
    double e_arrival, e_first, e_last; /* the engine's virtual times, when it stamps them */
    bool stamped;
    uint32_t tokens;
    double max_gap; /* the longest inter-token gap (engine seconds) */
    int status;
    struct event *ev_timeout;
};

/* ---- text ---- */

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static double unit(uint64_t *s)
{
    *s = mix(*s);
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* Appends the first n tokens of seed's stream: " abc" each. */
static int append_tokens(struct fatia_buf *b, uint64_t seed, uint32_t n)
{
    int r = fatia_buf_reserve(b, (size_t)n * 4);
    uint64_t s = seed;

    if (r < 0)
        return r;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v;
        char *p = b->p + b->len;
        s = mix(s);
        v = s % (26 * 26 * 26);
        p[0] = ' ';
        p[1] = (char)('a' + v % 26);
        p[2] = (char)('a' + v / 26 % 26);
        p[3] = (char)('a' + v / 676 % 26);
        b->len += 4;
    }
    b->p[b->len] = 0;
    return 0;
}

/* ---- planning ---- */

static int push_seg(struct run *r, uint64_t seed, uint32_t tokens)
{
    return FATIA_VEC_PUSH(&r->segs, ((struct seg){seed, tokens}));
}

static int plan_shared_prefix(struct run *r)
{
    const struct fatia_loadgen_config *c = r->cfg;
    size_t total = (size_t)c->groups * c->prompts_per_group, n = c->requests ? c->requests : total;
    uint64_t rng = mix(c->seed ^ 0x5eed);
    uint32_t *order;
    double t = 0;

    if (!total || c->rate <= 0)
        return -EINVAL;
    order = fatia_calloc(total, sizeof(*order));
    r->plans = fatia_calloc(n, sizeof(*r->plans));
    if (!order || !r->plans) {
        fatia_free(order);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct plan *p = &r->plans[i];
        size_t k = i % total, g, q;
        if (k == 0) {
            /* a fresh random order of the prompt set for each pass over it */
            for (size_t j = 0; j < total; j++)
                order[j] = (uint32_t)j;
            for (size_t j = total - 1; j > 0; j--) {
                size_t m = (size_t)(unit(&rng) * (double)(j + 1));
                uint32_t tmp = order[j];
                order[j] = order[m > j ? j : m];
                order[m > j ? j : m] = tmp;
            }
        }
        g = order[k] / c->prompts_per_group;
        q = order[k] % c->prompts_per_group;
        t += -log(1.0 - unit(&rng)) / c->rate;
        p->at = t;
        p->out_tokens = c->output_tokens;
        p->in_tokens = c->system_tokens + c->question_tokens;
        p->seg0 = r->segs.n;
        p->n_segs = 2;
        if (push_seg(r, mix(c->seed ^ (g * 2 + 1)), c->system_tokens) < 0 ||
            push_seg(r, mix(c->seed ^ mix(g * 1000003 + q + 7)), c->question_tokens) < 0) {
            fatia_free(order);
            return -ENOMEM;
        }
    }
    fatia_free(order);
    r->n_plans = n;
    return 0;
}

/* Seconds since midnight of "YYYY-MM-DD HH:MM:SS.fffffff", plus days (good within a month). */
static int parse_ts(const char *s, double *ret)
{
    int y, mo, d, h, mi;
    double sec;
    if (sscanf(s, "%d-%d-%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6)
        return -EINVAL;
    *ret = ((double)d * 24 + h) * 3600 + mi * 60 + sec;
    return 0;
}

struct conv {
    size_t seg0, n_segs;
    uint32_t len;
};

#define MAX_OPEN 16

static int plan_azure(struct run *r, char *why, size_t why_n)
{
    const struct fatia_loadgen_config *c = r->cfg;
    FILE *f = fopen(c->trace, "re");
    char line[256];
    uint64_t rng = mix(c->seed ^ 0xa2e);
    double t0 = -1, *zipf = NULL, zsum = 0;
    struct conv(*open)[MAX_OPEN] = NULL;
    uint32_t *n_open = NULL, *sys_len = NULL;
    size_t row = 0, cap = 0;
    int rc = 0;

    if (!f) {
        snprintf(why, why_n, "cannot read the trace '%s'", c->trace);
        return -ENOENT;
    }
    zipf = fatia_calloc(c->tenants, sizeof(*zipf));
    open = fatia_calloc(c->tenants, sizeof(*open));
    n_open = fatia_calloc(c->tenants, sizeof(*n_open));
    sys_len = fatia_calloc(c->tenants, sizeof(*sys_len));
    if (!zipf || !open || !n_open || !sys_len) {
        rc = -ENOMEM;
        goto out;
    }
    for (uint32_t k = 0; k < c->tenants; k++) {
        uint64_t s = mix(c->seed ^ (0x7e4a47 + k));
        zsum += 1.0 / pow(k + 1, 1.1);
        zipf[k] = zsum;
        sys_len[k] = 256 + (uint32_t)(unit(&s) * (2048 - 256));
    }
    if (!fgets(line, sizeof(line), f) || !strstr(line, "ContextTokens")) {
        snprintf(why, why_n, "'%s': expected a TIMESTAMP,ContextTokens,GeneratedTokens header",
                 c->trace);
        rc = -EINVAL;
        goto out;
    }
    while (fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        double ts;
        long ctx, gen;
        uint32_t k, in;
        struct plan *p;
        if (!c1 || !c2)
            continue;
        *c1 = 0;
        if (parse_ts(line, &ts) < 0)
            continue;
        ctx = strtol(c1 + 1, NULL, 10);
        gen = strtol(c2 + 1, NULL, 10);
        if (row++ < c->trace_offset)
            continue;
        if (c->requests && r->n_plans >= c->requests)
            break;
        if (r->n_plans == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct plan *v = fatia_reallocarray(r->plans, ncap, sizeof(*v));
            if (!v) {
                rc = -ENOMEM;
                goto out;
            }
            r->plans = v;
            cap = ncap;
        }
        if (t0 < 0)
            t0 = ts;
        p = &r->plans[r->n_plans++];
        in = (uint32_t)(ctx < 1 ? 1 : ctx > 1000000 ? 1000000 : ctx);
        p->at = (ts - t0) / c->time_scale;
        p->out_tokens = (uint32_t)(gen < 1 ? 1 : gen > 100000 ? 100000 : gen);
        p->in_tokens = in;
        /* the tenant, by Zipf popularity */
        {
            double u = unit(&rng) * zsum;
            for (k = 0; k + 1 < c->tenants && zipf[k] < u; k++)
                ;
        }
        /* continue a conversation of this tenant that the context can extend, or open one */
        {
            struct conv *best = NULL;
            if (unit(&rng) < c->follow)
                for (uint32_t j = n_open[k]; j > 0; j--) {
                    struct conv *cv = &open[k][(j - 1) % MAX_OPEN];
                    if (cv->len + 16 <= in) {
                        best = cv;
                        break;
                    }
                }
            p->seg0 = r->segs.n;
            if (best) {
                for (size_t s = 0; s < best->n_segs; s++)
                    if (FATIA_VEC_PUSH(&r->segs, r->segs.v[best->seg0 + s]) < 0) {
                        rc = -ENOMEM;
                        goto out;
                    }
                if (push_seg(r, mix(rng ^ r->n_plans), in - best->len) < 0) {
                    rc = -ENOMEM;
                    goto out;
                }
                p->n_segs = best->n_segs + 1;
                best->seg0 = p->seg0;
                best->n_segs = p->n_segs;
                best->len = in;
            } else {
                uint32_t sys = sys_len[k] < in ? sys_len[k] : in;
                struct conv *cv = &open[k][n_open[k]++ % MAX_OPEN];
                if (push_seg(r, mix(c->seed ^ (0x7e4a47 + k) ^ 0x5), sys) < 0 ||
                    (in > sys && push_seg(r, mix(rng ^ r->n_plans), in - sys) < 0)) {
                    rc = -ENOMEM;
                    goto out;
                }
                p->n_segs = in > sys ? 2 : 1;
                cv->seg0 = p->seg0;
                cv->n_segs = p->n_segs;
                cv->len = in;
            }
        }
    }
    if (!r->n_plans) {
        snprintf(why, why_n, "'%s': no requests at offset %u", c->trace, c->trace_offset);
        rc = -EINVAL;
    }
out:
    fclose(f);
    fatia_free(zipf);
    fatia_free(open);
    fatia_free(n_open);
    fatia_free(sys_len);
    return rc;
}

/* ---- running ---- */

static double eng(const struct run *r, fatia_usec_t wall)
{
    return (double)wall / 1e6 * r->cfg->speed;
}

static void push_gap(struct run *r, struct lreq *q, double gap)
{
    FATIA_VEC_PUSH(&r->itl, gap);
    if (gap > q->max_gap)
        q->max_gap = gap;
}

static void send_next(struct run *r);
static void start_one(struct run *r, size_t idx);

static void lreq_end(struct lreq *q, bool ok)
{
    struct run *r = q->run;
    fatia_usec_t now = fatia_now_mono_usec();

    if (ok && q->status == 200 && q->tokens > 0) {
        double e2el = q->stamped ? q->e_last - q->e_arrival : eng(r, now - q->t_send);
        double ttft = q->stamped ? q->e_first - q->e_arrival : eng(r, q->t_first - q->t_send);
        r->res.completed++;
        r->res.output_tokens += q->tokens;
        FATIA_VEC_PUSH(&r->e2el, e2el);
        FATIA_VEC_PUSH(&r->ttft, ttft);
        if (q->tokens > 1)
            FATIA_VEC_PUSH(&r->tpot, (e2el - ttft) / (q->tokens - 1));
        if ((r->cfg->slo_ttft <= 0 || ttft <= r->cfg->slo_ttft) &&
            (r->cfg->slo_itl <= 0 || q->tokens < 2 ||
             (e2el - ttft) / (q->tokens - 1) <= r->cfg->slo_itl))
            r->res.good++;
        if ((r->cfg->slo_ttft <= 0 || ttft <= r->cfg->slo_ttft) &&
            (r->cfg->slo_itl <= 0 || q->max_gap <= r->cfg->slo_itl))
            r->res.good_strict++;
        if (q->stamped) {
            if (!r->any_stamped || q->e_arrival < r->e_min)
                r->e_min = q->e_arrival;
            if (!r->any_stamped || q->e_last > r->e_max)
                r->e_max = q->e_last;
            if (!r->any_stamped || q->e_arrival > r->a_max)
                r->a_max = q->e_arrival;
            r->any_stamped = true;
        }
        r->t_last_done = now;
    } else {
        r->res.failed++;
        if (r->res.failed <= 3)
            fatia_log(FATIA_LOG_WARNING, "serve bench: request %zu failed (status %d, %u tokens)",
                      q->idx, q->status, q->tokens);
    }
    if (q->ev_timeout)
        event_free(q->ev_timeout);
    fatia_sse_release(&q->sse);
    fatia_buf_release(&q->body);
    fatia_free(q);
    r->in_flight--;
    r->done++;
    if (r->waiting_head < r->waiting.n)
        start_one(r, r->waiting.v[r->waiting_head++]);
    if (r->done == r->n_plans)
        event_base_loopexit(r->base, NULL);
}

/* The number after key in data (engine-sim's "engine_time":12.345678). */
static bool stamp(const char *data, size_t n, const char *key, double *ret)
{
    size_t kn = strlen(key);
    const char *p = memmem(data, n, key, kn);
    char buf[40];
    size_t len = 0;
    char *end;

    if (!p)
        return false;
    p += kn;
    while (p + len < data + n && len + 1 < sizeof(buf) &&
           ((p[len] >= '0' && p[len] <= '9') || p[len] == '.' || p[len] == '-' || p[len] == 'e'))
        len++;
    memcpy(buf, p, len);
    buf[len] = 0;
    *ret = strtod(buf, &end);
    return len && end == buf + len;
}

static void on_event(void *ud, const char *data, size_t n, bool trunc)
{
    struct lreq *q = ud;
    struct run *r = q->run;
    fatia_usec_t now = fatia_now_mono_usec();
    const char *times;

    (void)trunc;
    if ((n == 6 && !memcmp(data, "[DONE]", 6)) || memmem(data, n, "\"choices\":[]", 12))
        return;
    if (q->tokens == 0) {
        q->t_first = now;
        q->stamped = stamp(data, n, "\"engine_arrival\":", &q->e_arrival);
    }
    times = q->stamped ? memmem(data, n, "\"engine_times\":[", 16) : NULL;
    if (times) {
        /* one engine time per token of the chunk (engine-sim --stream-interval) */
        const char *p = times + 16, *end = data + n;
        while (p < end && *p != ']') {
            char buf[40], *e;
            size_t len = 0;
            double t;
            while (p + len < end && len + 1 < sizeof(buf) && p[len] != ',' && p[len] != ']')
                len++;
            memcpy(buf, p, len);
            buf[len] = 0;
            t = strtod(buf, &e);
            if (e == buf)
                break;
            if (q->tokens == 0)
                q->e_first = t;
            else
                push_gap(r, q, t - q->e_last);
            q->e_last = t;
            q->tokens++;
            p += len;
            if (p < end && *p == ',')
                p++;
        }
    } else if (q->stamped) {
        double t;
        if (!stamp(data, n, "\"engine_time\":", &t))
            t = q->e_last;
        if (q->tokens == 0)
            q->e_first = t;
        else
            push_gap(r, q, t - q->e_last);
        q->e_last = t;
        q->tokens++;
    } else {
        if (q->tokens > 0)
            push_gap(r, q, eng(r, now - q->t_last));
        q->tokens++;
    }
    q->t_last = now;
}

static int on_head(void *ud, const struct fatia_http_head *h, const char *raw, size_t n)
{
    struct lreq *q = ud;
    (void)raw;
    (void)n;
    q->status = h->status;
    return 0;
}

static void on_payload(void *ud, const char *p, size_t n)
{
    struct lreq *q = ud;
    if (q->status == 200)
        fatia_sse_feed(&q->sse, p, n);
}

static void on_done(void *ud)
{
    struct lreq *q = ud;
    q->x = NULL;
    lreq_end(q, true);
}

static void on_error(void *ud, int err, bool responded, bool reused)
{
    struct lreq *q = ud;
    (void)err;
    (void)responded;
    (void)reused;
    q->x = NULL;
    lreq_end(q, false);
}

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct lreq *q = arg;
    (void)fd;
    (void)what;
    fatia_upx_abort(q->x);
    q->x = NULL;
    lreq_end(q, false);
}

static void start_one(struct run *r, size_t idx)
{
    static const struct fatia_upx_ops ops = {on_head, NULL, on_payload, on_done, on_error};
    const struct plan *p = &r->plans[idx];
    struct lreq *q = fatia_calloc(1, sizeof(*q));
    fatia_usec_t to = r->cfg->timeout ? r->cfg->timeout : 600 * FATIA_USEC_PER_SEC;
    struct timeval tv = {(time_t)(to / FATIA_USEC_PER_SEC), (suseconds_t)(to % FATIA_USEC_PER_SEC)};
    struct iovec iov[2];
    int n;

    r->in_flight++;
    r->res.sent++;
    if (r->in_flight > r->max_in_flight)
        r->max_in_flight = r->in_flight;
    if (!q) {
        r->in_flight--;
        r->res.failed++;
        r->done++;
        return;
    }
    q->run = r;
    q->idx = idx;
    fatia_sse_init(&q->sse, on_event, q);
    fatia_buf_init(&q->body, 0);
    fatia_buf_printf(&q->body, "{\"model\":\"%s\",\"prompt\":\"", r->cfg->model);
    for (size_t s = 0; s < p->n_segs; s++)
        append_tokens(&q->body, r->segs.v[p->seg0 + s].seed, r->segs.v[p->seg0 + s].tokens);
    fatia_buf_printf(&q->body,
                     "\",\"max_tokens\":%u,\"min_tokens\":%u,\"ignore_eos\":true,"
                     "\"stream\":true,\"temperature\":0}",
                     p->out_tokens, p->out_tokens);
    n = snprintf(q->head, sizeof(q->head),
                 "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 r->url.hostport, q->body.len);
    iov[0] = (struct iovec){q->head, (size_t)n};
    iov[1] = (struct iovec){q->body.p, q->body.len};
    r->res.input_tokens += p->in_tokens;
    q->t_send = fatia_now_mono_usec();
    q->ev_timeout = event_new(r->base, -1, 0, on_timeout, q);
    if (q->ev_timeout)
        event_add(q->ev_timeout, &tv);
    if (fatia_upx_start(&r->up, iov, 2, 0, &ops, q, &q->x) < 0)
        lreq_end(q, false);
}

static void on_arrive(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_next(arg);
}

/* Sends every request that is due and arms the timer for the next. */
static void send_next(struct run *r)
{
    fatia_usec_t now = fatia_now_mono_usec();

    while (r->next < r->n_plans) {
        const struct plan *p = &r->plans[r->next];
        fatia_usec_t due = r->t0 + (fatia_usec_t)(p->at / r->cfg->speed * 1e6);
        if (due > now) {
            struct timeval tv = {(time_t)((due - now) / FATIA_USEC_PER_SEC),
                                 (suseconds_t)((due - now) % FATIA_USEC_PER_SEC)};
            event_add(r->ev_arrive, &tv);
            return;
        }
        if (r->cfg->max_concurrency && r->in_flight >= r->cfg->max_concurrency)
            FATIA_VEC_PUSH(&r->waiting, (uint32_t)r->next);
        else
            start_one(r, r->next);
        r->next++;
    }
}

/* Sum of the engines' prefix-cache counters (tokens); false when one cannot be read. */
static size_t on_curl(char *p, size_t size, size_t nmemb, void *ud)
{
    return fatia_buf_append(ud, p, size * nmemb) < 0 ? 0 : size * nmemb;
}

static bool engines_prefix(const struct fatia_loadgen_config *c, double *hits, double *queries)
{
    *hits = *queries = 0;
    for (size_t i = 0; i < c->n_engines; i++) {
        struct fatia_buf b = FATIA_BUF_INIT;
        struct fatia_engine_metrics m;
        char url[600];
        CURL *h = curl_easy_init();
        CURLcode cr;
        if (!h)
            return false;
        snprintf(url, sizeof(url), "%s/metrics", c->engines[i]);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_curl);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        cr = curl_easy_perform(h);
        curl_easy_cleanup(h);
        if (cr != CURLE_OK) {
            fatia_buf_release(&b);
            return false;
        }
        fatia_prom_scan_vllm(b.p, b.len, &m);
        fatia_buf_release(&b);
        *hits += m.prefix_hits;
        *queries += m.prefix_queries;
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void fatia_dist_of(double *v, size_t n, struct fatia_dist *ret)
{
    struct fatia_dist d = {0};
    double sum = 0;

    d.n = n;
    if (n) {
        qsort(v, n, sizeof(*v), cmp_double);
        for (size_t i = 0; i < n; i++)
            sum += v[i];
        d.mean = sum / (double)n;
        d.p50 = v[(size_t)((double)(n - 1) * 0.50)];
        d.p90 = v[(size_t)((double)(n - 1) * 0.90)];
        d.p99 = v[(size_t)((double)(n - 1) * 0.99)];
        d.max = v[n - 1];
    }
    *ret = d;
}

void fatia_loadgen_config_default(struct fatia_loadgen_config *c)
{
    memset(c, 0, sizeof(*c));
    c->model = "llama-3.1-8b";
    c->workload = FATIA_WORKLOAD_SHARED_PREFIX;
    c->speed = 1;
    c->seed = 1;
    c->rate = 10;
    c->groups = 150;
    c->prompts_per_group = 5;
    c->system_tokens = 6000;
    c->question_tokens = 1200;
    c->output_tokens = 1000;
    c->time_scale = 1;
    c->tenants = 32;
    c->follow = 0.5;
}

int fatia_loadgen_run(const struct fatia_loadgen_config *cfg, struct fatia_loadgen_result *ret,
                      char *why, size_t why_n)
{
    struct run r = {.cfg = cfg};
    double h0 = 0, q0 = 0, h1, q1;
    bool have_prefix = false;
    struct rlimit rl;
    int rc;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    rc = fatia_url_parse(cfg->url, &r.url, why, why_n);
    if (rc < 0)
        return rc;
    rc = cfg->workload == FATIA_WORKLOAD_SHARED_PREFIX ? plan_shared_prefix(&r)
                                                       : plan_azure(&r, why, why_n);
    if (rc < 0) {
        if (!why[0])
            snprintf(why, why_n, "cannot plan the workload: %s", fatia_strerror(rc));
        goto out;
    }
    {
        struct event_config *ec = event_config_new();
        if (ec)
            event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        r.base = ec ? event_base_new_with_config(ec) : NULL;
        if (ec)
            event_config_free(ec);
    }
    if (!r.base || !(r.ev_arrive = event_new(r.base, -1, 0, on_arrive, &r))) {
        rc = -ENOMEM;
        goto out;
    }
    fatia_upx_init(&r.up, r.base, &r.url.addr, r.url.addr_len);
    r.up.max_idle = 65536;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (cfg->n_engines)
        have_prefix = engines_prefix(cfg, &h0, &q0);
    r.t0 = fatia_now_mono_usec();
    send_next(&r);
    event_base_dispatch(r.base);
    if (have_prefix && engines_prefix(cfg, &h1, &q1) && q1 > q0)
        r.res.prefix_hit_ratio = (h1 - h0) / (q1 - q0);
    else
        r.res.prefix_hit_ratio = -1;
    curl_global_cleanup();
    /* engines that stamp share one virtual clock (monotonic x speed): the run's span in it */
    if (r.any_stamped) {
        r.res.duration = r.e_max - r.e_min;
        if (r.a_max > r.e_min)
            r.res.achieved_rate = (double)r.res.completed / (r.a_max - r.e_min);
    } else
        r.res.duration =
            eng(&r, (r.t_last_done > r.t0 ? r.t_last_done : fatia_now_mono_usec()) - r.t0);
    r.res.offered_rate = r.n_plans && r.plans[r.n_plans - 1].at > 0
                             ? (double)r.n_plans / r.plans[r.n_plans - 1].at
                             : 0;
    if (r.res.sent) {
        r.res.attainment = (double)r.res.good / r.res.sent;
        r.res.attainment_strict = (double)r.res.good_strict / r.res.sent;
    }
    if (r.res.duration > 0) {
        r.res.goodput = r.res.good / r.res.duration;
        r.res.request_throughput = r.res.completed / r.res.duration;
        r.res.output_throughput = (double)r.res.output_tokens / r.res.duration;
    }
    r.res.max_concurrency_seen = r.max_in_flight;
    fatia_dist_of(r.ttft.v, r.ttft.n, &r.res.ttft);
    fatia_dist_of(r.tpot.v, r.tpot.n, &r.res.tpot);
    fatia_dist_of(r.itl.v, r.itl.n, &r.res.itl);
    fatia_dist_of(r.e2el.v, r.e2el.n, &r.res.e2el);
    *ret = r.res;
    rc = 0;
    fatia_upx_release(&r.up);
out:
    if (r.ev_arrive)
        event_free(r.ev_arrive);
    if (r.base)
        event_base_free(r.base);
    fatia_free(r.plans);
    FATIA_VEC_RELEASE(&r.segs);
    FATIA_VEC_RELEASE(&r.ttft);
    FATIA_VEC_RELEASE(&r.tpot);
    FATIA_VEC_RELEASE(&r.itl);
    FATIA_VEC_RELEASE(&r.e2el);
    FATIA_VEC_RELEASE(&r.waiting);
    return rc;
}
