//! The gradient passes of `clip_grad_norm_` over every gradient at once on
//! CUDA (`backend/multi_tensor.rs`): the joint 2-norm or ∞-norm from one
//! launch per 24 gradients of a dtype (each block's partial sum of squares
//! or largest magnitude, then one reduction), and the scaling by the clip
//! coefficient in as few launches, where the composed path takes several
//! launches per gradient.

use super::locks::{lock_ordered, Access};
use super::{DType, Tensor};
use crate::backend::Storage;
use crate::core::error::Result;
use crate::core::op::ReduceOp;
use crate::core::Device;

const OP: &str = "clip_grad_norm_";

/// Whether the fused passes take these gradients and this norm: CUDA,
/// dense, f32/f16/bf16 (the composed path, as the CPU, computes the norm of
/// f64 gradients), and the 2-norm or the ∞-norm.
pub(super) fn applies(grads: &[Tensor], norm_type: f64) -> bool {
    (norm_type == 2.0 || norm_type == f64::INFINITY)
        && grads.iter().all(|g| {
            matches!(g.device(), Device::Cuda(_))
                && super::optim::dense(g)
                && matches!(g.dtype(), DType::F32 | DType::F16 | DType::BF16)
        })
}

/// The joint `norm_type`-norm (2 or ∞) of `grads`, a 0-dim f32 tensor.
pub(super) fn grad_norm(grads: &[Tensor], norm_type: f64) -> Result<Tensor> {
    let inf = norm_type.is_infinite();
    let reqs: Vec<(&Tensor, Access)> = grads.iter().map(|g| (g, Access::Read)).collect();
    let partials = {
        let locks = lock_ordered(OP, &reqs)?;
        let runs: Vec<(&Storage, usize, usize)> = locks
            .iter()
            .zip(grads)
            .map(|(l, g)| (l.get(), g.layout().offset(), g.numel()))
            .collect();
        Storage::norm_multi(&runs, inf)?
    };
    let op = if inf { ReduceOp::Max } else { ReduceOp::Sum };
    let mut parts = vec![];
    for p in partials {
        let n = p.len();
        let t = Tensor::from_storage(OP, p, &[n])?.to_dtype(DType::F32)?;
        parts.push(t.reduce(op, None, false)?.reshape(&[1])?);
    }
    let device = grads[0].device();
    let total = match parts.len() {
        0 => return Tensor::zeros(&[], Some(DType::F32), device),
        1 => parts.remove(0).reshape(&[])?,
        _ => Tensor::cat(&parts, 0)?.reduce(op, None, false)?,
    };
    if inf {
        Ok(total)
    } else {
        total.sqrt()
    }
}

/// Every gradient times the 0-dim `coef`, in place.
pub(super) fn scale(grads: &[Tensor], coef: &Tensor) -> Result<()> {
    let coef = coef.to_dtype(DType::F32)?.dense()?;
    let reqs: Vec<(&Tensor, Access)> = grads.iter().map(|g| (g, Access::Write)).collect();
    let mut locks = lock_ordered(OP, &reqs)?;
    let mut runs = vec![];
    for (l, g) in locks.iter_mut().zip(grads) {
        runs.push((l.get_mut(OP)?, g.layout().offset(), g.numel()));
    }
    let c = coef.storage();
    Storage::scale_multi(&mut runs, &c)
}
