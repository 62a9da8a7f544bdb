/*
 * gateway/prom.c: the vLLM metrics scanner (see prom.h).
 *
 * A sample line is `name[{label="value",...}] value [timestamp]`. The scanner matches the name
 * against the handful it wants before looking at anything else, so the many histogram lines of a
 * vLLM exposition cost one prefix comparison each. Values go through strtod on a bounded copy
 * (the text is not NUL-terminated).
 */
#include "base/compat.h"

#include "gateway/prom.h"

#include <math.h>

enum which {
    M_NONE,
    M_WAITING,
    M_RUNNING,
    M_KV,
    M_KV_OLD,
    M_CACHECFG,
    M_QUERIES,
    M_HITS,
};

static enum which name_of(const char *p, size_t n)
{
    static const struct {
        const char *name;
        enum which w;
    } names[] = {
        {"vllm:num_requests_waiting", M_WAITING},
        {"vllm:num_requests_running", M_RUNNING},
        {"vllm:kv_cache_usage_perc", M_KV},
        {"vllm:gpu_cache_usage_perc", M_KV_OLD},
        {"vllm:cache_config_info", M_CACHECFG},
        {"vllm:prefix_cache_queries", M_QUERIES},
        {"vllm:prefix_cache_queries_total", M_QUERIES},
        {"vllm:prefix_cache_hits", M_HITS},
        {"vllm:prefix_cache_hits_total", M_HITS},
    };

    if (n < 5 || memcmp(p, "vllm:", 5))
        return M_NONE;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(names); i++)
        if (strlen(names[i].name) == n && !memcmp(names[i].name, p, n))
            return names[i].w;
    return M_NONE;
}

static bool parse_num(const char *p, size_t n, double *ret)
{
    char buf[64];
    char *end;

    if (!n || n >= sizeof(buf))
        return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    *ret = strtod(buf, &end);
    return end == buf + n && !isnan(*ret);
}

/* The value of label `key` inside {...} (p points after '{', n up to '}'). */
static bool label(const char *p, size_t n, const char *key, const char **v, size_t *vn)
{
    size_t kn = strlen(key), i = 0;

    while (i < n) {
        size_t ks = i, q;
        while (i < n && p[i] != '=')
            i++;
        if (i + 1 >= n || p[i + 1] != '"')
            return false;
        q = i + 2;
        i = q;
        while (i < n && p[i] != '"') {
            if (p[i] == '\\')
                i++;
            i++;
        }
        if (i >= n)
            return false;
        if (i - q < 64 && (q - 2 - ks) == kn && !memcmp(p + ks, key, kn)) {
            *v = p + q;
            *vn = i - q;
            return true;
        }
        i++;
        while (i < n && (p[i] == ',' || p[i] == ' '))
            i++;
    }
    return false;
}

int fatia_prom_scan_vllm(const char *text, size_t n, struct fatia_engine_metrics *ret)
{
    struct fatia_engine_metrics m = {0};
    const char *p = text, *end = text + n;
    double kv_old = 0;
    bool have_kv_old = false;
    int used = 0;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end, *q = p, *lb = NULL, *rb = NULL, *vs;
        enum which w;
        double v;

        if (*p == '#' || *p == '\n')
            goto next;
        while (q < le && *q != '{' && *q != ' ')
            q++;
        w = name_of(p, (size_t)(q - p));
        if (w == M_NONE)
            goto next;
        if (q < le && *q == '{') {
            lb = q + 1;
            rb = memchr(lb, '}', (size_t)(le - lb));
            if (!rb)
                goto next;
            q = rb + 1;
        }
        while (q < le && *q == ' ')
            q++;
        vs = q;
        while (q < le && *q != ' ' && *q != '\r')
            q++;
        if (!parse_num(vs, (size_t)(q - vs), &v))
            goto next;
        used++;
        switch (w) {
        case M_WAITING:
            m.waiting += v;
            m.have |= FATIA_PROM_WAITING;
            break;
        case M_RUNNING:
            m.running += v;
            m.have |= FATIA_PROM_RUNNING;
            break;
        case M_KV:
            m.kv_usage = (m.have & FATIA_PROM_KV) ? fmax(m.kv_usage, v) : v;
            m.have |= FATIA_PROM_KV;
            break;
        case M_KV_OLD:
            kv_old = have_kv_old ? fmax(kv_old, v) : v;
            have_kv_old = true;
            break;
        case M_CACHECFG: {
            const char *lv;
            size_t ln;
            double d;
            if (lb && label(lb, (size_t)(rb - lb), "num_gpu_blocks", &lv, &ln) &&
                parse_num(lv, ln, &d) && d >= 0 && d < 1e15) {
                m.num_gpu_blocks = (uint64_t)d;
                m.have |= FATIA_PROM_CACHECFG;
            }
            if (lb && label(lb, (size_t)(rb - lb), "block_size", &lv, &ln) &&
                parse_num(lv, ln, &d) && d >= 1 && d <= 65536)
                m.block_size = (uint32_t)d;
            break;
        }
        case M_QUERIES:
            m.prefix_queries += v;
            m.have |= FATIA_PROM_PREFIX;
            break;
        case M_HITS:
            m.prefix_hits += v;
            m.have |= FATIA_PROM_PREFIX;
            break;
        case M_NONE:
            break;
        }
next:
        p = eol ? eol + 1 : end;
    }
    if (!(m.have & FATIA_PROM_KV) && have_kv_old) {
        m.kv_usage = kv_old;
        m.have |= FATIA_PROM_KV;
    }
    if ((m.have & FATIA_PROM_CACHECFG) && !m.block_size)
        m.block_size = 16;
    *ret = m;
    return used;
}
