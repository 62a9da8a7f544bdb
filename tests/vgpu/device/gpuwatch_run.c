/*
 * tests/vgpu/device/gpuwatch_run.c: the agent's GPU memory watchdog (src/agent/gpuwatch.c) on a
 * real GPU, for scripts/gpu-hostile. Pods are cgroup v2 directories the script made; every
 * PERIOD_MS it samples NVML (plain and MPS lists), judges, and on a verdict writes 1 to the
 * pod's cgroup.kill, as the agent stops a pod. One JSON line per event on stdout:
 *   {"ev":"start", "gpus":N, "uuid0":...}
 *   {"ev":"over", "t":T, "pod":NAME, "used":B, "procs":K}     the first sample over the limit
 *   {"ev":"kill", "t":T, "pod":NAME, "used":B, "cap":C}
 *   {"ev":"freed", "t":T, "pod":NAME}                         its processes are out of NVML
 *   {"ev":"peak", "pod":NAME, "peak":B}                       at exit, for every pod
 *   {"ev":"cost", "samples":S, "cpu_us_per_sample":X}
 * T is CLOCK_REALTIME seconds (the script's other programs log the same clock).
 *
 *   vgpu_gpuwatch PERIOD_MS RESERVE_BYTES NAME=CGROUP_DIR=UUID=CAP_BYTES...   until SIGTERM
 */
#include "base/compat.h"

#include <sys/resource.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "agent/gpuwatch.h"

static volatile sig_atomic_t done;

static void on_term(int sig)
{
    (void)sig;
    done = 1;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

#define MAXP 16

int main(int argc, char **argv)
{
    struct fatia_gpuwatch_pod pods[MAXP];
    char names[MAXP][64], dirs[MAXP][512], rels[MAXP][512], uuids_s[MAXP][96];
    bool over_seen[MAXP] = {0}, killed[MAXP] = {0}, freed[MAXP] = {0};
    uint64_t peak[MAXP] = {0};
    const char *uuids[FATIA_GPUWATCH_MAX_GPUS];
    const struct fatia_gpuwatch_proc *v;
    struct fatia_gpuwatch *w;
    char why[256] = "";
    int n = 0, period_ms;
    uint64_t reserve, samples = 0;
    double cpu = 0;
    size_t nv;

    if (argc < 4)
        return 2;
    period_ms = (int)strtol(argv[1], NULL, 10);
    reserve = strtoull(argv[2], NULL, 10);
    for (int i = 3; i < argc && n < MAXP; i++, n++) {
        char cap[32];
        if (sscanf(argv[i], "%63[^=]=%511[^=]=%95[^=]=%31s", names[n], dirs[n], uuids_s[n], cap) !=
            4)
            return 2;
        if (fatia_gpuwatch_cgroup_rel(dirs[n], rels[n], sizeof(rels[n])) < 0) {
            fprintf(stderr, "vgpu_gpuwatch: %s is not under a cgroup v2 mount\n", dirs[n]);
            return 1;
        }
        pods[n] = (struct fatia_gpuwatch_pod){
            .cgroup = rels[n], .n_gpus = 1, .uuid = {uuids_s[n]}, .cap = {strtoull(cap, NULL, 10)}};
    }
    if (fatia_gpuwatch_open(NULL, &w, why, sizeof(why)) < 0) {
        fprintf(stderr, "vgpu_gpuwatch: %s\n", why);
        return 1;
    }
    for (unsigned i = 0; i < fatia_gpuwatch_n_gpus(w); i++)
        uuids[i] = fatia_gpuwatch_uuid(w, i);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("{\"ev\":\"start\",\"gpus\":%u,\"uuid0\":\"%s\",\"period_ms\":%d}\n",
           fatia_gpuwatch_n_gpus(w), uuids[0], period_ms);
    while (!done) {
        double c0 = cpu_s(), t;

        if (fatia_gpuwatch_sample(w, &v, &nv) < 0) {
            fprintf(stderr, "vgpu_gpuwatch: sample failed\n");
            break;
        }
        fatia_gpuwatch_judge(pods, (size_t)n, v, nv, uuids, fatia_gpuwatch_n_gpus(w), reserve);
        cpu += cpu_s() - c0;
        samples++;
        t = now_s();
        for (int i = 0; i < n; i++) {
            if (pods[i].used[0] > peak[i])
                peak[i] = pods[i].used[0];
            if (pods[i].over >= 0 && !over_seen[i]) {
                over_seen[i] = true;
                printf("{\"ev\":\"over\",\"t\":%.3f,\"pod\":\"%s\",\"used\":%" PRIu64
                       ",\"procs\":%u}\n",
                       t, names[i], pods[i].used[0], pods[i].procs[0]);
            }
            if (pods[i].over >= 0 && !killed[i]) {
                char path[600];
                int fd;

                snprintf(path, sizeof(path), "%s/cgroup.kill", dirs[i]);
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                    if (write(fd, "1", 1) != 1)
                        fprintf(stderr, "vgpu_gpuwatch: cgroup.kill of %s failed\n", names[i]);
                    close(fd);
                }
                killed[i] = true;
                printf("{\"ev\":\"kill\",\"t\":%.3f,\"pod\":\"%s\",\"used\":%" PRIu64
                       ",\"cap\":%" PRIu64 "}\n",
                       t, names[i], pods[i].used[0], pods[i].cap[0]);
            }
            if (killed[i] && !freed[i] && pods[i].procs[0] == 0) {
                freed[i] = true;
                printf("{\"ev\":\"freed\",\"t\":%.3f,\"pod\":\"%s\"}\n", t, names[i]);
            }
        }
        usleep((useconds_t)period_ms * 1000);
    }
    for (int i = 0; i < n; i++)
        printf("{\"ev\":\"peak\",\"pod\":\"%s\",\"peak\":%" PRIu64 "}\n", names[i], peak[i]);
    printf("{\"ev\":\"cost\",\"samples\":%" PRIu64 ",\"cpu_us_per_sample\":%.1f}\n", samples,
           samples ? cpu / (double)samples * 1e6 : 0);
    fatia_gpuwatch_close(w);
    return 0;
}
