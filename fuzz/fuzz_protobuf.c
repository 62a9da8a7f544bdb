/*
 * fuzz/fuzz_protobuf.c: the Kubernetes protobuf decoder (apiserver/protobuf.h) on hostile bytes.
 * An input starting with "k8s\0" is a whole body (the envelope); otherwise its first two bytes
 * pick a message of the tables and the rest is that message. Invariants: no crash, no read past
 * the input (ASan), a failure leaves nothing behind (LSan), and what decodes is stable: its
 * encoding decodes to the same tree (decode . encode . decode == decode).
 */
#include "base/compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void unstable(const json_t *a, const json_t *b)
{
    char *x = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
    char *y = b ? json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    fprintf(stderr, "fuzz_protobuf: not stable:\n first  %s\n again  %s\n", x, y ? y : "(failed)");
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *v = NULL, *again = NULL;
    char why[256];

    if (size > 1 << 16)
        return 0;
    if (size >= 4 && !memcmp(data, "k8s", 4)) {
        if (fatia_api_pb_unwrap(data, size, &v, why, sizeof(why)) < 0)
            return 0;
        if (fatia_api_pb_wrap(v, &b) < 0 ||
            fatia_api_pb_unwrap(b.p, b.len, &again, why, sizeof(why)) < 0 || !json_equal(v, again))
            abort();
    } else if (size >= 2) {
        const struct fatia_pb_msg *m =
            &fatia_api_pb_msgs[((size_t)data[0] << 8 | data[1]) % fatia_api_pb_n_msgs];
        if (fatia_api_pb_decode(m, data + 2, size - 2, &v, why, sizeof(why)) < 0)
            return 0;
        if (fatia_api_pb_encode(m, v, &b) < 0 ||
            fatia_api_pb_decode(m, b.p, b.len, &again, why, sizeof(why)) < 0 ||
            !json_equal(v, again))
            unstable(v, again);
    }
    json_decref(v);
    json_decref(again);
    fatia_buf_release(&b);
    return 0;
}
