#!/usr/bin/env python3
"""tests/vgpu/device/proof.py: the H200 proof of the memory-cap interposer and MPS control.

Run by scripts/vgpu-proof (which packs the programs and stops every MPS daemon on exit) on the
device machine, as `proof.py smoke|full BUNDLE`. It prints one table row per check and exits 1
if any check misses its target. Items (issue 8):
  1  CUDA C (static and shared runtime) and PyTorch (default allocator, expandable segments)
     under a 12 GiB cap; nvidia-smi and NVML inside the slice
  2  two processes in one 24 GiB slice; kill -9 one, the other gets its share within a second
  3  overhead against no interposer: allocation rate, launch latency, a training step, matmuls
  4  four time-sliced replicas at the DESIGN §7 default cap, each trying to take all memory
  5  MPS: N = 1..16 small-kernel processes, sequential vs time-sliced vs MPS; the pinned memory
     limit; the MPS module's start, restart and stop
and the per-context reserve the default cap subtracts.
"""
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time

GiB = 1 << 30
MiB = 1 << 20
ROWS = []
LOG = []
OUT = os.environ.get("OUT", "")


def log(*a):
    line = " ".join(str(x) for x in a)
    LOG.append(line)
    print(line, flush=True)


def row(item, check, value, target, ok):
    ROWS.append((item, check, str(value), target, bool(ok)))
    log(f"[{'PASS' if ok else 'MISS'}] {item} {check}: {value} (target {target})")


class Bundle:
    def __init__(self, path):
        self.dir = os.path.abspath(path)
        self.lib = os.path.join(self.dir, "lib", "libfatia-vgpu.so")
        self.probe = {
            "static": os.path.join(self.dir, "bin", "vgpu_probe_static"),
            "shared": os.path.join(self.dir, "bin", "vgpu_probe_shared"),
        }
        self.mpsctl = os.path.join(self.dir, "bin", "vgpu_mpsctl")
        self.torch = os.path.join(self.dir, "torch_job.py")
        self.tmp = tempfile.mkdtemp(prefix="fatia-vgpu-proof-")

    def env(self, cap=None, shared=None, preload=True, extra=None, probe=None):
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("FATIA_VGPU_") or k in ("LD_PRELOAD", "CUDA_MPS_PIPE_DIRECTORY"):
                del e[k]
        if probe == "shared":
            e["LD_LIBRARY_PATH"] = os.path.join(self.dir, "cudart") + ":" + e.get(
                "LD_LIBRARY_PATH", "")
        if preload:
            e["LD_PRELOAD"] = self.lib
        if cap is not None:
            e["FATIA_VGPU_MEMORY_LIMIT"] = str(cap)
        if shared:
            e["FATIA_VGPU_SHARED_FILE"] = shared
        e.update(extra or {})
        return e


def run(args, env, timeout=120, input=None):
    t0 = time.time()
    p = subprocess.run(args, env=env, input=input, capture_output=True, text=True,
                       timeout=timeout)
    log(f"$ {' '.join(args)}  [{time.time() - t0:.1f}s rc={p.returncode}]")
    for line in (p.stdout + p.stderr).splitlines()[-12:]:
        log("    " + line)
    return p


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    return None


class Server:
    """A probe in `serve` mode: one command line in, one line out."""

    def __init__(self, b, env, kind="static"):
        self.p = subprocess.Popen([b.probe[kind], "serve"], env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.expect_ready()

    def readline(self, timeout=60):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise TimeoutError("probe did not answer")
        return self.p.stdout.readline().strip()

    def expect_ready(self):
        line = self.readline()
        if line != "ready":
            raise RuntimeError(f"probe: {line!r}")

    def cmd(self, line, timeout=60):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        ans = self.readline(timeout)
        log(f"    [{self.p.pid}] {line} -> {ans}")
        return dict(kv.split("=", 1) for kv in ans.split())

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def nvml_used_mib():
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,memory.total",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True,
                         timeout=30).stdout.split(",")
    return int(out[0]), int(out[1])


# ---- the per-context reserve -------------------------------------------------------------------

def context_reserve(b):
    """Device memory a context holds outside any allocation (nvidia-smi, before and during)."""
    base, total = nvml_used_mib()
    s = Server(b, b.env(preload=False))
    time.sleep(0.5)
    with_c, _ = nvml_used_mib()
    s.close()
    time.sleep(0.5)
    p = subprocess.Popen([sys.executable, b.torch, "context"], env=b.env(preload=False),
                         stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    with_t, _ = nvml_used_mib()
    p.stdin.close()
    p.wait(timeout=60)
    reserved = int(line.split("=")[1]) if line.startswith("reserved=") else 0
    c_mib = with_c - base
    t_mib = with_t - base - reserved // MiB
    log(f"context reserve: baseline {base} MiB of {total}; CUDA C context {c_mib} MiB; "
        f"torch context {t_mib} MiB (torch's own {reserved // MiB} MiB allocations excluded)")
    row("reserve", "per-context reserve, CUDA C runtime (MiB)", c_mib, "measured", c_mib > 0)
    row("reserve", "per-context reserve, PyTorch (MiB)", t_mib, "measured", t_mib > 0)
    return total * MiB, max(c_mib, t_mib) * MiB


# ---- item 1 ----------------------------------------------------------------------------------

def item1(b, cap, want, torch_modes):
    for kind in ("static", "shared"):
        p = run([b.probe[kind], "check", str(cap), str(want)], b.env(cap=cap, probe=kind))
        j = last_json(p.stdout) or {}
        row("1", f"CUDA C, {kind} runtime: total, alloc, over cap, again",
            f"total={j.get('total')} alloc={j.get('alloc')} over={j.get('over')} "
            f"again={j.get('again')} swaps={j.get('swapped_by_address')}/"
            f"{j.get('swapped_by_name')}",
            f"total={cap}, 0, 2 (cudaErrorMemoryAllocation), 0", j.get("ok") is True)
    for mode in torch_modes:
        extra = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"} if mode == "expandable" \
            else {}
        p = run([sys.executable, b.torch, "cap", str(cap), str(want)],
                b.env(cap=cap, extra=extra), timeout=180)
        j = last_json(p.stdout) or {}
        row("1", f"PyTorch {mode}: mem_get_info total, 11 GiB, past cap, again",
            f"total={j.get('total')} alloc={j.get('alloc')} over={j.get('over')} "
            f"again={j.get('again')}",
            f"total={cap}, ok, OutOfMemoryError, ok", j.get("ok") is True)
    # nvidia-smi and NVML inside the slice.
    p = run(["nvidia-smi", "--query-gpu=memory.total,memory.used", "--format=csv,noheader,nounits"],
            b.env(cap=cap))
    try:
        total = int(p.stdout.split(",")[0])
    except (ValueError, IndexError):
        total = -1
    row("1", "nvidia-smi in the slice: memory.total (MiB)", total, cap // MiB, total == cap // MiB)
    p = run([sys.executable, b.torch, "nvml"], b.env(cap=cap))
    j = last_json(p.stdout) or {}
    row("1", "NVML (pynvml) in the slice: total, v2 total", f"{j.get('total')}, {j.get('total2')}",
        cap, j.get("total") == cap and j.get("total2") in (cap, None))


# ---- item 2 ----------------------------------------------------------------------------------

def item2(b):
    cap = 24 * GiB
    acct = os.path.join(b.tmp, "slice-2.acct")
    env = b.env(cap=cap, shared=acct)
    p1, p2 = Server(b, env), Server(b, env)
    try:
        a = p1.cmd(f"alloc {16 * GiB}")["rc"]
        over = p2.cmd(f"alloc {16 * GiB}")["rc"]
        fits = p2.cmd(f"alloc {8 * GiB}")["rc"]
        one_more = p1.cmd(f"alloc {MiB}")["rc"]
        info = p2.cmd("info")
        row("2", "24 GiB slice: P1 16 GiB, P2 16 GiB, P2 8 GiB, P1 +1 MiB",
            f"{a}, {over}, {fits}, {one_more}", "0, 2, 0, 2",
            (a, over, fits, one_more) == ("0", "2", "0", "2"))
        row("2", "free seen by P2 with 24 GiB held (bytes)", info.get("free"), 0,
            info.get("free") == "0")
        t_kill = time.time()
        p1.p.kill()
        r = p2.cmd(f"retry {16 * GiB} 5000", timeout=30)
        since_kill = (time.time() - t_kill) * 1000
        row("2", "after kill -9 of P1: P2 gets 16 GiB (ms after the kill)",
            f"rc={r['rc']} in {since_kill:.0f} ms (retry loop {r['ms']} ms)", "rc=0 within 1000",
            r["rc"] == "0" and since_kill < 1000)
    finally:
        p1.p.kill()
        p1.p.wait()
        p2.close()


# ---- item 3 ----------------------------------------------------------------------------------

def pct(a, b):
    return (b - a) / a * 100.0


def item3(b, cap, rounds):
    ab = {"off": [], "on": []}
    lat = {"off": [], "on": []}
    syn = {"off": [], "on": []}
    for _ in range(rounds):
        for mode in ("off", "on"):
            env = b.env(cap=cap) if mode == "on" else b.env(preload=False)
            j = last_json(run([b.probe["static"], "allocbench", "20000", str(MiB)], env).stdout)
            ab[mode].append(j["us_per_pair"])
            j = last_json(run([b.probe["static"], "launchbench", "100000", "5"], env).stdout)
            lat[mode].append(j["launch_us"])
            syn[mode].append(j["launch_sync_us"])
    m = {k: {m_: statistics.median(v[m_]) for m_ in v} for k, v in
         (("alloc", ab), ("launch", lat), ("sync", syn))}
    row("3", "cudaMalloc+cudaFree 1 MiB (us/pair, off -> on)",
        f"{m['alloc']['off']:.2f} -> {m['alloc']['on']:.2f} "
        f"({pct(m['alloc']['off'], m['alloc']['on']):+.1f}%)", "reported", True)
    row("3", "kernel launch, async (us, off -> on)",
        f"{m['launch']['off']:.3f} -> {m['launch']['on']:.3f} "
        f"({pct(m['launch']['off'], m['launch']['on']):+.2f}%)", "< 1%",
        pct(m['launch']['off'], m['launch']['on']) < 1.0)
    row("3", "kernel launch + sync (us, off -> on)",
        f"{m['sync']['off']:.2f} -> {m['sync']['on']:.2f} "
        f"({pct(m['sync']['off'], m['sync']['on']):+.2f}%)", "< 1%",
        pct(m['sync']['off'], m['sync']['on']) < 1.0)
    step = {"off": [], "on": []}
    mm = {"off": [], "on": []}
    for _ in range(2):
        for mode in ("off", "on"):
            env = b.env(cap=60 * GiB) if mode == "on" else b.env(preload=False)
            j = last_json(run([sys.executable, b.torch, "bench"], env, timeout=240).stdout)
            step[mode].append(j["step_ms"])
            mm[mode].append(j["matmul_ms"])
    so, sn = statistics.mean(step["off"]), statistics.mean(step["on"])
    mo, mn = statistics.mean(mm["off"]), statistics.mean(mm["on"])
    row("3", "PyTorch training step (ms, off -> on)",
        f"{so:.3f} -> {sn:.3f} ({pct(so, sn):+.2f}%)", "< 1%", pct(so, sn) < 1.0)
    row("3", "PyTorch 8192^2 bf16 matmul (ms, off -> on)",
        f"{mo:.3f} -> {mn:.3f} ({pct(mo, mn):+.2f}%)", "reported", True)


# ---- item 4 ----------------------------------------------------------------------------------

def item4(b, total, measured, negative):
    # The cap the agent gives each of 4 replicas: fatia_vgpu_default_cap with the H200 reserve.
    cap, reserve = (int(x) for x in mpsctl(b, "defaultcap", str(total), "4").stdout.split())
    log(f"default cap of 4 replicas: ({total} - 4 x {reserve}) / 4 -> {cap} bytes")
    row("4", "measured PyTorch context <= FATIA_VGPU_CONTEXT_RESERVE_H200 (MiB)",
        f"{measured // MiB} <= {reserve // MiB}", "yes", measured <= reserve)
    procs = []
    go = os.path.join(b.tmp, "go-4")
    for i in range(4):
        extra = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"} if i >= 2 else {}
        env = b.env(cap=cap, shared=os.path.join(b.tmp, f"replica-{i}.acct"), extra=extra)
        procs.append(subprocess.Popen([sys.executable, b.torch, "fill", str(cap), go], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    # Each fills to its cap and waits; when all four hold their memory at once, they compute.
    deadline = time.time() + 180
    while time.time() < deadline and sum(
            os.path.exists(os.path.join(b.tmp, f"go-4.ready.{p.pid}")) for p in procs) < 4:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.2)
    ready = sum(os.path.exists(os.path.join(b.tmp, f"go-4.ready.{p.pid}")) for p in procs)
    used, total_mib = nvml_used_mib()
    log(f"all replicas filled: the GPU has {used} of {total_mib} MiB in use "
        f"({total_mib - used} MiB left for the contexts to grow)")
    with open(go, "w") as f:
        f.write("all" if ready == 4 else f"only {ready}")
    log(f"replicas holding their memory at once: {ready} of 4")
    results = []
    for i, p in enumerate(procs):
        out = p.communicate(timeout=180)[0]
        for line in out.splitlines()[-6:]:
            log(f"    [replica {i}] {line}")
        results.append(last_json(out) or {})
    for i, j in enumerate(results):
        mode = "expandable" if i >= 2 else "default"
        row("4", f"replica {i} ({mode}): took, error, healthy after",
            f"{(j.get('allocated') or 0) / GiB:.2f} GiB, {j.get('error')}, {j.get('healthy')}"
            + (f" ({j.get('health_error')})" if j.get("health_error") else ""),
            f"<= cap {cap / GiB:.2f} GiB and > cap - 1 GiB, OutOfMemoryError, True",
            j.get("error") == "OutOfMemoryError" and j.get("healthy") is True and
            cap - GiB < (j.get("allocated") or 0) <= cap and j.get("all_held") is True)
    if negative:
        # Without the interposer, the first job takes the GPU and the second gets nothing.
        env = b.env(preload=False)
        go2 = os.path.join(b.tmp, "go-neg")
        p1 = subprocess.Popen([sys.executable, b.torch, "fill", str(200 * GiB), go2], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and not os.path.exists(f"{go2}.ready.{p1.pid}") and \
                p1.poll() is None:
            time.sleep(0.2)
        p2 = run([sys.executable, b.torch, "one", str(GiB)], env, timeout=120)
        with open(go2, "w") as f:
            f.write("all")
        j1 = last_json(p1.communicate(timeout=120)[0]) or {}
        j2 = last_json(p2.stdout) or {}
        row("4", "control without the interposer: job 1 takes, job 2 gets 1 GiB",
            f"{(j1.get('allocated') or 0) / GiB:.1f} GiB, {j2.get('result')}",
            "job 2 fails (the harm the cap prevents)", j2.get("result") not in (None, "ok"))


# ---- item 5 ----------------------------------------------------------------------------------

def spin_round(b, n, env, cycles, iters, concurrent):
    """n spin probes; returns the seconds each one's timed loop took (start-up excluded)."""
    times = []
    # All n start and warm up together (start-up is not timed), then run their loops either one
    # after another (exclusive-sequential: the others wait idle) or all at once.
    ps = [subprocess.Popen([b.probe["static"], "spin", str(iters), str(cycles)], env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
          for _ in range(n)]
    for p in ps:
        line = p.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"spin probe: {line!r}")
    if not concurrent:
        for p in ps:
            times.append(float(p.communicate("go\n", timeout=120)[0].strip()))
        return sum(times), times
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in ps:
        times.append(float(p.communicate(timeout=120)[0].strip()))
    return max(times), times


def mpsctl(b, *args):
    env = b.env(preload=False)
    env["LD_LIBRARY_PATH"] = os.path.join(b.dir, "lib") + ":" + env.get("LD_LIBRARY_PATH", "")
    return run([b.mpsctl, *args], env, timeout=60)


def item5(b, ns, iters, cycles):
    base = os.path.join(b.tmp, "mps")
    env_plain = b.env(preload=False)
    seq, ts, mps = {}, {}, {}
    for n in ns:
        seq[n] = spin_round(b, n, env_plain, cycles, iters, False)[0]
        ts[n] = spin_round(b, n, env_plain, cycles, iters, True)[0]
    # The MPS module: start, then kill -9 and restart (before any client, so no server is
    # orphaned), then clients.
    p = mpsctl(b, "start", base, "gpu-0", "0", "0", "0")
    row("5", "MPS module: start (nvidia-cuda-mps-control -d, private dirs)",
        p.stdout.strip(), "pid=...", p.returncode == 0)
    p = mpsctl(b, "selftest", base, "gpu-0", "0")
    row("5", "MPS module: daemon killed -9, fatia_mps_ensure restarts it", p.stdout.strip(),
        "restarted=1 alive=1", p.returncode == 0)
    envs = mpsctl(b, "env", base, "gpu-0", "0", "0", "0").stdout.split()
    cenv = dict(env_plain)
    cenv.update(kv.split("=", 1) for kv in envs)
    for n in ns:
        mps[n] = spin_round(b, n, cenv, cycles, iters, True)[0]
    log(mpsctl(b, "cmd", base, "gpu-0", "0", "get_server_list").stdout)
    p = mpsctl(b, "stop", base, "gpu-0", "0")
    row("5", "MPS module: stop (quit, directories removed)", p.stdout.strip(), "stopped=1",
        p.returncode == 0 and not os.path.exists(os.path.join(base, "gpu-0")))
    log("  N   sequential(s)  time-sliced(s)  MPS(s)   TS/seq  MPS/seq  MPS vs TS")
    for n in ns:
        log(f"{n:3d}   {seq[n]:12.4f}  {ts[n]:13.4f}  {mps[n]:7.4f}  {seq[n] / ts[n]:6.2f}x "
            f"{seq[n] / mps[n]:6.2f}x   {ts[n] / mps[n]:6.2f}x")
        work = n * iters
        row("5", f"N={n}: throughput launches/s seq | time-sliced | MPS",
            f"{work / seq[n]:.0f} | {work / ts[n]:.0f} | {work / mps[n]:.0f} "
            f"(MPS {ts[n] / mps[n]:.2f}x time-sliced)", "reported", True)
    big = max(ns)
    row("5", f"N={big}: MPS over time-sliced", f"{ts[big] / mps[big]:.2f}x", "> 1.5x",
        ts[big] / mps[big] > 1.5)
    pinned(b, base)


def pinned(b, base):
    """MPS pinned device memory limit: the daemon's default (set by the module) and a client's."""
    p = mpsctl(b, "start", base, "gpu-p", "0", "0", str(2 * GiB))
    ok = p.returncode == 0
    envs = mpsctl(b, "env", base, "gpu-p", "0", "0", "0").stdout.split()
    cenv = b.env(preload=False)
    cenv.update(kv.split("=", 1) for kv in envs)
    s = Server(b, cenv)
    info = s.cmd("info")
    small = s.cmd(f"alloc {GiB}")["rc"]
    big = s.cmd(f"alloc {GiB}")["rc"]
    s.close()
    # The limit counts the client's context too (about 0.5 GiB), so 1 GiB fits and 2 do not.
    row("5", "MPS default pinned limit 2 GiB (module): free seen; 1 GiB, then 1 GiB more",
        f"free={int(info.get('free', 0)) / GiB:.2f} GiB; {small}, {big}", "< 2 GiB; 0, 2",
        ok and (small, big) == ("0", "2") and int(info.get("free", 0)) < 2 * GiB)
    envs = mpsctl(b, "env", base, "gpu-p", "0", "0", str(GiB)).stdout.split()
    cenv = b.env(preload=False)
    cenv.update(kv.split("=", 1) for kv in envs)
    s = Server(b, cenv)
    small = s.cmd(f"alloc {256 * MiB}")["rc"]
    big = s.cmd(f"alloc {GiB}")["rc"]
    s.close()
    row("5", "MPS client limit 1 GiB (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT): 256 MiB, then 1 GiB",
        f"{small}, {big}", "0, 2", (small, big) == ("0", "2"))
    p = mpsctl(b, "stop", base, "gpu-p", "0")
    row("5", "MPS module: stop the pinned-limit daemon", p.stdout.strip(), "stopped=1",
        p.returncode == 0)


# ---- main ------------------------------------------------------------------------------------

def main():
    stage, bundle = sys.argv[1], Bundle(sys.argv[2])
    t0 = time.time()
    log(f"vgpu-proof {stage} on {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    log(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_mode",
                        "--format=csv,noheader"], capture_output=True, text=True).stdout.strip())
    steps = []
    if stage == "replicas":
        state = {}

        def reserve4():
            state["total"], state["reserve"] = context_reserve(bundle)

        steps = [
            ("reserve", reserve4),
            ("item 4", lambda: item4(bundle, state["total"], state["reserve"], False)),
        ]
    elif stage == "smoke":
        steps = [
            ("reserve", lambda: context_reserve(bundle)),
            ("item 1", lambda: item1(bundle, 12 * GiB, 11 * GiB, ["default", "expandable"])),
            ("item 5 pinned", lambda: pinned(bundle, os.path.join(bundle.tmp, "mps"))),
        ]
    else:
        state = {}

        def reserve():
            state["total"], state["reserve"] = context_reserve(bundle)

        steps = [
            ("reserve", reserve),
            ("item 1", lambda: item1(bundle, 12 * GiB, 11 * GiB, ["default", "expandable"])),
            ("item 2", lambda: item2(bundle)),
            ("item 3", lambda: item3(bundle, 12 * GiB, 3)),
            ("item 4", lambda: item4(bundle, state["total"], state["reserve"], True)),
            ("item 5", lambda: item5(bundle, [1, 2, 4, 8, 16], 100, 200000)),
        ]
    for name, fn in steps:
        t = time.time()
        try:
            fn()
        except Exception as e:  # a step that breaks is a missed target, and the rest still runs
            row(name, "ran to the end", f"{type(e).__name__}: {e}", "no exception", False)
        log(f"-- {name}: {time.time() - t:.1f}s")
    log(f"\nvgpu-proof {stage}: {time.time() - t0:.0f}s")
    width = max(len(r[1]) for r in ROWS)
    print("\n| item | check | measured | target | ok |\n|---|---|---|---|---|")
    for item, check, value, target, ok in ROWS:
        print(f"| {item} | {check:<{width}} | {value} | {target} | {'yes' if ok else 'NO'} |")
    missed = [r for r in ROWS if not r[4]]
    print(f"\n{len(ROWS) - len(missed)} of {len(ROWS)} checks met their target")
    if OUT:
        with open(os.path.join(OUT, f"vgpu-proof-{stage}.log"), "w") as f:
            f.write("\n".join(LOG) + "\n")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
