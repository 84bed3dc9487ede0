"""PyTorch's side of bench/host_ab.rhai: host cost per tiny op, each case the
best of five rounds of 20 000 ops (microseconds per op), for a like-for-like
ratio with kiln on the same machine."""
import time

import torch

x = torch.rand(1024, device="cuda")
y = torch.rand(1024, device="cuda")
m = torch.rand(64, 64, device="cuda")
n = 20000
for _ in range(2000):
    z = x + y
    w = x * 2.0
    r = x.relu()
    q = m @ m
torch.cuda.synchronize()


def best(f):
    b = 1e9
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        b = min(b, (time.perf_counter() - t) / n * 1e6)
    return b


print(f"x + y {best(lambda: x + y)}")
print(f"x * 2.0 {best(lambda: x * 2.0)}")
print(f"relu(x) {best(lambda: x.relu())}")
print(f"exp(x) {best(lambda: torch.exp(x))}")
print(f"m @ m {best(lambda: m @ m)}")
print(f"x.sum() {best(lambda: x.sum())}")
