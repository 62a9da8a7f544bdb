/*
 * apiserver/protobuf.c: Kubernetes protobuf (application/vnd.kubernetes.protobuf) <-> JSON trees.
 *
 * Model: fatiad keeps and validates every object as JSON; protobuf is only a wire form. A
 * request body in protobuf is decoded to the same JSON tree a JSON body would give and then
 * goes the JSON path (limits, validation, admission), and an answer is encoded from the JSON
 * tree the JSON answer would carry. So the two forms cannot disagree about semantics, and a
 * kind needs nothing here to speak protobuf but its message in the generated tables
 * (pb_schema.c, from the upstream generated.proto files: their field numbers are the contract).
 *
 * Wire (apimachinery runtime/serializer/protobuf): "k8s\0", then a runtime.Unknown {1 typeMeta
 * {1 apiVersion, 2 kind}, 2 raw: the object's message, 3 contentEncoding, 4 contentType}. The
 * JSON name of a field is its proto name (go-to-protobuf names them after the JSON tags). A few
 * apimachinery messages marshal to JSON their own way (pb_schema.h: Time, MicroTime, Duration,
 * Quantity, IntOrString, FieldsV1/RawExtension, string lists): those are converted here.
 *
 * Zero values: Go's protobuf marshaller writes every non-pointer field, zero or not (empty
 * strings, a zero creationTimestamp), while its JSON marshaller leaves out the omitempty ones.
 * The decoder therefore drops a singular empty string or bytes field and a zero Time, which is
 * what a JSON body of the same Go object would have said; numbers and booleans are kept, since
 * an explicit 0 or false of a pointer field (replicas: 0, suspend: false) means something.
 *
 * Invariants: decoding never reads past the buffer (every length is checked against what is
 * left), nests at most PB_MAX_DEPTH messages (a hostile body cannot exhaust the stack), and
 * either returns a whole tree or nothing (fuzz/fuzz_protobuf.c). Unknown field numbers are
 * skipped, as proto2 parsers do; a wire type that contradicts the table is an error.
 * Rejected: a protobuf-c or nanopb dependency (either needs its own generated code per message,
 * and neither knows apimachinery's JSON conventions, which are most of the work here).
 */
#include "base/compat.h"

#include "apiserver/protobuf.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"

#define PB_MAX_DEPTH 100

static const char pb_magic[4] = {'k', '8', 's', 0};

/* ---- lookups ---- */

static int msg_cmp(const void *key, const void *el)
{
    return strcmp(key, ((const struct fatia_pb_msg *)el)->name);
}

const struct fatia_pb_msg *fatia_api_pb_find(const char *name)
{
    return bsearch(name, fatia_api_pb_msgs, fatia_api_pb_n_msgs, sizeof(fatia_api_pb_msgs[0]),
                   msg_cmp);
}

const struct fatia_pb_msg *fatia_api_pb_for_kind(const char *api_version, const char *kind)
{
    char name[256];
    const char *slash, *dot;
    const struct fatia_pb_msg *m = NULL;

    if (!api_version || !kind)
        return NULL;
    slash = strchr(api_version, '/');
    if (!slash) {
        snprintf(name, sizeof(name), "k8s.io.api.core.%s.%s", api_version, kind);
    } else if (!strncmp(api_version, "meta.k8s.io/", 12)) {
        snprintf(name, sizeof(name), "k8s.io.apimachinery.pkg.apis.meta.%s.%s", slash + 1, kind);
    } else if (!strcmp(api_version, "resource.k8s.io/v1")) {
        /* resource.k8s.io/v1 (GA in 1.34) is v1beta2 renamed, numbers kept; the tables are
         * v0.33's, which has no v1 file yet */
        snprintf(name, sizeof(name), "k8s.io.api.resource.v1beta2.%s", kind);
    } else {
        dot = memchr(api_version, '.', (size_t)(slash - api_version));
        /* a group with a dot is a built-in only under k8s.io (apps has none) */
        if (dot && !strstr(api_version, ".k8s.io/"))
            return NULL;
        snprintf(name, sizeof(name), "k8s.io.api.%.*s.%s.%s",
                 (int)((dot ? dot : slash) - api_version), api_version, slash + 1, kind);
    }
    m = fatia_api_pb_find(name);
    if (!m && (!strcmp(kind, "Status") || !strcmp(kind, "DeleteOptions") ||
               !strcmp(kind, "WatchEvent"))) {
        snprintf(name, sizeof(name), "k8s.io.apimachinery.pkg.apis.meta.v1.%s", kind);
        m = fatia_api_pb_find(name);
    }
    return m;
}

static const struct fatia_pb_field *field_by_num(const struct fatia_pb_msg *m, uint32_t num)
{
    size_t lo = 0, hi = m->n_fields;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->fields[mid].num == num)
            return &m->fields[mid];
        if (m->fields[mid].num < num)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const struct fatia_pb_field *field_by_name(const struct fatia_pb_msg *m, const char *name)
{
    for (size_t i = 0; i < m->n_fields; i++)
        if (m->fields[i].label != FATIA_PB_INLINE && !strcmp(m->fields[i].name, name))
            return &m->fields[i];
    return NULL;
}

/* ---- reading ---- */

struct rd {
    const unsigned char *p, *end;
};

struct wf { /* one field on the wire */
    uint32_t num;
    int wt;
    uint64_t u; /* varint, fixed64, fixed32 */
    const unsigned char *b;
    size_t n; /* length-delimited */
};

static bool rd_varint(struct rd *r, uint64_t *ret)
{
    uint64_t v = 0;

    for (int s = 0; s < 64 && r->p < r->end; s += 7) {
        unsigned char c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << s;
        if (c < 0x80) {
            *ret = v;
            return true;
        }
    }
    return false;
}

/* 1 = a field read, 0 = the end, -1 = malformed */
static int rd_field(struct rd *r, struct wf *f)
{
    uint64_t key, len;

    if (r->p == r->end)
        return 0;
    if (!rd_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return -1;
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case 0:
        return rd_varint(r, &f->u) ? 1 : -1;
    case 1:
        if (r->end - r->p < 8)
            return -1;
        f->u = 0;
        for (int i = 7; i >= 0; i--)
            f->u = f->u << 8 | r->p[i];
        r->p += 8;
        return 1;
    case 5:
        if (r->end - r->p < 4)
            return -1;
        f->u = (uint64_t)r->p[0] | (uint64_t)r->p[1] << 8 | (uint64_t)r->p[2] << 16 |
               (uint64_t)r->p[3] << 24;
        r->p += 4;
        return 1;
    case 2:
        if (!rd_varint(r, &len) || len > (uint64_t)(r->end - r->p))
            return -1;
        f->b = r->p;
        f->n = (size_t)len;
        r->p += len;
        return 1;
    default: /* groups (3, 4) are not used by Kubernetes */
        return -1;
    }
}

/* ---- writing ---- */

static int put_varint(struct fatia_buf *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;

    do {
        t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return fatia_buf_append(b, t, n);
}

static int put_key(struct fatia_buf *b, uint32_t num, int wt)
{
    return put_varint(b, (uint64_t)num << 3 | (uint64_t)wt);
}

static int put_lenbytes(struct fatia_buf *b, uint32_t num, const void *p, size_t n)
{
    int rc = put_key(b, num, 2);
    if (!rc)
        rc = put_varint(b, n);
    if (!rc)
        rc = fatia_buf_append(b, p, n);
    return rc;
}

/* A length-delimited field whose contents are written after it: open gives the mark, close
 * writes the length in front (5 bytes reserved, moved down to the varint's size). */
static int open_len(struct fatia_buf *b, uint32_t num, size_t *mark)
{
    int rc = put_key(b, num, 2);
    if (rc)
        return rc;
    *mark = b->len;
    return fatia_buf_append(b, "\0\0\0\0\0", 5);
}

static void close_len(struct fatia_buf *b, size_t mark)
{
    size_t n = b->len - mark - 5, k = 0;
    unsigned char t[5];
    uint64_t v = n;

    do {
        t[k++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v && k < 5);
    memmove(b->p + mark + k, b->p + mark + 5, n);
    memcpy(b->p + mark, t, k);
    fatia_buf_truncate(b, mark + k + n);
}

/* ---- the special messages ---- */

static json_t *time_json(int64_t sec, int64_t nanos, bool micro)
{
    time_t t = (time_t)sec;
    struct tm tm;
    char buf[64];
    size_t n;

    if (!gmtime_r(&t, &tm))
        return NULL;
    n = (size_t)snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (micro)
        snprintf(buf + n, sizeof(buf) - n, ".%06dZ", (int)((nanos / 1000) % 1000000));
    else
        snprintf(buf + n, sizeof(buf) - n, "Z");
    return json_string(buf);
}

/* Go's time.Duration.String() */
static json_t *duration_json(int64_t d)
{
    char buf[64], frac[16] = "";
    uint64_t u = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    const char *sign = d < 0 ? "-" : "";

    if (u == 0)
        return json_string("0s");
    if (u < 1000000000ull) {
        /* under a second: ns, µs or ms with a fraction */
        const char *unit = "ns";
        uint64_t div = 1;
        if (u >= 1000000ull) {
            unit = "ms";
            div = 1000000ull;
        } else if (u >= 1000ull) {
            unit = "\u00b5s";
            div = 1000ull;
        }
        if (div > 1 && u % div) {
            int w = div == 1000000ull ? 6 : 3;
            snprintf(frac, sizeof(frac), ".%0*llu", w, (unsigned long long)(u % div));
            for (size_t l = strlen(frac); l && frac[l - 1] == '0'; l--)
                frac[l - 1] = '\0';
        }
        snprintf(buf, sizeof(buf), "%s%llu%s%s", sign, (unsigned long long)(u / div), frac, unit);
        return json_string(buf);
    }
    {
        uint64_t s = u / 1000000000ull, ns = u % 1000000000ull;
        size_t n = 0;
        if (ns) {
            snprintf(frac, sizeof(frac), ".%09llu", (unsigned long long)ns);
            for (size_t l = strlen(frac); l && frac[l - 1] == '0'; l--)
                frac[l - 1] = '\0';
        }
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", sign);
        if (s >= 3600)
            n +=
                (size_t)snprintf(buf + n, sizeof(buf) - n, "%lluh", (unsigned long long)(s / 3600));
        if (s >= 60)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%llum",
                                  (unsigned long long)(s / 60 % 60));
        snprintf(buf + n, sizeof(buf) - n, "%llu%ss", (unsigned long long)(s % 60), frac);
        return json_string(buf);
    }
}

/* Go's time.ParseDuration, exactly (integers, no floating point), for the units Go writes;
 * -EINVAL otherwise or past the int64 range. */
static int duration_parse(const char *s, int64_t *ret)
{
    static const struct {
        const char *u;
        uint64_t ns;
    } units[] = {{"ns", 1},
                 {"us", 1000},
                 {"\u00b5s", 1000},
                 {"ms", 1000000},
                 {"s", 1000000000ull},
                 {"m", 60000000000ull},
                 {"h", 3600000000000ull}};

    uint64_t total = 0;
    bool neg = false;

    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    if (!strcmp(s, "0")) {
        *ret = 0;
        return 0;
    }
    if (!*s)
        return -EINVAL;
    while (*s) {
        uint64_t whole = 0, frac = 0, scale = 1, v;
        size_t best = 0, bi = 0;
        bool digits = false;
        for (; *s >= '0' && *s <= '9'; s++, digits = true) {
            if (whole > (UINT64_MAX - 9) / 10)
                return -EINVAL;
            whole = whole * 10 + (uint64_t)(*s - '0');
        }
        if (*s == '.')
            for (s++; *s >= '0' && *s <= '9'; s++, digits = true)
                if (scale < 1000000000ull) { /* 9 digits: below a nanosecond of a second */
                    frac = frac * 10 + (uint64_t)(*s - '0');
                    scale *= 10;
                }
        if (!digits)
            return -EINVAL;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t l = strlen(units[i].u);
            if (!strncmp(s, units[i].u, l) && l > best) {
                best = l;
                bi = i;
            }
        }
        if (!best)
            return -EINVAL;
        if (whole && units[bi].ns > (uint64_t)INT64_MAX / whole)
            return -EINVAL;
        /* frac/scale of a unit, exactly: frac < scale <= 1e9, so frac * (unit / scale) < unit
         * and frac * (unit % scale) < 1e18 */
        v = whole * units[bi].ns + frac * (units[bi].ns / scale) +
            frac * (units[bi].ns % scale) / scale;
        if (v > (uint64_t)INT64_MAX - total)
            return -EINVAL;
        total += v;
        s += best;
    }
    *ret = neg ? -(int64_t)total : (int64_t)total;
    return 0;
}

static json_t *b64_json(const unsigned char *p, size_t n)
{
    char *out;
    json_t *r;

    if (n > (1u << 30))
        return NULL;
    out = fatia_malloc(4 * ((n + 2) / 3) + 1);
    if (!out)
        return NULL;
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    r = json_string(out);
    fatia_free(out);
    return r;
}

static int b64_put(struct fatia_buf *b, uint32_t num, const char *s)
{
    size_t n = strlen(s), pad = 0;
    unsigned char *out;
    int len, rc;

    if (n % 4 || n > (1u << 30))
        return -EINVAL;
    out = fatia_malloc(n / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    len = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
    if (len < 0) {
        fatia_free(out);
        return -EINVAL;
    }
    if (n && s[n - 1] == '=')
        pad++;
    if (n > 1 && s[n - 2] == '=')
        pad++;
    rc = put_lenbytes(b, num, out, (size_t)len - pad);
    fatia_free(out);
    return rc;
}

/* ---- decoding ---- */

struct dctx {
    char *why;
    size_t why_n;
};

static int derr(struct dctx *c, const char *msg, const char *a, const char *b)
{
    if (c->why && !c->why[0])
        snprintf(c->why, c->why_n, "%s%s%s%s%s", msg, a ? ": " : "", a ? a : "", b ? "." : "",
                 b ? b : "");
    return -EINVAL;
}

static int decode_msg(const struct fatia_pb_msg *m, const unsigned char *p, size_t n, int depth,
                      struct dctx *c, json_t **ret);

/* The special messages: *ret NULL = leave the field out (a zero Time, empty raw JSON). */
static int decode_special(const struct fatia_pb_msg *m, const unsigned char *p, size_t n,
                          struct dctx *c, json_t **ret)
{
    struct rd r = {p, p + n};
    struct wf f;
    int64_t a = 0, b = 0;
    const unsigned char *s = NULL;
    size_t sn = 0;
    json_t *arr = NULL;
    int rc;

    *ret = NULL;
    if (m->special == FATIA_PB_SP_STRLIST && !(arr = json_array()))
        return -ENOMEM;
    while ((rc = rd_field(&r, &f)) > 0) {
        if (m->special == FATIA_PB_SP_STRLIST) {
            json_t *e;
            if (f.num != 1)
                continue;
            if (f.wt != 2 || !(e = json_stringn((const char *)f.b, f.n))) {
                json_decref(arr);
                return derr(c, "a string list holds no valid string", m->name, NULL);
            }
            json_array_append_new(arr, e);
        } else if (f.wt == 0 && f.num == 1) {
            a = (int64_t)f.u;
        } else if (f.wt == 0 && f.num == 2) {
            b = (int64_t)f.u;
        } else if (f.wt == 2 && (f.num == 1 || f.num == 3)) {
            s = f.b;
            sn = f.n;
        }
    }
    if (rc < 0) {
        json_decref(arr);
        return derr(c, "malformed message", m->name, NULL);
    }
    switch (m->special) {
    case FATIA_PB_SP_STRLIST:
        *ret = arr;
        return 0;
    case FATIA_PB_SP_TIME:
    case FATIA_PB_SP_MICROTIME:
        /* what the JSON form can say: whole seconds, or microseconds; then (0, 0) is the zero
         * Time, as apimachinery's Time.Unmarshal takes it (the epoch included) */
        b = m->special == FATIA_PB_SP_TIME ? 0 : b / 1000 * 1000;
        if (a == 0 && b == 0)
            return 0;
        if (a < -62135596800LL || a > 253402300799LL || b < 0 || b > 999999999)
            return derr(c, "time out of range", m->name, NULL);
        *ret = time_json(a, b, m->special == FATIA_PB_SP_MICROTIME);
        break;
    case FATIA_PB_SP_DURATION:
        *ret = duration_json(a);
        break;
    case FATIA_PB_SP_QUANTITY:
        *ret = json_stringn(s ? (const char *)s : "", sn);
        break;
    case FATIA_PB_SP_INTORSTRING:
        if (a == 1)
            *ret = json_stringn(s ? (const char *)s : "", sn);
        else
            *ret = json_integer((int32_t)b);
        break;
    case FATIA_PB_SP_RAWJSON: {
        json_error_t e;
        if (!s || !sn)
            return 0;
        *ret = json_loadb((const char *)s, sn, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &e);
        if (!*ret)
            return derr(c, "embedded JSON does not parse", m->name, NULL);
        return 0;
    }
    default:
        return derr(c, "unknown special message", m->name, NULL);
    }
    return *ret ? 0 : derr(c, "invalid value (not UTF-8?)", m->name, NULL);
}

/* A scalar or message value of field fd from wire field f; *ret NULL = leave it out. */
static int decode_value(const struct fatia_pb_msg *m, const struct fatia_pb_field *fd,
                        const struct wf *f, int depth, struct dctx *c, json_t **ret)
{
    int want;

    *ret = NULL;
    switch (fd->kind) {
    case FATIA_PB_STRING:
    case FATIA_PB_BYTES:
    case FATIA_PB_MESSAGE:
        want = 2;
        break;
    case FATIA_PB_DOUBLE:
    case FATIA_PB_FIXED64:
        want = 1;
        break;
    case FATIA_PB_FLOAT:
    case FATIA_PB_FIXED32:
        want = 5;
        break;
    default:
        want = 0;
    }
    if (f->wt != want)
        return derr(c, "wrong wire type", m->name, fd->name);
    switch (fd->kind) {
    case FATIA_PB_STRING:
        *ret = json_stringn((const char *)f->b, f->n);
        return *ret ? 0 : derr(c, "invalid UTF-8", m->name, fd->name);
    case FATIA_PB_BYTES:
        *ret = b64_json(f->b, f->n);
        return *ret ? 0 : -ENOMEM;
    case FATIA_PB_MESSAGE: {
        const struct fatia_pb_msg *sub = &fatia_api_pb_msgs[fd->msg];
        if (depth >= PB_MAX_DEPTH)
            return derr(c, "messages nested too deep", m->name, fd->name);
        if (sub->special)
            return decode_special(sub, f->b, f->n, c, ret);
        return decode_msg(sub, f->b, f->n, depth + 1, c, ret);
    }
    case FATIA_PB_BOOL:
        *ret = json_boolean(f->u != 0);
        break;
    case FATIA_PB_INT32:
        *ret = json_integer((int32_t)f->u);
        break;
    case FATIA_PB_UINT32:
    case FATIA_PB_FIXED32:
        *ret = json_integer((uint32_t)f->u);
        break;
    case FATIA_PB_INT64:
    case FATIA_PB_UINT64:
    case FATIA_PB_FIXED64:
        *ret = json_integer((json_int_t)f->u);
        break;
    case FATIA_PB_SINT32:
    case FATIA_PB_SINT64:
        *ret = json_integer((json_int_t)((f->u >> 1) ^ (0 - (f->u & 1))));
        break;
    case FATIA_PB_DOUBLE: {
        double d;
        memcpy(&d, &f->u, sizeof(d));
        if (!isfinite(d))
            return derr(c, "not a finite number", m->name, fd->name);
        *ret = json_real(d);
        break;
    }
    case FATIA_PB_FLOAT: {
        float fl;
        uint32_t u = (uint32_t)f->u;
        memcpy(&fl, &u, sizeof(fl));
        if (!isfinite(fl))
            return derr(c, "not a finite number", m->name, fd->name);
        *ret = json_real(fl);
        break;
    }
    }
    return *ret ? 0 : -ENOMEM;
}

static bool empty_scalar(const struct fatia_pb_field *fd, const struct wf *f)
{
    return (fd->kind == FATIA_PB_STRING || fd->kind == FATIA_PB_BYTES) && f->n == 0;
}

static int decode_map_entry(const struct fatia_pb_msg *m, const struct fatia_pb_field *fd,
                            const struct wf *f, int depth, struct dctx *c, json_t *obj)
{
    struct rd r = {f->b, f->b + f->n};
    struct wf e;
    char *key = NULL;
    json_t *val = NULL;
    int rc;

    while ((rc = rd_field(&r, &e)) > 0) {
        if (e.num == 1) {
            if (e.wt != 2 || memchr(e.b, 0, e.n)) {
                rc = derr(c, "a map key is not a string", m->name, fd->name);
                goto out;
            }
            fatia_free(key);
            key = NULL;
            {
                json_t *probe = json_stringn((const char *)e.b, e.n);
                if (!probe) {
                    rc = derr(c, "a map key is not valid UTF-8", m->name, fd->name);
                    goto out;
                }
                json_decref(probe);
            }
            if (!(key = fatia_malloc(e.n + 1))) {
                rc = -ENOMEM;
                goto out;
            }
            memcpy(key, e.b, e.n);
            key[e.n] = '\0';
        } else if (e.num == 2) {
            json_decref(val);
            val = NULL;
            if ((rc = decode_value(m, fd, &e, depth, c, &val)) < 0)
                goto out;
        }
    }
    if (rc < 0) {
        rc = derr(c, "malformed map entry", m->name, fd->name);
        goto out;
    }
    if (!val && fd->kind == FATIA_PB_MESSAGE) { /* the value's zero: its empty message */
        struct wf empty = {.num = 2, .wt = 2, .b = (const unsigned char *)"", .n = 0};
        if ((rc = decode_value(m, fd, &empty, depth, c, &val)) < 0)
            goto out;
        if (!val)
            val = json_null(); /* a zero Time */
    } else if (!val) {
        val = fd->kind == FATIA_PB_STRING || fd->kind == FATIA_PB_BYTES ? json_string("")
                                                                        : json_integer(0);
    }
    if (!val) {
        rc = -ENOMEM;
        goto out;
    }
    rc = json_object_set_new(obj, key ? key : "", val) ? -ENOMEM : 0;
    val = NULL;
out:
    json_decref(val);
    fatia_free(key);
    return rc;
}

static int decode_msg(const struct fatia_pb_msg *m, const unsigned char *p, size_t n, int depth,
                      struct dctx *c, json_t **ret)
{
    struct rd r = {p, p + n};
    struct wf f;
    json_t *obj = json_object(), *v;
    int rc;

    *ret = NULL;
    if (!obj)
        return -ENOMEM;
    while ((rc = rd_field(&r, &f)) > 0) {
        const struct fatia_pb_field *fd = field_by_num(m, f.num);
        if (!fd)
            continue;
        if (fd->label == FATIA_PB_MAP) {
            json_t *map = json_object_get(obj, fd->name);
            if (f.wt != 2) {
                rc = derr(c, "wrong wire type", m->name, fd->name);
                break;
            }
            if (!map) {
                map = json_object();
                if (!map || json_object_set_new(obj, fd->name, map)) {
                    rc = -ENOMEM;
                    break;
                }
            }
            if ((rc = decode_map_entry(m, fd, &f, depth, c, map)) < 0)
                break;
            continue;
        }
        if (fd->label == FATIA_PB_REPEATED) {
            json_t *arr = json_object_get(obj, fd->name);
            if (!arr) {
                arr = json_array();
                if (!arr || json_object_set_new(obj, fd->name, arr)) {
                    rc = -ENOMEM;
                    break;
                }
            }
            if (f.wt == 2 && fd->kind != FATIA_PB_STRING && fd->kind != FATIA_PB_BYTES &&
                fd->kind != FATIA_PB_MESSAGE) {
                /* packed numbers */
                struct rd pr = {f.b, f.b + f.n};
                struct wf e = {.num = f.num};
                while (pr.p < pr.end) {
                    bool ok;
                    e.wt = fd->kind == FATIA_PB_DOUBLE || fd->kind == FATIA_PB_FIXED64  ? 1
                           : fd->kind == FATIA_PB_FLOAT || fd->kind == FATIA_PB_FIXED32 ? 5
                                                                                        : 0;
                    if (e.wt == 0) {
                        ok = rd_varint(&pr, &e.u);
                    } else {
                        size_t w = e.wt == 1 ? 8 : 4;
                        ok = (size_t)(pr.end - pr.p) >= w;
                        e.u = 0;
                        for (size_t i = w; ok && i-- > 0;)
                            e.u = e.u << 8 | pr.p[i];
                        if (ok)
                            pr.p += w;
                    }
                    if (!ok) {
                        rc = derr(c, "malformed packed field", m->name, fd->name);
                        goto out;
                    }
                    if ((rc = decode_value(m, fd, &e, depth, c, &v)) < 0)
                        goto out;
                    json_array_append_new(arr, v);
                }
                if (!json_array_size(arr)) /* an empty packed run says nothing */
                    json_object_del(obj, fd->name);
                continue;
            }
            if ((rc = decode_value(m, fd, &f, depth, c, &v)) < 0)
                break;
            if (!v && fd->kind == FATIA_PB_MESSAGE)
                v = json_object(); /* a zero element keeps its place */
            if (!v && !(v = json_string("")))
                rc = -ENOMEM;
            if (rc < 0 || json_array_append_new(arr, v)) {
                rc = -ENOMEM;
                break;
            }
            continue;
        }
        if (fd->label == FATIA_PB_INLINE) {
            if ((rc = decode_value(m, fd, &f, depth, c, &v)) < 0)
                break;
            if (json_is_object(v) && json_object_update(obj, v)) {
                json_decref(v);
                rc = -ENOMEM;
                break;
            }
            json_decref(v);
            continue;
        }
        if (empty_scalar(fd, &f)) {
            json_object_del(obj, fd->name);
            continue;
        }
        if ((rc = decode_value(m, fd, &f, depth, c, &v)) < 0)
            break;
        if (!v) {
            json_object_del(obj, fd->name);
            continue;
        }
        if (json_object_set_new(obj, fd->name, v)) {
            rc = -ENOMEM;
            break;
        }
    }
    if (rc < 0 && c->why && !c->why[0])
        derr(c, "malformed message", m->name, NULL);
out:
    if (rc < 0) {
        json_decref(obj);
        return rc == -ENOMEM ? -ENOMEM : -EINVAL;
    }
    *ret = obj;
    return 0;
}

int fatia_api_pb_decode(const struct fatia_pb_msg *m, const void *p, size_t n, json_t **ret,
                        char *why, size_t why_n)
{
    struct dctx c = {why, why_n};

    if (why && why_n)
        why[0] = '\0';
    if (m->special) {
        int rc = decode_special(m, p, n, &c, ret);
        if (!rc && !*ret)
            *ret = json_null();
        return rc;
    }
    return decode_msg(m, p, n, 0, &c, ret);
}

/* ---- encoding ---- */

static int encode_msg(const struct fatia_pb_msg *m, const json_t *v, int depth,
                      struct fatia_buf *b);

static int encode_special(const struct fatia_pb_msg *m, const json_t *v, struct fatia_buf *b)
{
    switch (m->special) {
    case FATIA_PB_SP_TIME:
    case FATIA_PB_SP_MICROTIME: {
        fatia_usec_t t;
        int64_t sec, nanos;
        int rc = 0;
        if (!json_is_string(v) || fatia_time_parse_rfc3339(json_string_value(v), &t) < 0)
            return 0; /* the zero Time */
        sec = t / FATIA_USEC_PER_SEC;
        nanos = (t % FATIA_USEC_PER_SEC) * 1000;
        if (nanos < 0) {
            nanos += 1000000000;
            sec--;
        }
        if (m->special == FATIA_PB_SP_TIME)
            nanos = 0; /* Time is whole seconds in JSON: the same object either way */
        rc = put_key(b, 1, 0);
        if (!rc)
            rc = put_varint(b, (uint64_t)sec);
        if (!rc && nanos) {
            rc = put_key(b, 2, 0);
            if (!rc)
                rc = put_varint(b, (uint64_t)nanos);
        }
        return rc;
    }
    case FATIA_PB_SP_DURATION: {
        int64_t d;
        int rc;
        if (!json_is_string(v) || duration_parse(json_string_value(v), &d) < 0)
            return 0;
        rc = put_key(b, 1, 0);
        return rc ? rc : put_varint(b, (uint64_t)d);
    }
    case FATIA_PB_SP_QUANTITY: {
        char num[64];
        if (json_is_string(v))
            return put_lenbytes(b, 1, json_string_value(v), json_string_length(v));
        if (json_is_number(v) && fatia_json_number_text(v, num, sizeof(num)) == 0)
            return put_lenbytes(b, 1, num, strlen(num));
        return 0;
    }
    case FATIA_PB_SP_INTORSTRING: {
        int rc;
        if (json_is_string(v)) {
            rc = put_key(b, 1, 0);
            if (!rc)
                rc = put_varint(b, 1);
            return rc ? rc : put_lenbytes(b, 3, json_string_value(v), json_string_length(v));
        }
        rc = put_key(b, 1, 0);
        if (!rc)
            rc = put_varint(b, 0);
        if (!rc)
            rc = put_key(b, 2, 0);
        return rc ? rc : put_varint(b, (uint64_t)(int64_t)(int32_t)json_integer_value(v));
    }
    case FATIA_PB_SP_RAWJSON: {
        struct fatia_buf t = FATIA_BUF_INIT;
        int rc = fatia_json_dump_buf(v, &t, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!rc)
            rc = put_lenbytes(b, 1, t.p, t.len);
        fatia_buf_release(&t);
        return rc;
    }
    case FATIA_PB_SP_STRLIST: {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            int rc;
            if (!json_is_string(e))
                continue;
            if ((rc = put_lenbytes(b, 1, json_string_value(e), json_string_length(e))))
                return rc;
        }
        return 0;
    }
    }
    return -EINVAL;
}

/* One value of field fd; a JSON value of the wrong type is left out. */
static int encode_value(const struct fatia_pb_field *fd, uint32_t num, const json_t *v, int depth,
                        struct fatia_buf *b)
{
    int rc;

    switch (fd->kind) {
    case FATIA_PB_STRING:
        return json_is_string(v) ? put_lenbytes(b, num, json_string_value(v), json_string_length(v))
                                 : 0;
    case FATIA_PB_BYTES:
        return json_is_string(v) ? b64_put(b, num, json_string_value(v)) : 0;
    case FATIA_PB_MESSAGE: {
        const struct fatia_pb_msg *sub = &fatia_api_pb_msgs[fd->msg];
        size_t mark;
        if (depth >= PB_MAX_DEPTH)
            return -ELOOP;
        if (!sub->special && !json_is_object(v))
            return 0;
        if ((rc = open_len(b, num, &mark)))
            return rc;
        rc = sub->special ? encode_special(sub, v, b) : encode_msg(sub, v, depth + 1, b);
        if (!rc)
            close_len(b, mark);
        return rc;
    }
    case FATIA_PB_BOOL:
        if (!json_is_boolean(v))
            return 0;
        rc = put_key(b, num, 0);
        return rc ? rc : put_varint(b, json_is_true(v));
    case FATIA_PB_DOUBLE:
    case FATIA_PB_FIXED64: {
        unsigned char t[8];
        uint64_t u;
        if (!json_is_number(v))
            return 0;
        if (fd->kind == FATIA_PB_DOUBLE) {
            double d = json_number_value(v);
            memcpy(&u, &d, 8);
        } else {
            u = (uint64_t)json_integer_value(v);
        }
        for (int i = 0; i < 8; i++)
            t[i] = (unsigned char)(u >> (8 * i));
        rc = put_key(b, num, 1);
        return rc ? rc : fatia_buf_append(b, t, 8);
    }
    case FATIA_PB_FLOAT:
    case FATIA_PB_FIXED32: {
        unsigned char t[4];
        uint32_t u;
        if (!json_is_number(v))
            return 0;
        if (fd->kind == FATIA_PB_FLOAT) {
            float f = (float)json_number_value(v);
            memcpy(&u, &f, 4);
        } else {
            u = (uint32_t)json_integer_value(v);
        }
        for (int i = 0; i < 4; i++)
            t[i] = (unsigned char)(u >> (8 * i));
        rc = put_key(b, num, 5);
        return rc ? rc : fatia_buf_append(b, t, 4);
    }
    default: {
        json_int_t i;
        uint64_t u;
        if (json_is_integer(v))
            i = json_integer_value(v);
        else if (json_is_real(v))
            i = (json_int_t)json_real_value(v);
        else
            return 0;
        if (fd->kind == FATIA_PB_SINT32 || fd->kind == FATIA_PB_SINT64)
            u = ((uint64_t)i << 1) ^ (uint64_t)(i >> 63);
        else if (fd->kind == FATIA_PB_INT32)
            u = (uint64_t)(int64_t)(int32_t)i;
        else if (fd->kind == FATIA_PB_UINT32)
            u = (uint32_t)i;
        else
            u = (uint64_t)i;
        rc = put_key(b, num, 0);
        return rc ? rc : put_varint(b, u);
    }
    }
}

static int encode_msg(const struct fatia_pb_msg *m, const json_t *v, int depth, struct fatia_buf *b)
{
    const char *key;
    const json_t *val;
    int rc;

    /* inline members first: the embedded message is made of this object's members */
    for (size_t i = 0; i < m->n_fields; i++) {
        const struct fatia_pb_field *fd = &m->fields[i];
        size_t mark, start = b->len;
        if (fd->label != FATIA_PB_INLINE)
            continue;
        if (depth >= PB_MAX_DEPTH)
            return -ELOOP;
        if ((rc = open_len(b, fd->num, &mark)) ||
            (rc = encode_msg(&fatia_api_pb_msgs[fd->msg], v, depth + 1, b)))
            return rc;
        if (b->len == mark + 5) /* nothing of it here */
            fatia_buf_truncate(b, start);
        else
            close_len(b, mark);
    }
    json_object_foreach((json_t *)v, key, val)
    {
        const struct fatia_pb_field *fd = field_by_name(m, key);
        if (!fd || json_is_null(val))
            continue;
        if (fd->label == FATIA_PB_ONE) {
            if ((rc = encode_value(fd, fd->num, val, depth, b)))
                return rc;
        } else if (fd->label == FATIA_PB_REPEATED) {
            size_t i;
            const json_t *e;
            if (!json_is_array(val))
                continue;
            json_array_foreach(val, i, e)
            {
                if (json_is_null(e))
                    continue;
                if ((rc = encode_value(fd, fd->num, e, depth, b)))
                    return rc;
            }
        } else if (json_is_object(val)) {
            const char *k;
            const json_t *e;
            json_object_foreach((json_t *)val, k, e)
            {
                size_t mark;
                if ((rc = open_len(b, fd->num, &mark)) || (rc = put_lenbytes(b, 1, k, strlen(k))) ||
                    (!json_is_null(e) && (rc = encode_value(fd, 2, e, depth, b))))
                    return rc;
                close_len(b, mark);
            }
        }
    }
    return 0;
}

int fatia_api_pb_encode(const struct fatia_pb_msg *m, const json_t *v, struct fatia_buf *out)
{
    size_t start = out->len;
    int rc = m->special ? encode_special(m, v, out) : encode_msg(m, v, 0, out);

    if (rc)
        fatia_buf_truncate(out, start);
    return rc;
}

/* ---- the envelope ---- */

int fatia_api_pb_unwrap(const void *p, size_t n, json_t **ret, char *why, size_t why_n)
{
    struct rd r = {(const unsigned char *)p + 4, (const unsigned char *)p + n};
    struct wf f;
    char av[128] = "", kind[128] = "";
    const unsigned char *raw = NULL;
    size_t raw_n = 0;
    const struct fatia_pb_msg *m;
    json_t *obj;
    int rc;

    *ret = NULL;
    if (why && why_n)
        why[0] = '\0';
    if (n < 4 || memcmp(p, pb_magic, 4)) {
        snprintf(why, why_n,
                 "provided data does not appear to be a protobuf message, expected "
                 "prefix [107 56 115 0]");
        return -EINVAL;
    }
    while ((rc = rd_field(&r, &f)) > 0) {
        if (f.num == 1 && f.wt == 2) {
            struct rd t = {f.b, f.b + f.n};
            struct wf g;
            int trc;
            while ((trc = rd_field(&t, &g)) > 0) {
                if (g.wt == 2 && (g.num == 1 || g.num == 2) && g.n < sizeof(av) &&
                    !memchr(g.b, 0, g.n))
                    snprintf(g.num == 1 ? av : kind, sizeof(av), "%.*s", (int)g.n, g.b);
            }
            if (trc < 0)
                rc = -1;
        } else if (f.num == 2 && f.wt == 2) {
            raw = f.b;
            raw_n = f.n;
        } else if (f.num == 3 && f.wt == 2 && f.n) {
            snprintf(why, why_n, "contentEncoding \"%.*s\" is not supported", (int)f.n, f.b);
            return -EINVAL;
        }
        if (rc < 0)
            break;
    }
    if (rc < 0) {
        snprintf(why, why_n, "malformed runtime.Unknown envelope");
        return -EINVAL;
    }
    if (!kind[0]) {
        snprintf(why, why_n, "Object 'Kind' is missing in the protobuf envelope");
        return -EINVAL;
    }
    m = fatia_api_pb_for_kind(av, kind);
    if (!m) {
        snprintf(why, why_n, "no protobuf message for %s, Kind=%s", av, kind);
        return -ENOENT;
    }
    rc = fatia_api_pb_decode(m, raw ? raw : (const unsigned char *)"", raw_n, &obj, why, why_n);
    if (rc < 0)
        return rc;
    if (!json_is_object(obj)) {
        json_decref(obj);
        snprintf(why, why_n, "%s is not an object", kind);
        return -EINVAL;
    }
    if (json_object_set_new(obj, "apiVersion", json_string(av)) ||
        json_object_set_new(obj, "kind", json_string(kind))) {
        json_decref(obj);
        return -ENOMEM;
    }
    *ret = obj;
    return 0;
}

int fatia_api_pb_watch_frame(const char *type, const json_t *obj, struct fatia_buf *out)
{
    struct fatia_buf env = FATIA_BUF_INIT;
    size_t start = out->len, mark;
    int rc = fatia_api_pb_wrap(obj, &env);

    /* the frame's length first (4 bytes, big-endian), filled in at the end */
    if (!rc)
        rc = fatia_buf_append(out, "\0\0\0\0", 4);
    if (!rc)
        rc = put_lenbytes(out, 1, type, strlen(type));
    if (!rc && !(rc = open_len(out, 2, &mark))) { /* object: RawExtension{1 raw} */
        rc = put_lenbytes(out, 1, env.p, env.len);
        if (!rc)
            close_len(out, mark);
    }
    fatia_buf_release(&env);
    if (rc) {
        fatia_buf_truncate(out, start);
        return rc;
    }
    {
        size_t n = out->len - start - 4;
        unsigned char *p = (unsigned char *)out->p + start;
        p[0] = (unsigned char)(n >> 24);
        p[1] = (unsigned char)(n >> 16);
        p[2] = (unsigned char)(n >> 8);
        p[3] = (unsigned char)n;
    }
    return 0;
}

int fatia_api_pb_wrap(const json_t *obj, struct fatia_buf *out)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const struct fatia_pb_msg *m = fatia_api_pb_for_kind(av, kind);
    size_t start = out->len, mark;
    int rc;

    if (!m)
        return -ENOENT;
    rc = fatia_buf_append(out, pb_magic, 4);
    if (!rc && !(rc = open_len(out, 1, &mark))) {
        rc = put_lenbytes(out, 1, av, strlen(av));
        if (!rc)
            rc = put_lenbytes(out, 2, kind, strlen(kind));
        if (!rc)
            close_len(out, mark);
    }
    if (!rc && !(rc = open_len(out, 2, &mark))) {
        rc = encode_msg(m, obj, 0, out);
        if (!rc)
            close_len(out, mark);
    }
    /* contentEncoding and contentType: written empty, as apimachinery writes them */
    if (!rc)
        rc = fatia_buf_append(out, "\x1a\x00\x22\x00", 4);
    if (rc)
        fatia_buf_truncate(out, start);
    return rc;
}
