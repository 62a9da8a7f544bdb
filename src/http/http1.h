/*
 * http/http1.h: the one HTTP/1.1 module under both servers (the API server, apiserver/http.c,
 * and the gateway and engine-sim, gateway/httpd.c) and the gateway's upstream client: message
 * heads and chunked bodies parsed without allocating, the reason-phrase table, and the mapping
 * from a parse error to the status both servers answer.
 *
 * picohttpparser's model (reference/c-style.md §2.4): the parser is stateless over a head that
 * is complete in one contiguous buffer, fills (pointer, length) views into that buffer and
 * returns the head's length, -EAGAIN while the blank line that ends the head has not arrived, or
 * an error. The caller bounds the buffer (FATIA_HTTP_MAX_HEAD), so a head that never ends costs
 * at most that. Bodies are framed by Content-Length, by the chunked coding (an incremental
 * decoder that reports payload spans and never copies), or by the connection's end.
 *
 * Strictness (RFC 9112), the same for every server since there is one parser: Content-Length
 * and Transfer-Encoding together, conflicting Content-Lengths (two headers or a list of
 * different values), any Transfer-Encoding other than exactly one "chunked" (501), whitespace
 * before a header's colon, obsolete line folding, and control bytes in names or values are
 * errors. In the chunked framing every line (size, chunk end, trailer) must end in CRLF: a bare
 * LF there is an error, since servers that disagree on it can be made to disagree on where a
 * body ends (request smuggling). In the head, a bare LF line end is accepted, as RFC 9112 §2.2
 * allows and most servers do: the head's end is found the same way by every reader here.
 *
 * Rejected: keeping a parser per server (they drifted: one answered 413 "Request Entity Too
 * Large", the other "Content Too Large", and only one refused conflicting Content-Lengths).
 */
#ifndef FATIA_HTTP_HTTP1_H
#define FATIA_HTTP_HTTP1_H

#include "base/compat.h"

#include <sys/types.h>

#include "base/str.h"

#define FATIA_HTTP_MAX_HEADERS 64
#define FATIA_HTTP_MAX_HEAD    (64u << 10)

struct fatia_http_header {
    struct fatia_str name;
    struct fatia_str value; /* optional whitespace trimmed */
};

/* Flags of a parsed head. */
#define FATIA_HTTP_KEEP_ALIVE (1u << 0) /* the connection persists after this message */
#define FATIA_HTTP_CHUNKED    (1u << 1) /* Transfer-Encoding: chunked */
#define FATIA_HTTP_EXPECT_100 (1u << 2) /* Expect: 100-continue (requests) */
#define FATIA_HTTP_HOP_BY_HOP (1u << 3) /* a hop-by-hop header is present (a proxy must drop it) */
#define FATIA_HTTP_NO_BODY    (1u << 4) /* responses: 1xx, 204, 304, or the answer to HEAD */

struct fatia_http_head {
    /* requests: method and target; responses: status and reason */
    struct fatia_str method, target;
    int status;
    struct fatia_str reason;
    int minor; /* HTTP/1.<minor> */
    unsigned flags;
    int64_t content_length; /* -1 when absent */
    size_t head_len;        /* bytes up to and including the blank line */
    size_t first_line_len;  /* bytes of the request or status line, its line end included */
    size_t n_headers;
    struct fatia_http_header headers[FATIA_HTTP_MAX_HEADERS];
};

/* Parses a request head at the start of buf. Returns the head's length (> 0), -EAGAIN when the
 * head is incomplete, -FATIA_E_PARSE when malformed, -FATIA_E_LIMIT with more than
 * FATIA_HTTP_MAX_HEADERS headers or a head longer than FATIA_HTTP_MAX_HEAD, -FATIA_E_UNSUPPORTED
 * for a transfer coding other than chunked. Views in *ret point into buf. */
int fatia_http_parse_request(const char *buf, size_t len, struct fatia_http_head *ret);

/* Parses a response head; head_request says the request was HEAD (no body follows). Same
 * returns. A 1xx head is returned as such: the caller skips it and parses the next. */
int fatia_http_parse_response(const char *buf, size_t len, bool head_request,
                              struct fatia_http_head *ret);

/* The value of the first header named name (case-insensitive), or NULL. */
const struct fatia_str *fatia_http_header_get(const struct fatia_http_head *h, const char *name);

/* Is this header hop-by-hop (Connection, Keep-Alive, Proxy-Connection, TE, Trailer,
 * Transfer-Encoding, Upgrade, Expect)? A proxy forwards the others unchanged. */
bool fatia_http_is_hop_by_hop(struct fatia_str name);

/* Incremental decoder of the chunked transfer coding.
 *
 *   SIZE --hex--> SIZE --';'--> EXT --CRLF--> (size 0 ? TRAILER : DATA)
 *   DATA --size bytes--> DATA_END --CRLF--> SIZE
 *   TRAILER --field line CRLF--> TRAILER --CRLF--> DONE
 *
 * Every line ends in CRLF; a bare LF, or a CR not followed by LF, is a framing error.
 *
 * Payload spans are reported through the callback as they arrive, split wherever the input was. */
struct fatia_http_chunked {
    int state;
    uint64_t remaining; /* bytes left in the current chunk */
    unsigned line_len;  /* bytes of the current size or trailer line, bounded */
    unsigned digits;
};

typedef void (*fatia_http_payload_fn)(void *ud, const char *p, size_t n);

void fatia_http_chunked_init(struct fatia_http_chunked *c);
/* Feeds n bytes. Returns how many were consumed: n, or fewer when the message ended inside the
 * input (the rest belongs to what follows); -FATIA_E_PARSE on a framing error. */
ssize_t fatia_http_chunked_feed(struct fatia_http_chunked *c, const char *p, size_t n,
                                fatia_http_payload_fn payload, void *ud);
bool fatia_http_chunked_done(const struct fatia_http_chunked *c);
/* Between chunks (or before the first): a chunk may be inserted here without breaking the
 * framing (the gateway's SSE error event on a cut stream). */
bool fatia_http_chunked_at_boundary(const struct fatia_http_chunked *c);

/* "200 OK"-style reason phrase for a status code (RFC 9110's names; "Unknown" for others). */
const char *fatia_http_reason(int status);

/* The status a server answers for an error of fatia_http_parse_request (other than -EAGAIN):
 * 431 for -FATIA_E_LIMIT, 501 for -FATIA_E_UNSUPPORTED, 400 otherwise; *ret_why gets a short
 * message for the body. */
int fatia_http_request_error_status(int err, const char **ret_why);

/* The interim answer to Expect: 100-continue. */
#define FATIA_HTTP_100_CONTINUE "HTTP/1.1 100 Continue\r\n\r\n"

#endif
