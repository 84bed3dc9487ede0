//! Loss functions with their own kernels: cross-entropy from logits
//! (log-softmax and the negative log-likelihood in one pass per row, as
//! PyTorch's `F.cross_entropy` with class-index targets), with its backward
//! `(softmax - target) * grad` recorded beside it.
//!
//! Labels outside `[0, classes)` other than `ignore_index` are an error on the
//! CPU. On CUDA they are not checked (that would wait for the GPU): the row's
//! loss and gradient become NaN, and the kernel never indexes with the label.

use super::autograd::{self, Saved};
use super::op::CmpOp;
use super::{DType, Scalar, Tensor};
use crate::error::{Error, Result};

/// How per-sample losses are combined (PyTorch's `reduction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// One loss per sample.
    None,
    /// The mean over the samples whose label is not ignored (the default).
    #[default]
    Mean,
    /// The sum over the samples.
    Sum,
}

impl Reduction {
    /// Parses `"none"`, `"mean"` or `"sum"`.
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::invalid(
                "cross_entropy",
                format!("unknown reduction '{other}' (expected \"none\", \"mean\" or \"sum\")"),
            )),
        }
    }
}

/// The options of [`Tensor::cross_entropy`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropyOptions {
    /// How the per-sample losses are combined.
    pub reduction: Reduction,
    /// Samples with this label add nothing and are not counted by the mean.
    pub ignore_index: i64,
    /// Label smoothing in `[0, 1]`: the target puts `1 - s + s / C` on the label
    /// and `s / C` on every other class.
    pub label_smoothing: f64,
}

impl Default for CrossEntropyOptions {
    fn default() -> Self {
        CrossEntropyOptions {
            reduction: Reduction::Mean,
            ignore_index: -100,
            label_smoothing: 0.0,
        }
    }
}

/// The dtype the per-row results are kept in: f32, or f64 for f64 logits.
fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

impl Tensor {
    /// Cross-entropy of logits `[N, C]` (or `[C]` with a 0-dim label) against
    /// integer class labels `[N]`.
    pub fn cross_entropy(&self, labels: &Tensor, o: &CrossEntropyOptions) -> Result<Tensor> {
        const OP: &str = "cross_entropy";
        if !self.dtype().is_float() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                hint: " (the logits must be floating point)".into(),
            });
        }
        if !labels.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: labels.dtype(),
                hint: " (the labels must be integer class indices)".into(),
            });
        }
        self.same_device(OP, labels)?;
        if !(0.0..=1.0).contains(&o.label_smoothing) {
            return Err(Error::invalid(
                OP,
                format!("label_smoothing must be in [0, 1], got {}", o.label_smoothing),
            ));
        }
        match (self.ndim(), labels.ndim()) {
            (1, 0) => {
                let r = self.unsqueeze(0)?.cross_entropy(&labels.unsqueeze(0)?, o)?;
                if o.reduction == Reduction::None {
                    r.reshape(&[])
                } else {
                    Ok(r)
                }
            }
            (2, 1) if labels.shape()[0] == self.shape()[0] => self.cross_entropy_rows(labels, o),
            _ => Err(Error::shape(
                OP,
                format!(
                    "expected logits [N, C] with labels [N] (or logits [C] with a 0-dim label), got logits {:?} and labels {:?}",
                    self.shape(),
                    labels.shape()
                ),
            )),
        }
    }

    fn cross_entropy_rows(&self, labels: &Tensor, o: &CrossEntropyOptions) -> Result<Tensor> {
        let classes = self.shape()[1];
        if classes == 0 {
            return Err(Error::shape(
                "cross_entropy",
                format!("logits of shape {:?} have no classes", self.shape()),
            ));
        }
        let x = autograd::forward(|| self.dense())?;
        let y = autograd::forward(|| labels.to_dtype(DType::I64)?.dense())?;
        let o = *o;
        let (out, lse, count) = autograd::forward(|| ce_forward(&x, &y, classes, &o))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (xs, ys) = (Saved::new(&x), Saved::new(&y));
        Ok(autograd::record("cross_entropy", &[self], out, move |g, _| {
            let (x, y) = (xs.get("cross_entropy")?, ys.get("cross_entropy")?);
            let gr = g.to_dtype(lse.dtype())?;
            let (grow, stride) = match o.reduction {
                Reduction::None => (gr.dense()?, 1),
                Reduction::Sum => (gr.dense()?, 0),
                Reduction::Mean => (gr.div(&count)?.dense()?, 0),
            };
            let gx = x.storage().cross_entropy_backward(
                classes,
                &y.storage(),
                &lse.storage(),
                &grow.storage(),
                stride,
                o.ignore_index,
                o.label_smoothing,
            )?;
            Ok(vec![Some(Tensor::from_storage(gx, x.shape()))])
        }))
    }
}

/// The loss of dense logits `x` and dense i64 labels `y`, the per-row
/// log-sum-exps, and the number of samples not ignored (the mean's divisor).
fn ce_forward(
    x: &Tensor,
    y: &Tensor,
    classes: usize,
    o: &CrossEntropyOptions,
) -> Result<(Tensor, Tensor, Tensor)> {
    let rows = y.numel();
    let (loss, lse) = x
        .storage()
        .cross_entropy(classes, &y.storage(), o.ignore_index, o.label_smoothing)?;
    let (loss, lse) = (
        Tensor::from_storage(loss, &[rows]),
        Tensor::from_storage(lse, &[rows]),
    );
    let acc = acc_dtype(x.dtype());
    let count = if o.reduction == Reduction::Mean {
        y.compare_scalar(CmpOp::Ne, Scalar::Int(o.ignore_index), false)?
            .to_dtype(acc)?
            .sum()?
    } else {
        Tensor::scalar(Scalar::Int(1), acc, x.device())?
    };
    let out = match o.reduction {
        Reduction::None => loss,
        Reduction::Sum => loss.sum()?,
        Reduction::Mean => loss.sum()?.div(&count)?,
    };
    Ok((out.to_dtype(x.dtype())?, lse, count))
}
