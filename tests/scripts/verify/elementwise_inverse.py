"""Checks tests/scripts/elementwise_inverse.out against NumPy (relative 1e-13,
absolute 1e-15): run `python3 tests/scripts/verify/elementwise_inverse.py`."""
import pathlib
import numpy as np

u = np.array([-1.0, -0.999, -0.5, -1e-9, 0.0, 0.3, 0.999999, 1.0, 1.5])
a = np.array([1.0, 1.0000001, 1.5, 10.0, 1e8, 1e20, 0.5])
d = np.array([-720.0, -90.0, 0.0, 45.0, 180.0, 1e-3])
s = np.array([-2.5, -1.0, -1e-8, 0.0, 0.25, 1.0, 3.7])
with np.errstate(all="ignore"):
    expected = {
        "asin": np.arcsin(u), "acos": np.arccos(u), "atanh": np.arctanh(u), "acosh": np.arccosh(a),
        "deg2rad": np.deg2rad(d), "rad2deg": np.rad2deg(d), "sinc": np.sinc(s),
    }
out = pathlib.Path(__file__).resolve().parents[1] / "elementwise_inverse.out"
checked = 0
for line in out.read_text().splitlines():
    name, _, rest = line.partition(": ")
    if name in expected:
        got = np.array(eval(rest.replace("NaN", "nan").replace("inf", "float('inf')").replace("-float", "-float")
                             , {"nan": np.nan, "float": float}), dtype=float)
        want = expected[name]
        ok = np.isclose(got, want, rtol=1e-13, atol=1e-15, equal_nan=True)
        assert ok.all(), (name, got[~ok], want[~ok])
        checked += 1
assert checked == len(expected), checked
print(f"{checked} results agree with NumPy")
