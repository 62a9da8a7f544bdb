/*
 * tests/vgpu/device/probe.cu: the CUDA C program of the H200 proof (scripts/vgpu-proof).
 *
 * Built twice, with the runtime linked statically (nvcc's default) and dynamically
 * (-cudart shared), since the two reach the driver on their own. Subcommands:
 *   check CAP ALLOC     cudaMemGetInfo reports CAP as total; ALLOC bytes work; more than the rest
 *                       fails with cudaErrorMemoryAllocation; after a free ALLOC works again.
 *                       One JSON line, plus the interposer's lookup counters.
 *   serve               a line protocol on stdin for multi-process tests:
 *                         alloc BYTES | free | info | retry BYTES MS | quit
 *                       each answered by one line on stdout.
 *   allocbench N SIZE   N cudaMalloc/cudaFree pairs: microseconds per pair.
 *   launchbench N R     R rounds of N empty-kernel launches then one sync (throughput), and
 *                       R rounds of N/10 launch+sync (latency): medians in microseconds.
 *   spin ITER CYCLES    warm up, print "ready", wait for a line on stdin, then ITER launches of
 *                       an 8-block kernel spinning CYCLES clocks; prints the loop's seconds.
 * Exit status 0 when the command ran and (for check) every expectation held.
 */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <vector>

#include <cuda_runtime.h>

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles, int *sink)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
    if (threadIdx.x == 0 && cycles < 0)
        *sink = 1;
}

static void stats(unsigned long long *by_addr, unsigned long long *by_name)
{
    void (*f)(unsigned long long *, unsigned long long *) =
        (void (*)(unsigned long long *, unsigned long long *))dlsym(RTLD_DEFAULT,
                                                                     "fatia_vgpu_stats");
    *by_addr = *by_name = 0;
    if (f)
        f(by_addr, by_name);
}

static int check(unsigned long long cap, unsigned long long want)
{
    size_t f = 0, t = 0;
    void *a = nullptr, *b = nullptr;
    cudaError_t e_info, e_a, e_over, e_again;
    unsigned long long by_addr, by_name;
    bool ok;

    e_info = cudaMemGetInfo(&f, &t);
    e_a = cudaMalloc(&a, want);
    e_over = cudaMalloc(&b, cap - want + (1ull << 20));
    cudaGetLastError();
    if (e_over == cudaSuccess)
        cudaFree(b);
    cudaFree(a);
    e_again = cudaMalloc(&a, want);
    if (e_again == cudaSuccess)
        cudaFree(a);
    stats(&by_addr, &by_name);
    ok = e_info == cudaSuccess && t == cap && e_a == cudaSuccess &&
         e_over == cudaErrorMemoryAllocation && e_again == cudaSuccess;
    printf("{\"total\": %zu, \"free\": %zu, \"alloc\": %d, \"over\": %d, \"again\": %d, "
           "\"swapped_by_address\": %llu, \"swapped_by_name\": %llu, \"ok\": %s}\n",
           t, f, (int)e_a, (int)e_over, (int)e_again, by_addr, by_name, ok ? "true" : "false");
    return ok ? 0 : 1;
}

static int serve()
{
    std::vector<void *> held;
    char line[256];

    cudaFree(0);
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof(line), stdin)) {
        unsigned long long n = 0, ms = 0;
        void *p = nullptr;

        if (sscanf(line, "alloc %llu", &n) == 1) {
            cudaError_t e = cudaMalloc(&p, n);
            cudaGetLastError();
            if (e == cudaSuccess)
                held.push_back(p);
            printf("rc=%d\n", (int)e);
        } else if (strncmp(line, "free", 4) == 0) {
            for (void *q : held)
                cudaFree(q);
            held.clear();
            printf("rc=0\n");
        } else if (sscanf(line, "retry %llu %llu", &n, &ms) == 2) {
            double t0 = now_s();
            cudaError_t e;

            do {
                e = cudaMalloc(&p, n);
                cudaGetLastError();
                if (e != cudaErrorMemoryAllocation)
                    break;
            } while ((now_s() - t0) * 1000 < (double)ms);
            if (e == cudaSuccess)
                held.push_back(p);
            printf("rc=%d ms=%.1f\n", (int)e, (now_s() - t0) * 1000);
        } else if (strncmp(line, "info", 4) == 0) {
            size_t f = 0, t = 0;
            cudaError_t e = cudaMemGetInfo(&f, &t);
            printf("rc=%d free=%zu total=%zu\n", (int)e, f, t);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        } else {
            printf("rc=-1\n");
        }
        fflush(stdout);
    }
    return 0;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static int allocbench(int n, unsigned long long size)
{
    void *p;
    double t0;

    for (int i = 0; i < 100; i++) { /* warm-up */
        if (cudaMalloc(&p, size) != cudaSuccess)
            return 1;
        cudaFree(p);
    }
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        if (cudaMalloc(&p, size) != cudaSuccess)
            return 1;
        cudaFree(p);
    }
    printf("{\"us_per_pair\": %.3f}\n", (now_s() - t0) * 1e6 / n);
    return 0;
}

static int launchbench(int n, int rounds)
{
    std::vector<double> thr, lat;

    for (int i = 0; i < 1000; i++)
        empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();

        for (int i = 0; i < n; i++)
            empty_kernel<<<1, 1>>>();
        cudaDeviceSynchronize();
        thr.push_back((now_s() - t0) * 1e6 / n);
        t0 = now_s();
        for (int i = 0; i < n / 10; i++) {
            empty_kernel<<<1, 1>>>();
            cudaDeviceSynchronize();
        }
        lat.push_back((now_s() - t0) * 1e6 / (n / 10));
    }
    if (cudaGetLastError() != cudaSuccess)
        return 1;
    printf("{\"launch_us\": %.4f, \"launch_sync_us\": %.4f}\n", median(thr), median(lat));
    return 0;
}

static int spin(int iter, long long cycles)
{
    int *sink;
    char line[16];
    double t0;

    if (cudaMalloc(&sink, sizeof(int)) != cudaSuccess)
        return 1;
    for (int i = 0; i < 10; i++)
        spin_kernel<<<8, 256>>>(cycles, sink);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    printf("ready\n");
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        return 1;
    t0 = now_s();
    for (int i = 0; i < iter; i++)
        spin_kernel<<<8, 256>>>(cycles, sink);
    if (cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    printf("%.6f\n", now_s() - t0);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc == 4 && strcmp(argv[1], "check") == 0)
        return check(strtoull(argv[2], nullptr, 10), strtoull(argv[3], nullptr, 10));
    if (argc == 2 && strcmp(argv[1], "serve") == 0)
        return serve();
    if (argc == 4 && strcmp(argv[1], "allocbench") == 0)
        return allocbench(atoi(argv[2]), strtoull(argv[3], nullptr, 10));
    if (argc == 4 && strcmp(argv[1], "launchbench") == 0)
        return launchbench(atoi(argv[2]), atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "spin") == 0)
        return spin(atoi(argv[2]), atoll(argv[3]));
    fprintf(stderr, "usage: probe check CAP ALLOC | serve | allocbench N SIZE | launchbench N R "
                    "| spin ITER CYCLES\n");
    return 2;
}
