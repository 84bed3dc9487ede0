//! Batch normalisation while training as library calls: cuDNN on CUDA
//! (`cuda/cudnn/norm.rs`). The front-end (`tensor/cnn/norm.rs`) composes
//! batch norm from reductions and elementwise ops, which serves every
//! backend; for CUDA tensors in training it calls these instead. The input
//! arrives packed in NCHW or NHWC order (2-D to 5-D); the per-channel
//! parameters and statistics are dense `[C]` in the parameter dtype (f32,
//! f64 for f64 inputs).

use super::{gate, mixed, Storage};
use crate::core::error::{Error, Result};
use crate::core::Layout;

/// Running statistics updated in place: `(mean, var)` storages and their
/// element offsets.
pub type Running<'a> = Option<[(&'a Storage, usize); 2]>;

fn cuda_only(op: &'static str) -> Error {
    Error::invalid(op, "internal: library batch norm runs on CUDA only")
}

impl Storage {
    /// `[y, saved mean, saved 1/std]` of batch norm over `x` (`self`, of
    /// `lx`) with batch statistics, `y` of `ly`; the running statistics,
    /// when given, move towards the batch's by `momentum` (the variance's
    /// unbiased estimate).
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_train(
        &self,
        lx: &Layout,
        ly: &Layout,
        weight: &Storage,
        bias: &Storage,
        running: Running<'_>,
        momentum: f64,
        eps: f64,
    ) -> Result<[Storage; 3]> {
        gate(self, "batch_norm", self.dtype(), ly.numel())?;
        match (self, weight, bias) {
            (Storage::Cuda(x), Storage::Cuda(w), Storage::Cuda(b)) => {
                let running = match running {
                    Some([(Storage::Cuda(m), mo), (Storage::Cuda(v), vo)]) => Some([(m, mo), (v, vo)]),
                    Some(_) => return Err(mixed("batch_norm")),
                    None => None,
                };
                let [y, m, s] = x.batch_norm_train(lx, ly, w, b, running, momentum, eps)?;
                Ok([Storage::Cuda(y), Storage::Cuda(m), Storage::Cuda(s)])
            }
            (Storage::Cpu(_), Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only("batch_norm")),
            _ => Err(mixed("batch_norm")),
        }
    }

    /// `[dx, dweight, dbias]` from `x` (`self`, of `lx`), `dy` (of `ly`,
    /// the same memory order), the weight and the forward's saved
    /// statistics.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm_backward(
        &self,
        lx: &Layout,
        dy: &Storage,
        ly: &Layout,
        weight: &Storage,
        saved: [&Storage; 2],
        eps: f64,
    ) -> Result<[Storage; 3]> {
        gate(self, "batch_norm backward", self.dtype(), lx.numel())?;
        match (self, dy, weight, saved) {
            (Storage::Cuda(x), Storage::Cuda(dy), Storage::Cuda(w), [Storage::Cuda(m), Storage::Cuda(s)]) => {
                let [dx, dw, db] = x.batch_norm_backward(lx, dy, ly, w, [m, s], eps)?;
                Ok([Storage::Cuda(dx), Storage::Cuda(dw), Storage::Cuda(db)])
            }
            (Storage::Cpu(_), ..) => Err(cuda_only("batch_norm backward")),
            _ => Err(mixed("batch_norm backward")),
        }
    }
}
