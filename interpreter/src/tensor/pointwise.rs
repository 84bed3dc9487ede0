//! Pointwise math composed of op-table ops, as PyTorch defines each:
//! `atan2`, `hypot`, `copysign`, `xlogy`, `logit`, `lerp`, `addcmul`,
//! `addcdiv`, `float_power`, `nan_to_num`, `clamp` with tensor bounds, the
//! float tests (`isnan`, `isinf`, `isfinite`, `isposinf`, `isneginf`,
//! `signbit`), `isclose`/`allclose`/`equal`, and the fused matrix products
//! (`addmm`, `addmv`, `addbmm`, `baddbmm`, `outer`).
//!
//! Being compositions, they run on every backend and differentiate through
//! their parts.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::Scalar;

/// `a` and `b` in their promoted floating dtype.
pub(crate) fn floats(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let mut dtype = super::elementwise::result_type(a, b);
    if !dtype.is_float() {
        dtype = DType::F32;
    }
    Ok((a.to_dtype(dtype)?, b.to_dtype(dtype)?))
}

impl Tensor {
    /// The angle of the point `(other, self)`: `atan(self / other)` in the
    /// right quadrant, in `(-π, π]`.
    pub fn atan2(&self, other: &Tensor) -> Result<Tensor> {
        let (y, x) = floats(self, other)?;
        let base = y.div(&x)?.unary(UnaryOp::Atan)?;
        let pi = base.constant(std::f64::consts::PI)?;
        let x_neg = x.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?;
        let y_neg = y.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?;
        let turn = Tensor::where_cond(&y_neg, &pi.neg()?, &pi)?;
        let zero = base.constant(0.0)?;
        let shifted = base.add(&Tensor::where_cond(&x_neg, &turn, &zero)?)?;
        // both zero: 0 (π when x is negative, -π for y negative as well)
        let both_zero = y.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?.binary(
            BinaryOp::Mul,
            &x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?,
        )?;
        Tensor::where_cond(&both_zero, &zero, &shifted)
    }

    /// `sqrt(self² + other²)` without overflow or underflow in between.
    pub fn hypot(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = floats(self, other)?;
        let (a, b) = (a.abs()?, b.abs()?);
        let big = a.binary(BinaryOp::Maximum, &b)?;
        let small = a.binary(BinaryOp::Minimum, &b)?;
        let zero = big.constant(0.0)?;
        let is_zero = big.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
        let safe = Tensor::where_cond(&is_zero, &big.constant(1.0)?, &big)?;
        let r = small.div(&safe)?;
        let out = big.mul(&r.square()?.add_scalar(1.0)?.sqrt()?)?;
        // inf in either stays inf, even next to NaN (as C's hypot)
        let inf = a.binary(BinaryOp::Maximum, &b)?.compare_scalar(
            CmpOp::Eq,
            Scalar::Float(f64::INFINITY),
            false,
        )?;
        let out = Tensor::where_cond(&is_zero, &zero, &out)?;
        Tensor::where_cond(&inf, &out.constant(f64::INFINITY)?, &out)
    }

    /// True where the sign bit is set (negative numbers, -0.0, -inf).
    pub fn signbit(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.compare_scalar(CmpOp::Lt, Scalar::Int(0), false);
        }
        let neg = self.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?;
        // -0.0: 1 / x is -inf
        let neg_zero = self
            .compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?
            .binary(
                BinaryOp::Mul,
                &self
                    .unary(UnaryOp::Reciprocal)?
                    .compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?,
            )?;
        neg.binary(BinaryOp::Add, &neg_zero)
    }

    /// `|self|` with the sign of `other`.
    pub fn copysign(&self, other: &Tensor) -> Result<Tensor> {
        let (a, b) = floats(self, other)?;
        let m = a.abs()?;
        Tensor::where_cond(&b.signbit()?, &m.neg()?, &m)
    }

    /// `self * ln(other)`, 0 where `self` is 0 (even for `other` 0 or inf;
    /// NaN in `other` stays NaN).
    pub fn xlogy(&self, other: &Tensor) -> Result<Tensor> {
        let (x, y) = floats(self, other)?;
        let v = x.mul(&y.unary(UnaryOp::Log)?)?;
        let x_zero = x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
        let y_nan = y.isnan()?;
        let zero_not_nan = x_zero.binary(BinaryOp::Mul, &y_nan.unary(UnaryOp::LogicalNot)?)?;
        Tensor::where_cond(&zero_not_nan, &v.constant(0.0)?, &v)
    }

    /// `ln(p / (1 - p))`, with `p` clamped to `[eps, 1 - eps]` when `eps` is given.
    pub fn logit(&self, eps: Option<f64>) -> Result<Tensor> {
        let p = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(DType::F32)?
        };
        let p = match eps {
            Some(e) => p.clamp(Some(Scalar::Float(e)), Some(Scalar::Float(1.0 - e)))?,
            None => p,
        };
        p.div(&p.neg()?.add_scalar(1.0)?)?.unary(UnaryOp::Log)
    }

    /// `self + weight * (end - self)`; `weight` a number or a tensor.
    pub fn lerp(&self, end: &Tensor, weight: &Tensor) -> Result<Tensor> {
        self.add(&weight.mul(&end.sub(self)?)?)
    }

    /// `self + value * t1 * t2`.
    pub fn addcmul(&self, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
        self.add(&t1.mul(t2)?.mul_scalar(value)?)
    }

    /// `self + value * t1 / t2`.
    pub fn addcdiv(&self, t1: &Tensor, t2: &Tensor, value: f64) -> Result<Tensor> {
        if !t1.dtype().is_float() && !t2.dtype().is_float() {
            return Err(Error::invalid(
                "addcdiv",
                "integer division is not supported; use float tensors (as PyTorch requires)",
            ));
        }
        self.add(&t1.div(t2)?.mul_scalar(value)?)
    }

    /// `self ** exponent` in f64 (`torch.float_power`).
    pub fn float_power(&self, exponent: &Tensor) -> Result<Tensor> {
        self.to_dtype(DType::F64)?
            .binary(BinaryOp::Pow, &exponent.to_dtype(DType::F64)?)
    }

    /// NaN, +inf and -inf replaced (by 0, the dtype's largest and lowest
    /// finite values unless given).
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return self.clone_data();
        }
        let max = match self.dtype() {
            DType::F16 => 65504.0,
            DType::BF16 => 3.3895313892515355e38,
            DType::F32 => f32::MAX as f64,
            _ => f64::MAX,
        };
        let out = Tensor::where_cond(&self.isnan()?, &self.constant(nan)?, self)?;
        let out = Tensor::where_cond(&self.isposinf()?, &self.constant(posinf.unwrap_or(max))?, &out)?;
        Tensor::where_cond(&self.isneginf()?, &self.constant(neginf.unwrap_or(-max))?, &out)
    }

    /// `clamp` with tensor bounds (broadcast; either optional).
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        let mut out = self.clone();
        if let Some(lo) = min {
            out = out.binary(BinaryOp::Maximum, lo)?;
        }
        if let Some(hi) = max {
            out = out.binary(BinaryOp::Minimum, hi)?;
        }
        if out.shares_storage(self) {
            out = out.clone_data()?;
        }
        Ok(out)
    }

    /// True where NaN (false for integers and bool).
    pub fn isnan(&self) -> Result<Tensor> {
        self.compare(CmpOp::Ne, self)
    }

    /// True where +inf or -inf.
    pub fn isinf(&self) -> Result<Tensor> {
        self.abs_any()?
            .compare_scalar(CmpOp::Eq, Scalar::Float(f64::INFINITY), false)
    }

    /// True where +inf.
    pub fn isposinf(&self) -> Result<Tensor> {
        self.compare_scalar(CmpOp::Eq, Scalar::Float(f64::INFINITY), false)
    }

    /// True where -inf.
    pub fn isneginf(&self) -> Result<Tensor> {
        self.compare_scalar(CmpOp::Eq, Scalar::Float(f64::NEG_INFINITY), false)
    }

    /// True where neither NaN nor infinite.
    pub fn isfinite(&self) -> Result<Tensor> {
        self.isnan()?
            .binary(BinaryOp::Add, &self.isinf()?)?
            .unary(UnaryOp::LogicalNot)
    }

    /// `|x|` for any dtype but bool (which is its own magnitude).
    fn abs_any(&self) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            Ok(self.clone())
        } else {
            self.abs()
        }
    }

    /// `|self - other| <= atol + rtol * |other|` elementwise (NaN equal to
    /// NaN when `equal_nan`).
    pub fn isclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<Tensor> {
        let (a, b) = floats(self, other)?;
        let a64 = a.to_dtype(DType::F64)?;
        let b64 = b.to_dtype(DType::F64)?;
        let exact = a64.compare(CmpOp::Eq, &b64)?;
        let tol = b64.abs()?.mul_scalar(rtol)?.add_scalar(atol)?;
        let near = a64.sub(&b64)?.abs()?.compare(CmpOp::Le, &tol)?;
        let mut out = exact.binary(BinaryOp::Add, &near)?;
        if equal_nan {
            out = out.binary(BinaryOp::Add, &a64.isnan()?.binary(BinaryOp::Mul, &b64.isnan()?)?)?;
        }
        Ok(out)
    }

    /// True when every element is close (see [`isclose`](Tensor::isclose)).
    pub fn allclose(&self, other: &Tensor, rtol: f64, atol: f64, equal_nan: bool) -> Result<bool> {
        let all = self
            .isclose(other, rtol, atol, equal_nan)?
            .reduce(ReduceOp::All, None, false)?;
        Ok(all.item()?.to_i64() != 0)
    }

    /// True when both have the same shape and the same values.
    pub fn equal(&self, other: &Tensor) -> Result<bool> {
        if self.shape() != other.shape() {
            return Ok(false);
        }
        let all = self
            .compare(CmpOp::Eq, other)?
            .reduce(ReduceOp::All, None, false)?;
        Ok(all.item()?.to_i64() != 0)
    }

    /// `beta * self + alpha * (m1 @ m2)` for matrices.
    pub fn addmm(&self, m1: &Tensor, m2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        if m1.ndim() != 2 || m2.ndim() != 2 {
            return Err(Error::shape(
                "addmm",
                format!(
                    "needs two matrices, got shapes {:?} and {:?}",
                    m1.shape(),
                    m2.shape()
                ),
            ));
        }
        if beta == 1.0 && alpha == 1.0 {
            if let Some(y) = Tensor::addmm_fused(self, m1, m2, crate::backend::Activation::Identity)? {
                return Ok(y);
            }
        }
        scaled_sum("addmm", self, &m1.matmul(m2)?, beta, alpha)
    }

    /// `beta * self + alpha * (mat @ vec)`.
    pub fn addmv(&self, mat: &Tensor, vec: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        if mat.ndim() != 2 || vec.ndim() != 1 {
            return Err(Error::shape(
                "addmv",
                format!(
                    "needs a matrix and a vector, got shapes {:?} and {:?}",
                    mat.shape(),
                    vec.shape()
                ),
            ));
        }
        scaled_sum("addmv", self, &mat.matmul(vec)?, beta, alpha)
    }

    /// `beta * self + alpha * Σ_b (b1[b] @ b2[b])`.
    pub fn addbmm(&self, b1: &Tensor, b2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        let prod = b1.bmm(b2)?.reduce(ReduceOp::Sum, Some(&[0]), false)?;
        scaled_sum("addbmm", self, &prod, beta, alpha)
    }

    /// `beta * self + alpha * (b1 @ b2)`, batched.
    pub fn baddbmm(&self, b1: &Tensor, b2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        scaled_sum("baddbmm", self, &b1.bmm(b2)?, beta, alpha)
    }

    /// `beta * self + alpha * outer(v1, v2)` (`torch.addr`).
    pub fn addr(&self, v1: &Tensor, v2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        scaled_sum("addr", self, &v1.outer(v2)?, beta, alpha)
    }

    /// The product of a matrix and a vector (`torch.mv`).
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        if self.ndim() != 2 || vec.ndim() != 1 {
            return Err(Error::shape(
                "mv",
                format!(
                    "expects a matrix and a vector, got shapes {:?} and {:?}",
                    self.shape(),
                    vec.shape()
                ),
            ));
        }
        self.matmul(vec)
    }

    /// The outer product of two vectors (`torch.outer`, `ger`).
    pub fn outer(&self, other: &Tensor) -> Result<Tensor> {
        if self.ndim() != 1 || other.ndim() != 1 {
            return Err(Error::shape(
                "outer",
                format!(
                    "needs two vectors, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        self.unsqueeze(1)?.mul(&other.unsqueeze(0)?)
    }
}

/// `beta * input + alpha * prod`, where `beta = 0` ignores `input` (NaN
/// included), as PyTorch's `add*` ops do.
fn scaled_sum(op: &'static str, input: &Tensor, prod: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
    let prod = if alpha == 1.0 {
        prod.clone()
    } else {
        prod.mul_scalar(alpha)?
    };
    let shape = crate::core::shape::broadcast_shapes(op, input.shape(), prod.shape())?;
    if shape != prod.shape() {
        return Err(Error::shape(
            op,
            format!(
                "input of shape {:?} does not broadcast to the product's shape {:?}",
                input.shape(),
                prod.shape()
            ),
        ));
    }
    if beta == 0.0 {
        return Ok(prod);
    }
    let scaled = if beta == 1.0 {
        input.clone()
    } else {
        input.mul_scalar(beta)?
    };
    scaled.add(&prod)
}
