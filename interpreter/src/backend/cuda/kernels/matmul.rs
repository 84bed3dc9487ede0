//! Launches of the integer matmul kernel (`gpu-kernels/src/kernels/matmul.rs`; cuBLAS has none).

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::MatmulIntArgs;
use kiln_kernels::params::{Geometry, MatmulShape, Operand};

/// Integer batched matmul over the batch geometry.
#[allow(clippy::too_many_arguments)]
pub fn matmul_int(
    rt: &CudaRuntime,
    dtype: DType,
    batch: (Geometry, Operand, Operand),
    dims: MatmulShape,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::MatmulInt(dtype))?;
    let (g, ao, bo) = batch;
    let n = g.n * dims.m * dims.n;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, n, [a, b, y], MatmulIntArgs { g, ao, bo, dims }) }
}
