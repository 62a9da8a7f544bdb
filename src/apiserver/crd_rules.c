/*
 * apiserver/crd_rules.c: the checks of a CRD's schema beyond the model's walker: `pattern` (RE2
 * syntax, cel_regex.h, as Go's regexp reads the ECMA patterns of CRDs), the string formats
 * kube-openapi checks (uuid, date, hostname, ipv4, ipv6, cidr, mac, byte, email, duration here;
 * uri, isbn, creditcard, ssn, hexcolor, rgbcolor in crd_formats.c; the others pass, as there),
 * the value validations of anyOf/allOf/oneOf/not (crd_junctors.c), exclusiveMinimum/Maximum, the bounds of numbers, multipleOf, and the
 * CEL rules of
 * x-kubernetes-validations (self, oldSelf in transition rules, message, messageExpression,
 * reason, fieldPath), with the runtime cost limits of kube-apiserver (1,000,000 per evaluation,
 * 10,000,000 per object).
 *
 * Model: a validating admission plugin of the server's own, for every custom kind, runs after
 * the schema walk accepted the object (upstream too skips the rules of an object that has schema
 * errors). It walks the kind's schema tables and the object together, and the old object beside
 * them where upstream correlates it (object members and map entries by key, list-type=map items
 * by their key; no old value for other list items, so their transition rules do not run).
 * Compiled rules and patterns are cached by their text for the server's life (a CRD's rules
 * compile once; identical rules of several CRDs share a program). A CRD's rules and patterns are
 * compiled when it is written, and one that does not compile refuses the CRD (the path of the
 * rule, as upstream names it).
 *
 * Errors are kube-apiserver's: `spec.replicas: Invalid value: "integer": must be at most 10`
 * (the message, else "failed rule: RULE"), Forbidden / Required value by reason; a pattern:
 * `spec.x: Invalid value: "v": spec.x in body should match '^a+$'`.
 */
#include "base/compat.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <ctype.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "cel/cel.h"
#include "cel/cel_regex.h"
#include "model/crd_kind.h"

#define PER_CALL_COST   UINT64_C(1000000)
#define PER_OBJECT_COST UINT64_C(10000000)
#define MAX_DEPTH       64

struct cached {
    struct fatia_cel_program *prog;
    struct fatia_cel_regex *re;
    bool uses_old_self;
    int err; /* compile error: not run */
    char why[256];
};

/* The cached program of text (kind 'r' rule, 'm' messageExpression, 'p' pattern). */
static struct cached *cached_of(struct fatia_apiserver *s, char kind, const char *text)
{
    struct fatia_buf key = FATIA_BUF_INIT;
    struct cached *c;

    if (!s->crd_cel_init) {
        fatia_strmap_init(&s->crd_cel);
        s->crd_cel_init = true;
    }
    if (fatia_buf_putc(&key, kind) < 0 || fatia_buf_puts(&key, text) < 0) {
        fatia_buf_release(&key);
        return NULL;
    }
    c = fatia_strmap_get(&s->crd_cel, key.p);
    if (c) {
        fatia_buf_release(&key);
        return c;
    }
    c = fatia_calloc(1, sizeof(*c));
    if (!c) {
        fatia_buf_release(&key);
        return NULL;
    }
    if (kind == 'p')
        c->err = fatia_cel_regex_compile(text, strlen(text), &c->re, c->why, sizeof(c->why));
    else
        c->err = fatia_cel_compile_rule(text, strlen(text), kind == 'm', &c->prog,
                                        &c->uses_old_self, c->why, sizeof(c->why));
    if (fatia_strmap_put(&s->crd_cel, key.p, c) < 0) {
        fatia_cel_program_free(c->prog);
        fatia_cel_regex_free(c->re);
        fatia_free(c);
        fatia_buf_release(&key);
        return NULL;
    }
    (void)fatia_buf_steal(&key); /* the map's key now */
    return c;
}

void fatia_api_crd_rules_release(struct fatia_apiserver *s)
{
    if (!s->crd_cel_init)
        return;
    for (size_t i = 0; i < s->crd_cel.cap; i++) {
        struct cached *c = s->crd_cel.slots[i].val;
        if (!s->crd_cel.slots[i].key)
            continue;
        fatia_cel_program_free(c->prog);
        fatia_cel_regex_free(c->re);
        fatia_free(c);
        fatia_free((char *)s->crd_cel.slots[i].key);
    }
    fatia_strmap_release(&s->crd_cel);
    s->crd_cel_init = false;
}

/* ---- objects ---- */

struct walk {
    struct fatia_apiserver *s;
    struct fatia_admit_attrs *a;
    struct fatia_buf path;
    uint64_t cost;
    bool out_of_budget;
};

static const char *type_name(const struct fatia_schema *s)
{
    switch (s->type) {
    case FATIA_T_STRING:
    case FATIA_T_TIME:
        return "string";
    case FATIA_T_INT:
        return "integer";
    case FATIA_T_NUMBER:
        return "number";
    case FATIA_T_BOOL:
        return "boolean";
    case FATIA_T_ARRAY:
        return "array";
    case FATIA_T_INT_OR_STRING:
        return "integer-or-string";
    default:
        return "object";
    }
}

static void err(struct walk *w, const char *sub, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void err(struct walk *w, const char *sub, const char *fmt, ...)
{
    struct fatia_buf p = FATIA_BUF_INIT, m = FATIA_BUF_INIT;
    va_list ap;

    (void)fatia_buf_append(&p, w->path.p ? w->path.p : "", w->path.len);
    if (sub && *sub) /* a rule's fieldPath: ".spec.x" or "spec.x" */
        (void)fatia_buf_printf(&p, "%s%s", sub[0] == '.' || sub[0] == '[' || !p.len ? "" : ".",
                               p.len || sub[0] != '.' ? sub : sub + 1);
    va_start(ap, fmt);
    (void)fatia_buf_vprintf(&m, fmt, ap);
    va_end(ap);
    fatia_diag_add(w->a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, w->a->name, p.len ? p.p : NULL, "%s",
                   m.p ? m.p : "");
    fatia_buf_release(&p);
    fatia_buf_release(&m);
}

static void emit_junctor(void *arg, const char *path, const char *msg)
{
    struct walk *w = arg;

    fatia_diag_add(w->a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, w->a->name, *path ? path : NULL, "%s",
                   msg);
}

static void run_rule(struct walk *w, const struct fatia_schema *s, const json_t *rule,
                     const json_t *v, const json_t *old)
{
    const char *text = fatia_json_str(rule, "rule");
    const char *message = fatia_json_str(rule, "message");
    const char *mexpr = fatia_json_str(rule, "messageExpression");
    const char *reason = fatia_json_str(rule, "reason");
    const char *fpath = fatia_json_str(rule, "fieldPath");
    struct cached *c = text ? cached_of(w->s, 'r', text) : NULL;
    char why[512], msg[1024] = "";
    uint64_t cost = 0;
    bool ok = true;
    int r;

    if (!c || c->err < 0 || w->out_of_budget)
        return;
    if (c->uses_old_self && !old)
        return; /* a transition rule: only on an update that has the old value */
    r = fatia_cel_eval_rule(c->prog, v, old, PER_CALL_COST, &ok, NULL, 0, &cost, why, sizeof(why));
    w->cost += cost;
    if (r == -FATIA_E_COST || w->cost > PER_OBJECT_COST) {
        w->out_of_budget = true;
        err(w, NULL,
            "Invalid value: \"%s\": validation failed due to running out of cost budget, no "
            "further validation rules will be run",
            type_name(s));
        return;
    }
    if (r < 0) {
        err(w, NULL, "Invalid value: \"%s\": rule evaluation error: %s", type_name(s), why);
        return;
    }
    if (ok)
        return;
    if (mexpr) {
        struct cached *m = cached_of(w->s, 'm', mexpr);
        if (m && m->err == 0 &&
            fatia_cel_eval_rule(m->prog, v, old, PER_CALL_COST, NULL, msg, sizeof(msg), &cost, why,
                                sizeof(why)) == 0) {
            w->cost += cost;
        } else {
            msg[0] = '\0';
        }
    }
    if (!msg[0] && message)
        snprintf(msg, sizeof(msg), "%s", message);
    if (!msg[0])
        snprintf(msg, sizeof(msg), "failed rule: %s", text);
    if (reason && !strcmp(reason, "FieldValueForbidden"))
        err(w, fpath, "Forbidden: %s", msg);
    else if (reason && !strcmp(reason, "FieldValueRequired"))
        err(w, fpath, "Required value: %s", msg);
    else if (reason && !strcmp(reason, "FieldValueDuplicate"))
        err(w, fpath, "Duplicate value: \"%s\"", type_name(s));
    else
        err(w, fpath, "Invalid value: \"%s\": %s", type_name(s), msg);
}

static void check_pattern(struct walk *w, const char *pattern, const json_t *v)
{
    struct cached *c = cached_of(w->s, 'p', pattern);
    bool match = true;

    if (!c || c->err < 0 || !json_is_string(v))
        return;
    if (fatia_cel_regex_search(c->re, json_string_value(v), json_string_length(v), &match) == 0 &&
        !match)
        err(w, NULL, "Invalid value: \"%s\": %s in body should match '%s'", json_string_value(v),
            w->path.p ? w->path.p : "", pattern);
}

/* ---- formats and numbers (kube-openapi's strfmt and validators) ---- */

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static bool is_uuid(const char *s)
{
    static const size_t groups[] = {8, 4, 4, 4, 12};

    for (size_t g = 0; g < 5; g++) {
        if (strlen(s) < groups[g] || !all_hex(s, groups[g]))
            return false;
        s += groups[g];
        if (g < 4 && *s++ != '-')
            return false;
    }
    return *s == '\0';
}

static bool is_date(const char *s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    char tail;

    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-' ||
        sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3)
        return false;
    if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
        return false;
    return m != 2 || d < 29 || (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
}

static bool is_hostname(const char *s)
{
    size_t n = strlen(s), label = 0;

    if (!n || n > 255)
        return false;
    for (size_t i = 0; i <= n; i++) {
        char c = s[i];
        if (c == '.' || c == '\0') {
            if (!label || label > 63 || s[i - 1] == '-')
                return false;
            label = 0;
        } else if (isalnum((unsigned char)c) || (c == '-' && label)) {
            label++;
        } else {
            return false;
        }
    }
    return true;
}

static bool is_ip(const char *s, int af)
{
    unsigned char buf[16];

    return inet_pton(af, s, buf) == 1;
}

static bool is_cidr(const char *s)
{
    const char *slash = strchr(s, '/');
    char ip[64], *end;
    long bits;
    bool v6;

    if (!slash || (size_t)(slash - s) >= sizeof(ip))
        return false;
    memcpy(ip, s, (size_t)(slash - s));
    ip[slash - s] = '\0';
    v6 = strchr(ip, ':') != NULL;
    bits = strtol(slash + 1, &end, 10);
    return slash[1] && !*end && bits >= 0 && bits <= (v6 ? 128 : 32) &&
           is_ip(ip, v6 ? AF_INET6 : AF_INET);
}

static bool is_mac(const char *s)
{
    char sep = strlen(s) > 2 ? s[2] : 0;

    if (strlen(s) != 17 || (sep != ':' && sep != '-'))
        return false;
    for (int i = 0; i < 6; i++)
        if (!all_hex(s + 3 * i, 2) || (i < 5 && s[3 * i + 2] != sep))
            return false;
    return true;
}

static bool is_base64(const char *s)
{
    size_t n = strlen(s), pad = 0;

    if (n % 4)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '=') {
            if (i < n - 2)
                return false;
            pad++;
        } else if (pad || !(isalnum((unsigned char)c) || c == '+' || c == '/')) {
            return false;
        }
    }
    return true;
}

static bool is_email(const char *s)
{
    const char *at = strchr(s, '@');

    return at && at > s && at[1] && !strchr(at + 1, '@') && !strpbrk(s, " \t") &&
           is_hostname(at + 1);
}

/* Go's time.ParseDuration: [-+]? (number unit)+, units ns us µs ms s m h. */
static bool is_duration(const char *s)
{
    static const char *const units[] = {"ns", "us", "\xc2\xb5s", "ms", "s", "m", "h"};

    if (*s == '-' || *s == '+')
        s++;
    if (!strcmp(s, "0"))
        return true;
    if (!*s)
        return false;
    while (*s) {
        size_t best = 0;
        if (!isdigit((unsigned char)*s) && *s != '.')
            return false;
        while (isdigit((unsigned char)*s) || *s == '.')
            s++;
        for (size_t u = 0; u < FATIA_ARRAY_SIZE(units); u++)
            if (!strncmp(s, units[u], strlen(units[u])) && strlen(units[u]) > best)
                best = strlen(units[u]);
        if (!best)
            return false;
        s += best;
    }
    return true;
}

/* Does str have format fmt? Formats this server does not know pass, as kube-openapi's
 * unregistered ones do. */
static bool has_format(const char *fmt, const char *str)
{
    if (!strcmp(fmt, "uuid") || !strcmp(fmt, "uuid3") || !strcmp(fmt, "uuid4") ||
        !strcmp(fmt, "uuid5"))
        return is_uuid(str);
    if (!strcmp(fmt, "date"))
        return is_date(str);
    if (!strcmp(fmt, "hostname"))
        return is_hostname(str);
    if (!strcmp(fmt, "ipv4"))
        return is_ip(str, AF_INET);
    if (!strcmp(fmt, "ipv6"))
        return is_ip(str, AF_INET6);
    if (!strcmp(fmt, "cidr"))
        return is_cidr(str);
    if (!strcmp(fmt, "mac"))
        return is_mac(str);
    if (!strcmp(fmt, "byte"))
        return is_base64(str);
    if (!strcmp(fmt, "email"))
        return is_email(str);
    if (!strcmp(fmt, "duration"))
        return is_duration(str);
    return fatia_api_crd_format(fmt, str) != 0; /* crd_formats.c; -1: unknown, passes */
}

static void number_text(const json_t *v, char *buf, size_t n)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else
        snprintf(buf, n, "%g", json_number_value(v));
}

static void check_node(struct walk *w, const struct fatia_schema *s, const json_t *js,
                       const json_t *v)
{
    const char *fmt = fatia_json_str(js, "format");
    const json_t *lo = json_object_get(js, "minimum"), *hi = json_object_get(js, "maximum");
    const json_t *mult = json_object_get(js, "multipleOf");
    bool xlo = json_is_true(json_object_get(js, "exclusiveMinimum"));
    bool xhi = json_is_true(json_object_get(js, "exclusiveMaximum"));
    const char *path = w->path.p ? w->path.p : "";
    char vt[64], bt[64];
    double d;

    if (fmt && json_is_string(v) && !has_format(fmt, json_string_value(v))) {
        err(w, NULL, "Invalid value: \"%s\": %s in body must be of type %s: \"%s\"",
            json_string_value(v), path, fmt, json_string_value(v));
        return;
    }
    if (!json_is_number(v))
        return;
    d = json_number_value(v);
    number_text(v, vt, sizeof(vt));
    /* an integer's inclusive bounds are the walker's (schema.c); the rest is here */
    if (json_is_number(lo) && (s->type != FATIA_T_INT || xlo) &&
        (xlo ? d <= json_number_value(lo) : d < json_number_value(lo))) {
        number_text(lo, bt, sizeof(bt));
        err(w, NULL, "Invalid value: %s: %s in body should be greater than %s%s", vt, path,
            xlo ? "" : "or equal to ", bt);
    }
    if (json_is_number(hi) && (s->type != FATIA_T_INT || xhi) &&
        (xhi ? d >= json_number_value(hi) : d > json_number_value(hi))) {
        number_text(hi, bt, sizeof(bt));
        err(w, NULL, "Invalid value: %s: %s in body should be less than %s%s", vt, path,
            xhi ? "" : "or equal to ", bt);
    }
    if (json_is_number(mult) && json_number_value(mult) > 0) {
        double q = d / json_number_value(mult);
        if (q != (double)(int64_t)q) {
            number_text(mult, bt, sizeof(bt));
            err(w, NULL, "Invalid value: %s: %s in body should be a multiple of %s", vt, path, bt);
        }
    }
}

/* The old item of a list-type=map list matching item's key. */
static const json_t *old_item(const char *list_key, const json_t *item, const json_t *old_list)
{
    const json_t *k = json_object_get(item, list_key), *o;
    size_t i;

    if (!k || !json_is_array(old_list))
        return NULL;
    json_array_foreach(old_list, i, o) if (json_equal(json_object_get(o, list_key), k)) return o;
    return NULL;
}

static void walk(struct walk *w, const struct fatia_schema *s, const json_t *v, const json_t *old,
                 int depth)
{
    size_t len0 = w->path.len, i;
    const char *key;
    json_t *m;

    if (!s || !v || depth > MAX_DEPTH)
        return;
    if (s->crd && s->crd->pattern)
        check_pattern(w, s->crd->pattern, v);
    if (s->crd && s->crd->node)
        check_node(w, s, s->crd->node, v);
    if (s->crd && s->crd->node && fatia_api_crd_has_junctors(s->crd->node))
        fatia_api_crd_junctors(s->crd->node, v, w->path.p ? w->path.p : "", emit_junctor, w);
    if (s->crd && s->crd->rules) {
        json_t *rule;
        json_array_foreach(s->crd->rules, i, rule) run_rule(w, s, rule, v, old);
    }
    switch (s->type) {
    case FATIA_T_OBJECT:
        if (!json_is_object(v))
            return;
        for (const struct fatia_field *f = s->fields; f && f->name; f++) {
            const json_t *mv = json_object_get(v, f->name);
            if (!mv || !f->schema || f->schema == &fatia_s_object_meta)
                continue;
            (void)fatia_buf_printf(&w->path, "%s%s", len0 ? "." : "", f->name);
            walk(w, f->schema, mv, json_object_get(old, f->name), depth + 1);
            fatia_buf_truncate(&w->path, len0);
        }
        break;
    case FATIA_T_MAP:
        if (!json_is_object(v))
            return;
        json_object_foreach((json_t *)v, key, m)
        {
            (void)fatia_buf_printf(&w->path, "[%s]", key);
            walk(w, s->items, m, json_object_get(old, key), depth + 1);
            fatia_buf_truncate(&w->path, len0);
        }
        break;
    case FATIA_T_ARRAY:
        if (!json_is_array(v))
            return;
        json_array_foreach(v, i, m)
        {
            (void)fatia_buf_printf(&w->path, "[%zu]", i);
            walk(w, s->items, m, s->list_key ? old_item(s->list_key, m, old) : NULL, depth + 1);
            fatia_buf_truncate(&w->path, len0);
        }
        break;
    default:
        break;
    }
}

static int admit(void *arg, struct fatia_admit_attrs *a)
{
    struct walk w = {.s = arg, .a = a, .path = FATIA_BUF_INIT};
    size_t before = a->diag->n_errors;

    if (!fatia_kind_is_custom(a->kind) || !a->obj)
        return 0;
    walk(&w, a->kind->schema, a->obj, a->old, 0);
    fatia_buf_release(&w.path);
    return a->diag->n_errors > before ? -FATIA_E_INVALID : 0;
}

int fatia_api_crd_rules_add_plugin(struct fatia_apiserver *s)
{
    const struct fatia_admission p = {.name = "customresource-validation-rules",
                                      .phase = FATIA_ADMIT_VALIDATING,
                                      .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                      .subresources = true,
                                      .admit = admit,
                                      .arg = s,
                                      .bare_message = true};

    return fatia_apiserver_add_admission(s, &p);
}

/* ---- CRDs: every rule and pattern compiles ---- */

static void schema_err(struct fatia_admit_attrs *a, const struct fatia_buf *path,
                       const char *member, const char *fmt, ...) FATIA_PRINTF(4, 5);

static void schema_err(struct fatia_admit_attrs *a, const struct fatia_buf *path,
                       const char *member, const char *fmt, ...)
{
    struct fatia_buf p = FATIA_BUF_INIT, m = FATIA_BUF_INIT;
    va_list ap;

    (void)fatia_buf_printf(&p, "%s.%s", path->p, member);
    va_start(ap, fmt);
    (void)fatia_buf_vprintf(&m, fmt, ap);
    va_end(ap);
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->name, p.p, "%s", m.p ? m.p : "");
    fatia_buf_release(&p);
    fatia_buf_release(&m);
}

static void check_schema(struct fatia_apiserver *s, struct fatia_admit_attrs *a, const json_t *js,
                         struct fatia_buf *path, int depth)
{
    size_t len0 = path->len, i;
    const char *key, *pattern = fatia_json_str(js, "pattern");
    struct cached *c;
    json_t *m;
    char member[96];

    if (!json_is_object(js) || depth > MAX_DEPTH)
        return;
    c = pattern ? cached_of(s, 'p', pattern) : NULL;
    if (c && c->err < 0)
        schema_err(a, path, "pattern",
                   "Invalid value: \"%s\": must be a valid regular expression, but isn't: %s",
                   pattern, c->why);
    json_array_foreach(json_object_get(js, "x-kubernetes-validations"), i, m)
    {
        const char *rule = fatia_json_str(m, "rule");
        const char *mexpr = fatia_json_str(m, "messageExpression");
        c = rule ? cached_of(s, 'r', rule) : NULL;
        snprintf(member, sizeof(member), "x-kubernetes-validations[%zu].rule", i);
        if (!rule)
            schema_err(a, path, member, "Required value");
        else if (c && c->err < 0)
            schema_err(a, path, member, "Invalid value: \"%s\": compilation failed: %s", rule,
                       c->why);
        c = mexpr ? cached_of(s, 'm', mexpr) : NULL;
        snprintf(member, sizeof(member), "x-kubernetes-validations[%zu].messageExpression", i);
        if (c && c->err < 0)
            schema_err(a, path, member,
                       "Invalid value: \"%s\": messageExpression compilation failed: %s", mexpr,
                       c->why);
    }
    json_object_foreach(json_object_get(js, "properties"), key, m)
    {
        (void)fatia_buf_printf(path, ".properties[%s]", key);
        check_schema(s, a, m, path, depth + 1);
        fatia_buf_truncate(path, len0);
    }
    if (json_object_get(js, "items")) {
        (void)fatia_buf_puts(path, ".items");
        check_schema(s, a, json_object_get(js, "items"), path, depth + 1);
        fatia_buf_truncate(path, len0);
    }
    if (json_is_object(json_object_get(js, "additionalProperties"))) {
        (void)fatia_buf_puts(path, ".additionalProperties");
        check_schema(s, a, json_object_get(js, "additionalProperties"), path, depth + 1);
        fatia_buf_truncate(path, len0);
    }
}

void fatia_api_crd_rules_check(struct fatia_apiserver *s, struct fatia_admit_attrs *a)
{
    json_t *v;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(a->obj, "spec"), "versions"), i, v)
    {
        struct fatia_buf path = FATIA_BUF_INIT;
        (void)fatia_buf_printf(&path, "spec.versions[%zu].schema.openAPIV3Schema", i);
        check_schema(s, a, json_object_get(json_object_get(v, "schema"), "openAPIV3Schema"), &path,
                     0);
        fatia_buf_release(&path);
    }
}
