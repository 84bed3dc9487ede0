//! Spatial transformers: `F.affine_grid` (sampling grids from affine
//! matrices) and `F.grid_sample` (bilinear or nearest sampling of `[N, C,
//! H, W]` at the grid's normalised `(x, y)` positions, with zeros, border or
//! reflection padding), written over gathers and elementwise ops so that
//! both the input and the grid get gradients, as in PyTorch.

use crate::core::error::{Error, Result};
use crate::core::op::CmpOp;
use crate::tensor::{DType, Scalar, Tensor};

/// `n` points from -1 to 1 (scaled by `(n - 1) / n` without
/// `align_corners`; 0 for a single point), as PyTorch's base grids.
fn base_line(n: usize, align_corners: bool, like: &Tensor) -> Result<Tensor> {
    if n <= 1 {
        return Tensor::zeros(&[n], Some(like.dtype()), like.device());
    }
    let line = Tensor::linspace(-1.0, 1.0, n as i64, Some(like.dtype()), like.device())?;
    if align_corners {
        Ok(line)
    } else {
        line.mul_scalar((n - 1) as f64 / n as f64)
    }
}

/// A grid coordinate in `[-1, 1]` as a pixel position over `size` pixels.
fn unnormalize(g: &Tensor, size: usize, align_corners: bool) -> Result<Tensor> {
    let s = size as f64;
    if align_corners {
        g.add_scalar(1.0)?.mul_scalar((s - 1.0) / 2.0)
    } else {
        g.add_scalar(1.0)?.mul_scalar(s)?.sub_scalar(1.0)?.div_scalar(2.0)
    }
}

/// Positions reflected into `[low/2, high/2]` (PyTorch's reflect_coordinates,
/// bounds given doubled).
fn reflect(x: &Tensor, twice_low: f64, twice_high: f64) -> Result<Tensor> {
    if twice_low == twice_high {
        return x.mul_scalar(0.0);
    }
    let min = twice_low / 2.0;
    let span = (twice_high - twice_low) / 2.0;
    let d = x.sub_scalar(min)?.abs()?;
    let extra = d.remainder_scalar(span)?;
    let flips = d.div_scalar(span)?.floor()?;
    let even = flips
        .remainder_scalar(2.0)?
        .compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
    Tensor::where_cond(
        &even,
        &extra.add_scalar(min)?,
        &extra.neg()?.add_scalar(span + min)?,
    )
}

/// The cubic convolution weights (A = -0.75) of the four taps around a
/// position whose distance past its floor is `t`, as tensors.
fn cubic_weights(t: &Tensor) -> Result<[Tensor; 4]> {
    const A: f64 = -0.75;
    // near(x) = ((A + 2)·x - (A + 3))·x² + 1 for |x| <= 1
    let near = |x: &Tensor| -> Result<Tensor> {
        x.mul_scalar(A + 2.0)?
            .sub_scalar(A + 3.0)?
            .mul(x)?
            .mul(x)?
            .add_scalar(1.0)
    };
    // far(x) = ((A·x - 5A)·x + 8A)·x - 4A for 1 < |x| < 2
    let far = |x: &Tensor| -> Result<Tensor> {
        x.mul_scalar(A)?
            .sub_scalar(5.0 * A)?
            .mul(x)?
            .add_scalar(8.0 * A)?
            .mul(x)?
            .sub_scalar(4.0 * A)
    };
    let one_minus = t.neg()?.add_scalar(1.0)?;
    Ok([
        far(&t.add_scalar(1.0)?)?,
        near(t)?,
        near(&one_minus)?,
        far(&one_minus.add_scalar(1.0)?)?,
    ])
}

/// Pixel positions after the padding mode's treatment of the outside.
fn pad_positions(x: Tensor, size: usize, mode: &str, align_corners: bool) -> Result<Tensor> {
    let hi = size as f64 - 1.0;
    match mode {
        "zeros" => Ok(x),
        "border" => x.clamp(Some(Scalar::Float(0.0)), Some(Scalar::Float(hi))),
        _ => {
            let r = if align_corners {
                reflect(&x, 0.0, 2.0 * hi)?
            } else {
                reflect(&x, -1.0, 2.0 * size as f64 - 1.0)?
            };
            r.clamp(Some(Scalar::Float(0.0)), Some(Scalar::Float(hi)))
        }
    }
}

impl Tensor {
    /// `F.affine_grid(theta, size, align_corners)`: theta `[N, 2, 3]` with
    /// size `[N, C, H, W]` gives a grid `[N, H, W, 2]`; theta `[N, 3, 4]` with
    /// size `[N, C, D, H, W]` a grid `[N, D, H, W, 3]`.
    pub fn affine_grid(&self, size: &[i64], align_corners: bool) -> Result<Tensor> {
        const OP: &str = "affine_grid";
        let spatial = size.len().saturating_sub(2);
        let ok_theta = matches!(spatial, 2 | 3)
            && self.ndim() == 3
            && self.shape()[1] == spatial
            && self.shape()[2] == spatial + 1
            && self.shape()[0] as i64 == size[0];
        if !ok_theta || !self.dtype().is_float() || size.iter().any(|&s| s < 1) {
            return Err(Error::shape(
                OP,
                format!(
                    "expects float theta [N, 2, 3] with size [N, C, H, W] or theta [N, 3, 4] with size [N, C, D, H, W], got theta {:?} and size {size:?}",
                    self.shape()
                ),
            ));
        }
        let dims: Vec<usize> = size[2..].iter().map(|&s| s as usize).collect();
        // base [*spatial, spatial + 1]: (x, y[, z], 1), x along the last dim
        let mut coords = Vec::with_capacity(spatial + 1);
        for k in 0..spatial {
            let d = spatial - 1 - k; // x is the last spatial dim
            let line = base_line(dims[d], align_corners, self)?;
            let mut shape = vec![1i64; spatial];
            shape[d] = -1;
            let full: Vec<i64> = dims.iter().map(|&v| v as i64).collect();
            coords.push(line.reshape(&shape)?.expand(&full)?);
        }
        coords.push(Tensor::ones(&dims, Some(self.dtype()), self.device())?);
        let base = Tensor::stack(&coords, spatial as i64)?;
        let points: usize = dims.iter().product();
        let grid = base
            .reshape(&[1, points as i64, spatial as i64 + 1])?
            .matmul(&self.transpose(1, 2)?)?;
        let mut shape = vec![size[0]];
        shape.extend(dims.iter().map(|&v| v as i64));
        shape.push(spatial as i64);
        grid.reshape(&shape)
    }

    /// `F.grid_sample(input, grid, mode, padding_mode, align_corners)`:
    /// input `[N, C, H, W]`, grid `[N, Ho, Wo, 2]` of `(x, y)` in `[-1, 1]`;
    /// mode "bilinear", "nearest" or "bicubic" (A = -0.75; the padding
    /// mode applies to each of the 16 taps, as in PyTorch), padding_mode
    /// "zeros", "border" or "reflection"; result `[N, C, Ho, Wo]`.
    pub fn grid_sample(
        &self,
        grid: &Tensor,
        mode: &str,
        padding_mode: &str,
        align_corners: bool,
    ) -> Result<Tensor> {
        const OP: &str = "grid_sample";
        if self.ndim() != 4 || grid.ndim() != 4 || grid.shape()[3] != 2 || grid.shape()[0] != self.shape()[0]
        {
            return Err(Error::shape(
                OP,
                format!(
                    "expects input [N, C, H, W] and grid [N, Ho, Wo, 2], got {:?} and {:?} (5-D inputs are not supported)",
                    self.shape(),
                    grid.shape()
                ),
            ));
        }
        if !self.dtype().is_float() || grid.dtype() != self.dtype() {
            return Err(Error::invalid(
                OP,
                format!(
                    "input ({}) and grid ({}) must share a floating-point dtype",
                    self.dtype(),
                    grid.dtype()
                ),
            ));
        }
        self.same_device(OP, grid)?;
        if !matches!(mode, "bilinear" | "nearest" | "bicubic") {
            return Err(Error::invalid(
                OP,
                format!("unknown mode \"{mode}\" (expected bilinear, nearest or bicubic)"),
            ));
        }
        if !matches!(padding_mode, "zeros" | "border" | "reflection") {
            return Err(Error::invalid(
                OP,
                format!("unknown padding_mode \"{padding_mode}\" (expected zeros, border or reflection)"),
            ));
        }
        let [n, c, h, w] = [0, 1, 2, 3].map(|i| self.shape()[i]);
        let (ho, wo) = (grid.shape()[1], grid.shape()[2]);
        let (gx, gy) = (
            unnormalize(&grid.select(3, 0)?, w, align_corners)?,
            unnormalize(&grid.select(3, 1)?, h, align_corners)?,
        );
        let ix = pad_positions(gx.clone(), w, padding_mode, align_corners)?;
        let iy = pad_positions(gy.clone(), h, padding_mode, align_corners)?;
        let flat = self.reshape(&[n as i64, c as i64, (h * w) as i64])?;
        // the input at integer positions (xs, ys) [N, Ho, Wo], zero outside
        let corner = |xs: &Tensor, ys: &Tensor| -> Result<Tensor> {
            // 1 where 0 <= t <= hi - 1, as the input's dtype
            let inside = |t: &Tensor, hi: usize| -> Result<Tensor> {
                let lo = t.compare_scalar(CmpOp::Ge, Scalar::Float(0.0), false)?;
                let up = t.compare_scalar(CmpOp::Le, Scalar::Float(hi as f64 - 1.0), false)?;
                lo.to_dtype(self.dtype())?.mul(&up.to_dtype(self.dtype())?)
            };
            let valid = inside(xs, w)?.mul(&inside(ys, h)?)?;
            let clamp = |t: &Tensor, hi: usize| {
                t.clamp(Some(Scalar::Float(0.0)), Some(Scalar::Float(hi as f64 - 1.0)))
            };
            let idx = clamp(ys, h)?
                .mul_scalar(w as f64)?
                .add(&clamp(xs, w)?)?
                .to_dtype(DType::I64)?
                .reshape(&[n as i64, 1, (ho * wo) as i64])?
                .expand(&[n as i64, c as i64, (ho * wo) as i64])?;
            let vals = flat
                .gather(2, &idx)?
                .reshape(&[n as i64, c as i64, ho as i64, wo as i64])?;
            vals.mul(&valid.unsqueeze(1)?)
        };
        if mode == "nearest" {
            return corner(&ix.round()?, &iy.round()?);
        }
        if mode == "bicubic" {
            // taps at floor - 1 ..= floor + 2 of the unpadded position, each
            // tap's position padded on its own
            let (x0, y0) = (gx.floor()?, gy.floor()?);
            let (wx, wy) = (cubic_weights(&gx.sub(&x0)?)?, cubic_weights(&gy.sub(&y0)?)?);
            let mut out: Option<Tensor> = None;
            for (j, wyj) in wy.iter().enumerate() {
                let ys = pad_positions(y0.add_scalar(j as f64 - 1.0)?, h, padding_mode, align_corners)?;
                for (i, wxi) in wx.iter().enumerate() {
                    let xs = pad_positions(x0.add_scalar(i as f64 - 1.0)?, w, padding_mode, align_corners)?;
                    let term = corner(&xs, &ys)?.mul(&wxi.mul(wyj)?.unsqueeze(1)?)?;
                    out = Some(match out {
                        Some(acc) => acc.add(&term)?,
                        None => term,
                    });
                }
            }
            return out.ok_or_else(|| Error::invalid(OP, "internal: no taps"));
        }
        let (x0, y0) = (ix.floor()?, iy.floor()?);
        let (x1, y1) = (x0.add_scalar(1.0)?, y0.add_scalar(1.0)?);
        let (wx1, wy1) = (ix.sub(&x0)?, iy.sub(&y0)?);
        let (wx0, wy0) = (wx1.neg()?.add_scalar(1.0)?, wy1.neg()?.add_scalar(1.0)?);
        let term = |xs: &Tensor, ys: &Tensor, a: &Tensor, b: &Tensor| -> Result<Tensor> {
            corner(xs, ys)?.mul(&a.mul(b)?.unsqueeze(1)?)
        };
        term(&x0, &y0, &wx0, &wy0)?
            .add(&term(&x1, &y0, &wx1, &wy0)?)?
            .add(&term(&x0, &y1, &wx0, &wy1)?)?
            .add(&term(&x1, &y1, &wx1, &wy1)?)
    }
}
