"""Checks tests/scripts/cnn_fractional.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/cnn_fractional.py`)."""
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
x = (torch.arange(2.0 * 3 * 9 * 10).reshape(2, 3, 9, 10) * 0.731).sin()
u = (torch.arange(12.0).reshape(2, 3, 2) * 0.37 + 0.05).frac()
v = (torch.arange(2.0 * 7 * 6 * 8).reshape(1, 2, 7, 6, 8) * 0.413).cos()
w = (torch.arange(6.0).reshape(1, 2, 3) * 0.29 + 0.11).frac()


def grad():
    xg = x.clone().requires_grad_(True)
    (F.fractional_max_pool2d(xg, 2, (5, 4), _random_samples=u) * torch.arange(20.0).reshape(5, 4)).sum().backward()
    return xg.grad


r = F.fractional_max_pool2d(x, 3, (4, 5), return_indices=True, _random_samples=u)
r3 = F.fractional_max_pool3d(v, (2, 3, 2), (3, 2, 4), None, True, w)
expected = {
    "fmp2d": r[0], "fmp2d_indices": r[1],
    "fmp2d_ratio": F.fractional_max_pool2d(x, (2, 3), output_ratio=(0.5, 0.6), _random_samples=u),
    "fmp2d_kernel_1": F.fractional_max_pool2d(x, 1, (9, 10), _random_samples=u),
    "fmp2d_unbatched": F.fractional_max_pool2d(x[1], 2, 3, _random_samples=u[1:2]),
    "fmp2d_f32": F.fractional_max_pool2d(x.float(), 3, (4, 5), _random_samples=u.float()),
    "fmp2d_grad": grad(),
    "fmp3d": r3[0], "fmp3d_indices": r3[1],
    "fmp3d_ratio": F.fractional_max_pool3d(v, 2, output_ratio=0.5, _random_samples=w),
}
expected = {k: v.detach().tolist() for k, v in expected.items()}
# the inputs (sin, cos) may differ from PyTorch's in the last bit; the
# windows and indices must not
text, checked = check("cnn_fractional.out", expected, rtol=1e-12, atol=1e-15)
assert "fmp2d_drawn: [2, 3, 4, 5]" in text
print(f"{checked + 1} results agree with PyTorch {torch.__version__}")
