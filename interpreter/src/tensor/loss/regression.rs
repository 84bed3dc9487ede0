//! Regression losses, as `torch.nn.functional` defines them: `mse_loss`,
//! `l1_loss`, `smooth_l1_loss` (beta), `huber_loss` (delta),
//! `poisson_nll_loss` and `gaussian_nll_loss`. Input and target broadcast.

use super::Reduction;
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::Scalar;
use crate::tensor::pointwise::floats;
use crate::tensor::Tensor;

/// `input - target` in their common float dtype.
fn difference(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    let (x, y) = floats(input, target)?;
    x.sub(&y)
}

impl Tensor {
    /// The squared error `(input - target)²`, reduced.
    pub fn mse_loss(&self, target: &Tensor, r: Reduction) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(target) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.mse_loss(&w(target)?, r);
        }
        difference(self, target)?.square()?.reduced(r)
    }

    /// The absolute error `|input - target|`, reduced.
    pub fn l1_loss(&self, target: &Tensor, r: Reduction) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(target) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.l1_loss(&w(target)?, r);
        }
        difference(self, target)?.abs()?.reduced(r)
    }

    /// `0.5 d² / beta` where `|d| < beta`, `|d| - 0.5 beta` elsewhere
    /// (`beta` 0 is the L1 loss).
    pub fn smooth_l1_loss(&self, target: &Tensor, r: Reduction, beta: f64) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(target) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.smooth_l1_loss(&w(target)?, r, beta);
        }
        if beta < 0.0 {
            return Err(Error::invalid(
                "smooth_l1_loss",
                format!("beta must be at least 0, got {beta}"),
            ));
        }
        let d = difference(self, target)?.abs()?;
        if beta == 0.0 {
            return d.reduced(r);
        }
        let near = d.compare_scalar(CmpOp::Lt, Scalar::Float(beta), false)?;
        let quad = d.square()?.mul_scalar(0.5 / beta)?;
        Tensor::where_cond(&near, &quad, &d.sub_scalar(0.5 * beta)?)?.reduced(r)
    }

    /// `0.5 d²` where `|d| <= delta`, `delta (|d| - 0.5 delta)` elsewhere.
    pub fn huber_loss(&self, target: &Tensor, r: Reduction, delta: f64) -> Result<Tensor> {
        if delta <= 0.0 {
            return Err(Error::invalid(
                "huber_loss",
                format!("delta must be positive, got {delta}"),
            ));
        }
        let d = difference(self, target)?.abs()?;
        let near = d.compare_scalar(CmpOp::Le, Scalar::Float(delta), false)?;
        let quad = d.square()?.mul_scalar(0.5)?;
        let lin = d.sub_scalar(0.5 * delta)?.mul_scalar(delta)?;
        Tensor::where_cond(&near, &quad, &lin)?.reduced(r)
    }

    /// The Poisson negative log-likelihood: `e^input - target * input` for
    /// log inputs, else `input - target * log(input + eps)`; `full` adds
    /// Stirling's approximation of `log(target!)` where `target > 1`.
    pub fn poisson_nll_loss(
        &self,
        target: &Tensor,
        log_input: bool,
        full: bool,
        eps: f64,
        r: Reduction,
    ) -> Result<Tensor> {
        let (x, t) = floats(self, target)?;
        let mut loss = if log_input {
            x.exp()?.sub(&t.mul(&x)?)?
        } else {
            x.sub(&t.mul(&x.add_scalar(eps)?.log()?)?)?
        };
        if full {
            let safe = t.maximum_scalar(1.0)?;
            let two_pi = 2.0 * std::f64::consts::PI;
            let stirling = safe
                .mul(&safe.log()?)?
                .sub(&safe)?
                .add(&safe.mul_scalar(two_pi)?.log()?.mul_scalar(0.5)?)?;
            let above = t.compare_scalar(CmpOp::Gt, Scalar::Float(1.0), false)?;
            loss = loss.add(&Tensor::where_cond(&above, &stirling, &stirling.constant(0.0)?)?)?;
        }
        loss.reduced(r)
    }

    /// The Gaussian negative log-likelihood
    /// `0.5 (log(var) + (input - target)² / var)` (plus `0.5 log 2π` when
    /// `full`), `var` clamped to at least `eps` (the clamp passes gradients
    /// through, as PyTorch's). `var` has the input's shape, or one fewer
    /// trailing dim, or a trailing dim of 1; negative entries are an error
    /// (checked on the host, which waits for the device).
    pub fn gaussian_nll_loss(
        &self,
        target: &Tensor,
        var: &Tensor,
        full: bool,
        eps: f64,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "gaussian_nll_loss";
        let (x, t) = floats(self, target)?;
        let shape = x.shape();
        let var = if var.shape() == shape {
            var.clone()
        } else if !shape.is_empty() && var.shape() == &shape[..shape.len() - 1] {
            var.unsqueeze(-1)?
        } else if !shape.is_empty()
            && var.ndim() == shape.len()
            && var.shape()[..var.ndim() - 1] == shape[..shape.len() - 1]
            && var.shape()[var.ndim() - 1] == 1
        {
            var.clone()
        } else {
            return Err(Error::shape(
                OP,
                format!(
                    "var of shape {:?} does not fit input of shape {shape:?}",
                    var.shape()
                ),
            ));
        };
        let var = var.to_dtype(x.dtype())?;
        let negative =
            var.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?
                .reduce(ReduceOp::Any, None, false)?;
        if negative.item()?.to_f64() != 0.0 {
            return Err(Error::invalid(OP, "var has negative entries"));
        }
        let clamped = var.maximum_scalar(eps)?;
        let var = var.add(&clamped.sub(&var)?.detach())?;
        let mut loss = var
            .log()?
            .add(&x.sub(&t)?.square()?.div(&var)?)?
            .mul_scalar(0.5)?;
        if full {
            loss = loss.add_scalar(0.5 * (2.0 * std::f64::consts::PI).ln())?;
        }
        loss.reduced(r)
    }
}
