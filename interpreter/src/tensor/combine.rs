//! Pointwise functions of two tensors composed of op-table ops, as PyTorch
//! defines each: `logaddexp`, `logaddexp2`, `fmax`, `fmin` (NaN-ignoring
//! extremes) and `heaviside`; and the set test `isin`.
//!
//! Being compositions, they run on every backend and differentiate through
//! their parts.

use super::pointwise::floats;
use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::Scalar;

impl Tensor {
    /// `log(exp(self) + exp(other))` without overflow: `m + log1p(exp(-|a - b|))`
    /// for the larger `m`; `-inf` with `-inf` stays `-inf`, `+inf` wins.
    pub fn logaddexp(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = floats(self, other)?;
        let m = a.binary(BinaryOp::Maximum, &b)?;
        let gap = a.sub(&b)?.abs()?.neg()?;
        let out = m.add(&gap.exp()?.unary(UnaryOp::Log1p)?)?;
        // equal infinities: a - b is NaN; the answer is that infinity
        let same_inf = a.compare(CmpOp::Eq, &b)?.binary(
            BinaryOp::Mul,
            &a.unary(UnaryOp::Abs)?
                .compare_scalar(CmpOp::Eq, Scalar::Float(f64::INFINITY), false)?,
        )?;
        Tensor::where_cond(&same_inf, &a, &out)
    }

    /// `log2(2^self + 2^other)` without overflow.
    pub fn logaddexp2(&self, other: &Tensor) -> Result<Tensor> {
        let ln2 = std::f64::consts::LN_2;
        let (a, b) = floats(self, other)?;
        a.mul_scalar(ln2)?.logaddexp(&b.mul_scalar(ln2)?)?.div_scalar(ln2)
    }

    /// The larger of each pair, ignoring a NaN (NaN only where both are);
    /// at a tie the gradient goes to `self`, as PyTorch's.
    pub fn fmax(&self, other: &Tensor) -> Result<Tensor> {
        self.nan_ignoring(other, CmpOp::Ge)
    }

    /// The smaller of each pair, ignoring a NaN (NaN only where both are);
    /// at a tie the gradient goes to `self`, as PyTorch's.
    pub fn fmin(&self, other: &Tensor) -> Result<Tensor> {
        self.nan_ignoring(other, CmpOp::Le)
    }

    /// `self` where it wins `keep` against `other` or `other` is NaN, else `other`.
    fn nan_ignoring(&self, other: &Tensor, keep: CmpOp) -> Result<Tensor> {
        let dtype = super::elementwise::result_type(self, other);
        let (a, b) = (self.to_dtype(dtype)?, other.to_dtype(dtype)?);
        let mut take_a = a.compare(keep, &b)?;
        if dtype.is_float() {
            take_a = take_a.binary(BinaryOp::BitOr, &b.isnan()?)?;
        }
        Tensor::where_cond(&take_a, &a, &b)
    }

    /// The Heaviside step: 0 below zero, 1 above, `values` at zero (NaN
    /// stays NaN); `self` and `values` share a dtype, as in PyTorch. It has
    /// no derivative: a backward through it is an error, as PyTorch's.
    pub fn heaviside(&self, values: &Tensor) -> Result<Tensor> {
        const OP: &str = "heaviside";
        if super::autograd::needs_grad(&[self, values]) {
            let out = super::autograd::forward(|| self.heaviside(values))?;
            return Ok(super::autograd::record(OP, &[self, values], out, |_, _| {
                Err(Error::invalid(
                    OP,
                    "its derivative is not implemented (as in PyTorch)",
                ))
            }));
        }
        if self.dtype() != values.dtype() {
            return Err(Error::invalid(
                OP,
                format!(
                    "input and values must have the same dtype, got {} and {}",
                    self.dtype(),
                    values.dtype()
                ),
            ));
        }
        let dtype = self.dtype();
        let step = self
            .compare_scalar(CmpOp::Gt, Scalar::Int(0), false)?
            .to_dtype(dtype)?;
        let at_zero = self.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?;
        let out = Tensor::where_cond(&at_zero, values, &step)?;
        if dtype.is_float() {
            Tensor::where_cond(&self.isnan()?, self, &out)
        } else {
            Ok(out)
        }
    }

    /// True where an element of `self` is among `test`'s elements
    /// (`torch.isin`; `invert` gives the complement). Compares every pair:
    /// memory `numel(self) · numel(test)`.
    pub fn isin(&self, test: &Tensor, invert: bool) -> Result<Tensor> {
        let flat = test.reshape(&[-1])?;
        let found =
            self.unsqueeze(-1)?
                .compare(CmpOp::Eq, &flat)?
                .reduce(ReduceOp::Any, Some(&[-1]), false)?;
        if invert {
            found.unary(UnaryOp::LogicalNot)
        } else {
            Ok(found)
        }
    }
}
