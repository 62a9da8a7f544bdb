/*
 * apiserver/pb_negotiate.c: does an Accept header choose protobuf?
 *
 * As kube-apiserver's negotiation (apiserver/pkg/endpoints/handlers/negotiation, over
 * goautoneg): the entries are ranked by q (default 1; q=0 is "not acceptable"), ties keep the
 * header's order, and the first entry the server can produce wins. Produced here: JSON, YAML,
 * protobuf and the wildcards, which mean JSON. An entry with as=Table (or any as=) is a Table or
 * metadata rendering, which has no protobuf form (Table is +protobuf=false): it means JSON.
 * So `application/vnd.kubernetes.protobuf,application/json` (client-go's typed clients) is
 * protobuf, `application/json;as=Table;...,application/json` (kubectl get) is JSON.
 */
#include "base/compat.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "apiserver/protobuf.h"

struct entry {
    double q;
    int order;
    bool pb;
};

static int by_rank(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->q != y->q)
        return x->q > y->q ? -1 : 1;
    return x->order - y->order;
}

static bool trim_eq(const char *p, size_t n, const char *want)
{
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return n == strlen(want) && !strncasecmp(p, want, n);
}

bool fatia_api_pb_accepted(const char *accept, size_t n)
{
    struct entry e[32];
    int ne = 0;
    const char *p = accept, *end = accept + n;

    while (p < end && ne < 32) {
        const char *comma = memchr(p, ',', (size_t)(end - p)), *semi;
        const char *stop = comma ? comma : end;
        struct entry x = {1.0, ne, false};
        bool known = false, as = false;

        semi = memchr(p, ';', (size_t)(stop - p));
        {
            size_t tn = (size_t)((semi ? semi : stop) - p);
            if (trim_eq(p, tn, FATIA_API_PB_MEDIA))
                known = x.pb = true;
            else if (trim_eq(p, tn, "application/json") || trim_eq(p, tn, "application/yaml") ||
                     trim_eq(p, tn, "*/*") || trim_eq(p, tn, "application/*"))
                known = true;
        }
        for (const char *a = semi; a && a < stop;) {
            const char *next = memchr(a + 1, ';', (size_t)(stop - a - 1));
            const char *v = a + 1;
            size_t vn = (size_t)((next ? next : stop) - v);
            while (vn && *v == ' ')
                v++, vn--;
            if (vn > 2 && !strncasecmp(v, "q=", 2))
                x.q = strtod(v + 2, NULL);
            else if (vn > 3 && !strncasecmp(v, "as=", 3))
                as = true;
            a = next;
        }
        if (as)
            x.pb = false;
        if (known && x.q > 0)
            e[ne++] = x;
        p = comma ? comma + 1 : end;
    }
    if (!ne)
        return false;
    qsort(e, (size_t)ne, sizeof(e[0]), by_rank);
    return e[0].pb;
}
