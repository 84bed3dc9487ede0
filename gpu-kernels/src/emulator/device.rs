//! The emulated [`crate::device`]: the parts the emulated kernels use.

use super::context;

/// This thread's index in its block (x, y).
pub fn thread_xy() -> (u32, u32) {
    (context().0, 0)
}

/// This block's index in the grid (x, y, z).
pub fn block_xyz() -> (u32, u32, u32) {
    context().1.index
}

/// This thread's index within its warp.
pub fn lane_id() -> u32 {
    context().0 & 31
}

/// Waits until every thread of the block has reached this point.
///
/// # Safety
/// Every thread of the block must call it.
pub unsafe fn sync_threads() {
    context().1.barrier.wait();
}

/// See the real module: a counter and a generation a barrier, behind the
/// block's lock.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    context().1.named.arrive(id, threads, true);
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    context().1.named.arrive(id, threads, false);
}

/// See the real module: four atomic adds, as other blocks' threads add too.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn red_add_v4_f32(p: *mut f32, v: [f32; 4]) {
    use std::sync::atomic::{AtomicU32, Ordering};
    for (i, v) in v.into_iter().enumerate() {
        // SAFETY: `p + i` is a live, aligned f32 that only atomics touch meanwhile.
        let cell = unsafe { &*(p.add(i) as *const AtomicU32) };
        let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
            Some((f32::from_bits(x) + v).to_bits())
        });
    }
}

/// The block's shared memory, as `T`s.
pub fn shared<T>() -> *mut T {
    context().1.shared as *mut T
}

/// The value of `v` held by lane `lane ^ mask` of this warp.
pub fn shfl_xor_f32(v: f32, mask: u32) -> f32 {
    let (tid, block) = context();
    let lane = tid & 31;
    let warp = &block.warps[(tid / 32) as usize];
    f32::from_bits(warp.exchange(lane, &[v.to_bits()], |read| read(lane ^ mask, 0)))
}

/// The value of `v` held by lane `lane ^ mask` of this warp.
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    shfl_xor_f32(f32::from_bits(v), mask).to_bits()
}

/// Whether `p` holds on any lane of this warp.
pub fn warp_any(p: bool) -> bool {
    let (tid, block) = context();
    let warp = &block.warps[(tid / 32) as usize];
    warp.exchange(tid & 31, &[p as u32], |read| (0..32).any(|l| read(l, 0) != 0))
}

/// Calls `f(0)`, ..., `f(n - 1)`.
pub fn unroll(n: usize, f: impl FnMut(usize)) {
    (0..n).for_each(f);
}

/// `V` elements loaded or stored as one 16-byte access.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Pack<T: Copy, const V: usize>(pub [T; V]);

/// See the real module (nothing to hide from here).
pub fn opaque(x: u32) -> u32 {
    x
}
