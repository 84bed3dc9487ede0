//! [`Layout`]: shape, strides and offset of a tensor over its storage. Views
//! (transpose, permute, narrow, slice with step, expand, squeeze, unsqueeze,
//! select, reshape of compatible data) only compute a new `Layout`; no data is
//! touched here.
//!
//! The one invariant kernels rely on: a layout attached to a tensor has at
//! most [`MAX_DIMS`](super::shape::MAX_DIMS) dims, an element count that fits
//! in `usize`, and every element it can reach lies inside its storage
//! ([`Layout::check_fits`], run by `Tensor::with_layout` for every view). The
//! view methods below compute new layouts from already-checked arguments;
//! anything they could get wrong is caught by that check before a kernel sees
//! the layout.

use super::shape::{self, contiguous_strides, numel};
use crate::core::error::{Error, Result};

/// Where a tensor's elements live inside its storage, in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

impl Layout {
    /// A row-major layout of `shape` starting at element 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.to_vec(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }

    /// A layout from its parts (the caller guarantees it stays inside its storage).
    pub fn from_parts(shape: Vec<usize>, strides: Vec<usize>, offset: usize) -> Self {
        Layout {
            shape,
            strides,
            offset,
        }
    }

    /// The sizes of each dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The stride of each dimension, in elements (0 for broadcast dims).
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// The offset of the first element, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// True when the elements are row-major and dense (size-1 dims ignored).
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 {
                if s != expected {
                    return false;
                }
                expected = expected.saturating_mul(d);
            }
        }
        true
    }

    /// The dims of an `[N, C, *S]` layout in channels-last memory order,
    /// outermost first: `N, *S, C` (NHWC for images).
    pub fn channels_last_order(ndim: usize) -> Vec<usize> {
        let mut order = vec![0];
        order.extend(2..ndim);
        if ndim > 1 {
            order.push(1);
        }
        order
    }

    /// A dense layout of `shape` whose dims lie in memory in `order`
    /// (outermost first), starting at element 0.
    pub fn dense_in_order(shape: &[usize], order: &[usize]) -> Self {
        let mut strides = vec![0; shape.len()];
        let mut step = 1;
        for &d in order.iter().rev() {
            strides[d] = step;
            step *= shape[d];
        }
        Layout::from_parts(shape.to_vec(), strides, 0)
    }

    /// True when the elements are dense with the dims in memory in `order`
    /// (outermost first; size-1 dims ignored, the offset not looked at).
    pub fn is_dense_in_order(&self, order: &[usize]) -> bool {
        let mut expected = 1usize;
        for &d in order.iter().rev() {
            if self.shape[d] != 1 && self.strides[d] != expected {
                return false;
            }
            expected = expected.saturating_mul(self.shape[d]);
        }
        true
    }

    /// The storage range `start..end` when the layout is contiguous.
    pub fn contiguous_range(&self) -> Option<(usize, usize)> {
        self.is_contiguous()
            .then(|| (self.offset, self.offset + self.numel()))
    }

    /// True when two logical elements share one storage element (a stride-0 dim
    /// of size > 1, as `expand` makes); such a layout cannot be written in place.
    pub fn has_internal_overlap(&self) -> bool {
        self.shape
            .iter()
            .zip(&self.strides)
            .any(|(&d, &s)| d > 1 && s == 0)
    }

    /// One past the largest storage element this layout touches (its offset
    /// when it has no elements). Valid for layouts that passed
    /// [`Layout::check_fits`]; saturates otherwise.
    pub fn storage_extent(&self) -> usize {
        self.checked_extent().unwrap_or(usize::MAX)
    }

    /// This layout, with offset 0 when it has no elements (an empty view
    /// reaches nothing, wherever its start was).
    pub fn without_empty_offset(mut self) -> Layout {
        if self.shape.contains(&0) {
            self.offset = 0;
        }
        self
    }

    /// [`Layout::storage_extent`] in checked arithmetic: `None` when it overflows.
    pub fn checked_extent(&self) -> Option<usize> {
        if self.shape.contains(&0) {
            return Some(self.offset);
        }
        let mut last = self.offset;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            last = last.checked_add((d - 1).checked_mul(s)?)?;
        }
        last.checked_add(1)
    }

    /// Fails unless this layout may be attached to a storage of
    /// `storage_len` elements: at most 64 dims, shape and strides of one
    /// length, an element count that fits in `usize`, and every reachable
    /// element inside the storage. Kernels trust layouts that passed it.
    pub fn check_fits(&self, op: &'static str, storage_len: usize) -> Result<()> {
        shape::check_rank(op, self.ndim())?;
        if self.strides.len() != self.shape.len() {
            return Err(Error::invalid(
                op,
                "internal: a layout's shape and strides differ in length",
            ));
        }
        shape::checked_numel(op, &self.shape)?;
        match self.checked_extent() {
            Some(end) if end <= storage_len => Ok(()),
            _ => Err(Error::invalid(
                op,
                format!(
                    "a view of shape {:?}, strides {:?} and offset {} reaches outside its storage of {storage_len} elements",
                    self.shape, self.strides, self.offset
                ),
            )),
        }
    }

    /// Swaps two (already normalised) dims.
    pub fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    /// Reorders dims; `perm` must be a permutation of `0..ndim`.
    pub fn permute(&self, perm: &[usize]) -> Layout {
        Layout {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            offset: self.offset,
        }
    }

    /// Elements `start, start+step, ...` (`len` of them) of `dim`.
    pub fn slice(&self, dim: usize, start: usize, len: usize, step: usize) -> Layout {
        let mut l = self.clone();
        if len > 0 {
            l.offset = l.offset.saturating_add(start.saturating_mul(self.strides[dim]));
        }
        l.shape[dim] = len;
        // a dim of one element keeps its stride: the step never moves along it,
        // and libraries such as cuBLAS refuse huge strides even where unused
        if len > 1 {
            l.strides[dim] = l.strides[dim].saturating_mul(step);
        }
        l
    }

    /// Removes `dim` by fixing its index.
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.clone();
        l.offset = l.offset.saturating_add(index.saturating_mul(self.strides[dim]));
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// Inserts a size-1 dim at position `dim` (in `0..=ndim`).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let stride = if dim < self.ndim() {
            self.strides[dim].saturating_mul(self.shape[dim])
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }

    /// Removes a size-1 dim.
    pub fn squeeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// Broadcasts to `target` (new leading dims and size-1 dims get stride 0).
    pub fn broadcast_to(&self, op: &'static str, target: &[usize]) -> Result<Layout> {
        let n = target.len();
        let err = || Error::BroadcastMismatch {
            op,
            lhs: self.shape.clone(),
            rhs: target.to_vec(),
        };
        if n < self.ndim() {
            return Err(err());
        }
        shape::checked_numel(op, target)?;
        let lead = n - self.ndim();
        let mut strides = vec![0; n];
        for i in 0..n {
            if i < lead {
                continue;
            }
            let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
            strides[i] = if d == target[i] {
                s
            } else if d == 1 {
                0
            } else {
                return Err(err());
            };
        }
        Ok(Layout {
            shape: target.to_vec(),
            strides,
            offset: self.offset,
        })
    }

    /// A view with shape `target` over the same elements, when the strides allow
    /// it without a copy (PyTorch's `computeStride`); `None` when a copy is needed.
    pub fn view_as(&self, target: &[usize]) -> Option<Layout> {
        if self.is_contiguous() {
            return Some(Layout {
                shape: target.to_vec(),
                strides: contiguous_strides(target),
                offset: self.offset,
            });
        }
        if self.numel() == 0 {
            return Some(Layout {
                shape: target.to_vec(),
                strides: contiguous_strides(target),
                offset: self.offset,
            });
        }
        // Walk chunks of old dims that are mutually contiguous and match them to new dims.
        let mut new_strides = vec![0; target.len()];
        let mut view_d = target.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last().unwrap_or(&1);
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel = tensor_numel.saturating_mul(self.shape[tensor_d]);
            let chunk_ends = tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel.saturating_mul(chunk_base_stride));
            if chunk_ends {
                while view_d >= 0 && (view_numel < tensor_numel || target[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel.saturating_mul(chunk_base_stride);
                    view_numel = view_numel.saturating_mul(target[view_d as usize]);
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(Layout {
            shape: target.to_vec(),
            strides: new_strides,
            offset: self.offset,
        })
    }

    /// Checks a (normalised) permutation of `0..ndim`.
    pub fn check_permutation(&self, op: &'static str, perm: &[i64]) -> Result<Vec<usize>> {
        let n = self.ndim();
        if perm.len() != n {
            return Err(Error::invalid(
                op,
                format!(
                    "expected {n} dims for a tensor of shape {:?}, got {perm:?}",
                    self.shape
                ),
            ));
        }
        let mut seen = vec![false; n];
        let mut out = Vec::with_capacity(n);
        for &p in perm {
            let d = shape::normalize_dim(op, p, &self.shape)?;
            if seen[d] {
                return Err(Error::invalid(op, format!("dim {p} repeats in {perm:?}")));
            }
            seen[d] = true;
            out.push(d);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.is_contiguous());
        assert!(!l.transpose(0, 1).is_contiguous());
        assert!(Layout::contiguous(&[1, 3]).transpose(0, 1).is_contiguous());
        assert_eq!(l.slice(1, 1, 2, 1).contiguous_range(), None);
        assert_eq!(l.select(0, 1).contiguous_range(), Some((3, 6)));
    }

    #[test]
    fn views_share_offsets() {
        let l = Layout::contiguous(&[4, 5]);
        let s = l.slice(1, 1, 2, 2);
        assert_eq!(s.shape(), &[4, 2]);
        assert_eq!(s.strides(), &[5, 2]);
        assert_eq!(s.offset(), 1);
        assert_eq!(s.storage_extent(), 1 + 15 + 2 + 1);
        assert!(s.check_fits("t", 20).is_ok());
        assert!(s.check_fits("t", 18).is_err());
        let b = Layout::contiguous(&[3, 1]).broadcast_to("t", &[2, 3, 4]).unwrap();
        assert_eq!(b.strides(), &[0, 1, 0]);
        assert!(b.has_internal_overlap());
        assert!(Layout::contiguous(&[3]).broadcast_to("t", &[4]).is_err());
    }

    #[test]
    fn layouts_outside_their_storage_are_refused() {
        let l = Layout::contiguous(&[2, 4096]);
        let far = l.slice(0, usize::MAX / 2, 1, 1);
        assert!(far.check_fits("narrow", 8192).is_err());
        let wide = Layout::from_parts(vec![usize::MAX, 2], vec![1, 1], 0);
        assert!(wide.check_fits("t", 10).is_err());
        let huge = Layout::from_parts(vec![1 << 40, 1 << 40], vec![0, 0], 0);
        assert!(huge.check_fits("t", 1).is_err(), "numel overflows");
        let deep = Layout::contiguous(&[1; 65]);
        assert!(deep.check_fits("t", 1).is_err());
        assert!(Layout::contiguous(&[0, 5]).check_fits("t", 0).is_ok());
    }

    #[test]
    fn view_as_follows_compute_stride() {
        let t = Layout::contiguous(&[2, 3, 4]).permute(&[1, 0, 2]); // [3,2,4] strides [4,12,1]
        let v = t.view_as(&[3, 2, 2, 2]).unwrap();
        assert_eq!(v.strides(), &[4, 12, 2, 1]);
        assert!(t.view_as(&[6, 4]).is_none());
        let tt = Layout::contiguous(&[2, 3]).transpose(0, 1);
        assert!(tt.view_as(&[6]).is_none());
        assert_eq!(tt.view_as(&[3, 1, 2]).unwrap().shape(), &[3, 1, 2]);
        let u = Layout::contiguous(&[3]).unsqueeze(0);
        assert_eq!(u.shape(), &[1, 3]);
    }
}
