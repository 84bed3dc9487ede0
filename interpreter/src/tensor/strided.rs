//! `as_strided`: a view of a tensor's storage with sizes, strides and an
//! offset given outright (`torch.as_strided`). The layout is checked to
//! stay inside the storage like every view's, so a script cannot reach
//! memory outside its tensors. Its gradient goes through the storage: the
//! output's gradient is summed at the storage positions the view reaches
//! (overlapping views add up), then read at the input's own positions.

use super::autograd;
use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::layout::Layout;
use crate::core::Scalar;

impl Tensor {
    /// The view of this tensor's storage of shape `size` with `stride`
    /// (elements) from `offset` (elements from the storage's start; the
    /// tensor's own offset by default).
    pub fn as_strided(&self, size: &[i64], stride: &[i64], offset: Option<i64>) -> Result<Tensor> {
        let op = "as_strided";
        if size.len() != stride.len() {
            return Err(Error::shape(
                op,
                format!("size {size:?} and stride {stride:?} have different lengths"),
            ));
        }
        if let Some(bad) = size.iter().find(|&&s| s < 0) {
            return Err(Error::shape(op, format!("negative size {bad} in {size:?}")));
        }
        if let Some(bad) = stride.iter().find(|&&s| s < 0) {
            return Err(Error::shape(
                op,
                format!("negative strides are not supported, got {bad} in {stride:?}"),
            ));
        }
        let offset = offset.unwrap_or(self.layout().offset() as i64);
        if offset < 0 {
            return Err(Error::invalid(op, format!("negative storage offset {offset}")));
        }
        let layout = Layout::from_parts(
            size.iter().map(|&s| s as usize).collect(),
            stride.iter().map(|&s| s as usize).collect(),
            offset as usize,
        );
        let out = self.view_with(op, layout.clone())?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (input, storage) = (self.clone(), self.storage_len());
        Ok(autograd::record(op, &[self], out, move |g, _| {
            let positions = Tensor::arange(
                Scalar::Int(0),
                Scalar::Int(storage as i64),
                Scalar::Int(1),
                Some(DType::I64),
                g.device(),
            )?;
            // the storage position of each output element, then of each input element
            let reached = positions.view_with(op, layout)?.reshape(&[-1])?;
            let own = positions.view_with(op, input.layout().clone())?.reshape(&[-1])?;
            let summed = Tensor::zeros(&[storage], Some(g.dtype()), g.device())?.index_add(
                0,
                &reached,
                &g.reshape(&[-1])?,
            )?;
            let shape: Vec<i64> = input.shape().iter().map(|&d| d as i64).collect();
            Ok(vec![Some(summed.index_select(0, &own)?.reshape(&shape)?)])
        }))
    }
}
