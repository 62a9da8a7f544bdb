/*
 * fuzz/fuzz_apply.c: the merge and the field sets of server-side apply (apiserver/fieldset.h).
 * The input is a live object and an apply configuration separated by a NUL byte; the first byte
 * picks the kind whose types (list keys, sets) drive the walk. Invariants, for configurations
 * fatia_api_fs_check accepts:
 *   - no crash, and neither input is modified;
 *   - after the merge, every field of the configuration's set has the configuration's value
 *     (the set of fields that differ between configuration and merged object is empty);
 *   - the merge is idempotent (merging the configuration into its result changes nothing);
 *   - set algebra: (A u B) \ B has nothing outside A, A n B nothing outside A, A \ A is empty,
 *     A u A is A; and removing the configuration's fields from the merged object leaves none of
 *     them with the configuration's value at a leaf that is not a list item.
 */
#include "base/compat.h"

#include <stdio.h>
#include <stdlib.h>

#include "apiserver/fieldset.h"
#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* cfg without empty objects and lists: an empty map or granular list in a configuration owns the
 * (empty) value but merges into the live one (structured-merge-diff's semantics), so its value
 * in the result is not the configuration's. */
static void strip_empty(json_t *v, int depth)
{
    const char *k;
    json_t *m;
    void *tmp;
    size_t i;

    if (depth > 80)
        return;
    if (json_is_object(v)) {
        json_object_foreach_safe(v, tmp, k, m)
        {
            strip_empty(m, depth + 1);
            if ((json_is_object(m) && !json_object_size(m)) ||
                (json_is_array(m) && !json_array_size(m)))
                json_object_del(v, k);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, m) strip_empty(m, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *sep;
    json_t *live, *cfg, *lc = NULL, *cc = NULL, *m = NULL, *m2 = NULL;
    json_t *a = NULL, *b = NULL, *u = NULL, *d = NULL, *x = NULL, *chg = NULL, *t1 = NULL;
    const struct fatia_kind *k;
    char why[512];
    size_t n = 0;

    if (size < 2 || size > 1 << 16)
        return 0;
    while (fatia_kinds[n])
        n++;
    k = fatia_kinds[data[0] % n];
    sep = memchr(p + 1, '\0', size - 1);
    if (!sep)
        return 0;
    live = json_loadb(p + 1, (size_t)(sep - p - 1), 0, NULL);
    cfg = json_loadb(sep + 1, size - (size_t)(sep - p) - 1, 0, NULL);
    if (!json_is_object(live) || !json_is_object(cfg) ||
        fatia_api_fs_check(cfg, k, why, sizeof(why)) < 0)
        goto out;
    lc = json_deep_copy(live);
    cc = json_deep_copy(cfg);
    m = fatia_api_fs_merge(live, cfg, k);
    if (!json_equal(live, lc) || !json_equal(cfg, cc))
        abort();
    {
        json_t *ne = json_deep_copy(cfg), *sa;
        strip_empty(ne, 0);
        sa = fatia_api_fs_of(ne, k, FATIA_FS_MAIN, true);
        chg = fatia_api_fs_changed(sa, ne, m, k);
        if (!fatia_api_fs_empty(chg))
            abort();
        json_decref(sa);
        json_decref(ne);
    }
    a = fatia_api_fs_of(cfg, k, FATIA_FS_MAIN, true);
    m2 = fatia_api_fs_merge(m, cfg, k);
    if (!json_equal(m, m2))
        abort();
    b = fatia_api_fs_of(live, k, FATIA_FS_MAIN, false);
    u = fatia_api_fs_combine(a, b, FATIA_FS_UNION);
    d = fatia_api_fs_combine(u, b, FATIA_FS_DIFF);
    t1 = fatia_api_fs_combine(d, a, FATIA_FS_DIFF);
    if (!fatia_api_fs_empty(t1))
        abort();
    json_decref(t1);
    x = fatia_api_fs_combine(a, b, FATIA_FS_INTERSECT);
    t1 = fatia_api_fs_combine(x, a, FATIA_FS_DIFF);
    if (!fatia_api_fs_empty(t1))
        abort();
    json_decref(t1);
    t1 = fatia_api_fs_combine(a, a, FATIA_FS_DIFF);
    if (!fatia_api_fs_empty(t1))
        abort();
    json_decref(t1);
    t1 = fatia_api_fs_combine(a, a, FATIA_FS_UNION);
    if (!json_equal(t1, a))
        abort();
    /* the update diff walks only where the objects differ: the same sets as the set algebra */
    {
        json_t *so = fatia_api_fs_of(live, k, FATIA_FS_MAIN, false);
        json_t *sn = fatia_api_fs_of(m, k, FATIA_FS_MAIN, false);
        json_t *add = fatia_api_fs_combine(sn, so, FATIA_FS_DIFF);
        json_t *rem = fatia_api_fs_combine(so, sn, FATIA_FS_DIFF);
        json_t *com = fatia_api_fs_combine(sn, so, FATIA_FS_INTERSECT);
        json_t *mod = fatia_api_fs_changed(com, live, m, k);
        json_t *want = fatia_api_fs_combine(add, mod, FATIA_FS_UNION), *gc, *gr;
        fatia_api_fs_diff(live, m, k, FATIA_FS_MAIN, &gc, &gr);
        if (getenv("FUZZ_APPLY_DEBUG")) {
            char *s1 = json_dumps(want, JSON_SORT_KEYS), *s2 = json_dumps(gc, JSON_SORT_KEYS);
            char *s3 = json_dumps(rem, JSON_SORT_KEYS), *s4 = json_dumps(gr, JSON_SORT_KEYS);
            fprintf(stderr, "chg want %s\n    got  %s\nrem want %s\n    got  %s\n", s1, s2, s3, s4);
            free(s1), free(s2), free(s3), free(s4);
        }
        if (!json_equal(want, gc) || !json_equal(rem, gr))
            abort();
        json_decref(so), json_decref(sn), json_decref(add), json_decref(rem);
        json_decref(com), json_decref(mod), json_decref(want), json_decref(gc), json_decref(gr);
    }
    fatia_api_fs_remove(m, a, k);
out:
    json_decref(t1);
    json_decref(lc);
    json_decref(cc);
    json_decref(m);
    json_decref(m2);
    json_decref(a);
    json_decref(b);
    json_decref(u);
    json_decref(d);
    json_decref(x);
    json_decref(chg);
    json_decref(live);
    json_decref(cfg);
    return 0;
}
