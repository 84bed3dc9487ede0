"""Checks tests/scripts/autograd_grad_fn.out (autograd.grad and autograd.backward) against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/autograd_grad_fn.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor


def leaf(v):
    return q(v, requires_grad=True)


x = leaf([1.0, 2.0, 3.0])
w = leaf([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
h = (w @ x).tanh()
loss = (h * h).sum() + x.exp().sum()
g = torch.autograd.grad(loss, [x, w])
assert x.grad is None and w.grad is None
gy = torch.autograd.grad(x * x, x, q([1.0, 10.0, 100.0]))
a = x.sin()
two = torch.autograd.grad([(a * 3.0).sum(), (a * a).sum()], [a, x])
unused = leaf([1.0])
u = torch.autograd.grad(x.sum() * 2.0, [x, unused], allow_unused=True)
assert u[1] is None
z = torch.autograd.grad(x.sum(), [unused, x], materialize_grads=True)
p = leaf([0.5, -1.0])
torch.autograd.backward([p * p, p.exp().sum()], [q([1.0, 2.0]), None])
two_outputs = p.grad.clone()
torch.autograd.backward(p.sum() * 3.0)
expected = {
    "backward_two_outputs": two_outputs, "backward_accumulates": p.grad,
    "grad_x": g[0], "grad_w": g[1], "weighted": gy[0],
    "two_outputs_nonleaf": two[0], "two_outputs_leaf": two[1],
    "used": u[0], "materialized": z[0],
    "self": torch.autograd.grad(x, x, q([4.0, 5.0, 6.0]))[0],
}
expected = {k: v.tolist() for k, v in expected.items()}
_, checked = check("autograd_grad_fn.out", expected, rtol=1e-14, atol=1e-15)
print(f"{checked} results agree with PyTorch {torch.__version__}")
