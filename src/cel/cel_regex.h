/*
 * cel/cel_regex.h: the regular expressions of CEL's `matches` (RE2 syntax, as cel-go's Go
 * regexp reads it), compiled to a Pike VM whose matching time is O(text x program) with no
 * backtracking, so no pattern can hang the engine (internal to src/cel).
 *
 * Supported: literals and escapes (\a \f \t \n \r \v \x41 \x{263a} \123 \Q...\E and escaped
 * punctuation), '.', classes ([a-z], [^...], [[:alpha:]], [[:^digit:]], \d \D \s \S \w \W inside
 * and outside classes), anchors ^ $ \A \z, word boundaries \b \B, groups (...), (?:...),
 * (?P<name>...), (?<name>...), flags (?i) (?m) (?s) (?U) and (?flags:...), alternation,
 * repetition * + ? {n} {n,} {n,m} with lazy variants (greediness does not change whether a
 * pattern matches), repeat counts up to 1000 as RE2.
 *
 * Rejected with an error, never silently misread: what RE2 rejects too (backreferences \1,
 * lookaround (?=...), \Z, possessive and nested repetition "a**"), and what this engine does not
 * implement: Unicode classes \pL / \p{Greek} and \X, and case-insensitive matching of non-ASCII
 * pattern letters (ASCII letters fold as RE2 folds them, including K and the Kelvin sign, s and
 * the long s). Patterns that compile to more than FATIA_CEL_REGEX_MAX_INSTS instructions are
 * "too large" (Go accepts larger ones).
 */
#ifndef FATIA_CEL_CEL_REGEX_H
#define FATIA_CEL_CEL_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_CEL_REGEX_MAX_INSTS 20000

struct fatia_cel_regex;

/* Compiles pattern (pattern_n bytes of UTF-8). 0, -EINVAL with why ("missing closing ): ..."),
 * -ENOMEM. */
int fatia_cel_regex_compile(const char *pattern, size_t pattern_n, struct fatia_cel_regex **ret,
                            char *why, size_t why_n);

/* Number of instructions: the per-character work of a match, for cost accounting. */
size_t fatia_cel_regex_size(const struct fatia_cel_regex *re);

/* Does re match anywhere in text (RE2 partial match)? 0 with *ret_match, or -ENOMEM. */
int fatia_cel_regex_search(const struct fatia_cel_regex *re, const char *text, size_t text_n,
                           bool *ret_match);

void fatia_cel_regex_free(struct fatia_cel_regex *re);

#endif
