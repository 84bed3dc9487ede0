//! The launch mechanics every family shares: the kernel geometry of strided
//! operands (merged dims, u32 indices), the dense-output operand, the
//! 16-byte packing test, and one generic launch of an argument block
//! ([`KernelArgs`]: the family's device pointers and its `#[repr(C)]` struct
//! from `kiln_kernels::args`) in three
//! shapes: grid-stride, an explicit grid, one warp per item.

use crate::backend::cuda::runtime::{cuda_error, CudaRuntime};
use crate::core::error::{Error, Result};
use crate::core::strided::Merged;
use crate::core::{DType, Layout};
use cudarc::driver::{result, CudaFunction};
use kiln_kernels::args::ArgBlock;
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

/// The argument block of a kernel family (`kiln_kernels::args`): a
/// `#[repr(C)]`, `Copy` struct the kernel takes as its last parameter, after
/// the family's device pointers.
///
/// # Safety
/// Implemented only for the structs of `kiln_kernels::args`, whose kernels
/// take exactly `A::POINTERS` pointers and then the struct by value (a test
/// checks every PTX entry's parameters against
/// [`Kernel::params`](super::Kernel::params)).
pub unsafe trait KernelArgs: ArgBlock {}

macro_rules! kernel_args {
    ($($t:ident),* $(,)?) => {
        $(
            // SAFETY: a struct of `kiln_kernels::args`, the kernels' own parameter type.
            unsafe impl KernelArgs for kiln_kernels::args::$t {}
        )*
    };
}

kernel_args!(
    UnaryArgs,
    BinaryArgs,
    ScalarArgs,
    WhereArgs,
    CastArgs,
    DenseArgs,
    DenseBinaryArgs,
    DenseScalarArgs,
    RowArgs,
    FillArgs,
    ArangeArgs,
    RandArgs,
    DropoutArgs,
    RandIntArgs,
    GatherArgs,
    ScatterAddArgs,
    MatmulIntArgs,
    ReducePartialArgs,
    ReduceShortArgs,
    ReduceFinishArgs,
    LanesArgs,
    LanesFinishArgs,
    ColsArgs,
    ColsFinishArgs,
    SoftmaxArgs,
    SoftmaxRowsArgs,
    LayerNormArgs,
    LayerNormBackwardArgs,
    AttentionRowsArgs,
    AttentionRowsBackwardArgs,
    TransposeArgs,
    CrossEntropyArgs,
    CrossEntropyBackwardArgs,
    SgdArgs,
    AdamArgs,
    AdamMultiArgs,
    NormMultiArgs,
    SgdMultiArgs,
    ScaleMultiArgs,
    ScanTotalsArgs,
    ScanCarryArgs,
    ScanApplyArgs,
    SortKeysArgs,
    SortLocalArgs,
    SortGlobalArgs,
    SortGatherArgs,
    SortSearchArgs,
    FlashForwardArgs,
    FlashBackwardKvArgs,
    FlashBackwardKvqArgs,
    FlashBackwardQArgs,
    FlashDeltaArgs,
);

/// The one call into the driver: `f` on `grid` × `block` with `shared`
/// bytes of dynamic shared memory, the device pointers `ptrs` and `args` as
/// its parameters.
///
/// # Safety
/// `f` must be a kernel of `A`'s family, and every pointer in `ptrs` must be
/// a live allocation large enough for the accesses the launch implies.
unsafe fn launch_raw<A: KernelArgs>(
    rt: &CudaRuntime,
    f: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    ptrs: A::Pointers,
    args: A,
) -> Result<()> {
    // a family with more pointers than the parameter array holds is a
    // build error, not a panic at its first launch
    const {
        assert!(
            A::POINTERS.len() <= MAX_POINTERS,
            "a kernel family takes more device pointers than launch_raw passes"
        )
    };
    let n = ptrs.as_ref().len();
    let mut values = [0u64; MAX_POINTERS];
    values[..n].copy_from_slice(ptrs.as_ref());
    let mut args = args;
    let mut params = [std::ptr::null_mut::<c_void>(); MAX_POINTERS + 1];
    for (slot, value) in params.iter_mut().zip(values.iter_mut()).take(n) {
        *slot = value as *mut u64 as *mut c_void;
    }
    params[n] = &mut args as *mut A as *mut c_void;
    result::launch_kernel(
        f.cu_function(),
        grid,
        block,
        shared,
        rt.cu_stream(),
        &mut params[..=n],
    )
    .map_err(|e| cuda_error("kernel launch", e))
}

/// The most device pointers a kernel family takes.
const MAX_POINTERS: usize = 9;

/// Launches `f` over `n` elements (grid-stride; 256 threads a block).
///
/// # Safety
/// `f` must be a kernel of `A`'s family (its pointers, then its block),
/// and every device pointer in `args` must be a live allocation large enough
/// for the accesses the geometry implies.
pub(super) unsafe fn launch<A: KernelArgs>(
    rt: &CudaRuntime,
    f: &CudaFunction,
    n: u32,
    ptrs: A::Pointers,
    args: A,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let block = 256u32;
    let grid = n.div_ceil(block).min(rt.sm_count.max(1) * 16);
    launch_raw(rt, f, (grid, 1, 1), (block, 1, 1), 0, ptrs, args)
}

/// Launches `f` on an explicit grid and block with `shared` bytes of dynamic shared memory.
///
/// # Safety
/// As for [`launch`]; the kernel must expect this block shape and shared size.
pub(super) unsafe fn launch_with<A: KernelArgs>(
    rt: &CudaRuntime,
    f: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    ptrs: A::Pointers,
    args: A,
) -> Result<()> {
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Ok(());
    }
    launch_raw(rt, f, grid, block, shared, ptrs, args)
}

/// Shared memory for one block-wide all-reduce: 32 accumulators of up to 8 bytes.
pub(super) const REDUCE_SCRATCH: u32 = 32 * 8;

/// Launches `f` with one warp (32 threads) per item.
///
/// # Safety
/// As for [`launch`].
pub(super) unsafe fn launch_warps<A: KernelArgs>(
    rt: &CudaRuntime,
    f: &CudaFunction,
    items: u32,
    ptrs: A::Pointers,
    args: A,
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
    launch_raw(rt, f, (grid as u32, 1, 1), (block as u32, 1, 1), 0, ptrs, args)
}
