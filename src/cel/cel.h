/*
 * cel/cel.h: the CEL subset of DRA device selectors (Kubernetes
 * k8s.io/dynamic-resource-allocation/cel): compile once, evaluate per device. The same language
 * serves the rules of CustomResourceDefinitions (x-kubernetes-validations: `self`, `oldSelf`;
 * fatia_cel_compile_rule, cel_rule.c), at the end of this header.
 *
 * The environment is upstream's: one variable `device` with
 *     device.driver                       string
 *     device.attributes[DOMAIN].NAME      int | bool | string | semver (dyn)
 *     device.capacity[DOMAIN].NAME        Quantity
 *     device.allowMultipleAllocations     bool
 * An unqualified attribute or capacity name belongs to the driver's domain, so `type` of a
 * gpu.nvidia.com device is device.attributes["gpu.nvidia.com"].type. An unknown domain is an
 * empty map; an unknown name in a domain is a runtime error ("no such key"), which the allocator
 * treats as "this device does not match" and reports (upstream aborts the allocation attempt on
 * that node: see docs/demand.md).
 *
 * The language: literals (int, uint 1u, double, string with escapes and raw r"..", bool, null),
 * lists and maps, the operators of CEL with its precedence (?:, ||, &&, == != < <= > >= in,
 * + -, * / %, ! and unary -), field selection and indexing, the macros has(), all(), exists(),
 * exists_one(), map(), filter() and cel.bind(), and the functions: size, startsWith, endsWith,
 * contains, matches (RE2 syntax, cel/cel_regex.h), lowerAscii, upperAscii, trim, indexOf,
 * lastIndexOf, substring, charAt, replace, split, join, int, uint, double, string, bool, dyn;
 * quantity / isQuantity with compareTo, isGreaterThan, isLessThan, add, sub, sign, isInteger,
 * asInteger, asApproximateFloat; semver / isSemver with major, minor, patch, compareTo,
 * isGreaterThan, isLessThan. Anything else is a compile error naming its line and column.
 *
 * Semantics follow cel-go as Kubernetes configures it: static types with `dyn` for attribute
 * values; heterogeneous runtime equality (1 == 1.0 through dyn is true, "a" == 1 is false);
 * cross-type numeric ordering; && and || commutative over errors (false && error is false);
 * int overflow, division by zero and failed conversions are runtime errors.
 *
 * Cost: every evaluation counts cost units as cel-go's runtime cost tracker does in spirit (one
 * per operation, plus a tenth of the bytes or elements a string or list operation walks or
 * builds, plus text x pattern size for a regex match) and stops with -FATIA_E_COST past the
 * limit (upstream's default, FATIA_CEL_COST_LIMIT = 1,000,000, about 0.1 s). Compilation also
 * estimates the worst case over every possible device (strings of attributes at most 64 bytes,
 * at most 32 attributes per domain) and rejects an expression whose estimate exceeds the limit,
 * as kube-apiserver's validation does ("too complex").
 */
#ifndef FATIA_CEL_CEL_H
#define FATIA_CEL_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/quantity.h"
#include "model/semver.h"

#define FATIA_CEL_COST_LIMIT UINT64_C(1000000)
#define FATIA_CEL_MAX_BYTES  (10 * 1024) /* upstream's limit on selector expressions */

struct fatia_cel_program;

/* Compiles a selector. 0 and *ret; or -FATIA_E_PARSE (syntax), -FATIA_E_TYPE (undeclared names,
 * no matching overload, not a bool), -FATIA_E_COST (estimated worst-case cost over the limit),
 * -FATIA_E_LIMIT (longer than FATIA_CEL_MAX_BYTES, nested too deeply), -ENOMEM. why gets the
 * message with its place: "1:27: undeclared reference to 'devcie'". */
int fatia_cel_compile(const char *expr, size_t expr_n, struct fatia_cel_program **ret, char *why,
                      size_t why_n);

void fatia_cel_program_free(struct fatia_cel_program *p);

/* The worst-case cost the compiler estimated. */
uint64_t fatia_cel_program_max_cost(const struct fatia_cel_program *p);

/* The text it was compiled from (borrowed, NUL-terminated). */
const char *fatia_cel_program_text(const struct fatia_cel_program *p);

/* One device as a selector sees it (borrowed views; nothing is copied). */
enum fatia_cel_attr_type {
    FATIA_CEL_ATTR_INT,
    FATIA_CEL_ATTR_BOOL,
    FATIA_CEL_ATTR_STRING,
    FATIA_CEL_ATTR_VERSION,
};

struct fatia_cel_attr {
    const char *name; /* as in the ResourceSlice: "type" or "fatia.dev/nvlinkIsland" */
    enum fatia_cel_attr_type type;
    int64_t i;
    bool b;
    const char *s;                  /* STRING, and VERSION's text */
    const struct fatia_semver *ver; /* VERSION, parsed */
};

struct fatia_cel_capacity {
    const char *name;
    struct fatia_quantity value;
};

struct fatia_cel_device {
    const char *driver;
    const struct fatia_cel_attr *attrs;
    size_t n_attrs;
    const struct fatia_cel_capacity *caps;
    size_t n_caps;
    bool allow_multiple_allocations;
};

/* Evaluates p on dev with a cost limit (0 = FATIA_CEL_COST_LIMIT). Returns 0 with *ret_match, or
 * -FATIA_E_EVAL (a runtime error: no such key, overflow, no such overload, a result that is no
 * bool), -FATIA_E_COST, -ENOMEM; why gets the message. *ret_cost (may be NULL) gets the cost
 * spent, also on failure. Thread-safe: a program is read-only once compiled. */
int fatia_cel_eval_device(const struct fatia_cel_program *p, const struct fatia_cel_device *dev,
                          uint64_t cost_limit, bool *ret_match, uint64_t *ret_cost, char *why,
                          size_t why_n);

/* ---- CustomResourceDefinition rules (x-kubernetes-validations; cel_rule.c) ---- */

/* Compiles a rule (want_string false: must be bool) or a messageExpression (want_string true:
 * must be string) over the variables `self` and `oldSelf`, both dyn: the value of the schema
 * node the rule is on, and its value before the update. *ret_uses_old_self (may be NULL) tells a
 * transition rule, which runs only when there is an old value. Errors as fatia_cel_compile. */
int fatia_cel_compile_rule(const char *expr, size_t expr_n, bool want_string,
                           struct fatia_cel_program **ret, bool *ret_uses_old_self, char *why,
                           size_t why_n);

/* Evaluates a rule on self and old_self (JSON values, borrowed; old_self may be NULL). 0 with
 * *ret_ok (a bool rule), or with the string in msg (a messageExpression: msg gets at most msg_n
 * - 1 bytes); -FATIA_E_EVAL, -FATIA_E_COST, -ENOMEM with why. *ret_cost as
 * fatia_cel_eval_device's. */
int fatia_cel_eval_rule(const struct fatia_cel_program *p, const json_t *self,
                        const json_t *old_self, uint64_t cost_limit, bool *ret_ok, char *msg,
                        size_t msg_n, uint64_t *ret_cost, char *why, size_t why_n);

#endif
