//! The launch mechanics every family shares: the kernel geometry of strided operands (merged dims, u32 indices), the dense-output operand, the 16-byte packing test, and the raw launches (grid-stride, explicit grid, one warp per item).

use crate::backend::cuda::runtime::{cuda_error, CudaRuntime};
use crate::core::error::{Error, Result};
use crate::core::strided::Merged;
use crate::core::{DType, Layout};
use cudarc::driver::{result, CudaFunction};
use kiln_kernels::params::{Geometry, Operand, MAX_DIMS};
use std::ffi::c_void;

/// The kernel geometry of `N` operands sharing `shape` (merged dims, u32 indices).
pub fn geometry<const N: usize>(
    op: &'static str,
    shape: &[usize],
    layouts: [&Layout; N],
) -> Result<(Geometry, [Operand; N])> {
    let n = crate::core::shape::numel(shape);
    let too_big = || {
        Error::invalid(
            op,
            format!("shape {shape:?} is too large for the CUDA kernels (32-bit indexing)"),
        )
    };
    // Every layout passed `Layout::check_fits` against its storage when its
    // tensor was made, so the extents below are exact and every offset the
    // kernels compute lies inside the buffers they are given.
    if n > u32::MAX as usize || layouts.iter().any(|l| l.storage_extent() > u32::MAX as usize) {
        return Err(too_big());
    }
    let m = Merged::<N>::new(shape, std::array::from_fn(|k| layouts[k].strides()));
    if m.shape.len() > MAX_DIMS {
        return Err(Error::invalid(
            op,
            format!("shape {shape:?} has too many non-mergeable dims for CUDA (max {MAX_DIMS})"),
        ));
    }
    let mut g = Geometry {
        n: n as u32,
        ndim: m.shape.len() as u32,
        ..Default::default()
    };
    for (d, &s) in m.shape.iter().enumerate() {
        g.sizes[d] = s as u32;
    }
    let dense = crate::core::shape::contiguous_strides(&m.shape);
    let ops = std::array::from_fn(|k| {
        let mut o = Operand {
            offset: layouts[k].offset() as u32,
            ..Default::default()
        };
        for (d, &s) in m.strides[k].iter().enumerate() {
            o.strides[d] = s as u32;
        }
        o.contiguous = (m.strides[k] == dense || n <= 1) as u32;
        o
    });
    Ok((g, ops))
}

/// The operand of a dense output.
pub fn dense(g: &Geometry) -> Operand {
    let mut o = Operand {
        contiguous: 1,
        ..Default::default()
    };
    let mut acc = 1u32;
    for d in (0..g.ndim as usize).rev() {
        o.strides[d] = acc;
        acc = acc.wrapping_mul(g.sizes[d].max(1));
    }
    o
}

/// Elements per 16-byte pack of `dtype`.
pub fn pack(dtype: DType) -> usize {
    16 / dtype.size_in_bytes()
}

/// True when every operand is dense and 16-byte aligned: the packed kernels apply.
pub fn packable(dtype: DType, ops: &[Operand]) -> bool {
    ops.iter()
        .all(|o| o.contiguous != 0 && o.offset as usize % pack(dtype) == 0)
}

pub(super) fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// Launches `f` over `n` elements (grid-stride; 256 threads a block).
///
/// # Safety
/// `params` must match the kernel's parameters in number, order and type, and
/// every pointer in them must be a live device allocation large enough for
/// the accesses the geometry implies.
pub(super) unsafe fn launch(
    rt: &CudaRuntime,
    f: &CudaFunction,
    n: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let block = 256u32;
    let grid = n.div_ceil(block).min(rt.sm_count.max(1) * 16);
    result::launch_kernel(
        f.cu_function(),
        (grid, 1, 1),
        (block, 1, 1),
        0,
        rt.cu_stream(),
        params,
    )
    .map_err(|e| cuda_error("kernel launch", e))
}

/// Launches `f` on an explicit grid and block with `shared` bytes of dynamic shared memory.
///
/// # Safety
/// As for [`launch`]; the kernel must expect this block shape and shared size.
pub(super) unsafe fn launch_with(
    rt: &CudaRuntime,
    f: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Ok(());
    }
    result::launch_kernel(f.cu_function(), grid, block, shared, rt.cu_stream(), params)
        .map_err(|e| cuda_error("kernel launch", e))
}

/// Shared memory for one block-wide all-reduce: 32 accumulators of up to 8 bytes.
pub(super) const REDUCE_SCRATCH: u32 = 32 * 8;

/// Launches `f` with one warp (32 threads) per item.
///
/// # Safety
/// As for [`launch`].
pub(super) unsafe fn launch_warps(
    rt: &CudaRuntime,
    f: &CudaFunction,
    items: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let threads = items as u64 * 32;
    let block = 256u64;
    let grid = threads.div_ceil(block);
    if grid > i32::MAX as u64 {
        return Err(Error::invalid(
            crate::core::memory::current_op(),
            format!("{items} rows are too many for one launch"),
        ));
    }
    result::launch_kernel(
        f.cu_function(),
        (grid as u32, 1, 1),
        (block as u32, 1, 1),
        0,
        rt.cu_stream(),
        params,
    )
    .map_err(|e| cuda_error("kernel launch", e))
}
