//! Shape arithmetic: element counts, contiguous strides, NumPy broadcasting and
//! the normalisation of (possibly negative) dims and indices.

use crate::core::error::{Error, Result};

/// Number of elements of a shape (1 for a 0-dim shape); saturates at
/// `usize::MAX` for a shape whose count overflows (which no tensor has:
/// [`checked_numel`] refuses it where shapes come in).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
}

/// Number of elements of a shape, or an error when the product overflows.
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("shape {shape:?} has more elements than can be addressed"),
            )
        })
}

/// The most dims a tensor may have (NumPy 2 stops at 64 too).
pub const MAX_DIMS: usize = 64;

/// Fails when a shape has more than [`MAX_DIMS`] dims.
pub fn check_rank(op: &'static str, ndim: usize) -> Result<()> {
    if ndim > MAX_DIMS {
        return Err(Error::shape(
            op,
            format!("a tensor may have at most {MAX_DIMS} dims, got {ndim}"),
        ));
    }
    Ok(())
}

/// Fails when a new tensor of `shape` and `dtype` could not be allocated on
/// `device` before anything is allocated: too many dims or elements, more
/// than the memory budget entered on this thread has left, or (on the host)
/// more than the machine or the process's address space allows
/// ([`super::memory::check_bytes`]).
pub fn check_alloc_on(
    op: &'static str,
    shape: &[usize],
    dtype: super::DType,
    device: super::Device,
) -> Result<()> {
    check_rank(op, shape.len())?;
    let n = checked_numel(op, shape)?;
    let bytes = n.checked_mul(dtype.size_in_bytes()).ok_or_else(|| {
        Error::shape(
            op,
            format!("a {dtype} tensor of shape {shape:?} has more bytes than can be addressed"),
        )
    })?;
    super::memory::check_bytes(op, bytes, device == super::Device::Cpu)
}

/// [`check_alloc_on`] for host memory (the strictest device).
pub fn check_alloc(op: &'static str, shape: &[usize], dtype: super::DType) -> Result<()> {
    check_alloc_on(op, shape, dtype, super::Device::Cpu)
}

/// Row-major (C-contiguous) strides of a shape, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc: usize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc = acc.saturating_mul(d.max(1));
    }
    strides
}

/// The NumPy broadcast of two shapes, or an error naming `op` and both shapes.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::BroadcastMismatch {
                    op,
                    lhs: a.to_vec(),
                    rhs: b.to_vec(),
                })
            }
        };
    }
    checked_numel(op, &out)?;
    Ok(out)
}

/// Maps a dim in `-ndim..ndim` to `0..ndim`.
pub fn normalize_dim(op: &'static str, dim: i64, shape: &[usize]) -> Result<usize> {
    normalize_dim_for(op, dim, shape.len(), shape)
}

/// Like [`normalize_dim`] but for a tensor with `ndim` positions to insert at
/// (`unsqueeze`, `stack` accept `-ndim-1..=ndim`).
pub fn normalize_dim_for(op: &'static str, dim: i64, ndim: usize, shape: &[usize]) -> Result<usize> {
    let n = ndim as i64;
    let d = if dim < 0 { dim + n } else { dim };
    if d < 0 || d >= n.max(0) {
        return Err(Error::DimOutOfRange {
            op,
            dim,
            ndim,
            shape: shape.to_vec(),
        });
    }
    Ok(d as usize)
}

/// Maps an index in `-size..size` to `0..size`.
pub fn normalize_index(op: &'static str, index: i64, dim: usize, shape: &[usize]) -> Result<usize> {
    let size = shape[dim];
    let i = if index < 0 { index + size as i64 } else { index };
    if i < 0 || i >= size as i64 {
        return Err(Error::IndexOutOfRange {
            op,
            index,
            dim,
            size,
            shape: shape.to_vec(),
        });
    }
    Ok(i as usize)
}

/// Resolves a requested shape with at most one `-1` against `numel` elements.
pub fn infer_shape(op: &'static str, from: &[usize], to: &[i64]) -> Result<Vec<usize>> {
    let n = numel(from);
    let bad = || Error::InvalidReshape {
        op,
        from: from.to_vec(),
        numel: n,
        to: to.to_vec(),
    };
    if to.iter().filter(|&&d| d == -1).count() > 1 {
        return Err(Error::invalid(
            op,
            format!("only one dimension can be -1, got {to:?}"),
        ));
    }
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in to.iter().enumerate() {
        match d {
            -1 if infer.is_none() => infer = Some(i),
            d if d >= 0 => known = known.checked_mul(d as usize).ok_or_else(bad)?,
            _ => return Err(bad()),
        }
    }
    let mut out: Vec<usize> = to.iter().map(|&d| d.max(0) as usize).collect();
    match infer {
        Some(i) => {
            if known == 0 || n % known != 0 {
                return Err(bad());
            }
            out[i] = n / known;
        }
        None if known != n => return Err(bad()),
        None => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes("t", &[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes("t", &[], &[2, 2]).unwrap(), vec![2, 2]);
        assert_eq!(broadcast_shapes("t", &[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
        assert!(broadcast_shapes("t", &[3], &[4]).is_err());
    }

    #[test]
    fn strides_and_dims() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(normalize_dim("t", -1, &[2, 3]).unwrap(), 1);
        assert!(normalize_dim("t", 2, &[2, 3]).is_err());
        assert!(normalize_dim("t", 0, &[]).is_err());
        assert_eq!(normalize_index("t", -1, 0, &[5]).unwrap(), 4);
        assert!(normalize_index("t", 5, 0, &[5]).is_err());
    }

    #[test]
    fn infer() {
        assert_eq!(infer_shape("r", &[2, 6], &[3, -1]).unwrap(), vec![3, 4]);
        assert!(infer_shape("r", &[2, 6], &[5, -1]).is_err());
        assert!(infer_shape("r", &[2, 6], &[-1, -1]).is_err());
        assert!(infer_shape("r", &[2, 6], &[13]).is_err());
        assert_eq!(infer_shape("r", &[0, 3], &[-1, 3]).unwrap(), vec![0, 3]);
    }
}
