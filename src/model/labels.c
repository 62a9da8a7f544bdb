/*
 * model/labels.c: Kubernetes name and label syntax (see labels.h).
 *
 * Model. Each check is upstream's (k8s.io/apimachinery/pkg/util/validation and, since 1.34,
 * pkg/api/validate/content): a length limit plus one regular expression. The expressions are
 * all of the shape "alnum ([ext-chars]* alnum)?", so one hand-written scanner, token_ok(),
 * decides them: every byte in the allowed set, first and last byte in the edge set. A subdomain
 * is dot-separated tokens. Go's regexp anchors with $ at the very end (no trailing newline), and
 * a byte outside ASCII never matches, which the scanner gives for free.
 *
 * Messages. Upstream returns a list of strings; we join them with "; " (as labels/selector.go
 * does) and condense RegexError: the examples are kept, the regex text is dropped, so that the
 * longest message fits FATIA_WHY_MAX.
 *
 * Invariants: no allocation, no state; why is written only when the check fails; NULL is checked
 * as the empty string.
 *
 * Rejected: linking a regex engine (POSIX regcomp per call, or a cached one with its locking)
 * for five fixed expressions.
 */
#include "base/compat.h"

#include "model/labels.h"

#define MSG_MAX_LEN "must be no more than %d characters"

#define MSG_DNS1123_LABEL                                                                        \
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and " \
    "must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc')"
#define MSG_DNS1123_SUBDOMAIN                                                                    \
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or " \
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com')"
#define MSG_DNS1035_LABEL                                                                        \
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an " \
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name', or 'abc-123')"
#define MSG_QUALIFIED                                                                           \
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc')"
#define MSG_LABEL_VALUE                                                                           \
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "   \
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue', or 'my_value', " \
    "or '12345')"

enum charset {
    CS_LOWER_ALNUM,      /* [a-z0-9] */
    CS_LOWER_ALNUM_DASH, /* [-a-z0-9] */
    CS_LOWER_ALPHA,      /* [a-z] */
    CS_ALNUM,            /* [A-Za-z0-9] */
    CS_ALNUM_EXT,        /* [-A-Za-z0-9_.] */
};

static bool in_set(char c, enum charset cs)
{
    bool lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
    bool upper = c >= 'A' && c <= 'Z';

    switch (cs) {
    case CS_LOWER_ALNUM:
        return lower || digit;
    case CS_LOWER_ALNUM_DASH:
        return lower || digit || c == '-';
    case CS_LOWER_ALPHA:
        return lower;
    case CS_ALNUM:
        return lower || upper || digit;
    case CS_ALNUM_EXT:
        return lower || upper || digit || c == '-' || c == '_' || c == '.';
    }
    return false;
}

/* ^first (mid* last)?$ over s[0..n): first char in `first`, last in `last`, all in `mid`. */
static bool token_ok(const char *s, size_t n, enum charset first, enum charset mid,
                     enum charset last)
{
    if (n == 0 || !in_set(s[0], first) || !in_set(s[n - 1], last))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!in_set(s[i], mid))
            return false;
    return true;
}

static bool dns1123_label_ok(const char *s, size_t n)
{
    return token_ok(s, n, CS_LOWER_ALNUM, CS_LOWER_ALNUM_DASH, CS_LOWER_ALNUM);
}

/* dns1123LabelFmt ( \. dns1123LabelFmt )*, no length limit of its own. */
static bool dns1123_subdomain_ok(const char *s, size_t n)
{
    size_t start = 0;

    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!dns1123_label_ok(s + start, i - start))
                return false;
            start = i + 1;
        }
    }
    return true;
}

/* The list of messages of one check, joined with "; ". */
struct why {
    char *buf;
    size_t n;
    size_t len;
};

static void why_add(struct why *w, const char *fmt, ...) FATIA_PRINTF(2, 3);

static void why_add(struct why *w, const char *fmt, ...)
{
    va_list ap;
    int r;

    if (!w->buf || w->n == 0 || w->len + 1 >= w->n)
        return;
    if (w->len > 0) {
        r = snprintf(w->buf + w->len, w->n - w->len, "; ");
        w->len = FATIA_MIN(w->len + (size_t)(r < 0 ? 0 : r), w->n - 1);
    }
    va_start(ap, fmt);
    r = vsnprintf(w->buf + w->len, w->n - w->len, fmt, ap);
    va_end(ap);
    w->len = FATIA_MIN(w->len + (size_t)(r < 0 ? 0 : r), w->n - 1);
}

static struct why why_init(char *buf, size_t n)
{
    if (buf && n)
        buf[0] = '\0';
    return (struct why){buf, n, 0};
}

/* Each check below runs twice on failure: silently to decide, then to write the messages, so
 * that why stays untouched on success. */
typedef bool (*check_fn)(const char *s, size_t n, struct why *w);

static bool run_check(check_fn check, const char *s, char *why, size_t why_n)
{
    struct why quiet = {NULL, 0, 0}, w;
    size_t n;

    s = s ? s : "";
    n = strlen(s);
    if (check(s, n, &quiet))
        return true;
    w = why_init(why, why_n);
    return check(s, n, &w);
}

static bool label_check(const char *s, size_t n, struct why *w)
{
    bool ok = true;

    if (n > 63) {
        why_add(w, MSG_MAX_LEN, 63);
        ok = false;
    }
    if (!dns1123_label_ok(s, n)) {
        /* a valid subdomain that is no valid label: it must be the dots */
        if (dns1123_subdomain_ok(s, n))
            why_add(w, "must not contain dots");
        else
            why_add(w, "%s", MSG_DNS1123_LABEL);
        ok = false;
    }
    return ok;
}

bool fatia_is_dns1123_label(const char *s, char *why, size_t why_n)
{
    return run_check(label_check, s, why, why_n);
}

/* Appends the subdomain messages, each after prefix. */
static bool subdomain_check_prefixed(const char *s, size_t n, const char *prefix, struct why *w)
{
    bool ok = true;

    if (n > 253) {
        why_add(w, "%s" MSG_MAX_LEN, prefix, 253);
        ok = false;
    }
    if (!dns1123_subdomain_ok(s, n)) {
        why_add(w, "%s%s", prefix, MSG_DNS1123_SUBDOMAIN);
        ok = false;
    }
    return ok;
}

static bool subdomain_check(const char *s, size_t n, struct why *w)
{
    return subdomain_check_prefixed(s, n, "", w);
}

bool fatia_is_dns1123_subdomain(const char *s, char *why, size_t why_n)
{
    return run_check(subdomain_check, s, why, why_n);
}

static bool dns1035_check(const char *s, size_t n, struct why *w)
{
    bool ok = true;

    if (n > 63) {
        why_add(w, MSG_MAX_LEN, 63);
        ok = false;
    }
    if (!token_ok(s, n, CS_LOWER_ALPHA, CS_LOWER_ALNUM_DASH, CS_LOWER_ALNUM)) {
        why_add(w, "%s", MSG_DNS1035_LABEL);
        ok = false;
    }
    return ok;
}

bool fatia_is_dns1035_label(const char *s, char *why, size_t why_n)
{
    return run_check(dns1035_check, s, why, why_n);
}

/* IsQualifiedName (content.IsLabelKey): [prefix/]name. */
static bool qualified_check(const char *s, size_t n, struct why *w)
{
    const char *slash = memchr(s, '/', n), *name = s;
    size_t name_n = n;
    bool ok = true;

    if (slash && memchr(slash + 1, '/', n - (size_t)(slash + 1 - s))) {
        why_add(w,
                "a qualified name %s with an optional DNS subdomain prefix and '/' (e.g. "
                "'example.com/MyName')",
                MSG_QUALIFIED);
        return false;
    }
    if (slash) {
        size_t prefix_n = (size_t)(slash - s);

        if (prefix_n == 0) {
            why_add(w, "prefix part must be non-empty");
            ok = false;
        } else if (!subdomain_check_prefixed(s, prefix_n, "prefix part ", w)) {
            ok = false;
        }
        name = slash + 1;
        name_n = n - prefix_n - 1;
    }
    if (name_n == 0) {
        why_add(w, "name part must be non-empty");
        ok = false;
    } else if (name_n > 63) {
        why_add(w, "name part " MSG_MAX_LEN, 63);
        ok = false;
    }
    if (!token_ok(name, name_n, CS_ALNUM, CS_ALNUM_EXT, CS_ALNUM)) {
        why_add(w, "name part %s", MSG_QUALIFIED);
        ok = false;
    }
    return ok;
}

bool fatia_is_qualified_name(const char *s, char *why, size_t why_n)
{
    return run_check(qualified_check, s, why, why_n);
}

/* IsValidLabelValue (content.IsLabelValue): empty, or a qualified name's name part. */
static bool label_value_check(const char *s, size_t n, struct why *w)
{
    bool ok = true;

    if (n > 63) {
        why_add(w, MSG_MAX_LEN, 63);
        ok = false;
    }
    if (n > 0 && !token_ok(s, n, CS_ALNUM, CS_ALNUM_EXT, CS_ALNUM)) {
        why_add(w, "%s", MSG_LABEL_VALUE);
        ok = false;
    }
    return ok;
}

bool fatia_is_label_value(const char *s, char *why, size_t why_n)
{
    return run_check(label_value_check, s, why, why_n);
}

/* Upstream's validateResourceName also wants an unprefixed name to be a standard one (cpu,
 * memory, hugepages-2Mi, ...); fatia leaves that to the kinds that know their resources. */
bool fatia_is_resource_name(const char *s, char *why, size_t why_n)
{
    return run_check(qualified_check, s, why, why_n);
}
