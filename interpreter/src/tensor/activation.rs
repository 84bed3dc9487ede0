//! The parametrised activations of `torch.nn.functional` composed of
//! op-table ops: `softplus` (beta, threshold), `hardtanh`, `leaky_relu`,
//! `elu`, `celu`, `gelu` with the tanh approximation, `tanhshrink`,
//! `hardshrink`, `softshrink`, `threshold`, `softmin`, `glu`, `prelu` and
//! `rrelu`. The fixed ones (`relu6`, `selu`, `mish`, `hardswish`, ...) are
//! rows of the op table.
//!
//! Branches are formed with `where`, and the branch that is not taken is fed
//! a clamped input, so its gradient is an exact zero rather than `0 * inf`.

use super::{Generator, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, UnaryOp};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

impl Tensor {
    /// `log(1 + e^(beta x)) / beta`, and `x` itself where `beta x > threshold`.
    pub fn softplus(&self, beta: f64, threshold: f64) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.softplus(beta, threshold);
        }
        let x = self.to_float()?;
        let z = x.mul_scalar(beta)?;
        let linear = z.compare_scalar(CmpOp::Gt, Scalar::Float(threshold), false)?;
        let soft = z.minimum_scalar(threshold)?.exp()?.log1p()?.div_scalar(beta)?;
        Tensor::where_cond(&linear, &x, &soft)
    }

    /// `x` clamped to `[min, max]` (`F.hardtanh`, -1 and 1 by default).
    pub fn hardtanh(&self, min: f64, max: f64) -> Result<Tensor> {
        if min > max {
            return Err(Error::invalid(
                "hardtanh",
                format!("min_val ({min}) must not exceed max_val ({max})"),
            ));
        }
        self.clamp(Some(Scalar::Float(min)), Some(Scalar::Float(max)))
    }

    /// `x` where positive, `negative_slope * x` elsewhere.
    pub fn leaky_relu(&self, negative_slope: f64) -> Result<Tensor> {
        let x = self.to_float()?;
        let pos = x.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
        Tensor::where_cond(&pos, &x, &x.mul_scalar(negative_slope)?)
    }

    /// `x` where positive, `alpha * (e^x - 1)` elsewhere (`F.elu`).
    pub fn elu(&self, alpha: f64) -> Result<Tensor> {
        self.exponential_linear(alpha, 1.0)
    }

    /// `max(0, x) + min(0, alpha * (e^(x / alpha) - 1))` (`F.celu`).
    pub fn celu(&self, alpha: f64) -> Result<Tensor> {
        if alpha == 0.0 {
            return Err(Error::invalid("celu", "alpha must not be 0"));
        }
        self.exponential_linear(alpha, 1.0 / alpha)
    }

    /// `x` where positive, `alpha * (e^(x * inner) - 1)` elsewhere.
    fn exponential_linear(&self, alpha: f64, inner: f64) -> Result<Tensor> {
        let x = self.to_float()?;
        let pos = x.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
        let neg = x
            .minimum_scalar(0.0)?
            .mul_scalar(inner)?
            .expm1()?
            .mul_scalar(alpha)?;
        Tensor::where_cond(&pos, &x, &neg)
    }

    /// `x - tanh(x)`.
    pub fn tanhshrink(&self) -> Result<Tensor> {
        let x = self.to_float()?;
        x.sub(&x.tanh()?)
    }

    /// `x` where `|x| > lambd`, 0 elsewhere.
    pub fn hardshrink(&self, lambd: f64) -> Result<Tensor> {
        let x = self.to_float()?;
        let keep = x.abs()?.compare_scalar(CmpOp::Gt, Scalar::Float(lambd), false)?;
        Tensor::where_cond(&keep, &x, &x.constant(0.0)?)
    }

    /// `x - lambd` above `lambd`, `x + lambd` below `-lambd`, 0 between.
    pub fn softshrink(&self, lambd: f64) -> Result<Tensor> {
        if lambd < 0.0 {
            return Err(Error::invalid(
                "softshrink",
                format!("lambd must be at least 0, got {lambd}"),
            ));
        }
        let x = self.to_float()?;
        let above = x.compare_scalar(CmpOp::Gt, Scalar::Float(lambd), false)?;
        let below = x.compare_scalar(CmpOp::Lt, Scalar::Float(-lambd), false)?;
        let zero = x.constant(0.0)?;
        let low = Tensor::where_cond(&below, &x.add_scalar(lambd)?, &zero)?;
        Tensor::where_cond(&above, &x.sub_scalar(lambd)?, &low)
    }

    /// `x` where `x > threshold`, `value` elsewhere (`F.threshold`).
    pub fn threshold(&self, threshold: f64, value: f64) -> Result<Tensor> {
        let keep = self.compare_scalar(CmpOp::Gt, Scalar::Float(threshold), false)?;
        let v = Tensor::full(&[], Scalar::Float(value), Some(self.dtype()), self.device())?;
        Tensor::where_cond(&keep, self, &v)
    }

    /// `softmax(-x)` along `dim`.
    pub fn softmin(&self, dim: i64) -> Result<Tensor> {
        self.to_float()?.neg()?.softmax(dim)
    }

    /// The gated linear unit: the first half of `dim` times the sigmoid of
    /// the second half.
    pub fn glu(&self, dim: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape("glu", "glu does not take a 0-dim tensor"));
        }
        let d = normalize_dim("glu", dim, self.shape())?;
        let n = self.shape()[d];
        if n % 2 != 0 {
            return Err(Error::shape(
                "glu",
                format!(
                    "dim {dim} of input shape {:?} has odd size {n}; it must split into two halves",
                    self.shape()
                ),
            ));
        }
        let x = self.to_float()?;
        let half = (n / 2) as i64;
        let a = x.narrow(d as i64, 0, half)?;
        let b = x.narrow(d as i64, half, half)?;
        a.mul(&b.sigmoid()?)
    }

    /// `x` where positive, `weight * x` elsewhere; `weight` has one element
    /// or one per channel (dim 1 of the input).
    pub fn prelu(&self, weight: &Tensor) -> Result<Tensor> {
        let channels = if self.ndim() >= 2 { self.shape()[1] } else { 1 };
        let n = weight.numel();
        if weight.ndim() > 1 || (n != 1 && n != channels) {
            return Err(Error::shape(
                "prelu",
                format!(
                    "weight of shape {:?} must have 1 element or one per channel ({channels}) of input shape {:?}",
                    weight.shape(),
                    self.shape()
                ),
            ));
        }
        self.same_device("prelu", weight)?;
        let x = self.to_float()?;
        let w = if n > 1 {
            let mut shape = vec![1i64; self.ndim()];
            shape[1] = n as i64;
            weight.reshape(&shape)?
        } else {
            weight.reshape(&[])?
        };
        let pos = x.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
        Tensor::where_cond(&pos, &x, &x.mul(&w)?)
    }

    /// Randomized leaky ReLU: in training each negative element gets a slope
    /// drawn from `U(lower, upper)`, otherwise the mean slope `(lower + upper) / 2`.
    pub fn rrelu(&self, lower: f64, upper: f64, training: Option<&mut Generator>) -> Result<Tensor> {
        if lower > upper {
            return Err(Error::invalid(
                "rrelu",
                format!("lower ({lower}) must not exceed upper ({upper})"),
            ));
        }
        let Some(gen) = training else {
            return self.leaky_relu((lower + upper) / 2.0);
        };
        let x = self.to_float()?;
        let u = Tensor::rand(x.shape(), Some(x.dtype()), x.device(), gen)?;
        let slope = u.mul_scalar(upper - lower)?.add_scalar(lower)?;
        let pos = x.compare_scalar(CmpOp::Ge, Scalar::Float(0.0), false)?;
        Tensor::where_cond(&pos, &x, &x.mul(&slope)?)
    }

    /// GELU, exact (`"none"`) or with the tanh approximation (`"tanh"`), as
    /// `F.gelu(x, approximate=...)`.
    pub fn gelu_with(&self, approximate: &str) -> Result<Tensor> {
        match approximate {
            "none" => self.unary(UnaryOp::Gelu),
            "tanh" => self.gelu_tanh(),
            other => Err(Error::invalid(
                "gelu",
                format!("approximate must be \"none\" or \"tanh\", got \"{other}\""),
            )),
        }
    }
}
