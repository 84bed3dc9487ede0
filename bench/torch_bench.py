"""PyTorch side of the side-by-side benchmark: the same cases as kiln_bench.rhai.

Prints `RESULT,<case>,<value>,<unit>` lines.
"""
import time

import torch

dev = "cuda"
torch.manual_seed(0)


def report(case, value, unit):
    print(f"RESULT,{case},{value},{unit}", flush=True)


def host_cost(f, n=20000):
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def gpu_time(f, reps):
    f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        f()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3


x, y = torch.rand(1024, device=dev), torch.rand(1024, device=dev)
m = torch.rand(64, 64, device=dev)
report("host x + y", host_cost(lambda: x + y), "us/op")
report("host x * 2.0", host_cost(lambda: x * 2.0), "us/op")
report("host relu(x)", host_cost(lambda: torch.relu(x)), "us/op")
report("host m @ m (64x64)", host_cost(lambda: m @ m), "us/op")
report("host empty(4 MB)", host_cost(lambda: torch.empty(1048576, device=dev)), "us/op")

N = 1 << 26
a, b = torch.randn(N, device=dev), torch.randn(N, device=dev)
reps = 50
gbs = lambda nbytes, secs: nbytes / secs / 1e9
report("clone", gbs(8 * N * reps, gpu_time(lambda: a.clone(), reps)), "GB/s")
report("a + b", gbs(12 * N * reps, gpu_time(lambda: a + b, reps)), "GB/s")
report("a * 3.0", gbs(8 * N * reps, gpu_time(lambda: a * 3.0, reps)), "GB/s")
report("exp(a)", gbs(8 * N * reps, gpu_time(lambda: torch.exp(a), reps)), "GB/s")
report("gelu(a)", gbs(8 * N * reps, gpu_time(lambda: torch.nn.functional.gelu(a), reps)), "GB/s")
report("a.to(bf16)", gbs(6 * N * reps, gpu_time(lambda: a.to(torch.bfloat16), reps)), "GB/s")
M = torch.randn(8192, 8192, device=dev)
report("M + M[0] (8192^2)", gbs(8 * N * reps, gpu_time(lambda: M + M[0], reps)), "GB/s")
report("M.t().contiguous() (8192^2)", gbs(8 * N * reps, gpu_time(lambda: M.t().contiguous(), reps)), "GB/s")

report("a.sum()", gbs(4 * N * reps, gpu_time(lambda: a.sum(), reps)), "GB/s")
report("M.sum(1) (8192^2)", gbs(4 * N * reps, gpu_time(lambda: M.sum(1), reps)), "GB/s")
report("M.sum(0) (8192^2)", gbs(4 * N * reps, gpu_time(lambda: M.sum(0), reps)), "GB/s")
S = torch.randn(16384, 4096, device=dev)
ln = torch.nn.LayerNorm(4096, device=dev)
report("softmax(S, -1) (16384x4096)", gbs(8 * N * reps, gpu_time(lambda: torch.softmax(S, -1), reps)), "GB/s")
with torch.no_grad():
    report("layer_norm(S, 4096) (16384x4096)", gbs(8 * N * reps, gpu_time(lambda: ln(S), reps)), "GB/s")

for size in (1024, 4096, 8192):
    reps = 10 if size == 8192 else 30
    p, q = torch.randn(size, size, device=dev), torch.randn(size, size, device=dev)
    pb, qb = p.bfloat16(), q.bfloat16()
    fl = lambda secs: 2 * size**3 * reps / secs / 1e12
    report(f"matmul {size}^3 bf16", fl(gpu_time(lambda: pb @ qb, reps)), "TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = True
    report(f"matmul {size}^3 tf32", fl(gpu_time(lambda: p @ q, reps)), "TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False
    report(f"matmul {size}^3 f32", fl(gpu_time(lambda: p @ q, reps)), "TFLOP/s")
bb1 = torch.randn(64, 512, 512, device=dev).bfloat16()
bb2 = torch.randn(64, 512, 512, device=dev).bfloat16()
report("bmm 64x512^3 bf16", 2 * 64 * 512**3 * 20 / gpu_time(lambda: bb1 @ bb2, 20) / 1e12, "TFLOP/s")

h = torch.randn(N)
def wall(f, reps):
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return time.perf_counter() - t
report("host->device (pageable)", gbs(4 * N * 5, wall(lambda: h.cuda(), 5)), "GB/s")
d = h.cuda()
report("device->host", gbs(4 * N * 5, wall(lambda: d.cpu(), 5)), "GB/s")
# The pinned figures: the DMA ceiling a staged copy is measured against.
hp = h.pin_memory()
report("host->device (pinned source)", gbs(4 * N * 5, wall(lambda: hp.cuda(non_blocking=True), 5)), "GB/s")
report("device->host (pinned target)", gbs(4 * N * 5, wall(lambda: hp.copy_(d), 5)), "GB/s")


# Training steps: forward + backward + Adam of a 3-layer ReLU MLP with
# cross-entropy, wall time per step (as a user's loop runs it).
def train_ms(sizes, batch, dtype, steps):
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
    model = torch.nn.Sequential(*layers).to(dev, dtype)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, sizes[0], device=dev, dtype=dtype)
    y = torch.randint(0, sizes[-1], (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / steps * 1e3


torch.backends.cuda.matmul.allow_tf32 = False
report("train step MLP 64-256-256-10 b256 f32", train_ms([64, 256, 256, 10], 256, torch.float32, 200), "ms/step")
report("train step MLP 1024-4096-4096-1024 b4096 f32", train_ms([1024, 4096, 4096, 1024], 4096, torch.float32, 20), "ms/step")
report("train step MLP 1024-4096-4096-1024 b4096 bf16", train_ms([1024, 4096, 4096, 1024], 4096, torch.bfloat16, 50), "ms/step")
