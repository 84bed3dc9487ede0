"""Checks tests/scripts/scatter_combine.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/scatter_combine.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor
base = torch.arange(12.0).reshape(3, 4)
t = torch.ones(5, 2)
src = q([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
idx = q([0, 4, 0])


def grads():
    w = base.clone().requires_grad_(True)
    s = q([5.0, 6.0, 7.0, 8.0]).requires_grad_(True)
    (torch.select_scatter(w * 2.0, s, 0, 2) * torch.arange(12.0).reshape(3, 4)).sum().backward()
    return {"select_scatter_grad_input": w.grad, "select_scatter_grad_src": s.grad}


z = torch.zeros(2, 2)
z.index_reduce_(0, q([1]), torch.ones(1, 2) * 3.0, "amax")
u = torch.unravel_index(q([4, 7, -1, 0]), (2, 4))
u3 = torch.unravel_index(q([[5, 23], [11, 0]]), (2, 3, 4))
expected = {
    "select_scatter": torch.select_scatter(base, q([-1.0, -2.0, -3.0, -4.0]), 0, 1),
    "select_scatter_col": torch.select_scatter(base, q([7.0, 8.0, 9.0]), 1, -1),
    "slice_scatter": torch.slice_scatter(base, torch.zeros(3, 2), dim=1, start=0, step=2),
    "slice_scatter_rows": torch.slice_scatter(base, torch.ones(1, 4), 0, 1, 2),
    "diagonal_scatter": torch.diagonal_scatter(base, q([-1.0, -2.0, -3.0]), 1),
    "diagonal_scatter_low": torch.diagonal_scatter(base, q([5.0, 6.0]), offset=-1),
    **{f"index_reduce_{r}": t.index_reduce(0, idx, src, r) for r in ["prod", "mean", "amax", "amin"]},
    **{f"index_reduce_{r}_exclude": t.index_reduce(0, idx, src, r, include_self=False)
       for r in ["prod", "mean", "amax", "amin"]},
    "index_reduce_dim1": torch.ones(2, 3).index_reduce(1, q([2, 2]), q([[2.0, 3.0], [4.0, 5.0]]), "prod"),
    "index_reduce_inplace": z,
    "combinations": torch.combinations(q([1, 2, 3, 4])),
    "combinations_r3": torch.combinations(q([1.0, 2.0, 3.0, 4.0]), 3),
    "combinations_replacement": torch.combinations(q([1, 2, 3]), with_replacement=True),
    "combinations_too_many": torch.combinations(q([1, 2]), 3),
    "block_diag": torch.block_diag(q([[1, 2], [3, 4]]), q(5.0), q([6, 7]), torch.zeros(2, 0)),
    "vander": torch.vander(q([1, 2, 3, 5])),
    "vander_n": torch.vander(q([1.0, 2.0, 3.0]), N=4, increasing=True),
    "vander_zero": torch.vander(q([1.0, 2.0]), 0),
    "linalg_vander": torch.linalg.vander(q([[2.0, 3.0], [0.5, -1.0]])),
    "unravel_index_0": u[0], "unravel_index_1": u[1],
    "unravel_index3_0": u3[0], "unravel_index3_1": u3[1], "unravel_index3_2": u3[2],
    **grads(),
}
expected = {k: v.tolist() for k, v in expected.items()}
_, checked = check("scatter_combine.out", expected, rtol=1e-12, atol=1e-14)
print(f"{checked} results agree with PyTorch {torch.__version__}")
