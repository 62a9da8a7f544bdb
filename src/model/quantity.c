/*
 * model/quantity.c: Kubernetes resource quantities (see quantity.h).
 *
 * Model. A quantity is an exact signed count of nano-units in a 128-bit integer plus the format
 * family its text used. Upstream (k8s.io/apimachinery/pkg/api/resource) keeps an int64 mantissa
 * with a base-10 scale and falls back to an arbitrary-precision inf.Dec; since every parsed value
 * is rounded up to a whole nano-unit anyway, one fixed-point integer represents exactly the same
 * set of values up to our range limit, and add/sub/cmp become single integer operations.
 *
 * Parsing follows upstream step by step:
 *   1. scan (parseQuantityString): [+-], digits, optional '.' and digits, then a suffix made of
 *      the letters "eEinumkKMGTP", an optional sign and digits, which must reach the end;
 *   2. interpret the suffix (suffix.go): the decimal SI and binary SI tables, else 'e'/'E'
 *      followed by a Go ParseInt-able int64 exponent;
 *   3. compute the value: decimal families shift the decimal point, binary SI multiplies by
 *      2^(10k); anything finer than 1n is rounded up (magnitude), binary SI magnitudes are capped
 *      at 2^63-1 units, and a binary value in (0, 1) switches to DecimalSI.
 * Quirks kept on purpose because upstream has them: "." "+" "-" "k" "Ki" "e5" parse as zero (the
 * number may have no digit), while a digitless number with an exponent below -9 ("e-10") is an
 * error (inf.Dec.SetString rejects it on upstream's slow path).
 *
 * Invariants:
 *   - |nano| <= FATIA_I128_MAX (never INT128_MIN), so negation and formatting cannot overflow;
 *   - a value parsed with a binary SI suffix has |value| <= 2^63-1 units;
 *   - format is always one of the three enum values for parsed quantities; an unknown value (a
 *     caller's cast) formats as DecimalExponent, like upstream's default branch.
 *
 * Rejected alternatives:
 *   - a general decimal bignum (upstream's inf.Dec): unbounded exponents ("1e1000000") cost
 *     memory and time proportional to the exponent; quotas never need more than 1.7e29;
 *   - int64 nano-units: caps at 9.2e9 units, too small for byte quantities ("8Ei" overflows);
 *   - double: the whole point of quantities is exactness (summing 100m 10000 times is 1k).
 *
 * Known differences from upstream, all documented in quantity.h: magnitudes of 1.7e29 units and
 * more are -ERANGE (upstream has no limit); exponents are not truncated to int32 (upstream reads
 * "1e4294967296" as 1e0, TOB-K8S-015); formatting is always canonical (upstream's String() echoes
 * some inputs verbatim, "+1" or "1.001"); Value()/MilliValue() round away from zero and saturate.
 */
#include "base/compat.h"

#include "model/quantity.h"

#include <errno.h>

#include "base/json.h"

__extension__ typedef unsigned __int128 u128;

#define FATIA_I128_MAX ((fatia_i128)(((u128)1 << 127) - 1))
#define NANO_PER_UNIT  ((fatia_i128)FATIA_NANO)

/* Upstream's messages (quantity.go ErrFormatWrong / ErrNumeric / ErrSuffix). */
#define MSG_FORMAT \
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define MSG_NUMERIC "unable to parse numeric part of quantity"

struct scan {
    bool neg;
    bool has_digit;  /* any digit before the suffix */
    const char *num; /* integer digits, leading zeros stripped; may be empty */
    size_t num_n;
    const char *den; /* fraction digits; may be empty */
    size_t den_n;
    const char *suf; /* suffix text; may be empty */
    size_t suf_n;
};

static void set_why(char *why, size_t why_n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void set_why(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;

    if (!why || why_n == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(why, why_n, fmt, ap);
    va_end(ap);
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_suffix_char(char c)
{
    return c && strchr("eEinumkKMGTP", c) != NULL;
}

/* parseQuantityString. Returns false on ErrFormatWrong. */
static bool scan_quantity(const char *s, size_t n, struct scan *sc)
{
    size_t pos = 0, start;

    memset(sc, 0, sizeof(*sc));
    sc->num = sc->den = sc->suf = s;
    if (pos < n && (s[pos] == '-' || s[pos] == '+'))
        sc->neg = s[pos++] == '-';
    while (pos < n && s[pos] == '0') {
        sc->has_digit = true;
        pos++;
    }
    if (pos == n)
        return true; /* zero */
    start = pos;
    while (pos < n && is_digit(s[pos]))
        pos++;
    sc->num = s + start;
    sc->num_n = pos - start;
    if (pos < n && s[pos] == '.') {
        start = ++pos;
        while (pos < n && is_digit(s[pos]))
            pos++;
        sc->den = s + start;
        sc->den_n = pos - start;
    }
    if (sc->num_n || sc->den_n)
        sc->has_digit = true;
    start = pos;
    while (pos < n && is_suffix_char(s[pos]))
        pos++;
    if (pos < n && (s[pos] == '-' || s[pos] == '+'))
        pos++;
    while (pos < n && is_digit(s[pos]))
        pos++;
    if (pos != n)
        return false;
    sc->suf = s + start;
    sc->suf_n = n - start;
    return true;
}

/* Go's strconv.ParseInt(s, 10, 64): optional sign, at least one digit, in range. */
static bool go_parse_int64(const char *s, size_t n, int64_t *ret)
{
    bool neg = false;
    uint64_t v = 0, lim;
    size_t i = 0;

    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i == n)
        return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        if (!is_digit(s[i]))
            return false;
        if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool suffix_is(const struct scan *sc, const char *lit)
{
    return sc->suf_n == strlen(lit) && memcmp(sc->suf, lit, sc->suf_n) == 0;
}

/* suffix.go interpret(): base 10 or 2, the exponent, the format. */
static bool interpret_suffix(const struct scan *sc, int *ret_base, int64_t *ret_exp,
                             enum fatia_qformat *ret_format)
{
    static const struct {
        const char *s;
        int base;
        int exp;
    } table[] = {
        {"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},  {"M", 10, 6},
        {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
        {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60},
    };

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(table); i++) {
        if (suffix_is(sc, table[i].s)) {
            *ret_base = table[i].base;
            *ret_exp = table[i].exp;
            *ret_format = table[i].base == 2 ? FATIA_Q_BINARY_SI : FATIA_Q_DECIMAL_SI;
            return true;
        }
    }
    if (sc->suf_n > 1 && (sc->suf[0] == 'e' || sc->suf[0] == 'E') &&
        go_parse_int64(sc->suf + 1, sc->suf_n - 1, ret_exp)) {
        *ret_base = 10;
        *ret_format = FATIA_Q_DECIMAL_EXPONENT;
        return true;
    }
    return false;
}

/* The i-th digit of num followed by den. */
static int digit_at(const struct scan *sc, size_t i)
{
    return i < sc->num_n ? sc->num[i] - '0' : sc->den[i - sc->num_n] - '0';
}

/* v = v * 10 + d within [0, lim]. */
static bool acc_digit(u128 *v, int d, u128 lim)
{
    if (*v > (lim - (u128)d) / 10)
        return false;
    *v = *v * 10 + (u128)d;
    return true;
}

/*
 * Magnitude in nano-units of digits x 10^shift, rounded up. The digits are num and den
 * concatenated, [first, len), first being the first non-zero one. -ERANGE above lim.
 */
static int decimal_nano(const struct scan *sc, size_t first, int64_t shift, u128 lim, u128 *ret)
{
    size_t len = sc->num_n + sc->den_n, end = len;
    u128 v = 0;
    bool round_up = false;

    if (shift < 0) {
        uint64_t drop = (uint64_t)-shift;

        end = drop >= len - first ? first : len - (size_t)drop;
        for (size_t i = end; i < len && !round_up; i++)
            round_up = digit_at(sc, i) != 0;
        shift = 0;
    }
    for (size_t i = first; i < end; i++)
        if (!acc_digit(&v, digit_at(sc, i), lim))
            return -ERANGE;
    for (int64_t i = 0; i < shift; i++)
        if (!acc_digit(&v, 0, lim))
            return -ERANGE;
    if (round_up) {
        if (v >= lim)
            return -ERANGE;
        v++;
    }
    *ret = v;
    return 0;
}

/*
 * Binary SI: ceil(num.den x 10^9 x 2^bits) in nano-units, capped at (2^63-1) units. The first
 * 9 fraction digits join the integer part I; the rest, F, contributes ceil(0.F x 2^bits), which
 * Horner's rule computes from the last digit with a sticky remainder bit.
 */
static u128 binary_nano(const struct scan *sc, size_t first, unsigned bits)
{
    const u128 cap = (u128)INT64_MAX * (u128)FATIA_NANO;
    const u128 mult = (u128)1 << bits;
    size_t len = sc->num_n + sc->den_n, int_end = sc->num_n + 9;
    u128 ipart = 0, q = 0, total;
    bool sticky = false;

    for (size_t i = first; i < int_end; i++) {
        if (!acc_digit(&ipart, i < len ? digit_at(sc, i) : 0, cap))
            return cap;
    }
    if (ipart > (cap >> bits))
        return cap;
    for (size_t i = len; i > int_end; i--) {
        u128 t = q + (u128)digit_at(sc, i - 1) * mult;

        q = t / 10;
        if (t % 10)
            sticky = true;
    }
    total = (ipart << bits) + q + (sticky ? 1 : 0);
    return total > cap ? cap : total;
}

static int parse_n(const char *s, size_t n, struct fatia_quantity *ret, char *why, size_t why_n)
{
    struct scan sc;
    enum fatia_qformat format;
    int base, r;
    int64_t exp;
    size_t len, first;
    u128 mag = 0;
    fatia_i128 nano;

    if (!s || n == 0 || !scan_quantity(s, n, &sc)) {
        set_why(why, why_n, "%s", MSG_FORMAT);
        return -EINVAL;
    }
    if (!interpret_suffix(&sc, &base, &exp, &format)) {
        set_why(why, why_n, "unable to parse quantity's suffix '%.*s'", (int)sc.suf_n, sc.suf);
        return -EINVAL;
    }
    if (!sc.has_digit && base == 10 && exp < -9) {
        set_why(why, why_n, "%s", MSG_NUMERIC);
        return -EINVAL;
    }
    len = sc.num_n + sc.den_n;
    for (first = 0; first < len && digit_at(&sc, first) == 0; first++)
        ;
    if (first < len && base == 2) {
        mag = binary_nano(&sc, first, (unsigned)exp);
        if (mag < (u128)FATIA_NANO)
            format = FATIA_Q_DECIMAL_SI; /* 0 < |value| < 1 */
    } else if (first < len) {
        /* Clamp before the arithmetic: any exponent past the range fails or rounds to 1n. */
        int64_t e = FATIA_MAX(FATIA_MIN(exp, INT64_C(1) << 40), -(INT64_C(1) << 40));
        int64_t den_n = (int64_t)FATIA_MIN(sc.den_n, (size_t)1 << 40);

        r = decimal_nano(&sc, first, e + 9 - den_n, (u128)FATIA_I128_MAX, &mag);
        if (r < 0) {
            set_why(why, why_n, "quantity is too large (the limit is about 1.7e29)");
            return r;
        }
    }
    nano = (fatia_i128)mag;
    ret->nano = sc.neg ? -nano : nano;
    ret->format = format;
    return 0;
}

int fatia_quantity_parse(const char *s, struct fatia_quantity *ret, char *why, size_t why_n)
{
    return parse_n(s, s ? strlen(s) : 0, ret, why, why_n);
}

/* Go's unicode.IsSpace on one UTF-8 sequence at s[0..n); returns its length, or 0. */
static size_t go_space_len(const unsigned char *s, size_t n)
{
    uint32_t cp;

    if (n >= 1 && (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r')))
        return 1;
    if (n >= 2 && s[0] == 0xc2 && (s[1] == 0x85 || s[1] == 0xa0))
        return 2;
    if (n >= 3 && (s[0] & 0xf0) == 0xe0 && (s[1] & 0xc0) == 0x80 && (s[2] & 0xc0) == 0x80) {
        cp = ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
            cp == 0x202f || cp == 0x205f || cp == 0x3000)
            return 3;
    }
    return 0;
}

/* Length of the whitespace sequence that ends at s[n-1], or 0. */
static size_t go_space_len_back(const unsigned char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++)
        if (go_space_len(s + n - k, k) == k)
            return k;
    return 0;
}

int fatia_quantity_parse_json(const json_t *v, struct fatia_quantity *ret, char *why, size_t why_n)
{
    char text[64];

    if (json_is_string(v)) {
        /* UnmarshalJSON trims (strings.TrimSpace) before parsing. */
        const unsigned char *p = (const unsigned char *)json_string_value(v);
        size_t n = json_string_length(v), k;

        while ((k = go_space_len(p, n)) > 0) {
            p += k;
            n -= k;
        }
        while ((k = go_space_len_back(p, n)) > 0)
            n -= k;
        return parse_n((const char *)p, n, ret, why, why_n);
    }
    if (json_is_number(v) && fatia_json_number_text(v, text, sizeof(text)) == 0)
        return parse_n(text, strlen(text), ret, why, why_n);
    set_why(why, why_n, "must be a string or a number");
    return -EINVAL;
}

struct fatia_quantity fatia_quantity_from_int(int64_t units, enum fatia_qformat format)
{
    return (struct fatia_quantity){.nano = (fatia_i128)units * NANO_PER_UNIT, .format = format};
}

struct fatia_quantity fatia_quantity_from_milli(int64_t milli, enum fatia_qformat format)
{
    return (struct fatia_quantity){.nano = (fatia_i128)milli * 1000000, .format = format};
}

/* Decimal digits of a non-negative v into buf (at least 40 bytes); returns the length. */
static size_t u128_digits(u128 v, char *buf)
{
    char tmp[40];
    size_t n = 0, len;

    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (len = 0; len < n; len++)
        buf[len] = tmp[n - 1 - len];
    return len;
}

int fatia_quantity_format(const struct fatia_quantity *q, char *buf, size_t n)
{
    static const char *const bin_suffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    static const char *const dec_suffix[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    enum fatia_qformat format = q->format;
    char out[64], digits[40];
    u128 mag;
    int len, exp = -9;

    if (q->nano == 0)
        return snprintf(buf, n, "0");
    if (format != FATIA_Q_DECIMAL_SI && format != FATIA_Q_BINARY_SI &&
        format != FATIA_Q_DECIMAL_EXPONENT)
        format = FATIA_Q_DECIMAL_EXPONENT;
    mag = q->nano < 0 ? (u128)0 - (u128)q->nano : (u128)q->nano;
    /* CanonicalizeBytes: binary only for whole values outside (-1024, 1024). */
    if (format == FATIA_Q_BINARY_SI &&
        (mag < (u128)1024 * FATIA_NANO || mag % (u128)FATIA_NANO != 0))
        format = FATIA_Q_DECIMAL_SI;
    if (format == FATIA_Q_BINARY_SI) {
        size_t k = 0;

        mag /= (u128)FATIA_NANO;
        /* Stop at Ei: upstream would print 2^70 as "1" for want of a suffix. */
        while (k + 1 < FATIA_ARRAY_SIZE(bin_suffix) && mag % 1024 == 0) {
            mag /= 1024;
            k++;
        }
        digits[u128_digits(mag, digits)] = '\0';
        len = snprintf(out, sizeof(out), "%s%s%s", q->nano < 0 ? "-" : "", digits, bin_suffix[k]);
        return snprintf(buf, n, "%.*s", len, out);
    }
    /* AsCanonicalBytes: strip factors of 10, then lower the exponent to a multiple of 3. */
    while (mag % 10 == 0) {
        mag /= 10;
        exp++;
    }
    while (exp % 3 != 0) {
        mag *= 10;
        exp--;
    }
    digits[u128_digits(mag, digits)] = '\0';
    if (format == FATIA_Q_DECIMAL_SI && exp <= 18)
        len = snprintf(out, sizeof(out), "%s%s%s", q->nano < 0 ? "-" : "", digits,
                       dec_suffix[(exp + 9) / 3]);
    else if (exp == 0)
        len = snprintf(out, sizeof(out), "%s%s", q->nano < 0 ? "-" : "", digits);
    else
        len = snprintf(out, sizeof(out), "%s%se%d", q->nano < 0 ? "-" : "", digits, exp);
    return snprintf(buf, n, "%.*s", len, out);
}

/* ceil(|nano| / div) with the sign of nano, saturated to int64. */
static int64_t scaled_value(fatia_i128 nano, fatia_i128 div)
{
    fatia_i128 v = nano / div, r = nano % div;

    if (r > 0)
        v++;
    else if (r < 0)
        v--;
    if (v > INT64_MAX)
        return INT64_MAX;
    if (v < INT64_MIN)
        return INT64_MIN;
    return (int64_t)v;
}

int64_t fatia_quantity_value(const struct fatia_quantity *q)
{
    return scaled_value(q->nano, NANO_PER_UNIT);
}

int64_t fatia_quantity_milli(const struct fatia_quantity *q)
{
    return scaled_value(q->nano, 1000000);
}

int fatia_quantity_cmp(const struct fatia_quantity *a, const struct fatia_quantity *b)
{
    return (a->nano > b->nano) - (a->nano < b->nano);
}

bool fatia_quantity_is_zero(const struct fatia_quantity *q)
{
    return q->nano == 0;
}

bool fatia_quantity_is_negative(const struct fatia_quantity *q)
{
    return q->nano < 0;
}

/* Upstream Add/Sub: a zero receiver takes the other operand's format. */
static int add_nano(const struct fatia_quantity *a, const struct fatia_quantity *b, fatia_i128 bn,
                    struct fatia_quantity *ret)
{
    fatia_i128 sum;

    if (__builtin_add_overflow(a->nano, bn, &sum) || sum > FATIA_I128_MAX || sum < -FATIA_I128_MAX)
        return -ERANGE;
    ret->format = a->nano == 0 ? b->format : a->format;
    ret->nano = sum;
    return 0;
}

int fatia_quantity_add(const struct fatia_quantity *a, const struct fatia_quantity *b,
                       struct fatia_quantity *ret)
{
    return add_nano(a, b, b->nano, ret);
}

int fatia_quantity_sub(const struct fatia_quantity *a, const struct fatia_quantity *b,
                       struct fatia_quantity *ret)
{
    if (b->nano < -FATIA_I128_MAX)
        return -ERANGE;
    return add_nano(a, b, -b->nano, ret);
}

int fatia_quantity_parse_bytes(const char *s, uint64_t *ret)
{
    struct fatia_quantity q;
    u128 units;
    int r;

    r = fatia_quantity_parse(s, &q, NULL, 0);
    if (r < 0)
        return r;
    if (q.nano < 0)
        return -EINVAL;
    units = (u128)q.nano / (u128)FATIA_NANO + ((u128)q.nano % (u128)FATIA_NANO ? 1 : 0);
    if (units > UINT64_MAX)
        return -ERANGE;
    *ret = (uint64_t)units;
    return 0;
}
