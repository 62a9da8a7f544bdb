#!/usr/bin/env python3
"""tests/vgpu/device/tenant.py: one tenant process of scripts/gpu-hostile, on the H200.

Started as root inside its pod's mount namespace and cgroup; drops to uid/gid 1000 (no
capabilities) before it touches CUDA, unless --stay-root. Roles (one JSON line of result each):
  fill                 allocate 1 GiB tensors until refused; peak = bytes PyTorch got
  children N           N child processes fill at once; the sum of their peaks
  forge ACCT           rewrite every cap in the accounting file's header to "no limit", then fill
  hold GIB STOPFILE    allocate GIB GiB and hold it; every 50 ms allocate and free 1 GiB more
                       (still within the cap) until STOPFILE exists: every refusal is logged with
                       its time (the neighbour of the bypass)
  tamper               write /etc/fatia/vgpu.conf and /etc/ld.so.preload, then unmount the latter
                       from a fresh user + mount namespace (where the tenant is "root")
  grab GIB             allocate up to GIB GiB in 2 GiB steps, logging the time the total passes
                       each step, then hold until killed (the bypass run through a loader that
                       skips /etc/ld.so.preload)
Times are time.time() (CLOCK_REALTIME, as vgpu_gpuwatch logs).
"""
import json
import mmap
import os
import struct
import sys
import time

GiB = 1 << 30


def out(**kw):
    print(json.dumps(kw), flush=True)


def drop():
    if "--stay-root" in sys.argv or os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(1000)
    os.setuid(1000)


def torch_fill():
    import torch

    free, total = torch.cuda.mem_get_info()
    held = []
    try:
        while len(held) < 200:
            held.append(torch.empty(GiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    return len(held) * GiB, total


def main():
    role = sys.argv[1]
    drop()
    if role == "fill":
        peak, total = torch_fill()
        out(role=role, peak=peak, total_seen=total, uid=os.getuid())
    elif role == "children":
        n = int(sys.argv[2])
        r, w = os.pipe()
        kids = []
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                os.close(r)
                peak, _ = torch_fill()
                os.write(w, f"{peak}\n".encode())
                time.sleep(3)  # hold while the siblings fill
                os._exit(0)
            kids.append(pid)
        os.close(w)
        peaks = [int(x) for x in os.fdopen(r).read().split()]
        for k in kids:
            os.waitpid(k, 0)
        out(role=role, peaks=peaks, peak=sum(peaks))
    elif role == "forge":
        with open(sys.argv[2], "r+b") as f:
            m = mmap.mmap(f.fileno(), 0)
            for i in range(16):
                m[32 + 8 * i:40 + 8 * i] = struct.pack("<Q", 2**64 - 1)
            m.close()
        peak, total = torch_fill()
        out(role=role, peak=peak, total_seen=total)
    elif role == "hold":
        import torch

        gib, stop = int(sys.argv[2]), sys.argv[3]
        held = [torch.empty(GiB, dtype=torch.uint8, device="cuda") for _ in range(gib)]
        torch.cuda.synchronize()
        out(role=role, event="held", gib=gib, t=time.time())
        refusals, tries = [], 0
        while not os.path.exists(stop):
            tries += 1
            try:
                x = torch.empty(GiB, dtype=torch.uint8, device="cuda")
                del x
                torch.cuda.empty_cache()
            except torch.OutOfMemoryError:
                refusals.append(time.time())
                torch.cuda.empty_cache()
            time.sleep(0.05)
        out(role=role, event="end", tries=tries, refusals=refusals, held=len(held))
    elif role == "tamper":
        import ctypes

        res = {}
        for path in ("/etc/fatia/vgpu.conf", "/etc/ld.so.preload"):
            try:
                with open(path, "w") as f:
                    f.write("FATIA_VGPU_MEMORY_LIMIT_0=200Gi\n")
                res[path] = "written"
            except OSError as e:
                res[path] = e.strerror
        try:
            os.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNS)
            libc = ctypes.CDLL(None, use_errno=True)
            rc = libc.umount2(b"/etc/ld.so.preload", 2)  # MNT_DETACH
            res["umount"] = "unmounted" if rc == 0 else os.strerror(ctypes.get_errno())
        except OSError as e:
            res["umount"] = "unshare: " + e.strerror
        res["preload_now"] = open("/etc/ld.so.preload").read().strip()
        out(role=role, **res)
    elif role == "grab":
        import torch

        gib = int(sys.argv[2])
        free, total = torch.cuda.mem_get_info()
        out(role=role, event="start", total_seen=total, free_seen=free, t=time.time())
        held = []
        try:
            while len(held) * 2 < gib:
                held.append(torch.empty(2 * GiB, dtype=torch.uint8, device="cuda"))
                torch.cuda.synchronize()
                out(role=role, event="mark", bytes=len(held) * 2 * GiB, t=time.time())
        except torch.OutOfMemoryError:
            pass
        out(role=role, event="grabbed", bytes=len(held) * 2 * GiB, t=time.time())
        while True:
            time.sleep(1)
    else:
        out(role=role, error="unknown role")
        sys.exit(2)


if __name__ == "__main__":
    main()
