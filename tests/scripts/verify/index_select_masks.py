"""Checks tests/scripts/index_select_masks.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/index_select_masks.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([[0, 3, 0, 1], [4, 0, 5, 0], [0, 0, 0, 2]])
f = torch.tensor([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])
z = torch.zeros(3, 4)
base = torch.tensor([1.0, 2.0, 3.0, 4.0])
si = torch.tensor([0, 1, 0, 1, 2])
sv = torch.tensor([5.0, 1.0, 7.0, -2.0, 9.0])
g = f.clone()
g[g < 0] = 0.0
g2 = g.clone()
g2[torch.tensor([1])] = torch.tensor([9.0, 8.0, 7.0])
nt = x.nonzero(as_tuple=True)
expected = {
    "nonzero": torch.nonzero(x), "nonzero_t0": nt[0], "nonzero_t1": nt[1], "argwhere": torch.argwhere(f > 0),
    "where1_0": torch.where(f < 0)[0], "where1_1": torch.where(f < 0)[1],
    "masked_select": torch.masked_select(f, f > 0),
    "masked_select_bcast": torch.masked_select(f, torch.tensor([True, False, True])),
    "masked_scatter": f.masked_scatter(f < 0, torch.tensor([10.0, 20.0, 30.0, 40.0])),
    "index_fill": f.index_fill(1, torch.tensor([0, 2]), -1.0), "index_fill_t": f.index_fill(0, torch.tensor([1]), torch.tensor(7.5)),
    "index_copy": f.index_copy(0, torch.tensor([1, 0]), torch.tensor([[7.0, 8.0, 9.0], [1.0, 1.0, 1.0]])),
    "index_put": f.index_put((torch.tensor([0, 1]), torch.tensor([2, 0])), torch.tensor([100.0, 200.0])),
    "index_put_acc": f.index_put((torch.tensor([0, 0, 1]),), torch.tensor(1.0), accumulate=True),
    "index_put_mask": f.index_put((f > 0,), torch.tensor(0.0)),
    "scatter": z.scatter(1, torch.tensor([[3, 0], [1, 2], [0, 0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 5.0]])),
    "scatter_value": z.scatter(0, torch.tensor([[2, 1, 0, 2]]), 9.0),
    "scatter_add": z.scatter(1, torch.tensor([[3, 3], [1, 2], [0, 0]]), torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), reduce="add"),
    "scatter_reduce_sum": base.scatter_reduce(0, si, sv, "sum"), "scatter_reduce_mean": base.scatter_reduce(0, si, sv, "mean"),
    "scatter_reduce_amax": base.scatter_reduce(0, si, sv, "amax"),
    "scatter_reduce_amin_noself": base.scatter_reduce(0, si, sv, "amin", include_self=False),
    "scatter_reduce_mean_noself": base.scatter_reduce(0, si, sv, "mean", include_self=False),
    "scatter_reduce_2d": torch.zeros(2, 3).scatter_reduce(1, torch.tensor([[0, 0, 2], [1, 1, 1]]), torch.tensor([[1.0, 4.0, 2.0], [3.0, -1.0, 8.0]]), "amax", include_self=False),
    "scatter_reduce_prod": base.scatter_reduce(0, si, sv, "prod"),
    "scatter_reduce_prod_noself": base.scatter_reduce(0, si, sv, "prod", include_self=False),
    "scatter_reduce_prod_int": torch.tensor([2, 3, 1]).scatter_reduce(0, torch.tensor([0, 0, 1, 0, 1]), torch.tensor([4, 5, 6, -1, 0]), "prod"),
    "scatter_multiply": torch.ones(2, 4).scatter(1, torch.tensor([[3, 3, 0], [1, 1, 1]]), torch.tensor([[2.0, 5.0, 3.0], [-1.0, 4.0, 0.5]]), reduce="multiply"),
    "get_index": f[torch.tensor([1, 0, 1])], "get_mask": f[f > 0], "get_row_mask": f[torch.tensor([False, True])],
    "set_mask": g, "set_index": g2,
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("index_select_masks.out", expected)
assert "nonzero_empty: [0, 2] []" in text and list(torch.nonzero(torch.zeros(2, 2)).shape) == [0, 2]
print(f"{checked} results agree with PyTorch {torch.__version__}")
