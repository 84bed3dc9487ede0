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
