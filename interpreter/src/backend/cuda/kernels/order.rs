//! Launches of the scan and sort kernels (`gpu-kernels/src/kernels/order.rs`)
//! over dense rows.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::op::ScanOp;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{
    ScanApplyArgs, ScanCarryArgs, ScanTotalsArgs, SortGatherArgs, SortGlobalArgs, SortKeysArgs,
    SortLocalArgs, SortSearchArgs,
};

/// Threads of a scan block and elements of one chunk (the kernels' constants).
const SCAN_THREADS: u32 = 256;
const CHUNK: u32 = 2048;
/// Shared memory of a scan block: one cell (at most 16 bytes) per thread.
const SCAN_SHARED: u32 = SCAN_THREADS * 16;
/// Bytes of one chunk-total cell in the scratch buffer.
pub const SCAN_CELL: usize = 16;
/// Keys a `sort_local` block sorts in shared memory (12 bytes each).
pub const SORT_CHUNK: u32 = 2048;

/// Chunks per row of `len` elements.
pub fn scan_chunks(len: u32) -> u32 {
    len.div_ceil(CHUNK).max(1)
}

/// The inclusive scan `op` of `rows` dense rows of `len` from `x` into `y`
/// (and the positions into `yi` for cummax/cummin, else 0); `totals` holds
/// `rows * scan_chunks(len)` cells when a row has more than one chunk.
#[allow(clippy::too_many_arguments)]
pub fn scan(
    rt: &CudaRuntime,
    op: ScanOp,
    dtype: DType,
    (rows, len): (u32, u32),
    x: sys::CUdeviceptr,
    totals: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
    yi: sys::CUdeviceptr,
) -> Result<()> {
    let chunks = scan_chunks(len);
    let grid = (rows * chunks, 1, 1);
    let block = (SCAN_THREADS, 1, 1);
    let carry = (chunks > 1) as u32;
    // SAFETY: each kernel takes its family's argument block; `x`, `y` (and `yi`) hold
    // `rows * len` elements, `totals` `rows * chunks` cells when `carry` is 1; the blocks
    // index only inside their own row and chunk.
    unsafe {
        if carry == 1 {
            let f = rt.kernels.get(Kernel::ScanTotals(op, dtype))?;
            let a = ScanTotalsArgs {
                rows,
                len,
                chunk: CHUNK,
                chunks,
            };
            launch_with(rt, f, grid, block, SCAN_SHARED, [x, totals], a)?;
            let f = rt.kernels.get(Kernel::ScanCarry(op, dtype))?;
            let a = ScanCarryArgs { rows, chunks };
            launch_with(rt, f, (rows, 1, 1), block, SCAN_SHARED, [totals], a)?;
        }
        let f = rt.kernels.get(Kernel::ScanApply(op, dtype))?;
        let a = ScanApplyArgs {
            rows,
            len,
            chunk: CHUNK,
            chunks,
            carry,
        };
        launch_with(rt, f, grid, block, SCAN_SHARED, [x, totals, y, yi], a)
    }
}

/// Sorts `rows` dense rows of `len` from `x` into values `y` and i64
/// positions `yi` (stable; `descending` puts NaN first, as PyTorch), through
/// `keys` (u64) and `idx` (u32) scratch of `rows * padded` entries,
/// `padded = sort_padded(len)`.
#[allow(clippy::too_many_arguments)]
pub fn sort(
    rt: &CudaRuntime,
    dtype: DType,
    (rows, len): (u32, u32),
    descending: bool,
    x: sys::CUdeviceptr,
    (keys, idx): (sys::CUdeviceptr, sys::CUdeviceptr),
    y: sys::CUdeviceptr,
    yi: sys::CUdeviceptr,
) -> Result<()> {
    let padded = sort_padded(len);
    let chunk = padded.min(SORT_CHUNK);
    let local_blocks = rows * (padded / chunk);
    let local_threads = (chunk / 2).clamp(32, 1024);
    let shared = chunk * 12;
    // SAFETY: each kernel takes its family's argument block; `x`, `y`, `yi` hold
    // `rows * len` elements and `keys`, `idx` `rows * padded`; every index the kernels
    // form stays below those counts.
    unsafe {
        let f = rt.kernels.get(Kernel::SortKeys(dtype))?;
        let a = SortKeysArgs {
            rows,
            len,
            padded,
            descending: descending as u32,
        };
        launch(rt, f, rows * padded, [x, keys, idx], a)?;
        let local = rt.kernels.get(Kernel::SortLocal)?;
        // the bitonic stages k_lo..=k_hi within each chunk, in shared memory
        let stages = |k_lo: u32, k_hi: u32| {
            let a = SortLocalArgs {
                rows,
                padded,
                chunk,
                k_lo,
                k_hi,
            };
            launch_with(
                rt,
                local,
                (local_blocks, 1, 1),
                (local_threads, 1, 1),
                shared,
                [keys, idx],
                a,
            )
        };
        stages(2, chunk)?;
        let global = rt.kernels.get(Kernel::SortGlobal)?;
        let mut k = chunk * 2;
        while k <= padded {
            let mut j = k / 2;
            while j >= chunk {
                let a = SortGlobalArgs { rows, padded, k, j };
                launch(rt, global, rows * (padded / 2), [keys, idx], a)?;
                j /= 2;
            }
            stages(k, k)?;
            k *= 2;
        }
        let f = rt.kernels.get(Kernel::SortGather(dtype))?;
        let a = SortGatherArgs { rows, len, padded };
        launch(rt, f, rows * len, [x, idx, y, yi], a)
    }
}

/// The padded row length of a sort: the next power of two (at least 2).
pub fn sort_padded(len: u32) -> u32 {
    len.max(2).next_power_of_two()
}

/// For each of `rows × m` values in `v`, its insertion point in its row of
/// `n` sorted elements of `seq` (one row for all when `shared`), after equal
/// ones when `right`, into the i64 `out`.
#[allow(clippy::too_many_arguments)]
pub fn search(
    rt: &CudaRuntime,
    dtype: DType,
    (rows, m, n): (u32, u32, u32),
    shared: bool,
    right: bool,
    seq: sys::CUdeviceptr,
    v: sys::CUdeviceptr,
    out: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::SortSearch(dtype))?;
    let a = SortSearchArgs {
        rows,
        m,
        n,
        shared: shared as u32,
        right: right as u32,
    };
    // SAFETY: `seq` holds `n` (shared) or `rows * n` elements and `v`, `out`
    // `rows * m`, all dense and of `dtype` (i64 for `out`), as the caller's
    // storages were allocated.
    unsafe { launch(rt, f, rows * m, [seq, v, out], a) }
}
