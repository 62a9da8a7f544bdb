/*
 * base/json_scan.h: the one loop JSON text spends its bytes in, eight bytes at a time.
 *
 * Most of a Kubernetes object's text is the inside of strings without escapes (names, an
 * annotation of kilobytes): the parser (json_dec.c), the encoder (json_enc.c) and the look
 * before parsing (apiserver/limits.c) each walk those bytes. A word of eight is tested at once
 * with the exact "has a byte below / equal to" bit tricks (no false answers on whether such a
 * byte exists, only on which one), and the word that has one is finished byte by byte.
 */
#ifndef FATIA_BASE_JSON_SCAN_H
#define FATIA_BASE_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FATIA_JSON_ONES  0x0101010101010101ull
#define FATIA_JSON_HIGHS 0x8080808080808080ull

/* The length of the run at s[0, n) of bytes that stand for themselves inside a JSON string:
 * 0x20-0x7f but '"' and '\\' (DEL included, as JSON and jansson have it). */
static inline size_t fatia_json_plain_run(const char *s, size_t n)
{
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t x, q, bs;
        memcpy(&x, s + i, 8);
        q = x ^ (FATIA_JSON_ONES * '"');
        bs = x ^ (FATIA_JSON_ONES * '\\');
        if ((x | ((x - FATIA_JSON_ONES * 0x20) & ~x) | ((q - FATIA_JSON_ONES) & ~q) |
             ((bs - FATIA_JSON_ONES) & ~bs)) &
            FATIA_JSON_HIGHS)
            break;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\')
            break;
    }
    return i;
}

/* Whether s[0, n) is all ASCII (no byte >= 0x80). */
static inline bool fatia_json_is_ascii(const char *s, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        acc |= x;
    }
    for (; i < n; i++)
        acc |= (unsigned char)s[i];
    return !(acc & FATIA_JSON_HIGHS);
}

#endif
