/*
 * bench/protobuf_bench.c: the Kubernetes protobuf codec against JSON on a list of N pods
 * (default 10,000), both ways, from and to the same jansson tree fatiad answers from:
 *
 *   json encode   json_dumps (compact), what a JSON answer costs
 *   json decode   json_loadb, what a JSON body costs
 *   pb encode     fatia_api_pb_wrap of the PodList (k8s\0 + runtime.Unknown)
 *   pb decode     fatia_api_pb_unwrap
 *
 * Each is run RUNS times (default 5) and the median printed, with the sizes. The pods are
 * realistic (labels, annotations, an owner, two containers with env, ports, resources and a
 * probe, a status with conditions and container states), each a little different.
 * Usage: bench_protobuf [N] [RUNS]
 */
#include "base/compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "apiserver/protobuf.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static json_t *pod(int i)
{
    json_error_t e;
    char buf[4096];
    json_t *p;

    snprintf(
        buf, sizeof(buf),
        "{\"metadata\":{\"name\":\"train-%d-x7k2p\",\"namespace\":\"team-%d\",\"uid\":"
        "\"6f1c2a3b-%04x-4d5e-8f90-a1b2c3d4e5f6\",\"resourceVersion\":\"%d\",\"creationTimestamp\":"
        "\"2026-01-02T03:04:05Z\",\"labels\":{\"app\":\"train\",\"batch.kubernetes.io/job-name\":"
        "\"train-%d\",\"kueue.x-k8s.io/queue-name\":\"team\"},\"annotations\":{\"fatia.dev/"
        "slices\":"
        "\"gpu-%d\"},\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":"
        "\"train-%d\",\"uid\":\"0a1b2c3d-%04x\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
        "\"spec\":{\"restartPolicy\":\"Never\",\"nodeName\":\"box-%d\",\"schedulerName\":"
        "\"default-scheduler\",\"terminationGracePeriodSeconds\":30,\"tolerations\":[{\"key\":"
        "\"nvidia.com/gpu\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}],\"containers\":[{"
        "\"name\":\"main\",\"image\":\"registry.example/train:%d\",\"command\":[\"python3\","
        "\"train.py\"],\"args\":[\"--epochs\",\"%d\"],\"env\":[{\"name\":\"RANK\",\"value\":\"%d\"}"
        ",{"
        "\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}],"
        "\"ports\":"
        "[{\"name\":\"metrics\",\"containerPort\":9090,\"protocol\":\"TCP\"}],\"resources\":{"
        "\"requests\":{\"cpu\":\"4\",\"memory\":\"32Gi\",\"nvidia.com/gpu\":\"1\"},\"limits\":{"
        "\"nvidia.com/gpu\":\"1\"}},\"readinessProbe\":{\"httpGet\":{\"path\":\"/healthz\","
        "\"port\":\"metrics\"},\"periodSeconds\":10}},{\"name\":\"sidecar\",\"image\":\"busybox\","
        "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]},\"status\":{\"phase\":\"Running\","
        "\"podIP\":\"10.1.%d.%d\",\"startTime\":\"2026-01-02T03:04:06Z\",\"conditions\":[{\"type\":"
        "\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-02T03:04:09Z\"},{\"type\":"
        "\"PodScheduled\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\"}],"
        "\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,\"restartCount\":%d,\"image\":"
        "\"registry.example/train:%d\",\"imageID\":\"sha256:%08x\",\"started\":true,\"state\":{"
        "\"running\":{\"startedAt\":\"2026-01-02T03:04:08Z\"}}}]}}",
        i, i % 16, i & 0xffff, 1000 + i, i, i % 8, i, i & 0xffff, i % 4, i % 3, 10 + i % 90, i,
        (i / 250) % 250, i % 250, i % 5, i % 3, (unsigned)i * 2654435761u);
    p = json_loads(buf, 0, &e);
    if (!p) {
        fprintf(stderr, "bench_protobuf: %s\n", e.text);
        exit(1);
    }
    return p;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 10000;
    int runs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5;
    json_t *items = json_array(), *list;
    double t[4][64];
    size_t json_len = 0, pb_len = 0;
    char why[256];

    if (runs < 1 || runs > 64 || n < 1)
        return 2;
    for (int i = 0; i < n; i++)
        json_array_append_new(items, pod(i));
    list = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "v1", "kind", "PodList", "metadata",
                     "resourceVersion", "12345", "items", items);
    for (int r = 0; r < runs; r++) {
        struct fatia_buf b = FATIA_BUF_INIT;
        json_t *back;
        char *s;
        double t0 = now_ms();
        s = json_dumps(list, JSON_COMPACT);
        t[0][r] = now_ms() - t0;
        json_len = strlen(s);
        t0 = now_ms();
        back = json_loadb(s, json_len, 0, NULL);
        t[1][r] = now_ms() - t0;
        json_decref(back);
        free(s);
        t0 = now_ms();
        if (fatia_api_pb_wrap(list, &b) < 0)
            return 1;
        t[2][r] = now_ms() - t0;
        pb_len = b.len;
        t0 = now_ms();
        if (fatia_api_pb_unwrap(b.p, b.len, &back, why, sizeof(why)) < 0) {
            fprintf(stderr, "bench_protobuf: decode: %s\n", why);
            return 1;
        }
        t[3][r] = now_ms() - t0;
        if (json_array_size(json_object_get(back, "items")) != (size_t)n)
            return 1;
        json_decref(back);
        fatia_buf_release(&b);
    }
    for (int k = 0; k < 4; k++)
        qsort(t[k], (size_t)runs, sizeof(double), cmp_d);
    printf("pods: %d, runs: %d (medians)\n", n, runs);
    printf("json size: %zu bytes\npb size: %zu bytes\n", json_len, pb_len);
    printf("json encode: %.1f ms\njson decode: %.1f ms\n", t[0][runs / 2], t[1][runs / 2]);
    printf("pb encode: %.1f ms\npb decode: %.1f ms\n", t[2][runs / 2], t[3][runs / 2]);
    json_decref(list);
    return 0;
}
