/*
 * tests/vgpu/device/mpsctl.c: the node agent's MPS module (src/agent/mps.c) driven from a shell,
 * for the H200 proof (scripts/vgpu-proof). Each command starts the daemon of <base>/<name> or
 * adopts the one running there, as an agent restarting would, then:
 *   start BASE NAME GPU PCT PINNED   leaves it running with these defaults (PINNED in bytes)
 *   selftest BASE NAME GPU           kill -9 the daemon, fatia_mps_ensure must restart it
 *   env BASE NAME GPU PCT PINNED     prints a client's variables, one NAME=VALUE a line
 *   cmd BASE NAME GPU COMMAND        prints the daemon's answer to COMMAND
 *   stop BASE NAME GPU               stops it and removes its directories
 *   defaultcap TOTAL REPLICAS [RESERVE]  prints fatia_agent_vgpu_default_cap (DESIGN §7) and the
 *                                    reserve used (default FATIA_VGPU_CONTEXT_RESERVE_H200)
 * Exit status 0 on success.
 */
#include "base/compat.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "agent/mps.h"
#include "agent/vgpu_slice.h"
#include "base/error.h"
#include "base/log.h"

static int print_var(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    printf("%s=%s\n", name, value);
    return 0;
}

static uint64_t u64(const char *s)
{
    return strtoull(s, NULL, 10);
}

int main(int argc, char **argv)
{
    struct fatia_mps_config c = {0};
    struct fatia_mps_daemon *d = NULL;
    const char *cmd = argc > 1 ? argv[1] : "";
    int r;

    fatia_log_set_level(FATIA_LOG_INFO);
    if (strcmp(cmd, "defaultcap") == 0 && (argc == 4 || argc == 5)) {
        uint64_t reserve = argc == 5 ? u64(argv[4]) : FATIA_VGPU_CONTEXT_RESERVE_H200;

        printf("%" PRIu64 " %" PRIu64 "\n",
               fatia_agent_vgpu_default_cap(u64(argv[2]), (unsigned)u64(argv[3]), reserve),
               reserve);
        return 0;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: mpsctl start|selftest|env|cmd|stop BASE NAME GPU ...\n");
        return 2;
    }
    c.base_dir = argv[2];
    c.name = argv[3];
    c.gpu = argv[4];
    if ((strcmp(cmd, "start") == 0 || strcmp(cmd, "env") == 0) && argc == 7) {
        c.active_thread_pct = (int)u64(argv[5]);
        c.pinned_mem_limit = u64(argv[6]);
    }
    if (strcmp(cmd, "env") == 0) {
        c.active_thread_pct = 0; /* a client's values, not new defaults */
        c.pinned_mem_limit = 0;
    }
    r = fatia_mps_start(&c, &d);
    if (r < 0) {
        fprintf(stderr, "mpsctl: start: %s\n", fatia_strerror(r));
        return 1;
    }
    if (strcmp(cmd, "start") == 0) {
        printf("pid=%d pipe=%s\n", fatia_mps_pid(d), fatia_mps_pipe_dir(d));
        return 0; /* left running, not freed */
    }
    if (strcmp(cmd, "selftest") == 0) {
        int first = fatia_mps_pid(d);
        bool restarted = false;

        kill(first, SIGKILL);
        for (int i = 0; i < 500 && fatia_mps_alive(d); i++)
            usleep(10000);
        r = fatia_mps_ensure(d, &restarted);
        printf("killed=%d restarted=%d pid=%d alive=%d\n", first, restarted, fatia_mps_pid(d),
               fatia_mps_alive(d));
        return r == 0 && restarted && fatia_mps_alive(d) && fatia_mps_pid(d) != first ? 0 : 1;
    }
    if (strcmp(cmd, "env") == 0 && argc == 7)
        return fatia_mps_client_env(d, (int)u64(argv[5]), u64(argv[6]), print_var, NULL) < 0;
    if (strcmp(cmd, "cmd") == 0 && argc == 6) {
        char reply[4096];

        r = fatia_mps_command(d, argv[5], reply, sizeof(reply));
        printf("%s", reply);
        return r < 0;
    }
    if (strcmp(cmd, "stop") == 0) {
        r = fatia_mps_stop(d);
        printf("stopped=%d\n", r == 0);
        return r < 0;
    }
    return 2;
}
