/*
 * model/semver.h: semantic versions (semver.org 2.0.0), as DRA's `version` device attributes and
 * the Kubernetes CEL semver library read them (both parse with github.com/blang/semver/v4).
 *
 * Strict form: MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]; numeric parts have no leading zeros and
 * fit in uint64; prerelease and build identifiers are non-empty runs of [0-9A-Za-z-], numeric
 * prerelease identifiers have no leading zeros. The normalizing form (CEL's
 * `semver(s, true)`) first drops a leading "v", fills a missing minor or patch with 0 and strips
 * leading zeros of the three numbers, as upstream's normalizeAndParse does.
 *
 * Precedence (semver.org §11): major, minor, patch numerically; a version with a prerelease
 * precedes the same version without; prerelease identifiers compare one by one, numeric ones by
 * value and below alphanumeric ones, alphanumeric ones in ASCII order, and a shorter list of
 * equal identifiers precedes a longer one. Build metadata is ignored.
 */
#ifndef FATIA_MODEL_SEMVER_H
#define FATIA_MODEL_SEMVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_SEMVER_MAX 256 /* longest text accepted (attribute values hold at most 64) */

struct fatia_semver {
    uint64_t major, minor, patch;
    char pre[FATIA_SEMVER_MAX]; /* prerelease without the '-', "" for none */
    char build[FATIA_SEMVER_MAX];
};

/* Parses s. 0, or -EINVAL with a reason in why (may be NULL): "No Major.Minor.Patch elements
 * found", "Invalid character(s) found in minor number \"1a\"", ... (blang's messages). */
int fatia_semver_parse(const char *s, bool normalize, struct fatia_semver *ret, char *why,
                       size_t why_n);

/* <0, 0, >0 by precedence. */
int fatia_semver_cmp(const struct fatia_semver *a, const struct fatia_semver *b);

/* Canonical text ("1.2.3-rc.1+b5"); snprintf semantics. */
int fatia_semver_format(const struct fatia_semver *v, char *buf, size_t n);

#endif
