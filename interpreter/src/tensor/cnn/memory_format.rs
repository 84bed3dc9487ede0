//! Memory formats of image batches, as PyTorch names them: the default
//! row-major `contiguous_format`, and `channels_last` (NHWC order in memory
//! for a logical `[N, C, H, W]` tensor; `channels_last_3d` for
//! `[N, C, D, H, W]`). A channels-last tensor is a permuted view of dense
//! NHWC data, so every op reads it as it is; `contiguous(format)` makes one.

use crate::core::error::{Error, Result};
use crate::core::Layout;
use crate::tensor::Tensor;

/// A tensor's memory format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryFormat {
    /// Row-major over the logical shape.
    Contiguous,
    /// Channels innermost: `[N, C, H, W]` stored as NHWC (4-D only).
    ChannelsLast,
    /// Channels innermost for 5-D tensors (NDHWC).
    ChannelsLast3d,
}

impl MemoryFormat {
    /// Parses PyTorch's names ("contiguous_format", "channels_last",
    /// "channels_last_3d"; "contiguous" too).
    pub fn parse(op: &'static str, s: &str) -> Result<MemoryFormat> {
        match s {
            "contiguous_format" | "contiguous" => Ok(MemoryFormat::Contiguous),
            "channels_last" => Ok(MemoryFormat::ChannelsLast),
            "channels_last_3d" => Ok(MemoryFormat::ChannelsLast3d),
            other => Err(Error::invalid(
                op,
                format!("unknown memory format \"{other}\" (expected contiguous_format, channels_last or channels_last_3d)"),
            )),
        }
    }

    /// The rank the format needs, if any.
    fn rank(self) -> Option<usize> {
        match self {
            MemoryFormat::Contiguous => None,
            MemoryFormat::ChannelsLast => Some(4),
            MemoryFormat::ChannelsLast3d => Some(5),
        }
    }

    /// The dims in memory order (outermost first) for a tensor of rank `n`.
    fn memory_order(self, n: usize) -> Vec<usize> {
        match self {
            MemoryFormat::Contiguous => (0..n).collect(),
            _ => Layout::channels_last_order(n),
        }
    }

    fn check(self, op: &'static str, t: &Tensor) -> Result<()> {
        match self.rank() {
            Some(r) if t.ndim() != r => Err(Error::shape(
                op,
                format!(
                    "memory format {self:?} needs a {r}-D tensor, got shape {:?}",
                    t.shape()
                ),
            )),
            _ => Ok(()),
        }
    }
}

impl Tensor {
    /// This tensor in `format`: itself when already so, else a copy
    /// (`t.contiguous(memory_format=...)`).
    pub fn contiguous_format(&self, format: MemoryFormat) -> Result<Tensor> {
        const OP: &str = "contiguous";
        format.check(OP, self)?;
        if format == MemoryFormat::Contiguous {
            return self.contiguous();
        }
        if self.is_contiguous_format(format) {
            return Ok(self.clone());
        }
        self.dense_in_order(&format.memory_order(self.ndim()))
    }

    /// This tensor dense with its dims in memory in `order` (outermost
    /// first): itself when it already is and starts its storage, else a copy.
    pub(crate) fn dense_in_order(&self, order: &[usize]) -> Result<Tensor> {
        if self.layout().offset() == 0 && self.layout().is_dense_in_order(order) {
            return Ok(self.clone());
        }
        let perm: Vec<i64> = order.iter().map(|&d| d as i64).collect();
        let mut back = vec![0i64; order.len()];
        for (i, &d) in order.iter().enumerate() {
            back[d] = i as i64;
        }
        self.permute(&perm)?.contiguous()?.permute(&back)
    }

    /// True when the elements are dense in `format`'s order (size-1 dims
    /// are ignored, as in PyTorch).
    pub fn is_contiguous_format(&self, format: MemoryFormat) -> bool {
        if format.rank().is_some_and(|r| r != self.ndim()) {
            return false;
        }
        self.layout().is_dense_in_order(&format.memory_order(self.ndim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Device;

    #[test]
    fn channels_last_is_a_permuted_dense_copy() {
        let x = Tensor::arange(
            crate::Scalar::Int(0),
            crate::Scalar::Int(24),
            crate::Scalar::Int(1),
            Some(crate::DType::F32),
            Device::Cpu,
        )
        .unwrap()
        .reshape(&[1, 2, 3, 4])
        .unwrap();
        assert!(!x.is_contiguous_format(MemoryFormat::ChannelsLast));
        let y = x.contiguous_format(MemoryFormat::ChannelsLast).unwrap();
        assert_eq!(y.shape(), x.shape());
        assert_eq!(y.layout().strides(), &[24, 1, 8, 2]);
        assert!(y.is_contiguous_format(MemoryFormat::ChannelsLast));
        assert_eq!(y.to_vec::<f32>().unwrap(), x.to_vec::<f32>().unwrap());
        assert!(y
            .contiguous_format(MemoryFormat::ChannelsLast)
            .unwrap()
            .shares_storage(&y));
        assert!(x.contiguous_format(MemoryFormat::ChannelsLast3d).is_err());
    }
}
