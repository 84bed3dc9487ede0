//! Counting and searching, composed of sorts, scans and scatters: `diff`,
//! `searchsorted` / `bucketize`, `bincount`, `histc`, `unique` (sorted, with
//! the inverse and the counts) and `unique_consecutive`. The ops whose
//! output size depends on the values (`bincount` without `minlength` large
//! enough, `unique`) read that size back to the host, which waits for the
//! device, as PyTorch does.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

impl Tensor {
    /// The `n`-th forward difference along `dim`, after joining `prepend`
    /// and `append` (`torch.diff`).
    pub fn diff(
        &self,
        n: i64,
        dim: i64,
        prepend: Option<&Tensor>,
        append: Option<&Tensor>,
    ) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape("diff", "diff needs at least one dim"));
        }
        if n < 0 {
            return Err(Error::invalid("diff", format!("n must be at least 0, got {n}")));
        }
        let d = normalize_dim("diff", dim, self.shape())? as i64;
        let mut parts = Vec::new();
        parts.extend(prepend.cloned());
        parts.push(self.clone());
        parts.extend(append.cloned());
        let mut x = if parts.len() > 1 {
            Tensor::cat(&parts, d)?
        } else {
            self.clone()
        };
        for _ in 0..n {
            let len = x.shape()[d as usize] as i64;
            if len == 0 {
                break;
            }
            let hi = x.narrow(d, 1, len - 1)?;
            let lo = x.narrow(d, 0, len - 1)?;
            x = if x.dtype() == DType::Bool {
                hi.compare(CmpOp::Ne, &lo)?
            } else {
                hi.sub(&lo)?
            };
        }
        Ok(x)
    }

    /// For each value, its insertion point in the innermost dim of the
    /// sorted `self` (`torch.searchsorted`): the number of entries below
    /// it (`right`: at or below it). `self` 1-D serves every value; else
    /// its leading dims match the values'.
    pub fn searchsorted(&self, values: &Tensor, right: bool) -> Result<Tensor> {
        const OP: &str = "searchsorted";
        if self.ndim() == 0 {
            return Err(Error::shape(OP, "the sorted sequence must have at least one dim"));
        }
        let lead_ok = self.ndim() == 1
            || (values.ndim() == self.ndim()
                && values.shape()[..values.ndim() - 1] == self.shape()[..self.ndim() - 1]);
        if !lead_ok {
            return Err(Error::shape(
                OP,
                format!(
                    "the sorted sequence {:?} must be 1-D or share the values' {:?} leading dims",
                    self.shape(),
                    values.shape()
                ),
            ));
        }
        self.same_device(OP, values)?;
        // both in their promoted dtype, dense, values as rows of m
        let dtype = super::elementwise::result_type(self, values);
        let seq = self.to_dtype(dtype)?.dense()?;
        let v = values.to_dtype(dtype)?.dense()?;
        let n = seq.shape()[seq.ndim() - 1];
        let (rows, m) = if values.ndim() == 0 {
            (1, 1)
        } else {
            let m = v.shape()[v.ndim() - 1];
            (v.numel().checked_div(m).unwrap_or(0), m)
        };
        let shared = seq.ndim() == 1;
        let out = v
            .storage()
            .search_sorted(&seq.storage(), rows, m, n, shared, right)?;
        Tensor::from_storage(OP, out, values.shape())
    }

    /// The bucket of each value among the sorted 1-D `boundaries`
    /// (`torch.bucketize`; `right` as in PyTorch).
    pub fn bucketize(&self, boundaries: &Tensor, right: bool) -> Result<Tensor> {
        if boundaries.ndim() != 1 {
            return Err(Error::shape(
                "bucketize",
                format!("boundaries must be 1-D, got {:?}", boundaries.shape()),
            ));
        }
        if self.ndim() == 0 {
            return boundaries.searchsorted(&self.reshape(&[1])?, right)?.reshape(&[]);
        }
        let flat = self.reshape(&[-1])?;
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        boundaries.searchsorted(&flat, right)?.reshape(&shape)
    }

    /// How often each non-negative integer occurs (`torch.bincount`), or
    /// the sum of `weights` per value; at least `minlength` bins.
    pub fn bincount(&self, weights: Option<&Tensor>, minlength: usize) -> Result<Tensor> {
        const OP: &str = "bincount";
        if self.ndim() != 1 || !self.dtype().is_int() {
            return Err(Error::shape(
                OP,
                format!(
                    "expected a 1-D integer tensor, got {:?} {}",
                    self.shape(),
                    self.dtype().name()
                ),
            ));
        }
        let x = self.to_dtype(DType::I64)?;
        let (lo, hi) = if x.numel() == 0 {
            (0, -1)
        } else {
            (x.min()?.item()?.to_i64(), x.max()?.item()?.to_i64())
        };
        if lo < 0 {
            return Err(Error::invalid(
                OP,
                format!("the values must be non-negative, got {lo}"),
            ));
        }
        let bins = ((hi + 1) as usize).max(minlength);
        match weights {
            Some(w) => {
                if w.shape() != self.shape() {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "weights {:?} must have the input's shape {:?}",
                            w.shape(),
                            self.shape()
                        ),
                    ));
                }
                // f64 sums, as PyTorch's bincount returns for weights
                let w = w.to_dtype(DType::F64)?;
                Tensor::zeros(&[bins], Some(w.dtype()), self.device())?.index_add(0, &x, &w)
            }
            None => {
                let ones = Tensor::ones(&[x.numel()], Some(DType::I64), self.device())?;
                Tensor::zeros(&[bins], Some(DType::I64), self.device())?.index_add(0, &x, &ones)
            }
        }
    }

    /// A histogram of `bins` equal bins over `[min, max]` (the data's range
    /// when both are 0), values outside ignored (`torch.histc`).
    pub fn histc(&self, bins: usize, min: f64, max: f64) -> Result<Tensor> {
        const OP: &str = "histc";
        if bins == 0 {
            return Err(Error::invalid(OP, "bins must be at least 1"));
        }
        let x = self.to_float()?.reshape(&[-1])?;
        let (mut lo, mut hi) = (min, max);
        if lo == 0.0 && hi == 0.0 && x.numel() > 0 {
            lo = x.min()?.item()?.to_f64();
            hi = x.max()?.item()?.to_f64();
        }
        if lo > hi {
            return Err(Error::invalid(
                OP,
                format!("max ({hi}) must not be below min ({lo})"),
            ));
        }
        if lo == hi {
            lo -= 1.0;
            hi += 1.0;
        }
        let inside = x.compare_scalar(CmpOp::Ge, Scalar::Float(lo), false)?.binary(
            crate::core::op::BinaryOp::Mul,
            &x.compare_scalar(CmpOp::Le, Scalar::Float(hi), false)?,
        )?;
        let width = (hi - lo) / bins as f64;
        let b = x
            .to_dtype(DType::F64)?
            .sub_scalar(lo)?
            .div_scalar(width)?
            .floor()?
            .clamp(Some(Scalar::Float(0.0)), Some(Scalar::Float(bins as f64 - 1.0)))?
            .to_dtype(DType::I64)?;
        let w = inside.to_dtype(x.dtype())?;
        Tensor::zeros(&[bins], Some(x.dtype()), self.device())?.index_add(0, &b, &w)
    }

    /// `torch.histogram`: the histogram of all values over `bins` (a count
    /// of equal bins over `range`, the data's range by default, or the
    /// edges themselves, increasing) and the bin edges. Each bin holds
    /// `[left, right)`, the last one its right edge too; values outside are
    /// left out. `weight` (this tensor's shape) weighs each value;
    /// `density` divides by the total and the bin widths.
    pub fn histogram(
        &self,
        bins: HistogramBins<'_>,
        range: Option<(f64, f64)>,
        weight: Option<&Tensor>,
        density: bool,
    ) -> Result<(Tensor, Tensor)> {
        const OP: &str = "histogram";
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("expects a float tensor, got {}", self.dtype()),
            ));
        }
        if let Some(w) = weight {
            if w.shape() != self.shape() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "weight of shape {:?} must have the input's shape {:?}",
                        w.shape(),
                        self.shape()
                    ),
                ));
            }
        }
        let x = self.reshape(&[-1])?;
        let edges = match bins {
            HistogramBins::Edges(e) => {
                if e.ndim() != 1 || e.numel() < 2 {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "bin edges must be 1-D with at least 2 values, got shape {:?}",
                            e.shape()
                        ),
                    ));
                }
                e.to_dtype(x.dtype())?.to_device(x.device())?
            }
            HistogramBins::Count(n) => {
                if n == 0 {
                    return Err(Error::invalid(OP, "bins must be at least 1"));
                }
                let (mut lo, mut hi) = match range {
                    Some(r) => r,
                    None if x.numel() == 0 => (0.0, 0.0),
                    None => (x.min()?.item()?.to_f64(), x.max()?.item()?.to_f64()),
                };
                if !(lo.is_finite() && hi.is_finite()) || lo > hi {
                    return Err(Error::invalid(
                        OP,
                        format!("range must be finite with min <= max, got [{lo}, {hi}]"),
                    ));
                }
                if lo == hi {
                    lo -= 0.5;
                    hi += 0.5;
                }
                Tensor::linspace(lo, hi, n as i64 + 1, Some(x.dtype()), x.device())?
            }
        };
        let n = edges.numel() - 1;
        let (first, last) = (edges.narrow(0, 0, 1)?, edges.narrow(0, n as i64, 1)?);
        let inside = x
            .compare(CmpOp::Ge, &first)?
            .binary(BinaryOp::Mul, &x.compare(CmpOp::Le, &last)?)?;
        // the bin of each value: the last edge at or below it (the right
        // edge itself falls in the last bin)
        let bin = edges
            .searchsorted(&x, true)?
            .sub_scalar(1)?
            .clamp(Some(Scalar::Int(0)), Some(Scalar::Int(n as i64 - 1)))?;
        let w = match weight {
            Some(w) => w
                .reshape(&[-1])?
                .to_dtype(x.dtype())?
                .mul(&inside.to_dtype(x.dtype())?)?,
            None => inside.to_dtype(x.dtype())?,
        };
        let mut hist = Tensor::zeros(&[n], Some(x.dtype()), x.device())?.index_add(0, &bin, &w)?;
        if density {
            let widths = edges
                .narrow(0, 1, n as i64)?
                .sub(&edges.narrow(0, 0, n as i64)?)?;
            hist = hist.div(&hist.sum()?)?.div(&widths)?;
        }
        Ok((hist, edges))
    }

    /// The distinct values in ascending order (`torch.unique`, flattened),
    /// with the index of each input element's value and each value's count.
    pub fn unique(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let flat = self.reshape(&[-1])?.detach();
        let s = flat.sort(0, false)?;
        let (sorted, order) = (&s[0], &s[1]);
        let (values, group, counts) = sorted.consecutive_groups()?;
        // each element's group, back in input order
        let inverse =
            Tensor::zeros(&[flat.numel()], Some(DType::I64), self.device())?.index_copy(0, order, &group)?;
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        Ok((values, inverse.reshape(&shape)?, counts))
    }

    /// Runs of equal consecutive values collapsed to one
    /// (`torch.unique_consecutive`, flattened), with the inverse and counts.
    pub fn unique_consecutive(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let flat = self.reshape(&[-1])?.detach();
        let (values, group, counts) = flat.consecutive_groups()?;
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        Ok((values, group.reshape(&shape)?, counts))
    }

    /// `torch.unique(dim=d)` (sorted slices) and
    /// `torch.unique_consecutive(dim=d)` (`consecutive`: runs of equal
    /// neighbouring slices): the distinct slices along `dim`, each slice's
    /// group and each group's size. The slices are compared on the host
    /// (the result's size depends on them, and PyTorch syncs too); NaN
    /// compares equal to NaN and above every number.
    pub fn unique_dim(&self, dim: i64, consecutive: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let op = if consecutive {
            "unique_consecutive"
        } else {
            "unique"
        };
        if self.ndim() == 0 {
            return Err(Error::shape(op, "a dim was given but the input is 0-dim"));
        }
        let d = normalize_dim(op, dim, self.shape())?;
        let n = self.shape()[d];
        let moved = self.detach().movedim(&[d as i64], &[0])?.contiguous()?;
        let rest = moved.numel().checked_div(n).unwrap_or(0);
        let host = moved.to_host()?;
        let key = |i: usize| -> f64 {
            match host.get(i) {
                Some(Scalar::Float(f)) => f,
                Some(v) => v.to_f64(),
                None => 0.0,
            }
        };
        let exact: Vec<i64> = match &host {
            crate::core::HostValues::Int(v) => v.clone(),
            _ => vec![],
        };
        let cmp = |a: usize, b: usize| -> std::cmp::Ordering {
            for c in 0..rest {
                let (i, j) = (a * rest + c, b * rest + c);
                let o = if !exact.is_empty() {
                    exact[i].cmp(&exact[j])
                } else {
                    let (x, y) = (key(i), key(j));
                    // NaN equals NaN and -0 equals +0; otherwise numeric order, NaN last
                    if (x.is_nan() && y.is_nan()) || x == y {
                        std::cmp::Ordering::Equal
                    } else {
                        x.total_cmp(&y)
                    }
                };
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        };
        let mut order: Vec<usize> = (0..n).collect();
        if !consecutive {
            order.sort_by(|&a, &b| cmp(a, b));
        }
        let mut inverse = vec![0i64; n];
        let mut firsts: Vec<i64> = vec![];
        let mut counts: Vec<i64> = vec![];
        for (k, &i) in order.iter().enumerate() {
            if k == 0 || cmp(order[k - 1], i) != std::cmp::Ordering::Equal {
                firsts.push(i as i64);
                counts.push(0);
            }
            inverse[i] = firsts.len() as i64 - 1;
            *counts.last_mut().expect("a group was opened") += 1;
        }
        let ints = |v: Vec<i64>| {
            let len = v.len();
            Tensor::from_host(
                &crate::core::HostValues::Int(v),
                &[len],
                DType::I64,
                self.device(),
            )
        };
        let values = moved
            .index_select(0, &ints(firsts)?)?
            .movedim(&[0], &[d as i64])?;
        Ok((values, ints(inverse)?, ints(counts)?))
    }

    /// For a 1-D tensor: the first value of each run of equal values, each
    /// element's run number, and each run's length.
    fn consecutive_groups(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let n = self.numel();
        if n == 0 {
            let empty = Tensor::zeros(&[0], Some(DType::I64), self.device())?;
            return Ok((self.clone(), empty.clone(), empty));
        }
        let starts = if n == 1 {
            Tensor::ones(&[1], Some(DType::Bool), self.device())?
        } else {
            let new = self
                .narrow(0, 1, n as i64 - 1)?
                .compare(CmpOp::Ne, &self.narrow(0, 0, n as i64 - 1)?)?;
            // NaN differs from itself: each NaN is its own value, as in PyTorch
            Tensor::cat(&[Tensor::ones(&[1], Some(DType::Bool), self.device())?, new], 0)?
        };
        let group = starts.to_dtype(DType::I64)?.cumsum(0, None)?.sub_scalar(1)?;
        let first = starts.flat_nonzero()?;
        let values = self.take(&first)?;
        let groups = first.numel();
        let ends = Tensor::cat(
            &[
                first.narrow(0, 1, groups as i64 - 1)?,
                Tensor::scalar(Scalar::Int(n as i64), DType::I64, self.device())?.reshape(&[1])?,
            ],
            0,
        )?;
        let counts = ends.sub(&first)?;
        Ok((values, group, counts))
    }
}

/// The bins of [`Tensor::histogram`]: a count of equal bins, or their edges.
#[derive(Clone, Copy, Debug)]
pub enum HistogramBins<'a> {
    /// This many equal bins over the range.
    Count(usize),
    /// The bin edges, increasing (one more than the bins).
    Edges(&'a Tensor),
}
