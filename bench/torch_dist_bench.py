"""PyTorch side of the multi-GPU benchmark (see bench/dist.sh): the same cases
as bench/dist_bench.rhai with torch.distributed over NCCL and
torch.nn.parallel.DistributedDataParallel. usage: torch_dist_bench.py N"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def report(name, value, unit):
    if dist.get_rank() == 0:
        print(f"RESULT,{name},{value},{unit}", flush=True)


def ddp_ms(sizes, batch, dtype, steps, rank):
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
    model = torch.nn.Sequential(*layers).to("cuda", dtype)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + rank)
    x = torch.randn(batch, sizes[0], device="cuda", dtype=dtype)
    y = torch.randint(0, sizes[-1], (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / steps * 1e3


def run(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device(f"cuda:{rank}"))
    torch.backends.cuda.matmul.allow_tf32 = False
    small = torch.zeros(1024, device="cuda")
    for _ in range(20):
        dist.all_reduce(small)
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(1000):
        dist.all_reduce(small)
    torch.cuda.synchronize()
    report(f"all_reduce f32 4 KiB x{world}", (time.perf_counter() - start) / 1000 * 1e6, "us/call")
    for mib in [1, 16, 64, 256, 1024]:
        n = mib * 262144
        t = torch.zeros(n, device="cuda")
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        dist.barrier()
        iters = 10 if mib >= 256 else 40
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        s = (time.perf_counter() - start) / iters
        alg = 4.0 * n / s / 1e9
        report(f"all_reduce f32 {mib} MiB x{world} algbw", alg, "GB/s")
        report(f"all_reduce f32 {mib} MiB x{world} busbw", alg * 2.0 * (world - 1) / world, "GB/s")
    for dtype, name, steps in [(torch.float32, "f32", 20), (torch.bfloat16, "bf16", 50)]:
        ms = ddp_ms([1024, 4096, 4096, 1024], 4096, dtype, steps, rank)
        report(f"ddp step MLP 1024-4096-4096-1024 b4096/gpu {name} x{world}", ms, "ms/step")
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    mp.spawn(run, args=(world, 29500 + os.getpid() % 1000), nprocs=world)
