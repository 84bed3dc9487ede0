//! Launches of the elementwise kernels (`gpu-kernels/src/kernels/elementwise.rs`): unary, binary and comparison ops (strided, with a scalar, dense 16-byte and row-broadcast variants), `where`, casts, fills, ranges and random numbers.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::op::UnaryOp;
use crate::core::DType;
use cudarc::driver::{sys, CudaFunction};
use kiln_kernels::params::{Geometry, Operand};

/// `y = op(x)` (y dense).
pub fn unary(
    rt: &CudaRuntime,
    op: UnaryOp,
    dtype: DType,
    g: Geometry,
    x: sys::CUdeviceptr,
    xo: Operand,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Unary(op, dtype))?;
    let (mut g, mut x, mut xo, mut y) = (g, x, xo, y);
    // SAFETY: matches `unary_*(g: Geometry, x: *const T, xo: Operand, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [arg(&mut g), arg(&mut x), arg(&mut xo), arg(&mut y)],
        )
    }
}

/// Dense `y = op(x)` with 16-byte accesses.
pub fn unary_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut x, mut y) = (n, x, y);
    // SAFETY: matches `unary_v_*(n: u32, x: *const T, y: *mut T)`; both dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [arg(&mut n_), arg(&mut x), arg(&mut y)],
        )
    }
}

/// `y = a op b` (y dense); `kernel` is a `Binary` or `Cmp` kernel.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    rt: &CudaRuntime,
    kernel: Kernel,
    g: Geometry,
    a: sys::CUdeviceptr,
    ao: Operand,
    b: sys::CUdeviceptr,
    bo: Operand,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut g, mut a, mut ao, mut b, mut bo, mut y) = (g, a, ao, b, bo, y);
    // SAFETY: matches `binary_*`/`cmp_*(g, a: *const T, ao, b: *const T, bo, y: *mut _)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut b),
                arg(&mut bo),
                arg(&mut y),
            ],
        )
    }
}

/// Dense `y = a op b` with 16-byte accesses.
pub fn binary_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut a, mut b, mut y) = (n, a, b, y);
    // SAFETY: matches `binary_v_*(n: u32, a: *const T, b: *const T, y: *mut T)`; all dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [arg(&mut n_), arg(&mut a), arg(&mut b), arg(&mut y)],
        )
    }
}

/// `y = a op s` (or `s op a` when `rev`), the scalar's bytes in the low bytes of `bits`;
/// `kernel` is a `BinaryScalar` or `CmpScalar` kernel.
#[allow(clippy::too_many_arguments)]
pub fn binary_scalar(
    rt: &CudaRuntime,
    kernel: Kernel,
    g: Geometry,
    a: sys::CUdeviceptr,
    ao: Operand,
    bits: u64,
    rev: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut g, mut a, mut ao, mut bits, mut rev, mut y) = (g, a, ao, bits, rev as u32, y);
    // SAFETY: matches `*_scalar_*(g, a: *const T, ao, s: T, rev: u32, y: *mut _)`; T's bytes
    // are the low bytes of `bits`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut bits),
                arg(&mut rev),
                arg(&mut y),
            ],
        )
    }
}

/// Dense `y = a op s` (or `s op a`) with 16-byte accesses.
#[allow(clippy::too_many_arguments)]
pub fn binary_scalar_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    a: sys::CUdeviceptr,
    bits: u64,
    rev: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut a, mut bits, mut rev, mut y) = (n, a, bits, rev as u32, y);
    // SAFETY: matches `binary_scalar_v_*(n: u32, a: *const T, s: T, rev: u32, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [
                arg(&mut n_),
                arg(&mut a),
                arg(&mut bits),
                arg(&mut rev),
                arg(&mut y),
            ],
        )
    }
}

/// `y = a op b` over `packs` 16-byte packs where one operand is a dense row of
/// `row_packs` packs repeated (`row_is_b`: `b` is the row).
#[allow(clippy::too_many_arguments)]
pub fn binary_row(
    rt: &CudaRuntime,
    f: &CudaFunction,
    packs: u32,
    row_packs: u32,
    row_is_b: bool,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut packs_, mut row_packs, mut side, mut a, mut b, mut y) =
        (packs, row_packs, row_is_b as u32, a, b, y);
    // SAFETY: matches `binary_row_*(packs, row_packs, row_side, a, b, y)`; all aligned.
    unsafe {
        launch(
            rt,
            f,
            packs,
            &mut [
                arg(&mut packs_),
                arg(&mut row_packs),
                arg(&mut side),
                arg(&mut a),
                arg(&mut b),
                arg(&mut y),
            ],
        )
    }
}

/// `y = c ? a : b` (y dense).
#[allow(clippy::too_many_arguments)]
pub fn where_cond(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    c: (sys::CUdeviceptr, Operand),
    a: (sys::CUdeviceptr, Operand),
    b: (sys::CUdeviceptr, Operand),
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Where(dtype))?;
    let (mut g, mut y) = (g, y);
    let ((mut c, mut co), (mut a, mut ao), (mut b, mut bo)) = (c, a, b);
    // SAFETY: matches `where_*(g, c: *const bool, co, a: *const T, ao, b: *const T, bo, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut c),
                arg(&mut co),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut b),
                arg(&mut bo),
                arg(&mut y),
            ],
        )
    }
}

/// `y[yo] = cast(x[xo])`, both strided.
pub fn cast(
    rt: &CudaRuntime,
    src: DType,
    dst: DType,
    g: Geometry,
    x: (sys::CUdeviceptr, Operand),
    y: (sys::CUdeviceptr, Operand),
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Cast(src, dst))?;
    let mut g = g;
    let ((mut x, mut xo), (mut y, mut yo)) = (x, y);
    // SAFETY: matches `cast_*(g, x: *const S, xo, y: *mut D, yo)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [arg(&mut g), arg(&mut x), arg(&mut xo), arg(&mut y), arg(&mut yo)],
        )
    }
}

/// Dense `y = cast(x)` of `n` elements; both 16-byte aligned.
pub fn cast_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    (src, dst): (DType, DType),
    n: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let v = 16 / src.size_in_bytes().max(dst.size_in_bytes());
    let (mut n_, mut x, mut y) = (n, x, y);
    // SAFETY: matches `cast_v_*(n: u32, x: *const S, y: *mut D)`; both dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(v as u32),
            &mut [arg(&mut n_), arg(&mut x), arg(&mut y)],
        )
    }
}

/// `y[i] = value` for `i < n`; `bits` holds the value's bytes (little-endian, low bytes).
pub fn fill(rt: &CudaRuntime, dtype: DType, n: u32, y: sys::CUdeviceptr, bits: u64) -> Result<()> {
    let f = rt.kernels.get(Kernel::Fill(dtype))?;
    let (mut n, mut y, mut bits) = (n, y, bits);
    // SAFETY: matches `fill_*(n: u32, y: *mut T, value: T)`: T's bytes are the low bytes of `bits`.
    unsafe { launch(rt, f, n, &mut [arg(&mut n), arg(&mut y), arg(&mut bits)]) }
}

/// `y[i] = start + i * step` (floats) or `istart + i * istep` (integers).
#[allow(clippy::too_many_arguments)]
pub fn arange(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    y: sys::CUdeviceptr,
    start: f64,
    step: f64,
    istart: i64,
    istep: i64,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Arange(dtype))?;
    let (mut n, mut y, mut a, mut s, mut ia, mut is) = (n, y, start, step, istart, istep);
    // SAFETY: matches `arange_*(n: u32, y: *mut T, start: f64, step: f64, istart: i64, istep: i64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut n),
                arg(&mut y),
                arg(&mut a),
                arg(&mut s),
                arg(&mut ia),
                arg(&mut is),
            ],
        )
    }
}

/// A Philox draw: `kernel` is `RandUniform` or `RandNormal`.
pub fn rand_float(
    rt: &CudaRuntime,
    kernel: Kernel,
    n: u32,
    y: sys::CUdeviceptr,
    seed: u64,
    stream: u64,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut n, mut y, mut seed, mut stream) = (n, y, seed, stream);
    // SAFETY: matches `rand_{uniform,normal}_*(n: u32, y: *mut T, seed: u64, stream: u64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [arg(&mut n), arg(&mut y), arg(&mut seed), arg(&mut stream)],
        )
    }
}

/// An integer Philox draw in `[low, low + range)`.
#[allow(clippy::too_many_arguments)]
pub fn rand_int(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    y: sys::CUdeviceptr,
    seed: u64,
    stream: u64,
    low: i64,
    range: u64,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::RandInt(dtype))?;
    let (mut n, mut y, mut seed, mut stream, mut low, mut range) = (n, y, seed, stream, low, range);
    // SAFETY: matches `rand_int_*(n: u32, y: *mut T, seed: u64, stream: u64, low: i64, range: u64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut n),
                arg(&mut y),
                arg(&mut seed),
                arg(&mut stream),
                arg(&mut low),
                arg(&mut range),
            ],
        )
    }
}
