//! Launches of the index kernels (`gpu-kernels/src/kernels/index.rs`): `gather` (index_select, gather) and its atomic adjoint `scatter_add`.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
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
    let (mut g, mut h, mut y) = (g, h, y);
    let ((mut x, mut xo), (mut idx, mut io)) = (x, idx);
    // SAFETY: matches `gather_*(g, x: *const T, xo, idx: *const i64, io, h: IndexDim, y: *mut T)`;
    // the kernel only reads `x` at indices inside `[0, h.size)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut x),
                arg(&mut xo),
                arg(&mut idx),
                arg(&mut io),
                arg(&mut h),
                arg(&mut y),
            ],
        )
    }
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
    let (mut g, mut h) = (g, h);
    let ((mut dst, mut dso), (mut idx, mut io), (mut src, mut so)) = (dst, idx, src);
    // SAFETY: matches `scatter_add_*(g, dst: *mut A, dso, idx: *const i64, io, src: *const T, so,
    // h: IndexDim)`; the kernel only writes `dst` at indices inside `[0, h.size)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut dst),
                arg(&mut dso),
                arg(&mut idx),
                arg(&mut io),
                arg(&mut src),
                arg(&mut so),
                arg(&mut h),
            ],
        )
    }
}
