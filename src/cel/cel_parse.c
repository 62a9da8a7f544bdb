/*
 * cel/fatia_cel_parse.c: CEL syntax -> tree (the grammar of the CEL language definition).
 *
 *     Expr     = Or ["?" Or ":" Expr]
 *     Or       = And {"||" And}            And = Relation {"&&" Relation}
 *     Relation = Add {("<"|"<="|">="|">"|"=="|"!="|"in") Add}
 *     Add      = Mul {("+"|"-") Mul}       Mul = Unary {("*"|"/"|"%") Unary}
 *     Unary    = Member | "!" {"!"} Member | "-" {"-"} Member
 *     Member   = Primary {"." IDENT ["(" [Args] ")"] | "[" Expr "]"}
 *     Primary  = ["."] IDENT ["(" [Args] ")"] | "(" Expr ")" | "[" [List] [","] "]"
 *              | "{" [MapInits] [","] "}" | literal
 *
 * Recursive descent over a token array read up front (two-token lookahead folds "-" into a
 * numeric literal, so -9223372036854775808 is an int as in cel-go). Macros are recognised here
 * and get nodes of their own instead of cel-go's generic comprehension expansion: has(a.f),
 * r.all(x, p), r.exists(x, p), r.exists_one(x, p), r.map(x, t), r.map(x, p, t), r.filter(x, p)
 * and cel.bind(v, init, body). Operands: SELECT/INDEX/CALL: a = target or receiver; INDEX b =
 * key; BINOP/AND/OR a, b; COND a ? b : c; NOT/NEG a; HAS a = object, name = field; COMP a =
 * range, b = predicate or transform, c = transform of the 3-argument map; BIND a = init,
 * b = body.
 *
 * Limits: nesting depth CEL_MAX_DEPTH and CEL_MAX_NODES nodes (an expression is at most 10 KiB,
 * so neither binds a real selector); beyond them the expression is refused, never the stack.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "cel/cel_int.h"

struct parser {
    struct fatia_cel_program *prog;
    struct cel_token *toks;
    size_t n_toks, pos;
    int depth;
    char *why;
    size_t why_n;
};

static const struct cel_token *peek(const struct parser *p, size_t ahead)
{
    size_t i = p->pos + ahead;

    return &p->toks[i < p->n_toks ? i : p->n_toks - 1];
}

static const struct cel_token *next(struct parser *p)
{
    const struct cel_token *t = peek(p, 0);

    if (p->pos + 1 < p->n_toks)
        p->pos++;
    return t;
}

static int syntax_error(struct parser *p, const struct cel_token *t, const char *expected)
{
    if (t->t == T_EOF)
        return CEL_ERROR_AT(p->why, p->why_n, t->line, t->col, -FATIA_E_PARSE,
                            "syntax error: unexpected end of input%s%s",
                            expected ? ", expected " : "", expected ? expected : "");
    return CEL_ERROR_AT(p->why, p->why_n, t->line, t->col, -FATIA_E_PARSE,
                        "syntax error: unexpected %s '%.*s'%s%s", fatia_cel_tok_name(t->t),
                        (int)FATIA_MIN(t->n, 40), t->p, expected ? ", expected " : "",
                        expected ? expected : "");
}

static int expect(struct parser *p, enum cel_tok t)
{
    if (peek(p, 0)->t != t)
        return syntax_error(p, peek(p, 0), fatia_cel_tok_name(t));
    next(p);
    return 0;
}

static struct cel_node *node_new(struct parser *p, enum cel_nk k, const struct cel_token *at,
                                 int *err)
{
    struct cel_node *n;

    if (p->prog->n_nodes >= CEL_MAX_NODES) {
        *err = CEL_ERROR_AT(p->why, p->why_n, at->line, at->col, -FATIA_E_LIMIT,
                            "expression has more than %d nodes", CEL_MAX_NODES);
        return NULL;
    }
    n = fatia_calloc(1, sizeof(*n));
    if (!n) {
        *err = -ENOMEM;
        return NULL;
    }
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    n->slot = -1;
    n->next_alloc = p->prog->nodes;
    p->prog->nodes = n;
    p->prog->n_nodes++;
    return n;
}

static int add_arg(struct cel_node *n, struct cel_node *arg)
{
    struct cel_node **v;

    if ((n->n_args & (n->n_args - 1)) == 0) {
        v = fatia_reallocarray(n->args, n->n_args ? n->n_args * 2 : 1, sizeof(*v));
        if (!v)
            return -ENOMEM;
        n->args = v;
    }
    n->args[n->n_args++] = arg;
    return 0;
}

static char *tok_text(const struct cel_token *t)
{
    return fatia_strndup(t->p, t->n);
}

static int parse_expr(struct parser *p, struct cel_node **ret);

static int enter(struct parser *p)
{
    const struct cel_token *t = peek(p, 0);

    if (++p->depth > CEL_MAX_DEPTH)
        return CEL_ERROR_AT(p->why, p->why_n, t->line, t->col, -FATIA_E_LIMIT,
                            "expression nested more than %d levels deep", CEL_MAX_DEPTH);
    return 0;
}

/* Args = Expr {"," Expr}, up to the closing token `close`. */
static int parse_args(struct parser *p, struct cel_node *n, enum cel_tok close, bool trailing)
{
    int r;

    if (peek(p, 0)->t == close) {
        next(p);
        return 0;
    }
    for (;;) {
        struct cel_node *arg;
        r = parse_expr(p, &arg);
        if (r < 0)
            return r;
        if (add_arg(n, arg) < 0)
            return -ENOMEM;
        if (peek(p, 0)->t == T_COMMA) {
            next(p);
            if (trailing && peek(p, 0)->t == close) {
                next(p);
                return 0;
            }
            continue;
        }
        return expect(p, close);
    }
}

static bool is_simple_ident(const struct cel_node *n)
{
    return n->k == NK_IDENT;
}

/* A receiver call: macros become COMP / BIND nodes. */
static int make_call(struct parser *p, struct cel_node *call, const struct cel_token *name_tok,
                     struct cel_node **ret)
{
    static const struct {
        const char *name;
        enum cel_comp kind;
        size_t n_args;
    } macros[] = {
        {"all", CK_ALL, 2}, {"exists", CK_EXISTS, 2},  {"exists_one", CK_EXISTS_ONE, 2},
        {"map", CK_MAP, 2}, {"map", CK_MAP_FILTER, 3}, {"filter", CK_FILTER, 2},
    };
    struct cel_node *recv = call->a;

    if (!recv) {
        if (!strcmp(call->name, "has")) {
            struct cel_node *arg = call->n_args == 1 ? call->args[0] : NULL;
            if (!arg || arg->k != NK_SELECT)
                return CEL_ERROR_AT(p->why, p->why_n, name_tok->line, name_tok->col, -FATIA_E_PARSE,
                                    "invalid argument to has() macro: it takes one field "
                                    "selection such as has(a.b)");
            call->k = NK_HAS;
            call->a = arg->a;
            fatia_free(call->name);
            call->name = arg->name;
            arg->name = NULL;
            call->n_args = 0;
        }
        *ret = call;
        return 0;
    }
    if (recv->k == NK_IDENT && !strcmp(recv->name, "cel") && !strcmp(call->name, "bind")) {
        if (call->n_args != 3 || !is_simple_ident(call->args[0]))
            return CEL_ERROR_AT(p->why, p->why_n, name_tok->line, name_tok->col, -FATIA_E_PARSE,
                                "cel.bind() takes a variable name, an initial value and an "
                                "expression");
        call->k = NK_BIND;
        fatia_free(call->name);
        call->name = call->args[0]->name;
        call->args[0]->name = NULL;
        call->a = call->args[1];
        call->b = call->args[2];
        call->n_args = 0;
        *ret = call;
        return 0;
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(macros); i++) {
        if (strcmp(call->name, macros[i].name) || call->n_args != macros[i].n_args)
            continue;
        if (!is_simple_ident(call->args[0]))
            return CEL_ERROR_AT(p->why, p->why_n, call->args[0]->line, call->args[0]->col,
                                -FATIA_E_PARSE, "argument is not an identifier");
        call->k = NK_COMP;
        call->op = macros[i].kind;
        fatia_free(call->name);
        call->name = call->args[0]->name;
        call->args[0]->name = NULL;
        call->b = call->args[1];
        call->c = call->n_args == 3 ? call->args[2] : NULL;
        call->n_args = 0;
        break;
    }
    *ret = call;
    return 0;
}

static int parse_primary(struct parser *p, struct cel_node **ret)
{
    const struct cel_token *t = peek(p, 0);
    struct cel_node *n = NULL;
    int err = 0, r;

    switch (t->t) {
    case T_MINUS: {
        /* a negative numeric literal (only reached from parse_unary's lookahead) */
        const struct cel_token *num = peek(p, 1);
        next(p);
        next(p);
        n = node_new(p, NK_LIT, t, &err);
        if (!n)
            return err;
        if (num->t == T_INT) {
            n->lit.k = VK_INT;
            n->lit.i = num->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)num->u;
        } else {
            n->lit.k = VK_DOUBLE;
            n->lit.d = -num->d;
        }
        *ret = n;
        return 0;
    }
    case T_INT:
    case T_UINT:
    case T_DOUBLE:
    case T_TRUE:
    case T_FALSE:
    case T_NULL:
    case T_STRING:
        if (t->t == T_INT && t->u > (uint64_t)INT64_MAX)
            return CEL_ERROR_AT(p->why, p->why_n, t->line, t->col, -FATIA_E_PARSE,
                                "integer literal out of range");
        next(p);
        n = node_new(p, NK_LIT, t, &err);
        if (!n)
            return err;
        switch (t->t) {
        case T_INT:
            n->lit.k = VK_INT;
            n->lit.i = t->i;
            break;
        case T_UINT:
            n->lit.k = VK_UINT;
            n->lit.u = t->u;
            break;
        case T_DOUBLE:
            n->lit.k = VK_DOUBLE;
            n->lit.d = t->d;
            break;
        case T_TRUE:
        case T_FALSE:
            n->lit = cel_bool(t->t == T_TRUE);
            break;
        case T_NULL:
            n->lit.k = VK_NULL;
            break;
        default:
            /* the node takes the decoded string */
            n->name = t->s;
            ((struct cel_token *)t)->s = NULL;
            n->lit = cel_str(n->name, t->s_n);
            break;
        }
        *ret = n;
        return 0;
    case T_LPAREN:
        next(p);
        r = parse_expr(p, ret);
        if (r < 0)
            return r;
        return expect(p, T_RPAREN);
    case T_LBRACKET:
        next(p);
        n = node_new(p, NK_LIST, t, &err);
        if (!n)
            return err;
        *ret = n;
        return parse_args(p, n, T_RBRACKET, true);
    case T_LBRACE:
        next(p);
        n = node_new(p, NK_MAP, t, &err);
        if (!n)
            return err;
        *ret = n;
        if (peek(p, 0)->t == T_RBRACE) {
            next(p);
            return 0;
        }
        for (;;) {
            struct cel_node *k, *v;
            r = parse_expr(p, &k);
            if (r < 0)
                return r;
            r = expect(p, T_COLON);
            if (r < 0)
                return r;
            r = parse_expr(p, &v);
            if (r < 0)
                return r;
            if (add_arg(n, k) < 0 || add_arg(n, v) < 0)
                return -ENOMEM;
            if (peek(p, 0)->t == T_COMMA) {
                next(p);
                if (peek(p, 0)->t == T_RBRACE) {
                    next(p);
                    return 0;
                }
                continue;
            }
            return expect(p, T_RBRACE);
        }
    case T_DOT:
        /* leading dot: a name in the root scope */
        next(p);
        if (peek(p, 0)->t != T_IDENT)
            return syntax_error(p, peek(p, 0), "identifier");
        t = peek(p, 0);
        __attribute__((fallthrough));
    case T_IDENT:
        next(p);
        if (peek(p, 0)->t == T_LBRACE)
            return CEL_ERROR_AT(p->why, p->why_n, t->line, t->col, -FATIA_E_PARSE,
                                "message construction is not supported by fatia's CEL");
        if (peek(p, 0)->t == T_LPAREN) {
            const struct cel_token *name = t;
            next(p);
            n = node_new(p, NK_CALL, t, &err);
            if (!n)
                return err;
            n->name = tok_text(name);
            if (!n->name)
                return -ENOMEM;
            r = parse_args(p, n, T_RPAREN, false);
            if (r < 0)
                return r;
            return make_call(p, n, name, ret);
        }
        n = node_new(p, NK_IDENT, t, &err);
        if (!n)
            return err;
        n->name = tok_text(t);
        if (!n->name)
            return -ENOMEM;
        *ret = n;
        return 0;
    default:
        return syntax_error(p, t, NULL);
    }
}

static int parse_member(struct parser *p, struct cel_node **ret)
{
    struct cel_node *n, *m;
    int r = parse_primary(p, &n), err = 0, nested = 0;

    if (r < 0)
        return r;
    for (;;) {
        const struct cel_token *t = peek(p, 0);
        if (t->t == T_DOT || t->t == T_LBRACKET) {
            /* a.b.c... nests to the left: count it against the depth */
            r = enter(p);
            if (r < 0)
                return r;
            nested++;
        }
        if (t->t == T_DOT) {
            const struct cel_token *name;
            next(p);
            name = peek(p, 0);
            if (name->t != T_IDENT)
                return syntax_error(p, name, "a field or method name");
            next(p);
            if (peek(p, 0)->t == T_LPAREN) {
                /* cel-go places member selections and calls at their dot */
                next(p);
                m = node_new(p, NK_CALL, t, &err);
                if (!m)
                    return err;
                m->a = n;
                m->name = tok_text(name);
                if (!m->name)
                    return -ENOMEM;
                r = parse_args(p, m, T_RPAREN, false);
                if (r < 0)
                    return r;
                r = make_call(p, m, name, &n);
                if (r < 0)
                    return r;
                continue;
            }
            m = node_new(p, NK_SELECT, t, &err);
            if (!m)
                return err;
            m->a = n;
            m->name = tok_text(name);
            if (!m->name)
                return -ENOMEM;
            n = m;
        } else if (t->t == T_LBRACKET) {
            next(p);
            m = node_new(p, NK_INDEX, t, &err);
            if (!m)
                return err;
            m->a = n;
            r = parse_expr(p, &m->b);
            if (r < 0)
                return r;
            r = expect(p, T_RBRACKET);
            if (r < 0)
                return r;
            n = m;
        } else {
            break;
        }
    }
    p->depth -= nested;
    *ret = n;
    return 0;
}

static int parse_unary(struct parser *p, struct cel_node **ret)
{
    const struct cel_token *t = peek(p, 0);
    struct cel_node *n;
    int r, err = 0;

    if (t->t == T_NOT || (t->t == T_MINUS && peek(p, 1)->t != T_INT && peek(p, 1)->t != T_DOUBLE)) {
        r = enter(p);
        if (r < 0)
            return r;
        next(p);
        n = node_new(p, t->t == T_NOT ? NK_NOT : NK_NEG, t, &err);
        if (!n)
            return err;
        r = parse_unary(p, &n->a);
        p->depth--;
        if (r < 0)
            return r;
        *ret = n;
        return 0;
    }
    return parse_member(p, ret);
}

static int parse_binary(struct parser *p, int level, struct cel_node **ret);

/* Levels: 0 ||, 1 &&, 2 relations, 3 + -, 4 * / %. */
static bool binop_at(const struct cel_token *t, int level, enum cel_nk *kind, int *op)
{
    static const struct {
        enum cel_tok t;
        int level;
        enum cel_nk kind;
        int op;
    } ops[] = {
        {T_OR, 0, NK_OR, 0},
        {T_AND, 1, NK_AND, 0},
        {T_EQ, 2, NK_BINOP, OP_EQ},
        {T_NE, 2, NK_BINOP, OP_NE},
        {T_LT, 2, NK_BINOP, OP_LT},
        {T_LE, 2, NK_BINOP, OP_LE},
        {T_GT, 2, NK_BINOP, OP_GT},
        {T_GE, 2, NK_BINOP, OP_GE},
        {T_IN, 2, NK_BINOP, OP_IN},
        {T_PLUS, 3, NK_BINOP, OP_ADD},
        {T_MINUS, 3, NK_BINOP, OP_SUB},
        {T_STAR, 4, NK_BINOP, OP_MUL},
        {T_SLASH, 4, NK_BINOP, OP_DIV},
        {T_PERCENT, 4, NK_BINOP, OP_MOD},
    };

    for (size_t i = 0; i < FATIA_ARRAY_SIZE(ops); i++) {
        if (ops[i].t == t->t && ops[i].level == level) {
            *kind = ops[i].kind;
            *op = ops[i].op;
            return true;
        }
    }
    return false;
}

static int parse_binary(struct parser *p, int level, struct cel_node **ret)
{
    struct cel_node *left;
    enum cel_nk kind;
    int op, r, err = 0, nested = 0;

    r = level == 5 ? parse_unary(p, &left) : parse_binary(p, level + 1, &left);
    if (r < 0)
        return r;
    while (binop_at(peek(p, 0), level, &kind, &op)) {
        const struct cel_token *t = next(p);
        struct cel_node *n = node_new(p, kind, t, &err);
        if (!n)
            return err;
        /* a long chain a + b + c ... nests to the left: count it against the depth */
        r = enter(p);
        if (r < 0)
            return r;
        nested++;
        n->op = op;
        n->a = left;
        r = level == 4 ? parse_unary(p, &n->b) : parse_binary(p, level + 1, &n->b);
        if (r < 0)
            return r;
        left = n;
    }
    p->depth -= nested;
    *ret = left;
    return 0;
}

static int parse_expr(struct parser *p, struct cel_node **ret)
{
    struct cel_node *cond, *n;
    const struct cel_token *t;
    int r, err = 0;

    r = enter(p);
    if (r < 0)
        return r;
    r = parse_binary(p, 0, &cond);
    if (r < 0)
        return r;
    t = peek(p, 0);
    if (t->t != T_QUESTION) {
        p->depth--;
        *ret = cond;
        return 0;
    }
    next(p);
    n = node_new(p, NK_COND, t, &err);
    if (!n)
        return err;
    n->a = cond;
    r = parse_binary(p, 0, &n->b);
    if (r < 0)
        return r;
    r = expect(p, T_COLON);
    if (r < 0)
        return r;
    r = parse_expr(p, &n->c);
    if (r < 0)
        return r;
    p->depth--;
    *ret = n;
    return 0;
}

int fatia_cel_parse(struct fatia_cel_program *prog, char *why, size_t why_n)
{
    struct parser p = {.prog = prog, .why = why, .why_n = why_n};
    struct cel_lexer lx;
    size_t cap = 0;
    int r = 0;

    fatia_cel_lex_init(&lx, prog->text, prog->text_n, why, why_n);
    for (;;) {
        struct cel_token t;
        if (p.n_toks == cap) {
            size_t ncap = cap ? cap * 2 : 32;
            struct cel_token *v = fatia_reallocarray(p.toks, ncap, sizeof(*v));
            if (!v) {
                r = -ENOMEM;
                goto out_free_tokens;
            }
            p.toks = v;
            cap = ncap;
        }
        r = fatia_cel_lex_next(&lx, &t);
        if (r < 0)
            goto out_free_tokens;
        p.toks[p.n_toks++] = t;
        if (t.t == T_EOF)
            break;
    }
    prog->multiline = lx.line > 1;
    r = parse_expr(&p, &prog->root);
    if (r == 0 && peek(&p, 0)->t != T_EOF)
        r = syntax_error(&p, peek(&p, 0), "end of input");
out_free_tokens:
    for (size_t i = 0; i < p.n_toks; i++)
        fatia_free(p.toks[i].s);
    fatia_free(p.toks);
    return r;
}
