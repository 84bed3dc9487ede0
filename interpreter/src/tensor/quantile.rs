//! `quantile` and `nanquantile` (`torch.quantile`): the values along a dim
//! (or all of them) are sorted, read at rank `q · (n - 1)` and interpolated
//! between the neighbouring ranks as `interpolation` says. A row holding a
//! NaN gives NaN; `nanquantile` counts only the other values (an all-NaN row
//! gives NaN). Ranks are computed in f64, so they stay exact in f16/bf16.
//! Differentiable through the sort's `gather` and `lerp`.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::shape::normalize_dim;
use crate::core::{HostValues, Scalar};

/// How a quantile between two ranks is read (`torch.quantile`'s
/// `interpolation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// `below + (above - below) · fraction`.
    Linear,
    /// The value at the rank below.
    Lower,
    /// The value at the rank above.
    Higher,
    /// The mean of the two values (the value itself at a whole rank).
    Midpoint,
    /// The value at the nearest rank (halves to even).
    Nearest,
}

impl Interpolation {
    /// Parses PyTorch's names.
    pub fn parse(op: &'static str, s: &str) -> Result<Interpolation> {
        Ok(match s {
            "linear" => Interpolation::Linear,
            "lower" => Interpolation::Lower,
            "higher" => Interpolation::Higher,
            "midpoint" => Interpolation::Midpoint,
            "nearest" => Interpolation::Nearest,
            other => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "unknown interpolation '{other}' (expected linear, lower, higher, midpoint, nearest)"
                    ),
                ))
            }
        })
    }
}

/// The quantiles asked for: one number, or a 0-dim or 1-D tensor of them.
#[derive(Clone, Copy, Debug)]
pub enum Quantiles<'a> {
    /// One quantile: the result has no quantile dim.
    One(f64),
    /// A tensor of quantiles: a 1-D one puts its length first in the result.
    Many(&'a Tensor),
}

impl Tensor {
    /// The `q`-quantiles of all values (`dim` `None`) or along `dim`.
    pub fn quantile(
        &self,
        q: Quantiles<'_>,
        dim: Option<i64>,
        keepdim: bool,
        interpolation: Interpolation,
    ) -> Result<Tensor> {
        quantile_of(self, "quantile", q, dim, keepdim, interpolation, false)
    }

    /// As [`Tensor::quantile`], with NaN values left out.
    pub fn nanquantile(
        &self,
        q: Quantiles<'_>,
        dim: Option<i64>,
        keepdim: bool,
        interpolation: Interpolation,
    ) -> Result<Tensor> {
        quantile_of(self, "nanquantile", q, dim, keepdim, interpolation, true)
    }
}

/// The quantiles as a 1-D f64 tensor on `x`'s device, checked to lie in
/// [0, 1], and whether the result keeps a quantile dim.
fn quantile_tensor(op: &'static str, x: &Tensor, q: Quantiles<'_>) -> Result<(Tensor, bool)> {
    let (values, many) = match q {
        Quantiles::One(v) => (vec![v], false),
        Quantiles::Many(t) => {
            if t.ndim() > 1 {
                return Err(Error::shape(
                    op,
                    format!(
                        "q must be a number, a 0-dim or a 1-D tensor, got shape {:?}",
                        t.shape()
                    ),
                ));
            }
            if !t.dtype().is_float() {
                return Err(Error::invalid(
                    op,
                    format!("q must be a float tensor, got {}", t.dtype()),
                ));
            }
            let h = t.to_host()?;
            let v = (0..h.len())
                .filter_map(|i| h.get(i))
                .map(|s| s.to_f64())
                .collect();
            (v, t.ndim() == 1)
        }
    };
    if let Some(bad) = values.iter().find(|v| !(0.0..=1.0).contains(*v)) {
        return Err(Error::invalid(
            op,
            format!("q must be in the range [0, 1], got {bad}"),
        ));
    }
    let n = values.len();
    Ok((
        Tensor::from_host(&HostValues::Float(values), &[n], DType::F64, x.device())?,
        many,
    ))
}

fn quantile_of(
    x: &Tensor,
    op: &'static str,
    q: Quantiles<'_>,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: Interpolation,
    ignore_nan: bool,
) -> Result<Tensor> {
    if !x.dtype().is_float() {
        return Err(Error::invalid(
            op,
            format!("expects a floating-point tensor, got {}", x.dtype()),
        ));
    }
    if x.numel() == 0 {
        return Err(Error::shape(
            op,
            format!("expects a non-empty tensor, got shape {:?}", x.shape()),
        ));
    }
    let (q, many) = quantile_tensor(op, x, q)?;
    if let Some(dim) = dim {
        if x.ndim() == 0 && dim != 0 && dim != -1 {
            return Err(Error::shape(
                op,
                format!("dim {dim} is out of range for a 0-dim tensor"),
            ));
        }
    }
    // the values to sort, with the reduced dim last
    let (rows, d) = match dim {
        None => (x.reshape(&[-1])?, None),
        Some(_) if x.ndim() == 0 => (x.reshape(&[1])?, None),
        Some(dim) => {
            let d = normalize_dim(op, dim, x.shape())?;
            (x.movedim(&[d as i64], &[-1])?, Some(d))
        }
    };
    let sorted = rows.sort(-1, false)?.swap_remove(0);
    let n = *sorted.shape().last().unwrap_or(&1) as f64;
    let nans = sorted
        .isnan()?
        .to_dtype(DType::F64)?
        .reduce(ReduceOp::Sum, Some(&[-1]), true)?;
    // rank = q · (count - 1), in f64, one row of ranks per row of values
    let ranks = if ignore_nan {
        let count = nans.neg()?.add_scalar(n)?;
        q.mul(&count.sub_scalar(1.0)?)?.maximum_scalar(0.0)?
    } else {
        // a row holding NaN reads its last value: NaN sorts last
        let has_nan = nans.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
        let last = Tensor::scalar(Scalar::Float(n - 1.0), DType::F64, x.device())?;
        Tensor::where_cond(&has_nan, &last, &q.mul_scalar(n - 1.0)?)?
    };
    let at = |r: &Tensor| sorted.gather(-1, &r.to_dtype(DType::I64)?);
    let out = match interpolation {
        Interpolation::Lower => at(&ranks.floor()?)?,
        Interpolation::Higher => at(&ranks.ceil()?)?,
        Interpolation::Nearest => at(&ranks.round()?)?,
        Interpolation::Linear | Interpolation::Midpoint => {
            let below = ranks.floor()?;
            let mut weight = ranks.sub(&below)?;
            if interpolation == Interpolation::Midpoint {
                let between = weight.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
                let half = Tensor::scalar(Scalar::Float(0.5), DType::F64, x.device())?;
                weight = Tensor::where_cond(&between, &half, &weight)?;
            }
            at(&below)?.lerp(&at(&ranks.ceil()?)?, &weight.to_dtype(x.dtype())?)?
        }
    };
    // [..., Q] → [Q, ...], the reduced dim kept as 1 or dropped
    let mut out = out.movedim(&[-1], &[0])?;
    if keepdim {
        out = match d {
            Some(d) => out.unsqueeze(d as i64 + 1)?,
            None => {
                let mut shape = vec![out.shape()[0] as i64];
                shape.extend(std::iter::repeat_n(1, x.ndim()));
                out.reshape(&shape)?
            }
        };
    }
    if many {
        Ok(out)
    } else {
        out.squeeze(Some(&[0]))
    }
}
