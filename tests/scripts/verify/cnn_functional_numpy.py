"""Checks tests/scripts/cnn_functional.out against direct NumPy loops
written from PyTorch's documented definitions (no PyTorch needed:
`python3 tests/scripts/verify/cnn_functional_numpy.py`). An independent
second check beside cnn_functional.py: every window, tap, source index and
interpolation weight is computed one at a time here."""
import itertools
import math
import numpy as np
from golden import check

def data(shape, k): return np.sin(np.arange(int(np.prod(shape)), dtype=np.float64) * k).reshape(shape)
def conv(x, w, b=None, stride=1, pad=0, dil=1, groups=1, mode="zeros", same=False):
    n = x.ndim - 2
    tup = lambda v: [v]*n if np.isscalar(v) else list(v)
    s, d = tup(stride), tup(dil)
    k = w.shape[2:]
    if same:
        tot = [d[i]*(k[i]-1) for i in range(n)]; before = [t//2 for t in tot]; after = [tot[i]-before[i] for i in range(n)]
    else:
        before = after = tup(pad)
    npm = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    xp = np.pad(x, [(0,0),(0,0)] + [(before[i], after[i]) for i in range(n)], mode=npm)
    S = xp.shape[2:]
    O = [(S[i] - d[i]*(k[i]-1) - 1)//s[i] + 1 for i in range(n)]
    N, C = x.shape[:2]; OC = w.shape[0]; cg = C // groups; og = OC // groups
    out = np.zeros((N, OC, *O))
    for o in itertools.product(*[range(v) for v in O]):
        for kk in itertools.product(*[range(v) for v in k]):
            idx = tuple(o[i]*s[i] + kk[i]*d[i] for i in range(n))
            for g in range(groups):
                xv = xp[(slice(None), slice(g*cg, (g+1)*cg)) + idx]  # N, cg
                wv = w[(slice(g*og, (g+1)*og), slice(None)) + kk]       # og, cg
                out[(slice(None), slice(g*og, (g+1)*og)) + o] += xv @ wv.T
    if b is not None: out += b.reshape((1, -1) + (1,)*n)
    return out
def convt(x, w, b=None, stride=1, pad=0, opad=0, groups=1, dil=1):
    n = x.ndim - 2
    tup = lambda v: [v]*n if np.isscalar(v) else list(v)
    s, p, op, d = tup(stride), tup(pad), tup(opad), tup(dil)
    k = w.shape[2:]; S = x.shape[2:]
    N, C = x.shape[:2]; cg = C // groups; og = w.shape[1]; OC = og*groups
    O = [(S[i]-1)*s[i] - 2*p[i] + d[i]*(k[i]-1) + op[i] + 1 for i in range(n)]
    out = np.zeros((N, OC, *O))
    for i in itertools.product(*[range(v) for v in S]):
        for kk in itertools.product(*[range(v) for v in k]):
            o = tuple(i[j]*s[j] + kk[j]*d[j] - p[j] for j in range(n))
            if any(o[j] < 0 or o[j] >= O[j] for j in range(n)): continue
            for g in range(groups):
                xv = x[(slice(None), slice(g*cg, (g+1)*cg)) + i]      # N, cg
                wv = w[(slice(g*cg, (g+1)*cg), slice(None)) + kk]      # cg, og
                out[(slice(None), slice(g*og, (g+1)*og)) + o] += xv @ wv
    if b is not None: out += b.reshape((1, -1) + (1,)*n)
    return out
def osize(L, k, p, d, s, ceil):
    num = L + 2*p - d*(k-1) - 1 + (s-1 if ceil else 0)
    o = num // s + 1
    if ceil and (o-1)*s >= L + p: o -= 1
    return o
def maxpool(x, k, s=None, p=0, d=1, ceil=False):
    n = x.ndim-2; tup = lambda v: [v]*n if np.isscalar(v) else list(v)
    k = tup(k); s = tup(s) if s is not None else k; p, d = tup(p), tup(d)
    S = x.shape[2:]; O = [osize(S[i], k[i], p[i], d[i], s[i], ceil) for i in range(n)]
    out = np.full(x.shape[:2] + tuple(O), -np.inf); idx = np.zeros(x.shape[:2] + tuple(O))
    for o in itertools.product(*[range(v) for v in O]):
        for kk in itertools.product(*[range(v) for v in k]):
            pos = [o[i]*s[i] - p[i] + kk[i]*d[i] for i in range(n)]
            if any(pos[i] < 0 or pos[i] >= S[i] for i in range(n)): continue
            v = x[(slice(None), slice(None)) + tuple(pos)]
            flat = np.ravel_multi_index(pos, S)
            cur = out[(slice(None), slice(None)) + o]
            better = v > cur
            out[(slice(None), slice(None)) + o] = np.where(better, v, cur)
            idx[(slice(None), slice(None)) + o] = np.where(better, flat, idx[(slice(None), slice(None)) + o])
    return out, idx
def avgpool(x, k, s=None, p=0, ceil=False, cip=True, div=None):
    n = x.ndim-2; tup = lambda v: [v]*n if np.isscalar(v) else list(v)
    k = tup(k); s = tup(s) if s is not None else k; p = tup(p)
    S = x.shape[2:]; O = [osize(S[i], k[i], p[i], 1, s[i], ceil) for i in range(n)]
    out = np.zeros(x.shape[:2] + tuple(O))
    for o in itertools.product(*[range(v) for v in O]):
        st = [o[i]*s[i]-p[i] for i in range(n)]; en = [min(st[i]+k[i], S[i]+p[i]) for i in range(n)]
        pool = np.prod([en[i]-st[i] for i in range(n)])
        st2 = [max(v, 0) for v in st]; en2 = [min(en[i], S[i]) for i in range(n)]
        sl = tuple(slice(st2[i], en2[i]) for i in range(n))
        tot = x[(slice(None), slice(None)) + sl].sum(axis=tuple(range(2, 2+n)))
        dv = div if div else (pool if cip else np.prod([en2[i]-st2[i] for i in range(n)]))
        out[(slice(None), slice(None)) + o] = tot / dv
    return out
def adaptive(x, O, fn):
    n = x.ndim-2; S = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(O)); idx = np.zeros_like(out)
    for o in itertools.product(*[range(v) for v in O]):
        sl = tuple(slice((o[i]*S[i])//O[i], -(-((o[i]+1)*S[i])//O[i])) for i in range(n))
        blk = x[(slice(None), slice(None)) + sl]
        if fn == "avg": out[(slice(None), slice(None)) + o] = blk.mean(axis=tuple(range(2, 2+n)))
        else:
            f = blk.reshape(blk.shape[:2] + (-1,)); a = f.argmax(-1)
            out[(slice(None), slice(None)) + o] = f.max(-1)
            loc = np.array(np.unravel_index(a, blk.shape[2:]))
            pos = [loc[i] + sl[i].start for i in range(n)]
            idx[(slice(None), slice(None)) + o] = np.ravel_multi_index(pos, S)
    return out, idx
def src_index(scale, j, align, cubic):
    if align: return scale*j
    v = scale*(j+0.5)-0.5
    return v if cubic else max(v, 0.0)
def interp_dim(x, axis, out, mode, align, sf=None):
    L = x.shape[axis]
    xm = np.moveaxis(x, axis, -1); res = np.zeros(xm.shape[:-1] + (out,))
    if mode.startswith("nearest"):
        sc = np.float32(1.0/sf) if sf else np.float32(L)/np.float32(out)
        for j in range(out):
            if mode == "nearest": s = j if out == L else (j >> 1 if out == 2*L else int(np.floor(np.float32(j)*sc)))
            else: s = int(np.floor((np.float32(j)+np.float32(0.5))*sc))
            res[..., j] = xm[..., min(s, L-1)]
        return np.moveaxis(res, -1, axis)
    if align: sc = (L-1)/(out-1) if out > 1 else 0.0
    else: sc = 1.0/sf if sf else L/out
    for j in range(out):
        if mode == "cubic":
            src = src_index(sc, j, align, True); i0 = math.floor(src); t = src - i0; A = -0.75
            c1 = lambda z: ((A+2)*z-(A+3))*z*z+1; c2 = lambda z: ((A*z-5*A)*z+8*A)*z-4*A
            ws = [c2(t+1), c1(t), c1(1-t), c2(2-t)]
            for q in range(4): res[..., j] += ws[q]*xm[..., min(max(i0-1+q, 0), L-1)]
        else:
            src = src_index(sc, j, align, False); i0 = int(src); lam = src - i0; i1 = i0 + (1 if i0 < L-1 else 0)
            res[..., j] = (1-lam)*xm[..., i0] + lam*xm[..., i1]
    return np.moveaxis(res, -1, axis)
def im2col(x, k, d, p, s):
    xp = np.pad(x, [(0,0),(0,0),(p,p),(p,p)])
    N, C, H, W = xp.shape
    oh = (H - d[0]*(k[0]-1) - 1)//s[0] + 1; ow = (W - d[1]*(k[1]-1) - 1)//s[1] + 1
    cols = np.zeros((N, C, k[0], k[1], oh, ow))
    for a in range(k[0]):
        for b_ in range(k[1]):
            cols[:, :, a, b_] = xp[:, :, a*d[0]: a*d[0] + s[0]*(oh-1)+1: s[0], b_*d[1]: b_*d[1] + s[1]*(ow-1)+1: s[1]]
    return cols.reshape(N, C*k[0]*k[1], oh*ow)
def col2im(c, size, k, s, p):
    N = c.shape[0]; C = c.shape[1]//(k[0]*k[1])
    H, W = size[0]+2*p[0], size[1]+2*p[1]
    oh = (H - k[0])//s[0] + 1; ow = (W - k[1])//s[1] + 1
    c = c.reshape(N, C, k[0], k[1], oh, ow); out = np.zeros((N, C, H, W))
    for a in range(k[0]):
        for b_ in range(k[1]):
            out[:, :, a: a + s[0]*(oh-1)+1: s[0], b_: b_ + s[1]*(ow-1)+1: s[1]] += c[:, :, a, b_]
    return out[:, :, p[0]:p[0]+size[0], p[1]:p[1]+size[1]]


def unnorm(c, size, ac): return (c + 1) / 2 * (size - 1) if ac else ((c + 1) * size - 1) / 2
def reflect(v, lo2, hi2):
    if lo2 == hi2: return 0.0
    mn = lo2 / 2; span = (hi2 - lo2) / 2; v = abs(v - mn); extra = math.fmod(v, span); flips = math.floor(v / span)
    return extra + mn if flips % 2 == 0 else span - extra + mn
def padpos(v, size, mode, ac):
    if mode == "border": return min(max(v, 0), size - 1)
    if mode == "reflection":
        v = reflect(v, 0, 2 * (size - 1)) if ac else reflect(v, -1, 2 * size - 1)
        return min(max(v, 0), size - 1)
    return v
def gs(x, g, mode, pm, ac):
    N, C, H, W = x.shape; Ho, Wo = g.shape[1:3]; out = np.zeros((N, C, Ho, Wo))
    def at(n, yy, xx):
        if 0 <= xx < W and 0 <= yy < H: return x[n, :, yy, xx]
        return np.zeros(C)
    A = -0.75
    c1 = lambda z: ((A+2)*z-(A+3))*z*z+1; c2 = lambda z: ((A*z-5*A)*z+8*A)*z-4*A
    def bounded(n, yy, xx):
        # bicubic: each tap's integer position padded, then zero outside
        return at(n, int(padpos(yy, H, pm, ac)), int(padpos(xx, W, pm, ac)))
    for n in range(N):
        for i in range(Ho):
            for j in range(Wo):
                if mode == "bicubic":
                    ux, uy = unnorm(g[n, i, j, 0], W, ac), unnorm(g[n, i, j, 1], H, ac)
                    x0, y0 = math.floor(ux), math.floor(uy); tx, ty = ux - x0, uy - y0
                    wx = [c2(tx+1), c1(tx), c1(1-tx), c2(2-tx)]; wy = [c2(ty+1), c1(ty), c1(1-ty), c2(2-ty)]
                    out[n, :, i, j] = sum(wy[b]*wx[a]*bounded(n, y0-1+b, x0-1+a) for a in range(4) for b in range(4))
                    continue
                ix = padpos(unnorm(g[n, i, j, 0], W, ac), W, pm, ac); iy = padpos(unnorm(g[n, i, j, 1], H, ac), H, pm, ac)
                if mode == "nearest":
                    out[n, :, i, j] = at(n, int(np.rint(iy)), int(np.rint(ix)))
                else:
                    x0, y0 = math.floor(ix), math.floor(iy); wx1, wy1 = ix - x0, iy - y0
                    out[n, :, i, j] = (at(n, y0, x0)*(1-wx1)*(1-wy1) + at(n, y0, x0+1)*wx1*(1-wy1) + at(n, y0+1, x0)*(1-wx1)*wy1 + at(n, y0+1, x0+1)*wx1*wy1)
    return out

def ag(theta, size, ac):
    N, C, H, W = size
    def line(n): 
        if n <= 1: return np.zeros(n)
        l = np.linspace(-1, 1, n); return l if ac else l * (n - 1) / n
    xs, ys = line(W), line(H)
    base = np.stack([np.broadcast_to(xs[None, :], (H, W)), np.broadcast_to(ys[:, None], (H, W)), np.ones((H, W))], -1)
    return np.einsum("hwk,nck->nhwc", base, theta)


def batch_norm(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m) / np.sqrt(v + eps) * w.reshape(shape) + b.reshape(shape)


def group_norm(x, groups, w, b, eps=1e-5):
    g = x.reshape(x.shape[0], groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


x = data([2, 4, 5, 4], 0.37)
x1 = data([2, 3, 9], 0.29)
grid = data([2, 3, 6, 2], 0.53) * 1.3
mp_vals, mp_idx = maxpool(x, 3, 2, 1)
expected = {
    "conv2d_groups_stride_dilation": conv(x, data([6, 2, 3, 2], 0.91), data([6], 1.3), stride=[2, 1], pad=[1, 2], dil=[1, 2], groups=2),
    "conv2d_positional": conv(x, data([3, 4, 2, 2], 0.5), stride=1, pad=1),
    "conv2d_same": conv(x, data([3, 4, 3, 2], 0.5), same=True),
    "conv2d_valid": conv(x, data([3, 4, 3, 3], 0.5)),
    "conv2d_depthwise": conv(x, data([4, 1, 3, 3], 0.7), pad=1, groups=4),
    "conv2d_unbatched": conv(x[1:2], data([2, 4, 2, 3], 0.3))[0],
    "conv1d": conv(x1, data([5, 3, 4], 0.6), data([5], 0.4), stride=2, pad=2),
    "conv3d": conv(data([1, 2, 4, 3, 4], 0.11), data([3, 2, 2, 3, 2], 0.8), stride=[1, 2, 2], pad=[1, 0, 1]),
    "conv_transpose2d": convt(x, data([4, 3, 3, 2], 0.73), data([6], 0.2), stride=[2, 3], pad=[1, 0], opad=[1, 2], groups=2, dil=[1, 2]),
    "conv_transpose1d": convt(x1, data([3, 2, 3], 0.6), stride=3, pad=1),
    "conv_transpose3d": convt(data([1, 2, 2, 3, 2], 0.2), data([2, 2, 2, 2, 2], 0.4), stride=2),
    "max_pool2d": maxpool(x, 2)[0],
    "max_pool2d_ceil": maxpool(x, 3, 2, 1, ceil=True)[0],
    "max_pool2d_dilation": maxpool(x, [2, 2], 1, 0, d=[2, 1])[0],
    "max_pool2d_indices": mp_idx,
    "max_pool1d": maxpool(x1, 3, 2, 1)[0],
    "max_pool3d": maxpool(data([1, 2, 4, 4, 3], 0.23), 2)[0],
    "avg_pool2d": avgpool(x, 2),
    "avg_pool2d_ceil_pad": avgpool(x, 3, 2, 1, ceil=True),
    "avg_pool2d_exclude_pad": avgpool(x, 3, 2, 1, cip=False),
    "avg_pool2d_divisor": avgpool(x, [3, 2], [2, 2], div=5),
    "avg_pool1d": avgpool(x1, 4, 3, 2),
    "adaptive_avg_pool2d": adaptive(x, [3, 3], "avg")[0],
    "adaptive_avg_pool2d_none": adaptive(x, [2, 4], "avg")[0],
    "adaptive_avg_pool1d": adaptive(x1, [4], "avg")[0],
    "adaptive_max_pool2d": adaptive(x, [3, 2], "max")[0],
    "adaptive_max_pool2d_indices": adaptive(x, [3, 2], "max")[1],
    "batch_norm_train": batch_norm(x, data([4], 1.0), data([4], 2.0)),
    "batch_norm_running_mean": 0.2 * x.mean(axis=(0, 2, 3)),
    "batch_norm_running_var": 0.8 + 0.2 * x.var(axis=(0, 2, 3), ddof=1),
    "group_norm": group_norm(x, 2, data([4], 1.0), data([4], 2.0)),
    "instance_norm": group_norm(x, 4, data([4], 0.5), data([4], 0.7)),
    "interpolate_nearest": interp_dim(interp_dim(x, 2, 7, "nearest", False, 1.5), 3, 6, "nearest", False, 1.5),
    "interpolate_nearest_exact": interp_dim(interp_dim(x, 2, 3, "nearest-exact", False), 3, 7, "nearest-exact", False),
    "interpolate_bilinear": interp_dim(interp_dim(x, 2, 7, "lin", False), 3, 6, "lin", False),
    "interpolate_bilinear_align": interp_dim(interp_dim(x, 2, 7, "lin", True), 3, 6, "lin", True),
    "interpolate_bilinear_scale": interp_dim(interp_dim(x, 2, 3, "lin", False, 0.6), 3, 6, "lin", False, 1.7),
    "interpolate_bicubic": interp_dim(interp_dim(x, 2, 8, "cubic", False), 3, 3, "cubic", False),
    "interpolate_bicubic_align": interp_dim(interp_dim(x, 2, 8, "cubic", True), 3, 3, "cubic", True),
    "interpolate_linear": interp_dim(x1, 2, 13, "lin", False),
    "interpolate_trilinear": interp_dim(interp_dim(interp_dim(data([1, 1, 2, 3, 2], 0.5), 2, 3, "lin", False), 3, 4, "lin", False), 4, 3, "lin", False),
    "interpolate_area": adaptive(x, [2, 3], "avg")[0],
    "pixel_shuffle": data([1, 8, 2, 3], 0.1).reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6),
    "pixel_unshuffle": data([1, 2, 4, 6], 0.1).reshape(1, 2, 2, 2, 3, 2).transpose(0, 1, 3, 5, 2, 4).reshape(1, 8, 2, 3),
    "unfold": im2col(x, [2, 3], [2, 1], 1, [1, 2]),
    "fold": col2im(data([2, 12, 12], 0.3), [5, 6], [2, 3], [2, 1], [1, 0]),
    "dropout2d_eval": x,
    "grid_sample_bilinear": gs(x, grid, "bilinear", "zeros", False),
    "grid_sample_border_align": gs(x, grid, "bilinear", "border", True),
    "grid_sample_reflection": gs(x, grid, "bilinear", "reflection", False),
    "grid_sample_nearest": gs(x, grid, "nearest", "zeros", False),
    "grid_sample_bicubic": gs(x, grid, "bicubic", "zeros", False),
    "grid_sample_bicubic_border_align": gs(x, grid, "bicubic", "border", True),
    "grid_sample_bicubic_reflection": gs(x, grid, "bicubic", "reflection", False),
    "affine_grid": ag(data([2, 2, 3], 0.7), [2, 3, 4, 5], False),
    "affine_grid_align": ag(data([2, 2, 3], 0.7), [2, 3, 4, 5], True),
    "lp_pool2d": np.sqrt(((np.abs(x) + 0.1)[:, :, :4, :4] ** 2).reshape(2, 4, 2, 2, 2, 2).sum(axis=(3, 5))),
    "channel_shuffle": data([1, 6, 2, 2], 0.3).reshape(1, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(1, 6, 2, 2),
    "upsample_bilinear": interp_dim(interp_dim(x, 2, 10, "lin", True), 3, 8, "lin", True),
}
expected = {k: np.asarray(v).tolist() for k, v in expected.items()}
text, checked = check("cnn_functional.out", expected, rtol=1e-10, atol=1e-12)
print(f"{checked} results agree with the NumPy loops")
