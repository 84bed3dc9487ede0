"""Checks tests/scripts/shape_structure.out against NumPy (the same ops as
PyTorch defines them): run `python3 tests/scripts/verify/shape_structure.py`."""
import numpy as np
from golden import check

m = np.arange(12, dtype=np.float32).reshape(3, 4)
b = np.arange(24).reshape(2, 3, 4)


def diag_embed(t, offset=0):
    n = t.shape[-1] + abs(offset)
    out = np.zeros(t.shape[:-1] + (n, n), dtype=t.dtype)
    for i in range(t.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = t[..., i]
    return out


def take_along(t, idx, dim):
    shape = list(np.broadcast_shapes(t.shape[:dim] + (1,) + t.shape[dim + 1:], idx.shape[:dim] + (1,) + idx.shape[dim + 1:]))
    ts, iss = shape.copy(), shape.copy()
    ts[dim], iss[dim] = t.shape[dim], idx.shape[dim]
    return np.take_along_axis(np.broadcast_to(t, ts), np.broadcast_to(idx, iss), dim)


mi, mj = np.meshgrid([1, 2, 3], [10, 20], indexing="ij")
xi, xj = np.meshgrid([1, 2, 3], [10, 20], indexing="xy")
expected = {
    "tril": np.tril(m), "tril_1": np.tril(m, 1), "tril_m1": np.tril(m, -1), "triu": np.triu(m),
    "triu_2": np.triu(m, 2), "triu_batched": np.triu(b, -1), "diagonal": np.diagonal(m),
    "diagonal_1": np.diagonal(m, 1), "diagonal_m2": np.diagonal(m, -2), "diagonal_far": np.diagonal(m, 7),
    "diagonal_3d": np.diagonal(b, 1, 1, 2), "diagonal_3d_02": np.diagonal(b, 0, 0, 2),
    "diag_vec": np.diag([1, 2, 3]), "diag_vec_1": np.diag([1.0, 2.0], 1), "diag_vec_m1": np.diag([1.0, 2.0], -1),
    "diag_mat": np.diag(m, 1), "diag_embed": diag_embed(np.arange(6).reshape(2, 3)),
    "diag_embed_off": diag_embed(np.arange(2), 1), "diagflat": np.diagflat([[1, 2], [3, 4]]),
    "trace": np.trace(m), "masked_fill": np.where(m > 5, -1.0, m),
    "masked_fill_row": np.where(np.array([True, False, True, False]), 0.5, m),
    "take": np.take(m, [[0, 5], [11, 3]]), "take_along_dim": take_along(m, np.array([[1], [0], [3]]), 1),
    "take_along_bcast": take_along(m, np.array([[2, 0, 1, 1]]), 0), "take_along_flat": np.take(m, [3, 7]),
    "one_hot": np.eye(3, dtype=int)[[0, 2, 1]], "one_hot_n": np.eye(5, dtype=int)[[[1], [3]]],
    "mesh_ij0": mi, "mesh_ij1": mj, "mesh_xy0": xi, "mesh_xy1": xj,
    "cartesian_prod": np.array([[a, c] for a in [1, 2] for c in [5, 6, 7]]),
    "logspace": np.logspace(0, 3, 4), "logspace_base": np.logspace(1, 3, 3, base=2.0),
    "tril_indices": np.array(np.tril_indices(3, 0, 3)), "tril_indices_off": np.array(np.tril_indices(3, 1, 4)),
    "triu_indices": np.array(np.triu_indices(4, -1, 3)),
}
# the gradient of the script's sum, term by term
g = 2.0 * np.tril(np.ones((3, 4)), 1)
g += 3.0 * np.eye(3, 4, 1)
g += (m <= 8)
g[0, 0] += 2
g[1, 1] += 1
g[0, :] += 1  # diag_embed(w[0]).sum(): each element of row 0 once
g += np.eye(3, 4)
expected["grad"] = g

text, checked = check("shape_structure.out", expected, rtol=1e-6)
print(f"{checked} results agree with NumPy")
