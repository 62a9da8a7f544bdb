/*
 * apiserver/limits.c: the cheap look at a request body before it is parsed.
 *
 * Parsing is what costs: jansson takes about 0.2 s for a 3 MB object of 200,000 labels, its
 * copy 0.1 s more, validation and serialization as much again, all on the event loop. So one
 * pass over the text, without allocating, refuses what the store would refuse anyway and what
 * only a hostile client sends, before any of that:
 *
 *     nesting deeper than max_json_depth (64)                        400 BadRequest
 *     more than FATIA_STORE_MAX_OBJECT bytes of JSON once whitespace
 *       is left out (the stored object is that large at least, less
 *       what pruning drops)                                           413 RequestEntityTooLarge
 *     an object or array of more than FATIA_API_MAX_MEMBERS members  422 Invalid, naming the
 *       (labels, annotations, any map or list)                           field path
 *
 * The rest of the limits live where the data is: the 3 MiB body in the HTTP layer, 256 KiB of
 * annotations and 63-character label values in ObjectMeta's schema (model/kinds/meta.c), the
 * 1.5 MiB stored object at commit (txn.c), objects per namespace at create (ops.c).
 *
 * The pass sees JSON text; a YAML body is only depth-checked here (its braces), and meets the
 * others after parsing. Rejected: a streaming parser that builds nothing (as much code as the
 * parser); a cap on labels alone (any map of a kind's schema is as costly).
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json_scan.h"
#include "store/store.h"

#define MAX_TRACKED 66 /* depth levels whose keys and counts are tracked (max_json_depth + 2) */

struct level {
    bool object;
    size_t members;          /* commas so far */
    size_t key_off, key_len; /* the last key seen at this level */
};

/* The field path down to level d ("metadata.labels"), from the keys that opened each level. */
static void path_to(const char *p, const struct level *lv, unsigned d, char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (unsigned i = 1; i < d && len + 1 < n; i++) {
        const struct level *up = &lv[i];
        int w;
        if (up->object)
            w = snprintf(buf + len, n - len, "%s%.*s", len ? "." : "", (int)up->key_len,
                         p + up->key_off);
        else
            w = snprintf(buf + len, n - len, "[%zu]", up->members);
        if (w < 0)
            break;
        len += (size_t)w < n - len ? (size_t)w : n - len - 1;
    }
    if (!buf[0])
        snprintf(buf, n, "(the body)");
}

int fatia_api_body_check(const char *p, size_t n, unsigned max_depth, char *why, size_t why_n,
                         int *ret_code)
{
    struct level lv[MAX_TRACKED] = {{0}};
    unsigned depth = 0;
    size_t compact = 0, str_start = 0;
    bool in_str = false;

    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_str) {
            size_t run = fatia_json_plain_run(p + i, n - i); /* nothing to look at in it */
            if (run) {
                compact += run;
                i += run - 1;
                continue;
            }
            compact++;
            if (c == '\\') {
                i++;
                compact++;
            } else if (c == '"') {
                in_str = false;
                if (depth < MAX_TRACKED && lv[depth].object) {
                    /* a key if a ':' follows */
                    size_t j = i + 1;
                    while (j < n && (p[j] == ' ' || p[j] == '\t' || p[j] == '\n' || p[j] == '\r'))
                        j++;
                    if (j < n && p[j] == ':') {
                        lv[depth].key_off = str_start;
                        lv[depth].key_len = i - str_start;
                    }
                }
            }
            continue;
        }
        switch (c) {
        case ' ':
        case '\t':
        case '\n':
        case '\r':
            continue;
        case '"':
            in_str = true;
            str_start = i + 1;
            break;
        case '{':
        case '[':
            if (++depth > max_depth) {
                snprintf(why, why_n, "the request body is nested deeper than %u levels", max_depth);
                *ret_code = 400;
                return -EBADMSG;
            }
            if (depth < MAX_TRACKED)
                lv[depth] = (struct level){.object = c == '{', .members = 0};
            break;
        case '}':
        case ']':
            if (depth)
                depth--;
            break;
        default:
            break;
        }
        compact++;
        if (c == ',' && depth && depth < MAX_TRACKED &&
            ++lv[depth].members >= FATIA_API_MAX_MEMBERS) {
            /* members: the commas of a level, plus one */
            char path[256];
            path_to(p, lv, depth, path, sizeof(path));
            snprintf(why, why_n,
                     "%s: Too many: more than %d members: an object or list in a request body "
                     "may have at most %d",
                     path, FATIA_API_MAX_MEMBERS, FATIA_API_MAX_MEMBERS);
            *ret_code = 422;
            return -E2BIG;
        }
        if (compact > FATIA_STORE_MAX_OBJECT) {
            snprintf(why, why_n,
                     "the request body holds more than %d bytes of JSON (whitespace left out): "
                     "over the store's limit of an object (1.5 MiB)",
                     FATIA_STORE_MAX_OBJECT);
            *ret_code = 413;
            return -EFBIG;
        }
    }
    return 0;
}
