//! Launches of the loss kernels (`gpu-kernels/src/kernels/loss.rs`):
//! cross-entropy from logits, forward and backward.

use super::launch::*;
use super::rows::row_config;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{CrossEntropyArgs, CrossEntropyBackwardArgs};
use kiln_kernels::params::CrossEntropyParams;

/// Per-row cross-entropy of dense logits `x` (`h.rows` rows of `h.classes`)
/// against i64 `labels`: losses and log-sum-exps (accumulator type) to `loss`, `lse`.
pub fn cross_entropy(
    rt: &CudaRuntime,
    dtype: DType,
    h: CrossEntropyParams,
    x: sys::CUdeviceptr,
    labels: sys::CUdeviceptr,
    loss: sys::CUdeviceptr,
    lse: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::CrossEntropy(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, h.rows, h.classes);
    let h = CrossEntropyParams {
        per_warp: per_warp as u32,
        ..h
    };
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the block shape follows `h.per_warp` and carries the
    // all-reduce scratch.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            [x, labels, loss, lse],
            CrossEntropyArgs { h },
        )
    }
}

/// The logits' gradient of [`cross_entropy`]: dense `gx` from `x`, the labels, the
/// saved log-sum-exps and the per-row output gradient (`h.grad_stride` apart).
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy_backward(
    rt: &CudaRuntime,
    dtype: DType,
    h: CrossEntropyParams,
    x: sys::CUdeviceptr,
    labels: sys::CUdeviceptr,
    lse: sys::CUdeviceptr,
    grad: sys::CUdeviceptr,
    gx: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::CrossEntropyBackward(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, h.rows, h.classes);
    let h = CrossEntropyParams {
        per_warp: per_warp as u32,
        ..h
    };
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the block shape follows `h.per_warp` (no shared memory
    // is used).
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            0,
            [x, labels, lse, grad, gx],
            CrossEntropyBackwardArgs { h },
        )
    }
}
