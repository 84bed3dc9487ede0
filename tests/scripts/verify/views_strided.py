"""Checks tests/scripts/views_strided.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/views_strided.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor
x = torch.arange(12.0).reshape(3, 4)


def grads():
    w = q([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    (w.as_strided((3, 3), (1, 1)) * q([[1.0], [10.0], [100.0]])).sum().backward()
    w2 = q([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], requires_grad=True)
    (w2.as_strided((2, 2), (2, 1), 1) * q([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    return {"as_strided_overlap_grad": w.grad, "as_strided_grad": w2.grad}


parts = x.split_with_sizes([1, 3], 1)
expected = {
    "as_strided": x.as_strided((2, 2), (1, 2)),
    "as_strided_offset": torch.as_strided(x, (3,), (5,), 1),
    "as_strided_of_view": x[1].as_strided((2, 3), (1, 1)),
    "as_strided_zero_stride": x.as_strided((2, 3), (0, 4), 2),
    "as_strided_empty": x.as_strided((0, 5), (1, 1)),
    "as_strided_scalar": x.as_strided((), (), 7),
    "split_with_sizes_0": parts[0], "split_with_sizes_1": parts[1],
    "split_with_sizes_dim0": x.split_with_sizes([2, 1])[0],
    **grads(),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("views_strided.out", expected)
f16 = q([1], dtype=torch.float16)
assert f"nbytes: {x.nbytes} itemsize: {x.itemsize} f16 itemsize: {f16.itemsize}" in text
print(f"{checked + 1} results agree with PyTorch {torch.__version__}")
