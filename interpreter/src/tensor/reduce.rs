//! The reduction front-end: `sum prod mean max min argmax argmin var std all
//! any` over the whole tensor or over some dims, with `keepdim`.

use super::autograd::{self, functions, Saved};
use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::core::shape::normalize_dim;

/// A channels-last tensor reduced as the dense tensor it is in memory: its
/// permuted (contiguous) layout and the reduced dims in that order, when
/// the kept dims keep their relative order (the result's elements then come
/// out in the same order): a full `sum()`, or over batch and space, or over
/// channels. The reduction then reads memory in order instead of striding
/// through it. Index results (argmax, argmin) count in the logical order,
/// so they are left alone.
fn in_memory_order(t: &Tensor, op: ReduceOp, ds: &[usize]) -> Option<(crate::core::Layout, Vec<usize>)> {
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
        return None;
    }
    let order: Vec<usize> = super::elementwise::channels_last_perm(t)?
        .iter()
        .map(|&d| d as usize)
        .collect();
    let kept_in_memory = order.iter().copied().filter(|d| !ds.contains(d));
    if !kept_in_memory.eq((0..t.ndim()).filter(|d| !ds.contains(d))) {
        return None;
    }
    let mut dims: Vec<usize> = ds
        .iter()
        .filter_map(|d| order.iter().position(|o| o == d))
        .collect();
    dims.sort_unstable();
    Some((t.layout().permute(&order), dims))
}

impl Tensor {
    /// Reduces `dims` (all dims when `None`); `keepdim` keeps them as size 1.
    pub fn reduce(&self, op: ReduceOp, dims: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        if super::autocast::widens(self) && super::autocast::widens_reduce(op) {
            return super::autocast::widen(self)?.reduce(op, dims, keepdim);
        }
        let (keep, squeezed) = self.reduce_impl(op, dims)?;
        let out = if keepdim {
            keep.clone()
        } else {
            keep.view_with("reduce", super::Layout::contiguous(&squeezed))?
        };
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (x, k) = (Saved::new(self), Saved::new(&keep));
        let keep_shape: Vec<i64> = keep.shape().iter().map(|&d| d as i64).collect();
        Ok(autograd::record(op.name(), &[self], out, move |g, _| {
            let g = g.reshape(&keep_shape)?;
            Ok(vec![functions::reduce(
                op,
                x.get(op.name())?,
                k.get(op.name())?,
                &g,
            )?])
        }))
    }

    /// The reduction with the reduced dims kept as size 1, and the shape
    /// without them.
    fn reduce_impl(&self, op: ReduceOp, dims: Option<&[i64]>) -> Result<(Tensor, Vec<usize>)> {
        let mut ds: Vec<usize> = match dims {
            None => (0..self.ndim()).collect(),
            Some(list) if self.ndim() == 0 => {
                for &d in list {
                    if d != 0 && d != -1 {
                        normalize_dim(op.name(), d, self.shape())?;
                    }
                }
                vec![]
            }
            Some(list) => {
                let mut v = Vec::with_capacity(list.len());
                for &d in list {
                    let d = normalize_dim(op.name(), d, self.shape())?;
                    if v.contains(&d) {
                        return Err(Error::invalid(
                            op.name(),
                            format!("dim {d} appears twice in {list:?}"),
                        ));
                    }
                    v.push(d);
                }
                v
            }
        };
        ds.sort_unstable();
        let lane: usize = ds.iter().fold(1usize, |n, &d| n.saturating_mul(self.shape()[d]));
        if op.needs_elements() && lane == 0 {
            return Err(Error::invalid(
                op.name(),
                format!(
                    "cannot reduce over an empty dimension (shape {:?}, dims {ds:?})",
                    self.shape()
                ),
            ));
        }
        if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin)
            && ds.len() != 1
            && dims.is_some()
            && self.ndim() > 0
        {
            return Err(Error::invalid(op.name(), "expects a single dim"));
        }
        let out = match in_memory_order(self, op, &ds) {
            Some((layout, dims)) => self.storage().reduce(op, &layout, &dims)?,
            None => self.storage().reduce(op, self.layout(), &ds)?,
        };
        let keep: Vec<usize> = (0..self.ndim())
            .map(|d| if ds.contains(&d) { 1 } else { self.shape()[d] })
            .collect();
        let squeezed: Vec<usize> = (0..self.ndim())
            .filter(|d| !ds.contains(d))
            .map(|d| self.shape()[d])
            .collect();
        Ok((Tensor::from_storage(op.name(), out, &keep)?, squeezed))
    }

    /// Sum of all elements (ints and bool sum to i64).
    pub fn sum(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, None, false)
    }

    /// Mean of all elements.
    pub fn mean(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Mean, None, false)
    }

    /// Maximum of all elements.
    pub fn max(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, None, false)
    }

    /// Minimum of all elements.
    pub fn min(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, None, false)
    }
}

impl Tensor {
    /// `Tensor.sum_to_size`: this tensor summed down to `size`, which it
    /// must broadcast from (the reverse of `expand`: leading dims summed
    /// away, dims of size 1 in `size` summed with keepdim).
    pub fn sum_to_size(&self, size: &[usize]) -> Result<Tensor> {
        const OP: &str = "sum_to_size";
        let s = self.shape();
        let lead = s.len().checked_sub(size.len());
        let fits = lead.is_some_and(|lead| {
            size.iter()
                .zip(&s[lead..])
                .all(|(&want, &have)| want == have || want == 1)
        });
        let Some(lead) = lead.filter(|_| fits) else {
            return Err(Error::shape(
                OP,
                format!("size {size:?} is not expandable to the tensor's shape {s:?}"),
            ));
        };
        let mut out = self.clone();
        let ones: Vec<i64> = (0..size.len())
            .filter(|&i| size[i] == 1 && s[lead + i] != 1)
            .map(|i| (lead + i) as i64)
            .collect();
        if !ones.is_empty() {
            out = out.reduce(ReduceOp::Sum, Some(&ones), true)?;
        }
        if lead > 0 {
            let leading: Vec<i64> = (0..lead as i64).collect();
            out = out.reduce(ReduceOp::Sum, Some(&leading), false)?;
        }
        Ok(out)
    }
}
