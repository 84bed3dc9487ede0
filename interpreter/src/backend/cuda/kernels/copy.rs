//! Launches of the copy kernels (`gpu-kernels/src/kernels/copy.rs`): tiled transposes.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use cudarc::driver::sys;
use kiln_kernels::args::TransposeArgs;

/// A tiled transposing copy of `bytes`-sized elements: dense `y[b][i][j] =
/// x[b * sb + i + j * sj]` over `[batch, rows, cols]`; `None` when the grid
/// would be too large (the caller then uses the strided copy).
#[allow(clippy::too_many_arguments)]
pub fn transpose(
    rt: &CudaRuntime,
    bytes: usize,
    (batch, rows, cols): (u32, u32, u32),
    sb: u32,
    sj: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<Option<()>> {
    let Some(f) = rt.kernels.find(Kernel::Transpose(bytes)) else {
        return Ok(None);
    };
    let grid = (cols.div_ceil(32), rows.div_ceil(32), batch.min(65535));
    if grid.1 > 65535 {
        return Ok(None);
    }
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; with 32 x 8 threads a block and a 32 x 33 tile of shared
    // memory.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            (32, 8, 1),
            (33 * 32 * bytes) as u32,
            [x, y],
            TransposeArgs {
                batch,
                rows,
                cols,
                sb,
                sj,
            },
        )
    }
    .map(Some)
}
