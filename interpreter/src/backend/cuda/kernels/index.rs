//! Launches of the index kernels (`gpu-kernels/src/kernels/index.rs`): `gather`
//! (index_select, gather) and its atomic adjoint `scatter_add`.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{GatherArgs, ScatterAddArgs};
use kiln_kernels::params::{Geometry, IndexDim, Operand};

/// `y[i] = x[xo(i) + idx[io(i)] * h.stride]` over `g` into dense `y`; an index
/// outside `[0, h.size)` gives NaN (floats) or 0.
pub fn gather(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    x: (sys::CUdeviceptr, Operand),
    idx: (sys::CUdeviceptr, Operand),
    h: IndexDim,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Gather(dtype))?;
    let ((x, xo), (idx, io)) = (x, idx);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the kernel only reads `x` at indices inside `[0,
    // h.size)`.
    unsafe { launch(rt, f, g.n, [x, idx, y], GatherArgs { g, xo, io, h }) }
}

/// `dst[dso(i) + idx[io(i)] * h.stride] += src[so(i)]` over `g`, with atomic adds
/// into `dst` (the accumulator type of the source `dtype`); an index outside
/// `[0, h.size)` is skipped.
pub fn scatter_add(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    dst: (sys::CUdeviceptr, Operand),
    idx: (sys::CUdeviceptr, Operand),
    src: (sys::CUdeviceptr, Operand),
    h: IndexDim,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ScatterAdd(dtype))?;
    let ((dst, dso), (idx, io), (src, so)) = (dst, idx, src);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; the kernel only writes `dst` at indices inside `[0,
    // h.size)`.
    unsafe { launch(rt, f, g.n, [dst, idx, src], ScatterAddArgs { g, dso, io, so, h }) }
}
