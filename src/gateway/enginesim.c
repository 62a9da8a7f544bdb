/*
 * gateway/enginesim.c: the engine-sim server (see enginesim.h).
 *
 * Time: the engine runs on a virtual clock V (engine seconds), tied to the wall clock as
 * V = monotonic clock x speed (the same origin in every process of a machine). A step that begins at V0 and lasts d ends at V0 + d; one libevent
 * timer fires at the wall time of that end, emits the step's tokens (fatia_engine_step_end) and
 * plans the next step, which begins where the last one ended (back to back), or at the wall's V
 * after an idle spell. A timer that fires late (a busy CPU) therefore delays the delivery of
 * tokens but not the engine's timeline: the next step does not start later, and the lateness is
 * exported as fatia_engine_sim_step_lag_seconds. Every latency engine-sim measures is virtual:
 * a request's arrival is the wall's V, but never later than the end of the step in flight (the
 * step that will consider it), and a token's time is the end of the step that produced it. With
 * --engine-timestamps these times also go to the client in each streamed chunk
 * ("engine_arrival", "engine_time"), so that a benchmark on a loaded machine measures the
 * simulated engine and not the machine's scheduler.
 *
 * Bodies are parsed with jansson (engine-sim is a test tool; the gateway's scanner is the fast
 * path). SSE chunks are formatted with snprintf in the shapes vLLM sends.
 */
#include "base/compat.h"

#include "gateway/enginesim.h"

#include <event2/event.h>
#include <jansson.h>
#include <math.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "gateway/calibration.h"
#include "gateway/hist.h"
#include "gateway/httpd.h"
#include "gateway/netaddr.h"
#include "gateway/prefix.h"
#include "gateway/tenants.h"
#include "gateway/upstream.h"

enum kind {
    K_COMPLETION,
    K_CHAT,
    K_EMBED,
};

struct sim_req {
    struct fatia_enginesim *s;
    struct fatia_httpd_conn *c;
    struct fatia_engine_req *er;
    enum kind kind;
    bool stream, include_usage;
    uint64_t id;
    uint32_t prompt_tokens, max_tokens;
    double v_arrival, v_last;               /* virtual seconds */
    struct fatia_buf text;                  /* non-streamed answers */
    struct fatia_buf pend_text, pend_times; /* streamed tokens not sent yet */
    uint32_t pend_n;
    /* prefill/decode disaggregation */
    bool remote_decode; /* a prefill leg: answered with kv_transfer_params */
    uint64_t *hashes;   /* kept while the request waits for its prefill and KV */
    size_t n_hashes;
    struct fatia_upx *leg;    /* the prefill leg in flight */
    struct fatia_buf leg_req; /* its request bytes */
    struct fatia_buf leg_resp;
    int leg_status;
    struct event *ev_land; /* fires when the KV has landed */
};

#define MAX_PEERS 32

struct fatia_enginesim {
    struct event_base *base;
    struct fatia_enginesim_config cfg;
    char model_json[300]; /* the served model name, JSON-escaped */
    struct fatia_httpd *httpd;
    struct fatia_engine *engine;
    struct event *ev_step;
    bool stepping;
    fatia_usec_t t_start; /* wall time of V = 0 */
    double v_end;         /* virtual end of the step in flight, or of the last one */
    uint64_t next_id;
    size_t live;         /* sim_reqs alive: received, not yet answered */
    double rate, rate_t; /* arrivals per engine second, exponentially weighted; as of rate_t */
    bool draining;
    time_t created;
    uint64_t success, aborted;
    struct fatia_hist ttft, itl, e2e, lag, iter_tokens;

    /* P/D: the prefill servers this decode server has talked to, and its inbound KV link */
    struct {
        char hostport[80];
        struct fatia_upstream up;
    } peers[MAX_PEERS];

    size_t n_peers;
    struct fatia_kvxfer_link link;
    char self_host[64]; /* the host a decode server pulls from: the listen address's */
    uint64_t kv_transfers, kv_bytes, pd_fallbacks, prefill_legs_served;
    double kv_seconds; /* summed transfer times, queueing on the link included */
};

int fatia_engine_role_parse(const char *s, enum fatia_engine_role *ret)
{
    static const char *const names[] = {"both", "prefill", "decode"};
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++)
        if (!strcmp(s, names[i])) {
            *ret = (enum fatia_engine_role)i;
            return 0;
        }
    return -EINVAL;
}

const char *fatia_engine_role_name(enum fatia_engine_role r)
{
    switch (r) {
    case FATIA_ROLE_BOTH:
        return "both";
    case FATIA_ROLE_PREFILL:
        return "prefill";
    case FATIA_ROLE_DECODE:
        return "decode";
    }
    return "?";
}

static const char *const words[16] = {" the", " and", " for", " you", " not", " are",
                                      " but", " all", " can", " was", " one", " out",
                                      " has", " his", " her", " its"};

static const double iter_bounds[] = {1,   8,    16,   32,   64,   128,  256,
                                     512, 1024, 2048, 4096, 8192, 16384};
static const double lag_bounds[] = {1e-4, 1e-3, 5e-3, 0.01, 0.025, 0.05,
                                    0.1,  0.25, 0.5,  1.0,  2.5,   5.0};

static void kick(struct fatia_enginesim *s);
static void start_step(struct fatia_enginesim *s, double v_start);

/* The wall clock as virtual engine seconds. */
static double v_now(const struct fatia_enginesim *s)
{
    return (double)(fatia_now_mono_usec() - s->t_start) / 1e6 * s->cfg.speed;
}

static void req_free(struct sim_req *q)
{
    q->s->live--;
    if (q->leg)
        fatia_upx_abort(q->leg);
    if (q->ev_land)
        event_free(q->ev_land);
    fatia_buf_release(&q->leg_req);
    fatia_buf_release(&q->leg_resp);
    fatia_free(q->hashes);
    fatia_buf_release(&q->text);
    fatia_buf_release(&q->pend_text);
    fatia_buf_release(&q->pend_times);
    fatia_free(q);
}

static int write_event(struct sim_req *q, const char *fmt, ...) FATIA_PRINTF(2, 3);

static int write_event(struct sim_req *q, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return -FATIA_E_LIMIT;
    return fatia_httpd_stream_chunk(q->c, buf, (size_t)n);
}

static const char *object_name(const struct sim_req *q, bool chunk)
{
    if (q->kind == K_CHAT)
        return chunk ? "chat.completion.chunk" : "chat.completion";
    return "text_completion";
}

static void finish_stream(struct fatia_enginesim *s, struct sim_req *q, uint32_t generated)
{
    if (q->include_usage)
        write_event(q,
                    "data: {\"id\":\"%s-%" PRIu64 "\",\"object\":\"%s\",\"created\":%ld,"
                    "\"model\":\"%s\",\"choices\":[],\"usage\":{\"prompt_tokens\":%u,"
                    "\"total_tokens\":%u,\"completion_tokens\":%u}}\n\n",
                    q->kind == K_CHAT ? "chatcmpl" : "cmpl", q->id, object_name(q, true),
                    (long)s->created, s->model_json, q->prompt_tokens, q->prompt_tokens + generated,
                    generated);
    write_event(q, "data: [DONE]\n\n");
    fatia_httpd_stream_end(q->c);
    fatia_httpd_done(q->c, true);
}

static void respond_full(struct fatia_enginesim *s, struct sim_req *q, uint32_t generated)
{
    struct fatia_buf b = FATIA_BUF_INIT;

    if (q->kind == K_EMBED) {
        fatia_buf_printf(&b, "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                             "\"embedding\":[");
        for (int i = 0; i < 8; i++)
            fatia_buf_printf(&b, "%s%.4f", i ? "," : "", sin((double)(q->id + 1) * (i + 1)));
        fatia_buf_printf(&b,
                         "]}],\"model\":\"%s\",\"usage\":{\"prompt_tokens\":%u,"
                         "\"total_tokens\":%u}}",
                         s->model_json, q->prompt_tokens, q->prompt_tokens);
    } else if (q->kind == K_CHAT) {
        fatia_buf_printf(&b,
                         "{\"id\":\"chatcmpl-%" PRIu64 "\",\"object\":\"chat.completion\","
                         "\"created\":%ld,\"model\":\"%s\",\"choices\":[{\"index\":0,"
                         "\"message\":{\"role\":\"assistant\",\"content\":\"%s\"},"
                         "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%u,"
                         "\"total_tokens\":%u,\"completion_tokens\":%u}}",
                         q->id, (long)s->created, s->model_json, q->text.p, q->prompt_tokens,
                         q->prompt_tokens + generated, generated);
    } else {
        fatia_buf_printf(&b,
                         "{\"id\":\"cmpl-%" PRIu64 "\",\"object\":\"text_completion\","
                         "\"created\":%ld,\"model\":\"%s\",\"choices\":[{\"index\":0,"
                         "\"text\":\"%s\",\"logprobs\":null,\"finish_reason\":\"length\"}],"
                         "\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%u,"
                         "\"completion_tokens\":%u}}",
                         q->id, (long)s->created, s->model_json, q->text.p, q->prompt_tokens,
                         q->prompt_tokens + generated, generated);
    }
    if (q->remote_decode && b.len && b.p[b.len - 1] == '}') {
        /* vLLM's NixlConnector answer to a prefill leg; the block ids are placeholders (the
         * simulated decode server needs only their count), engine_time is fatia's */
        uint32_t nb =
            (q->prompt_tokens + s->cfg.engine.block_tokens - 1) / s->cfg.engine.block_tokens;
        b.len--;
        fatia_buf_printf(&b,
                         ",\"kv_transfer_params\":{\"do_remote_prefill\":true,"
                         "\"do_remote_decode\":false,\"remote_engine_id\":\"engine-sim-%d\","
                         "\"remote_host\":\"%s\",\"remote_port\":%d,\"tp_size\":%u,"
                         "\"engine_time\":%.6f,\"remote_block_ids\":[",
                         fatia_httpd_port(s->httpd), s->self_host, fatia_httpd_port(s->httpd),
                         s->cfg.engine.tp ? s->cfg.engine.tp : 1, s->v_end);
        for (uint32_t i = 0; i < nb; i++)
            fatia_buf_printf(&b, "%s%u", i ? "," : "", i);
        fatia_buf_puts(&b, "]}}");
        s->prefill_legs_served++;
    }
    fatia_httpd_respond(q->c, 200, "application/json", NULL, b.p, b.len);
    fatia_buf_release(&b);
}

/* Sends the tokens buffered for a streamed request as one chunk. */
static void flush_stream(struct fatia_enginesim *s, struct sim_req *q, bool first, bool finished)
{
    char head[160] = "";

    if (!q->pend_n)
        return;
    if (s->cfg.timestamps) {
        /* one time per token, so that inter-token latency stays exact at any stream interval */
        if (q->pend_times.len)
            q->pend_times.p[--q->pend_times.len] = 0; /* the trailing comma */
        if (first)
            snprintf(head, sizeof(head), ",\"engine_arrival\":%.6f,\"engine_time\":%.6f",
                     q->v_arrival, q->v_last);
        else
            snprintf(head, sizeof(head), ",\"engine_time\":%.6f", q->v_last);
    }
    if (q->kind == K_CHAT)
        write_event(q,
                    "data: {\"id\":\"chatcmpl-%" PRIu64 "\",\"object\":"
                    "\"chat.completion.chunk\",\"created\":%ld,\"model\":\"%s\","
                    "\"choices\":[{\"index\":0,\"delta\":{%s\"content\":\"%s\"},"
                    "\"logprobs\":null,\"finish_reason\":%s}]%s%s%s%s}\n\n",
                    q->id, (long)s->created, s->model_json, first ? "\"role\":\"assistant\"," : "",
                    q->pend_text.p, finished ? "\"length\"" : "null", head,
                    s->cfg.timestamps ? ",\"engine_times\":[" : "",
                    s->cfg.timestamps ? q->pend_times.p : "", s->cfg.timestamps ? "]" : "");
    else
        write_event(q,
                    "data: {\"id\":\"cmpl-%" PRIu64 "\",\"object\":\"text_completion\","
                    "\"created\":%ld,\"model\":\"%s\",\"choices\":[{\"index\":0,"
                    "\"text\":\"%s\",\"logprobs\":null,\"finish_reason\":%s,"
                    "\"stop_reason\":null}]%s%s%s%s}\n\n",
                    q->id, (long)s->created, s->model_json, q->pend_text.p,
                    finished ? "\"length\"" : "null", head,
                    s->cfg.timestamps ? ",\"engine_times\":[" : "",
                    s->cfg.timestamps ? q->pend_times.p : "", s->cfg.timestamps ? "]" : "");
    fatia_buf_reset(&q->pend_text);
    fatia_buf_reset(&q->pend_times);
    q->pend_n = 0;
}

static void emit(void *cbud, void *req_ud, uint32_t generated, bool finished)
{
    struct fatia_enginesim *s = cbud;
    struct sim_req *q = req_ud;
    double now = s->v_end;

    if (generated) {
        const char *w = words[(q->id * 7 + generated * 5) % 16];
        if (generated == 1)
            fatia_hist_observe(&s->ttft, now - q->v_arrival);
        else
            fatia_hist_observe(&s->itl, now - q->v_last);
        q->v_last = now;
        if (q->stream) {
            /* the first token goes at once, then every stream_interval tokens, and the last */
            fatia_buf_puts(&q->pend_text, w);
            if (s->cfg.timestamps)
                fatia_buf_printf(&q->pend_times, "%.6f,", now);
            q->pend_n++;
            if (generated == 1 || finished || q->pend_n >= s->cfg.stream_interval)
                flush_stream(s, q, generated == 1, finished);
        } else {
            fatia_buf_puts(&q->text, w);
        }
    }
    if (!finished)
        return;
    fatia_hist_observe(&s->e2e, now - q->v_arrival);
    s->success++;
    if (q->stream)
        finish_stream(s, q, generated);
    else
        respond_full(s, q, generated);
    req_free(q);
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_enginesim *s = arg;
    struct fatia_engine_stats st;
    double late = v_now(s) - s->v_end;

    (void)fd;
    (void)what;
    fatia_hist_observe(&s->lag, late > 0 ? late : 0);
    fatia_engine_get_stats(s->engine, &st);
    fatia_hist_observe(&s->iter_tokens, (double)st.last_step_tokens);
    s->stepping = false;
    fatia_engine_step_end(s->engine, emit, s);
    /* back to back: the next step begins where this one ended, however late the timer was */
    start_step(s, s->v_end);
}

/* Plans a step that begins at virtual time v_start and arms the timer for its end. */
static void start_step(struct fatia_enginesim *s, double v_start)
{
    fatia_usec_t d, due, now;
    struct timeval tv = {0, 0};

    if (s->stepping)
        return;
    d = fatia_engine_step_begin(s->engine);
    if (!d)
        return;
    s->stepping = true;
    s->v_end = v_start + (double)d / 1e6;
    due = s->t_start + (fatia_usec_t)(s->v_end / s->cfg.speed * 1e6);
    now = fatia_now_mono_usec();
    if (due > now) {
        tv.tv_sec = (time_t)((due - now) / FATIA_USEC_PER_SEC);
        tv.tv_usec = (suseconds_t)((due - now) % FATIA_USEC_PER_SEC);
    }
    event_add(s->ev_step, &tv);
}

/* A request arrived: an idle engine starts a step now (never before the last step's end). */
static void kick(struct fatia_enginesim *s)
{
    double now = v_now(s);
    start_step(s, now > s->v_end ? now : s->v_end);
}

/* The text the engine "tokenizes": see enginesim.h. Appends to out. */
static int render_prompt(enum kind kind, json_t *body, struct fatia_buf *out, const char **why)
{
    if (kind == K_CHAT) {
        json_t *msgs = json_object_get(body, "messages"), *m;
        size_t i;
        if (!json_is_array(msgs) || !json_array_size(msgs)) {
            *why = "'messages' must be a non-empty array";
            return -EINVAL;
        }
        json_array_foreach(msgs, i, m)
        {
            const char *role = json_string_value(json_object_get(m, "role"));
            json_t *content = json_object_get(m, "content");
            fatia_buf_printf(out, "<|%s|>\n", role ? role : "user");
            if (json_is_string(content)) {
                fatia_buf_append(out, json_string_value(content), json_string_length(content));
            } else if (json_is_array(content)) {
                size_t k;
                json_t *part;
                json_array_foreach(content, k, part)
                {
                    json_t *t = json_object_get(part, "text");
                    if (json_is_string(t))
                        fatia_buf_append(out, json_string_value(t), json_string_length(t));
                }
            }
            fatia_buf_putc(out, '\n');
        }
        return fatia_buf_puts(out, "<|assistant|>\n");
    }
    {
        json_t *p = json_object_get(body, kind == K_EMBED ? "input" : "prompt"), *v;
        size_t i;
        if (json_is_string(p))
            return fatia_buf_append(out, json_string_value(p), json_string_length(p));
        if (json_is_array(p) && json_array_size(p)) {
            json_array_foreach(p, i, v)
            {
                if (json_is_string(v))
                    fatia_buf_append(out, json_string_value(v), json_string_length(v));
                else if (json_is_integer(v)) /* token ids: one 4-character token each */
                    fatia_buf_printf(out, "%04" PRIx64, (uint64_t)json_integer_value(v) & 0xffff);
            }
            return 0;
        }
        *why = kind == K_EMBED ? "'input' must be a string or an array"
                               : "'prompt' must be a string or an array";
        return -EINVAL;
    }
}

struct parsed {
    json_t *body;
    enum kind kind;
    struct fatia_buf text;
    uint64_t *hashes;
    size_t n_hashes;
    uint32_t prompt_tokens;
};

/* Parses an inference request into its tokens and block hashes. Responds with the error itself
 * and returns < 0 when the request is bad. */
static int parse_request(struct fatia_enginesim *s, struct fatia_httpd_conn *c, enum kind kind,
                         const struct fatia_httpd_req *r, struct parsed *p)
{
    json_error_t err;
    const char *why = NULL, *model, *salt;
    size_t max_blocks;

    memset(p, 0, sizeof(*p));
    fatia_buf_init(&p->text, 0);
    p->kind = kind;
    p->body = json_loadb(r->body, r->body_len, 0, &err);
    if (!json_is_object(p->body)) {
        fatia_httpd_respond_error(c, 400, "BadRequestError", "invalid JSON body: %s", err.text);
        return -EINVAL;
    }
    model = json_string_value(json_object_get(p->body, "model"));
    if (model && strcmp(model, s->cfg.served_model)) {
        fatia_httpd_respond_error(c, 404, "NotFoundError", "The model `%s` does not exist.", model);
        return -ENOENT;
    }
    if (render_prompt(kind, p->body, &p->text, &why) < 0 || !p->text.len) {
        fatia_httpd_respond_error(c, 400, "BadRequestError", "%s", why ? why : "empty prompt");
        return -EINVAL;
    }
    p->prompt_tokens = (uint32_t)FATIA_MIN((p->text.len + 3) / 4, (size_t)UINT32_MAX);
    salt = json_string_value(json_object_get(p->body, "cache_salt"));
    max_blocks = p->text.len / FATIA_PREFIX_BLOCK_CHARS;
    p->hashes = fatia_malloc((max_blocks ? max_blocks : 1) * sizeof(uint64_t));
    if (!p->hashes) {
        fatia_httpd_respond_error(c, 500, "InternalServerError", "out of memory");
        return -ENOMEM;
    }
    p->n_hashes = fatia_prefix_hash(
        fatia_prefix_seed(fatia_str_from(s->cfg.served_model), fatia_str_from(salt)), p->text.p,
        p->text.len, FATIA_PREFIX_BLOCK_CHARS, p->hashes, max_blocks);
    return 0;
}

static void parsed_release(struct parsed *p)
{
    json_decref(p->body);
    fatia_buf_release(&p->text);
    fatia_free(p->hashes);
}

#define RATE_TAU 10.0 /* engine seconds */

/* The arrival-rate gauge (fatia_engine_sim_request_rate, what scaleMetric rps reads). */
static double rate_at(const struct fatia_enginesim *s, double v)
{
    return v > s->rate_t ? s->rate * exp(-(v - s->rate_t) / RATE_TAU) : s->rate;
}

static void note_arrival(struct fatia_enginesim *s, double v)
{
    s->rate = rate_at(s, v) + 1.0 / RATE_TAU;
    if (v > s->rate_t)
        s->rate_t = v;
}

/* Queues q in the engine (loaded: its prompt KV was transferred here) and starts its answer. The
 * request's hashes are q's. */
static void enqueue(struct fatia_enginesim *s, struct sim_req *q, bool loaded)
{
    int rc = (loaded ? fatia_engine_add_loaded : fatia_engine_add)(
        s->engine, q->prompt_tokens, q->max_tokens, q->hashes, q->n_hashes, q, &q->er);

    fatia_free(q->hashes);
    q->hashes = NULL;
    q->n_hashes = 0;
    if (rc < 0) {
        fatia_httpd_set_ctx(q->c, NULL);
        if (rc == -FATIA_E_LIMIT)
            fatia_httpd_respond_error(q->c, 400, "BadRequestError",
                                      "This model's maximum context length is %u tokens. "
                                      "However, you requested %u tokens (%u in the messages, %u "
                                      "in the completion). Please reduce the length of the "
                                      "messages or completion.",
                                      s->cfg.engine.max_model_len, q->prompt_tokens + q->max_tokens,
                                      q->prompt_tokens, q->max_tokens);
        else
            fatia_httpd_respond_error(q->c, 500, "InternalServerError", "out of memory");
        req_free(q);
        return;
    }
    fatia_httpd_set_ctx(q->c, q);
    if (q->stream)
        fatia_httpd_stream_start(q->c, 200, "text/event-stream", NULL);
    kick(s);
}

static void on_land(evutil_socket_t fd, short what, void *arg)
{
    struct sim_req *q = arg;

    (void)fd;
    (void)what;
    enqueue(q->s, q, true);
}

/* The prompt's KV is pulled from a prefill server whose prefill ended at virtual time t_ready:
 * only the blocks not already cached here cross the link (vLLM's connector asks for the tokens
 * past the local hit). q is queued when the transfer lands. */
static void pull(struct fatia_enginesim *s, struct sim_req *q, double t_ready)
{
    uint32_t cached = fatia_engine_cached_tokens(s->engine, q->hashes, q->n_hashes, false);
    uint32_t tokens = q->prompt_tokens - 1 > cached ? q->prompt_tokens - 1 - cached : 0;
    uint64_t bytes = (uint64_t)tokens * s->cfg.engine.kv_bytes_per_token_per_gpu;
    double now = v_now(s), land;
    fatia_usec_t wait;

    if (t_ready < q->v_arrival)
        t_ready = q->v_arrival;
    if (t_ready > now)
        t_ready = now; /* a prefill server that claims a future end: trust our clock */
    land = fatia_kvxfer_schedule(&s->link, t_ready, bytes);
    s->kv_transfers++;
    s->kv_bytes += bytes;
    s->kv_seconds += land - t_ready;
    if (land <= now) {
        enqueue(s, q, true);
        return;
    }
    wait = (fatia_usec_t)((land - now) / s->cfg.speed * 1e6);
    q->ev_land = evtimer_new(s->base, on_land, q);
    if (!q->ev_land) {
        enqueue(s, q, true);
        return;
    }
    {
        struct timeval tv = {(time_t)(wait / FATIA_USEC_PER_SEC),
                             (suseconds_t)(wait % FATIA_USEC_PER_SEC)};
        evtimer_add(q->ev_land, &tv);
    }
}

static int leg_head(void *ud, const struct fatia_http_head *h, const char *raw, size_t n)
{
    struct sim_req *q = ud;

    (void)raw;
    (void)n;
    q->leg_status = h->status;
    return 0;
}

static void leg_payload(void *ud, const char *p, size_t n)
{
    struct sim_req *q = ud;

    if (q->leg_resp.len + n <= (1u << 20))
        fatia_buf_append(&q->leg_resp, p, n);
}

static void leg_done(void *ud)
{
    struct sim_req *q = ud;
    struct fatia_enginesim *s = q->s;
    json_t *o, *kv;

    q->leg = NULL;
    o = q->leg_status == 200 ? json_loadb(q->leg_resp.p, q->leg_resp.len, 0, NULL) : NULL;
    kv = json_object_get(o, "kv_transfer_params");
    if (!json_is_true(json_object_get(kv, "do_remote_prefill"))) {
        s->pd_fallbacks++;
        json_decref(o);
        enqueue(s, q, false);
        return;
    }
    double t = json_number_value(json_object_get(kv, "engine_time"));
    json_decref(o);
    pull(s, q, t > 0 ? t : v_now(s));
}

static void leg_error(void *ud, int err, bool responded, bool reused)
{
    struct sim_req *q = ud;

    (void)err;
    (void)responded;
    (void)reused;
    q->leg = NULL;
    q->s->pd_fallbacks++;
    enqueue(q->s, q, false);
}

/* The upstream to a prefill server, "IP:PORT" (a literal: nothing is resolved here). */
static struct fatia_upstream *peer(struct fatia_enginesim *s, const struct fatia_str *hp)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char buf[80];

    if (!hp->n || hp->n >= sizeof(buf))
        return NULL;
    memcpy(buf, hp->p, hp->n);
    buf[hp->n] = 0;
    for (size_t i = 0; i < s->n_peers; i++)
        if (!strcmp(s->peers[i].hostport, buf))
            return &s->peers[i].up;
    for (const char *p = buf; *p; p++)
        if (!strchr("0123456789.:[]abcdefABCDEF", *p))
            return NULL; /* a host name would block the loop on the resolver */
    if (s->n_peers == MAX_PEERS || fatia_netaddr_parse(buf, false, &ss, &len) < 0)
        return NULL;
    snprintf(s->peers[s->n_peers].hostport, sizeof(s->peers[0].hostport), "%s", buf);
    fatia_upx_init(&s->peers[s->n_peers].up, s->base, &ss, len);
    s->peers[s->n_peers].up.connect_timeout = 2 * FATIA_USEC_PER_SEC;
    return &s->peers[s->n_peers++].up;
}

/* llm-d's decode sidecar: the request goes to the prefill server with max_tokens 1, no stream
 * and kv_transfer_params {do_remote_decode: true} (connector_nixlv2.go); body is the client's,
 * modified in place. Returns false when no leg was started (q is then run here in full). */
static bool start_leg(struct fatia_enginesim *s, struct sim_req *q, json_t *body,
                      const struct fatia_http_head *h, const struct fatia_str *hp)
{
    static const struct fatia_upx_ops ops = {leg_head, NULL, leg_payload, leg_done, leg_error};
    struct fatia_upstream *up = peer(s, hp);
    struct iovec iov;
    char *txt;

    if (!up)
        return false;
    json_object_set_new(body, "stream", json_false());
    json_object_del(body, "stream_options");
    json_object_set_new(body,
                        json_object_get(body, "max_completion_tokens") ? "max_completion_tokens"
                                                                       : "max_tokens",
                        json_integer(1));
    json_object_set_new(body, "kv_transfer_params",
                        json_pack("{s:b,s:b,s:n,s:n,s:n,s:n}", "do_remote_decode", 1,
                                  "do_remote_prefill", 0, "remote_engine_id", "remote_block_ids",
                                  "remote_host", "remote_port"));
    txt = json_dumps(body, JSON_COMPACT);
    if (!txt)
        return false;
    fatia_buf_init(&q->leg_req, 0);
    fatia_buf_init(&q->leg_resp, 1u << 20);
    fatia_buf_printf(&q->leg_req,
                     "POST %.*s HTTP/1.1\r\nHost: %.*s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     (int)h->target.n, h->target.p, (int)hp->n, hp->p, strlen(txt), txt);
    free(txt);
    iov = (struct iovec){q->leg_req.p, q->leg_req.len};
    if (fatia_upx_start(up, &iov, 1, 0, &ops, q, &q->leg) < 0) {
        q->leg = NULL;
        return false;
    }
    fatia_httpd_set_ctx(q->c, q);
    return true;
}

static void handle_infer(struct fatia_enginesim *s, struct fatia_httpd_conn *c, enum kind kind,
                         const struct fatia_httpd_req *r)
{
    struct parsed p;
    struct sim_req *q;
    json_t *mt, *kv;
    const struct fatia_str *prefiller = fatia_http_header_get(r->head, "x-prefiller-host-port");
    int64_t max_tokens = s->cfg.default_max_tokens;

    if (parse_request(s, c, kind, r, &p) < 0) {
        parsed_release(&p);
        return;
    }
    mt = json_object_get(p.body, "max_tokens");
    if (!mt)
        mt = json_object_get(p.body, "max_completion_tokens");
    if (json_is_integer(mt))
        max_tokens = json_integer_value(mt);
    if (kind == K_EMBED)
        max_tokens = 0;
    else if (max_tokens < 1 || max_tokens > 1000000) {
        fatia_httpd_respond_error(c, 400, "BadRequestError", "max_tokens must be at least 1");
        parsed_release(&p);
        return;
    }
    q = fatia_calloc(1, sizeof(*q));
    if (!q) {
        fatia_httpd_respond_error(c, 500, "InternalServerError", "out of memory");
        parsed_release(&p);
        return;
    }
    fatia_buf_init(&q->text, 0);
    fatia_buf_init(&q->pend_text, 0);
    fatia_buf_init(&q->pend_times, 0);
    s->live++;
    q->s = s;
    q->c = c;
    q->kind = kind;
    q->id = ++s->next_id;
    q->prompt_tokens = p.prompt_tokens;
    q->max_tokens = (uint32_t)max_tokens;
    q->stream = kind != K_EMBED && fatia_json_bool(p.body, "stream", false);
    q->include_usage =
        json_is_true(json_object_get(json_object_get(p.body, "stream_options"), "include_usage"));
    {
        /* the step in flight considers it when it ends: arrival is never later than that */
        double now = (double)(r->received - s->t_start) / 1e6 * s->cfg.speed;
        q->v_arrival = s->stepping && now > s->v_end ? s->v_end : now;
    }
    note_arrival(s, q->v_arrival);
    q->hashes = p.hashes;
    q->n_hashes = p.n_hashes;
    p.hashes = NULL;
    kv = json_object_get(p.body, "kv_transfer_params");
    if (json_is_true(json_object_get(kv, "do_remote_decode")) && kind != K_EMBED) {
        q->remote_decode = true; /* a prefill leg */
        q->max_tokens = 1;
        q->stream = false;
    }
    if (kind != K_EMBED && s->cfg.role != FATIA_ROLE_PREFILL && !q->remote_decode &&
        (uint64_t)q->prompt_tokens + q->max_tokens <= s->cfg.engine.max_model_len) {
        if (json_is_true(json_object_get(kv, "do_remote_prefill"))) {
            /* an outside sidecar's second leg: the KV is pulled from the prefill server */
            double t = json_number_value(json_object_get(kv, "engine_time"));
            parsed_release(&p);
            fatia_httpd_set_ctx(c, q);
            pull(s, q, t > 0 ? t : q->v_arrival);
            return;
        }
        if (prefiller && s->cfg.role == FATIA_ROLE_DECODE && q->prompt_tokens > 1 &&
            start_leg(s, q, p.body, r->head, prefiller)) {
            parsed_release(&p);
            return;
        }
    }
    parsed_release(&p);
    enqueue(s, q, false);
}

static void handle_lookup(struct fatia_enginesim *s, struct fatia_httpd_conn *c,
                          const struct fatia_httpd_req *r)
{
    const struct fatia_str *ct = fatia_http_header_get(r->head, "content-type");
    struct parsed p;
    char out[128];
    int n;

    if (ct && fatia_str_eqz(*ct, "application/octet-stream")) {
        /* the gateway's block hashes, 8 bytes each in host order: no JSON to parse */
        size_t k = r->body_len / 8;
        uint64_t *h = fatia_malloc((k ? k : 1) * sizeof(*h));
        if (!h) {
            fatia_httpd_respond_error(c, 500, "InternalServerError", "out of memory");
            return;
        }
        memcpy(h, r->body, k * 8);
        n = snprintf(out, sizeof(out), "{\"cachedTokens\":%u}",
                     fatia_engine_cached_tokens(s->engine, h, k, true));
        fatia_free(h);
        fatia_httpd_respond(c, 200, "application/json", NULL, out, (size_t)n);
        return;
    }
    /* the body is an inference request: chat if it has messages */
    json_t *peek = json_loadb(r->body, r->body_len, 0, NULL);
    enum kind kind = json_object_get(peek, "messages") ? K_CHAT : K_COMPLETION;
    json_decref(peek);
    if (parse_request(s, c, kind, r, &p) < 0) {
        parsed_release(&p);
        return;
    }
    n = snprintf(out, sizeof(out), "{\"cachedTokens\":%u,\"promptTokens\":%u}",
                 fatia_engine_cached_tokens(s->engine, p.hashes, p.n_hashes, true),
                 p.prompt_tokens);
    parsed_release(&p);
    fatia_httpd_respond(c, 200, "application/json", NULL, out, (size_t)n);
}

static void handle_metrics(struct fatia_enginesim *s, struct fatia_httpd_conn *c)
{
    struct fatia_engine_stats st;
    struct fatia_buf b = FATIA_BUF_INIT;
    char lab[400];

    fatia_engine_get_stats(s->engine, &st);
    snprintf(lab, sizeof(lab), "engine=\"0\",model_name=\"%s\"", s->model_json);
    fatia_buf_printf(
        &b,
        "# HELP vllm:num_requests_running Number of requests in model execution "
        "batches.\n# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{%s} %u\n"
        "# HELP vllm:num_requests_waiting Number of requests waiting to be "
        "processed.\n# TYPE vllm:num_requests_waiting gauge\n"
        "vllm:num_requests_waiting{%s} %u\n"
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent "
        "usage.\n# TYPE vllm:kv_cache_usage_perc gauge\n"
        "vllm:kv_cache_usage_perc{%s} %.6f\n"
        "# TYPE vllm:prefix_cache_queries counter\n"
        "vllm:prefix_cache_queries_total{%s} %" PRIu64 "\n"
        "# TYPE vllm:prefix_cache_hits counter\n"
        "vllm:prefix_cache_hits_total{%s} %" PRIu64 "\n"
        "# TYPE vllm:num_preemptions counter\n"
        "vllm:num_preemptions_total{%s} %" PRIu64 "\n"
        "# TYPE vllm:prompt_tokens counter\n"
        "vllm:prompt_tokens_total{%s} %" PRIu64 "\n"
        "# TYPE vllm:generation_tokens counter\n"
        "vllm:generation_tokens_total{%s} %" PRIu64 "\n"
        "# TYPE vllm:request_success counter\n"
        "vllm:request_success_total{%s,finished_reason=\"length\"} %" PRIu64 "\n"
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        "# TYPE vllm:cache_config_info gauge\n"
        "vllm:cache_config_info{block_size=\"%u\",enable_prefix_caching=\"%s\","
        "engine=\"0\",gpu_memory_utilization=\"%.2f\",num_gpu_blocks=\"%" PRIu64 "\"} 1.0\n",
        lab, st.running, lab, st.waiting, lab, st.kv_usage, lab, st.prefix_queries, lab,
        st.prefix_hits, lab, st.preemptions, lab, st.prompt_tokens, lab, st.generation_tokens, lab,
        s->success, s->cfg.engine.block_tokens, s->cfg.engine.prefix_caching ? "True" : "False",
        s->cfg.gpu_memory_utilization, st.num_gpu_blocks);
    fatia_buf_puts(&b, "# TYPE vllm:time_to_first_token_seconds histogram\n");
    fatia_hist_write(&s->ttft, &b, "vllm:time_to_first_token_seconds", lab);
    fatia_buf_puts(&b, "# TYPE vllm:inter_token_latency_seconds histogram\n");
    fatia_hist_write(&s->itl, &b, "vllm:inter_token_latency_seconds", lab);
    fatia_buf_puts(&b, "# TYPE vllm:e2e_request_latency_seconds histogram\n");
    fatia_hist_write(&s->e2e, &b, "vllm:e2e_request_latency_seconds", lab);
    fatia_buf_puts(&b, "# TYPE vllm:iteration_tokens_total histogram\n");
    fatia_hist_write(&s->iter_tokens, &b, "vllm:iteration_tokens_total", lab);
    fatia_buf_printf(&b,
                     "# HELP fatia_engine_sim_speed How many times faster than real time the "
                     "simulated engine runs.\n# TYPE fatia_engine_sim_speed gauge\n"
                     "fatia_engine_sim_speed %g\n"
                     "# HELP fatia_engine_sim_aborted_total Requests whose client went away.\n"
                     "# TYPE fatia_engine_sim_aborted_total counter\n"
                     "fatia_engine_sim_aborted_total %" PRIu64 "\n"
                     "# HELP fatia_engine_sim_request_rate Requests arrived per second (engine "
                     "time), exponentially weighted over 10 s.\n"
                     "# TYPE fatia_engine_sim_request_rate gauge\n"
                     "fatia_engine_sim_request_rate %.4f\n"
                     "# HELP fatia_engine_sim_info The simulated server's role in prefill/decode "
                     "disaggregation.\n# TYPE fatia_engine_sim_info gauge\n"
                     "fatia_engine_sim_info{role=\"%s\"} 1\n"
                     "# HELP fatia_engine_sim_kv_transfers_total Prompt KV caches pulled from a "
                     "prefill server.\n# TYPE fatia_engine_sim_kv_transfers_total counter\n"
                     "fatia_engine_sim_kv_transfers_total %" PRIu64 "\n"
                     "# TYPE fatia_engine_sim_kv_transfer_bytes_total counter\n"
                     "fatia_engine_sim_kv_transfer_bytes_total %" PRIu64 "\n"
                     "# HELP fatia_engine_sim_kv_transfer_seconds_total Transfer times (engine "
                     "time), waits for the link included.\n"
                     "# TYPE fatia_engine_sim_kv_transfer_seconds_total counter\n"
                     "fatia_engine_sim_kv_transfer_seconds_total %.6f\n"
                     "# HELP fatia_engine_sim_kv_loaded_tokens_total Prompt tokens admitted with "
                     "loaded KV.\n# TYPE fatia_engine_sim_kv_loaded_tokens_total counter\n"
                     "fatia_engine_sim_kv_loaded_tokens_total %" PRIu64 "\n"
                     "# HELP fatia_engine_sim_pd_fallbacks_total Requests whose prefill leg "
                     "failed, run here in full.\n# TYPE fatia_engine_sim_pd_fallbacks_total "
                     "counter\nfatia_engine_sim_pd_fallbacks_total %" PRIu64 "\n"
                     "# HELP fatia_engine_sim_prefill_legs_total Prefill legs served for a decode "
                     "server.\n# TYPE fatia_engine_sim_prefill_legs_total counter\n"
                     "fatia_engine_sim_prefill_legs_total %" PRIu64 "\n"
                     "# HELP fatia_engine_sim_step_lag_seconds How late engine steps ended, in "
                     "engine time.\n# TYPE fatia_engine_sim_step_lag_seconds histogram\n",
                     s->cfg.speed, s->aborted, rate_at(s, v_now(s)),
                     fatia_engine_role_name(s->cfg.role), s->kv_transfers, s->kv_bytes,
                     s->kv_seconds, st.remote_tokens, s->pd_fallbacks, s->prefill_legs_served);
    fatia_hist_write(&s->lag, &b, "fatia_engine_sim_step_lag_seconds", "");
    fatia_httpd_respond(c, 200, "text/plain; version=0.0.4; charset=utf-8", NULL, b.p, b.len);
    fatia_buf_release(&b);
}

static void handle_models(struct fatia_enginesim *s, struct fatia_httpd_conn *c)
{
    char out[1024];
    int n = snprintf(out, sizeof(out),
                     "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\","
                     "\"created\":%ld,\"owned_by\":\"fatia\",\"root\":\"%s\",\"parent\":null,"
                     "\"max_model_len\":%u}]}",
                     s->model_json, (long)s->created, s->model_json, s->cfg.engine.max_model_len);
    fatia_httpd_respond(c, 200, "application/json", NULL, out, (size_t)n);
}

static void on_request(void *ud, struct fatia_httpd_conn *c, const struct fatia_httpd_req *r)
{
    struct fatia_enginesim *s = ud;
    const struct fatia_http_head *h = r->head;
    struct fatia_str path = h->target;
    bool get = fatia_str_eqz(h->method, "GET"), post = fatia_str_eqz(h->method, "POST");
    const char *q = memchr(path.p, '?', path.n);

    if (q)
        path.n = (size_t)(q - path.p);
    if (s->cfg.tenants && path.n >= 4 && !memcmp(path.p, "/v1/", 4)) {
        size_t t;
        if (fatia_gateway_tenants_auth(s->cfg.tenants, fatia_http_header_get(h, "authorization"),
                                       &t) < 0) {
            fatia_httpd_respond_error(c, 401, "AuthenticationError",
                                      "a valid API key is required: Authorization: Bearer KEY");
            return;
        }
        if (!fatia_gateway_tenants_admit(s->cfg.tenants, t, fatia_now_mono_usec())) {
            fatia_httpd_respond_error(c, 429, "RateLimitError",
                                      "tenant %s is over its rate of %g requests per second",
                                      s->cfg.tenants->v[t].name, s->cfg.tenants->rate);
            return;
        }
    }
    if (get && fatia_str_eqz(path, "/health") && s->draining)
        fatia_httpd_respond_error(c, 503, "ServiceUnavailable", "draining: shutting down");
    else if (get && fatia_str_eqz(path, "/health"))
        fatia_httpd_respond(c, 200, NULL, NULL, "", 0);
    else if (get && fatia_str_eqz(path, "/metrics"))
        handle_metrics(s, c);
    else if (get && fatia_str_eqz(path, "/v1/models"))
        handle_models(s, c);
    else if (post && fatia_str_eqz(path, "/v1/completions"))
        handle_infer(s, c, K_COMPLETION, r);
    else if (post && fatia_str_eqz(path, "/v1/chat/completions"))
        handle_infer(s, c, K_CHAT, r);
    else if (post && fatia_str_eqz(path, "/v1/embeddings"))
        handle_infer(s, c, K_EMBED, r);
    else if (post && fatia_str_eqz(path, "/fatia/cache-lookup"))
        handle_lookup(s, c, r);
    else
        fatia_httpd_respond_error(c, 404, "NotFoundError", "no route for %.*s %.*s",
                                  (int)h->method.n, h->method.p, (int)path.n, path.p);
}

static void on_abort(void *ud, struct fatia_httpd_conn *c, void *req_ctx)
{
    struct fatia_enginesim *s = ud;
    struct sim_req *q = req_ctx;

    (void)c;
    if (!q)
        return;
    if (q->er)
        fatia_engine_abort(s->engine, q->er);
    s->aborted++;
    req_free(q);
}

int fatia_engine_config_for(const struct fatia_plan_input *in,
                            const struct fatia_serving_device *dev, struct fatia_engine_config *ret,
                            struct fatia_plan *ret_plan, char *why, size_t why_n)
{
    struct fatia_plan_input pi = *in;
    struct fatia_engine_config e = {0};
    struct fatia_plan p;
    double sm_share, mem_share;

    if (!pi.gpu_memory_bytes)
        pi.gpu_memory_bytes = dev->memory_bytes;
    if (!pi.gpus)
        pi.gpus = 1;
    if (fatia_serving_plan_compute(&pi, &p) < 0) {
        snprintf(why, why_n, "incomplete model shape");
        return -EINVAL;
    }
    if (!p.fits) {
        snprintf(why, why_n, "%s", p.reason);
        return -FATIA_E_NOFIT;
    }
    sm_share =
        dev->gpu_multiprocessors ? (double)dev->multiprocessors / dev->gpu_multiprocessors : 1.0;
    mem_share = dev->gpu_memory_slices ? (double)dev->memory_slices / dev->gpu_memory_slices : 1.0;
    e.model = pi.model;
    e.tp = pi.gpus;
    e.weights_bytes_per_gpu = p.weights_bytes_per_gpu;
    e.kv_bytes_per_token_per_gpu = p.kv_bytes_per_token_per_gpu;
    e.block_tokens = FATIA_PLAN_BLOCK_TOKENS;
    e.num_gpu_blocks = p.kv_cache_blocks;
    e.max_num_seqs = p.max_num_seqs;
    e.max_num_batched_tokens = p.max_num_batched_tokens;
    e.max_model_len = p.max_model_len;
    e.prefix_caching = true;
    e.flops = FATIA_CALIB_BF16_FLOPS * sm_share;
    e.hbm_bw = FATIA_CALIB_HBM_BYTES_PER_S * mem_share;
    e.kv_bw = FATIA_CALIB_KV_READ_BYTES_PER_S * mem_share;
    e.step_overhead = FATIA_CALIB_STEP_OVERHEAD_S;
    *ret = e;
    if (ret_plan)
        *ret_plan = p;
    return 0;
}

int fatia_enginesim_new(struct event_base *base, const struct fatia_enginesim_config *cfg,
                        struct fatia_enginesim **ret)
{
    static const struct fatia_httpd_ops ops = {on_request, on_abort, NULL};
    struct fatia_enginesim *s = fatia_calloc(1, sizeof(*s));
    size_t j = 0;
    int r;

    if (!s)
        return -ENOMEM;
    s->base = base;
    s->cfg = *cfg;
    if (s->cfg.speed <= 0)
        s->cfg.speed = 1;
    if (!s->cfg.default_max_tokens)
        s->cfg.default_max_tokens = 16;
    if (!s->cfg.stream_interval)
        s->cfg.stream_interval = 1;
    for (const char *p = cfg->served_model; *p && j + 2 < sizeof(s->model_json); p++) {
        if (*p == '"' || *p == '\\')
            s->model_json[j++] = '\\';
        if ((unsigned char)*p >= 0x20)
            s->model_json[j++] = *p;
    }
    s->created = (time_t)(fatia_now_real_usec() / FATIA_USEC_PER_SEC);
    /* V is the monotonic clock x speed, the same in every process of the machine, so that a
     * benchmark compares the times of several engines */
    s->t_start = 0;
    fatia_hist_init(&s->ttft, fatia_hist_ttft_buckets, fatia_hist_ttft_n);
    fatia_hist_init(&s->itl, fatia_hist_itl_buckets, fatia_hist_itl_n);
    fatia_hist_init(&s->e2e, fatia_hist_e2e_buckets, fatia_hist_e2e_n);
    fatia_hist_init(&s->lag, lag_bounds, FATIA_ARRAY_SIZE(lag_bounds));
    fatia_hist_init(&s->iter_tokens, iter_bounds, FATIA_ARRAY_SIZE(iter_bounds));
    {
        /* "HOST:PORT", "[v6]:PORT", ":PORT"; every address is reached on loopback */
        const char *l = cfg->listen ? cfg->listen : "", *colon = strrchr(l, ':');
        size_t n = colon ? (size_t)(colon - l) : strlen(l);
        if (n >= 2 && l[0] == '[' && l[n - 1] == ']') {
            l++;
            n -= 2;
        }
        if (!n || n >= sizeof(s->self_host) || (n == 7 && !memcmp(l, "0.0.0.0", 7)))
            snprintf(s->self_host, sizeof(s->self_host), "127.0.0.1");
        else
            snprintf(s->self_host, sizeof(s->self_host), "%.*s", (int)n, l);
    }
    s->link = cfg->kv_link;
    if (s->link.bandwidth <= 0)
        fatia_kvxfer_preset("nvlink", &s->link);
    r = fatia_engine_new(&cfg->engine, &s->engine);
    if (r < 0)
        goto fail;
    s->ev_step = event_new(base, -1, 0, on_step, s);
    if (!s->ev_step) {
        r = -ENOMEM;
        goto fail;
    }
    r = fatia_httpd_new(base, cfg->listen, &ops, s,
                        &(struct fatia_httpd_limits){.reuse_port = cfg->reuse_port}, &s->httpd);
    if (r < 0)
        goto fail;
    *ret = s;
    return 0;
fail:
    fatia_enginesim_free(s);
    return r;
}

void fatia_enginesim_free(struct fatia_enginesim *s)
{
    if (!s)
        return;
    fatia_httpd_free(s->httpd);
    for (size_t i = 0; i < s->n_peers; i++)
        fatia_upx_release(&s->peers[i].up);
    if (s->ev_step)
        event_free(s->ev_step);
    fatia_engine_free(s->engine);
    fatia_free(s);
}

void fatia_enginesim_drain(struct fatia_enginesim *s)
{
    s->draining = true;
    fatia_httpd_drain(s->httpd);
}

size_t fatia_enginesim_inflight(const struct fatia_enginesim *s)
{
    return s->live;
}

int fatia_enginesim_port(const struct fatia_enginesim *s)
{
    return fatia_httpd_port(s->httpd);
}
