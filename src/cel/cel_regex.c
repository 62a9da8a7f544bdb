/*
 * cel/cel_regex.c: RE2-syntax regular expressions for CEL `matches` (see cel_regex.h).
 *
 * Model. The pattern is parsed into a small tree (parse_*), checked against RE2's limits (repeat
 * counts and nested repeat products at most 1000, as Go's regexp/syntax), then compiled to
 * instructions for a Pike VM (Thompson's construction: counted repetitions are unrolled, x{2,4}
 * becomes xx(x(x)?)?). Matching keeps, per input position, the set of instruction indexes that
 * are alive; each position costs at most one visit per instruction, so a match is
 * O(len(text) x instructions) whatever the pattern, and the caller charges that product to the
 * CEL cost budget before running it.
 *
 * Text is matched as Unicode code points (UTF-8 decoded on the fly; an invalid byte reads as
 * U+FFFD, as Go does). Only whether a match exists is computed: no submatches, so greedy and lazy
 * repetition compile alike.
 *
 * Rejected alternatives: POSIX regcomp(3) with ERE syntax: a different dialect (no \d, no (?i),
 * no non-capturing groups, leftmost-longest), backreferences allowed by glibc, and no bound on
 * compile time or memory for nested counted repetition; translating RE2 to ERE would need this
 * parser anyway. A backtracking matcher: exponential on (a*)*b.
 */
#include "base/compat.h"

#include "cel/cel_regex.h"

#include "base/alloc.h"
#include "base/error.h"

#define MAX_DEPTH  200  /* nesting of groups and repetitions */
#define MAX_REPEAT 1000 /* RE2 / Go */
#define MAX_NODES  (FATIA_CEL_REGEX_MAX_INSTS * 2)

enum rkind {
    R_EMPTY,
    R_LIT,   /* rune; fold */
    R_ANY,   /* any rune; dotnl: also '\n' */
    R_CLASS, /* ranges; neg */
    R_ASSERT,
    R_CAT,
    R_ALT,
    R_REPEAT, /* min, max (-1 = unbounded) */
};

enum assert_kind {
    A_BOL,
    A_EOL,
    A_BOT,
    A_EOT,
    A_WORDB,
    A_NWORDB
};

struct range {
    uint32_t lo, hi;
};

struct rnode {
    enum rkind kind;
    uint32_t rune;
    bool fold, dotnl, neg;
    enum assert_kind assert;
    int min, max;
    long prod; /* R_REPEAT: repeat_product, once computed */
    struct range *ranges;
    size_t n_ranges, cap_ranges;
    struct rnode **kids;
    size_t n_kids, cap_kids;
};

enum op {
    I_CHAR,
    I_CLASS,
    I_ANY,
    I_ANYNL,
    I_SPLIT,
    I_JMP,
    I_ASSERT,
    I_MATCH
};

struct inst {
    uint8_t op;
    uint8_t arg; /* CHAR: fold; ASSERT: kind */
    uint32_t x, y;
};

struct rclass {
    struct range *ranges;
    size_t n;
    bool neg;
};

struct fatia_cel_regex {
    struct inst *insts;
    size_t n_insts;
    struct rclass *classes;
    size_t n_classes;
};

struct parser {
    const char *s;
    size_t n, pos;
    bool fold, multiline, dotnl;
    int depth;
    size_t n_nodes;
    struct rnode **all; /* every node, for freeing */
    size_t n_all, cap_all;
    char *why;
    size_t why_n;
    int err;
};

/* ---- UTF-8 ---- */

static uint32_t decode(const char *s, size_t n, size_t *len)
{
    const unsigned char *u = (const unsigned char *)s;
    uint32_t c;
    size_t need;

    if (n == 0) {
        *len = 0;
        return 0;
    }
    if (u[0] < 0x80) {
        *len = 1;
        return u[0];
    }
    if ((u[0] & 0xE0) == 0xC0) {
        need = 2;
        c = u[0] & 0x1F;
    } else if ((u[0] & 0xF0) == 0xE0) {
        need = 3;
        c = u[0] & 0x0F;
    } else if ((u[0] & 0xF8) == 0xF0) {
        need = 4;
        c = u[0] & 0x07;
    } else {
        *len = 1;
        return 0xFFFD;
    }
    if (n < need) {
        *len = 1;
        return 0xFFFD;
    }
    for (size_t i = 1; i < need; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        c = (c << 6) | (u[i] & 0x3F);
    }
    if ((need == 2 && c < 0x80) || (need == 3 && c < 0x800) || (need == 4 && c < 0x10000) ||
        c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        *len = 1;
        return 0xFFFD;
    }
    *len = need;
    return c;
}

/* ---- errors and nodes ---- */

static int fail(struct parser *p, const char *what, size_t from, size_t to)
{
    if (p->err)
        return p->err;
    if (to > p->n)
        to = p->n;
    if (from > to)
        from = to;
    if (p->why && p->why_n)
        snprintf(p->why, p->why_n, "error parsing regexp: %s: `%.*s`", what,
                 (int)FATIA_MIN(to - from, 200), p->s + from);
    p->err = -EINVAL;
    return p->err;
}

static int fail_oom(struct parser *p)
{
    if (!p->err)
        p->err = -ENOMEM;
    return p->err;
}

static struct rnode *node_new(struct parser *p, enum rkind kind)
{
    struct rnode *n;

    if (p->err)
        return NULL;
    if (++p->n_nodes > MAX_NODES) {
        fail(p, "expression too large", 0, p->n);
        return NULL;
    }
    if (p->n_all == p->cap_all) {
        size_t cap = p->cap_all ? p->cap_all * 2 : 16;
        struct rnode **all = fatia_reallocarray(p->all, cap, sizeof(*all));
        if (!all) {
            fail_oom(p);
            return NULL;
        }
        p->all = all;
        p->cap_all = cap;
    }
    n = fatia_calloc(1, sizeof(*n));
    if (!n) {
        fail_oom(p);
        return NULL;
    }
    n->kind = kind;
    p->all[p->n_all++] = n;
    return n;
}

static int add_kid(struct parser *p, struct rnode *parent, struct rnode *kid)
{
    if (parent->n_kids == parent->cap_kids) {
        size_t cap = parent->cap_kids ? parent->cap_kids * 2 : 4;
        struct rnode **k = fatia_reallocarray(parent->kids, cap, sizeof(*k));
        if (!k)
            return fail_oom(p);
        parent->kids = k;
        parent->cap_kids = cap;
    }
    parent->kids[parent->n_kids++] = kid;
    return 0;
}

static int add_range(struct parser *p, struct rnode *c, uint32_t lo, uint32_t hi)
{
    if (c->n_ranges == c->cap_ranges) {
        size_t cap = c->cap_ranges ? c->cap_ranges * 2 : 8;
        struct range *r;
        if (cap > 4096)
            return fail(p, "expression too large", 0, p->n);
        r = fatia_reallocarray(c->ranges, cap, sizeof(*r));
        if (!r)
            return fail_oom(p);
        c->ranges = r;
        c->cap_ranges = cap;
    }
    c->ranges[c->n_ranges++] = (struct range){lo, hi};
    return 0;
}

/* Adds [lo, hi] and, when folding, the other case of its ASCII letters (and the two non-ASCII
 * runes that fold to ASCII letters in Unicode: U+212A KELVIN SIGN ~ k, U+017F LONG S ~ s). */
static int add_range_fold(struct parser *p, struct rnode *c, uint32_t lo, uint32_t hi, bool fold)
{
    int r = add_range(p, c, lo, hi);

    if (r < 0 || !fold)
        return r;
    for (uint32_t a = 'A', b = 'a'; a <= 'Z' && r == 0; a++, b++) {
        if (a >= lo && a <= hi)
            r = add_range(p, c, b, b);
        if (r == 0 && b >= lo && b <= hi)
            r = add_range(p, c, a, a);
    }
    if (r == 0 && ((lo <= 'k' && 'k' <= hi) || (lo <= 'K' && 'K' <= hi)))
        r = add_range(p, c, 0x212A, 0x212A);
    if (r == 0 && ((lo <= 's' && 's' <= hi) || (lo <= 'S' && 'S' <= hi)))
        r = add_range(p, c, 0x017F, 0x017F);
    return r;
}

/* ---- escapes and classes ---- */

static bool at_end(const struct parser *p)
{
    return p->pos >= p->n;
}

/* The length up to and including the first `c` from `from` (or up to the end): the extent of a
 * construct quoted in an error. The pattern is not NUL-terminated. */
static size_t span_through(const struct parser *p, size_t from, char c)
{
    const char *hit = from < p->n ? memchr(p->s + from, c, p->n - from) : NULL;

    return hit ? (size_t)(hit - (p->s + from)) + 1 : p->n - from;
}

static uint32_t peek_rune(const struct parser *p, size_t *len)
{
    return decode(p->s + p->pos, p->n - p->pos, len);
}

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

/* Perl class \d \s \w (upper case negated) into c. */
static int add_perl_class(struct parser *p, struct rnode *c, char which)
{
    int r = 0;

    switch (which | 0x20) {
    case 'd':
        r = add_range(p, c, '0', '9');
        break;
    case 's':
        r = add_range(p, c, '\t', '\n');
        if (!r)
            r = add_range(p, c, '\f', '\r');
        if (!r)
            r = add_range(p, c, ' ', ' ');
        break;
    case 'w':
        r = add_range(p, c, '0', '9');
        if (!r)
            r = add_range(p, c, 'A', 'Z');
        if (!r)
            r = add_range(p, c, 'a', 'z');
        if (!r)
            r = add_range(p, c, '_', '_');
        break;
    }
    return r;
}

struct posix_class {
    const char *name;
    const char *ranges; /* pairs of bytes */
};

static const struct posix_class posix_classes[] = {
    {"alnum", "09AZaz"},
    {"alpha", "AZaz"},
    {"ascii", "\x01\x7f"},
    {"blank", "\t\t  "},
    {"cntrl", "\x01\x1f\x7f\x7f"},
    {"digit", "09"},
    {"graph", "!~"},
    {"lower", "az"},
    {"print", " ~"},
    {"punct", "!/:@[`{~"},
    {"space", "\t\r  "},
    {"upper", "AZ"},
    {"word", "09AZaz__"},
    {"xdigit", "09AFaf"},
};

/* Reads an escape at p->pos (just after the backslash). For a class escape (\d ...) it fills
 * *ret_class (a fresh R_CLASS node) and returns 1; for a rune it sets *ret_rune and returns 0;
 * for an assertion (outside classes) it sets *ret_assert and returns 2. */
static int parse_escape(struct parser *p, bool in_class, uint32_t *ret_rune,
                        struct rnode **ret_class, enum assert_kind *ret_assert)
{
    size_t start = p->pos - 1, len;
    uint32_t c;

    if (at_end(p))
        return fail(p, "trailing backslash at end of expression", start, p->n);
    c = peek_rune(p, &len);
    p->pos += len;
    switch (c) {
    case 'a':
        *ret_rune = 7;
        return 0;
    case 'f':
        *ret_rune = '\f';
        return 0;
    case 't':
        *ret_rune = '\t';
        return 0;
    case 'n':
        *ret_rune = '\n';
        return 0;
    case 'r':
        *ret_rune = '\r';
        return 0;
    case 'v':
        *ret_rune = '\v';
        return 0;
    case 'd':
    case 'D':
    case 's':
    case 'S':
    case 'w':
    case 'W': {
        struct rnode *cl = node_new(p, R_CLASS);
        if (!cl)
            return p->err;
        cl->neg = c < 'a';
        if (add_perl_class(p, cl, (char)c) < 0)
            return p->err;
        *ret_class = cl;
        return 1;
    }
    case 'x': {
        uint32_t v = 0;
        if (!at_end(p) && p->s[p->pos] == '{') {
            size_t digits = 0;
            p->pos++;
            while (!at_end(p) && hexval(p->s[p->pos]) >= 0) {
                v = v * 16 + (uint32_t)hexval(p->s[p->pos++]);
                if (++digits > 8 || v > 0x10FFFF)
                    return fail(p, "invalid escape sequence", start, p->pos);
            }
            if (at_end(p) || p->s[p->pos] != '}' || digits == 0)
                return fail(p, "invalid escape sequence", start, p->pos + 1);
            p->pos++;
        } else {
            for (int i = 0; i < 2; i++) {
                if (at_end(p) || hexval(p->s[p->pos]) < 0)
                    return fail(p, "invalid escape sequence", start, p->pos + 1);
                v = v * 16 + (uint32_t)hexval(p->s[p->pos++]);
            }
        }
        *ret_rune = v;
        return 0;
    }
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7': {
        /* Go: \0 and octal \123; \1-\7 alone are backreferences, which RE2 rejects */
        uint32_t v = c - '0';
        int digits = 1;
        if (c != '0' && (at_end(p) || p->s[p->pos] < '0' || p->s[p->pos] > '7'))
            return fail(p, "invalid escape sequence (backreferences are not supported)", start,
                        p->pos);
        while (digits < 3 && !at_end(p) && p->s[p->pos] >= '0' && p->s[p->pos] <= '7') {
            v = v * 8 + (uint32_t)(p->s[p->pos++] - '0');
            digits++;
        }
        *ret_rune = v;
        return 0;
    }
    case 'b':
    case 'B':
    case 'A':
    case 'z':
        if (in_class)
            return fail(p, "invalid escape sequence", start, p->pos);
        *ret_assert = c == 'b' ? A_WORDB : c == 'B' ? A_NWORDB : c == 'A' ? A_BOT : A_EOT;
        return 2;
    case 'p':
    case 'P':
        return fail(p, "Unicode classes (\\p, \\P) are not supported by fatia's CEL", start,
                    p->pos +
                        (!at_end(p) && p->s[p->pos] == '{' ? span_through(p, p->pos, '}') : 1));
    default:
        if (c < 0x80 &&
            !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
            *ret_rune = c; /* escaped punctuation */
            return 0;
        }
        return fail(p, "invalid escape sequence", start, p->pos);
    }
}

static int check_fold_rune(struct parser *p, uint32_t c, size_t start)
{
    if (p->fold && c >= 0x80)
        return fail(p,
                    "case-insensitive matching of non-ASCII characters is not supported by "
                    "fatia's CEL",
                    start, p->pos);
    return 0;
}

static struct rnode *parse_class(struct parser *p)
{
    size_t start = p->pos - 1, len;
    struct rnode *cl = node_new(p, R_CLASS);
    bool first = true;

    if (!cl)
        return NULL;
    if (!at_end(p) && p->s[p->pos] == '^') {
        cl->neg = true;
        p->pos++;
    }
    for (;;) {
        uint32_t lo, hi;
        size_t item = p->pos;
        if (at_end(p)) {
            fail(p, "missing closing ]", start, p->n);
            return NULL;
        }
        if (p->s[p->pos] == ']' && !first) {
            p->pos++;
            break;
        }
        first = false;
        if (p->s[p->pos] == '[' && p->pos + 1 < p->n && p->s[p->pos + 1] == ':') {
            const char *end = NULL;
            bool neg = false;
            size_t i;
            for (i = p->pos + 2; i + 1 < p->n; i++) {
                if (p->s[i] == ':' && p->s[i + 1] == ']') {
                    end = p->s + i;
                    break;
                }
            }
            if (end) {
                const char *name = p->s + p->pos + 2;
                size_t name_n = (size_t)(end - name);
                const struct posix_class *pc = NULL;
                if (name_n && name[0] == '^') {
                    neg = true;
                    name++;
                    name_n--;
                }
                for (size_t k = 0; k < FATIA_ARRAY_SIZE(posix_classes); k++)
                    if (strlen(posix_classes[k].name) == name_n &&
                        !memcmp(posix_classes[k].name, name, name_n))
                        pc = &posix_classes[k];
                if (!pc) {
                    fail(p, "invalid character class range", p->pos, i + 2);
                    return NULL;
                }
                if (neg) {
                    /* [[:^alpha:]] inside a class: the complement, as ranges */
                    uint32_t next = 0;
                    for (const char *r = pc->ranges; *r; r += 2) {
                        uint32_t a = (unsigned char)r[0], b = (unsigned char)r[1];
                        if (a > next && add_range(p, cl, next, a - 1) < 0)
                            return NULL;
                        next = b + 1;
                    }
                    if (add_range(p, cl, next, 0x10FFFF) < 0)
                        return NULL;
                } else {
                    for (const char *r = pc->ranges; *r; r += 2)
                        if (add_range_fold(p, cl, (unsigned char)r[0], (unsigned char)r[1],
                                           p->fold) < 0)
                            return NULL;
                }
                p->pos = i + 2;
                continue;
            }
        }
        if (p->s[p->pos] == '\\') {
            struct rnode *sub = NULL;
            enum assert_kind a;
            int r;
            p->pos++;
            r = parse_escape(p, true, &lo, &sub, &a);
            if (r < 0)
                return NULL;
            if (r == 1) {
                /* merge a perl class; a negated one becomes its complement */
                if (sub->neg) {
                    uint32_t next = 0;
                    for (size_t k = 0; k < sub->n_ranges; k++) {
                        if (sub->ranges[k].lo > next &&
                            add_range(p, cl, next, sub->ranges[k].lo - 1) < 0)
                            return NULL;
                        next = sub->ranges[k].hi + 1;
                    }
                    if (add_range(p, cl, next, 0x10FFFF) < 0)
                        return NULL;
                } else {
                    for (size_t k = 0; k < sub->n_ranges; k++)
                        if (add_range_fold(p, cl, sub->ranges[k].lo, sub->ranges[k].hi, p->fold) <
                            0)
                            return NULL;
                }
                continue;
            }
        } else {
            lo = peek_rune(p, &len);
            p->pos += len;
        }
        hi = lo;
        if (p->pos + 1 < p->n && p->s[p->pos] == '-' && p->s[p->pos + 1] != ']') {
            p->pos++;
            if (p->s[p->pos] == '\\') {
                struct rnode *sub = NULL;
                enum assert_kind a;
                int r;
                p->pos++;
                r = parse_escape(p, true, &hi, &sub, &a);
                if (r < 0)
                    return NULL;
                if (r != 0) {
                    fail(p, "invalid character class range", item, p->pos);
                    return NULL;
                }
            } else {
                hi = peek_rune(p, &len);
                p->pos += len;
            }
            if (hi < lo) {
                fail(p, "invalid character class range", item, p->pos);
                return NULL;
            }
        }
        if (check_fold_rune(p, hi, item) < 0)
            return NULL;
        if (add_range_fold(p, cl, lo, hi, p->fold) < 0)
            return NULL;
    }
    return cl;
}

/* ---- the grammar: alternation of concatenations of repeated atoms ---- */

static struct rnode *parse_alt(struct parser *p);

/* Largest product of nested counted repetitions inside n (Go's repeatIsValid). */
static long repeat_product(struct rnode *n)
{
    long best = 1;

    if (n->kind == R_REPEAT && n->prod)
        return n->prod;
    for (size_t i = 0; i < n->n_kids; i++) {
        long k = repeat_product(n->kids[i]); /* once: FATIA_MAX evaluates twice */
        best = FATIA_MAX(best, k);
    }
    if (n->kind == R_REPEAT) {
        long m = n->max >= 0 ? n->max : n->min;
        if (m > 1)
            best *= m;
        n->prod = best;
    }
    return best;
}

/* Reads {n}, {n,}, {n,m} at p->pos; false (pos unchanged) if it is not one (a literal '{'). */
static bool parse_braces(struct parser *p, int *min, int *max)
{
    size_t i = p->pos + 1;
    long a = 0, b = -1;
    bool digits = false;

    while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
        if (a <= 100000)
            a = a * 10 + (p->s[i] - '0');
        i++;
        digits = true;
    }
    if (!digits || i >= p->n)
        return false;
    if (p->s[i] == ',') {
        i++;
        if (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
            b = 0;
            while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') {
                if (b <= 100000)
                    b = b * 10 + (p->s[i] - '0');
                i++;
            }
        }
    } else {
        b = a;
    }
    if (i >= p->n || p->s[i] != '}')
        return false;
    *min = (int)FATIA_MIN(a, 100001);
    *max = b < 0 ? -1 : (int)FATIA_MIN(b, 100001);
    p->pos = i + 1;
    return true;
}

static struct rnode *parse_group(struct parser *p, size_t start)
{
    bool save_fold = p->fold, save_m = p->multiline, save_s = p->dotnl;
    struct rnode *n;

    /* at p->pos: just after '(' */
    if (!at_end(p) && p->s[p->pos] == '?') {
        size_t i = p->pos + 1;
        bool neg = false, any = false;
        if (i < p->n && (p->s[i] == 'P' || p->s[i] == '<')) {
            /* named capture (?P<name>re) or (?<name>re) */
            size_t j = i + (p->s[i] == 'P' ? 1 : 0);
            size_t k;
            if (j >= p->n || p->s[j] != '<') {
                fail(p, "invalid named capture", start, j + 1);
                return NULL;
            }
            for (k = j + 1; k < p->n && p->s[k] != '>'; k++) {
                char c = p->s[k];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      c == '_')) {
                    fail(p, "invalid named capture", start, k + 1);
                    return NULL;
                }
            }
            if (k >= p->n || k == j + 1) {
                fail(p, "invalid named capture", start, k + 1);
                return NULL;
            }
            p->pos = k + 1;
            goto body;
        }
        for (; i < p->n; i++) {
            char c = p->s[i];
            if (c == 'i' || c == 'm' || c == 's' || c == 'U') {
                if (c == 'i')
                    p->fold = !neg;
                else if (c == 'm')
                    p->multiline = !neg;
                else if (c == 's')
                    p->dotnl = !neg;
                any = true;
            } else if (c == '-' && !neg) {
                neg = true;
                any = false;
            } else if (c == ')' || c == ':') {
                break;
            } else {
                fail(p, "invalid or unsupported Perl syntax", start, i + 1);
                return NULL;
            }
        }
        if (i >= p->n || (neg && !any) || (i == p->pos + 1 && p->s[i] == ')')) {
            fail(p, i >= p->n ? "missing closing )" : "invalid or unsupported Perl syntax", start,
                 i + 1);
            return NULL;
        }
        p->pos = i + 1;
        if (p->s[i] == ')') {
            /* (?flags): applies to the rest of the enclosing group */
            n = node_new(p, R_EMPTY);
            return n;
        }
    }
body:
    if (++p->depth > MAX_DEPTH) {
        fail(p, "expression nests too deeply", start, p->pos);
        return NULL;
    }
    n = parse_alt(p);
    p->depth--;
    if (!n)
        return NULL;
    if (at_end(p) || p->s[p->pos] != ')') {
        fail(p, "missing closing )", start, p->n);
        return NULL;
    }
    p->pos++;
    p->fold = save_fold;
    p->multiline = save_m;
    p->dotnl = save_s;
    return n;
}

static struct rnode *parse_atom(struct parser *p)
{
    size_t start = p->pos, len;
    uint32_t c = peek_rune(p, &len);
    struct rnode *n;

    switch (c) {
    case '(':
        p->pos++;
        return parse_group(p, start);
    case '[':
        p->pos++;
        return parse_class(p);
    case '.':
        p->pos++;
        n = node_new(p, R_ANY);
        if (n)
            n->dotnl = p->dotnl;
        return n;
    case '^':
    case '$':
        p->pos++;
        n = node_new(p, R_ASSERT);
        if (n)
            n->assert = c == '^' ? (p->multiline ? A_BOL : A_BOT) : (p->multiline ? A_EOL : A_EOT);
        return n;
    case '\\': {
        struct rnode *cl = NULL;
        enum assert_kind a;
        uint32_t rune;
        int r;
        p->pos++;
        if (!at_end(p) && p->s[p->pos] == 'Q') {
            /* \Q...\E: literal text */
            struct rnode *cat = node_new(p, R_CAT);
            p->pos++;
            while (cat && !at_end(p)) {
                struct rnode *lit;
                if (p->s[p->pos] == '\\' && p->pos + 1 < p->n && p->s[p->pos + 1] == 'E') {
                    p->pos += 2;
                    break;
                }
                rune = peek_rune(p, &len);
                if (check_fold_rune(p, rune, p->pos) < 0)
                    return NULL;
                p->pos += len;
                lit = node_new(p, R_LIT);
                if (!lit || add_kid(p, cat, lit) < 0)
                    return NULL;
                lit->rune = rune;
                lit->fold = p->fold;
            }
            return cat;
        }
        if (!at_end(p) && p->s[p->pos] == 'Z')
            return fail(p, "invalid escape sequence", start, p->pos + 1), NULL;
        r = parse_escape(p, false, &rune, &cl, &a);
        if (r < 0)
            return NULL;
        if (r == 1)
            return cl;
        if (r == 2) {
            n = node_new(p, R_ASSERT);
            if (n)
                n->assert = a;
            return n;
        }
        if (check_fold_rune(p, rune, start) < 0)
            return NULL;
        n = node_new(p, R_LIT);
        if (n) {
            n->rune = rune;
            n->fold = p->fold;
        }
        return n;
    }
    default:
        if (c == 0xFFFD && len == 1 && (unsigned char)p->s[p->pos] >= 0x80) {
            fail(p, "invalid UTF-8", start, start + 1);
            return NULL;
        }
        if (check_fold_rune(p, c, start) < 0)
            return NULL;
        p->pos += len;
        n = node_new(p, R_LIT);
        if (n) {
            n->rune = c;
            n->fold = p->fold;
        }
        return n;
    }
}

static bool is_repeat_op(const struct parser *p)
{
    char c;
    int a, b;
    struct parser probe;

    if (at_end(p))
        return false;
    c = p->s[p->pos];
    if (c == '*' || c == '+' || c == '?')
        return true;
    if (c != '{')
        return false;
    probe = *p;
    return parse_braces(&probe, &a, &b);
}

static struct rnode *parse_concat(struct parser *p)
{
    struct rnode *cat = node_new(p, R_CAT);

    while (cat && !at_end(p) && p->s[p->pos] != '|' && p->s[p->pos] != ')') {
        size_t start = p->pos;
        struct rnode *atom;
        if (is_repeat_op(p)) {
            char op = p->s[p->pos];
            fail(p, "missing argument to repetition operator", start,
                 start + (op == '{' ? span_through(p, start, '}') : 1));
            return NULL;
        }
        atom = parse_atom(p);
        if (!atom)
            return NULL;
        if (is_repeat_op(p)) {
            size_t op_start = p->pos;
            struct rnode *rep = node_new(p, R_REPEAT);
            char op = p->s[p->pos];
            if (!rep)
                return NULL;
            if (op == '{') {
                parse_braces(p, &rep->min, &rep->max);
                if (rep->min > MAX_REPEAT || rep->max > MAX_REPEAT ||
                    (rep->max >= 0 && rep->max < rep->min)) {
                    fail(p, "invalid repeat count", op_start, p->pos);
                    return NULL;
                }
            } else {
                p->pos++;
                rep->min = op == '+' ? 1 : 0;
                rep->max = op == '?' ? 1 : -1;
            }
            if (!at_end(p) && p->s[p->pos] == '?')
                p->pos++; /* lazy: same language */
            if (is_repeat_op(p)) {
                fail(p, "invalid nested repetition operator", op_start, p->pos + 1);
                return NULL;
            }
            if (add_kid(p, rep, atom) < 0)
                return NULL;
            if (repeat_product(rep) > MAX_REPEAT) {
                fail(p, "invalid repeat count", op_start, p->pos);
                return NULL;
            }
            atom = rep;
        }
        if (add_kid(p, cat, atom) < 0)
            return NULL;
    }
    return cat;
}

static struct rnode *parse_alt(struct parser *p)
{
    struct rnode *alt = node_new(p, R_ALT), *branch;

    if (!alt)
        return NULL;
    for (;;) {
        branch = parse_concat(p);
        if (!branch || add_kid(p, alt, branch) < 0)
            return NULL;
        if (at_end(p) || p->s[p->pos] != '|')
            break;
        p->pos++;
    }
    return alt;
}

/* ---- compiling ---- */

struct compiler {
    struct fatia_cel_regex *re;
    size_t cap_insts, cap_classes;
    int err;
};

static long emit(struct compiler *c, struct inst in)
{
    struct fatia_cel_regex *re = c->re;

    if (c->err)
        return -1;
    if (re->n_insts >= FATIA_CEL_REGEX_MAX_INSTS) {
        c->err = -E2BIG;
        return -1;
    }
    if (re->n_insts == c->cap_insts) {
        size_t cap = c->cap_insts ? c->cap_insts * 2 : 32;
        struct inst *v = fatia_reallocarray(re->insts, cap, sizeof(*v));
        if (!v) {
            c->err = -ENOMEM;
            return -1;
        }
        re->insts = v;
        c->cap_insts = cap;
    }
    re->insts[re->n_insts] = in;
    return (long)re->n_insts++;
}

static int add_class(struct compiler *c, const struct rnode *n, uint32_t *ret)
{
    struct fatia_cel_regex *re = c->re;
    struct range *copy;

    if (re->n_classes == c->cap_classes) {
        size_t cap = c->cap_classes ? c->cap_classes * 2 : 8;
        struct rclass *v = fatia_reallocarray(re->classes, cap, sizeof(*v));
        if (!v)
            return c->err = -ENOMEM;
        re->classes = v;
        c->cap_classes = cap;
    }
    copy = fatia_reallocarray(NULL, n->n_ranges ? n->n_ranges : 1, sizeof(*copy));
    if (!copy)
        return c->err = -ENOMEM;
    if (n->n_ranges)
        memcpy(copy, n->ranges, n->n_ranges * sizeof(*copy));
    re->classes[re->n_classes] = (struct rclass){copy, n->n_ranges, n->neg};
    *ret = (uint32_t)re->n_classes++;
    return 0;
}

static void compile_node(struct compiler *c, const struct rnode *n);

/* x* : L: split(L+1, out); x; jmp L */
static void compile_star(struct compiler *c, const struct rnode *kid)
{
    long split = emit(c, (struct inst){I_SPLIT, 0, 0, 0});

    if (split < 0)
        return;
    c->re->insts[split].x = (uint32_t)split + 1;
    compile_node(c, kid);
    if (emit(c, (struct inst){I_JMP, 0, (uint32_t)split, 0}) < 0)
        return;
    c->re->insts[split].y = (uint32_t)c->re->n_insts;
}

/* x? : split(L1, out); L1: x */
static void compile_quest(struct compiler *c, const struct rnode *kid, size_t *ret_split)
{
    long split = emit(c, (struct inst){I_SPLIT, 0, 0, 0});

    if (split < 0)
        return;
    c->re->insts[split].x = (uint32_t)split + 1;
    compile_node(c, kid);
    if (c->err)
        return;
    c->re->insts[split].y = (uint32_t)c->re->n_insts;
    if (ret_split)
        *ret_split = (size_t)split;
}

static void compile_node(struct compiler *c, const struct rnode *n)
{
    uint32_t idx;

    if (c->err)
        return;
    switch (n->kind) {
    case R_EMPTY:
        break;
    case R_LIT:
        emit(c, (struct inst){I_CHAR, n->fold, n->rune, 0});
        break;
    case R_ANY:
        emit(c, (struct inst){n->dotnl ? I_ANYNL : I_ANY, 0, 0, 0});
        break;
    case R_CLASS:
        if (add_class(c, n, &idx) == 0)
            emit(c, (struct inst){I_CLASS, 0, idx, 0});
        break;
    case R_ASSERT:
        emit(c, (struct inst){I_ASSERT, (uint8_t)n->assert, 0, 0});
        break;
    case R_CAT:
        for (size_t i = 0; i < n->n_kids; i++)
            compile_node(c, n->kids[i]);
        break;
    case R_ALT: {
        /* split(L1, L2); L1: a; jmp end; L2: split(...) ...; last branch falls through */
        long *jumps;
        size_t n_jumps = 0;
        if (n->n_kids == 1) {
            compile_node(c, n->kids[0]);
            break;
        }
        jumps = fatia_reallocarray(NULL, n->n_kids, sizeof(*jumps));
        if (!jumps) {
            c->err = -ENOMEM;
            return;
        }
        for (size_t i = 0; i < n->n_kids && !c->err; i++) {
            long split = -1, j;
            if (i + 1 < n->n_kids) {
                split = emit(c, (struct inst){I_SPLIT, 0, 0, 0});
                if (split < 0)
                    break;
                c->re->insts[split].x = (uint32_t)split + 1;
            }
            compile_node(c, n->kids[i]);
            if (i + 1 == n->n_kids)
                break;
            j = emit(c, (struct inst){I_JMP, 0, 0, 0});
            if (j < 0)
                break;
            jumps[n_jumps++] = j;
            c->re->insts[split].y = (uint32_t)c->re->n_insts;
        }
        for (size_t i = 0; i < n_jumps && !c->err; i++)
            c->re->insts[jumps[i]].x = (uint32_t)c->re->n_insts;
        fatia_free(jumps);
        break;
    }
    case R_REPEAT: {
        const struct rnode *kid = n->kids[0];
        int min = n->min, max = n->max;
        size_t *splits, n_splits = 0;
        for (int i = 0; i < min && !c->err; i++)
            compile_node(c, kid);
        if (max < 0) {
            /* x{n,} = n copies then x* */
            compile_star(c, kid);
            break;
        }
        if (max == min)
            break;
        /* x{n,m}: n copies, then m-n optional copies; every optional copy's split skips to the
         * end, since once one copy is skipped the later ones cannot match either */
        splits = fatia_reallocarray(NULL, (size_t)(max - min), sizeof(*splits));
        if (!splits) {
            c->err = -ENOMEM;
            return;
        }
        for (int i = min; i < max && !c->err; i++) {
            size_t split = 0;
            compile_quest(c, kid, &split);
            if (!c->err)
                splits[n_splits++] = split;
        }
        for (size_t i = 0; i < n_splits && !c->err; i++)
            c->re->insts[splits[i]].y = (uint32_t)c->re->n_insts;
        fatia_free(splits);
        break;
    }
    }
}

/* ---- public ---- */

static void free_nodes(struct parser *p)
{
    for (size_t i = 0; i < p->n_all; i++) {
        fatia_free(p->all[i]->ranges);
        fatia_free(p->all[i]->kids);
        fatia_free(p->all[i]);
    }
    fatia_free(p->all);
}

int fatia_cel_regex_compile(const char *pattern, size_t pattern_n, struct fatia_cel_regex **ret,
                            char *why, size_t why_n)
{
    struct parser p = {.s = pattern, .n = pattern_n, .why = why, .why_n = why_n};
    struct compiler c = {0};
    struct rnode *root;
    int r;

    root = parse_alt(&p);
    if (root && !at_end(&p))
        fail(&p, "unexpected )", 0, p.n);
    if (p.err) {
        r = p.err;
        goto out_free_nodes;
    }
    c.re = fatia_calloc(1, sizeof(*c.re));
    if (!c.re) {
        r = -ENOMEM;
        goto out_free_nodes;
    }
    compile_node(&c, root);
    emit(&c, (struct inst){I_MATCH, 0, 0, 0});
    if (c.err) {
        r = c.err;
        if (r == -E2BIG) {
            p.err = 0;
            r = fail(&p, "expression too large", 0, p.n);
        }
        fatia_cel_regex_free(c.re);
        goto out_free_nodes;
    }
    *ret = c.re;
    r = 0;
out_free_nodes:
    free_nodes(&p);
    return r;
}

size_t fatia_cel_regex_size(const struct fatia_cel_regex *re)
{
    return re->n_insts;
}

void fatia_cel_regex_free(struct fatia_cel_regex *re)
{
    if (!re)
        return;
    for (size_t i = 0; i < re->n_classes; i++)
        fatia_free(re->classes[i].ranges);
    fatia_free(re->classes);
    fatia_free(re->insts);
    fatia_free(re);
}

/* ---- matching ---- */

static bool is_word(uint32_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool fold_eq(uint32_t pat, uint32_t c)
{
    uint32_t lp = (pat >= 'A' && pat <= 'Z') ? pat + 32 : pat;
    uint32_t lc = (c >= 'A' && c <= 'Z') ? c + 32 : c;

    if (lp == lc)
        return true;
    return (lp == 'k' && c == 0x212A) || (lp == 's' && c == 0x017F);
}

static bool class_has(const struct rclass *cl, uint32_t c)
{
    bool in = false;

    for (size_t i = 0; i < cl->n && !in; i++)
        in = c >= cl->ranges[i].lo && c <= cl->ranges[i].hi;
    return in != cl->neg;
}

/* prev / cur: runes before and at the position (UINT32_MAX = text boundary). */
static bool assert_ok(uint8_t kind, uint32_t prev, uint32_t cur)
{
    switch (kind) {
    case A_BOT:
        return prev == UINT32_MAX;
    case A_EOT:
        return cur == UINT32_MAX;
    case A_BOL:
        return prev == UINT32_MAX || prev == '\n';
    case A_EOL:
        return cur == UINT32_MAX || cur == '\n';
    case A_WORDB:
    case A_NWORDB: {
        bool a = prev != UINT32_MAX && is_word(prev), b = cur != UINT32_MAX && is_word(cur);
        return (a != b) == (kind == A_WORDB);
    }
    }
    return false;
}

struct tlist {
    uint32_t *pcs;
    size_t n;
};

/* Adds pc and everything reachable from it by empty transitions to l. mark[pc] == gen means
 * already in this step's list. Explicit stack: chains of splits can be thousands long. */
static bool add_thread(const struct fatia_cel_regex *re, struct tlist *l, uint32_t *mark,
                       uint32_t gen, uint32_t *stack, uint32_t pc, uint32_t prev, uint32_t cur)
{
    size_t sp = 0;

    stack[sp++] = pc;
    while (sp) {
        const struct inst *in;
        pc = stack[--sp];
        if (mark[pc] == gen)
            continue;
        mark[pc] = gen;
        in = &re->insts[pc];
        switch (in->op) {
        case I_JMP:
            stack[sp++] = in->x;
            break;
        case I_SPLIT:
            stack[sp++] = in->y;
            stack[sp++] = in->x;
            break;
        case I_ASSERT:
            if (assert_ok(in->arg, prev, cur))
                stack[sp++] = pc + 1;
            break;
        case I_MATCH:
            return true;
        default:
            l->pcs[l->n++] = pc;
            break;
        }
    }
    return false;
}

int fatia_cel_regex_search(const struct fatia_cel_regex *re, const char *text, size_t text_n,
                           bool *ret_match)
{
    size_t n = re->n_insts, pos = 0, len = 0;
    uint32_t *buf = fatia_calloc(n * 5 + 2, sizeof(uint32_t));
    struct tlist cur, next;
    uint32_t *mark, *stack, gen = 1, prev = UINT32_MAX, c;
    bool matched = false;

    if (!buf)
        return -ENOMEM;
    cur.pcs = buf;
    next.pcs = buf + n;
    mark = buf + 2 * n;
    stack = buf + 3 * n; /* each pc is pushed at most twice per closure */
    cur.n = next.n = 0;
    for (;;) {
        c = pos < text_n ? decode(text + pos, text_n - pos, &len) : UINT32_MAX;
        /* unanchored: a new thread starts at every position */
        if (add_thread(re, &cur, mark, gen, stack, 0, prev, c)) {
            matched = true;
            break;
        }
        if (c == UINT32_MAX)
            break;
        gen++;
        next.n = 0;
        {
            uint32_t c2;
            size_t len2 = 0;
            c2 = pos + len < text_n ? decode(text + pos + len, text_n - pos - len, &len2)
                                    : UINT32_MAX;
            for (size_t i = 0; i < cur.n && !matched; i++) {
                const struct inst *in = &re->insts[cur.pcs[i]];
                bool ok = false;
                switch (in->op) {
                case I_CHAR:
                    ok = in->arg ? fold_eq(in->x, c) : in->x == c;
                    break;
                case I_ANY:
                    ok = c != '\n';
                    break;
                case I_ANYNL:
                    ok = true;
                    break;
                case I_CLASS:
                    ok = class_has(&re->classes[in->x], c);
                    break;
                }
                if (ok && add_thread(re, &next, mark, gen, stack, cur.pcs[i] + 1, c, c2))
                    matched = true;
            }
        }
        if (matched)
            break;
        {
            struct tlist t = cur;
            cur = next;
            next = t;
        }
        prev = c;
        pos += len;
        /* the start thread of the next position is added in the same generation */
    }
    fatia_free(buf);
    *ret_match = matched;
    return 0;
}
