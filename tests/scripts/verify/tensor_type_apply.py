"""Checks tests/scripts/tensor_type_apply.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/tensor_type_apply.py`)."""
import torch
from golden import check

q = torch.tensor
x = q([[1.5, -2.25], [3.0, 0.5]])
names = [x.type(), x.double().type(), x.long().type(), x.bool().type(), x.bfloat16().type(), x.byte().type()]
a = q([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
a.apply_(lambda v: v * v - 1.0)
apply_float = a.clone()
a.t().apply_(lambda e: e + 0.5)
n = q([3, -4, 5])
n.apply_(lambda v: 0 if v < 0 else v * 10)
b = q([True, False, True])
b.apply_(lambda v: not v)
expected = {
    "type_to_int": x.type(torch.int32), "type_torch_name": x.type(torch.float16),
    "apply_float": apply_float, "apply_int": n, "apply_bool": b, "apply_view": a,
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("tensor_type_apply.out", expected)
assert f"type: {' '.join(names)}" in text, names
assert f"type_double: f64 {x.type('torch.DoubleTensor').type()}" in text
for call in (lambda: x.split_with_sizes([1, 2]),
             lambda: torch.nn.functional.embedding_bag(q([1, 2, 0, 3]), torch.randn(5, 2), q([1, 3])),
             lambda: torch.heaviside(q([1.0, 0.0, -2.0], requires_grad=True), q([0.5])).sum().backward()):
    try:
        call()
        raise AssertionError("PyTorch raised no error")
    except RuntimeError:
        pass
print(f"{checked + 2} results and 3 errors agree with PyTorch {torch.__version__}")
