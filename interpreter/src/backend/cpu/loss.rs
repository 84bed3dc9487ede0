//! CPU cross-entropy from logits: per dense row, the log-sum-exp and the
//! negative log-likelihood of the labelled class (with optional label
//! smoothing), and the gradient `(softmax - target) * grad`. Rows are
//! computed in f64 and split across threads; per-row results are kept in the
//! accumulator dtype (f32, or f64 for f64 logits), as on the GPU.

use super::element::{with_storage, Element};
use super::CpuStorage;
use crate::core::error::{Error, Result};
use crate::core::DType;
use rayon::prelude::*;

/// The dtype of per-row results for logits of `dtype`.
fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Rows one thread takes at least: small batches run on the calling thread
/// (handing a few rows to the pool costs more than computing them).
fn rows_per_task(classes: usize) -> usize {
    (4096 / classes.max(1)).max(1)
}

fn labels_of<'a>(op: &'static str, s: &'a CpuStorage) -> Result<&'a [i64]> {
    i64::slice(s).ok_or_else(|| Error::invalid(op, "internal: labels must be i64"))
}

/// Fails on the first label that is neither a class index nor `ignore_index`.
fn check_labels(labels: &[i64], classes: usize, ignore_index: i64) -> Result<()> {
    match labels
        .iter()
        .position(|&l| l != ignore_index && (l < 0 || l >= classes as i64))
    {
        None => Ok(()),
        Some(i) => Err(Error::invalid(
            "cross_entropy",
            format!(
                "label {} of sample {i} is out of range for {classes} classes (expected 0..={} or ignore_index {ignore_index})",
                labels[i],
                classes as i64 - 1
            ),
        )),
    }
}

/// Per-row loss and log-sum-exp of dense `[rows, classes]` logits `x` with
/// i64 `labels`; both results in the accumulator dtype.
pub(crate) fn cross_entropy(
    x: &CpuStorage,
    classes: usize,
    labels: &CpuStorage,
    ignore_index: i64,
    smoothing: f64,
) -> Result<(CpuStorage, CpuStorage)> {
    let labels = labels_of("cross_entropy", labels)?;
    check_labels(labels, classes, ignore_index)?;
    let rows = labels.len();
    let (loss, lse): (Vec<f64>, Vec<f64>) = with_storage!(x, v: T => {
        if !T::DTYPE.is_float() {
            return Err(Error::dtype("cross_entropy", T::DTYPE));
        }
        (0..rows)
            .into_par_iter()
            .with_min_len(rows_per_task(classes))
            .map(|r| {
                let row = &v[r * classes..(r + 1) * classes];
                let m = row.iter().map(|e| e.to_f64()).fold(f64::NEG_INFINITY, |a, b| {
                    if a.is_nan() || a > b { a } else { b }
                });
                let s: f64 = row.iter().map(|e| (e.to_f64() - m).exp()).sum();
                let lse = m + s.ln();
                let label = labels[r];
                if label == ignore_index {
                    return (0.0, lse);
                }
                let nll = lse - row[label as usize].to_f64();
                let loss = if smoothing != 0.0 {
                    let mean = row.iter().map(|e| e.to_f64()).sum::<f64>() / classes as f64;
                    (1.0 - smoothing) * nll + smoothing * (lse - mean)
                } else {
                    nll
                };
                (loss, lse)
            })
            .unzip()
    });
    let acc = acc_dtype(x.dtype());
    let store = |v: Vec<f64>| super::element::with_dtype!(acc, A => A::into_storage(v.into_iter().map(A::from_f64).collect()));
    Ok((store(loss), store(lse)))
}

/// The gradient of the per-row losses with respect to dense logits `x`:
/// `(softmax(x) - target) * grad[r * grad_stride]`, in `x`'s dtype; `lse`
/// and `grad` are in the accumulator dtype.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cross_entropy_backward(
    x: &CpuStorage,
    classes: usize,
    labels: &CpuStorage,
    lse: &CpuStorage,
    grad: &CpuStorage,
    grad_stride: usize,
    ignore_index: i64,
    smoothing: f64,
) -> Result<CpuStorage> {
    let labels = labels_of("cross_entropy", labels)?;
    check_labels(labels, classes, ignore_index)?;
    let host =
        |s: &CpuStorage| -> Vec<f64> { with_storage!(s, v: T => v.iter().map(|e| e.to_f64()).collect()) };
    let (lse, grad) = (host(lse), host(grad));
    if lse.len() < labels.len() || (!labels.is_empty() && grad.len() <= (labels.len() - 1) * grad_stride) {
        return Err(Error::invalid(
            "cross_entropy",
            "internal: gradient operands too short",
        ));
    }
    let off = smoothing / classes as f64;
    let on = 1.0 - smoothing + off;
    Ok(with_storage!(x, v: T => {
        if !T::DTYPE.is_float() {
            return Err(Error::dtype("cross_entropy", T::DTYPE));
        }
        let mut out = vec![T::default(); v.len()];
        if classes > 0 {
            out.par_chunks_mut(classes).zip(v.par_chunks(classes)).enumerate().with_min_len(rows_per_task(classes)).for_each(|(r, (o, row))| {
                let label = labels[r];
                if label == ignore_index {
                    o.fill(T::from_f64(0.0));
                    return;
                }
                let (s, g) = (lse[r], grad[r * grad_stride]);
                for (j, (o, e)) in o.iter_mut().zip(row).enumerate() {
                    let t = if j as i64 == label { on } else { off };
                    *o = T::from_f64(((e.to_f64() - s).exp() - t) * g);
                }
            });
        }
        T::into_storage(out)
    }))
}
