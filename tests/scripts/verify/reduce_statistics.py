"""Checks tests/scripts/reduce_statistics.out against NumPy (the gradient by
central differences): run `python3 tests/scripts/verify/reduce_statistics.py`."""
import numpy as np
from golden import check

x = np.array([[1.0, -2.0, 3.0, 0.5], [4.0, 0.0, -6.0, 2.0], [0.25, 8.0, -1.0, 0.0]])
n = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])


def lse(a, axis, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def loss(w):
    return (lse(w, 1).sum() + np.linalg.norm(w) + np.cov(w).sum() + np.nanmean(w, 0).sum()
            + np.linalg.norm(w, np.inf))


grad = np.zeros_like(x)
for i in np.ndindex(x.shape):
    e = np.zeros_like(x)
    e[i] = 1e-6
    grad[i] = (loss(x + e) - loss(x - e)) / 2e-6

with np.errstate(all="ignore"):
    expected = {
        "logsumexp_1": lse(x, 1), "logsumexp_all": lse(x, (0, 1)), "logsumexp_keep": lse(x, 0, True),
        "logsumexp_big": lse(np.array([1000.0, 1000.0]), 0), "amax": x.max(), "amax_dims": x.max(0),
        "amin_keep": x.min(1, keepdims=True), "aminmax_min": x.min(0), "aminmax_max": x.max(0),
        "count_nonzero": np.count_nonzero(x), "count_nonzero_dim": np.count_nonzero(x, 0),
        "nansum": np.nansum(n), "nansum_dim": np.nansum(n, 1), "nanmean_dim": np.nanmean(n, 0),
        "var_mean_var": x.var(1, ddof=1), "var_mean_mean": x.mean(1), "std_mean_std": x.std(0),
        "std_mean_mean": x.mean(0), "vector_norm": np.linalg.norm(x.ravel()),
        "vector_norm_1": np.abs(x).sum(1), "vector_norm_inf": np.abs(x).max(0),
        "vector_norm_ninf": np.abs(x).min(), "vector_norm_0": np.count_nonzero(x),
        "vector_norm_3": (np.abs(x) ** 3).sum() ** (1 / 3), "norm": np.linalg.norm(x),
        "norm_fro_dim": np.linalg.norm(x, axis=1, keepdims=True), "matrix_norm": np.linalg.norm(x, "fro"),
        "matrix_norm_1": np.linalg.norm(x, 1), "matrix_norm_m1": np.linalg.norm(x, -1),
        "matrix_norm_inf": np.linalg.norm(x, np.inf), "matrix_norm_2": np.linalg.norm(x, 2), "norm_nuc": np.linalg.norm(x, "nuc"), "matrix_norm_ninf": np.linalg.norm(x, -np.inf),
        "cov": np.cov(x), "cov_0": np.cov(x, ddof=0), "cov_1d": np.cov([1.0, 2.0, 4.0]),
        "corrcoef": np.corrcoef(x), "grad": grad,
    }
text, checked = check("reduce_statistics.out", expected, rtol=1e-13, atol=1e-13, tols={"grad": (1e-6, 1e-6)})
print(f"{checked} results agree with NumPy")
