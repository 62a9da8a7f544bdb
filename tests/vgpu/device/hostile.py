#!/usr/bin/env python3
"""tests/vgpu/device/hostile.py: the hostile-tenant suite on the H200 (scripts/gpu-hostile run).

Four replicas of the one GPU (time-slice slices at DESIGN §7's default cap), each a "pod": a
cgroup v2 directory and a private mount namespace in which /etc/fatia/vgpu.conf (the caps, the
pod's accounting file) and /etc/ld.so.preload (libfatia-vgpu.so) are read-only bind mounts, the
layout the agent gives a capped container (src/agent/vgpu_files.h). Tenants are uid 1000. The
agent's GPU memory watchdog parts (vgpu_gpuwatch) sample NVML every 250 ms and kill a pod's
cgroup over its cap plus the reserve.

  1. interposed bypasses, each then allocating 1 GiB tensors until refused (pods 0-2 at once):
     env -i; LD_PRELOAD dropped with the tenant's own FATIA_VGPU_*; three child processes; the
     accounting file's header forged to "no limit"; an unmount of ld.so.preload from a user
     namespace; writes to the configuration. Pod 3 holds cap - 2 GiB and allocates 1 GiB more
     every 50 ms: never refused.
  2. a bypass the interposer cannot see: python3 run through a copy of the dynamic loader that
     reads /tmp/ld.so.preload instead of /etc/ld.so.preload (a program that loads the driver on
     its own), grabbing up to 120 GiB; the watchdog must kill it; the neighbour's refusals while
     it holds the memory are timed.
  3. the same under MPS: an MPS control daemon the script starts (and stops), an honest client
     and the bypass client; the watchdog reads the MPS clients' list.
Nothing here changes compute mode, MIG mode, clocks or power.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GiB = 1 << 30
MiB = 1 << 20
RESERVE = 768 * MiB
B = sys.argv[1]
OUT = os.environ.get("OUT", "")
LIB = os.path.join(B, "lib", "libfatia-vgpu.so")
TENANT = os.path.join(B, "tenant.py")
PY = shutil.which("python3")
ROWS = []
LOG = []


def log(*a):
    s = " ".join(str(x) for x in a)
    LOG.append(s)
    print(s, flush=True)


def row(item, check, value, target, ok):
    ROWS.append((item, check, str(value), target, bool(ok)))
    log(f"[{'ok' if ok else 'MISS'}] {item}: {check}: {value} (target {target})")


def gpu():
    q = subprocess.run(["nvidia-smi", "--query-gpu=uuid,memory.total,compute_mode",
                        "--format=csv,noheader,nounits"], capture_output=True, text=True, check=True)
    uuid, total, mode = [x.strip() for x in q.stdout.splitlines()[0].split(",")]
    return uuid, int(total) * MiB, mode


def cgroup_root():
    for line in open("/proc/self/mountinfo"):
        if " - cgroup2 " in line:
            return line.split()[4]
    raise SystemExit("no cgroup2 mount")


def default_cap(total, replicas=4):
    return ((total - replicas * RESERVE) // replicas) & ~((2 << 20) - 1)


class Pod:
    def __init__(self, name, tmp, cgparent, uuid, cap):
        self.name, self.cap, self.uuid = name, cap, uuid
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        self.acct = os.path.join(self.dir, "slice.acct")
        open(self.acct, "w").close()
        os.chown(self.acct, 1000, 1000)
        self.conf = os.path.join(self.dir, "vgpu.conf")
        with open(self.conf, "w") as f:
            f.write("# written as the fatia node agent writes it (fatia_agent_vgpu_slice_conf)\n"
                    f"FATIA_VGPU_SHARED_FILE={self.acct}\nFATIA_VGPU_DEVICE_UUIDS={uuid}\n"
                    f"FATIA_VGPU_MEMORY_LIMIT_0={cap}\n")
        self.preload = os.path.join(self.dir, "ld.so.preload")
        with open(self.preload, "w") as f:
            f.write(LIB + "\n")
        for p in (self.conf, self.preload):
            os.chmod(p, 0o444)
        self.cg = os.path.join(cgparent, name)
        os.makedirs(self.cg, exist_ok=True)

    def spawn(self, cmd, env=None):
        """cmd (a shell command) as a process of this pod: its cgroup, its mount namespace."""
        setup = (f"echo $$ >{self.cg}/cgroup.procs && "
                 f"mount --bind {self.conf} /etc/fatia/vgpu.conf && "
                 f"mount -o remount,bind,ro /etc/fatia/vgpu.conf && "
                 f"mount --bind {self.preload} /etc/ld.so.preload && "
                 f"mount -o remount,bind,ro /etc/ld.so.preload && exec {cmd}")
        e = {"PATH": os.environ["PATH"], "HOME": "/tmp", "PYTHONUNBUFFERED": "1"}
        e.update(env or {})
        return subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                 setup], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=e)

    def run(self, cmd, env=None, timeout=240):
        p = self.spawn(cmd, env)
        try:
            o, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _ = p.communicate()
        return o


def last_json(text, key="role"):
    r = None
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if key in d:
                r = d
    return r


def jsons(text):
    r = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                r.append(json.loads(line))
            except ValueError:
                pass
    return r


def main():
    global LIB, TENANT
    uuid, total, mode = gpu()
    cap = default_cap(total)
    log(f"GPU {uuid}: {total // MiB} MiB, compute mode {mode}; 4 replicas, cap {cap} bytes "
        f"({cap / GiB:.2f} GiB), reserve {RESERVE // MiB} MiB per process")
    tmp = tempfile.mkdtemp(prefix="fatia-hostile-")
    os.chmod(tmp, 0o755)
    # the tenant (uid 1000) must read the library and its program: the bundle may sit in root's
    # home, and an unreadable preload is skipped by ld.so (fail open: the watchdog's case)
    for name in ("LIB", "TENANT"):
        src = globals()[name]
        dst = os.path.join(tmp, os.path.basename(src))
        shutil.copy(src, dst)
        os.chmod(dst, 0o755)
        globals()[name] = dst
    made = []
    for path in ("/etc/fatia/vgpu.conf", "/etc/ld.so.preload"):
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()  # an empty mount point: changes nothing on the host
            made.append(path)
    cgparent = os.path.join(cgroup_root(), "fatia-hostile")
    os.makedirs(cgparent, exist_ok=True)
    pods = [Pod(f"pod-{i}", tmp, cgparent, uuid, cap) for i in range(6)]
    watch = subprocess.Popen(
        [os.path.join(B, "bin", "vgpu_gpuwatch"), "250", str(RESERVE)] +
        [f"{p.name}={p.cg}={uuid}={cap}" for p in pods],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mps_pipe = None
    try:
        phase1(pods, cap, tmp)
        phase2(pods, cap, tmp, "time-sliced", pods[0], pods[1], {})
        mps_pipe = start_mps(tmp)
        env = {"CUDA_MPS_PIPE_DIRECTORY": mps_pipe, "CUDA_MPS_LOG_DIRECTORY": mps_pipe + "/../log"}
        phase2(pods, cap, tmp, "MPS", pods[4], pods[5], env)
    finally:
        if mps_pipe:
            stop_mps(mps_pipe)
        watch.send_signal(signal.SIGTERM)
        wout, _ = watch.communicate(timeout=30)
        for path in made:
            os.unlink(path)
    ev = jsons(wout)
    log("watchdog:", wout.strip().replace("\n", "\n  "))
    report_watch(ev, cap)
    print_table()
    if OUT:
        with open(os.path.join(OUT, "gpu-hostile.json"), "w") as f:
            json.dump({"rows": ROWS, "log": LOG, "watchdog": ev}, f, indent=1)
    sys.exit(0 if all(r[4] for r in ROWS) else 1)


def phase1(pods, cap, tmp):
    stop = os.path.join(tmp, "stop-honest")
    honest_gib = cap // GiB - 2
    h = pods[3].spawn(f"{PY} {TENANT} hold {honest_gib} {stop}")
    line = h.stdout.readline()
    log("honest neighbour:", line.strip())
    limit = cap  # what a tenant may get through the interposer
    attacks = [
        ("env -i", f"env -i {PY} {TENANT} fill", {}),
        ("LD_PRELOAD dropped, own FATIA_VGPU_*",
         f"env -u LD_PRELOAD FATIA_VGPU_MEMORY_LIMIT=200Gi FATIA_VGPU_MEMORY_LIMIT_0=200Gi "
         f"FATIA_VGPU_SHARED_FILE= FATIA_VGPU_DEVICE_UUIDS= {PY} {TENANT} fill", {}),
        ("three child processes", f"{PY} {TENANT} children 3", {}),
    ]
    # three pods at once, one attack each, then the forged header in each
    procs = [(name, pods[i].spawn(cmd, env)) for i, (name, cmd, env) in enumerate(attacks)]
    for name, p in procs:
        o, _ = p.communicate(timeout=300)
        r = last_json(o)
        peak = r.get("peak", -1) if r else -1
        row("interposed", f"{name}: peak (GiB)", f"{peak / GiB:.1f}",
            f"<= cap {limit / GiB:.2f}", r is not None and 0 < peak <= limit)
        if r is None:
            log(o[-2000:])
    o = pods[0].run(f"{PY} {TENANT} forge {pods[0].acct}")
    r = last_json(o)
    peak = r.get("peak", -1) if r else -1
    row("interposed", "accounting header forged to no limit: peak (GiB)", f"{peak / GiB:.1f}",
        f"<= cap {limit / GiB:.2f}", r is not None and 0 < peak <= limit)
    # the read-only files: written, unmounted from a user namespace (as the tenant)
    r = last_json(pods[1].run(f"{PY} {TENANT} tamper"))
    ok = (r is not None and "written" not in (r.get("/etc/fatia/vgpu.conf"),
                                              r.get("/etc/ld.so.preload"))
          and r.get("umount") != "unmounted" and r.get("preload_now") == LIB)
    row("interposed", "write vgpu.conf / ld.so.preload, umount it from a user namespace",
        json.dumps(r)[:160] if r else "no result", "all refused", ok)
    open(stop, "w").close()
    o, _ = h.communicate(timeout=60)
    r = last_json(o)
    ok = r is not None and r.get("event") == "end" and not r.get("refusals") and r.get("tries", 0) > 0
    row("interposed", f"honest neighbour ({honest_gib} GiB held, +1 GiB every 50 ms): refusals",
        len(r.get("refusals", [])) if r else "no result", "0", ok)
    os.unlink(stop)


def phase2(pods, cap, tmp, mode, victim_pod, attacker_pod, env):
    stop = os.path.join(tmp, "stop-" + mode)
    honest_gib = cap // GiB - 2
    loader = os.path.join(tmp, "ld-nopreload.so")
    if not os.path.exists(loader):
        real = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
        data = open(real, "rb").read()
        assert data.count(b"/etc/ld.so.preload") == 1, "loader string not found"
        open(loader, "wb").write(data.replace(b"/etc/ld.so.preload", b"/tmp/ld.so.preload"))
        os.chmod(loader, 0o755)
    h = victim_pod.spawn(f"{PY} {TENANT} hold {honest_gib} {stop}", env)
    log(f"{mode}: honest neighbour:", h.stdout.readline().strip())
    a = attacker_pod.spawn(f"{loader} {PY} {TENANT} grab 120", env)
    t0 = time.time()
    try:
        ao, _ = a.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        a.kill()
        ao, _ = a.communicate()
    t_end = time.time()
    time.sleep(1)
    open(stop, "w").close()
    ho, _ = h.communicate(timeout=60)
    marks = [d for d in jsons(ao) if d.get("event") == "mark"]
    start = [d for d in jsons(ao) if d.get("event") == "start"]
    log(f"{mode}: bypass: {ao.strip()[-1500:]}")
    seen_total = start[0]["total_seen"] if start else 0
    row(f"bypass ({mode})", "the loader copy skipped the interposer: total seen (GiB)",
        f"{seen_total / GiB:.1f}", "the whole GPU (not interposed)", seen_total > cap)
    over = [m for m in marks if m["bytes"] > cap + RESERVE]
    peak = marks[-1]["bytes"] if marks else 0
    row(f"bypass ({mode})", "peak it allocated (GiB)", f"{peak / GiB:.1f}", "reported", True)
    PHASE2[mode] = {"t_over": over[0]["t"] if over else None, "t_end": t_end, "peak": peak,
                    "pod": attacker_pod.name, "victim": victim_pod.name,
                    "ran_s": t_end - t0}
    hr = last_json(ho)
    refusals = hr.get("refusals", []) if hr else []
    PHASE2[mode]["refusals"] = refusals
    killed = a.returncode is not None and a.returncode < 0 or a.returncode == 137
    row(f"bypass ({mode})", "the bypass process was killed", f"exit {a.returncode}", "killed",
        killed)
    os.unlink(stop)


PHASE2 = {}


def report_watch(ev, cap):
    kills = {e["pod"]: e for e in ev if e.get("ev") == "kill"}
    freed = {e["pod"]: e for e in ev if e.get("ev") == "freed"}
    peaks = {e["pod"]: e["peak"] for e in ev if e.get("ev") == "peak"}
    cost = [e for e in ev if e.get("ev") == "cost"]
    for mode, r in PHASE2.items():
        k, f = kills.get(r["pod"]), freed.get(r["pod"])
        row(f"bypass ({mode})", "watchdog killed the pod", "yes" if k else "no", "yes", bool(k))
        if k and r["t_over"]:
            held = (f["t"] if f else k["t"]) - r["t_over"]
            row(f"bypass ({mode})", "time over cap+reserve until its memory was freed (s)",
                f"{held:.3f}", "about one watchdog period (0.25 s) + teardown", held < 2.0)
        row(f"bypass ({mode})", "peak NVML saw for the pod (GiB)",
            f"{peaks.get(r['pod'], 0) / GiB:.1f}", "reported", True)
        ref = r["refusals"]
        span = (ref[-1] - ref[0] + 0.05) if ref else 0
        row(f"bypass ({mode})", "neighbour refused (driver OOM) while the bypass held: count, span (s)",
            f"{len(ref)}, {span:.2f}", "reported", True)
        row(f"bypass ({mode})", "honest neighbour killed by the watchdog",
            "yes" if r["victim"] in kills else "no", "no", r["victim"] not in kills)
    for p in ("pod-2", "pod-3"):
        row("interposed", f"{p} (interposed) killed by the watchdog", "yes" if p in kills else "no",
            "no", p not in kills)
    if cost:
        c = cost[0]
        row("watchdog", "CPU per sample (us), real NVML, 6 pods", c["cpu_us_per_sample"],
            "< 2500 (1% of a core at 250 ms)", c["cpu_us_per_sample"] < 2500)


def start_mps(tmp):
    pipe = os.path.join(tmp, "mps", "pipe")
    logd = os.path.join(tmp, "mps", "log")
    os.makedirs(pipe)
    os.makedirs(logd)
    for d in (os.path.dirname(pipe), pipe, logd):
        os.chmod(d, 0o755)
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=logd)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    log(f"MPS control daemon started, pipe {pipe}")
    return pipe


def stop_mps(pipe):
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe)
    subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=env, timeout=30)
    log("MPS control daemon stopped")


def print_table():
    w = max(len(r[1]) for r in ROWS)
    print()
    print(f"| item | check{' ' * (w - 5)} | value | target | ok |")
    print(f"|---|{'-' * (w + 1)}|---|---|---|")
    for r in ROWS:
        print(f"| {r[0]} | {r[1]}{' ' * (w - len(r[1]))} | {r[2]} | {r[3]} | "
              f"{'yes' if r[4] else 'NO'} |")


if __name__ == "__main__":
    main()
