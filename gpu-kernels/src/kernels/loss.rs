//! Cross-entropy from logits: log-softmax and the negative log-likelihood of
//! the labelled class in one pass over each dense row (a warp or a block per
//! row, the row cached in registers as in `rows`), accumulating in f32 (f64
//! for f64). The forward writes each row's loss and log-sum-exp; the backward
//! turns the saved log-sum-exp into `(softmax - target) * grad` in one read
//! and one write of each element.
//!
//! A label outside `[0, classes)` that is not `ignore_index` is never used as
//! an index: its row's loss and gradient are NaN (the host cannot check the
//! labels without waiting for the GPU).

use super::accum::{max_nan, Acc, FloatElem};
use super::rows::{row_walk, Block, Group, Row, Warp};
use crate::elem::{BF16, F16};
use crate::params::CrossEntropyParams;

/// Whether a row's label is ignored, valid, or out of range.
#[inline(always)]
fn label_state(label: i64, h: &CrossEntropyParams) -> (bool, bool) {
    let ignored = label == h.ignore_index;
    let valid = label >= 0 && label < h.classes as i64;
    (ignored, valid)
}

/// The loss and log-sum-exp of the dense row `x` with label `label`.
#[inline(always)]
unsafe fn forward_row<T: FloatElem, G: Group>(
    g: &G,
    x: *const T,
    label: i64,
    h: &CrossEntropyParams,
) -> (T::Acc, T::Acc) {
    let len = h.classes;
    let row = Row::load(g, x, len);
    let m = g.all_reduce(row.fold(T::Acc::NEG_INF, max_nan), max_nan);
    let s = g.all_reduce(row.fold(T::Acc::ZERO, |a, v| a + (v - m).exp()), |a, b| a + b);
    let lse = m + s.ln();
    let eps = T::Acc::of_f64(h.smoothing);
    // the smoothing term: the mean over classes of -log p = lse - mean(x)
    let smooth = if h.smoothing != 0.0 {
        let sx = g.all_reduce(row.fold(T::Acc::ZERO, |a, v| a + v), |a, b| a + b);
        lse - sx / T::Acc::from_u32(len)
    } else {
        T::Acc::ZERO
    };
    let (ignored, valid) = label_state(label, h);
    let loss = if ignored {
        T::Acc::ZERO
    } else if !valid {
        T::Acc::NAN
    } else {
        let picked = (*x.add(label as usize)).acc();
        (T::Acc::ONE - eps) * (lse - picked) + eps * smooth
    };
    (loss, lse)
}

/// `gx = (softmax(x) - target) * grad` for the dense row `x`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn backward_row<T: FloatElem, G: Group>(
    g: &G,
    x: *const T,
    gx: *mut T,
    label: i64,
    lse: T::Acc,
    grad: T::Acc,
    h: &CrossEntropyParams,
) {
    let len = h.classes;
    let eps = T::Acc::of_f64(h.smoothing);
    let off = eps / T::Acc::from_u32(len);
    let on = T::Acc::ONE - eps + off;
    let (ignored, valid) = label_state(label, h);
    let (lane, width) = (g.lane(), g.width());
    let mut j = lane;
    while j < len {
        let r = if ignored {
            T::Acc::ZERO
        } else if !valid {
            T::Acc::NAN
        } else {
            let p = ((*x.add(j as usize)).acc() - lse).exp();
            let t = if j as i64 == label { on } else { off };
            (p - t) * grad
        };
        *gx.add(j as usize) = T::from_acc(r);
        j += width;
    }
}

macro_rules! cross_entropy {
    ($tn:ident, $t:ty) => {
        const _: () = {
            type A = <$t as FloatElem>::Acc;

            #[export_name = crate::kernel_name!(cross_entropy, $tn)]
            unsafe extern "ptx-kernel" fn forward(
                x: *const $t,
                labels: *const i64,
                loss: *mut A,
                lse: *mut A,
                args: crate::args::CrossEntropyArgs,
            ) {
                let crate::args::CrossEntropyArgs { h } = args;
                let per_warp = h.per_warp != 0;
                let (mut r, step) = row_walk(per_warp);
                while r < h.rows {
                    let at = r as usize * h.classes as usize;
                    let label = *labels.add(r as usize);
                    let (l, s, lane) = if per_warp {
                        let (l, s) = forward_row(&Warp, x.add(at), label, &h);
                        (l, s, Warp.lane())
                    } else {
                        let (l, s) = forward_row(&Block, x.add(at), label, &h);
                        (l, s, Block.lane())
                    };
                    if lane == 0 {
                        *loss.add(r as usize) = l;
                        *lse.add(r as usize) = s;
                    }
                    r += step;
                }
            }

            #[export_name = crate::kernel_name!(cross_entropy_backward, $tn)]
            unsafe extern "ptx-kernel" fn backward(
                x: *const $t,
                labels: *const i64,
                lse: *const A,
                grad: *const A,
                gx: *mut $t,
                args: crate::args::CrossEntropyBackwardArgs,
            ) {
                let crate::args::CrossEntropyBackwardArgs { h } = args;
                let per_warp = h.per_warp != 0;
                let (mut r, step) = row_walk(per_warp);
                while r < h.rows {
                    let at = r as usize * h.classes as usize;
                    let label = *labels.add(r as usize);
                    let s = *lse.add(r as usize);
                    let gr = *grad.add(r as usize * h.grad_stride as usize);
                    if per_warp {
                        backward_row(&Warp, x.add(at), gx.add(at), label, s, gr, &h);
                    } else {
                        backward_row(&Block, x.add(at), gx.add(at), label, s, gr, &h);
                    }
                    r += step;
                }
            }
        };
    };
}
for_float_types!(cross_entropy!());
