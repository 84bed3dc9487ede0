"""Checks tests/scripts/inplace_forms.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/inplace_forms.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([-1.5, 0.5, 2.0, -0.25])
m = torch.zeros(2, 3)
expected = {
    "relu_": x.clone().relu_(), "clamp_": x.clone().clamp_(-1.0, 1.0), "exp_log_": x.clone().exp_().log_(),
    "sigmoid_": x.clone().sigmoid_(), "pow_": x.clone().pow_(2), "lerp_": x.clone().lerp_(torch.ones(4), 0.5),
    "addcmul_": x.clone().addcmul_(x, x, value=2.0), "leaky_relu_": torch.nn.functional.leaky_relu_(x.clone(), 0.1),
    "cumsum_": x.clone().cumsum_(0), "scatter_": m.clone().scatter_(1, torch.tensor([[2], [0]]), 1.0),
    "scatter_add_": m.clone().scatter_add_(1, torch.tensor([[2, 2], [0, 1]]), torch.tensor([[1.0, 2.0], [3.0, 4.0]])),
    "index_fill_": m.clone().index_fill_(1, torch.tensor([0, 2]), 5.0),
    "index_add_": m.clone().index_add_(0, torch.tensor([1, 1]), torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])),
    "masked_fill_": x.clone().masked_fill_(x < 0, 0.0), "tril_": torch.ones(3, 3).tril_(),
    "int_pow_": torch.tensor([1, 2, 3]).pow_(2),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("inplace_forms.out", expected, rtol=1e-15)
assert "same tensor returned: true" in text
print(f"{checked} results agree with PyTorch {torch.__version__}")
