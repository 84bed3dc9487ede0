"""Checks tests/scripts/nn_attention.out against NumPy (the definitions of
F.scaled_dot_product_attention's math path, F.rms_norm and rotate-half
rotary embeddings): run `python3 tests/scripts/verify/nn_attention.py`."""
import numpy as np
from golden import check


def wave(shape, phase):
    return np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) * 0.37 + phase).reshape(shape)


def sdpa(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    if gqa:
        r = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, r, axis=-3), np.repeat(v, r, axis=-3)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = q.shape[-2], k.shape[-2]
    if causal:
        mask = np.tril(np.ones((L, S), dtype=bool))
    if mask is not None and mask.dtype == bool:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    empty = np.all(np.isneginf(s), axis=-1, keepdims=True)
    s = np.where(empty, 0.0, s)
    w = np.exp(s - s.max(-1, keepdims=True))
    w = np.where(empty, 0.0, w / w.sum(-1, keepdims=True))
    return w @ v


def rms_norm(x, n, w=None, eps=np.finfo(np.float64).eps):
    axes = tuple(range(-n, 0))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y if w is None else y * w


def rope(x, base=10000.0, offset=0, positions=None):
    L, D = x.shape[-2:]
    pos = np.arange(offset, offset + L, dtype=np.float64) if positions is None else np.asarray(positions, dtype=np.float64)
    ang = pos[:, None] * base ** (-2 * np.arange(D // 2) / D)[None, :]
    x1, x2 = x[..., : D // 2], x[..., D // 2:]
    return np.concatenate([x1 * np.cos(ang) - x2 * np.sin(ang), x1 * np.sin(ang) + x2 * np.cos(ang)], -1)


q, k, v = wave([2, 3, 4], 0.1), wave([2, 5, 4], 0.7), wave([2, 5, 3], 1.3)
m = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=bool)
qh, kh, vh = wave([1, 4, 3, 4], 0.3), wave([1, 2, 5, 4], 0.9), wave([1, 2, 5, 3], 1.7)
x = wave([3, 4, 5], 0.2)
expected = {
    "plain": sdpa(q, k, v), "causal": sdpa(q, k, v, causal=True), "bool_mask": sdpa(q, k, v, m),
    "additive": sdpa(q, k, v, wave([3, 5], 2.0)), "scaled": sdpa(q, k, v, scale=0.25),
    "gqa": sdpa(qh, kh, vh, gqa=True), "one_query": sdpa(wave([2, 1, 4], 0.5), k, v),
    "no_dropout_positional": sdpa(q, k, v, causal=True),
    "rms_norm": rms_norm(x, 2), "rms_norm_weight": rms_norm(x, 1, wave([5], 1.1), 1e-6),
    "rope": rope(wave([2, 3, 6], 0.4)), "rope_offset_base": rope(wave([2, 3, 6], 0.4), 100.0, 5),
    "rope_positions": rope(wave([3, 4], 0.8), positions=[4, 0, 9]),
}
text, n = check("nn_attention.out", expected, rtol=1e-12, atol=1e-12)
for msg in ["query and key need one embedding size", "cannot be given with is_causal", "must be a multiple of key and value heads",
            "rope: the last dim must be even", "rms_norm: normalized_shape [5, 4] does not match",
            "attn_mask of shape [4, 5] does not broadcast", "no queries: [2, 0, 3]", "bf16 close: true"]:
    assert msg in text, msg
print(f"nn_attention: {n} results agree with NumPy")
