//! The attention backward's side kernels, around the fused ones:
//!
//! - the row terms `delta = rowsum(dout · o)` (`flash_delta_d<D>_<dtype>`):
//!   one warp a row, the products and their sum in f32, read straight from
//!   the output and its gradient (both laid out as the forward's output,
//!   `FlashParams::o`);
//! - the query gradient from the f32 sums the Hopper fused backward adds up
//!   (`flash_dq_<dtype>`): times the scale, rounded, in `dq`'s layout.

use super::flash_operands::FlashElem;
use crate::device::{block_xyz, shfl_xor_f32, thread_xy};
#[cfg(target_arch = "nvptx64")]
use crate::elem::{BF16, F16};
use crate::params::FlashParams;

/// `delta[(b·H + h)·L + row]` for the rows of one block: warp `w` takes
/// row `8·blockIdx.x + w` of head `blockIdx.y` of batch entry `blockIdx.z`.
///
/// # Safety
/// Launched with [`FlashParams::DELTA_THREADS`] threads and a grid of
/// `(⌈L/8⌉, H, B)`; `o` and `dout` hold the output's layout `h.o` (rows
/// 4-byte aligned), `delta` `B·H·L` f32s.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
#[inline(always)]
unsafe fn delta<T: FlashElem, const D: usize>(
    o: *const T::Bits,
    dout: *const T::Bits,
    delta: *mut f32,
    h: FlashParams,
) {
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (tile, head, batch) = block_xyz();
    let row = tile * (FlashParams::DELTA_THREADS / 32) + warp;
    if row >= h.l {
        return;
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

/// The query gradient's rows of one tile of 64: block
/// `(tile, head, batch)` reads the accumulator's runs of that tile
/// ([`FlashParams::dq_accumulator_at`], in order, two columns a thread) and
/// stores them times the scale into `dq` (rows past `L` are not stored).
///
/// # Safety
/// Launched with [`FlashParams::DQ_THREADS`] threads and a grid of
/// `(⌈L/64⌉, H, B)`; `acc` holds
/// [`FlashParams::dq_accumulator_len`] f32s for head dim `d` (even), `dq`
/// lies as `h.dq` says (rows 4-byte aligned).
#[inline(always)]
pub(crate) unsafe fn dq_from_accumulator<T: FlashElem>(
    acc: *const f32,
    dq: *mut T::Bits,
    h: FlashParams,
    d: u32,
) {
    let (tid, _) = thread_xy();
    let (tile, head, batch) = block_xyz();
    let tile_rows = FlashParams::HOPPER_BACKWARD_TILE;
    let half = d / 2;
    let pairs = half / 2;
    let first = h.dq_accumulator_at(batch * h.heads + head, tile * tile_rows, 0, d);
    let mut i = tid;
    while i < tile_rows * d / 2 {
        let (side, r, p) = (i / (tile_rows * pairs), (i / pairs) % tile_rows, i % pairs);
        let row = tile * tile_rows + r;
        if row < h.l {
            let at = acc.add(first + 2 * i as usize);
            let to = dq.add(h.dq.offset(batch, head, row) + (side * half + 2 * p) as usize);
            T::store_pair(to, *at * h.scale, *at.add(1) * h.scale);
        }
        i += FlashParams::DQ_THREADS;
    }
}

macro_rules! flash_delta {
    ($tn:ident, $t:ty, $dn:ident, $d:literal) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[export_name = crate::kernel_name!(flash_delta, $dn, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                o: *const <$t as FlashElem>::Bits,
                dout: *const <$t as FlashElem>::Bits,
                out: *mut f32,
                args: crate::args::FlashDeltaArgs,
            ) {
                delta::<$t, $d>(o, dout, out, args.h)
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

macro_rules! flash_dq {
    ($tn:ident, $t:ty) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[export_name = crate::kernel_name!(flash_dq, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                acc: *const f32,
                dq: *mut u16,
                args: crate::args::FlashDqArgs,
            ) {
                dq_from_accumulator::<$t>(acc, dq, args.h, args.d)
            }
        };
    };
}

flash_dq!(f16, F16);
flash_dq!(bf16, BF16);
