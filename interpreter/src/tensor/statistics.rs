//! Reductions composed of the reduction table's ops, as PyTorch defines
//! each: `logsumexp` (shifted by the maximum), `amax`/`amin`/`aminmax`,
//! `count_nonzero`, `nansum`/`nanmean`, `var_mean`/`std_mean`, the norms
//! (`vector_norm`, `matrix_norm`, `norm`), `cov` and `corrcoef`. They run on
//! every backend and differentiate through their parts.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::Scalar;

/// A vector or matrix norm's order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NormOrd {
    /// A number `p` (including ±inf and 0).
    P(f64),
    /// The Frobenius norm.
    Fro,
    /// The nuclear norm (sum of singular values).
    Nuc,
}

impl Tensor {
    /// `log(sum(exp(x)))` over `dims`, computed stably.
    pub fn logsumexp(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let x = self.to_float()?;
        let m = x.reduce(ReduceOp::Max, Some(dims), true)?.detach();
        let finite = m.isfinite()?;
        let zero = Tensor::zeros(&[], Some(m.dtype()), m.device())?;
        let m = Tensor::where_cond(&finite, &m, &zero)?;
        let s = x
            .sub(&m)?
            .exp()?
            .reduce(ReduceOp::Sum, Some(dims), keepdim)?
            .log()?;
        let shift = if keepdim {
            m
        } else {
            m.reshape(&s.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())?
        };
        s.add(&shift)
    }

    /// The maximum over `dims` (all when empty).
    pub fn amax(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, (!dims.is_empty()).then_some(dims), keepdim)
    }

    /// The minimum over `dims` (all when empty).
    pub fn amin(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, (!dims.is_empty()).then_some(dims), keepdim)
    }

    /// The number of non-zero elements over `dims` (all when empty), i64.
    pub fn count_nonzero(&self, dims: &[i64]) -> Result<Tensor> {
        self.compare_scalar(CmpOp::Ne, Scalar::Int(0), false)?
            .to_dtype(DType::I64)?
            .reduce(ReduceOp::Sum, (!dims.is_empty()).then_some(dims), false)
    }

    /// The sum over `dims` (all when empty) with NaN counted as zero.
    pub fn nansum(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let x = if self.dtype().is_float() {
            let zero = Tensor::zeros(&[], Some(self.dtype()), self.device())?;
            Tensor::where_cond(&self.isnan()?, &zero, self)?
        } else {
            self.clone()
        };
        x.reduce(ReduceOp::Sum, (!dims.is_empty()).then_some(dims), keepdim)
    }

    /// The mean over `dims` (all when empty) of the elements that are not NaN.
    pub fn nanmean(&self, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let x = self.to_float()?;
        let count = x
            .isnan()?
            .unary(UnaryOp::LogicalNot)?
            .to_dtype(x.dtype())?
            .reduce(ReduceOp::Sum, (!dims.is_empty()).then_some(dims), keepdim)?;
        x.nansum(dims, keepdim)?.div(&count)
    }

    /// `[variance, mean]` over `dims` (all when empty).
    pub fn var_mean(&self, dims: &[i64], correction: u32, keepdim: bool) -> Result<Vec<Tensor>> {
        let ds = (!dims.is_empty()).then_some(dims);
        Ok(vec![
            self.reduce(ReduceOp::Var { correction }, ds, keepdim)?,
            self.reduce(ReduceOp::Mean, ds, keepdim)?,
        ])
    }

    /// `[standard deviation, mean]` over `dims` (all when empty).
    pub fn std_mean(&self, dims: &[i64], correction: u32, keepdim: bool) -> Result<Vec<Tensor>> {
        let ds = (!dims.is_empty()).then_some(dims);
        Ok(vec![
            self.reduce(ReduceOp::Std { correction }, ds, keepdim)?,
            self.reduce(ReduceOp::Mean, ds, keepdim)?,
        ])
    }

    /// `torch.renorm`: each slice along `dim` whose `p`-norm exceeds
    /// `maxnorm` scaled down to it (by `maxnorm / (norm + 1e-7)`, as
    /// PyTorch); the others unchanged.
    pub fn renorm(&self, p: f64, dim: i64, maxnorm: f64) -> Result<Tensor> {
        const OP: &str = "renorm";
        if p <= 0.0 {
            return Err(Error::invalid(OP, format!("p must be positive, got {p}")));
        }
        if maxnorm < 0.0 {
            return Err(Error::invalid(
                OP,
                format!("maxnorm must be non-negative, got {maxnorm}"),
            ));
        }
        if self.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!("expects at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        let d = crate::core::shape::normalize_dim(OP, dim, self.shape())? as i64;
        let others: Vec<i64> = (0..self.ndim() as i64).filter(|&i| i != d).collect();
        let x = self.to_float()?;
        let norm = x.vector_norm(p, &others, true)?;
        let over = norm.compare_scalar(CmpOp::Gt, Scalar::Float(maxnorm), false)?;
        let scale = norm
            .add_scalar(1e-7)?
            .unary(UnaryOp::Reciprocal)?
            .mul_scalar(maxnorm)?;
        let factor = Tensor::where_cond(&over, &scale, &scale.constant(1.0)?)?;
        x.mul(&factor)
    }

    /// `torch.linalg.vector_norm`: `(Σ |x|^p)^(1/p)` over `dims` (all when
    /// empty); `p` = inf / -inf take the largest / smallest `|x|`, `p` = 0
    /// counts the non-zeros.
    pub fn vector_norm(&self, p: f64, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        let x = self.to_float()?;
        let ds = (!dims.is_empty()).then_some(dims);
        let a = x.abs()?;
        if p == f64::INFINITY {
            return a.reduce(ReduceOp::Max, ds, keepdim);
        }
        if p == f64::NEG_INFINITY {
            return a.reduce(ReduceOp::Min, ds, keepdim);
        }
        if p == 0.0 {
            return a
                .compare_scalar(CmpOp::Ne, Scalar::Float(0.0), false)?
                .to_dtype(x.dtype())?
                .reduce(ReduceOp::Sum, ds, keepdim);
        }
        if p == 1.0 {
            return a.reduce(ReduceOp::Sum, ds, keepdim);
        }
        if p == 2.0 {
            return x.square()?.reduce(ReduceOp::Sum, ds, keepdim)?.sqrt();
        }
        a.binary_scalar(BinaryOp::Pow, Scalar::Float(p), false)?
            .reduce(ReduceOp::Sum, ds, keepdim)?
            .binary_scalar(BinaryOp::Pow, Scalar::Float(1.0 / p), false)
    }

    /// `torch.linalg.matrix_norm` over the last two dims: Frobenius, or the
    /// largest / smallest column (`ord` ±1) or row (`ord` ±inf) sum of
    /// `|x|`, the largest / smallest singular value (`ord` ±2) or their sum
    /// (nuclear).
    pub fn matrix_norm(&self, ord: NormOrd, keepdim: bool) -> Result<Tensor> {
        const OP: &str = "matrix_norm";
        if self.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!("needs at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        let x = self.to_float()?;
        let (rows, cols) = (-2i64, -1i64);
        match ord {
            NormOrd::Fro => x.vector_norm(2.0, &[rows, cols], keepdim),
            NormOrd::P(p) if p == 1.0 || p == -1.0 || p.is_infinite() => {
                // column sums for ±1, row sums for ±inf
                let (sum_dim, pick_dim) = if p.abs() == 1.0 {
                    (rows, cols)
                } else {
                    (cols, rows)
                };
                let sums = x.abs()?.reduce(ReduceOp::Sum, Some(&[sum_dim]), true)?;
                let op = if p > 0.0 { ReduceOp::Max } else { ReduceOp::Min };
                let out = sums.reduce(op, Some(&[pick_dim]), true)?;
                if keepdim {
                    Ok(out)
                } else {
                    out.squeeze(Some(&[rows, cols]))
                }
            }
            NormOrd::P(p) if p == 2.0 || p == -2.0 => {
                if x.numel() == 0 {
                    return Err(Error::shape(
                        OP,
                        format!("ord {p} needs non-empty matrices, got shape {:?}", self.shape()),
                    ));
                }
                let s = x.svdvals()?;
                let out = match ord {
                    NormOrd::Nuc => s.reduce(ReduceOp::Sum, Some(&[-1]), false)?,
                    _ if p > 0.0 => s.reduce(ReduceOp::Max, Some(&[-1]), false)?,
                    _ => s.reduce(ReduceOp::Min, Some(&[-1]), false)?,
                };
                if keepdim {
                    out.unsqueeze(-1)?.unsqueeze(-1)
                } else {
                    Ok(out)
                }
            }
            NormOrd::Nuc => {
                let s = x.svdvals()?.reduce(ReduceOp::Sum, Some(&[-1]), false)?;
                if keepdim {
                    s.unsqueeze(-1)?.unsqueeze(-1)
                } else {
                    Ok(s)
                }
            }
            NormOrd::P(p) => Err(Error::invalid(
                OP,
                format!(
                    "ord {p} is not a matrix norm; use \"fro\", \"nuc\", 2, -2, 1, -1, inf or -inf (shape {:?})",
                    self.shape()
                ),
            )),
        }
    }

    /// `matrix_norm` over the two dims `dims` (moved last first).
    pub fn matrix_norm_dims(&self, ord: NormOrd, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        const OP: &str = "matrix_norm";
        let [d0, d1] = dims else {
            return Err(Error::invalid(
                OP,
                format!("dim must name two dims, got {dims:?}"),
            ));
        };
        let nd = self.ndim() as i64;
        let (a, b) = (
            crate::core::shape::normalize_dim(OP, *d0, self.shape())? as i64,
            crate::core::shape::normalize_dim(OP, *d1, self.shape())? as i64,
        );
        if a == b {
            return Err(Error::invalid(
                OP,
                format!("the two dims must differ, got {dims:?}"),
            ));
        }
        if a == nd - 2 && b == nd - 1 {
            return self.matrix_norm(ord, keepdim);
        }
        let moved = self.movedim(&[a, b], &[-2, -1])?;
        let out = moved.matrix_norm(ord, false)?;
        if keepdim {
            let (lo, hi) = (a.min(b), a.max(b));
            out.unsqueeze(lo)?.unsqueeze(hi)
        } else {
            Ok(out)
        }
    }

    /// `torch.linalg.norm`: without `ord`, the 2-norm of the flattened
    /// input (one dim: a vector norm; two dims: Frobenius); with `ord`, a
    /// vector norm of a 1-D input or over one dim, a matrix norm of a 2-D
    /// input or over two dims.
    pub fn linalg_norm(&self, ord: Option<NormOrd>, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        const OP: &str = "norm";
        let matrix = match dims {
            Some(d) => d.len() == 2,
            None => ord.is_some() && self.ndim() == 2,
        };
        if ord.is_some() && dims.is_none() && !matches!(self.ndim(), 1 | 2) {
            return Err(Error::shape(
                OP,
                format!(
                    "with ord and no dim the input must be 1-D or 2-D, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let dims_v: Vec<i64> = dims.map(<[i64]>::to_vec).unwrap_or_default();
        if matrix {
            let d = if dims.is_some() { dims_v } else { vec![-2, -1] };
            return self.matrix_norm_dims(ord.unwrap_or(NormOrd::Fro), &d, keepdim);
        }
        match ord.unwrap_or(NormOrd::P(2.0)) {
            NormOrd::P(p) => self.vector_norm(p, &dims_v, keepdim),
            NormOrd::Fro | NormOrd::Nuc => Err(Error::invalid(
                OP,
                format!(
                    "\"fro\" and \"nuc\" are matrix norms: give two dims or a 2-D input (shape {:?})",
                    self.shape()
                ),
            )),
        }
    }

    /// The `p`-norm of `self - other`, broadcast (`torch.dist`).
    pub fn dist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        self.sub(other)?.vector_norm(p, &[], false)
    }

    /// `torch.norm`: a number `p` is the vector norm over `dims` (all when
    /// empty); "fro" the Frobenius norm over `dims` (all when empty);
    /// "nuc" the matrix nuclear norm.
    pub fn norm(&self, ord: NormOrd, dims: &[i64], keepdim: bool) -> Result<Tensor> {
        match ord {
            NormOrd::P(p) => self.vector_norm(p, dims, keepdim),
            NormOrd::Fro => self.vector_norm(2.0, dims, keepdim),
            NormOrd::Nuc => self.matrix_norm(NormOrd::Nuc, keepdim),
        }
    }

    /// The covariance matrix of the rows (variables) over the columns
    /// (observations), divisor `N - correction`; a 1-D input is one
    /// variable (a 0-dim result).
    pub fn cov(&self, correction: u32) -> Result<Tensor> {
        const OP: &str = "cov";
        let x = match self.ndim() {
            1 => self.to_float()?.unsqueeze(0)?,
            2 => self.to_float()?,
            _ => {
                return Err(Error::shape(
                    OP,
                    format!("needs a 1-D or 2-D tensor, got shape {:?}", self.shape()),
                ))
            }
        };
        let n = x.shape()[1] as f64 - correction as f64;
        let centered = x.sub(&x.reduce(ReduceOp::Mean, Some(&[1]), true)?)?;
        let c = centered.matmul(&centered.t()?)?.div_scalar(n)?;
        if self.ndim() == 1 {
            c.reshape(&[])
        } else {
            Ok(c)
        }
    }

    /// The correlation coefficients of the rows (`cov` normalized by the
    /// standard deviations, clipped to [-1, 1]).
    pub fn corrcoef(&self) -> Result<Tensor> {
        let c = self.cov(1)?;
        if c.ndim() == 0 {
            return c.div(&c);
        }
        let d = c.diagonal(0, 0, 1)?.sqrt()?;
        c.div(&d.unsqueeze(1)?)?
            .div(&d.unsqueeze(0)?)?
            .clamp(Some(Scalar::Float(-1.0)), Some(Scalar::Float(1.0)))
    }
}
