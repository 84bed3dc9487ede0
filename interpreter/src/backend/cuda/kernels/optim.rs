//! Launches of the fused optimizer steps (`gpu-kernels/src/kernels/optim.rs`):
//! SGD and Adam / AdamW, one launch per parameter, and Adam / AdamW over a
//! list of parameters in one launch.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::CudaRuntime;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::sys;
use kiln_kernels::args::{AdamArgs, AdamMultiArgs, NormMultiArgs, ScaleMultiArgs, SgdArgs, SgdMultiArgs};
use kiln_kernels::params::{AdamParams, SgdParams, TensorList};

/// Elements per pack of the optimizer kernels for parameters of `dtype` (16
/// bytes of the wider of the parameter and its f32/f64 state).
fn optim_pack(dtype: DType) -> u32 {
    16 / dtype.size_in_bytes().max(if dtype == DType::F64 { 8 } else { 4 }) as u32
}

/// One SGD step over `n` dense elements: parameter `p`, gradient `g`, momentum
/// buffer `buf` (0 without momentum); `packed` when every pointer is 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    packed: bool,
    p: sys::CUdeviceptr,
    g: sys::CUdeviceptr,
    buf: sys::CUdeviceptr,
    h: SgdParams,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::SgdStep(dtype))?;
    let threads = if packed { n.div_ceil(optim_pack(dtype)) } else { n };
    let packed = packed as u32;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; `buf` is only read when `h` asks for momentum; packed
    // accesses need the alignment the caller checked, and the tail needs fewer threads than one
    // block has.
    unsafe { launch(rt, f, threads, [p, g, buf], SgdArgs { n, packed, h }) }
}

/// One Adam / AdamW step over `n` dense elements: parameter `p`, gradient `g`,
/// moments `m` and `v`; `packed` when every pointer is 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    packed: bool,
    (p, g): (sys::CUdeviceptr, sys::CUdeviceptr),
    (m, v): (sys::CUdeviceptr, sys::CUdeviceptr),
    h: AdamParams,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::AdamStep(dtype))?;
    let threads = if packed { n.div_ceil(optim_pack(dtype)) } else { n };
    let packed = packed as u32;
    // SAFETY: the kernel takes this argument block (its family's struct); its pointers are live
    // allocations the launch stays inside; packed accesses need the alignment the caller checked.
    unsafe { launch(rt, f, threads, [p, g, m, v], AdamArgs { n, packed, h }) }
}

/// One Adam / AdamW step over every tensor of `list` (dense, of `dtype`,
/// their state in the accumulator dtype): a block of 256 threads per chunk.
pub fn adam_multi(rt: &CudaRuntime, dtype: DType, list: TensorList, h: AdamParams) -> Result<()> {
    let f = rt.kernels.get(Kernel::AdamMulti(dtype))?;
    // SAFETY: the kernel takes this argument block; every address in `list`
    // starts a live allocation of at least `len` elements of its array's
    // type (the caller built it from checked storages), and its blocks stay
    // inside their tensor's chunk.
    unsafe {
        launch_with(
            rt,
            f,
            (list.blocks(), 1, 1),
            (256, 1, 1),
            0,
            [],
            AdamMultiArgs { h, list },
        )
    }
}

/// Each block's sum of squares (`inf`: largest magnitude) of its chunk of
/// the tensors at `list.p` (dense, of `dtype`), to `partial[block]` in the
/// accumulator dtype (`list.blocks()` entries).
pub fn norm_multi(
    rt: &CudaRuntime,
    dtype: DType,
    list: TensorList,
    inf: bool,
    partial: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::NormMulti(dtype))?;
    // SAFETY: the kernel takes this argument block; the list's addresses start
    // live dense runs of their lengths and `partial` holds one accumulator per
    // block; the block-wide reduction gets its scratch.
    unsafe {
        launch_with(
            rt,
            f,
            (list.blocks(), 1, 1),
            (256, 1, 1),
            REDUCE_SCRATCH,
            [partial],
            NormMultiArgs {
                list,
                inf: inf as u32,
            },
        )
    }
}

/// Every element of the tensors at `list.p` (dense, of `dtype`) times the
/// f32 at `coef`, in place.
pub fn scale_multi(rt: &CudaRuntime, dtype: DType, list: TensorList, coef: sys::CUdeviceptr) -> Result<()> {
    let f = rt.kernels.get(Kernel::ScaleMulti(dtype))?;
    // SAFETY: the kernel takes this argument block; the list's addresses start
    // live dense runs of their lengths and `coef` is a live f32.
    unsafe {
        launch_with(
            rt,
            f,
            (list.blocks(), 1, 1),
            (256, 1, 1),
            0,
            [coef],
            ScaleMultiArgs { list },
        )
    }
}

/// One SGD step over every tensor of `list` (dense, of `dtype`; momentum
/// buffers in the accumulator dtype, read only with momentum).
pub fn sgd_multi(rt: &CudaRuntime, dtype: DType, list: TensorList, h: SgdParams) -> Result<()> {
    let f = rt.kernels.get(Kernel::SgdMulti(dtype))?;
    // SAFETY: the kernel takes this argument block; every address in `list`
    // starts a live allocation of at least `len` elements of its array's
    // type (the buffer address is read only when `h` asks for momentum).
    unsafe {
        launch_with(
            rt,
            f,
            (list.blocks(), 1, 1),
            (256, 1, 1),
            0,
            [],
            SgdMultiArgs { h, list },
        )
    }
}
