//! The special functions PyTorch composes of others (`torch.special`):
//! `xlog1py`, `entr`, `ndtr`, `ndtri`, `log_ndtr`, `mvlgamma`
//! (`multigammaln`), and the float decomposition `frexp` with its inverse
//! `ldexp`. Compositions of op-table ops, so they run on every backend and
//! differentiate through their parts.

use super::pointwise::floats;
use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::Scalar;
use std::f64::consts::{FRAC_1_SQRT_2, SQRT_2};

impl Tensor {
    /// `self * ln(1 + other)`, 0 where `self` is 0 (NaN in `other` stays NaN).
    pub fn xlog1py(&self, other: &Tensor) -> Result<Tensor> {
        let (x, y) = floats(self, other)?;
        let v = x.mul(&y.unary(UnaryOp::Log1p)?)?;
        let x_zero = x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
        let keep_nan = y.isnan()?.unary(UnaryOp::LogicalNot)?;
        Tensor::where_cond(&x_zero.binary(BinaryOp::Mul, &keep_nan)?, &v.constant(0.0)?, &v)
    }

    /// The entropy term `-x ln x`: 0 at 0, -inf below 0.
    pub fn entr(&self) -> Result<Tensor> {
        let x = self.to_float()?;
        let v = x.mul(&x.unary(UnaryOp::Log)?)?.neg()?;
        let zero = x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
        let below = x.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?;
        let v = Tensor::where_cond(&zero, &v.constant(0.0)?, &v)?;
        Tensor::where_cond(&below, &v.constant(f64::NEG_INFINITY)?, &v)
    }

    /// The standard normal distribution function `Φ(x) = erfc(-x/√2) / 2`.
    pub fn ndtr(&self) -> Result<Tensor> {
        self.to_float()?
            .mul_scalar(-FRAC_1_SQRT_2)?
            .unary(UnaryOp::Erfc)?
            .mul_scalar(0.5)
    }

    /// The inverse of [`Tensor::ndtr`]: `√2 erfinv(2p - 1)`.
    pub fn ndtri(&self) -> Result<Tensor> {
        self.to_float()?
            .mul_scalar(2.0)?
            .sub_scalar(1.0)?
            .unary(UnaryOp::Erfinv)?
            .mul_scalar(SQRT_2)
    }

    /// `ln Φ(x)`, through `erfc` so the lower tail keeps its digits.
    pub fn log_ndtr(&self) -> Result<Tensor> {
        self.ndtr()?.unary(UnaryOp::Log)
    }

    /// The multivariate log-gamma function of dimension `p`:
    /// `Σ_{i<p} ln Γ(x - i/2) + p(p-1)/4 · ln π`. Every element must exceed
    /// `(p - 1) / 2`, as PyTorch requires.
    pub fn mvlgamma(&self, p: i64) -> Result<Tensor> {
        const OP: &str = "mvlgamma";
        if p < 1 {
            return Err(Error::invalid(OP, format!("p must be at least 1, got {p}")));
        }
        let x = self.to_float()?;
        let bound = (p - 1) as f64 / 2.0;
        if x.numel() > 0 {
            let low = x.reduce(ReduceOp::Min, None, false)?.item()?.to_f64();
            if low.is_nan() || low <= bound {
                return Err(Error::invalid(
                    OP,
                    format!("all elements must be greater than (p-1)/2 = {bound}, got {low}"),
                ));
            }
        }
        let halves = Tensor::arange(
            Scalar::Float(0.0),
            Scalar::Float(p as f64 / 2.0),
            Scalar::Float(0.5),
            Some(x.dtype()),
            x.device(),
        )?;
        let constant = (p * (p - 1)) as f64 / 4.0 * std::f64::consts::PI.ln();
        x.unsqueeze(-1)?
            .sub(&halves)?
            .unary(UnaryOp::Lgamma)?
            .reduce(ReduceOp::Sum, Some(&[-1]), false)?
            .add_scalar(constant)
    }

    /// `self · 2^exponent`, in the promoted float dtype (`torch.ldexp`).
    pub fn ldexp(&self, exponent: &Tensor) -> Result<Tensor> {
        let (x, e) = floats(self, exponent)?;
        x.mul(&e.unary(UnaryOp::Exp2)?)
    }

    /// `torch.frexp`: the mantissa (magnitude in [0.5, 1), this tensor's
    /// dtype) and the i32 exponent with `self = mantissa · 2^exponent`; 0, inf
    /// and NaN give themselves and exponent 0.
    pub fn frexp(&self) -> Result<(Tensor, Tensor)> {
        const OP: &str = "frexp";
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("expects a floating-point tensor, got {}", self.dtype()),
            ));
        }
        // the exponent in f64, where every float's power of two is exact
        let x = self.to_dtype(DType::F64)?.detach();
        let a = x.abs()?;
        let special = a
            .compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?
            .binary(BinaryOp::BitOr, &a.isfinite()?.unary(UnaryOp::LogicalNot)?)?;
        let safe = Tensor::where_cond(&special, &a.constant(1.0)?, &a)?;
        let mut e = safe.unary(UnaryOp::Log2)?.floor()?.add_scalar(1.0)?;
        // log2 may round across a power of two: put |m| back in [0.5, 1)
        let m = safe.div(&e.unary(UnaryOp::Exp2)?)?;
        let low = m.compare_scalar(CmpOp::Lt, Scalar::Float(0.5), false)?;
        let high = m.compare_scalar(CmpOp::Ge, Scalar::Float(1.0), false)?;
        e = e
            .sub(&low.to_dtype(DType::F64)?)?
            .add(&high.to_dtype(DType::F64)?)?;
        let e = Tensor::where_cond(&special, &e.constant(0.0)?, &e)?;
        // the mantissa from the input itself, so that it carries its
        // gradient: scaled in f64 by 2^-e in two halves (2^1074 overflows)
        let half = e.neg()?.mul_scalar(0.5)?.floor()?;
        let rest = e.neg()?.sub(&half)?;
        let mantissa = self
            .to_dtype(DType::F64)?
            .mul(&half.unary(UnaryOp::Exp2)?)?
            .mul(&rest.unary(UnaryOp::Exp2)?)?
            .to_dtype(self.dtype())?;
        Ok((mantissa, e.to_dtype(DType::I32)?))
    }
}
