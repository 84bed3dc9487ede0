"""Checks tests/scripts/order_scan_sort.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/order_scan_sort.py`).
Positions of tied values may differ between implementations where PyTorch
leaves them unspecified (topk, median, kthvalue): those are checked by
reading the input at the position kiln gave."""
import math
import pathlib
import torch
from golden import check

torch.set_default_dtype(torch.float64)
nan = math.nan
x = torch.tensor([[3.0, 1.0, 2.0, nan, 0.5], [-1.0, 5.0, 5.0, 4.0, -0.0], [0.0, 2.0, 0.0, -3.0, 1.5]])
i = torch.tensor([[4, -2, 7, 7, 1], [0, 3, -5, 2, 2]])
big = (torch.arange(5000.0) * 0.37).sin()
s, sd = x.sort(dim=-1, stable=True), x.sort(dim=0, descending=True, stable=True)
cmx, cmn = torch.cummax(x, 1), x.cummin(0)
tk, tks = torch.topk(x, 2), x.topk(3, dim=0, largest=False)
kv, md, nm = torch.kthvalue(x, 2), torch.median(x, 1), torch.nanmedian(x, dim=1, keepdim=True)
expected = {
    "cumsum1": torch.cumsum(x, 1), "cumsum0": x.cumsum(0), "cumsum_int": torch.cumsum(i, 1),
    "cumsum_bool": torch.cumsum(torch.tensor([True, True, False, True]), 0),
    "cumsum_dtype": torch.cumsum(i, dim=0, dtype=torch.float64), "cumprod": torch.cumprod(x, 1),
    "cumprod_int": i.cumprod(1), "cummax_v": cmx[0], "cummax_i": cmx[1], "cummin_v": cmn[0], "cummin_i": cmn[1],
    "cummax_int_i": torch.cummax(i, 1)[1], "logcumsumexp": torch.logcumsumexp(x, 1),
    "logcumsumexp_inf": torch.logcumsumexp(torch.tensor([-math.inf, 0.0, math.inf, 2.0]), 0),
    "sort_v": s[0], "sort_i": s[1], "sort_desc_v": sd[0], "sort_desc_i": sd[1],
    "sort_stable_i": torch.sort(torch.tensor([2, 1, 2, 1, 2, 0]), dim=-1, stable=True)[1],
    "sort_int_desc_i": torch.sort(i, dim=1, descending=True, stable=True)[1],
    "argsort": torch.argsort(x, dim=-1, stable=True), "argsort_desc": torch.argsort(i, dim=1, descending=True, stable=True),
    "msort": torch.msort(x), "topk_v": tk[0], "topk_small_v": tks[0], "kthvalue_v": kv[0],
    "kthvalue_keepdim": torch.kthvalue(i, 3, 1, True)[0], "median_v": md[0], "nanmedian_v": nm[0],
    "median_all": torch.median(i), "median_all_nan": torch.median(x), "nanmedian_all": torch.nanmedian(x),
    "cumsum_long": big.cumsum(0)[4990:], "cummax_long_i": big.cummax(0)[1][4990:],
    "sort_long": big.sort(dim=0, stable=True)[0][2500:2505], "sort_long_i": big.sort(dim=0, descending=True, stable=True)[1][:5],
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("order_scan_sort.out", expected, rtol=1e-12, atol=1e-12)

# positions: the input read there must be the value kiln reported
lines = dict(l.split(": ", 1) for l in text.splitlines() if ": [" in l)
def values(name):
    return eval(lines[name].split("] ", 1)[1].replace("NaN", "nan"), {"nan": nan})
def same(a, b):
    return (a != a and b != b) or a == b
positions = [("topk_i", "topk_v", x, -1), ("topk_small_i", "topk_small_v", x, 0), ("kthvalue_i", "kthvalue_v", x, -1),
             ("median_i", "median_v", x, -1)]
for idx_name, val_name, src, dim in positions:
    idx, val = torch.tensor(values(idx_name)), torch.tensor(values(val_name))
    got = src.gather(dim, idx if idx.dim() == src.dim() else idx.unsqueeze(dim)).reshape(val.shape)
    assert all(same(a, b) for a, b in zip(got.flatten().tolist(), val.flatten().tolist())), (idx_name, got, val)
    checked += 1
nmi = torch.tensor(values("nanmedian_i"))
assert all(same(a, b) for a, b in zip(x.gather(1, nmi).flatten().tolist(), torch.tensor(values("nanmedian_v")).flatten().tolist()))
checked += 1
print(f"{checked} results agree with PyTorch {torch.__version__}")
