/*
 * cel/cel_int.h: the inside of the CEL implementation (internal to src/cel).
 *
 * Pipeline: cel_lex.c (tokens with line and column) -> fatia_cel_parse.c (syntax tree, macros
 * recognised) -> fatia_cel_check.c (static types, name resolution, overloads, worst-case cost) ->
 * cel_eval.c (tree-walking evaluator over values in a per-evaluation arena) with the function
 * library in cel_lib.c.
 *
 * Values are small tagged structs passed by value; strings, lists and maps point into the
 * evaluation's arena (or into the program for literals, or into the device for attributes), so
 * an evaluation frees everything at once and error paths never leak. The device's attribute and
 * capacity maps are not materialised: a value of kind VK_DEVMAP stands for
 * device.attributes (domain NULL) or device.attributes[domain], and lookups go to the device.
 */
#ifndef FATIA_CEL_CEL_INT_H
#define FATIA_CEL_CEL_INT_H

#include "base/compat.h"

#include "base/buf.h"
#include "cel/cel.h"
#include "cel/cel_regex.h"

#define CEL_MAX_DEPTH 100  /* nesting of the syntax tree */
#define CEL_MAX_NODES 8192 /* nodes of one expression */
#define CEL_ATTR_MAX  64   /* longest attribute string or version (upstream) */
#define CEL_NAME_MAX  63   /* longest driver or domain name */
#define CEL_MAP_MAX   32   /* attributes + capacities per device */

/* ---- types ---- */

enum cel_tk {
    TK_DYN,
    TK_NULL,
    TK_BOOL,
    TK_INT,
    TK_UINT,
    TK_DOUBLE,
    TK_STRING,
    TK_LIST,
    TK_MAP,
    TK_QUANTITY,
    TK_SEMVER,
    TK_DEVICE,
};

struct cel_type {
    enum cel_tk k;
    const struct cel_type *a; /* LIST: element; MAP: key */
    const struct cel_type *b; /* MAP: value */
    struct cel_type *next;    /* the program's list of composite types, for freeing */
};

extern const struct cel_type fatia_cel_t_dyn, fatia_cel_t_null, fatia_cel_t_bool, fatia_cel_t_int,
    fatia_cel_t_uint, fatia_cel_t_double, fatia_cel_t_string, fatia_cel_t_quantity,
    fatia_cel_t_semver, fatia_cel_t_device, fatia_cel_t_list_dyn, fatia_cel_t_list_string,
    fatia_cel_t_map_dyn, fatia_cel_t_attrs, fatia_cel_t_attr_domain, fatia_cel_t_caps,
    fatia_cel_t_cap_domain;

/* "int", "list(string)", "map(string, dyn)" into b. */
void fatia_cel_type_format(const struct cel_type *t, struct fatia_buf *b);

/* ---- values ---- */

enum cel_vk {
    VK_NULL,
    VK_BOOL,
    VK_INT,
    VK_UINT,
    VK_DOUBLE,
    VK_STRING,
    VK_LIST,
    VK_MAP,
    VK_QUANTITY,
    VK_SEMVER,
    VK_DEVICE,
    VK_DEVMAP,
};

struct cel_list;
struct cel_map;

struct cel_val {
    uint8_t k;
    uint8_t caps; /* DEVMAP: 0 = attributes, 1 = capacity */

    union {
        bool b;
        int64_t i;
        uint64_t u;
        double d;

        struct {
            const char *p;
            size_t n;
        } s; /* STRING; DEVMAP: the domain (p NULL = the map of domains) */
        const struct cel_list *l;
        const struct cel_map *m;
        const struct fatia_quantity *q;
        const struct fatia_semver *sv;
    };
};

struct cel_list {
    size_t n;
    struct cel_val v[];
};

struct cel_map {
    size_t n;
    struct cel_val kv[]; /* key at 2i, value at 2i+1 */
};

/* ---- syntax tree ---- */

enum cel_nk {
    NK_LIT,
    NK_IDENT,
    NK_SELECT,
    NK_INDEX,
    NK_CALL, /* global call (a == NULL) or receiver call (a = receiver) */
    NK_LIST,
    NK_MAP,
    NK_NOT,
    NK_NEG,
    NK_AND,
    NK_OR,
    NK_COND,
    NK_BINOP,
    NK_HAS,
    NK_COMP,
    NK_BIND,
};

enum cel_binop {
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD
};

enum cel_comp {
    CK_ALL,
    CK_EXISTS,
    CK_EXISTS_ONE,
    CK_MAP,
    CK_MAP_FILTER,
    CK_FILTER
};

/* Functions, resolved by name and argument count at check time; dispatched on value kinds at
 * run time. */
enum cel_fn {
    FN_NONE,
    FN_SIZE,
    FN_STARTS_WITH,
    FN_ENDS_WITH,
    FN_CONTAINS,
    FN_MATCHES,
    FN_LOWER_ASCII,
    FN_UPPER_ASCII,
    FN_TRIM,
    FN_INDEX_OF,
    FN_LAST_INDEX_OF,
    FN_SUBSTRING,
    FN_CHAR_AT,
    FN_REPLACE,
    FN_SPLIT,
    FN_JOIN,
    FN_INT,
    FN_UINT,
    FN_DOUBLE,
    FN_STRING,
    FN_BOOL,
    FN_DYN,
    FN_QUANTITY,
    FN_IS_QUANTITY,
    FN_SEMVER,
    FN_IS_SEMVER,
    FN_COMPARE_TO,
    FN_IS_GREATER_THAN,
    FN_IS_LESS_THAN,
    FN_ADD,
    FN_SUB,
    FN_SIGN,
    FN_IS_INTEGER,
    FN_AS_INTEGER,
    FN_AS_APPROXIMATE_FLOAT,
    FN_MAJOR,
    FN_MINOR,
    FN_PATCH,
};

struct cel_node {
    enum cel_nk k;
    uint32_t line, col;
    const struct cel_type *type; /* set by the checker */
    char *name;                  /* IDENT, SELECT field, CALL function; COMP/BIND variable */
    struct cel_val lit;          /* LIT (strings point into the program) */
    int op;                      /* BINOP: enum cel_binop; COMP: enum cel_comp */
    enum cel_fn fn;              /* CALL */
    int slot;                    /* IDENT of a variable, COMP/BIND: the variable; -1 = device */
    struct cel_node *a, *b, *c;  /* operands (see fatia_cel_parse.c) */
    struct cel_node **args;      /* CALL arguments, LIST elements, MAP keys and values */
    size_t n_args;
    struct fatia_cel_regex *re;  /* CALL matches with a constant pattern, compiled once */
    struct fatia_quantity *q;    /* CALL quantity() of a constant, parsed once */
    struct fatia_semver *sv;     /* CALL semver() of a constant, parsed once */
    struct cel_node *next_alloc; /* the program's list of nodes, for freeing */
};

struct fatia_cel_program {
    char *text;
    size_t text_n;
    struct cel_node *root;
    struct cel_node *nodes; /* every node */
    size_t n_nodes;
    struct cel_type *types; /* composite types */
    int n_slots;            /* variables of comprehensions and binds */
    uint64_t max_cost;
    bool multiline;
    /* a CRD's x-kubernetes-validations rule (cel_rule.c): variables self and oldSelf (dyn),
     * no device; the result may be a string (messageExpression) */
    bool rule;
    bool uses_old_self;
    bool want_string;
};

/* Reports an error at a place into why: "1:27: message" (line:column, 1-based, columns counted
 * in characters). */
void fatia_cel_report_at(char *why, size_t why_n, uint32_t line, uint32_t col, const char *fmt, ...)
    FATIA_PRINTF(5, 6);

/* fatia_cel_report_at, then evaluates to err (a negative code). A macro, not a function returning err:
 * the code must be visible where it is returned, or the compiler cannot see that an error path
 * never returns 0, and at -O3 gcc warns (-Wmaybe-uninitialized) that a caller's output may be
 * read unset after a recursive parse returned "success" through such a path. */
#define CEL_ERROR_AT(why, why_n, line, col, err, ...) \
    (fatia_cel_report_at((why), (why_n), (line), (col), __VA_ARGS__), (err))

/* ---- lexer ---- */

enum cel_tok {
    T_EOF,
    T_INT,
    T_UINT,
    T_DOUBLE,
    T_STRING,
    T_IDENT,
    T_TRUE,
    T_FALSE,
    T_NULL,
    T_IN,
    T_LPAREN,
    T_RPAREN,
    T_LBRACKET,
    T_RBRACKET,
    T_LBRACE,
    T_RBRACE,
    T_DOT,
    T_COMMA,
    T_COLON,
    T_QUESTION,
    T_PLUS,
    T_MINUS,
    T_STAR,
    T_SLASH,
    T_PERCENT,
    T_EQ,
    T_NE,
    T_LT,
    T_LE,
    T_GT,
    T_GE,
    T_AND,
    T_OR,
    T_NOT,
};

struct cel_token {
    enum cel_tok t;
    uint32_t line, col;
    const char *p; /* the token's text in the source */
    size_t n;
    int64_t i;  /* INT */
    uint64_t u; /* UINT */
    double d;   /* DOUBLE */
    char *s;    /* STRING, decoded (owned by the lexer's caller), s_n bytes */
    size_t s_n;
};

struct cel_lexer {
    const char *src;
    size_t n, pos;
    uint32_t line, col;
    char *why;
    size_t why_n;
};

void fatia_cel_lex_init(struct cel_lexer *lx, const char *src, size_t n, char *why, size_t why_n);
/* Next token. 0, -FATIA_E_PARSE (why set), -ENOMEM. A STRING token's s is allocated
 * (fatia_malloc) and handed to the caller. */
int fatia_cel_lex_next(struct cel_lexer *lx, struct cel_token *ret);
const char *fatia_cel_tok_name(enum cel_tok t);

/* ---- parser, checker ---- */

/* Parses src into p->root (nodes linked into p->nodes). 0, -FATIA_E_PARSE, -FATIA_E_LIMIT,
 * -ENOMEM. */
int fatia_cel_parse(struct fatia_cel_program *p, char *why, size_t why_n);

/* Types p->root, resolves names and functions, estimates the worst-case cost. 0,
 * -FATIA_E_TYPE, -FATIA_E_COST, -ENOMEM. */
int fatia_cel_check(struct fatia_cel_program *p, char *why, size_t why_n);

/* Function names: "size" -> FN_SIZE; FN_NONE if unknown. */
enum cel_fn fatia_cel_fn_lookup(const char *name);
const char *fatia_cel_fn_name(enum cel_fn fn);

/* ---- evaluation ---- */

struct cel_arena_chunk;

struct cel_eval {
    const struct fatia_cel_program *prog;
    const struct fatia_cel_device *dev;
    struct cel_val self, old_self; /* a rule's variables (slots -2 and -3) */
    uint64_t cost, limit;
    struct cel_val *slots;
    struct cel_arena_chunk *chunks;
    size_t arena_bytes;
    char *why;
    size_t why_n;
    int depth;
};

#define CEL_SLOT_SELF     (-2)
#define CEL_SLOT_OLD_SELF (-3)

/* Evaluates a whole program (cel_eval.c): the root's value into *ret. */
int fatia_cel_eval_root(struct cel_eval *ev, struct cel_val *ret);
/* Frees the evaluation's arena. */
void fatia_cel_eval_release(struct cel_eval *ev);

/* Charges n cost units; -FATIA_E_COST past the limit. */
int fatia_cel_charge(struct cel_eval *ev, uint64_t n);
/* Charges ceil(n / 10) (a tenth of a unit per byte or element walked). */
int fatia_cel_charge_tenth(struct cel_eval *ev, uint64_t n);

/* Arena memory, freed when the evaluation ends. NULL on OOM or past the arena limit. */
void *fatia_cel_alloc(struct cel_eval *ev, size_t n);

/* A runtime error at node n: -FATIA_E_EVAL with "line:col: message" in ev->why. */
int fatia_cel_runtime_error(struct cel_eval *ev, const struct cel_node *n, const char *fmt, ...)
    FATIA_PRINTF(3, 4);

/* Evaluates a call node's function on already evaluated arguments (recv = receiver or NULL). */
int fatia_cel_call(struct cel_eval *ev, const struct cel_node *n, const struct cel_val *recv,
                   const struct cel_val *args, size_t n_args, struct cel_val *ret);

/* Heterogeneous equality (CEL's ==). 0 with *ret, or an error (cost). */
int fatia_cel_equals(struct cel_eval *ev, const struct cel_val *a, const struct cel_val *b,
                     bool *ret);

/* Device lookups. */
const struct fatia_cel_attr *fatia_cel_dev_attr(const struct fatia_cel_device *dev,
                                                const char *domain, size_t domain_n, const char *id,
                                                size_t id_n);
const struct fatia_cel_capacity *fatia_cel_dev_cap(const struct fatia_cel_device *dev,
                                                   const char *domain, size_t domain_n,
                                                   const char *id, size_t id_n);
/* Materialises a DEVMAP into a real map value (for iteration, size, equality). */
int fatia_cel_devmap_materialize(struct cel_eval *ev, const struct cel_val *v, struct cel_val *ret);
/* The value of one attribute. */
struct cel_val fatia_cel_attr_value(const struct fatia_cel_attr *a);

static inline struct cel_val cel_bool(bool b)
{
    struct cel_val v = {.k = VK_BOOL};
    v.b = b;
    return v;
}

static inline struct cel_val cel_int(int64_t i)
{
    struct cel_val v = {.k = VK_INT};
    v.i = i;
    return v;
}

static inline struct cel_val cel_str(const char *p, size_t n)
{
    struct cel_val v = {.k = VK_STRING};
    v.s.p = p;
    v.s.n = n;
    return v;
}

/* "int", "string", ... for messages. */
const char *fatia_cel_vk_name(const struct cel_val *v);

/* Number of Unicode code points in s (CEL string size). */
size_t fatia_cel_utf8_count(const char *s, size_t n);

#endif
