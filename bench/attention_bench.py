"""PyTorch side of bench/attention_bench.rhai: the same cases, milliseconds
per call after two untimed calls, on the GPU (SDPA through PyTorch's own
dispatch: flash attention for these shapes)."""
import time
import torch
import torch.nn.functional as F
from torch_gpt import GPT

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
torch.manual_seed(0)


def report(name, value, unit="ms/call"):
    print(f"RESULT,{name},{value},{unit}", flush=True)


def per_call(f, reps):
    f()
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps * 1e3


def bench_sdpa(b, h, l, d, causal, dtype, dname, p=0.0):
    q, k, v = (torch.randn(b, h, l, d, device=dev, dtype=dtype) for _ in range(3))
    drop = f" dropout {p}" if p > 0 else ""
    tag = f"sdpa b{b} h{h} L{l} d{d} {'causal' if causal else 'full'}{drop} {dname}"
    flops = 4.0 * b * h * l * l * d / (2.0 if causal else 1.0)
    fwd = per_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=p), 5)
    report(f"{tag} fwd", fwd)
    report(f"{tag} fwd TFLOP/s", flops / fwd * 1e-9, "TFLOP/s")
    qg, kg, vg = (t.detach().requires_grad_(True) for t in (q, k, v))
    both = per_call(lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, dropout_p=p).sum().backward(), 3)
    report(f"{tag} fwd+bwd", both)
    report(f"{tag} fwd+bwd TFLOP/s", 2.5 * flops / both * 1e-9, "TFLOP/s")


shapes = [(8, 16, 2048, 64, True), (8, 16, 2048, 128, True), (4, 32, 4096, 128, True), (8, 16, 2048, 128, False)]
for dtype, dname in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
    for shape in shapes:
        bench_sdpa(*shape, dtype, dname)
# f32: the GPT's attention with its dropout, and a long causal one
bench_sdpa(64, 6, 256, 64, True, torch.float32, "f32", 0.2)
bench_sdpa(8, 16, 2048, 64, True, torch.float32, "f32")


vocab = 65
model = GPT(vocab).to(dev)
decay = [p for p in model.parameters() if p.dim() >= 2]
no_decay = [p for p in model.parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
x = torch.randint(0, vocab, (64, 256), device=dev)
y = torch.randint(0, vocab, (64, 256), device=dev)
for amp in (None, torch.bfloat16):
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp or torch.float32, enabled=amp is not None):
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    report(f"gpt train step {'f32' if amp is None else 'bf16 autocast'}", per_call(step, 5))

# generation without a cache module of PyTorch's own: the same loop over the full context
model.eval()
ctx = torch.randint(0, vocab, (1, 1), device=dev)
with torch.no_grad():
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = ctx
    for _ in range(200):
        logits = model(out[:, -256:])[:, -1, :]
        v, _ = torch.topk(logits, 40)
        logits[logits < v[:, [-1]]] = -float("inf")
        out = torch.cat([out, torch.multinomial(F.softmax(logits, -1), 1)], 1)
    torch.cuda.synchronize()
    report("gpt generate (KV cache)", (time.perf_counter() - t) / 200 * 1e3, "ms/token")
