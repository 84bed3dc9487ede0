"""Checks tests/scripts/linalg_contraction.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/linalg_contraction.py`)."""
import torch
from golden import check

torch.set_default_dtype(torch.float64)
a = torch.arange(6.0).reshape(2, 3)
b = torch.arange(12.0).reshape(3, 4) - 5
sq = torch.arange(9.0).reshape(3, 3)
t3 = torch.arange(24.0).reshape(2, 3, 4) / 3
v = torch.tensor([1.0, -2.0, 0.5])
e = torch.einsum
expected = {
    "einsum_mm": e("ij,jk->ik", a, b), "einsum_list": e("ij,jk", [a, b]), "einsum_trace": e("ii", sq),
    "einsum_diag": e("ii->i", sq), "einsum_transpose": e("ij->ji", a), "einsum_sum": e("ij->", a),
    "einsum_colsum": e("ij->j", a), "einsum_bmm": e("bij,bjk->bik", t3, torch.arange(16.0).reshape(2, 4, 2)),
    "einsum_ellipsis": e("...ij,jk->...ik", t3, torch.arange(8.0).reshape(4, 2)),
    "einsum_ellipsis_out": e("i...->...", t3), "einsum_dot": e("i,i->", v, v),
    "einsum_outer": e("i,j->ij", v, torch.tensor([2.0, 3.0])), "einsum_three": e("ij,ij,ij->i", a, a, a),
    "einsum_chain": e("ij,jk,kl->il", a, b, torch.arange(8.0).reshape(4, 2)),
    "einsum_batch_diag": e("bii->bi", torch.arange(18.0).reshape(2, 3, 3)), "einsum_implicit_order": e("ba", a),
    "einsum_attention": e("bqd,bkd->bqk", t3, t3.flip(1)),
    "einsum_broadcast": e("...j,j->...", t3, torch.tensor([1.0, 0.0, -1.0, 2.0])),
    "tensordot_2": torch.tensordot(t3, torch.arange(12.0).reshape(3, 4), 2),
    "tensordot_dims": torch.tensordot(a, b, ([1], [0])),
    "tensordot_multi": torch.tensordot(t3, torch.arange(24.0).reshape(4, 3, 2), dims=([1, 2], [1, 0])),
    "tensordot_0": torch.tensordot(v, torch.tensor([1.0, 2.0]), 0), "inner": torch.inner(a, a),
    "inner_vec": torch.inner(v, v), "kron": torch.kron(torch.tensor([[1, 2], [3, 4]]), torch.tensor([[0, 1], [1, 0]])),
    "kron_mixed": torch.kron(v, a), "cross": torch.linalg.cross(torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])),
    "cross_dim": torch.cross(t3[:, :3, :3], t3[:, :3, 1:4], dim=2),
    "cross_bcast": torch.linalg.cross(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([[0.0, 0.0, 1.0]]), dim=1),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("linalg_contraction.out", expected, rtol=1e-12, atol=1e-12)
print(f"{checked} results agree with PyTorch {torch.__version__}")
