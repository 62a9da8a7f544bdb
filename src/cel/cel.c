/*
 * cel/cel.c: compiling a selector (see cel.h): copy the text, parse, check.
 *
 * A program owns its text (string literals point into decoded copies held by their nodes), its
 * nodes and its composite types, and is immutable once compiled, so one compiled DeviceClass
 * selector can be evaluated by several threads at once.
 */
#include "base/compat.h"

#include "cel/cel.h"

#include "base/alloc.h"
#include "base/error.h"
#include "cel/cel_int.h"

void fatia_cel_program_free(struct fatia_cel_program *p)
{
    if (!p)
        return;
    while (p->nodes) {
        struct cel_node *n = p->nodes;
        p->nodes = n->next_alloc;
        fatia_free(n->name);
        fatia_free(n->args);
        fatia_cel_regex_free(n->re);
        fatia_free(n->q);
        fatia_free(n->sv);
        fatia_free(n);
    }
    while (p->types) {
        struct cel_type *t = p->types;
        p->types = t->next;
        fatia_free(t);
    }
    fatia_free(p->text);
    fatia_free(p);
}

int fatia_cel_compile(const char *expr, size_t expr_n, struct fatia_cel_program **ret, char *why,
                      size_t why_n)
{
    struct fatia_cel_program *p;
    int r;

    if (why && why_n)
        why[0] = '\0';
    if (expr_n > FATIA_CEL_MAX_BYTES)
        return CEL_ERROR_AT(why, why_n, 1, 1, -FATIA_E_LIMIT, "expression longer than %d bytes",
                            FATIA_CEL_MAX_BYTES);
    p = fatia_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->text = fatia_malloc(expr_n + 1);
    if (!p->text) {
        fatia_free(p);
        return -ENOMEM;
    }
    if (expr_n)
        memcpy(p->text, expr, expr_n);
    p->text[expr_n] = '\0';
    p->text_n = expr_n;
    r = fatia_cel_parse(p, why, why_n);
    if (r == 0)
        r = fatia_cel_check(p, why, why_n);
    if (r < 0) {
        fatia_cel_program_free(p);
        return r;
    }
    *ret = p;
    return 0;
}

uint64_t fatia_cel_program_max_cost(const struct fatia_cel_program *p)
{
    return p->max_cost;
}

const char *fatia_cel_program_text(const struct fatia_cel_program *p)
{
    return p->text;
}
