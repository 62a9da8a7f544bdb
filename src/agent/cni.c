/*
 * agent/cni.c: CNI ADD/DEL for a pod's sandbox (cni.h), run by the shim as root.
 *
 * Model. One bridge network per Kubernetes namespace (its range index k): `fbr<k>`, subnet
 * 10.<k/256>.<k%256>.0/24 from host-local (leases host-wide, /var/lib/cni), the host as gateway .1, no
 * masquerade (pods have no way out; Services and notebooks are reached through fatiad). The
 * plugin is exec'd by the CNI protocol (CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME,
 * CNI_PATH; the config on stdin; the result on stdout, kept for DEL). Isolation between
 * namespaces: traffic routed from one fbr bridge to another is dropped in the FORWARD chain
 * (chain FATIA-ISOLATE: each bridge may reach itself, any other fbr is DROP), so a tenant's pod
 * cannot reach another tenant's pods; pods of one namespace share an L2 segment (the namespace
 * is the isolation unit, as in the process mode). Isolation from the host: traffic that enters
 * the host from an fbr bridge (INPUT: the gateway, the host's other addresses, other bridges'
 * gateways; ip6tables too, for the bridges' link-local addresses) goes to FATIA-HOSTISOLATE:
 * replies to what the host opened (fatiad's proxies, probes, port-forward) RETURN, each API
 * proxy's port on its own gateway RETURN (fatia_cni_host_allow: added and removed by the fatiad
 * whose listener it is, keyed by bridge, gateway and port, so fatiads of one host never remove
 * another's; a rule whose gateway and port no socket holds is a killed fatiad's, pruned when a
 * rule is added), the rest DROP. Pods need nothing else of the host (no DHCP, no DNS served).
 *
 * Host ports: the mappings of the pod's hostPorts go to the portmap plugin, run after bridge
 * with the bridge's result as prevResult (a chain of two, as a conflist would run it); DEL runs
 * portmap's before bridge's. What keeps a port to one pod is the shim's bound socket (oci.c),
 * not portmap, which would add a second DNAT for a port already published.
 *
 * Before ADD the sandbox's network namespace is pinned (FATIA_CNI_PIN_DIR/<id>: its device and
 * inode, no bind mount) and DEL removes the pin: the reclaim of leases whose sandbox is gone
 * (cni_reclaim.c) reads it. An ADD that finds the range exhausted undoes itself (DEL in the
 * namespace), reclaims that network's stale leases, and is tried once more if any went.
 *
 * Invariants: DEL is idempotent; the FORWARD rules are added once (checked with -C first); a
 * lease is made only for a pinned namespace.
 *
 * Rejected: one bridge for every pod with per-pod filtering (a rule per pod pair); filtering the
 * host by dropping only the gateway (every host address is reachable through it); a per-port
 * allow rule added by the shim at ADD and never removed (one rule per fatiad run and bridge,
 * growing without end on a CI host); the API port alone without the gateway (a host service
 * bound to another address on the same port would be reachable).
 */
#include "base/compat.h"

#include "agent/cni.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"

/* Runs argv with env and stdin text; stdout into out (NUL-terminated). Exit status or -errno. */
static int run(const char *const *argv, const char *const *env, const char *in, char *out,
               size_t out_n)
{
    int ip[2], op[2], status;
    size_t len = 0;
    pid_t pid;

    if (pipe2(ip, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(op, O_CLOEXEC) < 0) {
        close(ip[0]);
        close(ip[1]);
        return -errno;
    }
    pid = fork();
    if (pid < 0) {
        close(ip[0]);
        close(ip[1]);
        close(op[0]);
        close(op[1]);
        return -errno;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(ip[0], 0);
        dup2(op[1], 1);
        dup2(nul, 2);
        execve(argv[0], (char *const *)argv, (char *const *)env);
        _exit(127);
    }
    close(ip[0]);
    close(op[1]);
    if (in)
        (void)!write(ip[1], in, strlen(in));
    close(ip[1]);
    for (;;) {
        ssize_t r = read(op[0], out + len, out_n - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len + 1 >= out_n)
            break;
    }
    out[len] = '\0';
    close(op[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -errno;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const char *const PATH_ENV =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static int xtables(const char *exe, const char *const *args)
{
    const char *argv[20] = {exe, "-w"};
    const char *env[] = {PATH_ENV, NULL};
    char out[256];
    size_t n = 2;

    for (size_t i = 0; args[i] && n < 19; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return run(argv, env, NULL, out, sizeof(out));
}

static int iptables(const char *const *args)
{
    return xtables("/usr/sbin/iptables", args);
}

/* FORWARD -i fbr+ -> FATIA-ISOLATE: -i fbrK -o fbrK RETURN (each bridge), -o fbr+ DROP. */
static int isolate(uint32_t k)
{
    char br[32];

    snprintf(br, sizeof(br), "fbr%u", k);
    (void)iptables((const char *const[]){"-N", "FATIA-ISOLATE", NULL});
    if (iptables((const char *const[]){"-C", "FATIA-ISOLATE", "-o", "fbr+", "-j", "DROP", NULL}))
        (void)iptables(
            (const char *const[]){"-A", "FATIA-ISOLATE", "-o", "fbr+", "-j", "DROP", NULL});
    if (iptables(
            (const char *const[]){"-C", "FATIA-ISOLATE", "-i", br, "-o", br, "-j", "RETURN", NULL}))
        (void)iptables(
            (const char *const[]){"-I", "FATIA-ISOLATE", "-i", br, "-o", br, "-j", "RETURN", NULL});
    if (iptables(
            (const char *const[]){"-C", "FORWARD", "-i", "fbr+", "-j", "FATIA-ISOLATE", NULL}) &&
        iptables((const char *const[]){"-I", "FORWARD", "-i", "fbr+", "-j", "FATIA-ISOLATE", NULL}))
        return -EIO;
    return 0;
}

/* INPUT -i fbr+ -> FATIA-HOSTISOLATE (IPv4 and IPv6): the allowed ports RETURN (first, one
 * rule per bridge, gateway and port: fatia_cni_host_allow), replies RETURN, the rest DROP. The
 * chain and its two fixed rules are made by whoever finds them missing and never removed; the
 * replies' rule is inserted at the top, so that it stays before DROP whatever the order. */
static int host_isolate(const char *exe)
{
    static const char *const est[] = {"FATIA-HOSTISOLATE",   "-m", "conntrack", "--ctstate",
                                      "ESTABLISHED,RELATED", "-j", "RETURN",    NULL};
    const char *args[12];
    size_t n;

    (void)xtables(exe, (const char *const[]){"-N", "FATIA-HOSTISOLATE", NULL});
    args[0] = "-C";
    for (n = 0; est[n]; n++)
        args[n + 1] = est[n];
    args[n + 1] = NULL;
    if (xtables(exe, args)) {
        args[0] = "-I";
        (void)xtables(exe, args);
    }
    if (xtables(exe, (const char *const[]){"-C", "FATIA-HOSTISOLATE", "-j", "DROP", NULL}))
        (void)xtables(exe, (const char *const[]){"-A", "FATIA-HOSTISOLATE", "-j", "DROP", NULL});
    if (xtables(exe, (const char *const[]){"-C", "INPUT", "-i", "fbr+", "-j", "FATIA-HOSTISOLATE",
                                           NULL}) &&
        xtables(exe, (const char *const[]){"-I", "INPUT", "-i", "fbr+", "-j", "FATIA-HOSTISOLATE",
                                           NULL}))
        return -EIO;
    return 0;
}

int fatia_cni_host_rule_parse(const char *line, char *ret_br, size_t br_n, char *ret_gw,
                              size_t gw_n, unsigned *ret_port)
{
    char br[32], gw[32];
    unsigned a, b, c, d, port;
    int n = 0;

    if (sscanf(line,
               "-A FATIA-HOSTISOLATE -d %u.%u.%u.%u/32 -i %31s -p tcp -m tcp --dport %u -j "
               "RETURN%n",
               &a, &b, &c, &d, br, &port, &n) != 6 ||
        n == 0 || (line[n] && line[n] != '\n') || a != 10 || b > 255 || c > 255 || d != 1 ||
        strncmp(br, "fbr", 3) || port == 0 || port > 65535)
        return -FATIA_E_PARSE;
    snprintf(gw, sizeof(gw), "%u.%u.%u.%u", a, b, c, d);
    snprintf(ret_br, br_n, "%s", br);
    snprintf(ret_gw, gw_n, "%s", gw);
    *ret_port = port;
    return 0;
}

/* Whether a socket listens on gw:port (the API proxy of a live fatiad): its address is taken. */
static bool port_held(const char *gw, unsigned port)
{
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool held;

    if (fd < 0 || inet_pton(AF_INET, gw, &at.sin_addr) != 1) {
        if (fd >= 0)
            close(fd);
        return true; /* cannot tell: keep the rule */
    }
    held = bind(fd, (struct sockaddr *)&at, sizeof(at)) < 0 && errno != EADDRNOTAVAIL;
    close(fd);
    return held;
}

/* The allow rules whose listener is gone (a fatiad killed with -9 never removed its own), so
 * that the chain does not grow with every killed fatiad: a rule is stale when nothing holds its
 * gateway and port (the listener is made before its rule and closed before its removal). */
static void host_allow_prune(void)
{
    const char *argv[] = {"/usr/sbin/iptables", "-w", "-S", "FATIA-HOSTISOLATE", NULL};
    const char *env[] = {PATH_ENV, NULL};
    char *out = malloc(65536), *line, *save = NULL;

    if (!out)
        return;
    if (run(argv, env, NULL, out, 65536) != 0) {
        free(out);
        return;
    }
    for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char br[32], gw[32], p[16];
        unsigned port;
        if (fatia_cni_host_rule_parse(line, br, sizeof(br), gw, sizeof(gw), &port) < 0 ||
            port_held(gw, port))
            continue;
        snprintf(p, sizeof(p), "%u", port);
        (void)iptables((const char *const[]){"-D", "FATIA-HOSTISOLATE", "-i", br, "-d", gw, "-p",
                                             "tcp", "--dport", p, "-j", "RETURN", NULL});
    }
    free(out);
}

int fatia_cni_host_allow(uint32_t k, unsigned port, bool on)
{
    char br[32], gw[32], p[16];
    const char *rule[] = {"-C",  "FATIA-HOSTISOLATE", "-i", br,   "-d",     gw,  "-p",
                          "tcp", "--dport",           p,    "-j", "RETURN", NULL};

    if (port == 0 || port > 65535)
        return -EINVAL;
    snprintf(br, sizeof(br), "fbr%u", k);
    snprintf(gw, sizeof(gw), "10.%u.%u.1", (k >> 8) & 255, k & 255);
    snprintf(p, sizeof(p), "%u", port);
    if (!on) {
        /* every copy (two fatiads of one port cannot be: the port is bound on the gateway) */
        for (int i = 0; i < 8 && iptables(rule) == 0; i++) {
            rule[0] = "-D";
            (void)iptables(rule);
            rule[0] = "-C";
        }
        return 0;
    }
    (void)iptables((const char *const[]){"-N", "FATIA-HOSTISOLATE", NULL});
    host_allow_prune();
    if (iptables(rule) == 0)
        return 0;
    rule[0] = "-I";
    return iptables(rule) ? -EIO : 0;
}

static char *net_config(const char *state_dir, uint32_t k)
{
    char subnet[32], name[32], br[32], data[1200];
    json_t *c;
    char *text;

    snprintf(subnet, sizeof(subnet), "10.%u.%u.0/24", (k >> 8) & 255, k & 255);
    snprintf(name, sizeof(name), "fatia-%u", k);
    snprintf(br, sizeof(br), "fbr%u", k);
    snprintf(data, sizeof(data), "%.1000s/networks", state_dir);
    /* a default route through the host: what keeps namespaces apart is FATIA-ISOLATE, not a
     * missing route (a pod could add one itself) */
    /* host-local's leases in its default, host-wide directory (/var/lib/cni/networks/<name>,
     * locked by the plugin): two fatiads on one host share the bridge of an index, never an
     * address */
    (void)data;
    c = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b,s:b,s:{s:s,s:[[{s:s}]],s:[{s:s}]}}", "cniVersion",
                  "1.0.0", "name", name, "type", "bridge", "bridge", br, "isGateway", 1, "ipMasq",
                  0, "hairpinMode", 1, "ipam", "type", "host-local", "ranges", "subnet", subnet,
                  "routes", "dst", "0.0.0.0/0");
    text = c ? json_dumps(c, JSON_COMPACT) : NULL;
    json_decref(c);
    return text;
}

/* portmap's configuration in network k's chain: the mappings as runtimeConfig (the capability
 * portMappings), after the bridge's result (prev; NULL: none). */
static char *portmap_config(uint32_t k, const json_t *ports, const json_t *prev)
{
    char name[32];
    json_t *c;
    char *text;

    snprintf(name, sizeof(name), "fatia-%u", k);
    c = json_pack("{s:s,s:s,s:s,s:{s:b},s:{s:O},s:b}", "cniVersion", "1.0.0", "name", name, "type",
                  "portmap", "capabilities", "portMappings", 1, "runtimeConfig", "portMappings",
                  ports, "snat", 1);
    if (c && prev)
        json_object_set(c, "prevResult", (json_t *)prev);
    text = c ? json_dumps(c, JSON_COMPACT) : NULL;
    json_decref(c);
    return text;
}

static bool has_ports(const json_t *ports)
{
    return json_is_array(ports) && json_array_size(ports) > 0;
}

static int plugin_exe(const char *plugin_dir, const char *type, const char *cmd, const char *id,
                      const char *netns, const char *ifname, const char *config, char *out,
                      size_t out_n)
{
    char exe[600], e_cmd[64], e_id[300], e_ns[300], e_path[600], e_if[64];
    const char *env[] = {PATH_ENV, e_cmd, e_id, e_ns, e_if, e_path, NULL};
    const char *argv[] = {exe, NULL};

    snprintf(e_if, sizeof(e_if), "CNI_IFNAME=%.40s", ifname);

    snprintf(exe, sizeof(exe), "%.500s/%.40s", plugin_dir, type);
    snprintf(e_cmd, sizeof(e_cmd), "CNI_COMMAND=%s", cmd);
    snprintf(e_id, sizeof(e_id), "CNI_CONTAINERID=%.200s", id);
    snprintf(e_ns, sizeof(e_ns), "CNI_NETNS=%.250s", netns);
    snprintf(e_path, sizeof(e_path), "CNI_PATH=%.500s", plugin_dir);
    return run(argv, env, config, out, out_n);
}

static int plugin_if(const char *plugin_dir, const char *cmd, const char *id, const char *netns,
                     const char *ifname, const char *config, char *out, size_t out_n)
{
    return plugin_exe(plugin_dir, "bridge", cmd, id, netns, ifname, config, out, out_n);
}

static int plugin(const char *plugin_dir, const char *cmd, const char *id, const char *netns,
                  const char *config, char *out, size_t out_n)
{
    return plugin_if(plugin_dir, cmd, id, netns, "eth0", config, out, out_n);
}

void fatia_cni_del_lease(const char *plugin_dir, uint32_t k, const char *id, const char *ifname)
{
    char *config = net_config("", k), out[4096];
    json_t *any =
        json_pack("[{s:i,s:i,s:s}]", "hostPort", 1, "containerPort", 1, "protocol", "tcp");
    char *pc = any ? portmap_config(k, any, NULL) : NULL;

    /* a sandbox that is gone may have published host ports: portmap's DEL removes every rule
     * of (network, id) whatever mappings it is given, and does nothing with none */
    if (pc) /* without the plugin: exit 127, nothing to undo */
        (void)plugin_exe(plugin_dir, "portmap", "DEL", id, "", ifname, pc, out, sizeof(out));
    free(pc);
    json_decref(any);

    if (config)
        (void)plugin_if(plugin_dir, "DEL", id, "", ifname, config, out, sizeof(out));
    free(config);
}

/* host-local's answer when every address of the range is leased */
static bool exhausted(const json_t *res, const char *out)
{
    const char *m = fatia_json_str(res, "msg");
    return strstr(m ? m : out, "no IP addresses available") != NULL;
}

/* portmap ADD of ports after the bridge's result res; on failure its DEL, and why. */
static int portmap_add(const char *plugin_dir, uint32_t k, const char *id, const char *netns,
                       const json_t *ports, const json_t *res, char *why, size_t why_n)
{
    char *config = portmap_config(k, ports, res), out[4096], tmp[1024];
    json_t *pr;
    int r;

    if (!config)
        return -ENOMEM;
    r = plugin_exe(plugin_dir, "portmap", "ADD", id, netns, "eth0", config, out, sizeof(out));
    if (r != 0) {
        pr = json_loads(out, 0, NULL);
        snprintf(why, why_n, "CNI portmap ADD failed (exit %d): %.400s", r,
                 fatia_json_str(pr, "msg") ? fatia_json_str(pr, "msg") : out);
        json_decref(pr);
        (void)plugin_exe(plugin_dir, "portmap", "DEL", id, netns, "eth0", config, tmp, sizeof(tmp));
    }
    free(config);
    return r != 0 ? -EIO : 0;
}

int fatia_cni_add(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                  const char *netns, const json_t *ports, const char *result_file, char *ret_ip,
                  size_t ip_n, char *why, size_t why_n)
{
    char *config = net_config(state_dir, k), out[8192];
    json_t *res;
    const char *addr;
    int r;

    if (!config)
        return -ENOMEM;
    (void)mkdir(state_dir, 0700);
    r = isolate(k);
    if (r == 0)
        r = host_isolate("/usr/sbin/iptables");
    if (r == 0 && access("/usr/sbin/ip6tables", X_OK) == 0)
        r = host_isolate("/usr/sbin/ip6tables");
    if (r < 0) {
        snprintf(why, why_n, "cannot add the network isolation rules (iptables FORWARD and INPUT)");
        free(config);
        return r;
    }
    /* the pin before the lease: the reclaim of another fatiad must see this sandbox live */
    r = fatia_cni_pin_write(FATIA_CNI_PIN_DIR, id, netns);
    if (r < 0) {
        snprintf(why, why_n, "cannot pin the sandbox's network namespace in '%s/%.200s': %s",
                 FATIA_CNI_PIN_DIR, id, fatia_strerror(r));
        free(config);
        return r;
    }
    r = plugin(plugin_dir, "ADD", id, netns, config, out, sizeof(out));
    res = json_loads(out, 0, NULL);
    if ((r != 0 || !res) && exhausted(res, out)) {
        /* leases of sandboxes that are gone (a SIGKILLed shim never ran DEL): reclaim, retry
         * once, after undoing what the failed ADD left in the namespace */
        char tmp[4096];
        (void)plugin(plugin_dir, "DEL", id, netns, config, tmp, sizeof(tmp));
        if (fatia_cni_reclaim(plugin_dir, FATIA_CNI_LEASE_DIR, FATIA_CNI_PIN_DIR, k) > 0) {
            json_decref(res);
            r = plugin(plugin_dir, "ADD", id, netns, config, out, sizeof(out));
            res = json_loads(out, 0, NULL);
        }
    }
    if (r != 0 || !res) {
        snprintf(why, why_n, "CNI bridge ADD failed (exit %d): %.400s", r,
                 fatia_json_str(res, "msg") ? fatia_json_str(res, "msg") : out);
        json_decref(res);
        free(config);
        return -EIO;
    }
    if (has_ports(ports) && portmap_add(plugin_dir, k, id, netns, ports, res, why, why_n) < 0) {
        char tmp[4096];
        (void)plugin(plugin_dir, "DEL", id, netns, config, tmp, sizeof(tmp));
        json_decref(res);
        free(config);
        return -EIO;
    }
    free(config);
    addr = fatia_json_str(json_array_get(json_object_get(res, "ips"), 0), "address");
    snprintf(ret_ip, ip_n, "%s", addr ? addr : "");
    {
        char *slash = strchr(ret_ip, '/');
        if (slash)
            *slash = '\0';
    }
    (void)json_dump_file(res, result_file, JSON_COMPACT);
    json_decref(res);
    return 0;
}

void fatia_cni_del(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                   const char *netns, const json_t *ports, const char *result_file)
{
    char *config = net_config(state_dir, k), out[4096];
    json_t *c = config ? json_loads(config, 0, NULL) : NULL,
           *prev = json_load_file(result_file, 0, NULL);
    char *text;

    free(config);
    if (has_ports(ports)) {
        /* the chain in reverse: portmap's rules go before the bridge's address */
        char *pc = portmap_config(k, ports, prev);
        if (pc)
            (void)plugin_exe(plugin_dir, "portmap", "DEL", id, netns, "eth0", pc, out, sizeof(out));
        free(pc);
    }
    if (!c) {
        json_decref(prev);
        return;
    }
    if (prev)
        json_object_set_new(c, "prevResult", prev);
    text = json_dumps(c, JSON_COMPACT);
    json_decref(c);
    if (text)
        (void)plugin(plugin_dir, "DEL", id, netns, text, out, sizeof(out));
    free(text);
    (void)unlink(result_file);
    fatia_cni_pin_remove(FATIA_CNI_PIN_DIR, id);
}
