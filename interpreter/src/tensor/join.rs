//! Joining tensors: `cat` along an existing dim and `stack` along a new one.

use super::autograd::{self, functions};
use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::shape::{normalize_dim, normalize_dim_for};

impl Tensor {
    /// Concatenates along `dim`; all other dims must match (dtypes promote).
    pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("cat", "expects a non-empty list of tensors"))?;
        if first.ndim() == 0 {
            return Err(Error::shape(
                "cat",
                "zero-dimensional tensors cannot be concatenated; use stack",
            ));
        }
        let d = normalize_dim("cat", dim, first.shape())?;
        let mut dtype = first.dtype();
        let mut total = 0;
        for (i, t) in tensors.iter().enumerate() {
            first.same_device("cat", t)?;
            let ok =
                t.ndim() == first.ndim() && (0..t.ndim()).all(|j| j == d || t.shape()[j] == first.shape()[j]);
            if !ok {
                return Err(Error::shape(
                    "cat",
                    format!(
                        "tensor {i} has shape {:?}, which does not match {:?} outside dim {d}",
                        t.shape(),
                        first.shape()
                    ),
                ));
            }
            dtype = DType::promote(dtype, t.dtype());
            total += t.shape()[d];
        }
        let mut shape = first.shape().to_vec();
        shape[d] = total;
        let out = autograd::forward(|| -> Result<Tensor> {
            // every element is written below: no fill first
            let out = Tensor::empty(&shape, Some(dtype), first.device())?;
            let mut at = 0;
            for t in tensors {
                let len = t.shape()[d];
                out.narrow(d as i64, at as i64, len as i64)?.copy_(t)?;
                at += len;
            }
            Ok(out)
        })?;
        let inputs: Vec<&Tensor> = tensors.iter().collect();
        if !autograd::needs_grad(&inputs) {
            return Ok(out);
        }
        let sizes: Vec<usize> = tensors.iter().map(|t| t.shape()[d]).collect();
        Ok(autograd::record("cat", &inputs, out, move |g, needs| {
            functions::cat(&sizes, d as i64, g, needs)
        }))
    }

    /// Stacks equal-shaped tensors along a new dim `dim`.
    pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid("stack", "expects a non-empty list of tensors"))?;
        let d = normalize_dim_for("stack", dim, first.ndim() + 1, first.shape())?;
        let mut parts = Vec::with_capacity(tensors.len());
        for (i, t) in tensors.iter().enumerate() {
            if t.shape() != first.shape() {
                return Err(Error::shape(
                    "stack",
                    format!(
                        "expects tensors of one shape, but tensor 0 is {:?} and tensor {i} is {:?}",
                        first.shape(),
                        t.shape()
                    ),
                ));
            }
            parts.push(t.unsqueeze(d as i64)?);
        }
        Tensor::cat(&parts, d as i64)
    }
}
