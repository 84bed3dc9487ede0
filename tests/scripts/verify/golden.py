"""The comparison every verifier here shares: the `name: [shape] values`
lines of a golden `.out` file against NumPy's expected arrays."""
import os
import pathlib
import numpy as np

# a failed comparison shows every digit
np.set_printoptions(precision=17)


def check(out_name, expected, rtol=0.0, atol=0.0, tols=None):
    """Compares each expected name's line in tests/scripts/OUT_NAME (exactly
    by default; `tols` maps a name to its own tolerance) and returns how many
    agree; every expected name must appear."""
    out = pathlib.Path(__file__).resolve().parents[1] / out_name
    # KILN_GOLDEN_DIR: check the same script's output from another run (the
    # GPU's), which may differ from the CPU's in the last bits
    other = os.environ.get("KILN_GOLDEN_DIR")
    if other:
        out = pathlib.Path(other) / out_name
        rtol, atol = max(rtol, 1e-6), max(atol, 1e-9)
        tols = {k: (max(r, 1e-6), max(a, 1e-9)) for k, (r, a) in (tols or {}).items()}
    checked = 0
    for line in out.read_text().splitlines():
        name, _, rest = line.partition(": ")
        if name not in expected or not rest.startswith("["):
            continue
        shape_txt, _, values_txt = rest.partition("] ")
        shape = [int(s) for s in shape_txt.strip("[").split(",") if s.strip()]
        values_txt = values_txt.replace("true", "True").replace("false", "False").replace("NaN", "nan")
        got = np.array(eval(values_txt, {"nan": np.nan, "inf": np.inf}), dtype=float).reshape(shape)
        want = np.asarray(expected[name], dtype=float)
        # an empty list (`.tolist()` of any empty tensor) carries no shape
        if not (want.size == 0 and want.ndim == 1 and got.size == 0):
            assert list(want.shape) == shape, (name, want.shape, shape)
        else:
            want = want.reshape(shape)
        t = (tols or {}).get(name, (rtol, atol))
        assert np.allclose(got, want, rtol=t[0], atol=t[1], equal_nan=True), (name, got, want)
        checked += 1
    assert checked == len(expected), (checked, len(expected), set(expected))
    return out.read_text(), checked
