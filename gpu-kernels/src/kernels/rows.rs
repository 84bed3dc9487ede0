//! Row kernels: softmax / log-softmax, layer norm with its backward, and the
//! blocked attention's score rows (the row machinery
//! here also serves the cross-entropy kernels of `loss`). Dense rows (the common
//! case) are cached in registers, [`CACHE`] elements per thread, and reduced
//! by a warp (rows up to `32 * CACHE`) or by a whole block (longer rows; past
//! the block's `threads * CACHE` the row is re-read from memory instead), accumulating in
//! f32 (f64 for f64): one read and one write of each element. Softmax along a
//! strided dim keeps a warp-per-row kernel that walks the stride.

use super::accum::{max_nan, Acc, FloatElem};
use crate::device::{block_all_reduce, dims, global_index, lane_id, shared, shfl_xor_f64, thread_xy};
use crate::device::{opaque, unroll16, unroll4, warp_all_reduce, Shuffle};
use crate::elem::{Elem, BF16, F16};
use crate::math;
use crate::params::AttentionRows;

/// Row elements each thread keeps in registers (the loops over them are
/// written out by [`unroll16`]).
const CACHE: usize = 16;

/// The threads that share one row: a warp, or the whole block.
pub(super) trait Group {
    /// This thread's index in the group.
    fn lane(&self) -> u32;
    /// Threads in the group.
    fn width(&self) -> u32;
    /// `f` over the group; every thread gets the result.
    ///
    /// # Safety
    /// Every thread of the group calls it.
    unsafe fn all_reduce<A: Shuffle>(&self, v: A, f: impl Fn(A, A) -> A + Copy) -> A;
}

pub(super) struct Warp;

impl Group for Warp {
    #[inline(always)]
    fn lane(&self) -> u32 {
        lane_id()
    }
    #[inline(always)]
    fn width(&self) -> u32 {
        32
    }
    #[inline(always)]
    unsafe fn all_reduce<A: Shuffle>(&self, v: A, f: impl Fn(A, A) -> A + Copy) -> A {
        warp_all_reduce(v, f)
    }
}

pub(super) struct Block;

impl Group for Block {
    #[inline(always)]
    fn lane(&self) -> u32 {
        thread_xy().0
    }
    #[inline(always)]
    fn width(&self) -> u32 {
        dims().0
    }
    #[inline(always)]
    unsafe fn all_reduce<A: Shuffle>(&self, v: A, f: impl Fn(A, A) -> A + Copy) -> A {
        block_all_reduce(v, shared::<A>(), f)
    }
}

/// One dense row as accumulators: cached in registers when it fits.
pub(super) struct Row<T: FloatElem> {
    x: *const T,
    len: u32,
    lane: u32,
    width: u32,
    cached: bool,
    v: [T::Acc; CACHE],
}

impl<T: FloatElem> Row<T> {
    #[inline(always)]
    pub(super) unsafe fn load<G: Group>(g: &G, x: *const T, len: u32) -> Self {
        // recomputed per row: see `opaque`
        let (lane, width) = (opaque(g.lane()), opaque(g.width()));
        let cached = len <= width * CACHE as u32;
        let mut v = [T::Acc::ZERO; CACHE];
        if cached {
            unroll16(|k| {
                let j = lane + k as u32 * width;
                if j < len {
                    v[k] = (*x.add(j as usize)).acc();
                }
            });
        }
        Row {
            x,
            len,
            lane,
            width,
            cached,
            v,
        }
    }

    /// Folds `f(acc, element)` over this thread's elements.
    #[inline(always)]
    pub(super) unsafe fn fold(&self, init: T::Acc, f: impl Fn(T::Acc, T::Acc) -> T::Acc) -> T::Acc {
        let mut a = init;
        if self.cached {
            unroll16(|k| {
                if self.lane + k as u32 * self.width < self.len {
                    a = f(a, self.v[k]);
                }
            });
        } else {
            let mut j = self.lane;
            while j < self.len {
                a = f(a, (*self.x.add(j as usize)).acc());
                j += self.width;
            }
        }
        a
    }

    /// Folds `f(acc, element, index)` over this thread's elements.
    #[inline(always)]
    unsafe fn fold_at(&self, init: T::Acc, f: impl Fn(T::Acc, T::Acc, u32) -> T::Acc) -> T::Acc {
        let mut a = init;
        if self.cached {
            unroll16(|k| {
                let j = self.lane + k as u32 * self.width;
                if j < self.len {
                    a = f(a, self.v[k], j);
                }
            });
        } else {
            let mut j = self.lane;
            while j < self.len {
                a = f(a, (*self.x.add(j as usize)).acc(), j);
                j += self.width;
            }
        }
        a
    }

    /// Writes `f(element, index, slot)` for this thread's elements to the dense
    /// row `y` (`slot`: the element's register slot when cached, else 0).
    #[inline(always)]
    unsafe fn store(&self, y: *mut T, f: impl Fn(T::Acc, u32, usize) -> T::Acc) {
        if self.cached {
            unroll16(|k| {
                let j = self.lane + k as u32 * self.width;
                if j < self.len {
                    *y.add(j as usize) = T::from_acc(f(self.v[k], j, k));
                }
            });
        } else {
            let mut j = self.lane;
            while j < self.len {
                *y.add(j as usize) = T::from_acc(f((*self.x.add(j as usize)).acc(), j, 0));
                j += self.width;
            }
        }
    }
}

/// Softmax (or log-softmax) of the dense row `x` into `y`.
#[inline(always)]
unsafe fn softmax_row<T: FloatElem, G: Group>(g: &G, x: *const T, y: *mut T, len: u32, log: bool) {
    let row = Row::load(g, x, len);
    let m = g.all_reduce(row.fold(T::Acc::NEG_INF, max_nan), max_nan);
    let s = g.all_reduce(row.fold(T::Acc::ZERO, |a, v| a + (v - m).exp()), |a, b| a + b);
    if log {
        let ls = s.ln();
        row.store(y, |v, _, _| v - m - ls);
    } else {
        let inv = T::Acc::ONE / s;
        row.store(y, |v, _, _| (v - m).exp() * inv);
    }
}

/// Layer norm of the dense row `x` into `y`, with optional weight and bias.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn layer_norm_row<T: FloatElem, G: Group>(
    g: &G,
    x: *const T,
    y: *mut T,
    len: u32,
    w: *const T,
    b: *const T,
    flags: u32,
    eps: f64,
) {
    let row = Row::load(g, x, len);
    let n = T::Acc::from_u32(len);
    let mean = g.all_reduce(row.fold(T::Acc::ZERO, |a, v| a + v), |a, b| a + b) / n;
    let sq = g.all_reduce(
        row.fold(T::Acc::ZERO, |a, v| a + (v - mean) * (v - mean)),
        |a, b| a + b,
    );
    let inv = T::Acc::ONE / (sq / n + T::Acc::of_f64(eps)).sqrt();
    let (use_w, use_b) = (flags & 1 != 0, flags & 2 != 0);
    if !row.cached {
        row.store(y, |v, j, _| {
            let mut r = (v - mean) * inv;
            if use_w {
                r = r * (*w.add(j as usize)).acc();
            }
            if use_b {
                r = r + (*b.add(j as usize)).acc();
            }
            r
        });
        return;
    }
    // Weight and bias four slots at a time: the loads of a group issue
    // together ahead of its stores (a load after a store to `y` could not be
    // hoisted above it: the pointers may alias), and only eight registers
    // hold them (a whole row of them would cost occupancy).
    let (lane, width) = (row.lane, row.width);
    unroll4(|q| {
        let (mut wv, mut bv) = ([T::Acc::ONE; 4], [T::Acc::ZERO; 4]);
        unroll4(|i| {
            let j = lane + (q * 4 + i) as u32 * width;
            if j < len {
                if use_w {
                    wv[i] = (*w.add(j as usize)).acc();
                }
                if use_b {
                    bv[i] = (*b.add(j as usize)).acc();
                }
            }
        });
        unroll4(|i| {
            let j = lane + (q * 4 + i) as u32 * width;
            if j < len {
                let mut r = (row.v[q * 4 + i] - mean) * inv;
                if use_w {
                    r = r * wv[i];
                }
                if use_b {
                    r = r + bv[i];
                }
                *y.add(j as usize) = T::from_acc(r);
            }
        });
    });
}

/// Calls `f(a, b, index)` for this thread's elements of two rows of the same
/// length loaded by the same group (cached alike).
#[inline(always)]
unsafe fn for_pairs<T: FloatElem>(a: &Row<T>, b: &Row<T>, mut f: impl FnMut(T::Acc, T::Acc, u32)) {
    if a.cached {
        unroll16(|k| {
            let j = a.lane + k as u32 * a.width;
            if j < a.len {
                f(a.v[k], b.v[k], j);
            }
        });
    } else {
        let mut j = a.lane;
        while j < a.len {
            f((*a.x.add(j as usize)).acc(), (*b.x.add(j as usize)).acc(), j);
            j += a.width;
        }
    }
}

/// The input's gradient of layer norm for the dense row `x` and its output's
/// gradient `g`: with `x̂ = (x - mean) · rstd` and `a = g · w` (`w` optional,
/// flag 1), `gx = rstd · (a - mean(a) - x̂ · mean(a · x̂))`; with flag 2 also
/// `g · x̂` into `gxh` (the row's terms of the weight's gradient).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn layer_norm_backward_row<T: FloatElem, G: Group>(
    grp: &G,
    x: *const T,
    g: *const T,
    w: *const T,
    gx: *mut T,
    gxh: *mut T,
    len: u32,
    flags: u32,
    eps: f64,
) {
    let xr = Row::load(grp, x, len);
    let gr = Row::load(grp, g, len);
    let n = T::Acc::from_u32(len);
    let mean = grp.all_reduce(xr.fold(T::Acc::ZERO, |a, v| a + v), |a, b| a + b) / n;
    let sq = grp.all_reduce(
        xr.fold(T::Acc::ZERO, |a, v| a + (v - mean) * (v - mean)),
        |a, b| a + b,
    );
    let rstd = T::Acc::ONE / (sq / n + T::Acc::of_f64(eps)).sqrt();
    let use_w = flags & 1 != 0;
    let weight = |j: u32| {
        if use_w {
            (*w.add(j as usize)).acc()
        } else {
            T::Acc::ONE
        }
    };
    let (mut s1, mut s2) = (T::Acc::ZERO, T::Acc::ZERO);
    for_pairs(&xr, &gr, |xv, gv, j| {
        let a = gv * weight(j);
        s1 = s1 + a;
        s2 = s2 + a * ((xv - mean) * rstd);
    });
    let m1 = grp.all_reduce(s1, |a, b| a + b) / n;
    let m2 = grp.all_reduce(s2, |a, b| a + b) / n;
    let want_gxh = flags & 2 != 0;
    for_pairs(&xr, &gr, |xv, gv, j| {
        let xh = (xv - mean) * rstd;
        *gx.add(j as usize) = T::from_acc(rstd * (gv * weight(j) - m1 - xh * m2));
        if want_gxh {
            *gxh.add(j as usize) = T::from_acc(gv * xh);
        }
    });
}

/// Row `r` of a block of the blocked attention's scores `s` (unscaled,
/// dense, `h.keys` long): the weights `softmax(s · scale)` over the keys
/// the causal mask leaves, times the dropout's factors, into `w`, and the
/// row's log-sum-exp into `lse` (+inf, with zero weights, for a row with no
/// key left).
#[inline(always)]
unsafe fn attention_row<T: FloatElem, G: Group>(
    g: &G,
    s: *const T,
    w: *mut T,
    lse: *mut T,
    r: u32,
    h: &AttentionRows,
) {
    let len = h.keys;
    let row = Row::load(g, s, len);
    let limit = if h.causal != 0 { h.query(r) + 1 } else { len };
    let scale = T::Acc::of_f64(h.scale);
    let m = g.all_reduce(
        row.fold_at(
            T::Acc::NEG_INF,
            |a, v, j| if j < limit { max_nan(a, v * scale) } else { a },
        ),
        max_nan,
    );
    if m == T::Acc::NEG_INF {
        row.store(w, |_, _, _| T::Acc::ZERO);
        if g.lane() == 0 {
            *lse = T::from_acc(T::Acc::INF);
        }
        return;
    }
    let sum = g.all_reduce(
        row.fold_at(T::Acc::ZERO, |a, v, j| {
            if j < limit {
                a + (v * scale - m).exp()
            } else {
                a
            }
        }),
        |a, b| a + b,
    );
    let inv = T::Acc::ONE / sum;
    let keep = T::Acc::of_f64(h.keep_scale);
    row.store(w, |v, j, _| {
        if j >= limit {
            T::Acc::ZERO
        } else if h.dropout <= 0.0 {
            (v * scale - m).exp() * inv
        } else if h.dropout_kept(r, j) {
            (v * scale - m).exp() * inv * keep
        } else {
            T::Acc::ZERO
        }
    });
    if g.lane() == 0 {
        *lse = T::from_acc(m + sum.ln());
    }
}

/// The first row this thread's group owns and the stride to its next: one
/// row per warp (`per_warp`) or per block, grid-stride. (A plain loop in each
/// kernel, not a closure: a closure this large is not always inlined, and its
/// captures would then live in local memory.)
#[inline(always)]
pub(super) fn row_walk(per_warp: bool) -> (u32, u32) {
    let (width, blocks, _) = dims();
    if per_warp {
        (global_index() / 32, blocks * (width / 32))
    } else {
        (crate::device::block_xyz().0, blocks)
    }
}

macro_rules! dense_rows {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(softmax_rows, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                y: *mut $t,
                args: crate::args::SoftmaxRowsArgs,
            ) {
                let crate::args::SoftmaxRowsArgs {
                    rows,
                    len,
                    per_warp,
                    log,
                } = args;
                let (mut r, step) = row_walk(per_warp != 0);
                while r < rows {
                    let at = r as usize * len as usize;
                    if per_warp != 0 {
                        softmax_row(&Warp, x.add(at), y.add(at), len, log != 0);
                    } else {
                        softmax_row(&Block, x.add(at), y.add(at), len, log != 0);
                    }
                    r += step;
                }
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(layer_norm, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                w: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::LayerNormArgs,
            ) {
                let crate::args::LayerNormArgs {
                    rows,
                    norm,
                    per_warp,
                    flags,
                    eps,
                } = args;
                let (mut r, step) = row_walk(per_warp != 0);
                while r < rows {
                    let at = r as usize * norm as usize;
                    if per_warp != 0 {
                        layer_norm_row(&Warp, x.add(at), y.add(at), norm, w, b, flags, eps);
                    } else {
                        layer_norm_row(&Block, x.add(at), y.add(at), norm, w, b, flags, eps);
                    }
                    r += step;
                }
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(layer_norm_backward, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                g: *const $t,
                w: *const $t,
                gx: *mut $t,
                gxh: *mut $t,
                args: crate::args::LayerNormBackwardArgs,
            ) {
                let crate::args::LayerNormBackwardArgs {
                    rows,
                    norm,
                    per_warp,
                    flags,
                    eps,
                } = args;
                let (mut r, step) = row_walk(per_warp != 0);
                while r < rows {
                    let at = r as usize * norm as usize;
                    let (x, g, gx) = (x.add(at), g.add(at), gx.add(at));
                    let gxh = if flags & 2 != 0 { gxh.add(at) } else { gxh };
                    if per_warp != 0 {
                        layer_norm_backward_row(&Warp, x, g, w, gx, gxh, norm, flags, eps);
                    } else {
                        layer_norm_backward_row(&Block, x, g, w, gx, gxh, norm, flags, eps);
                    }
                    r += step;
                }
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(attention_rows, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                s: *const $t,
                w: *mut $t,
                lse: *mut $t,
                args: crate::args::AttentionRowsArgs,
            ) {
                let crate::args::AttentionRowsArgs { rows, per_warp, h } = args;
                let h = h.replayed();
                let (mut r, step) = row_walk(per_warp != 0);
                while r < rows {
                    let at = r as usize * h.keys as usize;
                    let (s, w, lse) = (s.add(at), w.add(at), lse.add(r as usize));
                    if per_warp != 0 {
                        attention_row(&Warp, s, w, lse, r, &h);
                    } else {
                        attention_row(&Block, s, w, lse, r, &h);
                    }
                    r += step;
                }
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(attention_rows_backward, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn kernel(
                s: *const $t,
                lse: *const $t,
                gw: *const $t,
                delta: *const $t,
                wd: *mut $t,
                ds: *mut $t,
                args: crate::args::AttentionRowsBackwardArgs,
            ) {
                let crate::args::AttentionRowsBackwardArgs { rows, h } = args;
                let h = h.replayed();
                let len = h.keys;
                let (scale, keep) = (
                    <$t as FloatElem>::Acc::of_f64(h.scale),
                    <$t as FloatElem>::Acc::of_f64(h.keep_scale),
                );
                crate::device::for_each_index(rows * len, |e| {
                    let (r, j) = (e / len, e % len);
                    let at = e as usize;
                    let masked = h.causal != 0 && j > h.query(r);
                    let p = if masked {
                        <$t as FloatElem>::Acc::ZERO
                    } else {
                        ((*s.add(at)).acc() * scale - (*lse.add(r as usize)).acc()).exp()
                    };
                    let f = if !h.dropout_kept(r, j) {
                        <$t as FloatElem>::Acc::ZERO
                    } else if h.dropout > 0.0 {
                        keep
                    } else {
                        <$t as FloatElem>::Acc::ONE
                    };
                    let d = (*delta.add(r as usize)).acc();
                    *wd.add(at) = <$t>::from_acc(p * f);
                    *ds.add(at) = <$t>::from_acc(p * ((*gw.add(at)).acc() * f - d));
                });
            }
        };
    };
}
for_float_types!(dense_rows!());

// ---- softmax over strided rows: one warp per row, f64 accumulation ------------------------

macro_rules! strided_softmax {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(softmax, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::SoftmaxArgs) {
                let crate::args::SoftmaxArgs {
                    rows,
                    ro,
                    len,
                    step,
                    log,
                } = args;
                let r = global_index() / 32;
                if r >= rows.n {
                    return;
                }
                let base = rows.offset(&ro, r) as usize;
                let at = |j: u32| (*x.add(base + (j * step) as usize)).to_f64();
                let mut m = f64::NEG_INFINITY;
                let mut nan = false;
                let mut j = lane_id();
                while j < len {
                    let v = at(j);
                    nan |= v != v;
                    m = if v > m { v } else { m };
                    j += 32;
                }
                let mut k = 16;
                while k > 0 {
                    let o = shfl_xor_f64(m, k);
                    m = if o > m { o } else { m };
                    nan |= crate::device::shfl_xor(nan as u32, k) != 0;
                    k >>= 1;
                }
                if nan {
                    m = f64::NAN;
                }
                let mut sum = 0.0f64;
                j = lane_id();
                while j < len {
                    sum += row_exp::<$t>(at(j) - m);
                    j += 32;
                }
                k = 16;
                while k > 0 {
                    sum += shfl_xor_f64(sum, k);
                    k >>= 1;
                }
                let ls = libm::log(sum);
                j = lane_id();
                let out = y.add(r as usize * len as usize);
                while j < len {
                    let v = at(j) - m;
                    *out.add(j as usize) = <$t>::from_f64(if log != 0 {
                        v - ls
                    } else {
                        row_exp::<$t>(v) / sum
                    });
                    j += 32;
                }
            }
        };
    };
}
/// `e^x` at the precision the row's dtype needs: double for f64, the fast
/// single-precision exp otherwise.
#[inline(always)]
fn row_exp<T>(x: f64) -> f64 {
    if core::mem::size_of::<T>() == 8 {
        libm::exp(x)
    } else {
        math::exp_f32(x as f32) as f64
    }
}

for_float_types!(strided_softmax!());
