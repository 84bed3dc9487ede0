//! Fused optimizer steps, in place: SGD with momentum, Adam and AdamW with
//! PyTorch's formulas (`torch.optim.SGD`, `Adam`, `AdamW`, single-tensor
//! form; no amsgrad). Each step is one backend op per parameter (one kernel
//! launch on CUDA, one loop on the CPU), not a chain of elementwise ops.
//!
//! Parameters are f32, f64, f16 or bf16 and dense (contiguous or channels
//! last); the gradient has the parameter's shape, dtype and strides; optimizer state (momentum buffer,
//! moments) is kept in [`state_dtype`] (f32 for half parameters). Steps run
//! with grad mode off; every tensor written is bumped in version, so a saved
//! tensor of a pending backward notices the update.

use super::autograd;
use super::locks::{lock_ordered, Access};
use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use kiln_kernels::params::{AdamParams, SgdParams};
use kiln_kernels::params::{SGD_INIT_BUFFER, SGD_MOMENTUM, SGD_NESTEROV, SGD_WEIGHT_DECAY};

mod multi;
pub use multi::{adam_step_multi_, sgd_step_multi_, StepCount};

/// True when `t`'s elements fill one run of its storage in a memory order
/// the steps take: contiguous, or channels last.
pub(super) fn dense(t: &Tensor) -> bool {
    t.is_contiguous() || super::elementwise::channels_last_perm(t).is_some()
}

/// The dtype of optimizer state for parameters of `param`: f64 for f64, else f32.
pub fn state_dtype(param: DType) -> DType {
    if param == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Hyperparameters of [`Tensor::sgd_step_`] (PyTorch's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0: plain SGD, no buffer).
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum (needs momentum and zero dampening).
    pub nesterov: bool,
    /// The first step: the buffer is set to the update instead of decayed into
    /// (PyTorch's `momentum_buffer is None`).
    pub init_buffer: bool,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            init_buffer: false,
        }
    }
}

/// Hyperparameters of [`Tensor::adam_step_`] (PyTorch's Adam defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first and second moments.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty (Adam) or decoupled weight decay (AdamW).
    pub weight_decay: f64,
    /// AdamW: decay the parameter by `1 - lr * weight_decay` instead of adding
    /// `weight_decay * param` to the gradient.
    pub decoupled: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
        }
    }
}

fn check_hyper(op: &'static str, what: &str, v: f64, ok: bool) -> Result<()> {
    if ok && v.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("invalid {what}: {v}")))
    }
}

/// Checks that `param` can be stepped with `grad` and state `states` (name,
/// tensor): dtypes, shapes, devices, density, and no storage shared.
fn check_operands(op: &'static str, param: &Tensor, grad: &Tensor, states: &[(&str, &Tensor)]) -> Result<()> {
    let dtype = param.dtype();
    if !dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op,
            dtype,
            hint: " (parameters must be floating point)".into(),
        });
    }
    if !param.is_leaf() {
        return Err(Error::invalid(
            op,
            "the parameter is the result of a recorded op (part of an autograd graph); step leaf tensors only",
        ));
    }
    if !dense(param) {
        return Err(Error::invalid(
            op,
            format!(
                "the parameter of shape {:?} is neither contiguous nor channels last; optimizer steps update dense tensors only (call contiguous() on the parameter before training)",
                param.shape()
            ),
        ));
    }
    // the step runs over memory: every operand in the parameter's order
    let same_order = |what: &str, t: &Tensor| -> Result<()> {
        if t.layout().strides() == param.layout().strides() && dense(t) {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                format!(
                    "the {what} has strides {:?} but the parameter {:?}; both must be dense in one memory order",
                    t.layout().strides(),
                    param.layout().strides()
                ),
            ))
        }
    };
    let mut all = vec![("parameter", param), ("gradient", grad)];
    all.extend(states.iter().copied());
    for &(what, t) in &all[1..] {
        if t.shape() != param.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "the {what} has shape {:?} but the parameter has shape {:?}",
                    t.shape(),
                    param.shape()
                ),
            ));
        }
        param.same_device(op, t)?;
        let want = if what == "gradient" {
            dtype
        } else {
            state_dtype(dtype)
        };
        if t.dtype() != want {
            return Err(Error::invalid(
                op,
                format!(
                    "the {what} has dtype {} but a {dtype} parameter needs {want}",
                    t.dtype()
                ),
            ));
        }
        same_order(what, t)?;
        if what != "gradient" && t.requires_grad() {
            return Err(Error::invalid(op, format!("the {what} must not require grad")));
        }
    }
    for (i, &(a, ta)) in all.iter().enumerate() {
        for &(b, tb) in &all[i + 1..] {
            if ta.shares_storage(tb) {
                return Err(Error::invalid(
                    op,
                    format!("the {a} and the {b} share storage; each must be its own tensor"),
                ));
            }
        }
    }
    Ok(())
}

/// The checked hyperparameters of an SGD step.
fn sgd_params(op: &'static str, o: &SgdOptions) -> Result<SgdParams> {
    check_hyper(op, "learning rate", o.lr, o.lr >= 0.0)?;
    check_hyper(op, "momentum value", o.momentum, o.momentum >= 0.0)?;
    check_hyper(op, "dampening value", o.dampening, true)?;
    check_hyper(op, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
    if o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0) {
        return Err(Error::invalid(
            op,
            "Nesterov momentum requires a momentum and zero dampening",
        ));
    }
    let mut flags = 0;
    if o.weight_decay != 0.0 {
        flags |= SGD_WEIGHT_DECAY;
    }
    if o.momentum != 0.0 {
        flags |= SGD_MOMENTUM;
        if o.nesterov {
            flags |= SGD_NESTEROV;
        }
        if o.init_buffer {
            flags |= SGD_INIT_BUFFER;
        }
    }
    Ok(SgdParams {
        lr: o.lr,
        momentum: o.momentum,
        dampening: o.dampening,
        weight_decay: o.weight_decay,
        flags,
        step_at: 0,
    })
}

/// The momentum buffer an SGD step uses: `buf` with momentum (an error
/// without one), none without momentum.
fn sgd_buffer<'a>(op: &'static str, o: &SgdOptions, buf: Option<&'a Tensor>) -> Result<Option<&'a Tensor>> {
    if o.momentum == 0.0 {
        return Ok(None);
    }
    buf.map(Some).ok_or_else(|| {
        Error::invalid(
            op,
            format!(
                "momentum {} needs a momentum buffer (zeros in the state dtype: p.optimizer_state())",
                o.momentum
            ),
        )
    })
}

/// The checked hyperparameters of Adam's `step`-th update.
fn adam_params(op: &'static str, o: &AdamOptions, step: i64) -> Result<AdamParams> {
    let (b1, b2) = o.betas;
    check_hyper(op, "learning rate", o.lr, o.lr >= 0.0)?;
    check_hyper(op, "epsilon value", o.eps, o.eps >= 0.0)?;
    check_hyper(op, "beta parameter at index 0", b1, (0.0..1.0).contains(&b1))?;
    check_hyper(op, "beta parameter at index 1", b2, (0.0..1.0).contains(&b2))?;
    check_hyper(op, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
    if step < 1 {
        return Err(Error::invalid(
            op,
            format!("the step count starts at 1 (bias correction), got {step}"),
        ));
    }
    Ok(AdamParams::new(
        o.lr,
        o.betas,
        o.eps,
        o.weight_decay,
        step as u64,
        o.decoupled,
    ))
}

impl Tensor {
    /// Zeros in the optimizer-state dtype for this parameter, on its device.
    pub fn optimizer_state(&self) -> Result<Tensor> {
        let z = Tensor::zeros(self.shape(), Some(state_dtype(self.dtype())), self.device())?;
        // a channels-last parameter's state is channels last too
        match super::elementwise::channels_last_perm(self) {
            Some(p) => z.dense_in_order(&p.iter().map(|&d| d as usize).collect::<Vec<_>>()),
            None => Ok(z),
        }
    }

    /// One SGD step in place: `buf` is the momentum buffer (needed when
    /// `o.momentum != 0`, in [`state_dtype`]).
    pub fn sgd_step_(&self, grad: &Tensor, buf: Option<&Tensor>, o: &SgdOptions) -> Result<()> {
        const OP: &str = "sgd_step_";
        let h = sgd_params(OP, o)?;
        let buf = sgd_buffer(OP, o, buf)?;
        let states: Vec<(&str, &Tensor)> = buf.iter().map(|b| ("momentum buffer", *b)).collect();
        check_operands(OP, self, grad, &states)?;
        autograd::no_grad(|| {
            let n = self.numel();
            match buf {
                Some(b) => {
                    let reqs = [(self, Access::Write), (grad, Access::Read), (b, Access::Write)];
                    let mut locks = lock_ordered(OP, &reqs)?;
                    let [p, g, bs] = &mut locks[..] else {
                        return Err(Error::invalid(OP, "internal: three locks expected"));
                    };
                    let go = (g.get(), grad.layout().offset());
                    let buf = Some((bs.get_mut(OP)?, b.layout().offset()));
                    p.get_mut(OP)?.sgd_step(self.layout().offset(), go, buf, n, &h)
                }
                None => {
                    let mut locks = lock_ordered(OP, &[(self, Access::Write), (grad, Access::Read)])?;
                    let [p, g] = &mut locks[..] else {
                        return Err(Error::invalid(OP, "internal: two locks expected"));
                    };
                    let go = (g.get(), grad.layout().offset());
                    p.get_mut(OP)?.sgd_step(self.layout().offset(), go, None, n, &h)
                }
            }
        })
    }

    /// One Adam (or AdamW, `o.decoupled`) step in place, the `step`-th (from 1):
    /// `m` and `v` are the first and second moments, in [`state_dtype`].
    pub fn adam_step_(
        &self,
        grad: &Tensor,
        m: &Tensor,
        v: &Tensor,
        step: i64,
        o: &AdamOptions,
    ) -> Result<()> {
        const OP: &str = "adam_step_";
        let h = adam_params(OP, o, step)?;
        check_operands(OP, self, grad, &[("first moment", m), ("second moment", v)])?;
        autograd::no_grad(|| {
            let reqs = [
                (self, Access::Write),
                (grad, Access::Read),
                (m, Access::Write),
                (v, Access::Write),
            ];
            let mut locks = lock_ordered(OP, &reqs)?;
            let [p, g, ms, vs] = &mut locks[..] else {
                return Err(Error::invalid(OP, "internal: four locks expected"));
            };
            p.get_mut(OP)?.adam_step(
                self.layout().offset(),
                (g.get(), grad.layout().offset()),
                (ms.get_mut(OP)?, m.layout().offset()),
                (vs.get_mut(OP)?, v.layout().offset()),
                self.numel(),
                &h,
            )
        })
    }
}

#[cfg(test)]
mod tests;
