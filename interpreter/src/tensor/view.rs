//! Views: ops that return a tensor sharing this one's storage with a new
//! [`Layout`](super::Layout) (reshape of compatible data, transpose, permute, squeeze,
//! unsqueeze, expand, narrow, slice with step, select). Only `reshape` and
//! `flatten` may copy, and only when no view can express the result.

use super::autograd::{self, functions};
use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::shape::{infer_shape, normalize_dim, normalize_dim_for, normalize_index};

/// Python's slice clamping of `[start:end:step]` (step > 0) over a dim of
/// `size`: the first index, the clamped end (never before the first) and the
/// number of elements, in i128 so that no bound can overflow.
pub(crate) fn clamp_slice(
    size: usize,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> (usize, usize, usize) {
    let n = size as i128;
    let clamp = |v: i64| {
        let v = v as i128;
        if v < 0 {
            (v + n).max(0)
        } else {
            v.min(n)
        }
    };
    let s = clamp(start.unwrap_or(0));
    let e = end.map_or(n, clamp).max(s);
    let step = (step as i128).max(1);
    let len = (e - s + step - 1) / step;
    // all three lie in 0..=size, so they fit in usize
    (s as usize, e as usize, len as usize)
}

/// The gradient of a view whose output has the same elements in another
/// shape (reshape, view, squeeze, unsqueeze): `g` reshaped back.
fn record_reshape(name: &'static str, x: &Tensor, out: Tensor) -> Tensor {
    if !autograd::needs_grad(&[x]) {
        return out;
    }
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    autograd::record(name, &[x], out, move |g, _| Ok(vec![Some(g.reshape(&shape)?)]))
}

/// The gradient of a view that reads part of the input (narrow, slice,
/// select): `g` written into zeros where `view` reads.
fn record_part(
    name: &'static str,
    x: &Tensor,
    out: Tensor,
    view: impl FnOnce(&Tensor) -> Result<Tensor> + Send + 'static,
) -> Tensor {
    if !autograd::needs_grad(&[x]) {
        return out;
    }
    let shape = x.shape().to_vec();
    autograd::record(name, &[x], out, move |g, _| {
        Ok(vec![Some(functions::view_scatter(&shape, g, view)?)])
    })
}

/// The gradient of a broadcasting view: `g` summed back to the input's shape.
fn record_expand(name: &'static str, x: &Tensor, out: Tensor) -> Tensor {
    if !autograd::needs_grad(&[x]) {
        return out;
    }
    let shape = x.shape().to_vec();
    autograd::record(name, &[x], out, move |g, _| {
        Ok(vec![Some(functions::sum_to(g, &shape)?)])
    })
}

impl Tensor {
    /// The same elements with another shape (one `-1` is inferred); a view when
    /// the strides allow it, else a contiguous copy.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let target = infer_shape("reshape", self.shape(), shape)?;
        let out = match self.layout().view_as(&target) {
            Some(l) => self.view_with("reshape", l)?,
            None => {
                let c = autograd::forward(|| self.clone_data())?;
                c.view_with("reshape", super::Layout::contiguous(&target))?
            }
        };
        Ok(record_reshape("reshape", self, out))
    }

    /// Like [`Tensor::reshape`] but never copies: fails when no view fits.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let target = infer_shape("view", self.shape(), shape)?;
        let l = self.layout().view_as(&target).ok_or_else(|| {
            Error::shape(
                "view",
                format!(
                    "a tensor of shape {:?} and strides {:?} cannot be viewed as shape {target:?}; use reshape (which copies) instead",
                    self.shape(),
                    self.layout().strides()
                ),
            )
        })?;
        Ok(record_reshape("view", self, self.view_with("view", l)?))
    }

    /// Merges dims `start..=end` into one.
    pub fn flatten(&self, start: i64, end: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return self.reshape(&[1]);
        }
        let s = normalize_dim("flatten", start, self.shape())?;
        let e = normalize_dim("flatten", end, self.shape())?;
        if s > e {
            return Err(Error::invalid(
                "flatten",
                format!("start dim {start} comes after end dim {end}"),
            ));
        }
        let mut shape: Vec<i64> = self.shape()[..s].iter().map(|&d| d as i64).collect();
        shape.push(crate::core::shape::numel(&self.shape()[s..=e]) as i64);
        shape.extend(self.shape()[e + 1..].iter().map(|&d| d as i64));
        self.reshape(&shape)
    }

    /// Swaps two dims.
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            for d in [d0, d1] {
                if d != 0 && d != -1 {
                    normalize_dim("transpose", d, self.shape())?;
                }
            }
            return Ok(self.clone());
        }
        let a = normalize_dim("transpose", d0, self.shape())?;
        let b = normalize_dim("transpose", d1, self.shape())?;
        let out = self.view_with("transpose", self.layout().transpose(a, b))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        Ok(autograd::record("transpose", &[self], out, move |g, _| {
            Ok(vec![Some(g.transpose(a as i64, b as i64)?)])
        }))
    }

    /// The transpose of a matrix; 0-D and 1-D tensors are returned as they are.
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            n => Err(Error::shape(
                "t",
                format!(
                    "expects a tensor with at most 2 dims, got {n} (shape {:?}); use transpose or permute",
                    self.shape()
                ),
            )),
        }
    }

    /// Reorders the dims.
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let perm = self.layout().check_permutation("permute", dims)?;
        let out = self.view_with("permute", self.layout().permute(&perm))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let mut inverse = vec![0i64; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i as i64;
        }
        Ok(autograd::record("permute", &[self], out, move |g, _| {
            Ok(vec![Some(g.permute(&inverse)?)])
        }))
    }

    /// Removes size-1 dims: all of them (`None`) or those listed.
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let mut drop: Vec<usize> = match dims {
            None => (0..self.ndim()).filter(|&d| self.shape()[d] == 1).collect(),
            Some(ds) => {
                let mut v = vec![];
                for &d in ds {
                    if self.ndim() == 0 && (d == 0 || d == -1) {
                        continue;
                    }
                    let d = normalize_dim("squeeze", d, self.shape())?;
                    if self.shape()[d] == 1 && !v.contains(&d) {
                        v.push(d);
                    }
                }
                v
            }
        };
        drop.sort_unstable();
        let mut l = self.layout().clone();
        for &d in drop.iter().rev() {
            l = l.squeeze(d);
        }
        Ok(record_reshape("squeeze", self, self.view_with("squeeze", l)?))
    }

    /// Inserts a size-1 dim at `dim` (`-ndim-1..=ndim`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = normalize_dim_for("unsqueeze", dim, self.ndim() + 1, self.shape())?;
        Ok(record_reshape(
            "unsqueeze",
            self,
            self.view_with("unsqueeze", self.layout().unsqueeze(d))?,
        ))
    }

    /// Broadcasts to `shape` without copying; `-1` keeps a dim's size.
    pub fn expand(&self, shape: &[i64]) -> Result<Tensor> {
        let n = shape.len();
        if n < self.ndim() {
            return Err(Error::shape(
                "expand",
                format!(
                    "the target shape {shape:?} has fewer dims than the tensor's shape {:?}",
                    self.shape()
                ),
            ));
        }
        let lead = n - self.ndim();
        let mut target = Vec::with_capacity(n);
        for (i, &s) in shape.iter().enumerate() {
            target.push(match s {
                -1 if i >= lead => self.shape()[i - lead],
                s if s >= 0 => s as usize,
                _ => {
                    return Err(Error::shape(
                        "expand",
                        format!(
                            "invalid size {s} at dim {i} of {shape:?} for a tensor of shape {:?}",
                            self.shape()
                        ),
                    ))
                }
            });
        }
        let out = self.view_with("expand", self.layout().broadcast_to("expand", &target)?)?;
        Ok(record_expand("expand", self, out))
    }

    /// A stride-0 view of this tensor broadcast to `shape`.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        let out = self.view_with("broadcast_to", self.layout().broadcast_to("broadcast_to", shape)?)?;
        Ok(record_expand("broadcast_to", self, out))
    }

    /// Every tensor as a view broadcast to their common shape
    /// (`torch.broadcast_tensors`).
    pub fn broadcast_tensors(tensors: &[Tensor]) -> Result<Vec<Tensor>> {
        let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
        let shape = broadcast_all("broadcast_tensors", &shapes)?;
        tensors.iter().map(|t| t.broadcast_to(&shape)).collect()
    }

    /// `len` elements of `dim` from `start` (negative `start` counts from the end).
    pub fn narrow(&self, dim: i64, start: i64, len: i64) -> Result<Tensor> {
        let d = normalize_dim("narrow", dim, self.shape())?;
        let size = self.shape()[d] as i64;
        let s = if start < 0 {
            start.saturating_add(size)
        } else {
            start
        };
        if s < 0 || len < 0 || s.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "start {start} with length {len} does not fit dimension {d} of size {size} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let out = self.view_with("narrow", self.layout().slice(d, s as usize, len as usize, 1))?;
        Ok(record_part("narrow", self, out, move |z| {
            z.narrow(d as i64, s, len)
        }))
    }

    /// Python slicing `[start:end:step]` of `dim` (bounds clamp; `None` means the end).
    pub fn slice(&self, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> Result<Tensor> {
        let d = normalize_dim("slice", dim, self.shape())?;
        if step <= 0 {
            return Err(Error::invalid(
                "slice",
                format!("step must be positive, got {step}"),
            ));
        }
        let (s, e, len) = clamp_slice(self.shape()[d], start, end, step);
        let out = self.view_with("slice", self.layout().slice(d, s, len, step as usize))?;
        let (s, e) = (s as i64, e as i64);
        Ok(record_part("slice", self, out, move |z| {
            z.slice(d as i64, Some(s), Some(e), step)
        }))
    }

    /// Fixes `dim` at `index` (negative counts from the end), removing the dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape("select", "cannot index a 0-dim tensor"));
        }
        let d = normalize_dim("select", dim, self.shape())?;
        let i = normalize_index("select", index, d, self.shape())?;
        let out = self.view_with("select", self.layout().select(d, i))?;
        Ok(record_part("select", self, out, move |z| {
            z.select(d as i64, i as i64)
        }))
    }
}

/// The shape all of `shapes` broadcast to (`torch.broadcast_shapes`); `[]`
/// for none.
pub fn broadcast_all(op: &'static str, shapes: &[&[usize]]) -> Result<Vec<usize>> {
    shapes.iter().try_fold(Vec::new(), |acc, s| {
        crate::core::shape::broadcast_shapes(op, &acc, s)
    })
}
