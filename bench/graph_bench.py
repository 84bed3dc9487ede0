"""PyTorch's side of bench/graph_bench.rhai: eager launches against
torch.cuda.graph replays (capturable Adam, static inputs, warm-up on a side
stream, as PyTorch's documentation does it)."""
import time

import torch

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


def report(name, value, unit):
    print(f"RESULT,{name},{value},{unit}")


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


# ---- 200 tiny ops
x = torch.ones(256, device=dev)


def chain():
    y = x
    for _ in range(200):
        y = y * 1.0001
    return y


reps = 200
report("200 tiny ops, eager", timed(chain, reps) / (reps * 200) * 1e6, "us/op")


def capture(fn, before=None):
    """The CUDA graph of fn, as PyTorch's documentation makes one: three
    warm-up runs on a side stream, then `before()` (if any) and the capture."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    if before is not None:
        before()
    with torch.cuda.graph(g):
        fn()
    return g


g = capture(chain)
report("200 tiny ops, graph replay", timed(g.replay, reps) / (reps * 200) * 1e6, "us/op")


# ---- training steps
def step_ms(sizes, batch, steps, graphed):
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=graphed)
    x = torch.randn(batch, sizes[0], device=dev)
    y = torch.randint(0, sizes[-1], (batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = step
    if graphed:
        run = capture(step, before=lambda: opt.zero_grad(set_to_none=True)).replay
    for _ in range(5):
        run()
    return timed(run, steps) / steps * 1e3


report("train step MLP 64-256-256-10 b256 f32, eager", step_ms([64, 256, 256, 10], 256, 500, False), "ms/step")
report("train step MLP 64-256-256-10 b256 f32, graph replay", step_ms([64, 256, 256, 10], 256, 500, True), "ms/step")
report("train step MLP 1024-4096-4096-1024 b4096 f32, eager", step_ms([1024, 4096, 4096, 1024], 4096, 20, False), "ms/step")
report("train step MLP 1024-4096-4096-1024 b4096 f32, graph replay", step_ms([1024, 4096, 4096, 1024], 4096, 20, True), "ms/step")
