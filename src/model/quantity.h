/*
 * model/quantity.h: Kubernetes resource quantities, exactly as apimachinery's resource.Quantity.
 *
 * Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go):
 *     <quantity> ::= <signedNumber><suffix>
 *     <suffix>   ::= <binarySI> | <decimalExponent> | <decimalSI>
 *     <binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei
 *     <decimalSI> ::= n | u | m | "" | k | M | G | T | P | E
 *     <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
 *
 * Representation: the exact value in nano-units (10^-9) as a signed 128-bit integer, plus the
 * format the input used (which decides the canonical output form). Values with precision finer
 * than 1n are rounded up (away from zero for negatives, as upstream rounds "up" the magnitude),
 * so "0.1n" is "1n". Arithmetic is exact integer arithmetic: quota sums never drift.
 * Range: |value| < 1.7e29 units (|nano| <= 2^127-1); larger input fails with -ERANGE.
 *
 * Parsing quirks kept from upstream: a binary SI magnitude is capped, silently, at 2^63-1 units
 * ("9Ei" and "8Ei" are 9223372036854775807); a binary value between 0 and 1 becomes DecimalSI
 * (".000000000001Ki" is "2n"); the number may have no digit ("." "+" "-" "k" "Ki" are zero, but
 * "e-10" is an error); "1." and "1.G" are accepted; no whitespace anywhere.
 *
 * Canonical form (fatia_quantity_format) follows upstream's CanonicalizeBytes: no fractional
 * digits, the largest suffix that loses no precision, the input's format family (1.5 -> "1500m",
 * 1.5Gi -> "1536Mi", 0.5Ki -> "512", 1e3 -> "1e3", 1e14 -> "100e12"); binary SI only for whole
 * values outside (-1024, 1024); DecimalSI past "E" falls back to an exponent ("1000E" -> "1e21").
 *
 * Known differences from upstream: (1) magnitudes of 1.7e29 units and more are -ERANGE, where
 * upstream's inf.Dec has no limit; (2) exponents are read exactly, where upstream truncates them
 * to int32 ("1e4294967296" is 1 there, -ERANGE here); (3) upstream's String() echoes the input
 * verbatim when its fast path deems it canonical, so "+1", "01", "1E3" and "1.001" print as typed
 * there, while here formatting is always canonical ("1", "1", "1e3", "1001m": the same values);
 * (4) Value()/MilliValue() saturate instead of overflowing.
 */
#ifndef FATIA_MODEL_QUANTITY_H
#define FATIA_MODEL_QUANTITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

__extension__ typedef __int128 fatia_i128;

enum fatia_qformat {
    FATIA_Q_DECIMAL_SI,       /* "", k, M, G, ..., and m, u, n */
    FATIA_Q_BINARY_SI,        /* Ki, Mi, ... */
    FATIA_Q_DECIMAL_EXPONENT, /* 1e3 */
};

struct fatia_quantity {
    fatia_i128 nano; /* value x 10^9 */
    enum fatia_qformat format;
};

#define FATIA_NANO INT64_C(1000000000)

/* Parses s (the whole string). Returns 0, -EINVAL (not a quantity, or s NULL) or -ERANGE (too
 * large). When why is non-NULL it receives upstream's reason on failure ("unable to parse
 * quantity's suffix 'x'"); it is not written on success. */
int fatia_quantity_parse(const char *s, struct fatia_quantity *ret, char *why, size_t why_n);

/* Parses a JSON value: a string, trimmed of Go's Unicode whitespace first as upstream's
 * UnmarshalJSON does, or a number (its text as fatia_json_number_text gives it; jansson keeps no
 * literal, so a bare 1e3 reads as "1000" and formats as "1k"). Anything else, JSON null included,
 * is -EINVAL. */
int fatia_quantity_parse_json(const json_t *v, struct fatia_quantity *ret, char *why, size_t why_n);

/* Builders. */
struct fatia_quantity fatia_quantity_from_int(int64_t units, enum fatia_qformat format);
struct fatia_quantity fatia_quantity_from_milli(int64_t milli, enum fatia_qformat format);

/* Canonical text into buf (at most 64 bytes are ever needed). Returns the length, which, as with
 * snprintf, is the full length even when n was too small and the text was truncated. */
int fatia_quantity_format(const struct fatia_quantity *q, char *buf, size_t n);

/* Value rounded up, away from zero, to a whole unit / milli-unit (upstream Value() and
 * MilliValue(): -1.5 is -2), saturating at INT64_MAX / INT64_MIN. */
int64_t fatia_quantity_value(const struct fatia_quantity *q);
int64_t fatia_quantity_milli(const struct fatia_quantity *q);

int fatia_quantity_cmp(const struct fatia_quantity *a, const struct fatia_quantity *b);
bool fatia_quantity_is_zero(const struct fatia_quantity *q);
bool fatia_quantity_is_negative(const struct fatia_quantity *q);

/* Exact sum and difference; the result keeps a's format, or takes b's when a is zero (upstream
 * Add/Sub: 0 + 1Gi is "1Gi"). -ERANGE on overflow (ret untouched). ret may alias a or b. */
int fatia_quantity_add(const struct fatia_quantity *a, const struct fatia_quantity *b,
                       struct fatia_quantity *ret);
int fatia_quantity_sub(const struct fatia_quantity *a, const struct fatia_quantity *b,
                       struct fatia_quantity *ret);

/* Convenience for sizes: "12Gi" or a plain byte count to bytes (rounded up; negative = -EINVAL,
 * more than UINT64_MAX = -ERANGE). */
int fatia_quantity_parse_bytes(const char *s, uint64_t *ret);

#endif
