//! Launches of the row kernels (`gpu-kernels/src/kernels/rows.rs`): softmax /
//! log-softmax and layer norm over rows.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{
    AttentionRowsArgs, AttentionRowsBackwardArgs, LayerNormArgs, LayerNormBackwardArgs, SoftmaxArgs,
    SoftmaxRowsArgs,
};
use kiln_kernels::params::AttentionRows;
use kiln_kernels::params::{Geometry, Operand};

/// How row kernel `k` covers rows of `len`: a warp per row for short rows,
/// else a block whose threads each keep up to 16 elements in registers.
pub(super) fn row_config(
    rt: &CudaRuntime,
    k: Kernel,
    rows: u32,
    len: u32,
) -> (bool, (u32, u32, u32), (u32, u32, u32)) {
    const CACHE: u32 = 16;
    let cap = rt.sm_count.max(1) * 32;
    if len <= 32 * CACHE {
        let grid = (rows.div_ceil(8)).min(cap);
        (true, (grid, 1, 1), (256, 1, 1))
    } else {
        // at most 512 threads, and fewer when the kernel's registers do not
        // allow that many; rows longer than the block caches are re-read
        let limit = rt.kernels.max_threads(k).min(512);
        let limit = 1 << (31 - limit.leading_zeros());
        let threads = len.div_ceil(CACHE).next_power_of_two().clamp(32, limit);
        (false, (rows.min(cap), 1, 1), (threads, 1, 1))
    }
}

/// Softmax (or log-softmax) of `len` elements `step` apart in each row; y dense.
#[allow(clippy::too_many_arguments)]
pub fn softmax(
    rt: &CudaRuntime,
    dtype: DType,
    rows: (Geometry, Operand),
    x: sys::CUdeviceptr,
    len: u32,
    step: u32,
    log: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Softmax(dtype))?;
    let (g, ro) = rows;
    let log = log as u32;
    let n = g.n;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch_warps(
            rt,
            f,
            n,
            [x, y],
            SoftmaxArgs {
                rows: g,
                ro,
                len,
                step,
                log,
            },
        )
    }
}

/// Softmax (or log-softmax) of `rows` dense rows of `len` elements into dense `y`.
pub fn softmax_rows(
    rt: &CudaRuntime,
    dtype: DType,
    (rows, len): (u32, u32),
    log: bool,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::SoftmaxRows(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, len);
    let (rows, len, per_warp, log, x, y) = (rows, len, per_warp as u32, log as u32, x, y);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the block shape follows `per_warp` and carries the
    // all-reduce scratch.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            [x, y],
            SoftmaxRowsArgs {
                rows,
                len,
                per_warp,
                log,
            },
        )
    }
}

/// Layer norm of dense rows of `norm` elements (weight/bias optional: null pointers).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm(
    rt: &CudaRuntime,
    dtype: DType,
    rows: u32,
    norm: u32,
    x: sys::CUdeviceptr,
    w: Option<sys::CUdeviceptr>,
    b: Option<sys::CUdeviceptr>,
    eps: f64,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::LayerNorm(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, norm);
    let flags = w.is_some() as u32 | (b.is_some() as u32) << 1;
    let (per_warp, w, b) = (per_warp as u32, w.unwrap_or(0), b.unwrap_or(0));
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; w/b are only read when flagged; the block shape follows
    // `per_warp`.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            [x, w, b, y],
            LayerNormArgs {
                rows,
                norm,
                per_warp,
                flags,
                eps,
            },
        )
    }
}

/// The input's gradient of layer norm over dense rows of `norm` elements
/// (`layer_norm_backward_<dtype>`): `gx` from `x`, the output's gradient `g`
/// and the optional weight `w`; with `gxh`, also `g · x̂` (the terms the
/// weight's gradient sums).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward(
    rt: &CudaRuntime,
    dtype: DType,
    rows: u32,
    norm: u32,
    (x, g, w): (sys::CUdeviceptr, sys::CUdeviceptr, Option<sys::CUdeviceptr>),
    eps: f64,
    gx: sys::CUdeviceptr,
    gxh: Option<sys::CUdeviceptr>,
) -> Result<()> {
    let k = Kernel::LayerNormBackward(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, norm);
    let flags = w.is_some() as u32 | (gxh.is_some() as u32) << 1;
    let (per_warp, w, gxh) = (per_warp as u32, w.unwrap_or(0), gxh.unwrap_or(0));
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; w/gxh are only touched when flagged; the block shape
    // follows `per_warp`.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            [x, g, w, gx, gxh],
            LayerNormBackwardArgs {
                rows,
                norm,
                per_warp,
                flags,
                eps,
            },
        )
    }
}

/// The blocked attention's weights and log-sum-exps of `rows` dense score
/// rows (`attention_rows_<dtype>`, see [`AttentionRows`]).
pub fn attention_rows(
    rt: &CudaRuntime,
    dtype: DType,
    rows: u32,
    h: AttentionRows,
    [s, w, lse]: [sys::CUdeviceptr; 3],
) -> Result<()> {
    let k = Kernel::AttentionRows(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, h.keys);
    let per_warp = per_warp as u32;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations of `rows` rows of `h.keys` elements (`lse`: `rows`) the launch stays inside;
    // the block shape follows `per_warp`.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            [s, w, lse],
            AttentionRowsArgs { rows, per_warp, h },
        )
    }
}

/// The blocked attention's weights with dropout and the scores' gradient,
/// elementwise over `rows` dense rows (`attention_rows_backward_<dtype>`).
pub fn attention_rows_backward(
    rt: &CudaRuntime,
    dtype: DType,
    rows: u32,
    h: AttentionRows,
    ptrs: [sys::CUdeviceptr; 6],
) -> Result<()> {
    let f = rt.kernels.get(Kernel::AttentionRowsBackward(dtype))?;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations of `rows` rows of `h.keys` elements (`lse`, `delta`: `rows`) the launch stays
    // inside.
    unsafe { launch(rt, f, rows * h.keys, ptrs, AttentionRowsBackwardArgs { rows, h }) }
}
