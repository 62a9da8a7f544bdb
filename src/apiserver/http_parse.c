/*
 * apiserver/http_parse.c: HTTP/1.1 request-head and chunked-body parsers (see http.h).
 *
 * Stateless for the head (the caller retries with more input on -EAGAIN; heads are small and
 * bounded, so rescanning is cheaper than keeping state), incremental for chunked bodies (which
 * can be large). Both accept what RFC 9112 requires and refuse the ambiguous forms that enable
 * request smuggling: obsolete line folding, whitespace before the colon, control characters,
 * chunk sizes that overflow.
 *
 * Chunked decoder states:
 *
 *     SIZE --hex digits, optional ;ext, CRLF--> DATA (size > 0) --size bytes--> DATA_CRLF --> SIZE
 *       \--size 0--> TRAILER --empty line--> DONE
 *                      \--a trailer line--> TRAILER
 */
#include "base/compat.h"

#include <strings.h>

#include "apiserver/http.h"
#include "base/error.h"

static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Finds the end of the line starting at p: returns the length without the line ending and sets
 * *next past it, or -EAGAIN when no line ending is in [p, end). */
static int line_end(const char *p, const char *end, const char **next)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t len;

    if (!nl)
        return -EAGAIN;
    len = (size_t)(nl - p);
    if (len && p[len - 1] == '\r')
        len--;
    *next = nl + 1;
    return (int)FATIA_MIN(len, (size_t)INT_MAX);
}

int fatia_api_http_parse_head(const char *buf, size_t n, struct fatia_api_http_head *ret)
{
    const char *p = buf, *end = buf + n, *next, *q, *le;
    struct fatia_api_http_head h;
    int len;

    memset(&h, 0, sizeof(h));
    /* Robustness (RFC 9112 §2.2): empty lines before the request line are ignored. */
    while (p < end && (*p == '\r' || *p == '\n'))
        p++;
    len = line_end(p, end, &next);
    if (len < 0)
        return len;
    le = p + len;
    /* method */
    for (q = p; q < le && is_tchar((unsigned char)*q); q++)
        ;
    if (q == p || q >= le || *q != ' ')
        return -EBADMSG;
    h.method = (struct fatia_str){p, (size_t)(q - p)};
    p = q + 1;
    /* target */
    for (q = p; q < le && (unsigned char)*q > ' ' && *q != 0x7f; q++)
        ;
    if (q == p || q >= le || *q != ' ')
        return -EBADMSG;
    h.target = (struct fatia_str){p, (size_t)(q - p)};
    p = q + 1;
    if (le - p != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
        return -EBADMSG;
    h.minor_version = p[7] - '0';
    p = next;

    for (;;) {
        const char *name, *val, *vend;
        len = line_end(p, end, &next);
        if (len < 0)
            return len;
        le = p + len;
        if (len == 0)
            break;
        if (*p == ' ' || *p == '\t')
            return -EBADMSG; /* obsolete line folding */
        name = p;
        for (q = p; q < le && is_tchar((unsigned char)*q); q++)
            ;
        if (q == name || q >= le || *q != ':')
            return -EBADMSG;
        if (h.n_headers == FATIA_API_HTTP_MAX_HEADERS)
            return -E2BIG;
        h.headers[h.n_headers].name = (struct fatia_str){name, (size_t)(q - name)};
        val = q + 1;
        while (val < le && (*val == ' ' || *val == '\t'))
            val++;
        vend = le;
        while (vend > val && (vend[-1] == ' ' || vend[-1] == '\t'))
            vend--;
        for (q = val; q < vend; q++) {
            unsigned char c = (unsigned char)*q;
            if ((c < ' ' && c != '\t') || c == 0x7f)
                return -EBADMSG;
        }
        h.headers[h.n_headers].value = (struct fatia_str){val, (size_t)(vend - val)};
        h.n_headers++;
        p = next;
    }
    *ret = h;
    return (int)(next - buf);
}

bool fatia_api_http_head_get(const struct fatia_api_http_head *h, const char *name,
                             struct fatia_str *ret)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < h->n_headers; i++) {
        if (h->headers[i].name.n == n && !strncasecmp(h->headers[i].name.p, name, n)) {
            *ret = h->headers[i].value;
            return true;
        }
    }
    return false;
}

enum {
    CH_SIZE,
    CH_EXT,
    CH_SIZE_LF,
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER,
    CH_TRAILER_LF,
    CH_DONE,
};

#define CH_MAX_LINE 4096

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int fatia_api_http_chunked_feed(struct fatia_api_http_chunked *c, const char *in, size_t n,
                                size_t *consumed, struct fatia_buf *out)
{
    size_t i = 0;
    int r;

    while (i < n && c->state != CH_DONE) {
        char ch = in[i];
        switch (c->state) {
        case CH_SIZE:
            if (hexval(ch) >= 0) {
                if (c->remaining > (UINT64_MAX >> 4) || ++c->line_len > 16)
                    goto bad;
                c->remaining = (c->remaining << 4) | (uint64_t)hexval(ch);
                i++;
            } else if (c->line_len == 0) {
                goto bad;
            } else if (ch == ';' || ch == ' ' || ch == '\t') {
                c->state = CH_EXT;
                i++;
            } else if (ch == '\r') {
                c->state = CH_SIZE_LF;
                i++;
            } else if (ch == '\n') {
                i++;
                goto size_done;
            } else {
                goto bad;
            }
            break;
        case CH_EXT:
            if (ch == '\r') {
                c->state = CH_SIZE_LF;
            } else if (ch == '\n') {
                i++;
                goto size_done;
            } else if (++c->line_len > CH_MAX_LINE || (ch != '\t' && (unsigned char)ch < ' ')) {
                goto bad;
            }
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                goto bad;
            i++;
size_done:
            c->line_len = 0;
            c->state = c->remaining ? CH_DATA : CH_TRAILER;
            break;
        case CH_DATA: {
            size_t take = (size_t)FATIA_MIN((uint64_t)(n - i), c->remaining);
            r = fatia_buf_append(out, in + i, take);
            if (r < 0) {
                *consumed = i;
                return r;
            }
            i += take;
            c->remaining -= take;
            if (!c->remaining)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (ch == '\r') {
                c->state = CH_DATA_LF;
                i++;
                break;
            }
            /* a bare LF ends the chunk too */
            __attribute__((fallthrough));
        case CH_DATA_LF:
            if (ch != '\n')
                goto bad;
            i++;
            c->state = CH_SIZE;
            break;
        case CH_TRAILER:
            if (ch == '\r' && c->line_len == 0) {
                c->state = CH_TRAILER_LF;
            } else if (ch == '\n') {
                if (c->line_len == 0)
                    c->state = CH_DONE;
                c->line_len = 0;
            } else if (ch == '\r') {
                /* end of a trailer line, LF follows */
            } else if (++c->line_len > CH_MAX_LINE) {
                goto bad;
            }
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                goto bad;
            i++;
            c->state = CH_DONE;
            break;
        }
    }
    *consumed = i;
    return c->state == CH_DONE ? 1 : 0;
bad:
    *consumed = i;
    return -EBADMSG;
}
