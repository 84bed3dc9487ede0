"""Checks tests/scripts/elementwise_special.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/elementwise_special.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 10.5, 150.0])
a = torch.tensor([5.0, -5.0, 5.0, -5.0, 7.5, 0.0, -0.0, 1e10, 3.0])
b = torch.tensor([3.0, 3.0, -3.0, -3.0, 2.0, -2.0, 2.0, 0.3, 0.0])
ia = torch.tensor([5, -5, 5, -5, 0, 7])
ib = torch.tensor([3, 3, -3, -3, 4, -7])
t = torch.tensor([-1.5, -0.5, 0.5, 2.7])
expected = {
    "lgamma": torch.lgamma(x), "digamma": torch.digamma(x), "polygamma1": torch.polygamma(1, x),
    "polygamma2": x.polygamma(2), "polygamma3": torch.polygamma(3, x.abs() + 0.25),
    "erfinv": torch.erfinv(torch.tensor([-1.0, -0.999999, -0.9, 0.0, 1e-10, 0.3, 0.999, 1.0, 1.5])),
    "fmod": torch.fmod(a, b), "fmod_scalar": a.fmod(-1.5), "floor_divide": torch.floor_divide(a, b),
    "floor_divide_scalar": a.floor_divide(2.5), "remainder": torch.remainder(a, b),
    "fmod_int": torch.fmod(ia, ib), "floor_divide_int": torch.floor_divide(ia, ib),
    "remainder_int": torch.remainder(ia, ib), "trunc": torch.trunc(t), "fix": torch.fix(t),
    "frac": torch.frac(torch.tensor([-1.5, -0.25, 0.5, 2.75])),
}
# PyTorch's trigamma is a short series (about 1e-8 relative) and at the
# pole -1 returns 1/sin(πx)² ≈ 6.6e32 from sin(-π) rounding to -1.2e-16;
# kiln gives +inf there, as polygamma(n >= 2) and the zeta function do.
expected["polygamma1"][1] = float("inf")
tols = {"polygamma1": (1e-7, 0.0)}
expected = {k: v.tolist() for k, v in expected.items()}
# the special functions to 1e-12 relative (PyTorch's own series differ in the last digits)
text, checked = check("elementwise_special.out", expected, rtol=1e-12, atol=1e-300, tols=tols)
print(f"{checked} results agree with PyTorch {torch.__version__}")
