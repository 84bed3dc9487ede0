"""Checks tests/scripts/autocast_float32_ops.out (result dtypes under bf16
autocast) against torch.autocast on CUDA: run
`python3 tests/scripts/verify/autocast_float32_ops.py` (needs torch and a GPU)."""
import os
import pathlib
import torch
import torch.nn.functional as F

x = torch.randn(4, 8, device="cuda")
layer = torch.nn.Linear(8, 3).cuda()
with torch.autocast("cuda", dtype=torch.bfloat16):
    h = x @ x.t()
    results = {
        "product": h, "exp": h.exp(), "log": h.abs().log(), "sum": h.sum(), "prod": h.prod(),
        "mean": h.mean(), "max": h.max(), "pow": h.pow(2.0), "scalar_over": 1.0 / h,
        "over_scalar": h / 2.0, "cumsum": h.cumsum(0), "relu": h.relu(), "tanh": h.tanh(),
        "sigmoid": h.sigmoid(), "softplus": F.softplus(h), "mse_loss": F.mse_loss(h, h),
        "rsqrt": h.abs().rsqrt(), "normalize": F.normalize(h), "nn_linear": layer(x),
    }
names = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
expected = {k: names[t.dtype] for k, t in results.items()}
hb = (x @ x.t()).bfloat16()
expected_outside = f"{names[hb.exp().dtype]} {names[hb.sum().dtype]}"
leaf = hb.detach().requires_grad_(True)
with torch.autocast("cuda", dtype=torch.bfloat16):
    y = leaf.exp().sum()
y.backward()

out = pathlib.Path(os.environ.get("KILN_GOLDEN_DIR") or pathlib.Path(__file__).resolve().parents[1]) / "autocast_float32_ops.out"
got = dict(line.split(": ", 1) for line in out.read_text().splitlines())
for k, v in expected.items():
    assert got[k] == v, (k, got[k], v)
assert got["outside"] == expected_outside, (got["outside"], expected_outside)
assert got["leaf gradient"] == names[leaf.grad.dtype], (got["leaf gradient"], leaf.grad.dtype)
print(f"autocast_float32_ops: {len(expected) + 2} dtypes agree with torch.autocast on CUDA")
