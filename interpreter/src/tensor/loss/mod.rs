//! The loss functions of `torch.nn.functional`. This module holds the
//! reduction rule and the fused cross-entropy from logits (log-softmax and
//! the negative log-likelihood in one pass per row, as PyTorch's
//! `F.cross_entropy` with class-index targets), with its backward
//! `(softmax - target) * grad` recorded beside it; the other losses are
//! compositions in `regression`, `classification` and `margin`.
//!
//! Labels outside `[0, classes)` other than `ignore_index` are an error on the
//! CPU. On CUDA they are not checked (that would wait for the GPU): the row's
//! loss and gradient become NaN, and the kernel never indexes with the label.

mod classification;
mod ctc;
mod margin;
mod regression;

pub use ctc::CtcOptions;

use super::autograd::{self, Saved};
use super::{DType, Scalar, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::CmpOp;

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
    /// Parses `"none"`, `"mean"` or `"sum"` (errors name `op`).
    pub fn parse(op: &'static str, s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::invalid(
                op,
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

/// Float logits and a label smoothing in `[0, 1]`: what every form of
/// `cross_entropy` requires first.
fn check_logits(logits: &Tensor, o: &CrossEntropyOptions) -> Result<()> {
    if !logits.dtype().is_float() {
        return Err(Error::UnsupportedDType {
            op: "cross_entropy",
            dtype: logits.dtype(),
            hint: " (the logits must be floating point)".into(),
        });
    }
    if !(0.0..=1.0).contains(&o.label_smoothing) {
        return Err(Error::invalid(
            "cross_entropy",
            format!("label_smoothing must be in [0, 1], got {}", o.label_smoothing),
        ));
    }
    Ok(())
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
    /// Combines per-sample losses `l` by `r` (the mean of no samples is NaN,
    /// as in PyTorch).
    pub(crate) fn reduced(&self, r: Reduction) -> Result<Tensor> {
        match r {
            Reduction::None => Ok(self.clone()),
            Reduction::Mean => self.mean(),
            Reduction::Sum => self.sum(),
        }
    }

    /// Cross-entropy of logits `[N, C]` (or `[C]` with a 0-dim label) against
    /// integer class labels `[N]`: one fused pass per row.
    pub fn cross_entropy(&self, labels: &Tensor, o: &CrossEntropyOptions) -> Result<Tensor> {
        const OP: &str = "cross_entropy";
        if crate::tensor::autocast::enabled() {
            let x = crate::tensor::autocast::widen(self)?;
            let _off = crate::tensor::autocast::AutocastGuard::new(None)?;
            return x.cross_entropy(labels, o);
        }
        check_logits(self, o)?;
        if !labels.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: labels.dtype(),
                hint: " (the labels must be integer class indices)".into(),
            });
        }
        self.same_device(OP, labels)?;
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
            Ok(vec![Some(Tensor::from_storage("cross_entropy", gx, x.shape())?)])
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
        Tensor::from_storage("cross_entropy", loss, &[rows])?,
        Tensor::from_storage("cross_entropy", lse, &[rows])?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{Device, Generator, HostValues};

    fn values(t: &Tensor) -> Vec<f64> {
        match t.to_host().unwrap() {
            HostValues::Float(v) => v,
            HostValues::Int(v) => v.into_iter().map(|x| x as f64).collect(),
            HostValues::Bool(v) => v.into_iter().map(|x| x as u8 as f64).collect(),
        }
    }

    fn logits(n: usize, c: usize) -> Tensor {
        let mut g = Generator::new(7);
        Tensor::randn(&[n, c], Some(DType::F64), Device::Cpu, &mut g)
            .unwrap()
            .mul_scalar(3.0)
            .unwrap()
    }

    fn labels(v: &[i64]) -> Tensor {
        Tensor::from_host(&HostValues::Int(v.to_vec()), &[v.len()], DType::I64, Device::Cpu).unwrap()
    }

    fn opts(reduction: Reduction, ignore_index: i64, label_smoothing: f64) -> CrossEntropyOptions {
        CrossEntropyOptions {
            reduction,
            ignore_index,
            label_smoothing,
        }
    }

    #[test]
    fn matches_log_softmax_and_gather() {
        let (x, y) = (logits(5, 7), [3i64, 0, 6, 2, 3]);
        let lp = values(&x.log_softmax(-1).unwrap());
        let none = values(
            &x.cross_entropy(&labels(&y), &opts(Reduction::None, -100, 0.0))
                .unwrap(),
        );
        for (r, &l) in y.iter().enumerate() {
            assert!((none[r] + lp[r * 7 + l as usize]).abs() < 1e-12, "row {r}");
        }
        let mean = x.cross_entropy(&labels(&y), &Default::default()).unwrap();
        assert_eq!(mean.shape(), &[] as &[usize]);
        let want = none.iter().sum::<f64>() / 5.0;
        assert!((values(&mean)[0] - want).abs() < 1e-12);
        let sum = values(
            &x.cross_entropy(&labels(&y), &opts(Reduction::Sum, -100, 0.0))
                .unwrap(),
        );
        assert!((sum[0] - none.iter().sum::<f64>()).abs() < 1e-12);
    }

    #[test]
    fn ignore_index_and_smoothing_follow_pytorch() {
        let (x, y) = (logits(4, 5), [1i64, -1, 4, 0]);
        let lp = values(&x.log_softmax(-1).unwrap());
        let eps = 0.2;
        let row = |r: usize| {
            let nll = -lp[r * 5 + y[r] as usize];
            let smooth = -(0..5).map(|j| lp[r * 5 + j]).sum::<f64>() / 5.0;
            (1.0 - eps) * nll + eps * smooth
        };
        let none = values(
            &x.cross_entropy(&labels(&y), &opts(Reduction::None, -1, eps))
                .unwrap(),
        );
        assert_eq!(none[1], 0.0);
        for r in [0, 2, 3] {
            assert!((none[r] - row(r)).abs() < 1e-12, "row {r}");
        }
        let mean = values(
            &x.cross_entropy(&labels(&y), &opts(Reduction::Mean, -1, eps))
                .unwrap(),
        );
        assert!((mean[0] - (row(0) + row(2) + row(3)) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (n, c) = (3, 4);
        let y = labels(&[2, 0, -100]);
        for (red, eps) in [
            (Reduction::Mean, 0.0),
            (Reduction::Sum, 0.1),
            (Reduction::None, 0.0),
        ] {
            let x = logits(n, c);
            x.set_requires_grad(true).unwrap();
            let o = opts(red, -100, eps);
            let loss = x.cross_entropy(&y, &o).unwrap();
            // weights for `none`, so every row's gradient is scaled differently
            let w = Tensor::from_host(
                &HostValues::Float(vec![0.5, -1.5, 2.0]),
                &[3],
                DType::F64,
                Device::Cpu,
            )
            .unwrap();
            let scalar = if red == Reduction::None {
                loss.mul(&w).unwrap().sum().unwrap()
            } else {
                loss
            };
            scalar.backward().unwrap();
            let grad = values(&x.grad().unwrap());
            let base = values(&x.detach());
            let f = |v: &[f64]| -> f64 {
                let t = Tensor::from_host(&HostValues::Float(v.to_vec()), &[n, c], DType::F64, Device::Cpu)
                    .unwrap();
                let l = t.cross_entropy(&y, &o).unwrap();
                let l = if red == Reduction::None {
                    l.mul(&w).unwrap().sum().unwrap()
                } else {
                    l
                };
                values(&l)[0]
            };
            for i in 0..n * c {
                let h = 1e-6;
                let (mut a, mut b) = (base.clone(), base.clone());
                a[i] += h;
                b[i] -= h;
                let fd = (f(&a) - f(&b)) / (2.0 * h);
                assert!(
                    (fd - grad[i]).abs() < 1e-7,
                    "{red:?} element {i}: {fd} vs {}",
                    grad[i]
                );
            }
        }
    }

    #[test]
    fn half_logits_and_a_single_sample() {
        let x = logits(2, 3);
        let y = labels(&[1, 2]);
        let full = values(&x.cross_entropy(&y, &Default::default()).unwrap())[0];
        let h = x
            .to_dtype(DType::BF16)
            .unwrap()
            .cross_entropy(&y, &Default::default())
            .unwrap();
        assert_eq!(h.dtype(), DType::BF16);
        assert!((values(&h)[0] - full).abs() < 0.05 * full.abs().max(1.0));
        let one = x.select(0, 1).unwrap();
        let l = Tensor::scalar(Scalar::Int(2), DType::I64, Device::Cpu).unwrap();
        let r = one.cross_entropy(&l, &opts(Reduction::None, -100, 0.0)).unwrap();
        assert_eq!(r.shape(), &[] as &[usize]);
        let rows = values(&x.cross_entropy(&y, &opts(Reduction::None, -100, 0.0)).unwrap());
        assert!((values(&r)[0] - rows[1]).abs() < 1e-12);
    }

    #[test]
    fn bad_labels_and_shapes_are_errors() {
        let x = logits(2, 3);
        let e = x
            .cross_entropy(&labels(&[0, 3]), &Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("label 3 of sample 1 is out of range for 3 classes"),
            "{e}"
        );
        let e = x
            .cross_entropy(&labels(&[0]), &Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected logits [N, C]"), "{e}");
        let f = x.to_dtype(DType::F32).unwrap();
        let e = f
            .cross_entropy(&f.select(1, 0).unwrap(), &Default::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("integer class indices"), "{e}");
        assert!(Reduction::parse("mse_loss", "avg").is_err());
    }
}
