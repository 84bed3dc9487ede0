//! Fused optimizer steps, in place: SGD with momentum, Adam and AdamW with
//! PyTorch's formulas (`torch.optim.SGD`, `Adam`, `AdamW`, single-tensor
//! form; no amsgrad). Each step is one backend op per parameter (one kernel
//! launch on CUDA, one loop on the CPU), not a chain of elementwise ops.
//!
//! Parameters are f32, f64, f16 or bf16 and dense (contiguous); the gradient
//! has the parameter's shape and dtype; optimizer state (momentum buffer,
//! moments) is kept in [`state_dtype`] (f32 for half parameters). Steps run
//! with grad mode off; every tensor written is bumped in version, so a saved
//! tensor of a pending backward notices the update.

use super::autograd;
use super::{DType, Tensor};
use crate::error::{Error, Result};
use kiln_kernels::params::{AdamParams, SgdParams};
use kiln_kernels::params::{SGD_INIT_BUFFER, SGD_MOMENTUM, SGD_NESTEROV, SGD_WEIGHT_DECAY};

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
    let dense = |what: &str, t: &Tensor| -> Result<()> {
        if t.is_contiguous() {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                format!(
                    "the {what} of shape {:?} is not contiguous; optimizer steps update dense tensors only (call contiguous() on the parameter before training)",
                    t.shape()
                ),
            ))
        }
    };
    dense("parameter", param)?;
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
        dense(what, t)?;
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

impl Tensor {
    /// Zeros in the optimizer-state dtype for this parameter, on its device.
    pub fn optimizer_state(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), Some(state_dtype(self.dtype())), self.device())
    }

    /// One SGD step in place: `buf` is the momentum buffer (needed when
    /// `o.momentum != 0`, in [`state_dtype`]).
    pub fn sgd_step_(&self, grad: &Tensor, buf: Option<&Tensor>, o: &SgdOptions) -> Result<()> {
        const OP: &str = "sgd_step_";
        check_hyper(OP, "learning rate", o.lr, o.lr >= 0.0)?;
        check_hyper(OP, "momentum value", o.momentum, o.momentum >= 0.0)?;
        check_hyper(OP, "dampening value", o.dampening, true)?;
        check_hyper(OP, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
        if o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0) {
            return Err(Error::invalid(
                OP,
                "Nesterov momentum requires a momentum and zero dampening",
            ));
        }
        let momentum = o.momentum != 0.0;
        let buf = if momentum {
            Some(buf.ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!(
                        "momentum {} needs a momentum buffer (zeros in the state dtype: p.optimizer_state())",
                        o.momentum
                    ),
                )
            })?)
        } else {
            None
        };
        let states: Vec<(&str, &Tensor)> = buf.iter().map(|b| ("momentum buffer", *b)).collect();
        check_operands(OP, self, grad, &states)?;
        let mut flags = 0;
        if o.weight_decay != 0.0 {
            flags |= SGD_WEIGHT_DECAY;
        }
        if momentum {
            flags |= SGD_MOMENTUM;
            if o.nesterov {
                flags |= SGD_NESTEROV;
            }
            if o.init_buffer {
                flags |= SGD_INIT_BUFFER;
            }
        }
        let h = SgdParams {
            lr: o.lr,
            momentum: o.momentum,
            dampening: o.dampening,
            weight_decay: o.weight_decay,
            flags,
        };
        autograd::no_grad(|| {
            let g = grad.storage();
            let mut p = self.storage_mut();
            let go = (&*g, grad.layout().offset());
            let n = self.numel();
            match buf {
                Some(b) => {
                    let mut bs = b.storage_mut();
                    p.sgd_step(
                        self.layout().offset(),
                        go,
                        Some((&mut bs, b.layout().offset())),
                        n,
                        &h,
                    )
                }
                None => p.sgd_step(self.layout().offset(), go, None, n, &h),
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
        let (b1, b2) = o.betas;
        check_hyper(OP, "learning rate", o.lr, o.lr >= 0.0)?;
        check_hyper(OP, "epsilon value", o.eps, o.eps >= 0.0)?;
        check_hyper(OP, "beta parameter at index 0", b1, (0.0..1.0).contains(&b1))?;
        check_hyper(OP, "beta parameter at index 1", b2, (0.0..1.0).contains(&b2))?;
        check_hyper(OP, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
        if step < 1 {
            return Err(Error::invalid(
                OP,
                format!("the step count starts at 1 (bias correction), got {step}"),
            ));
        }
        check_operands(OP, self, grad, &[("first moment", m), ("second moment", v)])?;
        let h = AdamParams::new(o.lr, o.betas, o.eps, o.weight_decay, step as u64, o.decoupled);
        autograd::no_grad(|| {
            let g = grad.storage();
            let mut p = self.storage_mut();
            let (mut ms, mut vs) = (m.storage_mut(), v.storage_mut());
            p.adam_step(
                self.layout().offset(),
                (&*g, grad.layout().offset()),
                (&mut ms, m.layout().offset()),
                (&mut vs, v.layout().offset()),
                self.numel(),
                &h,
            )
        })
    }
}
