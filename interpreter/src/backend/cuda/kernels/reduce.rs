//! Launches of the reduction kernels (`gpu-kernels/src/kernels/reduce.rs`): the generic two-pass reduction over any layout and the dense float reductions over lanes and columns.

use super::launch::*;
use super::table::{DenseReduce, Kernel};
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::params::{Geometry, Operand};

/// Pass 1 of a reduction: one warp per (output, chunk) writes a partial state.
#[allow(clippy::too_many_arguments)]
pub fn reduce_partial(
    rt: &CudaRuntime,
    dtype: DType,
    outer: (Geometry, Operand),
    inner: (Geometry, Operand),
    x: sys::CUdeviceptr,
    chunks: u32,
    chunk_len: u32,
    op: u32,
    partial: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReducePartial(dtype))?;
    let ((mut og, mut oo), (mut ig, mut io)) = (outer, inner);
    let (mut x, mut chunks, mut chunk_len, mut op, mut partial) = (x, chunks, chunk_len, op, partial);
    let warps = og.n * chunks;
    // SAFETY: matches `reduce_partial_*(outer, xo, inner, io, x, chunks, chunk_len, op, partial: *mut RState)`.
    unsafe {
        launch_warps(
            rt,
            f,
            warps,
            &mut [
                arg(&mut og),
                arg(&mut oo),
                arg(&mut ig),
                arg(&mut io),
                arg(&mut x),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut op),
                arg(&mut partial),
            ],
        )
    }
}

/// Pass 2 of a reduction: one warp per output merges its chunks and stores the result.
#[allow(clippy::too_many_arguments)]
pub fn reduce_finish(
    rt: &CudaRuntime,
    out_dtype: DType,
    outputs: u32,
    chunks: u32,
    op: u32,
    float: bool,
    correction: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceFinish(out_dtype))?;
    let (mut n, mut chunks, mut op, mut float, mut corr, mut partial, mut y) =
        (outputs, chunks, op, float as u32, correction, partial, y);
    // SAFETY: matches `reduce_finish_*(outputs, chunks, op, float, correction, partial, y)`.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            &mut [
                arg(&mut n),
                arg(&mut chunks),
                arg(&mut op),
                arg(&mut float),
                arg(&mut corr),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Dense reduction of `rows` rows of `len` adjacent elements, each split into
/// `chunks` chunks of `chunk_len` (one block per chunk): with one chunk the
/// results go to `y`, else the partials (accumulator type) to `partial`.
#[allow(clippy::too_many_arguments)]
pub fn reduce_lanes(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (rows, len): (u32, u32),
    (chunks, chunk_len): (u32, u32),
    packed: bool,
    x: sys::CUdeviceptr,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceLanes(op, dtype))?;
    let items = rows * chunks;
    let grid = items.min(rt.sm_count.max(1) * 64);
    let (mut rows, mut len, mut chunks, mut chunk_len, mut packed) =
        (rows, len, chunks, chunk_len, packed as u32);
    let (mut x, mut partial, mut y) = (x, partial, y);
    // SAFETY: matches `reduce_lanes_*(rows, len, chunks, chunk_len, packed, x, partial, y)`;
    // 256 threads a block and the scratch of one block all-reduce.
    unsafe {
        launch_with(
            rt,
            f,
            (grid, 1, 1),
            (256, 1, 1),
            REDUCE_SCRATCH,
            &mut [
                arg(&mut rows),
                arg(&mut len),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut packed),
                arg(&mut x),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Merges the chunk partials of [`reduce_lanes`] (one warp per output).
#[allow(clippy::too_many_arguments)]
pub fn reduce_lanes_finish(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    outputs: u32,
    chunks: u32,
    count: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceLanesFinish(op, dtype))?;
    let (mut n, mut chunks, mut count, mut partial, mut y) = (outputs, chunks, count, partial, y);
    // SAFETY: matches `reduce_lanes_finish_*(outputs, chunks, count, partial, y)`.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            &mut [
                arg(&mut n),
                arg(&mut chunks),
                arg(&mut count),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Dense `[outer, r, inner]` reduced over `r` in `chunks` chunks of `chunk_len`
/// (one thread per output column and chunk).
#[allow(clippy::too_many_arguments)]
pub fn reduce_cols(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (outer, r, inner): (u32, u32, u32),
    (chunks, chunk_len): (u32, u32),
    x: sys::CUdeviceptr,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceCols(op, dtype))?;
    let n = outer * chunks * inner;
    let (mut outer, mut r, mut inner, mut chunks, mut chunk_len) = (outer, r, inner, chunks, chunk_len);
    let (mut x, mut partial, mut y) = (x, partial, y);
    // SAFETY: matches `reduce_cols_*(outer, r, inner, chunks, chunk_len, x, partial, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut outer),
                arg(&mut r),
                arg(&mut inner),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut x),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Merges the chunk partials of [`reduce_cols`] (one thread per output).
#[allow(clippy::too_many_arguments)]
pub fn reduce_cols_finish(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (outer, inner): (u32, u32),
    chunks: u32,
    count: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceColsFinish(op, dtype))?;
    let n = outer * inner;
    let (mut outer, mut inner, mut chunks, mut count, mut partial, mut y) =
        (outer, inner, chunks, count, partial, y);
    // SAFETY: matches `reduce_cols_finish_*(outer, inner, chunks, count, partial, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut outer),
                arg(&mut inner),
                arg(&mut chunks),
                arg(&mut count),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}
