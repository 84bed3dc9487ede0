"""PyTorch side of bench/ops_bench.rhai: the same cases, milliseconds per
call after one untimed call, on the GPU."""
import time
import torch
import torch.nn.functional as F

dev = "cuda"
torch.manual_seed(0)


def report(name, value):
    print(f"RESULT,{name},{value},ms/call", flush=True)


def per_call(f, reps):
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps * 1e3


long = torch.randn(16777216, device=dev)
rows = torch.randn(512, 32768, device=dev)
report("cumsum 2^24", per_call(lambda: long.cumsum(0), 20))
report("cumsum 512x32k rows", per_call(lambda: rows.cumsum(1), 20))
report("sort 2^24", per_call(lambda: long.sort(), 5))
report("sort 512x32k rows", per_call(lambda: rows.sort(1), 5))
report("topk 16 of 2^24", per_call(lambda: long.topk(16), 5))
report("topk 16 of 512x32k rows", per_call(lambda: rows.topk(16), 5))
a = torch.randn(64, 256, 256, device=dev)
q = torch.randn(16, 8, 512, 64, device=dev)
report("einsum bij,bjk->bik 64x256^2", per_call(lambda: torch.einsum("bij,bjk->bik", a, a), 20))
report("einsum bhqd,bhkd->bhqk 16x8x512x64", per_call(lambda: torch.einsum("bhqd,bhkd->bhqk", q, q), 20))
mask = long > 0
report("masked_fill 2^24", per_call(lambda: long.masked_fill(mask, 0.0), 20))
img = torch.randn(64, 3, 224, 224, device=dev)
report("pad reflect 64x3x224x224", per_call(lambda: F.pad(img, [2, 2, 2, 2], mode="reflect"), 20))
probs = torch.rand(64, 50000, device=dev)
report("multinomial 64x50k, 1 sample", per_call(lambda: probs.multinomial(1), 20))
report("multinomial 64x50k, 16 with replacement", per_call(lambda: probs.multinomial(16, True), 20))
m = torch.randn(512, 32, 32, device=dev) + torch.eye(32, device=dev) * 8.0
big = torch.randn(1024, 1024, device=dev) + torch.eye(1024, device=dev) * 64.0
report("inv 512x32x32", per_call(lambda: torch.linalg.inv(m), 5))
report("inv 1024^2", per_call(lambda: torch.linalg.inv(big), 5))
report("svd 512x32x32", per_call(lambda: torch.linalg.svd(m, full_matrices=False), 3))
report("svd 1024^2", per_call(lambda: torch.linalg.svd(big, full_matrices=False), 3))
report("cholesky 512x32x32", per_call(lambda: torch.linalg.cholesky(m @ m.mT), 5))
sub = big[:256, :256]
report("eigh 256^2", per_call(lambda: torch.linalg.eigh(sub + sub.mT), 3))
seq = torch.randn(65536, device=dev).sort()[0]
queries = torch.randn(1048576, device=dev)
report("searchsorted 2^20 in 2^16", per_call(lambda: torch.searchsorted(seq, queries), 20))
