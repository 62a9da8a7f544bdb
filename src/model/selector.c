/*
 * model/selector.c: label selectors (see selector.h).
 *
 * Model. Both inputs compile to one flat list of requirements that are ANDed, sorted by key as
 * upstream's internalSelector.Add sorts them. Matching is upstream's Requirement.Matches: In and
 * "=" need the key present with a listed value; NotIn and "!=" also match when the key is
 * absent; Exists / DoesNotExist test presence only.
 *
 * The string form is parsed the way k8s.io/apimachinery/pkg/labels/selector.go parses it: a
 * lexer (whitespace is ' ', '\t', '\r', '\n'; the special symbols = ! ( ) , > < combine greedily
 * into the longest operator; every other run of bytes is an identifier, "in" and "notin" being
 * keywords) and a recursive-descent parser with one token of lookahead, in which "in"/"notin"
 * read as plain identifiers wherever a value is expected ("x in (in)"). The quirks are kept:
 * "x=" and "x in ()" mean the empty value, "(a,,b)" holds "", values form a sorted set. Error
 * texts are upstream's ("found ',', expected: identifier after ','"), requirement errors
 * prefixed "unable to parse requirement: ".
 *
 * The JSON form is metav1.LabelSelector as LabelSelectorAsSelector compiles it (matchLabels
 * become "=" requirements) with the checks of metav1 validation.ValidateLabelSelector.
 *
 * Invariants: a compiled selector owns every string it points to; n_values >= 1 for In, NotIn,
 * = and !=, 0 for Exists and DoesNotExist; every key is a qualified name and every value a label
 * value. The parser does not allocate until a requirement is complete, and a failure frees
 * everything built so far.
 *
 * Rejected alternatives: scanning all tokens into an array first as upstream does (the parser
 * only ever looks one token ahead, so a peek slot is enough); the Gt/Lt operators of
 * labels.Parse (">", "<"), which no API object's LabelSelector can express and fatia's enum
 * does not have: they fail like any other unexpected operator.
 */
#include "base/compat.h"

#include "model/selector.h"

#include <errno.h>

#include "base/alloc.h"
#include "base/vec.h"
#include "model/labels.h"

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

/* ---- compiled form ---- */

static void req_release(struct fatia_sel_req *r)
{
    fatia_free(r->key);
    for (size_t i = 0; i < r->n_values; i++)
        fatia_free(r->values[i]);
    fatia_free(r->values);
    memset(r, 0, sizeof(*r));
}

void fatia_selector_free(struct fatia_selector *sel)
{
    if (!sel)
        return;
    for (size_t i = 0; i < sel->n_reqs; i++)
        req_release(&sel->reqs[i]);
    fatia_free(sel->reqs);
    fatia_free(sel);
}

struct builder {
    struct fatia_selector *sel;
    size_t cap;
};

static int builder_init(struct builder *b)
{
    b->cap = 0;
    b->sel = fatia_calloc(1, sizeof(*b->sel));
    return b->sel ? 0 : -ENOMEM;
}

/* Appends r, taking its strings; on -ENOMEM r is released. */
static int builder_push(struct builder *b, struct fatia_sel_req *r)
{
    struct fatia_selector *sel = b->sel;

    if (sel->n_reqs == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4;
        struct fatia_sel_req *v = fatia_reallocarray(sel->reqs, cap, sizeof(*v));

        if (!v) {
            req_release(r);
            return -ENOMEM;
        }
        sel->reqs = v;
        b->cap = cap;
    }
    sel->reqs[sel->n_reqs++] = *r;
    memset(r, 0, sizeof(*r));
    return 0;
}

static int req_cmp(const void *a, const void *b)
{
    return strcmp(((const struct fatia_sel_req *)a)->key, ((const struct fatia_sel_req *)b)->key);
}

static void builder_finish(struct builder *b, struct fatia_selector **ret)
{
    if (b->sel->n_reqs > 1)
        qsort(b->sel->reqs, b->sel->n_reqs, sizeof(*b->sel->reqs), req_cmp);
    *ret = b->sel;
    b->sel = NULL;
}

/* ---- matching ---- */

static bool has_value(const struct fatia_sel_req *r, const char *v)
{
    for (size_t i = 0; i < r->n_values; i++)
        if (strcmp(r->values[i], v) == 0)
            return true;
    return false;
}

static bool req_matches(const struct fatia_sel_req *r, const json_t *labels)
{
    const json_t *jv = labels ? json_object_get(labels, r->key) : NULL;
    const char *v = json_is_string(jv) ? json_string_value(jv) : NULL;

    switch (r->op) {
    case FATIA_SEL_IN:
    case FATIA_SEL_EQUALS:
        return v && has_value(r, v);
    case FATIA_SEL_NOT_IN:
    case FATIA_SEL_NOT_EQUALS:
        return !v || !has_value(r, v);
    case FATIA_SEL_EXISTS:
        return v != NULL;
    case FATIA_SEL_DOES_NOT_EXIST:
        return v == NULL;
    }
    return false;
}

bool fatia_selector_matches(const struct fatia_selector *sel, const json_t *labels)
{
    if (!sel)
        return false;
    if (labels && !json_is_object(labels))
        labels = NULL;
    for (size_t i = 0; i < sel->n_reqs; i++)
        if (!req_matches(&sel->reqs[i], labels))
            return false;
    return true;
}

bool fatia_selector_is_empty(const struct fatia_selector *sel)
{
    return sel && sel->n_reqs == 0;
}

/* ---- JSON form ---- */

static const struct {
    const char *name;
    enum fatia_sel_op op;
} json_ops[] = {
    {"In", FATIA_SEL_IN},
    {"NotIn", FATIA_SEL_NOT_IN},
    {"Exists", FATIA_SEL_EXISTS},
    {"DoesNotExist", FATIA_SEL_DOES_NOT_EXIST},
};

static int check_key(const char *key, const char *path, char *why, size_t why_n)
{
    char msg[FATIA_WHY_MAX];

    if (fatia_is_qualified_name(key, msg, sizeof(msg)))
        return 0;
    set_why(why, why_n, "%s: invalid value \"%s\": %s", path, key, msg);
    return -EINVAL;
}

static int check_value(const char *v, const char *path, char *why, size_t why_n)
{
    char msg[FATIA_WHY_MAX];

    if (fatia_is_label_value(v, msg, sizeof(msg)))
        return 0;
    set_why(why, why_n, "%s: invalid value \"%s\": %s", path, v, msg);
    return -EINVAL;
}

static int match_labels(struct builder *b, const json_t *ml, char *why, size_t why_n)
{
    const char *k;
    const json_t *jv;
    char path[64];

    if (!ml || json_is_null(ml))
        return 0;
    if (!json_is_object(ml)) {
        set_why(why, why_n, "matchLabels: must be an object");
        return -EINVAL;
    }
    json_object_foreach((json_t *)ml, k, jv)
    {
        struct fatia_sel_req r = {.op = FATIA_SEL_EQUALS};
        int ret;

        if (check_key(k, "matchLabels", why, why_n) < 0)
            return -EINVAL;
        snprintf(path, sizeof(path), "matchLabels[%.40s]", k);
        if (!json_is_string(jv)) {
            set_why(why, why_n, "%s: must be a string", path);
            return -EINVAL;
        }
        if (check_value(json_string_value(jv), path, why, why_n) < 0)
            return -EINVAL;
        r.key = fatia_strdup(k);
        r.values = fatia_calloc(1, sizeof(*r.values));
        if (r.values)
            r.values[0] = fatia_strdup(json_string_value(jv));
        if (!r.key || !r.values || !r.values[0]) {
            r.n_values = r.values ? 1 : 0;
            req_release(&r);
            return -ENOMEM;
        }
        r.n_values = 1;
        ret = builder_push(b, &r);
        if (ret < 0)
            return ret;
    }
    return 0;
}

static int match_expression(struct builder *b, const json_t *e, size_t idx, char *why, size_t why_n)
{
    const json_t *jkey = json_object_get(e, "key"), *jop = json_object_get(e, "operator");
    const json_t *jvals = json_object_get(e, "values");
    struct fatia_sel_req r = {0};
    size_t n_vals, i, op;
    char path[48], vpath[96];

    snprintf(path, sizeof(path), "matchExpressions[%zu]", idx);
    if (!json_is_object(e)) {
        set_why(why, why_n, "%s: must be an object", path);
        return -EINVAL;
    }
    if (!json_is_string(jkey)) {
        set_why(why, why_n, "%s.key: %s", path, jkey ? "must be a string" : "Required value");
        return -EINVAL;
    }
    snprintf(vpath, sizeof(vpath), "%s.key", path);
    if (check_key(json_string_value(jkey), vpath, why, why_n) < 0)
        return -EINVAL;
    if (!json_is_string(jop)) {
        set_why(why, why_n, "%s.operator: %s", path, jop ? "must be a string" : "Required value");
        return -EINVAL;
    }
    for (op = 0; op < FATIA_ARRAY_SIZE(json_ops); op++)
        if (strcmp(json_string_value(jop), json_ops[op].name) == 0)
            break;
    if (op == FATIA_ARRAY_SIZE(json_ops)) {
        set_why(why, why_n, "%s.operator: \"%s\" is not a valid label selector operator", path,
                json_string_value(jop));
        return -EINVAL;
    }
    if (jvals && !json_is_null(jvals) && !json_is_array(jvals)) {
        set_why(why, why_n, "%s.values: must be an array of strings", path);
        return -EINVAL;
    }
    n_vals = json_array_size(jvals);
    if ((json_ops[op].op == FATIA_SEL_IN || json_ops[op].op == FATIA_SEL_NOT_IN) && n_vals == 0) {
        set_why(why, why_n, "%s.values: must be specified when `operator` is 'In' or 'NotIn'",
                path);
        return -EINVAL;
    }
    if ((json_ops[op].op == FATIA_SEL_EXISTS || json_ops[op].op == FATIA_SEL_DOES_NOT_EXIST) &&
        n_vals > 0) {
        set_why(why, why_n,
                "%s.values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                path);
        return -EINVAL;
    }
    for (i = 0; i < n_vals; i++) {
        const json_t *jv = json_array_get(jvals, i);

        snprintf(vpath, sizeof(vpath), "%s.values[%zu]", path, i);
        if (!json_is_string(jv)) {
            set_why(why, why_n, "%s: must be a string", vpath);
            return -EINVAL;
        }
        if (check_value(json_string_value(jv), vpath, why, why_n) < 0)
            return -EINVAL;
    }
    r.op = json_ops[op].op;
    r.key = fatia_strdup(json_string_value(jkey));
    if (!r.key)
        return -ENOMEM;
    if (n_vals) {
        r.values = fatia_calloc(n_vals, sizeof(*r.values));
        if (!r.values)
            goto out_nomem;
        for (i = 0; i < n_vals; i++, r.n_values++) {
            r.values[i] = fatia_strdup(json_string_value(json_array_get(jvals, i)));
            if (!r.values[i])
                goto out_nomem;
        }
    }
    return builder_push(b, &r);

out_nomem:
    req_release(&r);
    return -ENOMEM;
}

int fatia_selector_from_json(const json_t *sel, struct fatia_selector **ret, char *why,
                             size_t why_n)
{
    const json_t *exprs;
    struct builder b;
    int r;

    if (!json_is_object(sel)) {
        set_why(why, why_n, "must be an object");
        return -EINVAL;
    }
    exprs = json_object_get(sel, "matchExpressions");
    if (exprs && !json_is_null(exprs) && !json_is_array(exprs)) {
        set_why(why, why_n, "matchExpressions: must be an array");
        return -EINVAL;
    }
    r = builder_init(&b);
    if (r < 0) {
        set_why(why, why_n, "out of memory");
        return r;
    }
    r = match_labels(&b, json_object_get(sel, "matchLabels"), why, why_n);
    for (size_t i = 0; r == 0 && i < json_array_size(exprs); i++)
        r = match_expression(&b, json_array_get(exprs, i), i, why, why_n);
    if (r < 0) {
        if (r == -ENOMEM)
            set_why(why, why_n, "out of memory");
        fatia_selector_free(b.sel);
        return r;
    }
    builder_finish(&b, ret);
    return 0;
}

/* ---- string form: lexer ---- */

enum tk {
    TK_EOS,
    TK_CLOSED_PAR,
    TK_COMMA,
    TK_NOT,
    TK_DOUBLE_EQ,
    TK_EQ,
    TK_GT,
    TK_IDENT,
    TK_IN,
    TK_LT,
    TK_NOT_EQ,
    TK_NOT_IN,
    TK_OPEN_PAR,
};

struct tok {
    enum tk kind;
    const char *p; /* the literal: a slice of the input */
    size_t n;
};

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
    return c && strchr("=!(),><", c) != NULL;
}

/* string2token for the special symbols; TK_EOS when s[0..n) is none. */
static enum tk special_token(const char *s, size_t n)
{
    static const struct {
        const char *lit;
        enum tk kind;
    } ops[] = {
        {")", TK_CLOSED_PAR}, {",", TK_COMMA},   {"!", TK_NOT},
        {"==", TK_DOUBLE_EQ}, {"=", TK_EQ},      {">", TK_GT},
        {"<", TK_LT},         {"!=", TK_NOT_EQ}, {"(", TK_OPEN_PAR},
    };

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(ops); i++)
        if (strlen(ops[i].lit) == n && memcmp(ops[i].lit, s, n) == 0)
            return ops[i].kind;
    return TK_EOS;
}

struct parser {
    const char *s;
    size_t pos;
    struct tok peeked;
    bool has_peek;
    char *why;
    size_t why_n;
};

static struct tok lex(struct parser *p)
{
    const char *s = p->s;
    size_t start;
    struct tok t = {TK_EOS, s + p->pos, 0};

    while (is_ws(s[p->pos]))
        p->pos++;
    start = p->pos;
    t.p = s + start;
    if (!s[start])
        return t;
    if (is_special(s[start])) {
        /* scanSpecialSymbol: extend while the longer text is still a token */
        size_t n = 1;

        t.kind = special_token(s + start, 1);
        while (is_special(s[start + n]) && special_token(s + start, n + 1) != TK_EOS) {
            n++;
            t.kind = special_token(s + start, n);
        }
        t.n = n;
        p->pos += n;
        return t;
    }
    while (s[p->pos] && !is_special(s[p->pos]) && !is_ws(s[p->pos]))
        p->pos++;
    t.n = p->pos - start;
    if (t.n == 2 && memcmp(t.p, "in", 2) == 0)
        t.kind = TK_IN;
    else if (t.n == 5 && memcmp(t.p, "notin", 5) == 0)
        t.kind = TK_NOT_IN;
    else
        t.kind = TK_IDENT;
    return t;
}

enum ctx {
    CTX_KEY_AND_OPERATOR,
    CTX_VALUES
};

static struct tok peek(struct parser *p, enum ctx ctx)
{
    struct tok t;

    if (!p->has_peek) {
        p->peeked = lex(p);
        p->has_peek = true;
    }
    t = p->peeked;
    if (ctx == CTX_VALUES && (t.kind == TK_IN || t.kind == TK_NOT_IN))
        t.kind = TK_IDENT;
    return t;
}

static struct tok consume(struct parser *p, enum ctx ctx)
{
    struct tok t = peek(p, ctx);

    p->has_peek = false;
    return t;
}

/* A syntax error naming the literal found. Returns -EINVAL. */
static int syntax(struct parser *p, bool in_req, struct tok t, const char *expected)
{
    set_why(p->why, p->why_n, "%sfound '%.*s', expected: %s",
            in_req ? "unable to parse requirement: " : "", (int)FATIA_MIN(t.n, 64), t.p, expected);
    return -EINVAL;
}

/* ---- string form: parser ---- */

typedef FATIA_VEC(char *) strvec;

static void strvec_release(strvec *v)
{
    for (size_t i = 0; i < v->n; i++)
        fatia_free(v->v[i]);
    FATIA_VEC_RELEASE(v);
}

/* Adds a copy of p[0..n) to the value list (made a set by values_finish). 0 or -ENOMEM. */
static int set_insert(strvec *v, const char *p, size_t n)
{
    char *dup = fatia_strndup(p, n);

    if (!dup)
        return -ENOMEM;
    if (FATIA_VEC_PUSH(v, dup) < 0) {
        fatia_free(dup);
        return -ENOMEM;
    }
    return 0;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* sets.String.List(): sorted, without duplicates. Sorting first keeps "x in (a,a,a,...)" from
 * costing quadratic time. */
static void values_finish(strvec *v)
{
    size_t out = 0;

    if (v->n < 2)
        return;
    qsort(v->v, v->n, sizeof(*v->v), str_cmp);
    for (size_t i = 0; i < v->n; i++) {
        if (out > 0 && strcmp(v->v[out - 1], v->v[i]) == 0)
            fatia_free(v->v[i]);
        else
            v->v[out++] = v->v[i];
    }
    v->n = out;
}

/* parseIdentifiersList: a possibly empty list of possibly empty identifiers, up to ')'. */
static int parse_identifiers(struct parser *p, strvec *vals)
{
    for (;;) {
        struct tok t = consume(p, CTX_VALUES), t2;
        int r;

        switch (t.kind) {
        case TK_IDENT:
            r = set_insert(vals, t.p, t.n);
            if (r < 0)
                return r;
            t2 = peek(p, CTX_VALUES);
            if (t2.kind == TK_COMMA)
                continue;
            if (t2.kind == TK_CLOSED_PAR)
                return 0;
            return syntax(p, true, t2, "',' or ')'");
        case TK_COMMA: /* "(," ",," ",)" all hold the empty value */
            if (vals->n == 0 && (r = set_insert(vals, "", 0)) < 0)
                return r;
            t2 = peek(p, CTX_VALUES);
            if (t2.kind == TK_CLOSED_PAR)
                return set_insert(vals, "", 0);
            if (t2.kind == TK_COMMA) {
                consume(p, CTX_VALUES);
                if ((r = set_insert(vals, "", 0)) < 0)
                    return r;
            }
            break;
        default:
            return syntax(p, true, t, "',', or identifier");
        }
    }
}

/* parseValues: "(" list ")". */
static int parse_values(struct parser *p, strvec *vals)
{
    struct tok t = consume(p, CTX_VALUES);
    int r;

    if (t.kind != TK_OPEN_PAR) {
        set_why(p->why, p->why_n, "unable to parse requirement: found '%.*s' expected: '('",
                (int)FATIA_MIN(t.n, 64), t.p);
        return -EINVAL;
    }
    t = peek(p, CTX_VALUES);
    switch (t.kind) {
    case TK_IDENT:
    case TK_COMMA:
        r = parse_identifiers(p, vals);
        if (r < 0)
            return r;
        if (consume(p, CTX_VALUES).kind != TK_CLOSED_PAR) /* upstream names the first token */
            return syntax(p, true, t, "')'");
        return 0;
    case TK_CLOSED_PAR: /* "()" */
        consume(p, CTX_VALUES);
        return set_insert(vals, "", 0);
    default:
        return syntax(p, true, t, "',', ')' or identifier");
    }
}

/* parseExactValue: one identifier, or nothing before ',' / the end (the empty value). */
static int parse_exact_value(struct parser *p, strvec *vals)
{
    struct tok t = peek(p, CTX_VALUES);

    if (t.kind == TK_EOS || t.kind == TK_COMMA)
        return set_insert(vals, "", 0);
    t = consume(p, CTX_VALUES);
    if (t.kind == TK_IDENT)
        return set_insert(vals, t.p, t.n);
    return syntax(p, true, t, "identifier");
}

static int parse_requirement(struct parser *p, struct builder *b)
{
    struct fatia_sel_req r = {.op = FATIA_SEL_EXISTS};
    struct tok t = consume(p, CTX_VALUES);
    strvec vals = {0};
    char msg[FATIA_WHY_MAX];
    int ret;

    /* parseKeyAndInferOperator */
    if (t.kind == TK_NOT) {
        r.op = FATIA_SEL_DOES_NOT_EXIST;
        t = consume(p, CTX_VALUES);
    }
    if (t.kind != TK_IDENT)
        return syntax(p, true, t, "identifier");
    r.key = fatia_strndup(t.p, t.n);
    if (!r.key)
        return -ENOMEM;
    if (!fatia_is_qualified_name(r.key, msg, sizeof(msg))) {
        set_why(p->why, p->why_n, "unable to parse requirement: invalid value \"%.64s\": %s", r.key,
                msg);
        ret = -EINVAL;
        goto out_release;
    }
    t = peek(p, CTX_VALUES);
    if (r.op != FATIA_SEL_DOES_NOT_EXIST && t.kind != TK_EOS && t.kind != TK_COMMA) {
        /* parseOperator */
        t = consume(p, CTX_KEY_AND_OPERATOR);
        switch (t.kind) {
        case TK_IN:
            r.op = FATIA_SEL_IN;
            ret = parse_values(p, &vals);
            break;
        case TK_NOT_IN:
            r.op = FATIA_SEL_NOT_IN;
            ret = parse_values(p, &vals);
            break;
        case TK_EQ:
        case TK_DOUBLE_EQ:
            r.op = FATIA_SEL_EQUALS;
            ret = parse_exact_value(p, &vals);
            break;
        case TK_NOT_EQ:
            r.op = FATIA_SEL_NOT_EQUALS;
            ret = parse_exact_value(p, &vals);
            break;
        default:
            ret = syntax(p, true, t, "in, notin, =, ==, !=");
            break;
        }
        if (ret < 0)
            goto out_release;
    }
    /* NewRequirement: the values must be label values */
    values_finish(&vals);
    for (size_t i = 0; i < vals.n; i++) {
        if (!fatia_is_label_value(vals.v[i], msg, sizeof(msg))) {
            set_why(p->why, p->why_n,
                    "unable to parse requirement: values[%zu][%.64s]: invalid value \"%.64s\": "
                    "%s",
                    i, r.key, vals.v[i], msg);
            ret = -EINVAL;
            goto out_release;
        }
    }
    r.values = vals.v;
    r.n_values = vals.n;
    return builder_push(b, &r);

out_release:
    strvec_release(&vals);
    req_release(&r);
    return ret;
}

int fatia_selector_parse(const char *s, struct fatia_selector **ret, char *why, size_t why_n)
{
    struct parser p = {.s = s ? s : "", .why = why, .why_n = why_n};
    struct builder b;
    int r;

    r = builder_init(&b);
    if (r < 0) {
        set_why(why, why_n, "out of memory");
        return r;
    }
    for (;;) {
        struct tok t = peek(&p, CTX_VALUES);

        if (t.kind == TK_EOS)
            break;
        if (t.kind != TK_IDENT && t.kind != TK_NOT) {
            r = syntax(&p, false, t, "!, identifier, or 'end of string'");
            goto out_free;
        }
        r = parse_requirement(&p, &b);
        if (r < 0)
            goto out_free;
        t = consume(&p, CTX_VALUES);
        if (t.kind == TK_EOS)
            break;
        if (t.kind != TK_COMMA) {
            r = syntax(&p, false, t, "',' or 'end of string'");
            goto out_free;
        }
        t = peek(&p, CTX_VALUES);
        if (t.kind != TK_IDENT && t.kind != TK_NOT) {
            set_why(why, why_n, "found '%.*s', expected: identifier after ','",
                    (int)FATIA_MIN(t.n, 64), t.p);
            r = -EINVAL;
            goto out_free;
        }
    }
    builder_finish(&b, ret);
    return 0;

out_free:
    if (r == -ENOMEM)
        set_why(why, why_n, "out of memory");
    fatia_selector_free(b.sel);
    return r;
}
