"""Checks tests/scripts/linalg_decompositions.out against PyTorch itself
(run where torch is installed:
`python3 tests/scripts/verify/linalg_decompositions.py`). Sign conventions
of Q, U, V and eigenvectors are compared through absolute values."""
import numpy as np
import torch
from golden import check

torch.set_default_dtype(torch.float64)
L = torch.linalg
a = torch.tensor([[4.0, 3.0, 1.0], [6.0, 3.0, 2.0], [1.0, -2.0, 5.0]])
s = torch.tensor([[4.0, 2.0, 0.4], [2.0, 5.0, 1.0], [0.4, 1.0, 3.0]])
w = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 0.0, -1.0, 1.0], [0.5, 1.5, 2.5, -3.0]])
batch = torch.stack([a, s, a.mT], 0)
b = torch.tensor([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]])
neg = torch.tensor([[0.0, 2.0], [3.0, 1.0]])
l = L.cholesky(s)
lu, piv = L.lu_factor(a)
q, r = L.qr(w.mT)
qc, _ = L.qr(w.mT, mode="complete")
u, sv, vh = L.svd(w, full_matrices=False)
_, _, vh_full = L.svd(w)
ev, evec = L.eigh(s)
ls = L.lstsq(w.mT, torch.tensor([[1.0], [2.0], [2.0], [0.0]]), driver="gelsd")
P, Lf, U = L.lu(a)
lu_w, piv_w = L.lu_factor(w.mT)
Pw, Lw, Uw = torch.lu_unpack(lu_w, piv_w)
expected = {
    "lu_P": P, "lu_L": Lf, "lu_U": U, "lu_unpack_PLU": Pw @ Lw @ Uw,
    "cholesky_ex_info": L.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]]))[1],
    "inv_ex_info": L.inv_ex(torch.stack([s, torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])], 0))[1],
    "inv": L.inv(a), "inverse_batched": torch.inverse(batch), "det": L.det(a), "det_batched": L.det(batch),
    "det_singular": L.det(torch.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "slogdet_sign": L.slogdet(neg)[0], "slogdet_logabs": L.slogdet(neg)[1],
    "logdet": torch.logdet(s), "logdet_negative": torch.logdet(neg),
    "solve": L.solve(a, b), "solve_vector": L.solve(a, torch.tensor([1.0, 2.0, 3.0])),
    "solve_left_false": L.solve(a, b.mT, left=False), "solve_broadcast": L.solve(batch, b),
    "solve_triangular_upper": L.solve_triangular(a.triu(), b, upper=True),
    "solve_triangular_lower_right": L.solve_triangular(a.tril(), b.mT, upper=False, left=False),
    "solve_triangular_unit": L.solve_triangular(a.tril(), b, upper=False, unitriangular=True),
    "triangular_solve": torch.triangular_solve(b, a.triu())[0],
    "triangular_solve_transpose": torch.triangular_solve(b, a.triu(), transpose=True)[0],
    "cholesky": l, "cholesky_upper": L.cholesky(s, upper=True),
    "cholesky_solve": torch.cholesky_solve(b, l), "cholesky_inverse": torch.cholesky_inverse(l),
    "lu_factor_LU": lu, "lu_factor_pivots": piv, "lu_solve": L.lu_solve(lu, piv, b),
    "lu_solve_adjoint": L.lu_solve(lu, piv, b, adjoint=True),
    "qr_Q_abs": q.abs(), "qr_R_abs": r.abs(), "qr_QR": q @ r, "qr_complete_shapes_Q": qc.abs(),
    "qr_complete_QtQ": qc.mT @ qc, "qr_r_mode": L.qr(w, mode="r")[1].abs(),
    "svd_S": sv, "svd_rebuild": (u * sv) @ vh, "svd_U_abs": u.abs(), "svd_Vh_abs": vh.abs(),
    "svd_full_Vh_rows": vh_full @ vh_full.mT, "torch_svd_V_abs": torch.svd(w)[2].abs(),
    "svdvals": L.svdvals(batch), "eigh_values": ev, "eigh_vectors_abs": evec.abs(),
    "eigh_upper": L.eigh(a, UPLO="U")[0], "eigvalsh": L.eigvalsh(batch),
    "pinv": L.pinv(w), "pinv_hermitian": L.pinv(s, hermitian=True),
    "pinverse": torch.pinverse(torch.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "lstsq_solution": ls.solution, "lstsq_residuals": ls.residuals, "lstsq_rank": ls.rank,
    "lstsq_gelsd_sv": L.lstsq(w.mT, torch.tensor([1.0, 2.0, 2.0, 0.0]), driver="gelsd").singular_values,
    "matrix_rank": L.matrix_rank(torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])),
    "matrix_rank_hermitian": L.matrix_rank(s, hermitian=True),
    "matrix_power_3": L.matrix_power(a, 3), "matrix_power_0": a.matrix_power(0),
    "matrix_power_neg2": L.matrix_power(a, -2),
    "matrix_power_int": L.matrix_power(torch.tensor([[1, 1], [1, 0]]), 10),
    "matrix_norm_nuc": L.matrix_norm(w, "nuc"), "matrix_norm_2": L.matrix_norm(w, 2),
    "matrix_norm_neg2_dims": L.matrix_norm(batch, ord=-2, dim=(0, 2)),
    "linalg_norm_matrix": L.norm(w, "fro"), "linalg_norm_2": L.norm(w, 2), "linalg_norm_vector": L.norm(w, dim=1),
    "norm_nuc": torch.norm(w, "nuc"), "cond": L.cond(a), "cond_fro": L.cond(a, "fro"),
    "multi_dot": L.multi_dot([torch.tensor([1.0, 2.0, 3.0]), a, s, torch.tensor([1.0, 0.0, -1.0])]),
    "vecdot": L.vecdot(w, w), "empty_det": L.det(torch.zeros(0, 0)), "empty_inv": L.inv(torch.zeros(2, 0, 0)),
}
# (an empty result keeps its shape, which tolist() would lose)
expected = {k: v.tolist() if v.numel() else np.zeros(v.shape) for k, v in expected.items()}
text, checked = check("linalg_decompositions.out", expected, rtol=1e-9, atol=1e-9)
for msg in ["inv: the input is singular", "cholesky: the input is not positive-definite (the leading minor of order 2",
            "inv: expects square matrices", "solve_triangular: option 'upper' is required",
            "(in the matrix at batch index [1])"]:
    assert msg in text, msg
print(f"{checked} results agree with PyTorch {torch.__version__}")
