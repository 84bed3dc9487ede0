//! Integration of sampled values by the trapezoid rule, as
//! `torch.trapezoid` (`trapz`) and `torch.cumulative_trapezoid` define it:
//! along `dim`, with sample points `x` (1-D along `dim`, or `y`'s shape) or
//! a constant spacing `dx`. Composed of `narrow`, `diff`, products, `sum`
//! and `cumsum`, so it runs on every backend and differentiates through
//! both `y` and `x`.

use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::core::shape::normalize_dim;

/// Where the samples are: at `x`, or `dx` apart.
#[derive(Clone, Copy)]
pub enum Spacing<'a> {
    /// Sample points: 1-D along `dim`, or `y`'s shape.
    Points(&'a Tensor),
    /// A constant distance between neighbours.
    Step(f64),
}

impl Tensor {
    /// The trapezoid rule's areas between neighbours along `dim`: `n - 1`
    /// of them for `n` samples.
    fn trapezoid_areas(&self, op: &'static str, spacing: Spacing<'_>, dim: i64) -> Result<(Tensor, usize)> {
        let y = if self.dtype().is_float() {
            self.clone()
        } else {
            self.to_dtype(crate::core::DType::F32)?
        };
        if y.ndim() == 0 {
            return Err(Error::shape(
                op,
                "expects a tensor of at least 1 dim, got a 0-dim tensor",
            ));
        }
        let d = normalize_dim(op, dim, y.shape())?;
        let n = y.shape()[d];
        if n == 0 {
            return Ok((y, d));
        }
        let mids = y
            .narrow(d as i64, 1, n as i64 - 1)?
            .add(&y.narrow(d as i64, 0, n as i64 - 1)?)?
            .mul_scalar(0.5)?;
        let areas = match spacing {
            Spacing::Step(dx) => mids.mul_scalar(dx)?,
            Spacing::Points(x) => {
                let widths = if x.ndim() == 1 {
                    if x.shape()[0] != n {
                        return Err(Error::shape(
                            op,
                            format!(
                                "x has {} points but y has {n} along dim {d} (shape {:?})",
                                x.shape()[0],
                                y.shape()
                            ),
                        ));
                    }
                    // along dim, broadcast over the others
                    let mut shape = vec![1i64; y.ndim()];
                    shape[d] = n as i64 - 1;
                    x.diff(1, 0, None, None)?.reshape(&shape)?
                } else if x.shape() == y.shape() {
                    x.diff(1, d as i64, None, None)?
                } else {
                    return Err(Error::shape(
                        op,
                        format!(
                            "x must be 1-D or of y's shape, got x {:?} and y {:?}",
                            x.shape(),
                            y.shape()
                        ),
                    ));
                };
                mids.mul(&widths)?
            }
        };
        Ok((areas, d))
    }

    /// The integral of `self` along `dim` by the trapezoid rule
    /// (`torch.trapezoid`; 0 for fewer than two samples).
    pub fn trapezoid(&self, spacing: Spacing<'_>, dim: i64) -> Result<Tensor> {
        let (areas, d) = self.trapezoid_areas("trapezoid", spacing, dim)?;
        areas.reduce(ReduceOp::Sum, Some(&[d as i64]), false)
    }

    /// The running integral along `dim`: `n - 1` values for `n` samples
    /// (`torch.cumulative_trapezoid`).
    pub fn cumulative_trapezoid(&self, spacing: Spacing<'_>, dim: i64) -> Result<Tensor> {
        let (areas, d) = self.trapezoid_areas("cumulative_trapezoid", spacing, dim)?;
        if self.shape()[d] == 0 {
            return Ok(areas);
        }
        areas.cumsum(d as i64, None)
    }
}
