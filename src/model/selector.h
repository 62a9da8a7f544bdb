/*
 * model/selector.h: label selectors.
 *
 * Two inputs, one compiled form:
 *   - the JSON LabelSelector of a manifest: {matchLabels: {k: v}, matchExpressions: [{key,
 *     operator: In|NotIn|Exists|DoesNotExist, values: [...]}]}; requirements are ANDed;
 *   - the string form of `kubectl -l` and `?labelSelector=`: "app=web,tier!=db,env in (a,b),
 *     env notin (c),feature,!legacy" (also "=="). Upstream's labels.Parse also knows the Gt/Lt
 *     operators ("x>1"), which no API object's LabelSelector can express: they are rejected
 *     here, like any other unknown operator.
 * An empty selector ({} or "") matches everything. A NULL selector pointer matches nothing; callers
 * that give "omitted" a meaning (Kueue's namespaceSelector: omitted = none) use that.
 *
 * Validation of the JSON form (In/NotIn need values, Exists/DoesNotExist must have none, keys and
 * values follow labels.h) is done by fatia_selector_from_json, which reports the first violation;
 * the schemas (model/kinds/meta.c) check the same rules field by field.
 *
 * Matching is upstream's: In and "=" need the key present with a listed value; NotIn and "!="
 * also match when the key is absent; a label whose JSON value is no string counts as absent.
 */
#ifndef FATIA_MODEL_SELECTOR_H
#define FATIA_MODEL_SELECTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum fatia_sel_op {
    FATIA_SEL_IN,
    FATIA_SEL_NOT_IN,
    FATIA_SEL_EXISTS,
    FATIA_SEL_DOES_NOT_EXIST,
    FATIA_SEL_EQUALS,     /* string form "=" / "==", same as In with one value */
    FATIA_SEL_NOT_EQUALS, /* string form "!=", same as NotIn with one value */
};

struct fatia_sel_req {
    char *key;
    enum fatia_sel_op op;
    char **values;
    size_t n_values;
};

struct fatia_selector {
    struct fatia_sel_req *reqs;
    size_t n_reqs;
};

/* Compiles a JSON LabelSelector. Returns 0, -ENOMEM, or -EINVAL with a message in why (e.g.
 * "matchExpressions[1].values: may not be specified when `operator` is 'Exists' or
 * 'DoesNotExist'"). matchLabels become "=" requirements. Caller frees *ret. */
int fatia_selector_from_json(const json_t *sel, struct fatia_selector **ret, char *why,
                             size_t why_n);

/* Compiles the string form (NULL is ""). Same returns; why holds upstream's parser message
 * ("found ',', expected: identifier after ','"). Values of In/NotIn come out sorted and unique. */
int fatia_selector_parse(const char *s, struct fatia_selector **ret, char *why, size_t why_n);

/* Does the label map (a JSON object of string values, or NULL for no labels) satisfy sel? */
bool fatia_selector_matches(const struct fatia_selector *sel, const json_t *labels);

/* True when the selector has no requirement (matches everything). */
bool fatia_selector_is_empty(const struct fatia_selector *sel);

void fatia_selector_free(struct fatia_selector *sel);

#endif
