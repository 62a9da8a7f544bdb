#!/usr/bin/env python3
# scripts/nccl-allreduce.py: one process per visible GPU, NCCL all-reduce of float32 buffers from
# 1 MiB to 1 GiB; prints algorithm bandwidth and bus bandwidth (nccl-tests' definition:
# busbw = algbw * 2 (n - 1) / n) per size, the median of 20 timed iterations after 5 warm-ups.
# Checks the sum. NVLink multicast must stay off (the caller exports NCCL_NVLS_ENABLE=0).
import os, statistics, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    for mib in (1, 16, 64, 256, 1024):
        n = mib * (1 << 20) // 4
        x = torch.full((n,), float(rank + 1), device="cuda")
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(20):
            x.fill_(float(rank + 1))
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); dist.all_reduce(x); e.record(); torch.cuda.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        want = world * (world + 1) / 2
        ok = bool(torch.all(x == want).item())
        t = statistics.median(times)
        algbw = mib * (1 << 20) / t / 1e9
        busbw = algbw * 2 * (world - 1) / world
        if rank == 0:
            print(f"bytes={mib}MiB time={t*1e6:.1f}us algbw={algbw:.1f}GB/s busbw={busbw:.1f}GB/s "
                  f"sum={'ok' if ok else 'FAIL'}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    world = torch.cuda.device_count()
    print(f"visible GPUs: {world} ({os.environ.get('CUDA_VISIBLE_DEVICES')}) "
          f"{[torch.cuda.get_device_name(i) for i in range(world)]}", flush=True)
    if world < 2:
        print("FAIL need two GPUs"); sys.exit(1)
    mp.spawn(worker, args=(world,), nprocs=world)
