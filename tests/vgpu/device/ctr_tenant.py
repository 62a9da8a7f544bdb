"""tests/vgpu/device/ctr_tenant.py: what a tenant's pod runs on the H200 in scripts/gpu-containers
(issue 16), inside a container of fatia.dev/pytorch:1 (the image carries this file at
/opt/fatia-test/ctr_tenant.py). Every line it prints is one JSON object.

  alloc              1 GiB tensors until the driver (or the interposer) refuses, prints the count
  children N         N alloc processes at once, each holding what it got until all are done
  hold N SECS        holds N GiB, then asks for 1 GiB more every 50 ms for SECS seconds and
                     prints the times it was refused (an honest neighbour)
  hostile            the attempts in order: cooperative, LD_PRELOAD and the MPS pipe unset with
                     the tenant's own FATIA_VGPU_* caps, env -i, three children, the files
                     written and unmounted; then sleeps (the runner execs a second shell into it)
  bypass-mps         bypass, having also left MPS (CUDA_MPS_PIPE_DIRECTORY pointed at nothing:
                     a context of its own beside the MPS server, outside its limits)
  bypass             a copy of the dynamic loader that reads /tmp/ld.so.preload instead of
                     /etc/ld.so.preload runs PyTorch without the interposer (as a static or
                     self-loading program would): 2 GiB tensors up to 120 GiB, held 60 s
"""
import json
import os
import subprocess
import sys
import time

G = 1 << 30
PY = sys.executable
ME = os.path.abspath(__file__)


def out(**kv):
    kv["t"] = time.time()
    print(json.dumps(kv), flush=True)


def alloc(step=1, limit=140, hold=0.0):
    import torch

    free, total = torch.cuda.mem_get_info()
    held = []
    err = ""
    try:
        while len(held) * step < limit:
            held.append(torch.empty(step * G, dtype=torch.uint8, device="cuda"))
            torch.cuda.synchronize()
    except torch.OutOfMemoryError as e:
        err = str(e).split("\n")[0][:160]
    out(role="alloc", gib=len(held) * step, total_seen_gib=round(total / G, 2), refused=err,
        preload=os.environ.get("LD_PRELOAD", ""), uid=os.getuid())
    if hold:
        time.sleep(hold)
    return len(held) * step


def children(n):
    ps = [subprocess.Popen([PY, ME, "alloc-hold"], stdout=subprocess.PIPE, text=True)
          for _ in range(n)]
    got = []
    for p in ps:
        line = p.stdout.readline()
        got.append(json.loads(line)["gib"] if line else -1)
    for p in ps:
        p.wait()
    out(role="children", n=n, each=got, total_gib=sum(got))


def hold(n, secs):
    import torch

    held = [torch.empty(G, dtype=torch.uint8, device="cuda") for _ in range(n)]
    out(role="hold", event="held", gib=len(held))
    refused, tries, t0 = [], 0, time.time()
    while time.time() - t0 < secs:
        tries += 1
        try:
            x = torch.empty(G, dtype=torch.uint8, device="cuda")
            del x
        except torch.OutOfMemoryError:
            refused.append(time.time())
        torch.cuda.empty_cache()
        time.sleep(0.05)
    out(role="hold", event="done", tries=tries, refused=refused)


def attempt(name, argv, env=None):
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    res = json.loads(lines[-1]) if lines else {"error": (r.stderr or "")[-300:]}
    res.update(role="attempt", attempt=name, rc=r.returncode)
    print(json.dumps(res), flush=True)


def tamper():
    res = {}
    for f in ("/etc/fatia/vgpu.conf", "/etc/ld.so.preload"):
        try:
            with open(f, "w") as fh:
                fh.write("FATIA_VGPU_MEMORY_LIMIT_0=999999999999\n")
            res[f] = "WRITTEN"
        except OSError as e:
            res[f] = e.strerror
    r = subprocess.run(["umount", "/etc/ld.so.preload"], capture_output=True, text=True)
    res["umount"] = "rc %d: %s" % (r.returncode, r.stderr.strip()[-120:])
    res["vgpu.conf"] = open("/etc/fatia/vgpu.conf").read().strip().splitlines()
    out(role="attempt", attempt="tamper", **res)


def hostile():
    env = dict(os.environ)
    attempt("cooperative", [PY, ME, "alloc"])
    env2 = {k: v for k, v in env.items()
            if k not in ("LD_PRELOAD", "CUDA_MPS_PIPE_DIRECTORY")}
    env2.update(FATIA_VGPU_MEMORY_LIMIT_0=str(200 * G), FATIA_VGPU_MEMORY_LIMIT=str(200 * G))
    attempt("unset LD_PRELOAD and the MPS pipe, own FATIA_VGPU_* caps", [PY, ME, "alloc"], env2)
    attempt("env -i", ["env", "-i", PY, ME, "alloc"])
    attempt("three children at once", [PY, ME, "children", "3"])
    tamper()
    out(role="hostile", event="waiting")
    time.sleep(300)


def bypass_mps():
    os.environ["CUDA_MPS_PIPE_DIRECTORY"] = "/tmp/no-mps-here"
    os.environ.pop("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", None)
    bypass()


def bypass():
    d = open("/lib64/ld-linux-x86-64.so.2", "rb").read()
    open("/tmp/ldnp.so", "wb").write(d.replace(b"/etc/ld.so.preload", b"/tmp/ld.so.preload"))
    os.chmod("/tmp/ldnp.so", 0o755)
    os.execv("/tmp/ldnp.so", ["/tmp/ldnp.so", PY, ME, "bypass-run"])


def bypass_run():
    import torch

    free, total = torch.cuda.mem_get_info()
    out(role="bypass", event="start", total_seen_gib=round(total / G, 2))
    held = []
    try:
        while len(held) < 60:
            held.append(torch.empty(2 * G, dtype=torch.uint8, device="cuda"))
            torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        pass
    out(role="bypass", event="peak", gib=2 * len(held))
    time.sleep(60)
    out(role="bypass", event="alive", note="the watchdog did not act")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "alloc":
        alloc()
    elif cmd == "alloc-hold":
        alloc(hold=3.0)
    elif cmd == "children":
        children(int(sys.argv[2]))
    elif cmd == "hold":
        hold(int(sys.argv[2]), float(sys.argv[3]))
    elif cmd == "hostile":
        hostile()
    elif cmd == "bypass":
        bypass()
    elif cmd == "bypass-mps":
        bypass_mps()
    elif cmd == "bypass-run":
        bypass_run()
