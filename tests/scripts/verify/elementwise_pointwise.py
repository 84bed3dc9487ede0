"""Checks tests/scripts/elementwise_pointwise.out against NumPy (the same
formulas as PyTorch documents): run `python3 tests/scripts/verify/elementwise_pointwise.py`."""
import numpy as np
from golden import check

y = np.array([1.0, -1.0, 0.0, 0.0, -0.0, 2.0, -3.0, 1e-30])
x = np.array([1.0, -1.0, -1.0, 0.0, 1.0, 0.0, 4.0, -1e30])
big = np.array([3e300, 1e-300, 0.0, -5.0])
special = np.array([1.0, np.inf, -np.inf, np.nan, -0.0, -2.5])
a = np.arange(6.0).reshape(2, 3)
b = np.arange(12.0).reshape(3, 4)
b1 = np.arange(12.0).reshape(2, 2, 3)
b2 = np.arange(12.0).reshape(2, 3, 2)


def logit(p, eps=None):
    if eps is not None:
        p = np.clip(p, eps, 1 - eps)
    return np.log(p / (1 - p))


with np.errstate(all="ignore"):
    expected = {
        "atan2": np.arctan2(y, x), "hypot": np.hypot(big, [4e300, 1e-300, 0.0, 12.0]),
        "copysign": np.copysign([1.0, 2.0, -3.0, 4.0], [-1.0, 0.0, 5.0, -0.0]),
        "xlogy": np.array([0.0, 0.0, 2 * np.log(0.5), 0.0]), "logit": logit(np.array([0.25, 0.5, 0.9])),
        "logit_eps": logit(np.array([0.0, 0.5, 1.0]), 0.1), "lerp": np.array([2.5, 12.5]),
        "lerp_t": np.array([5.0, 30.0]), "addcmul": np.array([1 + 0.5 * 15, 2 + 0.5 * 24]),
        "addcdiv": np.array([1 + 2 * 3 / 5, 2 + 2 * 4 / 8]), "float_power": np.float_power([2, 3], [10, -1]),
        "nan_to_num": np.nan_to_num(special), "nan_to_num_opts": np.nan_to_num(special, nan=7.0, posinf=1e3, neginf=-1e3),
        "clamp_t": np.clip([1.0, 5.0, 9.0], [2.0, 2.0, 2.0], [3.0, 6.0, 8.0]),
        "clamp_mixed": np.minimum(np.maximum([1.0, 5.0, 9.0], 4.0), [3.0, 6.0, 8.0]),
        "isnan": np.isnan(special), "isinf": np.isinf(special), "isposinf": np.isposinf(special),
        "isneginf": np.isneginf(special), "isfinite": np.isfinite(special), "signbit": np.signbit(special),
        "isfinite_int": np.isfinite([1, 2]),
        "isclose": np.isclose([1.0, 1.0001, np.nan], [1.0, 1.0, np.nan]),
        "isclose_opts": np.isclose([1.0, 1.0001, np.nan], [1.0, 1.0, np.nan], rtol=1e-3, equal_nan=True),
        "addmm": 0.5 * np.ones((2, 4)) + 2.0 * (a @ b), "addmm_bcast": np.array([1.0, 2, 3, 4]) + a @ b,
        "addmv": np.ones(2) + a @ np.array([1.0, 0, -1]), "addbmm": (b1 @ b2).sum(0), "baddbmm": b1 @ b2,
        "outer": np.outer([1.0, 2.0], [3.0, 4.0, 5.0]),
    }
text, checked = check("elementwise_pointwise.out", expected, rtol=1e-14)
assert "allclose: true false" in text and "equal: true false false" in text
print(f"{checked} results agree with NumPy")
