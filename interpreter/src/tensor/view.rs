//! Views: ops that return a tensor sharing this one's storage with a new
//! [`Layout`] (reshape of compatible data, transpose, permute, squeeze,
//! unsqueeze, expand, narrow, slice with step, select). Only `reshape` and
//! `flatten` may copy, and only when no view can express the result.

use super::shape::{infer_shape, normalize_dim, normalize_dim_for, normalize_index};
use super::Tensor;
use crate::error::{Error, Result};

impl Tensor {
    /// The same elements with another shape (one `-1` is inferred); a view when
    /// the strides allow it, else a contiguous copy.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let target = infer_shape("reshape", self.shape(), shape)?;
        match self.layout().view_as(&target) {
            Some(l) => Ok(self.with_layout(l)),
            None => {
                let c = self.clone_data()?;
                Ok(c.with_layout(super::Layout::contiguous(&target)))
            }
        }
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
        Ok(self.with_layout(l))
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
        shape.push(self.shape()[s..=e].iter().product::<usize>() as i64);
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
        Ok(self.with_layout(self.layout().transpose(a, b)))
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
        Ok(self.with_layout(self.layout().permute(&perm)))
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
        Ok(self.with_layout(l))
    }

    /// Inserts a size-1 dim at `dim` (`-ndim-1..=ndim`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = normalize_dim_for("unsqueeze", dim, self.ndim() + 1, self.shape())?;
        Ok(self.with_layout(self.layout().unsqueeze(d)))
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
        Ok(self.with_layout(self.layout().broadcast_to("expand", &target)?))
    }

    /// A stride-0 view of this tensor broadcast to `shape`.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().broadcast_to("broadcast_to", shape)?))
    }

    /// `len` elements of `dim` from `start` (negative `start` counts from the end).
    pub fn narrow(&self, dim: i64, start: i64, len: i64) -> Result<Tensor> {
        let d = normalize_dim("narrow", dim, self.shape())?;
        let size = self.shape()[d] as i64;
        let s = if start < 0 { start + size } else { start };
        if s < 0 || len < 0 || s + len > size {
            return Err(Error::invalid(
                "narrow",
                format!(
                    "start {start} with length {len} does not fit dimension {d} of size {size} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        Ok(self.with_layout(self.layout().slice(d, s as usize, len as usize, 1)))
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
        let size = self.shape()[d] as i64;
        let clamp = |v: i64| if v < 0 { (v + size).max(0) } else { v.min(size) };
        let s = clamp(start.unwrap_or(0));
        let e = clamp(end.unwrap_or(size)).max(s);
        let len = (e - s + step - 1) / step;
        Ok(self.with_layout(self.layout().slice(d, s as usize, len as usize, step as usize)))
    }

    /// Fixes `dim` at `index` (negative counts from the end), removing the dim.
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            return Err(Error::shape("select", "cannot index a 0-dim tensor"));
        }
        let d = normalize_dim("select", dim, self.shape())?;
        let i = normalize_index("select", index, d, self.shape())?;
        Ok(self.with_layout(self.layout().select(d, i)))
    }
}
