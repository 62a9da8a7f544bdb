/*
 * http/http1.c: HTTP/1.1 head parser, chunked decoder and reason phrases (see http1.h).
 *
 * The head is located first (the first empty line), then parsed line by line; both passes touch
 * only the head, which is bounded, so a 400 KB body after it costs nothing here. Header names are
 * tokens (RFC 9110 tchar); values may hold any visible byte, space, tab and obs-text (>= 0x80).
 *
 * The chunked decoder is a byte-at-a-time state machine (except inside chunk data, taken in
 * spans), so input split anywhere decodes the same; its only memory is the state, the bytes left
 * in the chunk and the length of the current line (bounded: a size or trailer line longer than
 * CH_MAX_LINE is an error, so an endless extension cannot hold the decoder). Every framing line
 * ends in CRLF: the decoder has one state per expected LF, and a LF anywhere else is an error.
 */
#include "base/compat.h"

#include "http/http1.h"

#include <strings.h>

#include "base/error.h"

/* RFC 9110 tchar: ALPHA, DIGIT and !#$%&'*+-.^_`|~ */
static const uint8_t tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1,  ['~'] = 1, ['0'] = 1,
    ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,  ['7'] = 1, ['8'] = 1,
    ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1,  ['F'] = 1, ['G'] = 1,
    ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1,  ['N'] = 1, ['O'] = 1,
    ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1,  ['V'] = 1, ['W'] = 1,
    ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1,  ['d'] = 1, ['e'] = 1,
    ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1,  ['l'] = 1, ['m'] = 1,
    ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1,  ['t'] = 1, ['u'] = 1,
    ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1};

static bool is_tchar(unsigned char c)
{
    return tchar[c];
}

static bool is_vchar_or_ws(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool str_ieq(struct fatia_str a, const char *b)
{
    size_t n = strlen(b);
    return a.n == n && strncasecmp(a.p, b, n) == 0;
}

/* Compares a view with a literal (its length known at compile time). */
#define STR_IEQ_LIT(s, lit) \
    ((s).n == sizeof(lit) - 1 && strncasecmp((s).p, lit, sizeof(lit) - 1) == 0)

/* Finds the end of the head: returns the length up to and including the empty line, 0 if none
 * yet. */
static size_t find_head_end(const char *buf, size_t len)
{
    const char *p = buf, *end = buf + len;

    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        if (!lf)
            return 0;
        /* the line after this LF is empty if it is "\n" or "\r\n" */
        if (lf + 1 < end && lf[1] == '\n')
            return (size_t)(lf + 2 - buf);
        if (lf + 2 < end && lf[1] == '\r' && lf[2] == '\n')
            return (size_t)(lf + 3 - buf);
        if (lf + 1 >= end || (lf + 2 >= end && lf[1] == '\r'))
            return 0;
        p = lf + 1;
    }
    return 0;
}

/* Next line [*pos, eol) without its line end; advances *pos past the line end. */
static struct fatia_str next_line(const char *buf, size_t head_len, size_t *pos)
{
    const char *s = buf + *pos;
    const char *lf = memchr(s, '\n', head_len - *pos);
    size_t n = (size_t)(lf - s);

    *pos += n + 1;
    if (n && s[n - 1] == '\r')
        n--;
    return (struct fatia_str){s, n};
}

static bool has_token(struct fatia_str list, const char *tok)
{
    size_t i = 0, n = strlen(tok);

    while (i < list.n) {
        size_t s, e;
        while (i < list.n && (list.p[i] == ' ' || list.p[i] == '\t' || list.p[i] == ','))
            i++;
        s = i;
        while (i < list.n && list.p[i] != ',')
            i++;
        e = i;
        while (e > s && (list.p[e - 1] == ' ' || list.p[e - 1] == '\t'))
            e--;
        if (e - s == n && strncasecmp(list.p + s, tok, n) == 0)
            return true;
    }
    return false;
}

bool fatia_http_is_hop_by_hop(struct fatia_str name)
{
    /* by length first: most headers are rejected without a comparison */
    switch (name.n) {
    case 2:
        return STR_IEQ_LIT(name, "te");
    case 6:
        return STR_IEQ_LIT(name, "expect");
    case 7:
        return STR_IEQ_LIT(name, "trailer") || STR_IEQ_LIT(name, "upgrade");
    case 10:
        return STR_IEQ_LIT(name, "connection") || STR_IEQ_LIT(name, "keep-alive");
    case 16:
        return STR_IEQ_LIT(name, "proxy-connection");
    case 17:
        return STR_IEQ_LIT(name, "transfer-encoding");
    }
    return false;
}

/* Parses the header lines from pos to the head's end into h. */
static int parse_headers(const char *buf, size_t head_len, size_t pos, struct fatia_http_head *h)
{
    bool conn_close = false, conn_keep = false, have_te = false;

    h->content_length = -1;
    h->n_headers = 0;
    while (pos < head_len) {
        struct fatia_str line = next_line(buf, head_len, &pos);
        struct fatia_http_header *hd;
        size_t i = 0, vs, ve;

        if (line.n == 0)
            break;
        if (line.p[0] == ' ' || line.p[0] == '\t')
            return -FATIA_E_PARSE; /* obsolete line folding */
        while (i < line.n && is_tchar((unsigned char)line.p[i]))
            i++;
        if (i == 0 || i >= line.n || line.p[i] != ':')
            return -FATIA_E_PARSE;
        if (h->n_headers == FATIA_HTTP_MAX_HEADERS)
            return -FATIA_E_LIMIT;
        hd = &h->headers[h->n_headers++];
        hd->name = (struct fatia_str){line.p, i};
        vs = i + 1;
        while (vs < line.n && (line.p[vs] == ' ' || line.p[vs] == '\t'))
            vs++;
        ve = line.n;
        while (ve > vs && (line.p[ve - 1] == ' ' || line.p[ve - 1] == '\t'))
            ve--;
        for (size_t k = vs; k < ve; k++)
            if (!is_vchar_or_ws((unsigned char)line.p[k]))
                return -FATIA_E_PARSE;
        hd->value = (struct fatia_str){line.p + vs, ve - vs};

        if (!fatia_http_is_hop_by_hop(hd->name) && !STR_IEQ_LIT(hd->name, "content-length"))
            continue;
        if (fatia_http_is_hop_by_hop(hd->name))
            h->flags |= FATIA_HTTP_HOP_BY_HOP;
        if (STR_IEQ_LIT(hd->name, "content-length")) {
            uint64_t v = 0;
            if (!hd->value.n || hd->value.n > 18)
                return -FATIA_E_PARSE;
            for (size_t k = 0; k < hd->value.n; k++) {
                if (hd->value.p[k] < '0' || hd->value.p[k] > '9')
                    return -FATIA_E_PARSE;
                v = v * 10 + (uint64_t)(hd->value.p[k] - '0');
            }
            if (h->content_length >= 0 && (uint64_t)h->content_length != v)
                return -FATIA_E_PARSE;
            h->content_length = (int64_t)v;
        } else if (STR_IEQ_LIT(hd->name, "transfer-encoding")) {
            if (have_te || !STR_IEQ_LIT(hd->value, "chunked"))
                return -FATIA_E_UNSUPPORTED;
            have_te = true;
            h->flags |= FATIA_HTTP_CHUNKED;
        } else if (STR_IEQ_LIT(hd->name, "connection")) {
            conn_close |= has_token(hd->value, "close");
            conn_keep |= has_token(hd->value, "keep-alive");
        } else if (STR_IEQ_LIT(hd->name, "expect")) {
            if (STR_IEQ_LIT(hd->value, "100-continue"))
                h->flags |= FATIA_HTTP_EXPECT_100;
        }
    }
    if (have_te && h->content_length >= 0)
        return -FATIA_E_PARSE; /* both framings: request smuggling */
    if (h->minor >= 1 ? !conn_close : (conn_keep && !conn_close))
        h->flags |= FATIA_HTTP_KEEP_ALIVE;
    return 0;
}

static int parse_version(struct fatia_str v, int *minor)
{
    if (v.n != 8 || memcmp(v.p, "HTTP/1.", 7) || v.p[7] < '0' || v.p[7] > '9')
        return -FATIA_E_PARSE;
    *minor = v.p[7] - '0';
    return 0;
}

static int locate(const char *buf, size_t len, size_t *ret)
{
    size_t head_len = find_head_end(buf, FATIA_MIN(len, (size_t)FATIA_HTTP_MAX_HEAD));

    if (!head_len)
        return len >= FATIA_HTTP_MAX_HEAD ? -FATIA_E_LIMIT : -EAGAIN;
    *ret = head_len;
    return 0;
}

int fatia_http_parse_request(const char *buf, size_t len, struct fatia_http_head *ret)
{
    struct fatia_http_head *h = ret;
    size_t head_len, pos = 0, sp1, sp2;
    struct fatia_str line;
    int r;

    /* RFC 9112 §2.2: ignore at least one empty line before the request line */
    while (pos < len && pos < 4 && (buf[pos] == '\r' || buf[pos] == '\n'))
        pos++;
    if ((r = locate(buf + pos, len - pos, &head_len)) < 0)
        return r;
    head_len += pos;
    memset(h, 0, offsetof(struct fatia_http_head, headers));
    line = next_line(buf, head_len, &pos);
    h->first_line_len = pos;
    for (sp1 = 0; sp1 < line.n && is_tchar((unsigned char)line.p[sp1]); sp1++)
        ;
    if (sp1 == 0 || sp1 >= line.n || line.p[sp1] != ' ')
        return -FATIA_E_PARSE;
    for (sp2 = sp1 + 1; sp2 < line.n && line.p[sp2] != ' '; sp2++)
        if ((unsigned char)line.p[sp2] <= 0x20 || line.p[sp2] == 0x7f)
            return -FATIA_E_PARSE;
    if (sp2 == sp1 + 1 || sp2 >= line.n)
        return -FATIA_E_PARSE;
    h->method = (struct fatia_str){line.p, sp1};
    h->target = (struct fatia_str){line.p + sp1 + 1, sp2 - sp1 - 1};
    if (parse_version((struct fatia_str){line.p + sp2 + 1, line.n - sp2 - 1}, &h->minor) < 0)
        return -FATIA_E_PARSE;
    if ((r = parse_headers(buf, head_len, pos, h)) < 0)
        return r;
    h->head_len = head_len;
    return (int)head_len;
}

int fatia_http_parse_response(const char *buf, size_t len, bool head_request,
                              struct fatia_http_head *ret)
{
    struct fatia_http_head *h = ret;
    size_t head_len, pos = 0;
    struct fatia_str line;
    int r;

    if ((r = locate(buf, len, &head_len)) < 0)
        return r;
    memset(h, 0, offsetof(struct fatia_http_head, headers));
    line = next_line(buf, head_len, &pos);
    h->first_line_len = pos;
    if (line.n < 12 || line.p[8] != ' ' ||
        parse_version((struct fatia_str){line.p, 8}, &h->minor) < 0)
        return -FATIA_E_PARSE;
    for (int i = 9; i < 12; i++)
        if (line.p[i] < '0' || line.p[i] > '9')
            return -FATIA_E_PARSE;
    h->status = (line.p[9] - '0') * 100 + (line.p[10] - '0') * 10 + (line.p[11] - '0');
    if (h->status < 100)
        return -FATIA_E_PARSE;
    if (line.n > 12) {
        if (line.p[12] != ' ')
            return -FATIA_E_PARSE;
        h->reason = (struct fatia_str){line.p + 13, line.n - 13};
    }
    if ((r = parse_headers(buf, head_len, pos, h)) < 0)
        return r;
    if (head_request || h->status < 200 || h->status == 204 || h->status == 304)
        h->flags |= FATIA_HTTP_NO_BODY;
    h->head_len = head_len;
    return (int)head_len;
}

const struct fatia_str *fatia_http_header_get(const struct fatia_http_head *h, const char *name)
{
    for (size_t i = 0; i < h->n_headers; i++)
        if (str_ieq(h->headers[i].name, name))
            return &h->headers[i].value;
    return NULL;
}

enum {
    CH_SIZE,
    CH_EXT,
    CH_SIZE_LF,
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER_START,
    CH_TRAILER_LINE,
    CH_TRAILER_LINE_LF,
    CH_TRAILER_LF,
    CH_DONE,
};

#define CH_MAX_LINE 4096

void fatia_http_chunked_init(struct fatia_http_chunked *c)
{
    memset(c, 0, sizeof(*c));
    c->state = CH_SIZE;
}

bool fatia_http_chunked_done(const struct fatia_http_chunked *c)
{
    return c->state == CH_DONE;
}

bool fatia_http_chunked_at_boundary(const struct fatia_http_chunked *c)
{
    return c->state == CH_SIZE && c->digits == 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

ssize_t fatia_http_chunked_feed(struct fatia_http_chunked *c, const char *p, size_t n,
                                fatia_http_payload_fn payload, void *ud)
{
    size_t i = 0;

    while (i < n && c->state != CH_DONE) {
        char ch = p[i];
        switch (c->state) {
        case CH_SIZE: {
            int v = hexval(ch);
            if (v >= 0) {
                if (++c->digits > 15)
                    return -FATIA_E_PARSE;
                c->remaining = c->remaining * 16 + (uint64_t)v;
            } else if (c->digits && (ch == ';' || ch == ' ' || ch == '\t')) {
                c->state = CH_EXT;
            } else if (c->digits && ch == '\r') {
                c->state = CH_SIZE_LF;
            } else {
                return -FATIA_E_PARSE; /* a bare LF included */
            }
            i++;
            break;
        }
        case CH_EXT:
            if (++c->line_len > CH_MAX_LINE)
                return -FATIA_E_PARSE;
            if (ch == '\r')
                c->state = CH_SIZE_LF;
            else if (ch != '\t' && ((unsigned char)ch < 0x20 || ch == 0x7f))
                return -FATIA_E_PARSE; /* a bare LF included */
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                return -FATIA_E_PARSE;
            c->state = c->remaining ? CH_DATA : CH_TRAILER_START;
            i++;
            break;
        case CH_DATA: {
            size_t take = n - i;
            if (take > c->remaining)
                take = (size_t)c->remaining;
            if (payload)
                payload(ud, p + i, take);
            c->remaining -= take;
            i += take;
            if (!c->remaining)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (ch != '\r')
                return -FATIA_E_PARSE;
            c->state = CH_DATA_LF;
            i++;
            break;
        case CH_DATA_LF:
            if (ch != '\n')
                return -FATIA_E_PARSE;
            c->state = CH_SIZE;
            c->digits = c->line_len = 0;
            i++;
            break;
        case CH_TRAILER_START:
            c->line_len = 0;
            if (ch == '\r')
                c->state = CH_TRAILER_LF;
            else if (ch == '\n')
                return -FATIA_E_PARSE;
            else
                c->state = CH_TRAILER_LINE;
            i++;
            break;
        case CH_TRAILER_LINE:
            if (++c->line_len > CH_MAX_LINE || ch == '\n')
                return -FATIA_E_PARSE;
            if (ch == '\r')
                c->state = CH_TRAILER_LINE_LF;
            i++;
            break;
        case CH_TRAILER_LINE_LF:
            if (ch != '\n')
                return -FATIA_E_PARSE;
            c->state = CH_TRAILER_START;
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                return -FATIA_E_PARSE;
            c->state = CH_DONE;
            i++;
            break;
        }
    }
    return (ssize_t)i;
}

const char *fatia_http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    case 507:
        return "Insufficient Storage";
    }
    return "Unknown";
}

int fatia_http_request_error_status(int err, const char **ret_why)
{
    if (err == -FATIA_E_LIMIT) {
        *ret_why = "the request head is larger than the limit or has too many headers";
        return 431;
    }
    if (err == -FATIA_E_UNSUPPORTED) {
        *ret_why = "unsupported transfer coding: only Transfer-Encoding: chunked is accepted";
        return 501;
    }
    *ret_why = "malformed HTTP request head";
    return 400;
}
