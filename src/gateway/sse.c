/*
 * gateway/sse.c: the SSE scanner (see sse.h).
 *
 * Per line, the first 16 bytes are looked at one by one (to recognise "data:" and "[DONE]" across
 * any split of the input); the rest of a line is skipped with memchr, or appended in one piece to
 * the event's data when a callback wants it. State between calls: the position in the current
 * line, its first bytes, whether the previous byte was a CR.
 */
#include "base/compat.h"

#include "gateway/sse.h"

#include "base/error.h"

void fatia_sse_init(struct fatia_sse *s, fatia_sse_event_fn on_event, void *ud)
{
    memset(s, 0, sizeof(*s));
    s->on_event = on_event;
    s->ud = ud;
    fatia_buf_init(&s->data, 0);
}

void fatia_sse_release(struct fatia_sse *s)
{
    fatia_buf_release(&s->data);
}

static int append(struct fatia_sse *s, const char *p, size_t n)
{
    size_t room;

    if (!s->on_event || !n)
        return 0;
    room = FATIA_SSE_MAX_EVENT - FATIA_MIN(s->data.len, (size_t)FATIA_SSE_MAX_EVENT);
    if (n > room) {
        s->event_trunc = true;
        n = room;
    }
    return n ? fatia_buf_append(&s->data, p, n) : 0;
}

/* One byte at line position s->line_len (< sizeof head). */
static int head_byte(struct fatia_sse *s, char c)
{
    uint32_t pos = s->line_len;

    s->head[pos] = c;
    s->line_len++;
    if (pos == 4) {
        s->line_data = memcmp(s->head, "data:", 5) == 0;
        if (s->line_data) {
            if (s->event_data && append(s, "\n", 1) < 0)
                return -ENOMEM;
            s->event_data = true;
        }
    } else if (pos >= 5 && s->line_data) {
        if (pos == 5 && c == ' ')
            return 0;
        return append(s, &c, 1);
    }
    return 0;
}

static bool line_is_done(const struct fatia_sse *s)
{
    uint32_t v = s->line_len > 5 && s->head[5] == ' ' ? 6 : 5;
    return s->line_data && s->line_len - v == 6 && memcmp(s->head + v, "[DONE]", 6) == 0;
}

static void end_event(struct fatia_sse *s)
{
    if (!s->event_data)
        return;
    if (s->line_done_ok)
        s->done = true;
    else
        s->events++;
    if (s->on_event)
        s->on_event(s->ud, s->data.p, s->data.len, s->event_trunc);
    fatia_buf_reset(&s->data);
    s->event_data = s->event_trunc = s->line_done_ok = false;
    s->data_lines = 0;
}

static int end_line(struct fatia_sse *s)
{
    if (s->line_len == 0) {
        end_event(s);
    } else {
        if (s->line_len == 4 && memcmp(s->head, "data", 4) == 0) {
            /* a field name without a colon has the empty value */
            if (s->event_data && append(s, "\n", 1) < 0)
                return -ENOMEM;
            s->event_data = true;
            s->line_data = true;
        }
        if (s->line_data)
            s->line_done_ok = ++s->data_lines == 1 && line_is_done(s);
    }
    s->line_len = 0;
    s->line_data = false;
    return 0;
}

bool fatia_gateway_sse_at_boundary(const struct fatia_sse *s)
{
    return s->line_len == 0 && !s->event_data;
}

int fatia_sse_feed(struct fatia_sse *s, const char *p, size_t n)
{
    size_t i = 0;

    while (i < n) {
        char c = p[i];
        if (c == '\n' || c == '\r') {
            bool skip = c == '\n' && s->after_cr;
            s->after_cr = c == '\r';
            i++;
            if (!skip && end_line(s) < 0)
                return -ENOMEM;
            continue;
        }
        s->after_cr = false;
        if (s->line_len < sizeof(s->head)) {
            if (head_byte(s, c) < 0)
                return -ENOMEM;
            i++;
            continue;
        }
        /* the rest of a long line: up to the next CR or LF */
        {
            const char *lf = memchr(p + i, '\n', n - i);
            size_t seg = lf ? (size_t)(lf - (p + i)) : n - i;
            const char *cr = memchr(p + i, '\r', seg);
            if (cr)
                seg = (size_t)(cr - (p + i));
            if (s->line_data && append(s, p + i, seg) < 0)
                return -ENOMEM;
            /* only the first bytes' positions matter: saturate */
            s->line_len = (uint32_t)FATIA_MIN((uint64_t)s->line_len + seg, (uint64_t)1 << 30);
            i += seg;
        }
    }
    return 0;
}
