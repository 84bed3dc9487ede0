//! Row-wise CPU kernels of neural-network ops: softmax / log-softmax along a
//! dim and layer normalisation over trailing dims. Rows are computed in f64
//! and split across threads.

use super::element::{with_storage, Element};
use super::elementwise::cast_to;
use super::CpuStorage;
use crate::core::error::{Error, Result};
use crate::core::strided::offsets;
use crate::core::Layout;
use rayon::prelude::*;

/// Softmax (or log-softmax) of float storage along `dim`; contiguous output.
pub(crate) fn softmax(s: &CpuStorage, l: &Layout, dim: usize, log: bool) -> Result<CpuStorage> {
    let last = l.ndim() - 1;
    // Walk with `dim` last; the result is computed in that order, then put back.
    let mut perm: Vec<usize> = (0..l.ndim()).filter(|&d| d != dim).collect();
    perm.push(dim);
    let pl = l.permute(&perm);
    let len = pl.shape()[last];
    let outer = Layout::from_parts(
        pl.shape()[..last].to_vec(),
        pl.strides()[..last].to_vec(),
        pl.offset(),
    );
    let step = pl.strides()[last];
    let bases = offsets(outer.shape(), outer.strides(), outer.offset());
    let out = with_storage!(s, v: T => {
        if !T::DTYPE.is_float() {
            return Err(Error::dtype("softmax", T::DTYPE));
        }
        let mut out = vec![T::default(); pl.numel()];
        if len > 0 {
            out.par_chunks_mut(len).zip(bases.par_iter()).for_each(|(row, &b)| {
                let x: Vec<f64> = (0..len).map(|j| v[b + j * step].to_f64()).collect();
                let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let m = if m.is_finite() { m } else if x.iter().any(|v| v.is_nan()) { f64::NAN } else { m };
                let sum: f64 = x.iter().map(|&xi| (xi - m).exp()).sum();
                for (o, &xi) in row.iter_mut().zip(&x) {
                    *o = T::from_f64(if log { xi - m - sum.ln() } else { (xi - m).exp() / sum });
                }
            });
        }
        T::into_storage(out)
    });
    if dim == last {
        return Ok(out);
    }
    // `out` is contiguous in the permuted order; copy it back to the original order.
    let mut inverse = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let back = Layout::contiguous(pl.shape()).permute(&inverse);
    Ok(cast_to(&out, &back, s.dtype()))
}

/// Layer norm of contiguous float storage over rows of `norm` elements, with
/// optional contiguous weight and bias of `norm` elements (same dtype).
pub(crate) fn layer_norm(
    s: &CpuStorage,
    norm: usize,
    weight: Option<&CpuStorage>,
    bias: Option<&CpuStorage>,
    eps: f64,
) -> Result<CpuStorage> {
    Ok(with_storage!(s, v: T => {
        if !T::DTYPE.is_float() {
            return Err(Error::dtype("layer_norm", T::DTYPE));
        }
        let w = weight.and_then(T::slice);
        let b = bias.and_then(T::slice);
        let mut out = vec![T::default(); v.len()];
        if norm > 0 {
            out.par_chunks_mut(norm).zip(v.par_chunks(norm)).for_each(|(o, x)| {
                let n = norm as f64;
                let mean = x.iter().map(|e| e.to_f64()).sum::<f64>() / n;
                let var = x.iter().map(|e| (e.to_f64() - mean).powi(2)).sum::<f64>() / n;
                let inv = 1.0 / (var + eps).sqrt();
                for j in 0..norm {
                    let mut y = (x[j].to_f64() - mean) * inv;
                    if let Some(w) = w {
                        y *= w[j].to_f64();
                    }
                    if let Some(b) = b {
                        y += b[j].to_f64();
                    }
                    o[j] = T::from_f64(y);
                }
            });
        }
        T::into_storage(out)
    }))
}
