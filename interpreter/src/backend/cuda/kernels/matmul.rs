//! Launches of the integer matmul kernel (`gpu-kernels/src/kernels/matmul.rs`; cuBLAS has none).

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
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
    let (mut g, mut ao, mut bo) = batch;
    let (mut dims, mut a, mut b, mut y) = (dims, a, b, y);
    let n = g.n * dims.m * dims.n;
    // SAFETY: matches `matmul_int_*(g, ao, bo, dims: MatmulShape, a, b, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut g),
                arg(&mut ao),
                arg(&mut bo),
                arg(&mut dims),
                arg(&mut a),
                arg(&mut b),
                arg(&mut y),
            ],
        )
    }
}
