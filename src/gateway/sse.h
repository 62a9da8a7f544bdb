/*
 * gateway/sse.h: an incremental scanner of Server-Sent Events (text/event-stream), as OpenAI
 * compatible servers stream completions: `data: <json>\n\n` per chunk, `data: [DONE]\n\n` last.
 *
 * The scanner observes a byte stream (the de-chunked response body) split anywhere and never
 * changes it: the gateway relays the bytes it read and only counts events; the benchmark client
 * asks for each event's data through a callback. Line ends are LF, CRLF or CR (the SSE grammar);
 * an event ends at an empty line; data of several `data:` lines is joined with LF.
 *
 * Bounds: with a callback, an event's data is collected up to FATIA_SSE_MAX_EVENT bytes; longer
 * data is truncated and the event is flagged (the count is still right). Without a callback only
 * the first bytes of each line are kept, so the cost per byte is a memchr.
 */
#ifndef FATIA_GATEWAY_SSE_H
#define FATIA_GATEWAY_SSE_H

#include "base/compat.h"

#include "base/buf.h"

#define FATIA_SSE_MAX_EVENT (1u << 20)

/* Called for each event that carried data (the [DONE] sentinel included); data is not
 * NUL-terminated; truncated is true when it exceeded FATIA_SSE_MAX_EVENT. */
typedef void (*fatia_sse_event_fn)(void *ud, const char *data, size_t n, bool truncated);

struct fatia_sse {
    fatia_sse_event_fn on_event; /* NULL: count only */
    void *ud;
    uint64_t events;       /* events with data, [DONE] excluded */
    bool done;             /* saw data: [DONE] */
    bool event_data;       /* the current event has a data line */
    bool event_trunc;      /* its data was truncated */
    bool after_cr;         /* the previous byte was a CR (a following LF ends nothing) */
    bool line_data;        /* the current line is a data: line */
    bool line_done_ok;     /* the current data line is still a candidate for [DONE] */
    uint32_t line_len;     /* bytes of the current line so far (saturates) */
    uint32_t data_lines;   /* data lines of the current event */
    char head[16];         /* the first bytes of the current line */
    struct fatia_buf data; /* the current event's data (with a callback only) */
};

void fatia_sse_init(struct fatia_sse *s, fatia_sse_event_fn on_event, void *ud);
void fatia_sse_release(struct fatia_sse *s);
/* Feeds bytes; returns 0 or -ENOMEM (collecting data for the callback). */
int fatia_sse_feed(struct fatia_sse *s, const char *p, size_t n);
/* Between events: what was fed so far ends with a complete event (or is empty), so an event
 * appended now is read as an event of its own. */
bool fatia_gateway_sse_at_boundary(const struct fatia_sse *s);

#endif
