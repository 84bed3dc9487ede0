//! The convolutional family (`torch.nn.functional`'s conv, pooling,
//! normalisation and resampling ops), written once over views and the
//! existing kernels so that every backend and dtype gets them, with autograd
//! through their parts:
//! - [`windows`]: the sliding-window view of the spatial dims and its adjoint
//!   (`unfold`/`fold`, im2col/col2im);
//! - [`conv`]: `conv1d/2d/3d` and `conv_transpose1d/2d/3d` as grouped GEMMs
//!   over the windows;
//! - [`pool`]: max, average and adaptive pooling;
//! - [`fractional`]: fractional max pooling (windows at random places);
//! - [`norm`]: batch, group and instance normalisation;
//! - [`resample`]: `interpolate`, `pixel_shuffle`, channel dropout;
//! - [`grid`]: `affine_grid` and `grid_sample` (spatial transformers);
//! - [`memory_format`]: channels-last layouts of image batches.

pub mod conv;
pub(crate) mod cudnn;
pub mod fractional;
pub mod grid;
pub mod memory_format;
pub mod norm;
pub mod pool;
pub mod resample;
pub mod windows;

use crate::core::error::{Error, Result};

/// The name of the `n`-D member of an op family (`names` for 1 to 3 spatial
/// dims), or an error for other ranks.
pub(crate) fn op_name(names: &[&'static str; 3], n: usize) -> Result<&'static str> {
    names
        .get(n.wrapping_sub(1))
        .copied()
        .ok_or_else(|| Error::invalid(names[0], format!("{n} spatial dims (1 to 3 are supported)")))
}

/// The error for windows that do not fit the (padded) input.
pub(crate) fn too_small(
    op: &'static str,
    spatial: &[usize],
    kernel: &[i64],
    dilation: &[i64],
    shape: &[usize],
) -> Error {
    Error::shape(
        op,
        format!(
            "the (padded) input's spatial size {spatial:?} is smaller than the kernel {kernel:?} with dilation {dilation:?} (shape {shape:?})"
        ),
    )
}

/// A per-dimension option (`stride`, `dilation`, `kernel_size`, ...) given as
/// one value for every spatial dim or one per dim, as PyTorch's `_ntuple`.
pub(crate) fn per_dim(op: &'static str, what: &str, values: &[i64], n: usize) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; n]),
        len if len == n => Ok(values.to_vec()),
        _ => Err(Error::invalid(
            op,
            format!("{what} must be one int or {n} ints, got {values:?}"),
        )),
    }
}

/// [`per_dim`], every value at least `min`.
pub(crate) fn per_dim_min(
    op: &'static str,
    what: &str,
    values: &[i64],
    n: usize,
    min: i64,
) -> Result<Vec<i64>> {
    let v = per_dim(op, what, values, n)?;
    if v.iter().any(|&x| x < min) {
        return Err(Error::invalid(
            op,
            format!("{what} must be at least {min} in every dim, got {values:?}"),
        ));
    }
    Ok(v)
}

/// The input as `[N, C, *spatial]` with `n` spatial dims, adding a batch dim
/// to an unbatched `[C, *spatial]` input; the flag says whether one was added.
pub(crate) fn batched(op: &'static str, x: &super::Tensor, n: usize) -> Result<(super::Tensor, bool)> {
    if x.ndim() == n + 2 {
        Ok((x.clone(), false))
    } else if x.ndim() == n + 1 {
        Ok((x.unsqueeze(0)?, true))
    } else {
        Err(Error::shape(
            op,
            format!(
                "expects a {}-D (unbatched) or {}-D (batched) input, got shape {:?}",
                n + 1,
                n + 2,
                x.shape()
            ),
        ))
    }
}

/// Floating-point inputs only (as PyTorch's kernels for these ops).
pub(crate) fn check_float(op: &'static str, x: &super::Tensor) -> Result<()> {
    if x.dtype().is_float() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "expects a floating-point input, got {} of shape {:?}",
                x.dtype(),
                x.shape()
            ),
        ))
    }
}

/// `x [.., *S]` padded by `before[i]`/`after[i]` on spatial dim `i` of the
/// last `before.len()` dims (negative values crop), or `x` itself when there
/// is nothing to pad.
pub(crate) fn pad_spatial(
    x: &super::Tensor,
    before: &[i64],
    after: &[i64],
    mode: &str,
    value: f64,
) -> Result<super::Tensor> {
    if before.iter().chain(after).all(|&p| p == 0) {
        return Ok(x.clone());
    }
    // F.pad's order: last dim first, (before, after) pairs
    let pad: Vec<i64> = (0..before.len())
        .rev()
        .flat_map(|i| [before[i], after[i]])
        .collect();
    x.pad(&pad, mode, value)
}
