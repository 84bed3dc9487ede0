//! Launches of the elementwise kernels
//! (`gpu-kernels/src/kernels/elementwise.rs`): unary, binary and comparison ops
//! (strided, with a scalar, dense 16-byte and row-broadcast variants), `where`,
//! casts, fills, ranges and random numbers.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::op::UnaryOp;
use crate::core::DType;
use cudarc::driver::{sys, CudaFunction};
use kiln_kernels::args::{
    ArangeArgs, BinaryArgs, Bits, CastArgs, DenseArgs, DenseBinaryArgs, DenseScalarArgs, DropoutArgs,
    FillArgs, RandArgs, RandIntArgs, RowArgs, ScalarArgs, UnaryArgs, WhereArgs,
};
use kiln_kernels::params::{Geometry, Operand, RandView};

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
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, g.n, [x, y], UnaryArgs { g, xo }) }
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
    let n_ = n;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; both dense and aligned.
    unsafe { launch(rt, f, n.div_ceil(pack(dtype) as u32), [x, y], DenseArgs { n: n_ }) }
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
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, g.n, [a, b, y], BinaryArgs { g, ao, bo }) }
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
    let n_ = n;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; all dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            [a, b, y],
            DenseBinaryArgs { n: n_ },
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
    let rev = rev as u32;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; T's bytes are the low bytes of `bits`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            [a, y],
            ScalarArgs {
                g,
                ao,
                s: Bits(bits),
                rev,
            },
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
    let (n_, rev) = (n, rev as u32);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            [a, y],
            DenseScalarArgs {
                n: n_,
                s: Bits(bits),
                rev,
            },
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
    let (packs_, row_packs, side, a, b, y) = (packs, row_packs, row_is_b as u32, a, b, y);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; all aligned.
    unsafe {
        launch(
            rt,
            f,
            packs,
            [a, b, y],
            RowArgs {
                packs: packs_,
                row_packs,
                row_side: side,
            },
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
    let ((c, co), (a, ao), (b, bo)) = (c, a, b);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, g.n, [c, a, b, y], WhereArgs { g, co, ao, bo }) }
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
    let ((x, xo), (y, yo)) = (x, y);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, g.n, [x, y], CastArgs { g, xo, yo }) }
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
    let n_ = n;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; both dense and aligned.
    unsafe { launch(rt, f, n.div_ceil(v as u32), [x, y], DenseArgs { n: n_ }) }
}

/// `y[i] = value` for `i < n`; `bits` holds the value's bytes (little-endian, low bytes).
pub fn fill(rt: &CudaRuntime, dtype: DType, n: u32, y: sys::CUdeviceptr, bits: u64) -> Result<()> {
    let f = rt.kernels.get(Kernel::Fill(dtype))?;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe { launch(rt, f, n, [y], FillArgs { n, value: Bits(bits) }) }
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
    let (a, s, ia, is) = (start, step, istart, istep);
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            n,
            [y],
            ArangeArgs {
                n,
                start: a,
                step: s,
                istart: ia,
                istep: is,
            },
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
    view: RandView,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            n,
            [y],
            RandArgs {
                n,
                seed,
                stream,
                view,
                draw_at: crate::core::capture::claim_draw(seed, stream),
            },
        )
    }
}

/// Inverted dropout of `n` dense elements: kept ones scaled by `scale`,
/// the rest zeroed, as the draw `(seed, stream)` decides (`dropout_<dtype>`).
#[allow(clippy::too_many_arguments)]
pub fn dropout(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
    (seed, stream): (u64, u64),
    p: f64,
    scale: f64,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Dropout(dtype))?;
    // f64 draws one element a thread, the others four (one Philox block)
    let threads = if dtype == DType::F64 { n } else { n.div_ceil(4) };
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations of `n` elements the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            threads,
            [x, y],
            DropoutArgs {
                n,
                seed,
                stream,
                p,
                scale,
                draw_at: crate::core::capture::claim_draw(seed, stream),
            },
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
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside.
    unsafe {
        launch(
            rt,
            f,
            n,
            [y],
            RandIntArgs {
                n,
                seed,
                stream,
                low,
                range,
                draw_at: crate::core::capture::claim_draw(seed, stream),
            },
        )
    }
}
