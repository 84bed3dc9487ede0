//! Shape arithmetic: element counts, contiguous strides, NumPy broadcasting and
//! the normalisation of (possibly negative) dims and indices.

use crate::error::{Error, Result};

/// Number of elements of a shape (1 for a 0-dim shape).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Number of elements of a shape, or an error when the product overflows.
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
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

/// The most bytes one tensor may take: the machine's physical memory where it
/// can be read, so that an impossible request is an error, not an abort.
fn memory_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
                kb.checked_mul(1024)
            })
            .unwrap_or(usize::MAX / 2)
    })
}

/// Fails when a new tensor of `shape` and `dtype` could not be allocated: more
/// than the machine's memory, or more than the memory budget entered on this
/// thread has left ([`super::memory`]).
pub fn check_alloc(op: &'static str, shape: &[usize], dtype: super::DType) -> Result<()> {
    let n = checked_numel(op, shape)?;
    let bytes = n.saturating_mul(dtype.size_in_bytes());
    if bytes > memory_limit() {
        return Err(Error::invalid(
            op,
            format!(
                "a {dtype} tensor of shape {shape:?} needs {bytes} bytes, more than this machine's memory ({} bytes)",
                memory_limit()
            ),
        ));
    }
    super::memory::check(op, bytes)
}

/// Row-major (C-contiguous) strides of a shape, in elements.
pub fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut acc = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= d.max(1);
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
