//! The connectionist temporal classification loss (`F.ctc_loss`, Graves et
//! al. 2006): the forward (alpha) recursion over the extended label
//! sequence `blank, l1, blank, l2, …, blank`, one step of tensor ops per
//! time step for the whole batch, in log space. Autograd through the
//! recursion gives the occupancy gradient; PyTorch's kernel also adds
//! `exp(log_probs)` to the gradient (what makes its result the gradient of
//! the logits once it passes through `log_softmax`), and so does this one,
//! through a term whose value is zero.
//!
//! Unreachable states hold a large negative number rather than `-inf`, so
//! that no gradient of a log-sum-exp of nothing becomes NaN; a loss that
//! no alignment reaches is `inf` (or 0 with `zero_infinity`), with a zero
//! gradient.

use super::Reduction;
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::{DType, Scalar};
use crate::tensor::Tensor;

const OP: &str = "ctc_loss";
/// The log-probability of an unreachable state: far below any real one,
/// yet finite in f32, so sums with it stay exactly at it.
const UNREACHABLE: f64 = -1e30;
/// Losses at or past this came from unreachable states only.
const IMPOSSIBLE: f64 = 1e29;

/// The options of [`Tensor::ctc_loss`], with PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtcOptions {
    /// The class index of the blank.
    pub blank: i64,
    /// How the per-sample losses are combined; `Mean` divides each by its
    /// target length (at least 1) before taking the mean.
    pub reduction: Reduction,
    /// Infinite losses (no alignment fits) and their gradients become 0.
    pub zero_infinity: bool,
}

impl Default for CtcOptions {
    fn default() -> Self {
        CtcOptions {
            blank: 0,
            reduction: Reduction::Mean,
            zero_infinity: false,
        }
    }
}

/// The batch's extended label sequences, built on the host.
struct Extended {
    /// `[N, K]` class indices: the blank at even places and past the end.
    labels: Vec<i64>,
    /// `[N, K]`: state `s` may be entered from `s - 2` (a label unlike the
    /// one two places back).
    skips: Vec<bool>,
    /// `K = 2·max target length + 1`.
    width: usize,
}

/// Checks the targets and lays out every sample's extended labels.
fn extended(targets: &Tensor, target_lengths: &[i64], classes: usize, blank: i64) -> Result<Extended> {
    let n = target_lengths.len();
    let values = targets.to_vec_as::<i64>()?;
    let longest = target_lengths.iter().copied().max().unwrap_or(0) as usize;
    // where each sample's labels start in `values`, and how far apart they are
    let starts: Vec<usize> = if targets.ndim() == 2 {
        if targets.shape()[1] < longest {
            return Err(Error::shape(
                OP,
                format!(
                    "targets {:?} are shorter than the longest target length {longest}",
                    targets.shape()
                ),
            ));
        }
        (0..n).map(|i| i * targets.shape()[1]).collect()
    } else {
        let total: i64 = target_lengths.iter().sum();
        if (values.len() as i64) < total {
            return Err(Error::shape(
                OP,
                format!(
                    "concatenated targets {:?} hold fewer labels than the target lengths' sum {total}",
                    targets.shape()
                ),
            ));
        }
        target_lengths
            .iter()
            .scan(0usize, |at, &len| {
                let start = *at;
                *at += len as usize;
                Some(start)
            })
            .collect()
    };
    let width = 2 * longest + 1;
    let mut labels = vec![blank; n * width];
    let mut skips = vec![false; n * width];
    for (i, (&start, &len)) in starts.iter().zip(target_lengths).enumerate() {
        for j in 0..len as usize {
            let label = values[start + j];
            if label < 0 || label as usize >= classes {
                return Err(Error::invalid(
                    OP,
                    format!("target label {label} of sample {i} is outside [0, {classes})"),
                ));
            }
            let s = i * width + 2 * j + 1;
            labels[s] = label;
            skips[s] = j > 0 && values[start + j - 1] != label;
        }
    }
    Ok(Extended { labels, skips, width })
}

/// `log(e^a + e^b + e^c)` elementwise, for finite values.
fn log_add3(a: &Tensor, b: &Tensor, c: &Tensor) -> Result<Tensor> {
    let m = a.maximum(b)?.maximum(c)?.detach();
    a.sub(&m)?
        .exp()?
        .add(&b.sub(&m)?.exp()?)?
        .add(&c.sub(&m)?.exp()?)?
        .log()?
        .add(&m)
}

/// `t` shifted right by `by` places along dim 1, the first filled with `fill`.
fn shifted(t: &Tensor, by: usize, fill: &Tensor) -> Result<Tensor> {
    let width = t.shape()[1];
    if by >= width {
        return fill.expand(&[t.shape()[0] as i64, width as i64]);
    }
    let head = fill.expand(&[t.shape()[0] as i64, by as i64])?;
    Tensor::cat(&[head, t.narrow(1, 0, (width - by) as i64)?], 1)
}

impl Tensor {
    /// The CTC loss of log-probabilities `[T, N, C]` (or `[T, C]` for one
    /// sample) against `targets` (`[N, S]` padded, or the labels of every
    /// sample concatenated; `[S]` for one sample), with each sample's
    /// input and target lengths.
    pub fn ctc_loss(
        &self,
        targets: &Tensor,
        input_lengths: &[i64],
        target_lengths: &[i64],
        o: &CtcOptions,
    ) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                hint: " (log_probs must be floating point)".into(),
            });
        }
        if !targets.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: targets.dtype(),
                hint: " (targets must be integer class indices)".into(),
            });
        }
        let batched = self.ndim() == 3;
        if !matches!(self.ndim(), 2 | 3) || targets.ndim() > 2 || (!batched && targets.ndim() != 1) {
            return Err(Error::shape(
                OP,
                format!(
                    "expected log_probs [T, N, C] with targets [N, S] or concatenated [sum of target lengths] (or [T, C] with [S]), got {:?} and {:?}",
                    self.shape(),
                    targets.shape()
                ),
            ));
        }
        let lp = if batched { self.clone() } else { self.unsqueeze(1)? };
        let (steps, n, classes) = (lp.shape()[0], lp.shape()[1], lp.shape()[2]);
        if targets.ndim() == 2 && targets.shape()[0] != n {
            return Err(Error::shape(
                OP,
                format!(
                    "targets {:?} do not have one row per sample ({n})",
                    targets.shape()
                ),
            ));
        }
        if input_lengths.len() != n || target_lengths.len() != n {
            return Err(Error::shape(
                OP,
                format!(
                    "expected {n} input and target lengths, got {} and {}",
                    input_lengths.len(),
                    target_lengths.len()
                ),
            ));
        }
        if let Some(bad) = input_lengths.iter().find(|&&l| l < 0 || l as usize > steps) {
            return Err(Error::invalid(
                OP,
                format!("input length {bad} is outside [0, {steps}]"),
            ));
        }
        if let Some(bad) = target_lengths.iter().find(|&&l| l < 0) {
            return Err(Error::invalid(OP, format!("target length {bad} is negative")));
        }
        if o.blank < 0 || o.blank as usize >= classes {
            return Err(Error::invalid(
                OP,
                format!("blank {} is outside [0, {classes})", o.blank),
            ));
        }
        let ext = extended(targets, target_lengths, classes, o.blank)?;
        let per = ctc_per_sample(&lp, &ext, input_lengths, target_lengths, o.zero_infinity)?;
        let per = per.to_dtype(self.dtype())?;
        let per = if batched { per } else { per.reshape(&[])? };
        match o.reduction {
            Reduction::Mean => {
                let lens: Vec<i64> = target_lengths.iter().map(|&l| l.max(1)).collect();
                let lens = Tensor::from_vec(lens, &[n], self.device())?.to_dtype(per.dtype())?;
                let lens = if batched { lens } else { lens.reshape(&[])? };
                per.div(&lens)?.mean()
            }
            r => per.reduced(r),
        }
    }
}

/// Each sample's loss `[N]`, in f32 (f64 for f64 inputs).
fn ctc_per_sample(
    lp: &Tensor,
    ext: &Extended,
    input_lengths: &[i64],
    target_lengths: &[i64],
    zero_infinity: bool,
) -> Result<Tensor> {
    let dev = lp.device();
    let lp = if lp.dtype() == DType::F64 {
        lp.clone()
    } else {
        lp.to_dtype(DType::F32)?
    };
    let (steps, n) = (lp.shape()[0], lp.shape()[1]);
    let k = ext.width;
    let long = |v: Vec<i64>, shape: &[usize]| Tensor::from_vec(v, shape, dev);
    let flags = |v: Vec<bool>, shape: &[usize]| Tensor::from_vec(v, shape, dev);

    // emissions[t, n, s] = lp[t, n, label(s)], never below UNREACHABLE
    let labels = long(ext.labels.clone(), &[1, n, k])?.expand(&[steps as i64, n as i64, k as i64])?;
    let emissions = lp
        .gather(2, &labels)?
        .clamp(Some(Scalar::Float(UNREACHABLE)), None)?;
    let skips = flags(ext.skips.clone(), &[n, k])?;
    let lengths = long(input_lengths.to_vec(), &[n, 1])?;
    let none = lp.constant(UNREACHABLE)?.reshape(&[1, 1])?;

    let longest = input_lengths.iter().copied().max().unwrap_or(0) as usize;
    let starts: Vec<bool> = (0..n * k).map(|i| i % k < 2).collect();
    let mut alpha = if longest == 0 {
        none.expand(&[n as i64, k as i64])?
    } else {
        Tensor::where_cond(&flags(starts, &[n, k])?, &emissions.select(0, 0)?, &none)?
    };
    for t in 1..longest {
        let stay = alpha.clone();
        let step = shifted(&alpha, 1, &none)?;
        let skip = Tensor::where_cond(&skips, &shifted(&alpha, 2, &none)?, &none)?;
        let next = log_add3(&stay, &step, &skip)?.add(&emissions.select(0, t as i64)?)?;
        let running = lengths.compare_scalar(CmpOp::Gt, Scalar::Int(t as i64), false)?;
        alpha = Tensor::where_cond(&running, &next, &alpha)?;
    }

    // the likelihood ends in the last blank or the last label
    let ends: Vec<i64> = target_lengths
        .iter()
        .flat_map(|&s| [2 * s, (2 * s - 1).max(0)])
        .collect();
    let has_label: Vec<bool> = target_lengths.iter().flat_map(|&s| [true, s > 0]).collect();
    let last = Tensor::where_cond(
        &flags(has_label, &[n, 2])?,
        &alpha.gather(1, &long(ends, &[n, 2])?)?,
        &none,
    )?;
    let nll = log_add3(&last.select(1, 0)?, &last.select(1, 1)?, &none.reshape(&[1])?)?.neg()?;
    // an empty input explains only an empty target
    let empty: Vec<f64> = input_lengths
        .iter()
        .zip(target_lengths)
        .map(|(&t, &s)| {
            if t > 0 {
                1.0
            } else if s == 0 {
                0.0
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let empty = Tensor::from_vec(empty, &[n], dev)?.to_dtype(nll.dtype())?;
    let nll = Tensor::where_cond(
        &empty.compare_scalar(CmpOp::Eq, Scalar::Float(1.0), false)?,
        &nll,
        &empty,
    )?;

    // PyTorch's extra gradient exp(lp) over each sample's steps, as a zero
    let within: Vec<bool> = (0..steps * n)
        .map(|i| (i / n) < input_lengths[i % n] as usize)
        .collect();
    let within = flags(within, &[steps, n, 1])?.to_dtype(lp.dtype())?;
    let mass = lp
        .exp()?
        .mul(&within)?
        .reduce(ReduceOp::Sum, Some(&[0, 2]), false)?;
    let extra = mass.sub(&mass.detach())?;
    let extra = Tensor::where_cond(&mass.isfinite()?, &extra, &extra.zeros_like()?)?;

    let possible = nll.compare_scalar(CmpOp::Lt, Scalar::Float(IMPOSSIBLE), false)?;
    let otherwise = nll.constant(if zero_infinity { 0.0 } else { f64::INFINITY })?;
    Tensor::where_cond(&possible, &nll.add(&extra)?, &otherwise)
}
