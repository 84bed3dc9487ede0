"""Checks tests/scripts/shape_rearrange.out against NumPy (the same ops as
PyTorch defines them): run `python3 tests/scripts/verify/shape_rearrange.py`."""
import numpy as np
from golden import check

x = np.arange(24).reshape(2, 3, 4)
m = np.arange(12, dtype=np.float32).reshape(3, 4)
a10 = np.arange(10)


def pad(t, pads, mode="constant", value=0.0):
    widths = [(0, 0)] * t.ndim
    for i in range(0, len(pads), 2):
        widths[t.ndim - 1 - i // 2] = (pads[i], pads[i + 1])
    if mode == "constant":
        crop = tuple(slice(-min(b, 0), t.shape[d] - (-min(a, 0))) for d, (b, a) in enumerate(widths))
        t = t[crop]
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
        return np.pad(t, widths, mode="constant", constant_values=value)
    return np.pad(t, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


def unfold(t, dim, size, step):
    n = t.shape[dim]
    wins = [np.take(t, range(s, s + size), axis=dim) for s in range(0, n - size + 1, step)]
    return np.moveaxis(np.stack(wins, axis=dim), dim + 1, -1)


def split_sizes(t, sizes, dim):
    return np.split(t, np.cumsum(sizes)[:-1], axis=dim)


expected = {
    "flip01": np.flip(x, (0, 1)), "flip_neg": np.flip(x, -1), "flip2args": np.flip(m, (0, 1)),
    "fliplr": np.fliplr(m), "flipud": np.flipud(m), "roll_flat": np.roll(m, 5),
    "roll_dim": np.roll(m, -1, 1), "roll_dims": np.roll(x, (1, 2), (0, 2)), "roll_map": np.roll(m, 7, 0),
    "repeat": np.tile(m, (2, 1)), "repeat_lead": np.tile(np.arange(3), (2, 2)), "tile": np.tile(x, 2),
    "tile_more": np.tile(np.arange(3), (2, 2)), "ri_flat": np.repeat(m, 2), "ri_dim": np.repeat(m, 2, 0),
    "ri_tensor": np.repeat(m, [1, 0, 2], 0),
    "movedim": np.moveaxis(x, 0, 2), "movedim_list": np.moveaxis(x, [0, 1], [2, 0]),
    "moveaxis": np.moveaxis(x, -1, 0), "swapaxes": np.swapaxes(x, 0, 2),
    "unflatten": np.arange(12).reshape(3, 4), "view_as": np.arange(12).reshape(3, 4),
    "reshape_as": m.T.reshape(4, 3), "unfold": unfold(np.arange(7), 0, 3, 2), "unfold_2d": unfold(m, 1, 2, 1),
    "pad_const": pad(m, [1, 2]), "pad_value": pad(m, [1, 0, 0, 1], value=9.5), "pad_crop": pad(m, [-1, 1]),
    "pad_reflect": pad(m, [2, 1, 1, 2], "reflect"), "pad_replicate": pad(m, [2, 1, 1, 0], "replicate"),
    "pad_circular": pad(m, [3, 1], "circular"), "hstack": np.hstack([np.arange(2), np.arange(3)]),
    "hstack2": np.hstack([m, m]), "vstack": np.vstack([np.arange(3)] * 2), "dstack": np.dstack([m, m]),
    "column_stack": np.column_stack([np.arange(3), np.arange(6).reshape(3, 2)]),
    "atleast_2d": np.atleast_2d(5), "atleast_3d": np.atleast_3d(np.arange(3)),
}
lists = {
    "chunk": np.array_split(a10, [4, 8]), "chunk_dim": np.split(m, 2, 1), "split": np.split(a10, [4, 8]),
    "split_sizes": split_sizes(m, [1, 3], 1), "tensor_split": np.array_split(a10, 3),
    "tensor_split_at": np.split(a10, [2, 7, 20]), "unbind": [m[:, i] for i in range(4)],
    "atleast_1d": [np.atleast_1d(1), np.arange(2)],
}
for name, ts in lists.items():
    for i, t in enumerate(ts):
        expected[f"{name}[{i}]"] = t

# the gradient of the script's sum, by hand: each term's d/dw
g = np.flip(np.arange(12).reshape(3, 4), 0).astype(float)  # flip(0) * c
g[0] += 1  # roll(1, 1)[0].sum(): row 0 of the rolled tensor is row 0 of w
g += 2  # repeat([2, 1])
refl = np.zeros((3, 4))
for j in range(4):  # reflect pad [1, 1] of the last dim: edges' neighbours count twice
    refl[:, j] += 1
refl[:, 1] += 1
refl[:, 2] += 1
g += refl
g += np.array([1, 2, 2, 1])  # unfold(1, 2, 1): middle columns are in two windows
g[2:, :] += 1  # chunk(2, 0)[1]: row 2 (chunks of ceil(3 / 2) = 2 rows)
expected["grad"] = g

text, checked = check("shape_rearrange.out", expected)
print(f"{checked} results agree with NumPy")
