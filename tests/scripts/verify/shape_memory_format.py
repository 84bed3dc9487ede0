"""Checks tests/scripts/shape_memory_format.out (strides of elementwise
results on channels-last inputs) against PyTorch's: run
`python3 tests/scripts/verify/shape_memory_format.py` (needs torch)."""
import torch
from golden import check

cl, cl3 = torch.channels_last, torch.channels_last_3d
x = torch.arange(120).reshape(2, 3, 4, 5).float().contiguous(memory_format=cl)
b = torch.arange(3).reshape(1, 3, 1, 1).float()
one = torch.arange(60).reshape(1, 3, 4, 5).float().contiguous(memory_format=cl)
x5 = torch.arange(240).reshape(2, 3, 2, 4, 5).float().contiguous(memory_format=cl3)
results = {
    "x": x, "relu": x.relu(), "exp": x.exp(), "add_scalar": x + 1.0, "scalar_sub": 1.0 - x,
    "mul_self": x * x, "add_bias": x + b, "bias_add": b + x, "nchw_first": x.contiguous() + x,
    "cl_first": x + x.contiguous(), "compare": x > 5.0, "compare_tensors": x > b,
    "to_f64": x.double(), "batch_of_one": one + 1.0, "x5_sigmoid": x5.sigmoid(),
}
leaf = x.detach().requires_grad_(True)
(leaf * x).sum().backward()
results["leaf_grad"] = leaf.grad.clone()
(leaf * x.contiguous()).sum().backward()
results["leaf_grad_accumulated"] = leaf.grad
param = torch.randn(2, 3, 4, 5, requires_grad=True)
(param * x).sum().backward()
results["param_grad"] = param.grad
expected = {name: list(t.stride()) for name, t in results.items()}
text, n = check("shape_memory_format.out", expected)
assert "same values: 0" in text
print(f"shape_memory_format: {n} results agree with PyTorch")
