"""Checks kiln's unary op table against PyTorch on the GPU machine: runs
tests/scripts/elementwise_activations.rhai with kiln on CPU and on CUDA and
compares every printed value with torch's (f64) for the same inputs.
Usage: python3 bench/ops_vs_torch.py path/to/kiln"""
import subprocess
import sys

import torch
import torch.nn.functional as F

KILN = sys.argv[1] if len(sys.argv) > 1 else ".device/bin/kiln"
SCRIPT = "tests/scripts/elementwise_activations.rhai"
x = torch.tensor([-4.0, -2.5, -0.75, -0.1, 0.0, 0.3, 1.5, 3.5, 25.0], dtype=torch.float64)
torch_ops = {
    "trunc": torch.trunc, "frac": torch.frac, "atan": torch.atan, "sinh": torch.sinh,
    "cosh": torch.cosh, "asinh": torch.asinh, "exp2": torch.exp2, "softsign": F.softsign,
    "logsigmoid": F.logsigmoid, "mish": F.mish, "relu6": F.relu6,
    "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "selu": F.selu,
}
worst = 0.0
for device in ["cpu", "cuda"]:
    out = subprocess.run([KILN, "--device", device, SCRIPT], capture_output=True, text=True).stdout
    checked = 0
    for line in out.splitlines():
        parts = line.split()
        if not parts or parts[0] not in torch_ops:
            continue
        got = torch.tensor([float(v) for v in parts[1:]], dtype=torch.float64)
        want = torch_ops[parts[0]](x)
        err = ((got - want).abs() / want.abs().clamp_min(1e-300)).where(want != 0, got.abs())
        worst = max(worst, err.max().item())
        checked += 1
        if err.max().item() > 1e-12:
            print(f"{device} {parts[0]}: max relative error {err.max().item():.3e}")
    print(f"{device}: {checked} ops compared with torch {torch.__version__}")
print(f"worst relative error vs torch (f64): {worst:.3e}")
