"""Checks tests/scripts/order_counting.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/order_counting.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
x = torch.tensor([[1.0, 4.0, 9.0, 16.0], [2.0, 2.0, -1.0, 0.5]])
seq = torch.tensor([1.0, 3.0, 5.0, 7.0, 9.0])
vals = torch.tensor([[3.0, 6.0, 9.0], [0.0, 10.0, 5.0]])
c = torch.tensor([1, 1, 3, 0, 7, 3, 3])
u = torch.tensor([[3, 1, 3], [2, 1, 5]])
ur = torch.unique(u, return_inverse=True, return_counts=True)
uc = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True, return_counts=True)
expected = {
    "diff": torch.diff(x), "diff_n2_dim0": torch.diff(x, n=2, dim=1), "diff_dim0": x.diff(1, 0),
    "diff_prepend": torch.diff(x, prepend=torch.zeros(2, 1), append=torch.ones(2, 1)),
    "diff_bool": torch.diff(torch.tensor([True, True, False, True])),
    "searchsorted": torch.searchsorted(seq, vals), "searchsorted_right": torch.searchsorted(seq, vals, right=True),
    "searchsorted_rows": torch.searchsorted(torch.tensor([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]), torch.tensor([[3.0, 6.0], [1.0, 4.0]])),
    "bucketize": torch.bucketize(vals, seq), "bucketize_right": torch.bucketize(vals, seq, right=True),
    "bincount": torch.bincount(c), "bincount_min": torch.bincount(c, minlength=10),
    "bincount_w": torch.bincount(c, weights=torch.tensor([0.5, 1.0, 2.0, 0.25, 1.0, 1.0, 1.0])),
    "histc": torch.histc(torch.tensor([1.0, 2.0, 1.0, 2.5, 4.0, -1.0, 9.0]), bins=4, min=0.0, max=4.0),
    "histc_auto": torch.histc(torch.tensor([1.0, 2.0, 1.0, 2.5, 4.0]), 3),
    "unique": torch.unique(u), "unique_values": ur[0], "unique_inverse": ur[1], "unique_counts": ur[2],
    "unique_consecutive": uc[0], "unique_consecutive_inverse": uc[1], "unique_consecutive_counts": uc[2],
    "unique_float": torch.unique(torch.tensor([2.5, -1.0, 2.5, 0.0])),
}
mx = torch.tensor([[1, 2, 2, 3, 3, 3, 0], [5, 5, 4, 4, 9, 9, 1]])
mk = torch.tensor([[1.0, 2.0, 2.0], [3.0, 1.0, 3.0], [1.0, 2.0, 2.0]]).mode(0, True)
ud = torch.unique(torch.tensor([[1, 2], [3, 4], [1, 2], [0, 9]]), dim=0, return_inverse=True, return_counts=True)
ucd = torch.unique_consecutive(torch.tensor([[1, 1, 2, 1], [3, 3, 4, 3]]), dim=1, return_counts=True)
expected.update({
    "mode_values": torch.mode(mx).values, "mode_indices": torch.mode(mx).indices,
    "mode_dim0_values": mk.values, "mode_dim0_indices": mk.indices,
    "unique_dim0": ud[0], "unique_dim0_inverse": ud[1], "unique_dim0_counts": ud[2],
    "unique_dim1": torch.unique(torch.tensor([[2, 1, 2], [5, 0, 5]]), dim=1),
    "unique_consecutive_dim1": ucd[0], "unique_consecutive_dim1_counts": ucd[1],
})
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("order_counting.out", expected)
print(f"{checked} results agree with PyTorch {torch.__version__}")
