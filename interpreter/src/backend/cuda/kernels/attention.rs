//! Launches of the fused attention kernels (`gpu-kernels/src/kernels/attention.rs`):
//! the forward and the two backward kernels, four warps a block, their
//! shared memory sized by `FlashParams` (the one definition both sides use)
//! for the dtype's element size.
//! On a GPU of compute capability 9.0 the forward and backward without
//! dropout at head dims 64 and 128 run on Hopper's warpgroup tensor cores
//! instead (`attention_hopper.rs`, `attention_hopper_backward.rs`);
//! `KILN_FLASH_HOPPER=0` keeps the `mma.sync` kernels there (for
//! comparisons). There the backward at head dim 128 is one kernel that
//! adds the query gradient up in f32 as it makes the key and value
//! gradients ([`flash_backward_summing_dq`]; [`backward_sums_dq`] says
//! where), at 64 a key/value kernel and a query kernel.

use super::launch::*;
use super::table::Kernel;
use crate::backend::cuda::runtime::{cuda_error, CudaRuntime};
use crate::core::error::Result;
use crate::core::DType;
use cudarc::driver::{sys, CudaFunction};
use kiln_kernels::args::{
    FlashBackwardKvArgs, FlashBackwardKvqArgs, FlashBackwardQArgs, FlashDeltaArgs, FlashForwardArgs,
};
use kiln_kernels::params::FlashParams;

/// Shared memory a block may use without opting in.
const DEFAULT_SHARED: u32 = 48 * 1024;

/// `f` allowed `bytes` of dynamic shared memory (a launch above 48 KiB must opt in).
fn allow_shared(f: &CudaFunction, bytes: u32) -> Result<()> {
    if bytes > DEFAULT_SHARED {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(|e| cuda_error("cuFuncSetAttribute", e))?;
    }
    Ok(())
}

/// Blocks of 64 rows over `rows`, by heads and batch entries.
fn grid(rows: u32, heads: u32, batch: u32) -> (u32, u32, u32) {
    (rows.div_ceil(FlashParams::BLOCK_ROWS), heads, batch)
}

/// Whether attention of `dtype` and head dim `d` (`dropout` > 0 or not)
/// runs on the Hopper kernels here (halves only: f32 takes the `mma.sync`
/// kernels' tf32 pairs everywhere).
fn hopper(rt: &CudaRuntime, dtype: DType, d: usize, dropout: f32) -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let enabled = *ENABLED.get_or_init(|| std::env::var("KILN_FLASH_HOPPER").map_or(true, |v| v != "0"));
    enabled
        && matches!(dtype, DType::F16 | DType::BF16)
        && rt.kernels.capability() == (9, 0)
        && dropout == 0.0
        && FlashParams::HOPPER_HEAD_DIMS.contains(&d)
}

/// Whether the backward of this attention takes [`flash_backward_summing_dq`]
/// rather than [`flash_backward`]: the Hopper kernels where
/// [`FlashParams::hopper_backward_sums_dq`] says so. For comparisons,
/// `KILN_FLASH_FUSED_DQ=0` keeps the two kernels at every head dim and
/// `KILN_FLASH_FUSED_DQ=1` takes the one kernel at every head dim.
pub fn backward_sums_dq(rt: &CudaRuntime, dtype: DType, d: usize, dropout: f32) -> bool {
    static CHOICE: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    let choice = *CHOICE.get_or_init(|| std::env::var("KILN_FLASH_FUSED_DQ").ok().map(|v| v != "0"));
    hopper(rt, dtype, d, dropout) && choice.unwrap_or(FlashParams::hopper_backward_sums_dq(d))
}

/// The forward: `o [B, H, L, D]` and `lse [B, H, L]` (f32) from q, k, v.
pub fn flash_forward(
    rt: &CudaRuntime,
    dtype: DType,
    d: usize,
    batch: u32,
    h: FlashParams,
    [q, k, v, o, lse]: [sys::CUdeviceptr; 5],
) -> Result<()> {
    if hopper(rt, dtype, d, h.dropout) {
        let f = rt.kernels.get(Kernel::FlashForwardHopper(dtype, d))?;
        let shared = FlashParams::hopper_forward_shared_bytes(d);
        allow_shared(f, shared)?;
        // SAFETY: as below; the block shape and shared memory are those the
        // Hopper kernel is written for, and this GPU is an sm_90 one.
        return unsafe {
            launch_with(
                rt,
                f,
                (h.l.div_ceil(FlashParams::hopper_forward_rows(d)), h.heads, batch),
                (FlashParams::hopper_forward_threads(d), 1, 1),
                shared,
                [q, k, v, o, lse],
                FlashForwardArgs { h },
            )
        };
    }
    let f = rt.kernels.get(Kernel::FlashForward(dtype, d, h.dropout > 0.0))?;
    let shared = FlashParams::forward_shared_bytes(d, dtype.size_in_bytes());
    allow_shared(f, shared)?;
    // SAFETY: the kernel takes this argument block; the front end checked the
    // operands' shapes, strides and 16-byte alignment against `h`, and the
    // outputs are dense buffers of the sizes it implies; the block shape and
    // shared memory are those the kernel is written for.
    unsafe {
        launch_with(
            rt,
            f,
            grid(h.l, h.heads, batch),
            (FlashParams::THREADS, 1, 1),
            shared,
            [q, k, v, o, lse],
            FlashForwardArgs { h },
        )
    }
}

/// The backward's row terms: `delta [B, H, L]` (f32) `= rowsum(dout · o)`,
/// `o` and `dout` both in the output's layout `h.o`; where `dq_acc` is not
/// null, the f32 query-gradient sums there (`h.dq`'s layout) are zeroed
/// too.
pub fn flash_delta(
    rt: &CudaRuntime,
    dtype: DType,
    d: usize,
    batch: u32,
    h: FlashParams,
    [o, dout, delta, dq_acc]: [sys::CUdeviceptr; 4],
) -> Result<()> {
    let f = rt.kernels.get(Kernel::FlashDelta(dtype, d))?;
    let rows = FlashParams::DELTA_THREADS / 32;
    // SAFETY: the kernel takes this argument block; `o` and `dout` lie as
    // `h.o` says (checked by the front end), `delta` holds B·H·L f32s.
    unsafe {
        launch_with(
            rt,
            f,
            (h.l.div_ceil(rows), h.heads, batch),
            (FlashParams::DELTA_THREADS, 1, 1),
            0,
            [o, dout, delta, dq_acc],
            FlashDeltaArgs { h },
        )
    }
}

/// The backward in one kernel, where [`backward_sums_dq`] says: `dk`, `dv
/// [B, H / group, S, D]` as [`flash_backward`] makes them, and the query
/// gradient added into `dq_acc` (f32, in `h.dq`'s layout, zeroed by the
/// caller) block by block.
pub fn flash_backward_summing_dq(
    rt: &CudaRuntime,
    dtype: DType,
    d: usize,
    batch: u32,
    h: FlashParams,
    [q, k, v, dout, lse, delta]: [sys::CUdeviceptr; 6],
    [dq_acc, dk, dv]: [sys::CUdeviceptr; 3],
) -> Result<()> {
    let f = rt.kernels.get(Kernel::FlashBackwardKvqHopper(dtype, d))?;
    let shared = FlashParams::hopper_backward_kv_shared_bytes(d, true);
    allow_shared(f, shared)?;
    // SAFETY: as for `flash_backward`; `dq_acc` holds the query gradient's
    // elements as f32s, and this GPU is an sm_90 one (`backward_sums_dq`).
    unsafe {
        launch_with(
            rt,
            f,
            (
                h.s.div_ceil(FlashParams::HOPPER_KV_KEYS),
                h.heads / h.group,
                batch,
            ),
            (FlashParams::HOPPER_KV_THREADS, 1, 1),
            shared,
            [q, k, v, dout, lse, delta, dk, dv, dq_acc],
            FlashBackwardKvqArgs { h },
        )
    }
}

/// The backward: `dq [B, H, L, D]`, `dk`, `dv [B, H / group, S, D]` from
/// q, k, v, the dense output gradient, `lse` and `delta = rowsum(dout · o)`.
pub fn flash_backward(
    rt: &CudaRuntime,
    dtype: DType,
    d: usize,
    batch: u32,
    h: FlashParams,
    [q, k, v, dout, lse, delta]: [sys::CUdeviceptr; 6],
    [dq, dk, dv]: [sys::CUdeviceptr; 3],
) -> Result<()> {
    if hopper(rt, dtype, d, h.dropout) {
        let fkv = rt.kernels.get(Kernel::FlashBackwardKvHopper(dtype, d))?;
        let shared_kv = FlashParams::hopper_backward_kv_shared_bytes(d, false);
        allow_shared(fkv, shared_kv)?;
        let fq = rt.kernels.get(Kernel::FlashBackwardQHopper(dtype, d))?;
        let shared_q = FlashParams::hopper_backward_q_shared_bytes(d);
        allow_shared(fq, shared_q)?;
        // SAFETY: as below; the block shapes and shared memory are those the
        // Hopper kernels are written for, and this GPU is an sm_90 one.
        return unsafe {
            launch_with(
                rt,
                fkv,
                (
                    h.s.div_ceil(FlashParams::HOPPER_KV_KEYS),
                    h.heads / h.group,
                    batch,
                ),
                (FlashParams::HOPPER_KV_THREADS, 1, 1),
                shared_kv,
                [q, k, v, dout, lse, delta, dk, dv],
                FlashBackwardKvArgs { h },
            )?;
            launch_with(
                rt,
                fq,
                (h.l.div_ceil(FlashParams::HOPPER_BLOCK_ROWS), h.heads, batch),
                (FlashParams::HOPPER_THREADS, 1, 1),
                shared_q,
                [q, k, v, dout, lse, delta, dq],
                FlashBackwardQArgs { h },
            )
        };
    }
    let fkv = rt
        .kernels
        .get(Kernel::FlashBackwardKv(dtype, d, h.dropout > 0.0))?;
    let shared_kv = FlashParams::backward_kv_shared_bytes(d, dtype.size_in_bytes());
    allow_shared(fkv, shared_kv)?;
    let fq = rt
        .kernels
        .get(Kernel::FlashBackwardQ(dtype, d, h.dropout > 0.0))?;
    let shared_q = FlashParams::backward_q_shared_bytes(d, dtype.size_in_bytes());
    allow_shared(fq, shared_q)?;
    // SAFETY: as for the forward; the gradients are dense buffers of the
    // shapes above.
    unsafe {
        launch_with(
            rt,
            fkv,
            grid(h.s, h.heads / h.group, batch),
            (FlashParams::THREADS, 1, 1),
            shared_kv,
            [q, k, v, dout, lse, delta, dk, dv],
            FlashBackwardKvArgs { h },
        )?;
        launch_with(
            rt,
            fq,
            grid(h.l, h.heads, batch),
            (FlashParams::THREADS, 1, 1),
            shared_q,
            [q, k, v, dout, lse, delta, dq],
            FlashBackwardQArgs { h },
        )
    }
}
