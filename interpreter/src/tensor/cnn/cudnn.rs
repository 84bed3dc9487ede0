//! Convolutions of CUDA tensors through cuDNN (`backend/conv.rs`), with
//! autograd: the input gradient is cuDNN's backward-data, the weight
//! gradient its backward-filter; a transposed convolution is the
//! backward-data direction, differentiated by the other two. On by default (`KILN_CUDNN=0` in the
//! environment or `cuda::set_cudnn_enabled(false)` switches it off, as
//! `torch.backends.cudnn.enabled`); the windows-and-GEMM path in
//! [`super::conv`] serves every other case. Inputs go as they are when
//! packed NCHW or NHWC (channels-last views), weights and outputs follow the
//! input's memory order, so a channels-last network stays channels-last
//! without copies; a geometry cuDNN has no algorithm for in channels-last
//! order is run again in NCHW order.

use super::norm::RunningStats;
use crate::backend::conv::ConvSpec;
use crate::backend::cuda::cudnn::NO_ALGORITHM;
use crate::backend::pool::PoolSpec;
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout, Scalar};
use crate::tensor::autograd::{self, Saved};
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

fn enabled_flag() -> &'static AtomicBool {
    static ON: OnceLock<AtomicBool> = OnceLock::new();
    ON.get_or_init(|| AtomicBool::new(std::env::var("KILN_CUDNN").map_or(true, |v| v != "0")))
}

/// True when CUDA convolutions go through cuDNN (the default).
pub fn enabled() -> bool {
    enabled_flag().load(Ordering::Relaxed)
}

/// Switches cuDNN convolutions on or off for the whole process; returns the
/// previous setting.
pub fn set_enabled(on: bool) -> bool {
    enabled_flag().swap(on, Ordering::Relaxed)
}

/// True for the error of a geometry cuDNN has no algorithm for.
fn no_algorithm(e: &Error) -> bool {
    matches!(e, Error::InvalidArgument { msg, .. } if msg == NO_ALGORITHM)
}

/// `f(channels_last)`, run again in NCHW order when cuDNN has no algorithm
/// for the channels-last geometry.
fn in_order<T>(channels_last: bool, f: impl Fn(bool) -> Result<T>) -> Result<T> {
    match f(channels_last) {
        Err(e) if channels_last && no_algorithm(&e) => f(false),
        r => r,
    }
}

/// The dims of an `ndim`-D `[N, C, *S]` tensor in memory order, outermost
/// first: NCHW, or channels last.
fn memory_order(ndim: usize, channels_last: bool) -> Vec<usize> {
    if channels_last {
        Layout::channels_last_order(ndim)
    } else {
        (0..ndim).collect()
    }
}

/// The dense layout of `shape` in that memory order.
fn packed_layout(shape: &[usize], channels_last: bool) -> Layout {
    Layout::dense_in_order(shape, &memory_order(shape.len(), channels_last))
}

/// `t` dense in that memory order (itself when it is).
fn packed(t: &Tensor, channels_last: bool) -> Result<Tensor> {
    t.dense_in_order(&memory_order(t.ndim(), channels_last))
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

/// A direction of a convolution as cuDNN runs it.
#[derive(Clone, Copy)]
enum Pass {
    /// `y` from `(x, w)`.
    Forward,
    /// `dx` from `(dy, w)`.
    BackwardData,
    /// `dw` from `(x, dy)`.
    BackwardFilter,
}

/// `pass` over `(a, b)` giving a tensor of `shape`, in memory order `cl`
/// (rerun in NCHW order when cuDNN has no algorithm for channels last).
fn run(
    op: &'static str,
    pass: Pass,
    (a, b): (&Tensor, &Tensor),
    shape: &[usize],
    spec: &ConvSpec,
    cl: bool,
) -> Result<Tensor> {
    in_order(cl, |cl| {
        let (a, b) = (packed(a, cl)?, packed(b, cl)?);
        let l = packed_layout(shape, cl);
        let (sa, sb) = (a.storage(), b.storage());
        let s = match pass {
            Pass::Forward => sa.conv_forward(a.layout(), &sb, b.layout(), &l, spec)?,
            Pass::BackwardData => sa.conv_backward_data(a.layout(), &sb, b.layout(), &l, spec)?,
            Pass::BackwardFilter => sa.conv_backward_filter(a.layout(), &sb, b.layout(), &l, spec)?,
        };
        wrap(op, s, shape, cl)
    })
}

/// A convolution (`transposed`: a transposed one, whose forward is the
/// convolution's backward-data) of batched `x [N, C, *S]` through cuDNN,
/// output `y_shape`; the input gradient is the other of forward and
/// backward-data, the weight gradient backward-filter.
fn convolve(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    spec: &ConvSpec,
    y_shape: Vec<usize>,
    transposed: bool,
) -> Result<Tensor> {
    let cl = order_of(x);
    let (forward, input_grad) = if transposed {
        (Pass::BackwardData, Pass::Forward)
    } else {
        (Pass::Forward, Pass::BackwardData)
    };
    let y = autograd::forward(|| run(op, forward, (x, w), &y_shape, spec, cl))?;
    if !autograd::needs_grad(&[x, w]) {
        return Ok(y);
    }
    let (xs, ws, spec) = (Saved::new(x), Saved::new(w), spec.clone());
    Ok(autograd::record(op, &[x, w], y, move |g, needs| {
        let (x, w) = (xs.get(op)?, ws.get(op)?);
        let gx = needs[0]
            .then(|| run(op, input_grad, (g, w), x.shape(), &spec, cl))
            .transpose()?;
        // backward-filter takes the convolution's input first: x, or g when transposed
        let pair = if transposed { (g, x) } else { (x, g) };
        let gw = needs[1]
            .then(|| run(op, Pass::BackwardFilter, pair, w.shape(), &spec, cl))
            .transpose()?;
        Ok(vec![gx, gw])
    }))
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
    let mut y_shape = vec![x.shape()[0], w.shape()[0]];
    y_shape.extend_from_slice(out);
    convolve(op, x, w, spec, y_shape, false)
}

/// `conv_transpose(x, w)` of batched `x [N, C, *S]` through cuDNN: the
/// convolution's backward-data, `out` the output's spatial size; its
/// gradients are the forward convolution (input) and backward-filter
/// (weight).
pub(crate) fn conv_transpose(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    spec: &ConvSpec,
    out: &[usize],
) -> Result<Tensor> {
    let mut y_shape = vec![x.shape()[0], w.shape()[1] * spec.groups];
    y_shape.extend_from_slice(out);
    convolve(op, x, w, spec, y_shape, true)
}

/// The memory order cuDNN gets `x` in: channels last when `x` already is.
fn order_of(x: &Tensor) -> bool {
    x.ndim() > 3
        && !x.is_contiguous()
        && x.layout()
            .is_dense_in_order(&Layout::channels_last_order(x.ndim()))
}

/// `pool(x)` of batched `x [N, C, *S]` through cuDNN, `out` the output's
/// spatial size (cuDNN's floor-mode size for `spec`).
pub(crate) fn pool(op: &'static str, x: &Tensor, spec: &PoolSpec, out: &[usize]) -> Result<Tensor> {
    let cl = order_of(x);
    let xp = packed(x, cl)?;
    let mut y_shape = x.shape()[..2].to_vec();
    y_shape.extend_from_slice(out);
    let y = autograd::forward(|| {
        let ly = packed_layout(&y_shape, cl);
        let s = xp.storage().pool_forward(xp.layout(), &ly, spec)?;
        wrap(op, s, &y_shape, cl)
    })?;
    if !autograd::needs_grad(&[x]) {
        return Ok(y);
    }
    let (xs, ys, spec) = (Saved::new(&xp), Saved::new(&y.detach()), spec.clone());
    Ok(autograd::record(op, &[x], y, move |g, _| {
        let (x, y) = (xs.get(op)?, ys.get(op)?);
        let g = packed(g, cl)?;
        let lx = packed_layout(x.shape(), cl);
        let s = g
            .storage()
            .pool_backward(g.layout(), &y.storage(), &x.storage(), &lx, &spec)?;
        Ok(vec![Some(wrap(op, s, x.shape(), cl)?)])
    }))
}

/// A per-channel tensor as cuDNN takes it: dense `[C]` of `dtype`.
fn param(
    t: Option<&Tensor>,
    c: usize,
    dtype: DType,
    fill: f64,
    device: crate::tensor::Device,
) -> Result<Tensor> {
    match t {
        Some(t) => t.detach().to_dtype(dtype)?.dense(),
        None => Tensor::full(&[c], Scalar::Float(fill), Some(dtype), device),
    }
}

/// True when a running statistic can be updated by cuDNN in place: dense,
/// of the parameter dtype.
fn updatable(t: Option<&Tensor>, dtype: DType) -> bool {
    t.is_none_or(|t| t.dtype() == dtype && t.is_contiguous() && t.device().is_cuda())
}

/// Batch norm of a CUDA `x [N, C, *]` while training, through cuDNN; `None`
/// when cuDNN does not take this case (the caller composes it then).
pub(crate) fn batch_norm_train(
    x: &Tensor,
    running: &RunningStats<'_>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    momentum: f64,
    eps: f64,
) -> Result<Option<Tensor>> {
    const OP: &str = "batch_norm";
    let pdt = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    // cuDNN's smallest epsilon is 1e-5; both running statistics or neither
    if !enabled()
        || eps < 1e-5
        || x.ndim() > 5
        || running.mean.is_some() != running.var.is_some()
        || !updatable(running.mean, pdt)
        || !updatable(running.var, pdt)
    {
        return Ok(None);
    }
    let shape = x.shape().to_vec();
    // [N, C] is normalised as [N, C, 1]
    let x3 = if x.ndim() == 2 { x.unsqueeze(2)? } else { x.clone() };
    let cl = order_of(&x3);
    let xp = packed(&x3, cl)?;
    let c = shape[1];
    let (w, b) = (
        param(weight, c, pdt, 1.0, x.device())?,
        param(bias, c, pdt, 0.0, x.device())?,
    );
    let (y, saved) = autograd::forward(|| -> Result<(Tensor, [Tensor; 2])> {
        let ly = packed_layout(xp.shape(), cl);
        let (rm, rv) = (
            running.mean.map(|t| t.storage()),
            running.var.map(|t| t.storage()),
        );
        let stats = match (&rm, &rv, running.mean, running.var) {
            (Some(m), Some(v), Some(tm), Some(tv)) => {
                Some([(&**m, tm.layout().offset()), (&**v, tv.layout().offset())])
            }
            _ => None,
        };
        let [y, mean, inv_std] = xp.storage().batch_norm_train(
            xp.layout(),
            &ly,
            &w.storage(),
            &b.storage(),
            stats,
            momentum,
            eps,
        )?;
        let y = wrap(OP, y, xp.shape(), cl)?;
        Ok((
            y,
            [
                Tensor::from_storage(OP, mean, &[c])?,
                Tensor::from_storage(OP, inv_std, &[c])?,
            ],
        ))
    })?;
    let y = y.reshape(&shape.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
    let mut inputs = vec![x];
    inputs.extend(weight);
    inputs.extend(bias);
    if !autograd::needs_grad(&inputs) {
        return Ok(Some(y));
    }
    let (xs, ws) = (Saved::new(&xp), Saved::new(&w));
    let (has_w, has_b) = (weight.is_some(), bias.is_some());
    let (wdt, bdt) = (weight.map(|t| t.dtype()), bias.map(|t| t.dtype()));
    Ok(Some(autograd::record(OP, &inputs, y, move |g, needs| {
        let (x, w) = (xs.get(OP)?, ws.get(OP)?);
        let g = packed(&g.reshape(&dims_of(x.shape()))?, cl)?;
        let [dx, dw, db] = x.storage().batch_norm_backward(
            x.layout(),
            &g.storage(),
            g.layout(),
            &w.storage(),
            [&saved[0].storage(), &saved[1].storage()],
            eps,
        )?;
        let dx = wrap(OP, dx, x.shape(), cl)?.reshape(&dims_of(&shape))?;
        let mut grads = vec![needs[0].then_some(dx)];
        if let (true, Some(d)) = (has_w, wdt) {
            grads.push(Some(Tensor::from_storage(OP, dw, &[c])?.to_dtype(d)?));
        }
        if let (true, Some(d)) = (has_b, bdt) {
            grads.push(Some(Tensor::from_storage(OP, db, &[c])?.to_dtype(d)?));
        }
        Ok(grads)
    })))
}

fn dims_of(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&v| v as i64).collect()
}
