/*
 * cel/fatia_cel_check.c: static types, name resolution and the worst-case cost of a CEL selector.
 *
 * Types are cel-go's: primitives, list(T), map(K, V), the Kubernetes Quantity and Semver types,
 * the DRA device object, and dyn, which matches every parameter (attribute values are dyn, since
 * a device's attribute may be an int, a bool, a string or a version). An operator or function
 * applies when one of its overloads accepts the argument types (dyn accepting anything); the
 * result type is the overloads' common result, or dyn when they differ. Comprehension and bind
 * variables get a slot number each, resolved innermost-first, so evaluation indexes an array.
 *
 * Worst-case cost. Each node's estimate is (cost, size, elem): its cost, and the largest string
 * (bytes) or list/map (entries) it can produce, and the largest element of such a list. Device
 * inputs are bounded as upstream bounds them (driver and domain names at most 63 bytes,
 * attribute strings at most 64, at most 32 attributes and capacities), literals by their size.
 * The estimate follows the runtime charges of cel_eval.c / cel_lib.c step for step, so it is an
 * upper bound of any evaluation; it saturates instead of overflowing. Upstream rejects a
 * selector whose estimate exceeds the cost limit at validation time, and so does this.
 *
 * Constant arguments of matches(), quantity() and semver() are parsed here, once: an invalid
 * constant is a compile error with its column (upstream reports it at evaluation), and a valid
 * one is not parsed again per device.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "cel/cel_int.h"

const struct cel_type fatia_cel_t_dyn = {TK_DYN}, fatia_cel_t_null = {TK_NULL},
                      fatia_cel_t_bool = {TK_BOOL}, fatia_cel_t_int = {TK_INT},
                      fatia_cel_t_uint = {TK_UINT}, fatia_cel_t_double = {TK_DOUBLE},
                      fatia_cel_t_string = {TK_STRING}, fatia_cel_t_quantity = {TK_QUANTITY},
                      fatia_cel_t_semver = {TK_SEMVER}, fatia_cel_t_device = {TK_DEVICE};
const struct cel_type fatia_cel_t_list_dyn = {TK_LIST, &fatia_cel_t_dyn, NULL, NULL};
const struct cel_type fatia_cel_t_list_string = {TK_LIST, &fatia_cel_t_string, NULL, NULL};
const struct cel_type fatia_cel_t_map_dyn = {TK_MAP, &fatia_cel_t_dyn, &fatia_cel_t_dyn, NULL};
const struct cel_type fatia_cel_t_attr_domain = {TK_MAP, &fatia_cel_t_string, &fatia_cel_t_dyn,
                                                 NULL};
const struct cel_type fatia_cel_t_attrs = {TK_MAP, &fatia_cel_t_string, &fatia_cel_t_attr_domain,
                                           NULL};
const struct cel_type fatia_cel_t_cap_domain = {TK_MAP, &fatia_cel_t_string, &fatia_cel_t_quantity,
                                                NULL};
const struct cel_type fatia_cel_t_caps = {TK_MAP, &fatia_cel_t_string, &fatia_cel_t_cap_domain,
                                          NULL};

void fatia_cel_type_format(const struct cel_type *t, struct fatia_buf *b)
{
    static const char *const names[] = {
        [TK_DYN] = "dyn",          [TK_NULL] = "null_type",    [TK_BOOL] = "bool",
        [TK_INT] = "int",          [TK_UINT] = "uint",         [TK_DOUBLE] = "double",
        [TK_STRING] = "string",    [TK_QUANTITY] = "Quantity", [TK_SEMVER] = "Semver",
        [TK_DEVICE] = "DRADevice",
    };

    if (t->k == TK_LIST) {
        (void)fatia_buf_puts(b, "list(");
        fatia_cel_type_format(t->a, b);
        (void)fatia_buf_putc(b, ')');
    } else if (t->k == TK_MAP) {
        (void)fatia_buf_puts(b, "map(");
        fatia_cel_type_format(t->a, b);
        (void)fatia_buf_puts(b, ", ");
        fatia_cel_type_format(t->b, b);
        (void)fatia_buf_putc(b, ')');
    } else {
        (void)fatia_buf_puts(b, names[t->k]);
    }
}

/* ---- estimates ---- */

struct est {
    uint64_t cost; /* worst-case cost */
    uint64_t size; /* largest string (bytes) or list / map (entries) */
    uint64_t elem; /* largest element of such a list or value of such a map */
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    return (a && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

static uint64_t tenth(uint64_t n)
{
    return n / 10 + (n % 10 != 0);
}

/* ---- scopes ---- */

struct var {
    const char *name;
    int slot;
    const struct cel_type *type;
    struct est est;
};

struct checker {
    struct fatia_cel_program *prog;
    struct var vars[CEL_MAX_DEPTH];
    int n_vars;
    char *why;
    size_t why_n;
};

static int type_error(struct checker *c, const struct cel_node *n, const char *fmt, ...)
    FATIA_PRINTF(3, 4);

static int type_error(struct checker *c, const struct cel_node *n, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return CEL_ERROR_AT(c->why, c->why_n, n->line, n->col, -FATIA_E_TYPE, "%s", msg);
}

/* Formats a type into a static-per-call buffer for messages (two at a time). */
static const char *tname(const struct cel_type *t, int which)
{
    static _Thread_local char bufs[2][128];
    struct fatia_buf b = FATIA_BUF_INIT;

    fatia_cel_type_format(t, &b);
    snprintf(bufs[which], sizeof(bufs[which]), "%s", b.p);
    fatia_buf_release(&b);
    return bufs[which];
}

static const struct cel_type *type_new(struct checker *c, enum cel_tk k, const struct cel_type *a,
                                       const struct cel_type *b)
{
    struct cel_type *t = fatia_calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->k = k;
    t->a = a;
    t->b = b;
    t->next = c->prog->types;
    c->prog->types = t;
    return t;
}

static bool types_equal(const struct cel_type *a, const struct cel_type *b)
{
    if (a->k != b->k)
        return false;
    if (a->k == TK_LIST)
        return types_equal(a->a, b->a);
    if (a->k == TK_MAP)
        return types_equal(a->a, b->a) && types_equal(a->b, b->b);
    return true;
}

/* Can a value of type arg be passed where param is expected? dyn goes both ways. */
static bool assignable(const struct cel_type *param, const struct cel_type *arg)
{
    if (param->k == TK_DYN || arg->k == TK_DYN)
        return true;
    if (param->k != arg->k)
        return false;
    if (param->k == TK_LIST)
        return assignable(param->a, arg->a);
    if (param->k == TK_MAP)
        return assignable(param->a, arg->a) && assignable(param->b, arg->b);
    return true;
}

/* The common type of two branches or elements: equal types stay, anything else is dyn. */
static const struct cel_type *join_types(const struct cel_type *a, const struct cel_type *b)
{
    return types_equal(a, b) ? a : &fatia_cel_t_dyn;
}

/* ---- overloads ---- */

enum pk {
    P_DYN,
    P_BOOL,
    P_INT,
    P_UINT,
    P_DOUBLE,
    P_STRING,
    P_LIST,
    P_LIST_STRING,
    P_MAP,
    P_QUANTITY,
    P_SEMVER,
    P_NONE, /* no receiver */
};

struct overload {
    enum cel_fn fn;
    enum pk recv;
    uint8_t n;
    enum pk args[3];
    enum pk result;
};

static const struct overload overloads[] = {
    {FN_SIZE, P_NONE, 1, {P_STRING}, P_INT},
    {FN_SIZE, P_NONE, 1, {P_LIST}, P_INT},
    {FN_SIZE, P_NONE, 1, {P_MAP}, P_INT},
    {FN_SIZE, P_STRING, 0, {0}, P_INT},
    {FN_SIZE, P_LIST, 0, {0}, P_INT},
    {FN_SIZE, P_MAP, 0, {0}, P_INT},
    {FN_STARTS_WITH, P_STRING, 1, {P_STRING}, P_BOOL},
    {FN_ENDS_WITH, P_STRING, 1, {P_STRING}, P_BOOL},
    {FN_CONTAINS, P_STRING, 1, {P_STRING}, P_BOOL},
    {FN_MATCHES, P_STRING, 1, {P_STRING}, P_BOOL},
    {FN_MATCHES, P_NONE, 2, {P_STRING, P_STRING}, P_BOOL},
    {FN_LOWER_ASCII, P_STRING, 0, {0}, P_STRING},
    {FN_UPPER_ASCII, P_STRING, 0, {0}, P_STRING},
    {FN_TRIM, P_STRING, 0, {0}, P_STRING},
    {FN_INDEX_OF, P_STRING, 1, {P_STRING}, P_INT},
    {FN_INDEX_OF, P_STRING, 2, {P_STRING, P_INT}, P_INT},
    {FN_LAST_INDEX_OF, P_STRING, 1, {P_STRING}, P_INT},
    {FN_LAST_INDEX_OF, P_STRING, 2, {P_STRING, P_INT}, P_INT},
    {FN_SUBSTRING, P_STRING, 1, {P_INT}, P_STRING},
    {FN_SUBSTRING, P_STRING, 2, {P_INT, P_INT}, P_STRING},
    {FN_CHAR_AT, P_STRING, 1, {P_INT}, P_STRING},
    {FN_REPLACE, P_STRING, 2, {P_STRING, P_STRING}, P_STRING},
    {FN_REPLACE, P_STRING, 3, {P_STRING, P_STRING, P_INT}, P_STRING},
    {FN_SPLIT, P_STRING, 1, {P_STRING}, P_LIST_STRING},
    {FN_SPLIT, P_STRING, 2, {P_STRING, P_INT}, P_LIST_STRING},
    {FN_JOIN, P_LIST_STRING, 0, {0}, P_STRING},
    {FN_JOIN, P_LIST_STRING, 1, {P_STRING}, P_STRING},
    {FN_INT, P_NONE, 1, {P_INT}, P_INT},
    {FN_INT, P_NONE, 1, {P_UINT}, P_INT},
    {FN_INT, P_NONE, 1, {P_DOUBLE}, P_INT},
    {FN_INT, P_NONE, 1, {P_STRING}, P_INT},
    {FN_UINT, P_NONE, 1, {P_INT}, P_UINT},
    {FN_UINT, P_NONE, 1, {P_UINT}, P_UINT},
    {FN_UINT, P_NONE, 1, {P_DOUBLE}, P_UINT},
    {FN_UINT, P_NONE, 1, {P_STRING}, P_UINT},
    {FN_DOUBLE, P_NONE, 1, {P_INT}, P_DOUBLE},
    {FN_DOUBLE, P_NONE, 1, {P_UINT}, P_DOUBLE},
    {FN_DOUBLE, P_NONE, 1, {P_DOUBLE}, P_DOUBLE},
    {FN_DOUBLE, P_NONE, 1, {P_STRING}, P_DOUBLE},
    {FN_STRING, P_NONE, 1, {P_INT}, P_STRING},
    {FN_STRING, P_NONE, 1, {P_UINT}, P_STRING},
    {FN_STRING, P_NONE, 1, {P_DOUBLE}, P_STRING},
    {FN_STRING, P_NONE, 1, {P_BOOL}, P_STRING},
    {FN_STRING, P_NONE, 1, {P_STRING}, P_STRING},
    {FN_BOOL, P_NONE, 1, {P_BOOL}, P_BOOL},
    {FN_BOOL, P_NONE, 1, {P_STRING}, P_BOOL},
    {FN_DYN, P_NONE, 1, {P_DYN}, P_DYN},
    {FN_QUANTITY, P_NONE, 1, {P_STRING}, P_QUANTITY},
    {FN_IS_QUANTITY, P_NONE, 1, {P_STRING}, P_BOOL},
    {FN_SEMVER, P_NONE, 1, {P_STRING}, P_SEMVER},
    {FN_SEMVER, P_NONE, 2, {P_STRING, P_BOOL}, P_SEMVER},
    {FN_IS_SEMVER, P_NONE, 1, {P_STRING}, P_BOOL},
    {FN_IS_SEMVER, P_NONE, 2, {P_STRING, P_BOOL}, P_BOOL},
    {FN_COMPARE_TO, P_QUANTITY, 1, {P_QUANTITY}, P_INT},
    {FN_COMPARE_TO, P_SEMVER, 1, {P_SEMVER}, P_INT},
    {FN_IS_GREATER_THAN, P_QUANTITY, 1, {P_QUANTITY}, P_BOOL},
    {FN_IS_GREATER_THAN, P_SEMVER, 1, {P_SEMVER}, P_BOOL},
    {FN_IS_LESS_THAN, P_QUANTITY, 1, {P_QUANTITY}, P_BOOL},
    {FN_IS_LESS_THAN, P_SEMVER, 1, {P_SEMVER}, P_BOOL},
    {FN_ADD, P_QUANTITY, 1, {P_QUANTITY}, P_QUANTITY},
    {FN_ADD, P_QUANTITY, 1, {P_INT}, P_QUANTITY},
    {FN_SUB, P_QUANTITY, 1, {P_QUANTITY}, P_QUANTITY},
    {FN_SUB, P_QUANTITY, 1, {P_INT}, P_QUANTITY},
    {FN_SIGN, P_QUANTITY, 0, {0}, P_INT},
    {FN_IS_INTEGER, P_QUANTITY, 0, {0}, P_BOOL},
    {FN_AS_INTEGER, P_QUANTITY, 0, {0}, P_INT},
    {FN_AS_APPROXIMATE_FLOAT, P_QUANTITY, 0, {0}, P_DOUBLE},
    {FN_MAJOR, P_SEMVER, 0, {0}, P_INT},
    {FN_MINOR, P_SEMVER, 0, {0}, P_INT},
    {FN_PATCH, P_SEMVER, 0, {0}, P_INT},
};

static const struct {
    const char *name;
    enum cel_fn fn;
} fn_names[] = {
    {"size", FN_SIZE},
    {"startsWith", FN_STARTS_WITH},
    {"endsWith", FN_ENDS_WITH},
    {"contains", FN_CONTAINS},
    {"matches", FN_MATCHES},
    {"lowerAscii", FN_LOWER_ASCII},
    {"upperAscii", FN_UPPER_ASCII},
    {"trim", FN_TRIM},
    {"indexOf", FN_INDEX_OF},
    {"lastIndexOf", FN_LAST_INDEX_OF},
    {"substring", FN_SUBSTRING},
    {"charAt", FN_CHAR_AT},
    {"replace", FN_REPLACE},
    {"split", FN_SPLIT},
    {"join", FN_JOIN},
    {"int", FN_INT},
    {"uint", FN_UINT},
    {"double", FN_DOUBLE},
    {"string", FN_STRING},
    {"bool", FN_BOOL},
    {"dyn", FN_DYN},
    {"quantity", FN_QUANTITY},
    {"isQuantity", FN_IS_QUANTITY},
    {"semver", FN_SEMVER},
    {"isSemver", FN_IS_SEMVER},
    {"compareTo", FN_COMPARE_TO},
    {"isGreaterThan", FN_IS_GREATER_THAN},
    {"isLessThan", FN_IS_LESS_THAN},
    {"add", FN_ADD},
    {"sub", FN_SUB},
    {"sign", FN_SIGN},
    {"isInteger", FN_IS_INTEGER},
    {"asInteger", FN_AS_INTEGER},
    {"asApproximateFloat", FN_AS_APPROXIMATE_FLOAT},
    {"major", FN_MAJOR},
    {"minor", FN_MINOR},
    {"patch", FN_PATCH},
};

enum cel_fn fatia_cel_fn_lookup(const char *name)
{
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(fn_names); i++)
        if (!strcmp(fn_names[i].name, name))
            return fn_names[i].fn;
    return FN_NONE;
}

const char *fatia_cel_fn_name(enum cel_fn fn)
{
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(fn_names); i++)
        if (fn_names[i].fn == fn)
            return fn_names[i].name;
    return "?";
}

static const struct cel_type *pk_type(enum pk p)
{
    switch (p) {
    case P_BOOL:
        return &fatia_cel_t_bool;
    case P_INT:
        return &fatia_cel_t_int;
    case P_UINT:
        return &fatia_cel_t_uint;
    case P_DOUBLE:
        return &fatia_cel_t_double;
    case P_STRING:
        return &fatia_cel_t_string;
    case P_LIST:
        return &fatia_cel_t_list_dyn;
    case P_LIST_STRING:
        return &fatia_cel_t_list_string;
    case P_MAP:
        return &fatia_cel_t_map_dyn;
    case P_QUANTITY:
        return &fatia_cel_t_quantity;
    case P_SEMVER:
        return &fatia_cel_t_semver;
    default:
        return &fatia_cel_t_dyn;
    }
}

static bool pk_accepts(enum pk p, const struct cel_type *t)
{
    if (t->k == TK_DYN || p == P_DYN)
        return true;
    if (p == P_LIST)
        return t->k == TK_LIST;
    if (p == P_MAP)
        return t->k == TK_MAP;
    return assignable(pk_type(p), t);
}

/* ---- the walk ---- */

static int check_node(struct checker *c, struct cel_node *n, struct est *e);

static int check_kids(struct checker *c, struct cel_node **kids, size_t n_kids, struct est *es)
{
    for (size_t i = 0; i < n_kids; i++) {
        int r = check_node(c, kids[i], &es[i]);
        if (r < 0)
            return r;
    }
    return 0;
}

static void format_args(struct fatia_buf *b, const struct cel_node *recv, struct cel_node **args,
                        size_t n)
{
    if (recv) {
        fatia_cel_type_format(recv->type, b);
        (void)fatia_buf_putc(b, '.');
    }
    (void)fatia_buf_putc(b, '(');
    for (size_t i = 0; i < n; i++) {
        if (i)
            (void)fatia_buf_puts(b, ", ");
        fatia_cel_type_format(args[i]->type, b);
    }
    (void)fatia_buf_putc(b, ')');
}

/* Parses constant arguments once (see the file comment). */
static int fold_constants(struct checker *c, struct cel_node *n)
{
    struct cel_node *arg = NULL;
    char why[256];
    int r;

    if (n->fn == FN_MATCHES)
        arg = n->a ? n->args[0] : (n->n_args == 2 ? n->args[1] : NULL);
    else if ((n->fn == FN_QUANTITY || n->fn == FN_SEMVER) && !n->a)
        arg = n->args[0];
    if (!arg || arg->k != NK_LIT || arg->lit.k != VK_STRING)
        return 0;
    if (n->fn == FN_MATCHES) {
        r = fatia_cel_regex_compile(arg->lit.s.p, arg->lit.s.n, &n->re, why, sizeof(why));
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            return type_error(c, arg, "invalid regular expression: %s", why);
        return 0;
    }
    if (n->fn == FN_QUANTITY) {
        struct fatia_quantity q;
        if (strlen(arg->lit.s.p) != arg->lit.s.n ||
            fatia_quantity_parse(arg->lit.s.p, &q, why, sizeof(why)) < 0)
            return type_error(c, arg, "invalid quantity \"%s\": %s", arg->lit.s.p,
                              strlen(arg->lit.s.p) != arg->lit.s.n ? "contains NUL" : why);
        n->q = fatia_malloc(sizeof(*n->q));
        if (!n->q)
            return -ENOMEM;
        *n->q = q;
        return 0;
    }
    {
        struct fatia_semver v;
        bool normalize = false;
        if (n->n_args == 2) {
            if (n->args[1]->k != NK_LIT || n->args[1]->lit.k != VK_BOOL)
                return 0;
            normalize = n->args[1]->lit.b;
        }
        if (strlen(arg->lit.s.p) != arg->lit.s.n ||
            fatia_semver_parse(arg->lit.s.p, normalize, &v, why, sizeof(why)) < 0)
            return type_error(c, arg, "invalid semver \"%s\": %s", arg->lit.s.p,
                              strlen(arg->lit.s.p) != arg->lit.s.n ? "contains NUL" : why);
        n->sv = fatia_malloc(sizeof(*n->sv));
        if (!n->sv)
            return -ENOMEM;
        *n->sv = v;
    }
    return 0;
}

/* Worst-case cost of a function call beyond its arguments (cel_lib.c charges the same). */
static void call_est(const struct cel_node *n, const struct est *recv, const struct est *args,
                     struct est *e)
{
    uint64_t s = recv ? recv->size : (n->n_args ? args[0].size : 0);
    uint64_t a0 = n->n_args ? args[0].size : 0;

    e->cost = sat_add(e->cost, 1);
    e->size = 0;
    e->elem = 0;
    switch (n->fn) {
    case FN_SIZE:
        e->cost = sat_add(e->cost, tenth(s));
        break;
    case FN_STARTS_WITH:
    case FN_ENDS_WITH:
        e->cost = sat_add(e->cost, tenth(a0));
        break;
    case FN_CONTAINS:
    case FN_INDEX_OF:
    case FN_LAST_INDEX_OF:
        e->cost = sat_add(e->cost, tenth(sat_mul(s, a0 ? a0 : 1)));
        break;
    case FN_MATCHES: {
        uint64_t text = recv ? recv->size : args[0].size;
        uint64_t pat = recv ? args[0].size : args[1].size;
        uint64_t insts = n->re ? fatia_cel_regex_size(n->re) : FATIA_CEL_REGEX_MAX_INSTS;
        /* a dynamic pattern is compiled per evaluation: its bytes, then the match */
        e->cost = sat_add(e->cost, tenth(sat_mul(sat_add(text, 1), insts)));
        if (!n->re)
            e->cost = sat_add(e->cost, tenth(pat));
        break;
    }
    case FN_LOWER_ASCII:
    case FN_UPPER_ASCII:
    case FN_TRIM:
    case FN_SUBSTRING:
    case FN_CHAR_AT:
        e->cost = sat_add(e->cost, tenth(s));
        e->size = s;
        break;
    case FN_REPLACE: {
        uint64_t with = n->n_args > 1 ? args[1].size : 0;
        e->size = sat_add(sat_mul(sat_add(s, 1), with), s);
        e->cost = sat_add(e->cost, sat_add(tenth(e->size), tenth(s)));
        break;
    }
    case FN_SPLIT:
        e->size = sat_add(s, 1);
        e->elem = s;
        e->cost = sat_add(e->cost, sat_add(tenth(sat_mul(s, 2)), e->size));
        break;
    case FN_JOIN: {
        uint64_t sep = n->n_args ? args[0].size : 0;
        e->size = sat_add(sat_mul(recv->size, recv->elem), sat_mul(recv->size, sep));
        e->cost = sat_add(e->cost, tenth(e->size));
        break;
    }
    case FN_STRING:
        e->size = args[0].size > 32 ? args[0].size : 32;
        e->cost = sat_add(e->cost, tenth(e->size));
        break;
    case FN_INT:
    case FN_UINT:
    case FN_DOUBLE:
    case FN_BOOL:
    case FN_QUANTITY:
    case FN_IS_QUANTITY:
    case FN_SEMVER:
    case FN_IS_SEMVER:
        e->cost = sat_add(e->cost, tenth(a0));
        break;
    case FN_DYN:
        *e = args[0];
        break;
    default:
        break;
    }
}

static int check_call(struct checker *c, struct cel_node *n, struct est *e)
{
    struct est recv_e = {0}, args_e[8] = {{0}};
    const struct cel_type *result = NULL;
    bool any = false;
    int r;

    n->fn = fatia_cel_fn_lookup(n->name);
    if (n->fn == FN_NONE)
        return type_error(c, n, "undeclared reference to '%s'", n->name);
    if (n->n_args > FATIA_ARRAY_SIZE(args_e))
        return type_error(c, n, "too many arguments to '%s'", n->name);
    if (n->a) {
        r = check_node(c, n->a, &recv_e);
        if (r < 0)
            return r;
    }
    r = check_kids(c, n->args, n->n_args, args_e);
    if (r < 0)
        return r;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(overloads); i++) {
        const struct overload *o = &overloads[i];
        bool ok = o->fn == n->fn && o->n == n->n_args && (o->recv == P_NONE) == !n->a;
        const struct cel_type *rt;
        if (ok && n->a)
            ok = pk_accepts(o->recv, n->a->type);
        for (size_t j = 0; ok && j < n->n_args; j++)
            ok = pk_accepts(o->args[j], n->args[j]->type);
        if (!ok)
            continue;
        rt = pk_type(o->result);
        result = any ? join_types(result, rt) : rt;
        any = true;
    }
    if (!any) {
        struct fatia_buf b = FATIA_BUF_INIT;
        format_args(&b, n->a, n->args, n->n_args);
        r = type_error(c, n, "found no matching overload for '%s' applied to '%s'", n->name, b.p);
        fatia_buf_release(&b);
        return r;
    }
    n->type = result;
    r = fold_constants(c, n);
    if (r < 0)
        return r;
    e->cost = recv_e.cost;
    for (size_t i = 0; i < n->n_args; i++)
        e->cost = sat_add(e->cost, args_e[i].cost);
    call_est(n, n->a ? &recv_e : NULL, args_e, e);
    if (n->fn == FN_DYN)
        e->cost = sat_add(args_e[0].cost, 1);
    return 0;
}

static int check_select(struct checker *c, struct cel_node *n, struct est *e)
{
    const struct cel_type *t;
    struct est a;
    int r = check_node(c, n->a, &a);

    if (r < 0)
        return r;
    t = n->a->type;
    *e = (struct est){sat_add(a.cost, 1), CEL_ATTR_MAX, 0};
    switch (t->k) {
    case TK_DEVICE:
        if (!strcmp(n->name, "driver")) {
            n->type = &fatia_cel_t_string;
            e->size = CEL_NAME_MAX;
        } else if (!strcmp(n->name, "attributes")) {
            n->type = &fatia_cel_t_attrs;
            e->size = CEL_MAP_MAX;
            e->elem = CEL_MAP_MAX;
        } else if (!strcmp(n->name, "capacity")) {
            n->type = &fatia_cel_t_caps;
            e->size = CEL_MAP_MAX;
            e->elem = CEL_MAP_MAX;
        } else if (!strcmp(n->name, "allowMultipleAllocations")) {
            n->type = &fatia_cel_t_bool;
            e->size = 0;
        } else {
            return type_error(c, n, "undefined field '%s'", n->name);
        }
        return 0;
    case TK_MAP:
        if (t->a->k != TK_STRING && t->a->k != TK_DYN)
            return type_error(c, n, "type '%s' does not support field selection", tname(t, 0));
        n->type = t->b;
        if (t != &fatia_cel_t_attrs && t != &fatia_cel_t_caps && t != &fatia_cel_t_attr_domain &&
            t != &fatia_cel_t_cap_domain)
            e->cost = sat_add(e->cost, a.size); /* a lookup compares up to every key */
        e->size = a.elem;
        e->elem = t->b->k == TK_MAP ? CEL_ATTR_MAX : 0;
        return 0;
    case TK_DYN:
        n->type = &fatia_cel_t_dyn;
        e->cost = sat_add(e->cost, a.size);
        return 0;
    default:
        return type_error(c, n, "type '%s' does not support field selection", tname(t, 0));
    }
}

static int check_index(struct checker *c, struct cel_node *n, struct est *e)
{
    const struct cel_type *t, *kt;
    struct est a, b;
    int r = check_node(c, n->a, &a);

    if (r < 0 || (r = check_node(c, n->b, &b)) < 0)
        return r;
    t = n->a->type;
    kt = n->b->type;
    *e = (struct est){sat_add(sat_add(a.cost, b.cost), 1), a.elem, CEL_ATTR_MAX};
    switch (t->k) {
    case TK_LIST:
        if (kt->k != TK_INT && kt->k != TK_UINT && kt->k != TK_DYN)
            return type_error(c, n, "found no matching overload for '_[_]' applied to '(%s, %s)'",
                              tname(t, 0), tname(kt, 1));
        n->type = t->a;
        return 0;
    case TK_MAP:
        if (!assignable(t->a, kt))
            return type_error(c, n, "found no matching overload for '_[_]' applied to '(%s, %s)'",
                              tname(t, 0), tname(kt, 1));
        n->type = t->b;
        if (t == &fatia_cel_t_attrs || t == &fatia_cel_t_caps)
            e->elem = t == &fatia_cel_t_attrs ? CEL_ATTR_MAX : 0;
        else if (t != &fatia_cel_t_attr_domain && t != &fatia_cel_t_cap_domain)
            e->cost = sat_add(e->cost, a.size); /* a lookup compares up to every key */
        return 0;
    case TK_DYN:
        n->type = &fatia_cel_t_dyn;
        e->size = CEL_ATTR_MAX;
        e->cost = sat_add(e->cost, a.size);
        return 0;
    default:
        return type_error(c, n, "found no matching overload for '_[_]' applied to '(%s, %s)'",
                          tname(t, 0), tname(kt, 1));
    }
}

static bool is_number(enum cel_tk k)
{
    return k == TK_INT || k == TK_UINT || k == TK_DOUBLE;
}

static bool orderable(const struct cel_type *a, const struct cel_type *b)
{
    if (a->k == TK_DYN || b->k == TK_DYN)
        return a->k == TK_DYN
                   ? (b->k == TK_DYN || is_number(b->k) || b->k == TK_STRING || b->k == TK_BOOL)
                   : (is_number(a->k) || a->k == TK_STRING || a->k == TK_BOOL);
    if (is_number(a->k) && is_number(b->k))
        return true;
    return a->k == b->k && (a->k == TK_STRING || a->k == TK_BOOL);
}

static const char *const binop_names[] = {
    [OP_EQ] = "_==_", [OP_NE] = "_!=_", [OP_LT] = "_<_",  [OP_LE] = "_<=_",
    [OP_GT] = "_>_",  [OP_GE] = "_>=_", [OP_IN] = "@in",  [OP_ADD] = "_+_",
    [OP_SUB] = "_-_", [OP_MUL] = "_*_", [OP_DIV] = "_/_", [OP_MOD] = "_%_",
};

static int check_arith(struct checker *c, struct cel_node *n, const struct cel_type *a,
                       const struct cel_type *b)
{
    /* candidates: (int,int) (uint,uint) (double,double), + also (string,string) (list,list) */
    static const enum cel_tk nums[] = {TK_INT, TK_UINT, TK_DOUBLE, TK_STRING, TK_LIST};

    size_t n_cands = n->op == OP_ADD ? 5 : n->op == OP_MOD ? 2 : 3;
    const struct cel_type *result = NULL;

    for (size_t i = 0; i < n_cands; i++) {
        enum cel_tk k = nums[i];
        const struct cel_type *rt;
        if ((a->k != TK_DYN && a->k != k) || (b->k != TK_DYN && b->k != k))
            continue;
        if (k == TK_LIST) {
            const struct cel_type *ea = a->k == TK_LIST ? a->a : &fatia_cel_t_dyn;
            const struct cel_type *eb = b->k == TK_LIST ? b->a : &fatia_cel_t_dyn;
            const struct cel_type *elem = join_types(ea, eb);
            rt = elem == &fatia_cel_t_dyn ? &fatia_cel_t_list_dyn : a->k == TK_LIST ? a : b;
        } else {
            rt = k == TK_INT      ? &fatia_cel_t_int
                 : k == TK_UINT   ? &fatia_cel_t_uint
                 : k == TK_DOUBLE ? &fatia_cel_t_double
                                  : &fatia_cel_t_string;
        }
        result = result ? join_types(result, rt) : rt;
    }
    if (!result)
        return type_error(c, n, "found no matching overload for '%s' applied to '(%s, %s)'",
                          binop_names[n->op], tname(a, 0), tname(b, 1));
    n->type = result;
    return 0;
}

static int check_binop(struct checker *c, struct cel_node *n, struct est *e)
{
    const struct cel_type *a, *b;
    struct est ea, eb;
    int r = check_node(c, n->a, &ea);

    if (r < 0 || (r = check_node(c, n->b, &eb)) < 0)
        return r;
    a = n->a->type;
    b = n->b->type;
    e->cost = sat_add(sat_add(ea.cost, eb.cost), 1);
    e->size = 0;
    e->elem = 0;
    switch (n->op) {
    case OP_EQ:
    case OP_NE:
        if (!assignable(a, b) &&
            !(a->k == TK_NULL || b->k == TK_NULL ? a->k == TK_DYN || b->k == TK_DYN : false))
            return type_error(c, n, "found no matching overload for '%s' applied to '(%s, %s)'",
                              binop_names[n->op], tname(a, 0), tname(b, 1));
        n->type = &fatia_cel_t_bool;
        /* comparing strings or lists walks the shorter one */
        e->cost = sat_add(e->cost, tenth(FATIA_MIN(ea.size, eb.size)));
        if (a->k == TK_LIST || a->k == TK_MAP || a->k == TK_DYN)
            e->cost = sat_add(e->cost, sat_mul(FATIA_MIN(ea.size, eb.size),
                                               sat_add(2, tenth(FATIA_MAX(ea.elem, eb.elem)))));
        return 0;
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
        if (!orderable(a, b))
            return type_error(c, n, "found no matching overload for '%s' applied to '(%s, %s)'",
                              binop_names[n->op], tname(a, 0), tname(b, 1));
        n->type = &fatia_cel_t_bool;
        e->cost = sat_add(e->cost, tenth(FATIA_MIN(ea.size, eb.size)));
        return 0;
    case OP_IN:
        if (b->k == TK_LIST) {
            if (!assignable(b->a, a))
                return type_error(c, n,
                                  "found no matching overload for '@in' applied to '(%s, %s)'",
                                  tname(a, 0), tname(b, 1));
        } else if (b->k == TK_MAP) {
            if (!assignable(b->a, a))
                return type_error(c, n,
                                  "found no matching overload for '@in' applied to '(%s, %s)'",
                                  tname(a, 0), tname(b, 1));
        } else if (b->k != TK_DYN) {
            return type_error(c, n, "found no matching overload for '@in' applied to '(%s, %s)'",
                              tname(a, 0), tname(b, 1));
        }
        n->type = &fatia_cel_t_bool;
        /* each comparison may walk a string */
        e->cost = sat_add(e->cost, sat_mul(eb.size, sat_add(1, tenth(ea.size))));
        return 0;
    default:
        r = check_arith(c, n, a, b);
        if (r < 0)
            return r;
        if (n->type->k == TK_STRING || n->type->k == TK_LIST || n->type->k == TK_DYN) {
            /* a new string costs a tenth per byte, a new list one per element */
            e->size = sat_add(ea.size, eb.size);
            e->elem = FATIA_MAX(ea.elem, eb.elem);
            e->cost = sat_add(e->cost, n->type->k == TK_STRING ? tenth(e->size) : e->size);
        }
        return 0;
    }
}

static int push_var(struct checker *c, const struct cel_node *n, const char *name,
                    const struct cel_type *t, struct est est, int *ret_slot)
{
    if (c->n_vars == (int)FATIA_ARRAY_SIZE(c->vars))
        return type_error(c, n, "too many nested variables");
    c->vars[c->n_vars] = (struct var){name, c->prog->n_slots, t, est};
    *ret_slot = c->prog->n_slots++;
    c->n_vars++;
    return 0;
}

static int check_comp(struct checker *c, struct cel_node *n, struct est *e)
{
    const struct cel_type *rt, *vt;
    struct est er, eb = {0}, ec = {0}, ev = {0};
    uint64_t iters;
    int r = check_node(c, n->a, &er);

    if (r < 0)
        return r;
    rt = n->a->type;
    if (rt->k == TK_LIST)
        vt = rt->a;
    else if (rt->k == TK_MAP)
        vt = rt->a;
    else if (rt->k == TK_DYN)
        vt = &fatia_cel_t_dyn;
    else
        return type_error(c, n->a,
                          "expression of type '%s' cannot be the range of a "
                          "comprehension (must be a list, map or dynamic)",
                          tname(rt, 0));
    if (!strcmp(n->name, "device"))
        return type_error(c, n, "the iteration variable may not be named 'device'");
    ev.size = rt->k == TK_MAP ? CEL_ATTR_MAX : er.elem;
    if (rt->k == TK_DYN)
        ev.size = CEL_ATTR_MAX;
    r = push_var(c, n, n->name, vt, ev, &n->slot);
    if (r < 0)
        return r;
    r = check_node(c, n->b, &eb);
    if (r == 0 && n->c)
        r = check_node(c, n->c, &ec);
    c->n_vars--;
    if (r < 0)
        return r;
    if (n->op != CK_MAP) {
        const struct cel_type *pt = n->b->type;
        if (pt->k != TK_BOOL && pt->k != TK_DYN)
            return type_error(c, n->b, "the predicate must be a bool, not '%s'", tname(pt, 0));
    }
    switch (n->op) {
    case CK_ALL:
    case CK_EXISTS:
    case CK_EXISTS_ONE:
        n->type = &fatia_cel_t_bool;
        break;
    case CK_MAP:
        n->type = type_new(c, TK_LIST, n->b->type, NULL);
        break;
    case CK_MAP_FILTER:
        n->type = type_new(c, TK_LIST, n->c->type, NULL);
        break;
    case CK_FILTER:
        n->type = rt->k == TK_LIST  ? rt
                  : rt->k == TK_MAP ? type_new(c, TK_LIST, rt->a, NULL)
                                    : &fatia_cel_t_list_dyn;
        break;
    }
    if (!n->type)
        return -ENOMEM;
    iters = rt->k == TK_DYN ? CEL_ATTR_MAX : er.size;
    e->cost = sat_add(er.cost, sat_mul(iters, sat_add(sat_add(eb.cost, ec.cost), 2)));
    if (n->op == CK_MAP || n->op == CK_MAP_FILTER || n->op == CK_FILTER)
        e->cost = sat_add(e->cost, iters); /* the result list */
    e->size = iters;
    e->elem = n->op == CK_MAP ? eb.size : n->op == CK_MAP_FILTER ? ec.size : ev.size;
    return 0;
}

static int check_node(struct checker *c, struct cel_node *n, struct est *e)
{
    struct est ea, eb, ec;
    int r;

    *e = (struct est){0};
    switch (n->k) {
    case NK_LIT:
        switch (n->lit.k) {
        case VK_NULL:
            n->type = &fatia_cel_t_null;
            break;
        case VK_BOOL:
            n->type = &fatia_cel_t_bool;
            break;
        case VK_INT:
            n->type = &fatia_cel_t_int;
            break;
        case VK_UINT:
            n->type = &fatia_cel_t_uint;
            break;
        case VK_DOUBLE:
            n->type = &fatia_cel_t_double;
            break;
        default:
            n->type = &fatia_cel_t_string;
            e->size = n->lit.s.n;
            break;
        }
        return 0;
    case NK_IDENT:
        for (int i = c->n_vars - 1; i >= 0; i--) {
            if (!strcmp(c->vars[i].name, n->name)) {
                n->slot = c->vars[i].slot;
                n->type = c->vars[i].type;
                *e = c->vars[i].est;
                e->cost = 1;
                return 0;
            }
        }
        if (c->prog->rule && (!strcmp(n->name, "self") || !strcmp(n->name, "oldSelf"))) {
            n->slot = n->name[0] == 's' ? CEL_SLOT_SELF : CEL_SLOT_OLD_SELF;
            c->prog->uses_old_self |= n->slot == CEL_SLOT_OLD_SELF;
            n->type = &fatia_cel_t_dyn;
            e->cost = 1;
            e->size = CEL_ATTR_MAX;
            e->elem = CEL_MAP_MAX;
            return 0;
        }
        if (!c->prog->rule && !strcmp(n->name, "device")) {
            n->slot = -1;
            n->type = &fatia_cel_t_device;
            e->cost = 1;
            return 0;
        }
        return type_error(c, n, "undeclared reference to '%s'", n->name);
    case NK_SELECT:
        return check_select(c, n, e);
    case NK_INDEX:
        return check_index(c, n, e);
    case NK_CALL:
        return check_call(c, n, e);
    case NK_LIST: {
        struct est *es = fatia_calloc(n->n_args ? n->n_args : 1, sizeof(*es));
        const struct cel_type *elem = NULL;
        if (!es)
            return -ENOMEM;
        r = check_kids(c, n->args, n->n_args, es);
        e->cost = 10;
        for (size_t i = 0; r == 0 && i < n->n_args; i++) {
            elem = elem ? join_types(elem, n->args[i]->type) : n->args[i]->type;
            e->cost = sat_add(e->cost, es[i].cost);
            e->elem = FATIA_MAX(e->elem, es[i].size);
        }
        fatia_free(es);
        if (r < 0)
            return r;
        e->size = n->n_args;
        n->type =
            !elem || elem->k == TK_DYN ? &fatia_cel_t_list_dyn : type_new(c, TK_LIST, elem, NULL);
        return n->type ? 0 : -ENOMEM;
    }
    case NK_MAP: {
        struct est *es = fatia_calloc(n->n_args ? n->n_args : 1, sizeof(*es));
        const struct cel_type *kt = NULL, *vt = NULL;
        if (!es)
            return -ENOMEM;
        r = check_kids(c, n->args, n->n_args, es);
        e->cost = 30;
        for (size_t i = 0; r == 0 && i < n->n_args; i += 2) {
            const struct cel_type *k = n->args[i]->type, *v = n->args[i + 1]->type;
            if (k->k != TK_BOOL && k->k != TK_INT && k->k != TK_UINT && k->k != TK_STRING &&
                k->k != TK_DYN) {
                r = type_error(c, n->args[i], "unsupported map key type '%s'", tname(k, 0));
                break;
            }
            kt = kt ? join_types(kt, k) : k;
            vt = vt ? join_types(vt, v) : v;
            e->cost = sat_add(e->cost, sat_add(es[i].cost, es[i + 1].cost));
            e->elem = FATIA_MAX(e->elem, es[i + 1].size);
        }
        fatia_free(es);
        if (r < 0)
            return r;
        e->size = n->n_args / 2;
        n->type = !kt || (kt->k == TK_DYN && vt->k == TK_DYN) ? &fatia_cel_t_map_dyn
                                                              : type_new(c, TK_MAP, kt, vt);
        return n->type ? 0 : -ENOMEM;
    }
    case NK_NOT:
    case NK_NEG:
        r = check_node(c, n->a, &ea);
        if (r < 0)
            return r;
        e->cost = sat_add(ea.cost, 1);
        if (n->k == NK_NOT) {
            if (n->a->type->k != TK_BOOL && n->a->type->k != TK_DYN)
                return type_error(c, n, "found no matching overload for '!_' applied to '(%s)'",
                                  tname(n->a->type, 0));
            n->type = &fatia_cel_t_bool;
        } else {
            enum cel_tk k = n->a->type->k;
            if (k != TK_INT && k != TK_DOUBLE && k != TK_DYN)
                return type_error(c, n, "found no matching overload for '-_' applied to '(%s)'",
                                  tname(n->a->type, 0));
            n->type = n->a->type;
        }
        return 0;
    case NK_AND:
    case NK_OR:
        r = check_node(c, n->a, &ea);
        if (r < 0 || (r = check_node(c, n->b, &eb)) < 0)
            return r;
        for (int i = 0; i < 2; i++) {
            const struct cel_node *k = i ? n->b : n->a;
            if (k->type->k != TK_BOOL && k->type->k != TK_DYN)
                return type_error(c, n, "found no matching overload for '%s' applied to '(%s, %s)'",
                                  n->k == NK_AND ? "_&&_" : "_||_", tname(n->a->type, 0),
                                  tname(n->b->type, 1));
        }
        n->type = &fatia_cel_t_bool;
        e->cost = sat_add(ea.cost, eb.cost);
        return 0;
    case NK_COND:
        r = check_node(c, n->a, &ea);
        if (r < 0 || (r = check_node(c, n->b, &eb)) < 0 || (r = check_node(c, n->c, &ec)) < 0)
            return r;
        if (n->a->type->k != TK_BOOL && n->a->type->k != TK_DYN)
            return type_error(c, n->a, "the condition of '?:' must be a bool, not '%s'",
                              tname(n->a->type, 0));
        if (types_equal(n->b->type, n->c->type))
            n->type = n->b->type;
        else if (n->b->type->k == TK_DYN || n->c->type->k == TK_DYN || n->b->type->k == TK_NULL ||
                 n->c->type->k == TK_NULL ||
                 (n->b->type->k == n->c->type->k &&
                  (n->b->type->k == TK_LIST || n->b->type->k == TK_MAP)))
            n->type = &fatia_cel_t_dyn;
        else
            return type_error(c, n,
                              "found no matching overload for '_?_:_' applied to '(bool, "
                              "%s, %s)'",
                              tname(n->b->type, 0), tname(n->c->type, 1));
        e->cost = sat_add(ea.cost, FATIA_MAX(eb.cost, ec.cost));
        e->size = FATIA_MAX(eb.size, ec.size);
        e->elem = FATIA_MAX(eb.elem, ec.elem);
        return 0;
    case NK_BINOP:
        return check_binop(c, n, e);
    case NK_HAS:
        r = check_node(c, n->a, &ea);
        if (r < 0)
            return r;
        switch (n->a->type->k) {
        case TK_DEVICE:
            if (strcmp(n->name, "driver") && strcmp(n->name, "attributes") &&
                strcmp(n->name, "capacity") && strcmp(n->name, "allowMultipleAllocations"))
                return type_error(c, n, "undefined field '%s'", n->name);
            break;
        case TK_MAP:
        case TK_DYN:
            break;
        default:
            return type_error(c, n, "invalid argument to has() macro: type '%s' has no fields",
                              tname(n->a->type, 0));
        }
        n->type = &fatia_cel_t_bool;
        e->cost = sat_add(ea.cost, 1);
        if (n->a->type->k != TK_DEVICE)
            e->cost = sat_add(e->cost, ea.size); /* a lookup compares up to every key */
        return 0;
    case NK_COMP:
        return check_comp(c, n, e);
    case NK_BIND:
        r = check_node(c, n->a, &ea);
        if (r < 0)
            return r;
        if (!strcmp(n->name, "device"))
            return type_error(c, n, "the variable may not be named 'device'");
        r = push_var(c, n, n->name, n->a->type, ea, &n->slot);
        if (r < 0)
            return r;
        r = check_node(c, n->b, &eb);
        c->n_vars--;
        if (r < 0)
            return r;
        n->type = n->b->type;
        e->cost = sat_add(ea.cost, eb.cost);
        e->size = eb.size;
        e->elem = eb.elem;
        return 0;
    }
    return type_error(c, n, "internal error: unknown node");
}

int fatia_cel_check(struct fatia_cel_program *prog, char *why, size_t why_n)
{
    struct checker c = {.prog = prog, .why = why, .why_n = why_n};
    struct est e;
    int r = check_node(&c, prog->root, &e);

    if (r < 0)
        return r;
    if (prog->want_string) {
        if (prog->root->type->k != TK_STRING && prog->root->type->k != TK_DYN)
            return CEL_ERROR_AT(why, why_n, prog->root->line, prog->root->col, -FATIA_E_TYPE,
                                "must evaluate to string, not %s", tname(prog->root->type, 0));
    } else if (prog->root->type->k != TK_BOOL && prog->root->type->k != TK_DYN)
        return CEL_ERROR_AT(why, why_n, prog->root->line, prog->root->col, -FATIA_E_TYPE,
                            "must evaluate to bool or the unknown type, not %s",
                            tname(prog->root->type, 0));
    prog->max_cost = e.cost;
    if (e.cost > FATIA_CEL_COST_LIMIT)
        return CEL_ERROR_AT(why, why_n, prog->root->line, prog->root->col, -FATIA_E_COST,
                            "too complex: the estimated worst-case cost %" PRIu64
                            " exceeds the limit of %" PRIu64,
                            e.cost, FATIA_CEL_COST_LIMIT);
    return 0;
}
