//! Launches of the reduction kernels (`gpu-kernels/src/kernels/reduce.rs`): the
//! generic two-pass reduction over any layout and the dense float reductions
//! over lanes and columns.

use super::launch::*;
use super::table::{DenseReduce, Kernel};
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{
    ColsArgs, ColsFinishArgs, LanesArgs, LanesFinishArgs, ReduceFinishArgs, ReducePartialArgs,
    ReduceShortArgs, COLS_FINISH_ROWS,
};
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
    let ((og, oo), (ig, io)) = (outer, inner);
    let warps = og.n * chunks;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch_warps(
            rt,
            f,
            warps,
            [x, partial],
            ReducePartialArgs {
                outer: og,
                xo: oo,
                inner: ig,
                io,
                chunks,
                chunk_len,
                op,
            },
        )
    }
}

/// A reduction of short lanes: one thread per output walks its few elements
/// and stores the result, `y` of the input's dtype or (`index_out`) i64.
#[allow(clippy::too_many_arguments)]
pub fn reduce_short(
    rt: &CudaRuntime,
    dtype: DType,
    outer: (Geometry, Operand),
    inner: (Geometry, Operand),
    x: sys::CUdeviceptr,
    op: u32,
    correction: u32,
    index_out: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceShort(dtype))?;
    let ((og, oo), (ig, io)) = (outer, inner);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside (`y` holds `og.n` outputs of its dtype).
    unsafe {
        launch(
            rt,
            f,
            og.n,
            [x, y],
            ReduceShortArgs {
                outer: og,
                xo: oo,
                inner: ig,
                io,
                op,
                correction,
                index_out: index_out as u32,
            },
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
    let (n, chunks, op, float, corr, partial, y) =
        (outputs, chunks, op, float as u32, correction, partial, y);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            [partial, y],
            ReduceFinishArgs {
                outputs: n,
                chunks,
                op,
                float,
                correction: corr,
            },
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
    let (rows, len, chunks, chunk_len, packed) = (rows, len, chunks, chunk_len, packed as u32);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; 256 threads a block and the scratch of one block
    // all-reduce.
    unsafe {
        launch_with(
            rt,
            f,
            (grid, 1, 1),
            (256, 1, 1),
            REDUCE_SCRATCH,
            [x, partial, y],
            LanesArgs {
                rows,
                len,
                chunks,
                chunk_len,
                packed,
            },
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
    let n = outputs;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            [partial, y],
            LanesFinishArgs {
                outputs: n,
                chunks,
                count,
            },
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
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            n,
            [x, partial, y],
            ColsArgs {
                outer,
                r,
                inner,
                chunks,
                chunk_len,
            },
        )
    }
}

/// Merges the chunk partials of [`reduce_cols`] (blocks of 32 outputs, the
/// chunks split over [`COLS_FINISH_ROWS`] rows of threads).
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
    let groups = (outer * inner).div_ceil(32).min(65_535);
    let scratch = 32 * COLS_FINISH_ROWS * 8;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the block is 32 × COLS_FINISH_ROWS threads with
    // shared memory for one accumulator (at most 8 bytes) each, as the kernel expects.
    unsafe {
        launch_with(
            rt,
            f,
            (groups, 1, 1),
            (32, COLS_FINISH_ROWS, 1),
            scratch,
            [partial, y],
            ColsFinishArgs {
                outer,
                inner,
                chunks,
                count,
            },
        )
    }
}
