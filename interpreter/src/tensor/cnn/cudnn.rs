//! Convolutions of CUDA tensors through cuDNN (`backend/conv.rs`), with
//! autograd: the input gradient is cuDNN's backward-data, the weight
//! gradient its backward-filter. Switched on by `KILN_CUDNN=1`; the
//! windows-and-GEMM path in [`super::conv`] serves every other case. Inputs
//! go as they are when packed NCHW or NHWC (channels-last views), weights and
//! outputs follow the input's memory order, so a channels-last network stays
//! channels-last without copies.

use crate::backend::conv::ConvSpec;
use crate::core::error::Result;
use crate::core::Layout;
use crate::tensor::autograd::{self, Saved};
use crate::tensor::Tensor;
use std::sync::OnceLock;

/// True when CUDA convolutions go through cuDNN (`KILN_CUDNN=1`).
pub(crate) fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("KILN_CUDNN").is_ok_and(|v| v == "1"))
}

/// The dims of an `ndim`-D `[N, C, *S]` tensor in memory order, outermost
/// first: NCHW, or channels last.
fn memory_order(ndim: usize, channels_last: bool) -> Vec<usize> {
    if !channels_last {
        return (0..ndim).collect();
    }
    let mut order = vec![0];
    order.extend(2..ndim);
    order.push(1);
    order
}

/// The dense layout of `shape` in that memory order.
fn packed_layout(shape: &[usize], channels_last: bool) -> Layout {
    let order = memory_order(shape.len(), channels_last);
    let mut strides = vec![0; shape.len()];
    let mut step = 1;
    for &d in order.iter().rev() {
        strides[d] = step;
        step *= shape[d];
    }
    Layout::from_parts(shape.to_vec(), strides, 0)
}

/// True when `t` is dense in that memory order (size-1 dims aside).
fn is_packed(t: &Tensor, channels_last: bool) -> bool {
    let want = packed_layout(t.shape(), channels_last);
    t.layout().offset() == 0
        && t.shape()
            .iter()
            .zip(t.layout().strides().iter().zip(want.strides()))
            .all(|(&n, (&a, &b))| n == 1 || a == b)
}

/// `t` dense in that memory order (itself when it is).
fn packed(t: &Tensor, channels_last: bool) -> Result<Tensor> {
    if is_packed(t, channels_last) {
        return Ok(t.clone());
    }
    let order: Vec<i64> = memory_order(t.ndim(), channels_last)
        .iter()
        .map(|&d| d as i64)
        .collect();
    let mut back = vec![0i64; order.len()];
    for (i, &d) in order.iter().enumerate() {
        back[d as usize] = i as i64;
    }
    t.permute(&order)?.contiguous()?.permute(&back)
}

/// A tensor of `shape` over a new storage laid out as `packed_layout`.
fn wrap(
    op: &'static str,
    s: crate::backend::Storage,
    shape: &[usize],
    channels_last: bool,
) -> Result<Tensor> {
    let order = memory_order(shape.len(), channels_last);
    let mem_shape: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
    let mut back = vec![0i64; order.len()];
    for (i, &d) in order.iter().enumerate() {
        back[d] = i as i64;
    }
    Tensor::from_storage(op, s, &mem_shape)?.permute(&back)
}

/// `conv(x, w)` of batched `x [N, C, *S]` through cuDNN, `spec`'s padding
/// symmetric; `out` the output's spatial size.
pub(crate) fn conv(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    spec: &ConvSpec,
    out: &[usize],
) -> Result<Tensor> {
    let channels_last = x.ndim() > 3 && !x.is_contiguous() && is_packed(x, true);
    let (xp, wp) = (packed(x, channels_last)?, packed(w, channels_last)?);
    let mut y_shape = vec![x.shape()[0], w.shape()[0]];
    y_shape.extend_from_slice(out);
    let y = autograd::forward(|| -> Result<Tensor> {
        let ly = packed_layout(&y_shape, channels_last);
        let s = xp
            .storage()
            .conv_forward(xp.layout(), &wp.storage(), wp.layout(), &ly, spec)?;
        wrap(op, s, &y_shape, channels_last)
    })?;
    if !autograd::needs_grad(&[x, w]) {
        return Ok(y);
    }
    let (xs, ws, spec) = (Saved::new(&xp), Saved::new(&wp), spec.clone());
    Ok(autograd::record(op, &[x, w], y, move |g, needs| {
        let (x, w) = (xs.get(op)?, ws.get(op)?);
        let g = packed(g, channels_last)?;
        let gx = if needs[0] {
            let lx = packed_layout(x.shape(), channels_last);
            let s = g
                .storage()
                .conv_backward_data(g.layout(), &w.storage(), w.layout(), &lx, &spec)?;
            Some(wrap(op, s, x.shape(), channels_last)?)
        } else {
            None
        };
        let gw = if needs[1] {
            let lw = packed_layout(w.shape(), channels_last);
            let s = x
                .storage()
                .conv_backward_filter(x.layout(), &g.storage(), g.layout(), &lw, &spec)?;
            Some(wrap(op, s, w.shape(), channels_last)?)
        } else {
            None
        };
        Ok(vec![gx, gw])
    }))
}
