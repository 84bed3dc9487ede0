"""Checks tests/scripts/aliases.out against PyTorch itself (run where torch is
installed: `python3 tests/scripts/verify/aliases.py`)."""
import math
import torch
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0])
u = torch.tensor([-0.75, -0.25, 0.0, 0.25, 0.75])
m = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
n = torch.tensor([1.0, math.nan, 3.0, math.nan])
p = torch.tensor([2.0, 5.0, math.nan, math.nan])
sq = torch.arange(6.0).reshape(2, 3)
inf = math.inf
h = torch.arange(12.0).reshape(2, 6)
bt = torch.broadcast_tensors(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([[10.0], [20.0]]))
ty = torch.tensor([[1.0, 4.0, 9.0, 16.0], [2.0, 3.0, 5.0, 7.0]])


def grads():
    a, b = x.clone().requires_grad_(True), u.clone().requires_grad_(True)
    torch.logaddexp(a, b).sum().backward()
    c = torch.nan_to_num(n, 0.0).requires_grad_(True)
    torch.fmax(c, torch.tensor([2.0, 5.0, -1.0, 0.0])).sum().backward()
    return {"logaddexp_grad_a": a.grad, "logaddexp_grad_b": b.grad, "fmax_grad": c.grad}


expected = {
    "absolute": torch.absolute(x), "negative": x.negative(), "positive": torch.positive(x),
    "arccos": torch.arccos(u), "arcsin": u.arcsin(), "arctan": torch.arctan(x), "arctanh": torch.arctanh(u),
    "arcsinh": torch.arcsinh(x), "arccosh": torch.arccosh(x.abs() + 1.0), "sgn": torch.sgn(x),
    "divide": torch.divide(x, 4.0), "multiply": torch.multiply(x, x), "subtract": torch.subtract(x, torch.tensor([1.0])),
    "greater": torch.greater(x, 0.0), "greater_equal": x.greater_equal(0.0), "less": torch.less(x, u),
    "less_equal": torch.less_equal(x, 0.0), "not_equal": torch.not_equal(x, 0.5),
    "clip": torch.clip(x, -1.0, 1.0), "clip_open": x.clip(None, 0.25),
    "concat": torch.concat([x, u]), "concatenate": torch.concatenate([x.reshape(1, 5), u.reshape(1, 5)], 1),
    "ravel": m.t().ravel(), "adjoint": m.adjoint(), "narrow_copy": m.narrow_copy(1, 1, 2),
    "bitwise_not": torch.bitwise_not(torch.tensor([0, 5, -3])),
    "bitwise_not_bool": torch.tensor([True, False]).bitwise_not(),
    "bitwise_not_u8": torch.tensor([0, 5, 255]).byte().bitwise_not(),
    "logaddexp": torch.logaddexp(x, u),
    "logaddexp_inf": torch.logaddexp(torch.tensor([-inf, inf, -inf]), torch.tensor([-inf, inf, 3.0])),
    "logaddexp_big": torch.logaddexp(torch.tensor([1000.0, -1000.0]), torch.tensor([1000.0, -1001.0])),
    "logaddexp2": torch.logaddexp2(x, u), "fmax": torch.fmax(n, p), "fmin": torch.fmin(n, p),
    "heaviside": torch.heaviside(x, torch.tensor([0.5])),
    "isin": torch.isin(torch.tensor([1, 2, 3, 4, 2]), torch.tensor([2, 4])),
    "isin_invert": torch.isin(torch.tensor([1, 2, 3, 4, 2]), torch.tensor([[2], [4]]), invert=True),
    "isin_empty": torch.isin(torch.tensor([1, 2]), torch.tensor([], dtype=torch.int64)),
    "rot90": torch.rot90(sq), "rot90_2": sq.rot90(2), "rot90_neg": torch.rot90(sq, -1),
    "rot90_dims": torch.rot90(torch.arange(8.0).reshape(2, 2, 2), 1, [1, 2]),
    "hsplit": torch.hsplit(h, 3)[2], "hsplit_at": torch.hsplit(h, [1, 4])[1],
    "hsplit_1d": torch.hsplit(torch.arange(4.0), 2)[1], "vsplit": torch.vsplit(h, 2)[1],
    "dsplit": torch.dsplit(torch.arange(8.0).reshape(1, 2, 4), [1])[1],
    "broadcast_tensors_0": bt[0], "broadcast_tensors_1": bt[1],
    "trapezoid": torch.trapezoid(ty), "trapezoid_dx": torch.trapezoid(ty, dx=0.5),
    "trapezoid_x": torch.trapezoid(ty, torch.tensor([0.0, 1.0, 3.0, 6.0])),
    "trapezoid_dim0": torch.trapz(ty, dim=0), "trapezoid_x_full": torch.trapezoid(ty, x=ty.cumsum(1), dim=1),
    "trapezoid_one": torch.trapezoid(torch.tensor([5.0])),
    "cumulative_trapezoid": torch.cumulative_trapezoid(ty),
    "cumulative_trapezoid_x": torch.cumulative_trapezoid(ty, x=torch.tensor([0.0, 1.0, 3.0, 6.0])),
    "mv": torch.mv(m, torch.tensor([1.0, 0.0, -1.0])), "vdot": torch.vdot(x, u),
    "dist": torch.dist(x, u), "dist_p1": torch.dist(x, u, 1),
    "addr": torch.addr(m, torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0, -1.0])),
    "addr_opts": torch.addr(m, torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0, -1.0]), beta=0.5, alpha=2.0),
    **grads(),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("aliases.out", expected, rtol=1e-12, atol=1e-14)
# the Tensor conveniences, dtypes named as kiln names them
name = {torch.int32: "i32", torch.float64: "f64", torch.uint8: "u8"}
i = torch.tensor([1, 2], dtype=torch.int32)
b = str(x.bool().tolist()).replace("True", "true").replace("False", "false")
for line in (
    f"type_as: {name[x.type_as(i).dtype]} {name[i.type_as(x).dtype]}",
    f"sizes: {m.nelement()} {m.ndimension()} {m.element_size()} {i.element_size()} "
    f"{str(m.is_floating_point()).lower()} {str(i.is_floating_point()).lower()}",
    f"bool: {b} {name[torch.tensor([0, 3]).byte().dtype]}",
    f"new_zeros: {name[m.new_zeros([2]).dtype]} {m.new_zeros([2]).tolist()}",
    f"new_ones: {name[i.new_ones([1, 2]).dtype]} {i.new_ones([1, 2]).tolist()}",
    f"new_full: {m.new_full([2], 7).tolist()}",
    f"new_empty: [3] {name[i.new_empty([3]).dtype]}",
    f"new_tensor: {name[i.new_tensor([[1.9, 2.0]]).dtype]} {i.new_tensor([[1.9, 2.0]]).tolist()}",
    f"broadcast_shapes: {list(torch.broadcast_shapes([2, 1], [3]))} {list(torch.broadcast_shapes([1], [4, 1, 1], [5, 1]))}",
):
    assert line in text, line
print(f"{checked} results agree with PyTorch {torch.__version__}")
