//! The out-of-place writes into views, as PyTorch defines them:
//! `select_scatter`, `slice_scatter` and `diagonal_scatter` (a copy of the
//! input with `src` where that view of it would be), and `index_reduce`
//! (`scatter_reduce` with one index per slice along a dim).
//!
//! One composition serves every view: the view is taken of the element
//! positions (an i64 `arange` in the input's shape) and `src` is scattered
//! to the positions it picks. So any view the tensor layer has works, on
//! every backend, and gradients reach both the input (zero where replaced)
//! and `src` (the gradient read at the positions).

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

impl Tensor {
    /// This tensor with `src` written where `view` of it would be.
    fn view_scatter(
        &self,
        op: &'static str,
        src: &Tensor,
        view: impl Fn(&Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        let positions = Tensor::arange(
            Scalar::Int(0),
            Scalar::Int(self.numel() as i64),
            Scalar::Int(1),
            Some(DType::I64),
            self.device(),
        )?
        .reshape(&shape)?;
        let at = view(&positions)?;
        if at.shape() != src.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "src of shape {:?} does not match the shape {:?} of the view of the input (shape {:?})",
                    src.shape(),
                    at.shape(),
                    self.shape()
                ),
            ));
        }
        if src.device() != self.device() {
            return Err(Error::invalid(
                op,
                format!("src is on {} and the input on {}", src.device(), self.device()),
            ));
        }
        self.reshape(&[-1])?
            .scatter(
                0,
                &at.reshape(&[-1])?,
                &src.to_dtype(self.dtype())?.reshape(&[-1])?,
                None,
            )?
            .reshape(&shape)
    }

    /// This tensor with `src` in place of `select(dim, index)`.
    pub fn select_scatter(&self, src: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
        self.view_scatter("select_scatter", src, |p| p.select(dim, index))
    }

    /// This tensor with `src` in place of the slice `start..end` by `step`
    /// along `dim`.
    pub fn slice_scatter(
        &self,
        src: &Tensor,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        self.view_scatter("slice_scatter", src, |p| p.slice(dim, start, end, step))
    }

    /// This tensor with `src` in place of `diagonal(offset, dim1, dim2)`.
    pub fn diagonal_scatter(&self, src: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        self.view_scatter("diagonal_scatter", src, |p| p.diagonal(offset, dim1, dim2))
    }

    /// PyTorch's `index_reduce`: slice `i` of `source` along `dim` combined
    /// into slice `index[i]` of this tensor by `reduce` (`prod`, `mean`,
    /// `amax`, `amin`), counting this tensor's own values unless
    /// `include_self` is false.
    pub fn index_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        source: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        const OP: &str = "index_reduce";
        if !matches!(reduce, "prod" | "mean" | "amax" | "amin") {
            return Err(Error::invalid(
                OP,
                format!("unknown reduce '{reduce}' (expected prod, mean, amax, amin)"),
            ));
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        let source = if source.ndim() == 0 {
            source.reshape(&[1])?
        } else {
            source.clone()
        };
        if index.ndim() > 1 || !index.dtype().is_int() {
            return Err(Error::invalid(
                OP,
                format!(
                    "index must be a 1-D integer tensor, got {} of shape {:?}",
                    index.dtype(),
                    index.shape()
                ),
            ));
        }
        let fits = source.ndim() == self.ndim().max(1)
            && source.shape().get(d) == Some(&index.numel())
            && (0..self.ndim()).all(|i| i == d || source.shape()[i] == self.shape()[i]);
        if !fits {
            return Err(Error::shape(
                OP,
                format!(
                    "source of shape {:?} does not fit the input of shape {:?} with {} indices along dim {dim}",
                    source.shape(),
                    self.shape(),
                    index.numel()
                ),
            ));
        }
        // the index repeated across the other dims
        let mut along = vec![1i64; source.ndim()];
        along[d] = -1;
        let full: Vec<i64> = source.shape().iter().map(|&s| s as i64).collect();
        let index = index.reshape(&along)?.expand(&full)?;
        self.scatter_reduce(dim, &index, &source, reduce, include_self)
    }
}
