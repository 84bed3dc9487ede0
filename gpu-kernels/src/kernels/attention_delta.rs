//! The attention backward's row terms `delta = rowsum(dout · o)`
//! (`flash_delta_d<D>_<dtype>`): one warp a row, the products and their
//! sum in f32, read straight from the output and its gradient (both laid
//! out as the forward's output, `FlashParams::o`). Where the backward adds
//! the query gradient up in f32, the same warp zeroes the row's sums.

use super::flash_operands::FlashElem;
use crate::device::{block_xyz, shfl_xor_f32, thread_xy};
use crate::elem::{BF16, F16};
use crate::params::FlashParams;

/// `delta[(b·H + h)·L + row]` for the rows of one block: warp `w` takes
/// row `8·blockIdx.x + w` of head `blockIdx.y` of batch entry `blockIdx.z`.
///
/// # Safety
/// Launched with [`FlashParams::DELTA_THREADS`] threads and a grid of
/// `(⌈L/8⌉, H, B)`; `o` and `dout` hold the output's layout `h.o` (rows
/// 4-byte aligned), `delta` `B·H·L` f32s, and `dq_acc` is null or holds
/// the query gradient's elements as f32s (laid out as `h.dq` says), which
/// it zeroes.
#[inline(always)]
unsafe fn delta<T: FlashElem, const D: usize>(
    o: *const T::Bits,
    dout: *const T::Bits,
    delta: *mut f32,
    dq_acc: *mut f32,
    h: FlashParams,
) {
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (tile, head, batch) = block_xyz();
    let row = tile * (FlashParams::DELTA_THREADS / 32) + warp;
    if row >= h.l {
        return;
    }
    if !dq_acc.is_null() {
        let sums = dq_acc.add(h.dq.offset(batch, head, row));
        let mut i = lane as usize;
        while i < D {
            *sums.add(i) = 0.0;
            i += 32;
        }
    }
    let at = h.o.offset(batch, head, row);
    let (o, dout) = (o.add(at), dout.add(at));
    let mut sum = 0f32;
    let mut i = lane as usize;
    while i < D {
        sum += T::widen(*o.add(i)) * T::widen(*dout.add(i));
        i += 32;
    }
    sum += shfl_xor_f32(sum, 16);
    sum += shfl_xor_f32(sum, 8);
    sum += shfl_xor_f32(sum, 4);
    sum += shfl_xor_f32(sum, 2);
    sum += shfl_xor_f32(sum, 1);
    if lane == 0 {
        *delta.add(((batch * h.heads + head) * h.l + row) as usize) = sum;
    }
}

macro_rules! flash_delta {
    ($tn:ident, $t:ty, $dn:ident, $d:literal) => {
        const _: () = {
            #[export_name = crate::kernel_name!(flash_delta, $dn, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                o: *const <$t as FlashElem>::Bits,
                dout: *const <$t as FlashElem>::Bits,
                out: *mut f32,
                dq_acc: *mut f32,
                args: crate::args::FlashDeltaArgs,
            ) {
                delta::<$t, $d>(o, dout, out, dq_acc, args.h)
            }
        };
    };
}

flash_delta!(f16, F16, d32, 32);
flash_delta!(f16, F16, d64, 64);
flash_delta!(f16, F16, d96, 96);
flash_delta!(f16, F16, d128, 128);
flash_delta!(bf16, BF16, d32, 32);
flash_delta!(bf16, BF16, d64, 64);
flash_delta!(bf16, BF16, d96, 96);
flash_delta!(bf16, BF16, d128, 128);
flash_delta!(f32, f32, d32, 32);
flash_delta!(f32, f32, d64, 64);
flash_delta!(f32, f32, d96, 96);
flash_delta!(f32, f32, d128, 128);
