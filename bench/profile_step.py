"""PyTorch side of bench/profile_step.rhai: one step of the same case between
torch.cuda.profiler.start() and stop(), after two warm-up steps, for
`ncu --profile-from-start off` (bench/profile.sh).

    python3 bench/profile_step.py CASE"""
import sys
import time
import torch
import torch.nn.functional as F
from torch_gpt import GPT

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True
torch.manual_seed(0)
case = sys.argv[1]
dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
if case.startswith("gpt-"):
    vocab = 65
    model = GPT(vocab).cuda()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    x = torch.randint(0, vocab, (64, 256), device="cuda")
    y = torch.randint(0, vocab, (64, 256), device="cuda")
    amp = case == "gpt-bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
elif case.startswith("conv-"):
    _, c_in, c_out, k, stride, size, dt, fmt = case.split("-")
    c_in, c_out, k, stride, size = int(c_in), int(c_out), int(k), int(stride), int(size)
    x = torch.randn(64, c_in, size, size, device="cuda", dtype=dtypes[dt])
    w = torch.randn(c_out, c_in, k, k, device="cuda", dtype=dtypes[dt]) * 0.05
    if fmt == "nhwc":
        x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    xg, wg = x.detach().requires_grad_(True), w.detach().requires_grad_(True)

    def step():
        F.conv2d(xg, wg, stride=stride, padding=k // 2).sum().backward()
elif case.startswith("sdpa-"):
    _, b, h, l, d, mask, dt = case.split("-")
    q, k, v = (torch.randn(int(b), int(h), int(l), int(d), device="cuda", dtype=dtypes[dt], requires_grad=True) for _ in range(3))

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=mask == "causal").sum().backward()
else:
    sys.exit(f"profile_step: unknown case {case!r} (expected gpt-f32, gpt-bf16, conv-..., sdpa-...)")
step()
step()
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(5):
    step()
torch.cuda.synchronize()
print(f"torch {case} step {(time.perf_counter() - t) / 5 * 1e3} ms", flush=True)
torch.cuda.profiler.start()
step()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
