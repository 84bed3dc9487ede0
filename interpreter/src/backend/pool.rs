//! Pooling as library calls: cuDNN on CUDA (`cuda/cudnn/pool.rs`). The
//! front-end (`tensor/cnn/pool.rs`) builds every pooling from windows and
//! reductions, which serves every backend; for CUDA tensors whose geometry
//! cuDNN expresses (no dilation, floor-mode sizes, no indices) it calls
//! these instead. Tensors arrive packed in NCHW or NHWC order (3-D to 5-D).

use super::{gate, mixed, Storage};
use crate::core::error::{Error, Result};
use crate::core::Layout;

/// What a pooling window computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolMode {
    /// The maximum (NaN propagates).
    Max,
    /// The mean, padding counted in the divisor.
    AvgIncludePad,
    /// The mean over the window's elements inside the input.
    AvgExcludePad,
}

/// The geometry of a pooling over `n` spatial dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    /// What each window computes.
    pub mode: PoolMode,
    /// Window size per spatial dim.
    pub window: Vec<usize>,
    /// Padding on both sides.
    pub padding: Vec<usize>,
    /// Step between windows.
    pub stride: Vec<usize>,
}

fn cuda_only(op: &'static str) -> Error {
    Error::invalid(op, "internal: library pooling runs on CUDA only")
}

impl Storage {
    /// `y = pool(x)`: `y` of `ly` (dense, in `x`'s memory order).
    pub fn pool_forward(&self, lx: &Layout, ly: &Layout, spec: &PoolSpec) -> Result<Storage> {
        gate(self, "pool", self.dtype(), ly.numel())?;
        match self {
            Storage::Cuda(x) => Ok(Storage::Cuda(x.pool_forward(lx, ly, spec)?)),
            Storage::Cpu(_) => Err(cuda_only("pool")),
        }
    }

    /// The input gradient (of `lx`) from `dy` (`self`, of `ly`), the
    /// forward's output `y` (same layout) and input `x`.
    pub fn pool_backward(
        &self,
        ly: &Layout,
        y: &Storage,
        x: &Storage,
        lx: &Layout,
        spec: &PoolSpec,
    ) -> Result<Storage> {
        gate(self, "pool backward", self.dtype(), lx.numel())?;
        match (self, y, x) {
            (Storage::Cuda(dy), Storage::Cuda(y), Storage::Cuda(x)) => {
                Ok(Storage::Cuda(dy.pool_backward(ly, y, x, lx, spec)?))
            }
            (Storage::Cpu(_), Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only("pool backward")),
            _ => Err(mixed("pool backward")),
        }
    }
}
