#!/usr/bin/env python3
"""tests/vgpu/device/torch_job.py: the PyTorch side of the H200 proof (proof.py runs it).

Modes (each prints one JSON line last):
  context          make a context and run a matmul (cuBLAS loaded), print "reserved=<torch's
                   own bytes>", wait for stdin to close
  cap CAP WANT     mem_get_info reports CAP; WANT bytes work; 2 GiB more raises
                   torch.OutOfMemoryError; after freeing (and emptying the cache) WANT works again
  nvml             pynvml's view of GPU 0: total (v1) and total (v2)
  bench            a training step and an 8192^2 bf16 matmul, medians in ms
  fill CAP GO      take memory until refused (1 GiB, then 64 MiB pieces), touch GO.ready.<pid>,
                   wait for GO, then check the GPU still computes; reports what it got
  one BYTES        one allocation: "ok" or the exception's type
"""
import json
import os
import statistics
import sys
import time

GiB = 1 << 30
MiB = 1 << 20


def emit(**kw):
    print(json.dumps(kw), flush=True)


def main():
    mode = sys.argv[1]
    if mode == "nvml":
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        m = pynvml.nvmlDeviceGetMemoryInfo(h)
        total2 = None
        try:
            total2 = pynvml.nvmlDeviceGetMemoryInfo(h, version=pynvml.nvmlMemory_v2).total
        except Exception:  # older bindings or drivers: v1 only
            pass
        emit(total=m.total, used=m.used, free=m.free, total2=total2)
        return

    import torch

    if mode == "context":
        # What a training job's context holds: the runtime, cuBLAS(Lt) handles and kernels.
        a = torch.randn(2048, 2048, device="cuda")
        (a @ a).sum().item()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            (a @ a).sum().item()
        torch.cuda.synchronize()
        print(f"reserved={torch.cuda.memory_reserved()}", flush=True)
        sys.stdin.read()
        return

    if mode == "cap":
        cap, want = int(sys.argv[2]), int(sys.argv[3])
        free, total = torch.cuda.mem_get_info()
        res = {"total": total, "free": free}
        x = torch.empty(want, dtype=torch.uint8, device="cuda")
        x.fill_(1)
        res["alloc"] = "ok"
        try:
            y = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda")
            y.fill_(1)
            res["over"] = "no error"
        except torch.OutOfMemoryError:
            res["over"] = "OutOfMemoryError"
        except Exception as e:
            res["over"] = type(e).__name__
        del x
        torch.cuda.empty_cache()
        try:
            x = torch.empty(want, dtype=torch.uint8, device="cuda")
            x.fill_(2)
            torch.cuda.synchronize()
            res["again"] = "ok"
        except Exception as e:
            res["again"] = type(e).__name__
        res["num_ooms"] = torch.cuda.memory_stats().get("num_ooms")
        res["ok"] = (total == cap and res["over"] == "OutOfMemoryError" and
                     res["again"] == "ok")
        emit(**res)
        return

    if mode == "bench":
        torch.manual_seed(0)
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
        model = torch.nn.Sequential(*layers).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        x = torch.randn(256, 4096, device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x).float().pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(20):
            step()
        torch.cuda.synchronize()
        steps = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(40):
                step()
            torch.cuda.synchronize()
            steps.append((time.perf_counter() - t0) * 1000 / 40)
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        for _ in range(5):
            c = a @ b
        torch.cuda.synchronize()
        mms = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(20):
                c = a @ b
            torch.cuda.synchronize()
            mms.append((time.perf_counter() - t0) * 1000 / 20)
        emit(step_ms=statistics.median(steps), matmul_ms=statistics.median(mms),
             steps=steps, matmuls=mms, checksum=float(c[0, 0]))
        return

    if mode == "fill":
        cap, go = int(sys.argv[2]), sys.argv[3]
        held, allocated, error, health_error = [], 0, None, None
        # A job computes before its memory grows: its kernels (cuBLAS) are loaded by then.
        a = torch.randn(2048, 2048, device="cuda")
        (a @ a).sum().item()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            (a @ a).sum().item()
        del a
        t = None
        for piece in (GiB, 64 * MiB):
            while allocated + piece <= cap:
                try:
                    t = torch.empty(piece, dtype=torch.uint8, device="cuda")
                    t.fill_(3)
                    held.append(t)
                    allocated += piece
                except torch.OutOfMemoryError:
                    error = error or "OutOfMemoryError"
                    break
                except Exception as e:
                    error = error or type(e).__name__
                    break
        del t  # the list holds every piece; this name would keep the last one alive
        torch.cuda.synchronize()
        open(f"{go}.ready.{os.getpid()}", "w").close()
        deadline = time.time() + 150
        while not os.path.exists(go) and time.time() < deadline:
            time.sleep(0.1)
        all_held = os.path.exists(go) and open(go).read().strip() == "all"
        # Still a working GPU while the others hold their memory: give back a 1 GiB piece to
        # the job's own cache and compute in it; the data it wrote is still there.
        healthy = False
        try:
            held.pop(0)
            a = torch.randn(2048, 2048, device="cuda")
            healthy = bool(torch.isfinite(a @ a).all().item())
            with torch.autocast("cuda", dtype=torch.bfloat16):
                healthy = healthy and bool(torch.isfinite(a @ a).all().item())
            checks = sum(int(t[0].item()) == 3 for t in held[:8])
            healthy = healthy and checks == min(8, len(held))
        except Exception as e:
            health_error = f"{type(e).__name__}: {str(e)[:160]}"
        free, total = torch.cuda.mem_get_info()
        emit(allocated=allocated, error=error, healthy=healthy, health_error=health_error,
             all_held=all_held, total=total, pieces=len(held) + 1)
        return

    if mode == "one":
        try:
            t = torch.empty(int(sys.argv[2]), dtype=torch.uint8, device="cuda")
            t.fill_(1)
            torch.cuda.synchronize()
            emit(result="ok")
        except Exception as e:
            emit(result=type(e).__name__)
        return

    sys.exit(2)


if __name__ == "__main__":
    main()
