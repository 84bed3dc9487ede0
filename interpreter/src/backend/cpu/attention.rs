//! The blocked attention's row ops on the CPU (the kernels'
//! `attention_rows_*`): the masked, scaled softmax of score rows with the
//! dropout's factors and the rows' log-sum-exps, and its backward,
//! computed in f64 with the same dropout draws as the GPU.

use super::element::{with_storage, Element};
use super::CpuStorage;
use crate::core::error::{Error, Result};
use kiln_kernels::params::AttentionRows;
use rayon::prelude::*;

/// The factor of key `j`'s weight in row `r`: `keep_scale` or 0, 1 without dropout.
fn factor(h: &AttentionRows, r: usize, j: usize) -> f64 {
    if h.dropout <= 0.0 {
        1.0
    } else if h.dropout_kept(r as u32, j as u32) {
        h.keep_scale
    } else {
        0.0
    }
}

/// Whether key `j` takes part in row `r`.
fn visible(h: &AttentionRows, r: usize, j: usize) -> bool {
    h.causal == 0 || j as u32 <= h.query(r as u32)
}

/// `(w, lse)` of dense score rows of `h.keys` (see `Storage::attention_rows`).
pub(crate) fn attention_rows(s: &CpuStorage, h: AttentionRows) -> Result<(CpuStorage, CpuStorage)> {
    let len = h.keys as usize;
    Ok(with_storage!(s, v: T => {
        if !T::DTYPE.is_float() {
            return Err(Error::dtype("scaled_dot_product_attention", T::DTYPE));
        }
        let rows = v.len().checked_div(len).unwrap_or(0);
        let mut w = vec![T::default(); v.len()];
        let mut lse = vec![T::default(); rows];
        if len > 0 {
            w.par_chunks_mut(len).zip(lse.par_iter_mut()).zip(v.par_chunks(len)).enumerate().for_each(
                |(r, ((w, lse), x))| {
                    let sc = |j: usize| x[j].to_f64() * h.scale;
                    let m = (0..len).filter(|&j| visible(&h, r, j)).map(sc).fold(f64::NEG_INFINITY, f64::max);
                    if m == f64::NEG_INFINITY {
                        *lse = T::from_f64(f64::INFINITY);
                        return;
                    }
                    let sum: f64 = (0..len).filter(|&j| visible(&h, r, j)).map(|j| (sc(j) - m).exp()).sum();
                    for (j, o) in w.iter_mut().enumerate() {
                        if visible(&h, r, j) {
                            *o = T::from_f64((sc(j) - m).exp() / sum * factor(&h, r, j));
                        }
                    }
                    *lse = T::from_f64(m + sum.ln());
                },
            );
        }
        (T::into_storage(w), T::into_storage(lse))
    }))
}

/// `(w with dropout, ds)` from recomputed dense score rows (see
/// `Storage::attention_rows_backward`).
pub(crate) fn attention_rows_backward(
    s: &CpuStorage,
    [lse, gw, delta]: [&CpuStorage; 3],
    h: AttentionRows,
) -> Result<(CpuStorage, CpuStorage)> {
    let len = h.keys as usize;
    Ok(with_storage!(s, v: T => {
        let (Some(lse), Some(gw), Some(delta)) = (T::slice(lse), T::slice(gw), T::slice(delta)) else {
            return Err(Error::dtype("scaled_dot_product_attention", lse.dtype()));
        };
        let mut wd = vec![T::default(); v.len()];
        let mut ds = vec![T::default(); v.len()];
        if len > 0 {
            wd.par_chunks_mut(len).zip(ds.par_chunks_mut(len)).enumerate().for_each(|(r, (wd, ds))| {
                let (l, d) = (lse[r].to_f64(), delta[r].to_f64());
                for j in 0..len {
                    let at = r * len + j;
                    let p = if visible(&h, r, j) { (v[at].to_f64() * h.scale - l).exp() } else { 0.0 };
                    let f = factor(&h, r, j);
                    wd[j] = T::from_f64(p * f);
                    ds[j] = T::from_f64(p * (gw[at].to_f64() * f - d));
                }
            });
        }
        (T::into_storage(wd), T::into_storage(ds))
    }))
}
