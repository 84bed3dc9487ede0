//! Convolutions as library calls: cuDNN on CUDA (`cuda/cudnn.rs`). The
//! front-end (`tensor/cnn/conv.rs`) builds every convolution from windows
//! and GEMMs, which serves every backend; where cuDNN is switched on it
//! calls these instead for CUDA tensors. Tensors arrive packed in NCHW or
//! NHWC order (any rank from 3 to 5; 1-D convolutions as 2-D ones of
//! height 1), described by their layouts.

use super::{gate, mixed, Storage};
use crate::core::error::{Error, Result};
use crate::core::Layout;

/// The geometry of a convolution over `n` spatial dims.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvSpec {
    /// Padding on both sides, per spatial dim.
    pub padding: Vec<usize>,
    /// Step between windows.
    pub stride: Vec<usize>,
    /// Spacing of the kernel's taps.
    pub dilation: Vec<usize>,
    /// Channel groups.
    pub groups: usize,
}

fn cuda_only(op: &'static str) -> Error {
    Error::invalid(op, "internal: library convolutions run on CUDA only")
}

impl Storage {
    /// `y = conv(x, w)`: `y` of `ly` (dense, in `x`'s memory order).
    pub fn conv_forward(
        &self,
        lx: &Layout,
        w: &Storage,
        lw: &Layout,
        ly: &Layout,
        spec: &ConvSpec,
    ) -> Result<Storage> {
        gate(self, "conv", self.dtype(), ly.numel())?;
        match (self, w) {
            (Storage::Cuda(x), Storage::Cuda(w)) => Ok(Storage::Cuda(x.conv_forward(lx, w, lw, ly, spec)?)),
            (Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only("conv")),
            _ => Err(mixed("conv")),
        }
    }

    /// The input gradient `dx` (of `lx`) from `dy` (`self`) and `w`.
    pub fn conv_backward_data(
        &self,
        ly: &Layout,
        w: &Storage,
        lw: &Layout,
        lx: &Layout,
        spec: &ConvSpec,
    ) -> Result<Storage> {
        gate(self, "conv backward", self.dtype(), lx.numel())?;
        match (self, w) {
            (Storage::Cuda(dy), Storage::Cuda(w)) => {
                Ok(Storage::Cuda(dy.conv_backward_data(ly, w, lw, lx, spec)?))
            }
            (Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only("conv backward")),
            _ => Err(mixed("conv backward")),
        }
    }

    /// The weight gradient `dw` (of `lw`, dense) from `x` (`self`) and `dy`.
    pub fn conv_backward_filter(
        &self,
        lx: &Layout,
        dy: &Storage,
        ly: &Layout,
        lw: &Layout,
        spec: &ConvSpec,
    ) -> Result<Storage> {
        gate(self, "conv backward", self.dtype(), lw.numel())?;
        match (self, dy) {
            (Storage::Cuda(x), Storage::Cuda(dy)) => {
                Ok(Storage::Cuda(x.conv_backward_filter(lx, dy, ly, lw, spec)?))
            }
            (Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only("conv backward")),
            _ => Err(mixed("conv backward")),
        }
    }
}
