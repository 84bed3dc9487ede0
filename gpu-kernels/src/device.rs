//! Device support for the kernels (nvptx only): thread indices and the
//! grid-stride loop. The parts of a CUDA runtime header that kiln needs.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _grid_dim_x, _thread_idx_x};

/// This thread's index in the whole grid (x dimension).
#[inline(always)]
pub fn global_index() -> u32 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { (_block_idx_x() as u32) * (_block_dim_x() as u32) + _thread_idx_x() as u32 }
}

/// Number of threads in the whole grid (x dimension).
#[inline(always)]
pub fn grid_size() -> u32 {
    // SAFETY: as above.
    unsafe { (_grid_dim_x() as u32) * (_block_dim_x() as u32) }
}

/// Calls `f(i)` for every `i < n` handled by this thread (grid-stride loop).
#[inline(always)]
pub fn for_each_index(n: u32, mut f: impl FnMut(u32)) {
    let step = grid_size();
    let mut i = global_index();
    while i < n {
        f(i);
        i = match i.checked_add(step) {
            Some(v) => v,
            None => break,
        };
    }
}

/// This thread's index within its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { _thread_idx_x() as u32 & 31 }
}

/// The value of `v` held by lane `lane ^ mask` of this warp (all 32 lanes take part).
#[inline(always)]
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    let r: u32;
    // SAFETY: every lane of the warp executes this together (callers keep warps uniform).
    unsafe {
        core::arch::asm!(
            "shfl.sync.bfly.b32 {r}, {v}, {m}, 31, -1;",
            r = out(reg32) r,
            v = in(reg32) v,
            m = in(reg32) mask,
        )
    };
    r
}

/// [`shfl_xor`] of a 64-bit value.
#[inline(always)]
pub fn shfl_xor_u64(v: u64, mask: u32) -> u64 {
    let lo = shfl_xor(v as u32, mask) as u64;
    let hi = shfl_xor((v >> 32) as u32, mask) as u64;
    (hi << 32) | lo
}

/// [`shfl_xor`] of an f64.
#[inline(always)]
pub fn shfl_xor_f64(v: f64, mask: u32) -> f64 {
    f64::from_bits(shfl_xor_u64(v.to_bits(), mask))
}
