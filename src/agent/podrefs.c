/*
 * agent/podrefs.c: a ConfigMap's or Secret's value for a key (see podrefs.h). Pure: no I/O.
 *
 * Model: fatiad stores a Secret's data as the JSON form of Go's []byte (standard base64 with
 * padding, checked at admission by model/kinds/config.c), and a ConfigMap's binaryData the same
 * way; data of a ConfigMap is plain strings. The agent decodes at the moment it builds an
 * environment or writes a volume's files, so the decoded bytes never sit in the agent's memory
 * longer than that, and never go to a log or an Event: messages name the object and the key,
 * never a value (kubelet's wording: `couldn't find key K in Secret ns/name`).
 *
 * Choices rejected: a cache of decoded Secrets in the agent (a second copy to keep in step with
 * the API's, and plaintext kept around for no gain: lookups are in-memory already).
 */
#include "base/compat.h"

#include "agent/podrefs.h"

#include <errno.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int fatia_pod_ref_b64_decode(const char *s, char **ret, size_t *ret_n)
{
    size_t n = strlen(s), o = 0;
    unsigned char *out;

    if (n % 4)
        return -FATIA_E_INVALID;
    out = fatia_malloc(n / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad || (v[k] = b64_val(c)) < 0) {
                fatia_free(out);
                return -FATIA_E_INVALID;
            }
        }
        out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
        if (pad < 2)
            out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
        if (pad < 1)
            out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    }
    out[o] = '\0';
    *ret = (char *)out;
    *ret_n = o;
    return 0;
}

int fatia_pod_ref_value(const json_t *obj, bool secret, const char *key, char **ret_value,
                        size_t *ret_n)
{
    const char *s = fatia_json_str(json_object_get(obj, "data"), key);
    size_t n;
    int r;

    if (s && !secret) {
        n = strlen(s);
        *ret_value = fatia_malloc(n + 1);
        if (!*ret_value)
            return -ENOMEM;
        memcpy(*ret_value, s, n + 1);
        if (ret_n)
            *ret_n = n;
        return 0;
    }
    if (!s && !secret)
        s = fatia_json_str(json_object_get(obj, "binaryData"), key);
    if (!s)
        return -ENODATA;
    r = fatia_pod_ref_b64_decode(s, ret_value, &n);
    if (r == 0 && ret_n)
        *ret_n = n;
    return r;
}
