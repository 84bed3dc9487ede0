//! The multi-tensor steps: SGD and Adam/AdamW over every parameter at
//! once (one launch per 24 CUDA parameters of a dtype, PyTorch's
//! `foreach`/`fused=True`), with a step count that may live on the device
//! so that a step recorded in a CUDA graph counts on when replayed.

use super::{adam_params, check_operands, sgd_buffer, sgd_params, AdamOptions, SgdOptions};
use crate::backend::{AdamItem, SgdItem, Storage};
use crate::core::error::{Error, Result};
use crate::tensor::autograd;
use crate::tensor::locks::{lock_ordered, Access};
use crate::tensor::{DType, Device, Tensor};
/// One SGD step in place over every parameter of `params`, with its
/// gradient and (with momentum) buffer at the same index: the same update
/// as [`Tensor::sgd_step_`] on each, in one launch per 24 CUDA parameters
/// of a dtype. Every operand is checked before anything is updated.
///
/// With a step `count` (a one-element i64 tensor on the parameters' device,
/// counted from 1) the first step is decided by its value instead of
/// `o.init_buffer`; on the GPU the kernels read it there, so a step
/// recorded in a CUDA graph stays right when replayed.
pub fn sgd_step_multi_(
    params: &[Tensor],
    grads: &[Tensor],
    bufs: &[Option<Tensor>],
    o: &SgdOptions,
    count: Option<&Tensor>,
) -> Result<()> {
    const OP: &str = "sgd_step_multi_";
    let n = params.len();
    if grads.len() != n || (o.momentum != 0.0 && bufs.len() != n) {
        return Err(Error::invalid(
            OP,
            format!(
                "needs one gradient (and with momentum one buffer) per parameter: {n} parameters, {} gradients, {} buffers",
                grads.len(),
                bufs.len()
            ),
        ));
    }
    let (o, count) = match count {
        None => (*o, None),
        Some(t) => match step_count(OP, params, StepCount::Tensor(t))? {
            Counted::Host(step) => (
                SgdOptions {
                    init_buffer: step == 1,
                    ..*o
                },
                None,
            ),
            Counted::Device(c) => (*o, Some(c)),
        },
    };
    let o = &o;
    let h = sgd_params(OP, o)?;
    let mut reqs = Vec::with_capacity(3 * n);
    let mut used = Vec::with_capacity(n);
    for i in 0..n {
        let buf = sgd_buffer(OP, o, bufs.get(i).and_then(|b| b.as_ref()))?;
        let states: Vec<(&str, &Tensor)> = buf.iter().map(|b| ("momentum buffer", *b)).collect();
        check_operands(OP, &params[i], &grads[i], &states)?;
        reqs.extend([(&params[i], Access::Write), (&grads[i], Access::Read)]);
        reqs.extend(buf.map(|b| (b, Access::Write)));
        used.push(buf);
    }
    autograd::no_grad(|| {
        let mut locks = lock_ordered(OP, &reqs)?;
        let mut rest = &mut locks[..];
        let mut items = Vec::with_capacity(n);
        for (i, buf) in used.iter().enumerate() {
            let take = if buf.is_some() { 3 } else { 2 };
            let (mine, tail) = rest.split_at_mut(take);
            rest = tail;
            let (pg, b) = mine.split_at_mut(2);
            let [p, g] = pg else {
                return Err(Error::invalid(OP, "internal: two locks per parameter expected"));
            };
            let buf = match (b.first_mut(), buf) {
                (Some(l), Some(t)) => Some((l.get_mut(OP)?, t.layout().offset())),
                _ => None,
            };
            items.push(SgdItem {
                p: (p.get_mut(OP)?, params[i].layout().offset()),
                g: (g.get(), grads[i].layout().offset()),
                buf,
                n: params[i].numel(),
            });
        }
        with_count(count.as_ref(), |count| {
            Storage::sgd_step_multi(&mut items, &h, count)
        })
    })
}

/// The step count of a multi-tensor step (counted from 1).
#[derive(Clone, Copy, Debug)]
pub enum StepCount<'a> {
    /// A number the host knows.
    Host(i64),
    /// A one-element integer tensor on the parameters' device: read on the
    /// host for CPU parameters, by the kernels on the GPU (so that a step
    /// recorded in a CUDA graph counts on when it is replayed).
    Tensor(&'a Tensor),
}

/// A step count resolved for the backend.
enum Counted {
    Host(i64),
    /// A one-element i64 tensor on the GPU.
    Device(Tensor),
}

/// Checks `step` against the parameters' device and resolves it.
fn step_count(op: &'static str, params: &[Tensor], step: StepCount<'_>) -> Result<Counted> {
    let t = match step {
        StepCount::Host(s) => return Ok(Counted::Host(s)),
        StepCount::Tensor(t) => t,
    };
    if t.numel() != 1 || !t.dtype().is_int() {
        return Err(Error::invalid(
            op,
            format!(
                "the step count must be a one-element integer tensor, got {:?} {}",
                t.shape(),
                t.dtype()
            ),
        ));
    }
    if let Some(p) = params.iter().find(|p| p.device() != t.device()) {
        return Err(Error::invalid(
            op,
            format!(
                "the step count is on {} and a parameter on {}",
                t.device(),
                p.device()
            ),
        ));
    }
    match t.device() {
        Device::Cpu => Ok(Counted::Host(t.item()?.to_i64())),
        _ => Ok(Counted::Device(if t.dtype() == DType::I64 {
            t.clone()
        } else {
            t.to_dtype(DType::I64)?
        })),
    }
}

/// One Adam (or AdamW) step in place over every parameter of `params`,
/// with its gradient and moments at the same index: the same update as
/// [`Tensor::adam_step_`] on each, in one launch per 24 CUDA parameters of
/// a dtype (PyTorch's `fused=True`). Every operand is checked before
/// anything is updated.
pub fn adam_step_multi_(
    params: &[Tensor],
    grads: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    step: StepCount<'_>,
    o: &AdamOptions,
) -> Result<()> {
    const OP: &str = "adam_step_multi_";
    let n = params.len();
    if grads.len() != n || m.len() != n || v.len() != n {
        return Err(Error::invalid(
            OP,
            format!(
                "needs one gradient and two moments per parameter: {n} parameters, {} gradients, {} and {} moments",
                grads.len(),
                m.len(),
                v.len()
            ),
        ));
    }
    let (h, count) = match step_count(OP, params, step)? {
        Counted::Host(step) => (adam_params(OP, o, step)?, None),
        // the hyperparameters are checked at step 1; the kernels take the count
        Counted::Device(c) => (adam_params(OP, o, 1)?, Some(c)),
    };
    let mut reqs = Vec::with_capacity(4 * n);
    for i in 0..n {
        check_operands(
            OP,
            &params[i],
            &grads[i],
            &[("first moment", &m[i]), ("second moment", &v[i])],
        )?;
        reqs.extend([
            (&params[i], Access::Write),
            (&grads[i], Access::Read),
            (&m[i], Access::Write),
            (&v[i], Access::Write),
        ]);
    }
    autograd::no_grad(|| {
        let mut locks = lock_ordered(OP, &reqs)?;
        let mut items = Vec::with_capacity(n);
        for (i, chunk) in locks.chunks_mut(4).enumerate() {
            let [p, g, ms, vs] = chunk else {
                return Err(Error::invalid(OP, "internal: four locks per parameter expected"));
            };
            items.push(AdamItem {
                p: (p.get_mut(OP)?, params[i].layout().offset()),
                g: (g.get(), grads[i].layout().offset()),
                m: (ms.get_mut(OP)?, m[i].layout().offset()),
                v: (vs.get_mut(OP)?, v[i].layout().offset()),
                n: params[i].numel(),
            });
        }
        with_count(count.as_ref(), |count| {
            Storage::adam_step_multi(&mut items, &h, count)
        })
    })
}

/// Runs `f` with the device step count's storage and offset, if there is one.
fn with_count<R>(count: Option<&Tensor>, f: impl FnOnce(Option<(&Storage, usize)>) -> R) -> R {
    let storage = count.map(|c| c.storage());
    f(storage
        .as_deref()
        .zip(count)
        .map(|(s, c)| (s, c.layout().offset())))
}
