/*
 * agent/probe.c: the probe policy, as kubelet's prober worker has it
 * (pkg/kubelet/prober/worker.go doProbe, pkg/kubelet/prober/prober_manager.go), pure.
 *
 * Model, per container instance and per probe kind:
 *
 *   start: readiness Failure, liveness Success, startup Unknown; each first due
 *          initialDelaySeconds after the instance started, then every periodSeconds
 *   result r: run = (r == last) ? run + 1 : 1; last = r; the result that counts becomes r only
 *          once run reaches successThreshold (r Success) or failureThreshold (r Failure)
 *   startup Success: startup is done for this instance; until then liveness and readiness are
 *          not run (readiness stays Failure, liveness Success)
 *   liveness or startup Failure: the caller kills the instance; the probe is on hold (no more
 *          runs) until the next instance starts, as kubelet's worker holds until the container
 *          id changes
 *
 * started = running && (no startup probe || startup Success); ready = started && (no readiness
 * probe || readiness Success). With no probe at all, running is started and ready, as before.
 *
 * Choices rejected: kubelet's random initial jitter within a period (tests want the first run at
 * initialDelaySeconds; several containers' probes are cheap enough on one box), and a ticker
 * anchored at the instance start (the next run is due a period after the last one started, which
 * is the same thing when runs take less than a period).
 *
 * fatia_agent_probe_spec translates the API's probe fields into the shim's spec (named ports
 * resolved, defaults applied) and refuses what kube-apiserver's validation refuses
 * (pkg/apis/core/validation validateProbe, validateHandler), naming the field path.
 */
#include "base/compat.h"

#include "agent/probe.h"

#include <errno.h>

#include "base/error.h"
#include "base/json.h"

void fatia_agent_probes_set(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            const struct fatia_agent_probe_cfg *cfg)
{
    struct fatia_agent_probe *p = &ps->p[k];

    *p = (struct fatia_agent_probe){0};
    if (cfg) {
        p->present = true;
        p->cfg = *cfg;
    }
}

static enum fatia_agent_probe_result initial(enum fatia_agent_probe_kind k)
{
    switch (k) {
    case FATIA_PROBE_READINESS:
        return FATIA_PROBE_FAILURE;
    case FATIA_PROBE_LIVENESS:
        return FATIA_PROBE_SUCCESS;
    default:
        return FATIA_PROBE_UNKNOWN;
    }
}

void fatia_agent_probes_start(struct fatia_agent_probes *ps, fatia_usec_t now)
{
    ps->running = true;
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        struct fatia_agent_probe *p = &ps->p[k];
        p->result = initial((enum fatia_agent_probe_kind)k);
        p->last = FATIA_PROBE_UNKNOWN;
        p->run = 0;
        p->on_hold = p->done = false;
        p->next_at = now + (fatia_usec_t)p->cfg.initial_delay_s * FATIA_USEC_PER_SEC;
    }
}

void fatia_agent_probes_stop(struct fatia_agent_probes *ps)
{
    ps->running = false;
    for (int k = 0; k < FATIA_PROBE_KINDS; k++)
        ps->p[k].result = initial((enum fatia_agent_probe_kind)k);
}

static bool startup_passed(const struct fatia_agent_probes *ps)
{
    const struct fatia_agent_probe *s = &ps->p[FATIA_PROBE_STARTUP];

    return !s->present || s->result == FATIA_PROBE_SUCCESS;
}

bool fatia_agent_probes_due(const struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            fatia_usec_t now)
{
    const struct fatia_agent_probe *p = &ps->p[k];

    if (!ps->running || !p->present || p->on_hold || p->done || now < p->next_at)
        return false;
    return k == FATIA_PROBE_STARTUP || startup_passed(ps);
}

void fatia_agent_probes_ran(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                            fatia_usec_t now)
{
    struct fatia_agent_probe *p = &ps->p[k];
    int64_t period = p->cfg.period_s > 0 ? p->cfg.period_s : 1;

    p->next_at = now + (fatia_usec_t)period * FATIA_USEC_PER_SEC;
}

bool fatia_agent_probes_result(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k,
                               bool ok)
{
    struct fatia_agent_probe *p = &ps->p[k];
    enum fatia_agent_probe_result r = ok ? FATIA_PROBE_SUCCESS : FATIA_PROBE_FAILURE, before;
    unsigned need;

    if (!ps->running || !p->present || p->on_hold || p->done)
        return false; /* a late answer for an instance that is gone, or held */
    before = p->result;
    p->run = p->last == r ? p->run + 1 : 1;
    p->last = r;
    need = ok ? p->cfg.success_threshold : p->cfg.failure_threshold;
    if (p->run < (need ? need : 1))
        return false;
    p->result = r;
    if (k == FATIA_PROBE_STARTUP && ok)
        p->done = true;
    return p->result != before;
}

fatia_usec_t fatia_agent_probes_next(const struct fatia_agent_probes *ps)
{
    fatia_usec_t next = INT64_MAX;

    if (!ps->running)
        return next;
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        const struct fatia_agent_probe *p = &ps->p[k];
        if (!p->present || p->on_hold || p->done)
            continue;
        if (k != FATIA_PROBE_STARTUP && !startup_passed(ps))
            continue;
        next = FATIA_MIN(next, p->next_at);
    }
    return next;
}

bool fatia_agent_probes_started(const struct fatia_agent_probes *ps)
{
    return ps->running && startup_passed(ps);
}

bool fatia_agent_probes_ready(const struct fatia_agent_probes *ps)
{
    const struct fatia_agent_probe *r = &ps->p[FATIA_PROBE_READINESS];

    return fatia_agent_probes_started(ps) && (!r->present || r->result == FATIA_PROBE_SUCCESS);
}

enum fatia_agent_probe_kind fatia_agent_probes_failed(const struct fatia_agent_probes *ps)
{
    if (!ps->running)
        return FATIA_PROBE_KINDS;
    for (int k = FATIA_PROBE_STARTUP; k <= FATIA_PROBE_LIVENESS; k++) {
        const struct fatia_agent_probe *p = &ps->p[k];
        if (p->present && !p->on_hold && p->result == FATIA_PROBE_FAILURE)
            return (enum fatia_agent_probe_kind)k;
    }
    return FATIA_PROBE_KINDS;
}

void fatia_agent_probes_hold(struct fatia_agent_probes *ps, enum fatia_agent_probe_kind k)
{
    ps->p[k].on_hold = true;
    ps->p[k].run = 0;
}

const char *fatia_agent_probe_kind_name(enum fatia_agent_probe_kind k)
{
    static const char *const names[] = {"Startup", "Liveness", "Readiness"};

    return k < FATIA_PROBE_KINDS ? names[k] : "";
}

const char *fatia_agent_probe_field(enum fatia_agent_probe_kind k)
{
    static const char *const names[] = {"startupProbe", "livenessProbe", "readinessProbe"};

    return k < FATIA_PROBE_KINDS ? names[k] : "";
}

/* ---- the shim's spec ---- */

static const char *const spec_keys[] = {"startup", "liveness", "readiness"};

bool fatia_agent_probe_cfg_parse(const json_t *p, struct fatia_agent_probe_cfg *cfg)
{
    int64_t d, per, to, st, ft;

    if (!fatia_json_int(p, "initialDelaySeconds", &d) ||
        !fatia_json_int(p, "periodSeconds", &per) || !fatia_json_int(p, "timeoutSeconds", &to) ||
        !fatia_json_int(p, "successThreshold", &st) ||
        !fatia_json_int(p, "failureThreshold", &ft) || d < 0 || per < 1 || to < 1 || st < 1 ||
        ft < 1)
        return false;
    *cfg = (struct fatia_agent_probe_cfg){.initial_delay_s = d,
                                          .period_s = per,
                                          .timeout_s = to,
                                          .success_threshold = (unsigned)st,
                                          .failure_threshold = (unsigned)ft};
    return true;
}

/* A port: a number 1..65535, or the name of one of the container's ports. */
static int resolve_port(const json_t *c, const json_t *port, const char *path, int64_t *ret,
                        char *why, size_t why_n)
{
    if (json_is_integer(port)) {
        *ret = json_integer_value(port);
    } else if (json_is_string(port)) {
        const char *name = json_string_value(port);
        size_t i;
        json_t *cp;
        *ret = 0;
        json_array_foreach(json_object_get(c, "ports"), i, cp)
        {
            const char *n = fatia_json_str(cp, "name");
            int64_t v;
            if (n && !strcmp(n, name) && fatia_json_int(cp, "containerPort", &v))
                *ret = v;
        }
        if (*ret == 0) {
            snprintf(why, why_n, "%s: Invalid value: \"%s\": no container port of that name", path,
                     name);
            return -FATIA_E_INVALID;
        }
    } else {
        snprintf(why, why_n, "%s: Required value", path);
        return -FATIA_E_INVALID;
    }
    if (*ret < 1 || *ret > 65535) {
        snprintf(why, why_n, "%s: Invalid value: %lld: must be between 1 and 65535, inclusive",
                 path, (long long)*ret);
        return -FATIA_E_INVALID;
    }
    return 0;
}

static int timing(const json_t *pr, const char *field, int64_t def, int64_t min, const char *base,
                  json_t *out, char *why, size_t why_n)
{
    const json_t *v = json_object_get(pr, field);
    int64_t x = def;

    if (v && !json_is_null(v)) {
        if (!json_is_integer(v)) {
            snprintf(why, why_n, "%s.%s: Invalid value: must be an integer", base, field);
            return -FATIA_E_INVALID;
        }
        x = json_integer_value(v);
        if (x == 0 && min > 0)
            x = def; /* the API defaults a zero to the default */
    }
    if (x < min) {
        snprintf(why, why_n, "%s.%s: Invalid value: %lld: must be greater than or equal to %lld",
                 base, field, (long long)x, (long long)min);
        return -FATIA_E_INVALID;
    }
    json_object_set_new(out, field, json_integer(x));
    return 0;
}

static int handler(const json_t *c, const json_t *pr, const char *base, json_t *out, char *why,
                   size_t why_n)
{
    const json_t *ex = json_object_get(pr, "exec"), *hg = json_object_get(pr, "httpGet"),
                 *ts = json_object_get(pr, "tcpSocket"), *gr = json_object_get(pr, "grpc");
    char path[600];
    int64_t port;
    int n = !!ex + !!hg + !!ts + !!gr, r;

    if (n != 1) {
        snprintf(why, why_n,
                 n ? "%s: Forbidden: may not specify more than 1 handler type"
                   : "%s: Required value: must specify a handler type",
                 base);
        return -FATIA_E_INVALID;
    }
    if (gr) {
        snprintf(why, why_n,
                 "%s.grpc: Unsupported value: fatia's agent runs exec, httpGet and "
                 "tcpSocket probes",
                 base);
        return -FATIA_E_INVALID;
    }
    if (ex) {
        const json_t *cmd = json_object_get(ex, "command");
        size_t i;
        json_t *a;
        if (!json_is_array(cmd) || json_array_size(cmd) == 0) {
            snprintf(why, why_n, "%s.exec.command: Required value", base);
            return -FATIA_E_INVALID;
        }
        json_array_foreach(cmd, i, a)
        {
            if (!json_is_string(a)) {
                snprintf(why, why_n, "%s.exec.command[%zu]: Invalid value: must be a string", base,
                         i);
                return -FATIA_E_INVALID;
            }
        }
        json_object_set_new(out, "exec", json_pack("{s:O}", "command", cmd));
        return 0;
    }
    if (ts) {
        snprintf(path, sizeof(path), "%s.tcpSocket.port", base);
        r = resolve_port(c, json_object_get(ts, "port"), path, &port, why, why_n);
        if (r < 0)
            return r;
        json_object_set_new(out, "tcpSocket",
                            json_pack("{s:s,s:I}", "host",
                                      fatia_json_str(ts, "host") ? fatia_json_str(ts, "host") : "",
                                      "port", (json_int_t)port));
        return 0;
    }
    {
        const char *scheme = fatia_json_str(hg, "scheme"), *p = fatia_json_str(hg, "path");
        json_t *hdrs = json_array(), *h;
        size_t i;
        snprintf(path, sizeof(path), "%s.httpGet.port", base);
        r = resolve_port(c, json_object_get(hg, "port"), path, &port, why, why_n);
        if (r < 0) {
            json_decref(hdrs);
            return r;
        }
        if (scheme && strcmp(scheme, "HTTP") && strcmp(scheme, "HTTPS")) {
            json_decref(hdrs);
            snprintf(why, why_n,
                     "%s.httpGet.scheme: Unsupported value: \"%s\": supported values: \"HTTP\", "
                     "\"HTTPS\"",
                     base, scheme);
            return -FATIA_E_INVALID;
        }
        if (scheme && !strcmp(scheme, "HTTPS")) {
            json_decref(hdrs);
            snprintf(why, why_n,
                     "%s.httpGet.scheme: Unsupported value: \"HTTPS\": fatia's agent probes over "
                     "HTTP only",
                     base);
            return -FATIA_E_INVALID;
        }
        json_array_foreach(json_object_get(hg, "httpHeaders"), i, h)
        {
            const char *hn = fatia_json_str(h, "name"), *hv = fatia_json_str(h, "value");
            if (!hn || !hn[0] || strpbrk(hn, ":\r\n ") || (hv && strpbrk(hv, "\r\n"))) {
                json_decref(hdrs);
                snprintf(why, why_n, "%s.httpGet.httpHeaders[%zu]: Invalid value", base, i);
                return -FATIA_E_INVALID;
            }
            json_array_append_new(hdrs, json_pack("[s,s]", hn, hv ? hv : ""));
        }
        if (p && (strpbrk(p, "\r\n ") || (p[0] && p[0] != '/'))) {
            json_decref(hdrs);
            snprintf(why, why_n, "%s.httpGet.path: Invalid value: \"%s\"", base, p);
            return -FATIA_E_INVALID;
        }
        json_object_set_new(out, "httpGet",
                            json_pack("{s:s,s:I,s:s,s:s,s:o}", "host",
                                      fatia_json_str(hg, "host") ? fatia_json_str(hg, "host") : "",
                                      "port", (json_int_t)port, "path", p && p[0] ? p : "/",
                                      "scheme", scheme ? scheme : "HTTP", "headers", hdrs));
        return 0;
    }
}

int fatia_agent_probe_spec(const json_t *c, size_t index, json_t **ret, char *why, size_t why_n)
{
    json_t *out = NULL;
    int r = 0;

    *ret = NULL;
    for (int k = 0; k < FATIA_PROBE_KINDS; k++) {
        const json_t *pr = json_object_get(c, fatia_agent_probe_field(k));
        char base[300];
        json_t *p;
        if (!pr || json_is_null(pr))
            continue;
        snprintf(base, sizeof(base), "spec.containers[%zu].%s", index, fatia_agent_probe_field(k));
        if (!json_is_object(pr)) {
            snprintf(why, why_n, "%s: Invalid value: must be an object", base);
            r = -FATIA_E_INVALID;
            goto fail;
        }
        if (!out && !(out = json_object())) {
            r = -ENOMEM;
            goto fail;
        }
        p = json_object();
        json_object_set_new(out, spec_keys[k], p);
        if ((r = timing(pr, "initialDelaySeconds", 0, 0, base, p, why, why_n)) < 0 ||
            (r = timing(pr, "periodSeconds", 10, 1, base, p, why, why_n)) < 0 ||
            (r = timing(pr, "timeoutSeconds", 1, 1, base, p, why, why_n)) < 0 ||
            (r = timing(pr, "successThreshold", 1, 1, base, p, why, why_n)) < 0 ||
            (r = timing(pr, "failureThreshold", 3, 1, base, p, why, why_n)) < 0)
            goto fail;
        if (k != FATIA_PROBE_READINESS &&
            json_integer_value(json_object_get(p, "successThreshold")) != 1) {
            snprintf(why, why_n, "%s.successThreshold: Invalid value: %lld: must be 1", base,
                     (long long)json_integer_value(json_object_get(p, "successThreshold")));
            r = -FATIA_E_INVALID;
            goto fail;
        }
        if ((r = handler(c, pr, base, p, why, why_n)) < 0)
            goto fail;
        if (json_object_get(pr, "terminationGracePeriodSeconds") &&
            !json_is_null(json_object_get(pr, "terminationGracePeriodSeconds"))) {
            /* the probe's own grace period for the kill it causes (liveness, startup) */
            const json_t *g = json_object_get(pr, "terminationGracePeriodSeconds");
            if (k == FATIA_PROBE_READINESS) {
                snprintf(why, why_n,
                         "%s.terminationGracePeriodSeconds: Invalid value: must not be set for "
                         "readinessProbes",
                         base);
                r = -FATIA_E_INVALID;
                goto fail;
            }
            if (!json_is_integer(g) || json_integer_value(g) < 1) {
                snprintf(why, why_n,
                         "%s.terminationGracePeriodSeconds: Invalid value: must be greater than 0",
                         base);
                r = -FATIA_E_INVALID;
                goto fail;
            }
            json_object_set(p, "terminationGracePeriodSeconds", (json_t *)g);
        }
    }
    *ret = out;
    return 0;
fail:
    json_decref(out);
    return r;
}
