//! Calculus on sampled values: integration by the trapezoid rule, as
//! `torch.trapezoid` (`trapz`) and `torch.cumulative_trapezoid` define it
//! (along `dim`, with sample points `x`, 1-D along `dim` or `y`'s shape, or
//! a constant spacing `dx`), and differentiation by finite differences,
//! `torch.gradient` (central differences inside, one-sided ones of first or
//! second order at the edges, uniform or given sample points). Composed of
//! `narrow`, `diff`, products, `sum` and `cumsum`, so it runs on every
//! backend and differentiates through its inputs.

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

impl Tensor {
    /// `torch.gradient`: the derivative estimate along each of `dims` (all
    /// when `None`), one tensor per dim. `spacing` has one entry for all the
    /// dims or one per dim: a constant distance, or 1-D sample points as long
    /// as that dim. `edge_order` 1 or 2 is the order of the one-sided
    /// differences at the edges.
    pub fn gradient(
        &self,
        spacing: &[Spacing<'_>],
        dims: Option<&[i64]>,
        edge_order: i64,
    ) -> Result<Vec<Tensor>> {
        const OP: &str = "gradient";
        if edge_order != 1 && edge_order != 2 {
            return Err(Error::invalid(
                OP,
                format!("edge_order must be 1 or 2, got {edge_order}"),
            ));
        }
        if self.ndim() == 0 {
            return Err(Error::shape(
                OP,
                "expects a tensor of at least 1 dim, got a 0-dim tensor",
            ));
        }
        let all: Vec<i64> = (0..self.ndim() as i64).collect();
        let dims = dims.unwrap_or(&all);
        if spacing.len() != 1 && spacing.len() != dims.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "expects one spacing or one per dim ({}), got {}",
                    dims.len(),
                    spacing.len()
                ),
            ));
        }
        let f = self.to_float()?;
        dims.iter()
            .enumerate()
            .map(|(k, &dim)| {
                let d = normalize_dim(OP, dim, f.shape())?;
                let n = f.shape()[d];
                if n < edge_order as usize + 1 {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "each dim needs at least edge_order + 1 = {} samples, dim {d} of shape {:?} has {n}",
                            edge_order + 1,
                            f.shape()
                        ),
                    ));
                }
                let s = if spacing.len() == 1 { spacing[0] } else { spacing[k] };
                f.gradient_along(d, s, edge_order)
            })
            .collect()
    }

    /// [`Tensor::gradient`] along one dim `d` of a float tensor.
    fn gradient_along(&self, d: usize, spacing: Spacing<'_>, edge_order: i64) -> Result<Tensor> {
        const OP: &str = "gradient";
        let n = self.shape()[d] as i64;
        let di = d as i64;
        let at = |start: i64, len: i64| self.narrow(di, start, len);
        // a 1-D coefficient tensor along dim d, broadcast over the others
        let along = |c: Tensor| -> Result<Tensor> {
            let mut shape = vec![1i64; self.ndim()];
            shape[d] = c.numel() as i64;
            c.to_dtype(self.dtype())?.reshape(&shape)
        };
        let (first, inner, last) = match spacing {
            Spacing::Step(h) => {
                let inner = at(2, n - 2)?.sub(&at(0, n - 2)?)?.div_scalar(2.0 * h)?;
                let (first, last) = if edge_order == 1 {
                    (
                        at(1, 1)?.sub(&at(0, 1)?)?.div_scalar(h)?,
                        at(n - 1, 1)?.sub(&at(n - 2, 1)?)?.div_scalar(h)?,
                    )
                } else {
                    let lin = |a: f64, x: Tensor, b: f64, y: Tensor, c: f64, z: Tensor| -> Result<Tensor> {
                        x.mul_scalar(a)?
                            .add(&y.mul_scalar(b)?)?
                            .add(&z.mul_scalar(c)?)?
                            .div_scalar(h)
                    };
                    (
                        lin(-1.5, at(0, 1)?, 2.0, at(1, 1)?, -0.5, at(2, 1)?)?,
                        lin(0.5, at(n - 3, 1)?, -2.0, at(n - 2, 1)?, 1.5, at(n - 1, 1)?)?,
                    )
                };
                (first, inner, last)
            }
            Spacing::Points(x) => {
                if x.ndim() != 1 || x.numel() as i64 != n {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "sample points for dim {d} must be 1-D with {n} values, got shape {:?}",
                            x.shape()
                        ),
                    ));
                }
                let x = x.to_dtype(crate::core::DType::F64)?.to_device(self.device())?;
                let dx = x.diff(1, 0, None, None)?;
                let (h1, h2) = (dx.narrow(0, 0, n - 2)?, dx.narrow(0, 1, n - 2)?);
                let sum = h1.add(&h2)?;
                // the three-point weights of numpy's second-order formula
                let a = h2.neg()?.div(&h1.mul(&sum)?)?;
                let b = h2.sub(&h1)?.div(&h1.mul(&h2)?)?;
                let c = h1.div(&h2.mul(&sum)?)?;
                let inner = along(a)?
                    .mul(&at(0, n - 2)?)?
                    .add(&along(b)?.mul(&at(1, n - 2)?)?)?
                    .add(&along(c)?.mul(&at(2, n - 2)?)?)?;
                let step = |i: i64| -> Result<Tensor> { along(dx.narrow(0, i, 1)?) };
                let (first, last) = if edge_order == 1 {
                    (
                        at(1, 1)?.sub(&at(0, 1)?)?.div(&step(0)?)?,
                        at(n - 1, 1)?.sub(&at(n - 2, 1)?)?.div(&step(n - 2)?)?,
                    )
                } else {
                    let (d1, d2) = (dx.narrow(0, 0, 1)?, dx.narrow(0, 1, 1)?);
                    let s = d1.add(&d2)?;
                    let a0 = d1.mul_scalar(2.0)?.add(&d2)?.neg()?.div(&d1.mul(&s)?)?;
                    let b0 = s.div(&d1.mul(&d2)?)?;
                    let c0 = d1.neg()?.div(&d2.mul(&s)?)?;
                    let first = along(a0)?
                        .mul(&at(0, 1)?)?
                        .add(&along(b0)?.mul(&at(1, 1)?)?)?
                        .add(&along(c0)?.mul(&at(2, 1)?)?)?;
                    let (d1, d2) = (dx.narrow(0, n - 3, 1)?, dx.narrow(0, n - 2, 1)?);
                    let s = d1.add(&d2)?;
                    let a1 = d2.div(&d1.mul(&s)?)?;
                    let b1 = s.neg()?.div(&d1.mul(&d2)?)?;
                    let c1 = d2.mul_scalar(2.0)?.add(&d1)?.div(&d2.mul(&s)?)?;
                    let last = along(a1)?
                        .mul(&at(n - 3, 1)?)?
                        .add(&along(b1)?.mul(&at(n - 2, 1)?)?)?
                        .add(&along(c1)?.mul(&at(n - 1, 1)?)?)?;
                    (first, last)
                };
                (first, inner, last)
            }
        };
        Tensor::cat(&[first, inner, last], di)
    }
}
