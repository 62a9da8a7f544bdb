/*
 * bench/gpuwatch_bench.c: the GPU memory watchdog's cost per period at N pods (bench/gpuwatch.sh).
 *
 * N child processes each "hold" memory on GPU 0 of the fake NVML (FAKE_NVML_PROCS files), one pod
 * per process with its own cgroup name; each period samples NVML (the fake's two lists per GPU,
 * every pid's /proc/PID/cgroup) and judges N pods, as gpuwatch_agent.c does. Prints the CPU time
 * per period (user + system, getrusage) and that as a share of one core at the agent's period.
 * The fake reads a directory where the real NVML makes an ioctl: the sampling here is a ceiling.
 *
 *   gpuwatch_bench FAKE_NVML_LIB [PODS] [PERIODS] [PERIOD_MS]
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/gpuwatch.h"

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 100, periods = argc > 3 ? atoi(argv[3]) : 2000;
    int period_ms = argc > 4 ? atoi(argv[4]) : FATIA_GPUWATCH_DEFAULT_MS;
    char dir[] = "/tmp/fatia-gwbench-XXXXXX", path[600], why[256] = "";
    static char cg[1024][64];
    const char *uuids[FATIA_GPUWATCH_MAX_GPUS];
    struct fatia_gpuwatch_pod *pods;
    struct fatia_gpuwatch_proc *mine;
    const struct fatia_gpuwatch_proc *v;
    struct fatia_gpuwatch *w;
    pid_t *kids;
    double t0, t_sample = 0, t_judge = 0;
    size_t nv = 0, over = 0;

    if (argc < 2 || n < 1 || n > 1024 || periods < 1 || period_ms < 1) {
        fprintf(stderr, "usage: gpuwatch_bench FAKE_NVML_LIB [PODS<=1024] [PERIODS] [PERIOD_MS]\n");
        return 2;
    }
    if (!mkdtemp(dir))
        return 1;
    setenv("FAKE_NVML_PROCS", dir, 1);
    if (fatia_gpuwatch_open(argv[1], &w, why, sizeof(why)) < 0) {
        fprintf(stderr, "gpuwatch_bench: %s\n", why);
        return 1;
    }
    kids = calloc((size_t)n, sizeof(*kids));
    pods = calloc((size_t)n, sizeof(*pods));
    mine = calloc((size_t)n * 2, sizeof(*mine));
    for (int i = 0; i < n; i++) {
        FILE *f;

        kids[i] = fork();
        if (kids[i] == 0) {
            pause();
            _exit(0);
        }
        snprintf(path, sizeof(path), "%s/0.%d", dir, (int)kids[i]);
        f = fopen(path, "w");
        fprintf(f, "%llu\n", 3ULL << 30);
        fclose(f);
        snprintf(cg[i], sizeof(cg[i]), "/fatia/pod-%06d", i);
        pods[i] = (struct fatia_gpuwatch_pod){
            .cgroup = cg[i], .n_gpus = 1, .uuid = {fatia_gpuwatch_uuid(w, 0)}, .cap = {4ULL << 30}};
    }
    for (unsigned i = 0; i < fatia_gpuwatch_n_gpus(w); i++)
        uuids[i] = fatia_gpuwatch_uuid(w, i);
    for (int p = 0; p < periods; p++) {
        t0 = cpu_s();
        if (fatia_gpuwatch_sample(w, &v, &nv) < 0)
            return 1;
        t_sample += cpu_s() - t0;
        /* the children share the bench's cgroup: give each its pod's, as the agent's would be */
        for (size_t k = 0; k < nv && k < (size_t)n * 2; k++) {
            mine[k] = v[k];
            for (int i = 0; i < n; i++) {
                if (kids[i] == v[k].pid) {
                    snprintf(mine[k].cgroup, sizeof(mine[k].cgroup), "%s/ctr", cg[i]);
                    break;
                }
            }
        }
        t0 = cpu_s();
        over += fatia_gpuwatch_judge(pods, (size_t)n, mine, nv, uuids, fatia_gpuwatch_n_gpus(w),
                                     768ULL << 20);
        t_judge += cpu_s() - t0;
    }
    printf("gpuwatch.pods: %d\n", n);
    printf("gpuwatch.procs_seen: %zu\n", nv);
    printf("gpuwatch.over: %zu\n", over);
    printf("gpuwatch.sample_us: %.1f us per period (fake NVML + /proc)\n",
           t_sample / periods * 1e6);
    printf("gpuwatch.judge_us: %.1f us per period\n", t_judge / periods * 1e6);
    printf("gpuwatch.cpu_share: %.3f %% of a core at one period per %d ms\n",
           (t_sample + t_judge) / periods / (period_ms / 1000.0) * 100.0, period_ms);
    for (int i = 0; i < n; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    fatia_gpuwatch_close(w);
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    return system(path) == 0 && nv == (size_t)n && over == 0 ? 0 : 1;
}
