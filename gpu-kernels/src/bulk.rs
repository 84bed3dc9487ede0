//! Hopper's bulk asynchronous copies out of shared memory (sm_90): one
//! thread hands the copy engine a contiguous run of a block's shared memory
//! and it is added, element by element, into global memory
//! (`cp.reduce.async.bulk … .add.f32`), the additions done in L2 as whole
//! lines: many blocks may add into the same place, without atomics of
//! their own. The run is read asynchronously: it must not be written again
//! until [`wait_read`].

use core::arch::asm;

/// Adds the `bytes` (a multiple of 16) of f32s at shared address `src`
/// into the f32s at `dst` (both 16-byte aligned), and commits the copy as
/// this thread's newest bulk group.
///
/// # Safety
/// `dst` is writable global memory for `bytes`; the writes to `src` were
/// fenced ([`crate::warpgroup::fence_shared`]) and a barrier passed since.
#[inline(always)]
pub unsafe fn reduce_add_f32(dst: *mut f32, src: u32, bytes: u32) {
    asm!(
        "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{d}], [{s}], {n};",
        d = in(reg64) dst,
        s = in(reg32) src,
        n = in(reg32) bytes,
        options(nostack)
    );
    asm!("cp.async.bulk.commit_group;", options(nostack));
}

/// Waits until every bulk copy this thread committed has read its source:
/// the shared memory may be written again (the additions may still be on
/// their way to global memory; the kernel's end waits for them).
///
/// # Safety
/// Called by the thread that committed the copies.
#[inline(always)]
pub unsafe fn wait_read() {
    asm!("cp.async.bulk.wait_group.read 0;", options(nostack));
}
