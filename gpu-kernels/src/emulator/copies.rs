//! The emulated asynchronous copies (`cp.async`): they land as late as
//! PTX's ISA lets them, so that a kernel which reads a tile before waiting
//! for it reads stale bytes and fails its test (copies that landed at once
//! would hide that):
//!
//! - a committed group lands at the `cp.async.wait_group` of its thread
//!   that waits for it;
//! - copies an `mbarrier` tracks (`cp.async.mbarrier.arrive.noinc`) land,
//!   and the barrier gets their arrival, only when some thread waits on that
//!   barrier (or their own thread waits for all its copies or ends), so a
//!   reader that waits on the wrong barrier finds its tile missing;
//! - copies still queued when their thread ends land then.

use super::context;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::vec::Vec;

/// One copy of `bytes` bytes from `src` (zeros where `!fill`) to the shared
/// address `dst`.
pub(super) struct Copy {
    dst: u32,
    src: *const u8,
    bytes: usize,
    fill: bool,
}

/// A thread's copies not yet landed and not tracked by a barrier.
#[derive(Default)]
struct Queue {
    /// Issued since the last commit.
    open: Vec<Copy>,
    /// Committed groups, the oldest first.
    groups: VecDeque<Vec<Copy>>,
}

/// A block's copies that barriers track: the issuing thread, the copies and
/// the barrier's shared address.
pub(super) type Tracked = Mutex<Vec<(u32, Vec<Copy>, u32)>>;

std::thread_local! {
    static QUEUE: RefCell<Queue> = RefCell::default();
}

/// Performs `copies` now.
fn land(copies: Vec<Copy>) {
    let shared = context().1.shared;
    for c in copies {
        // SAFETY: the kernel issued the copy with a destination inside the
        // block's shared memory and a readable source (checked at issue).
        unsafe {
            let to = shared.add(c.dst as usize);
            if c.fill {
                core::ptr::copy_nonoverlapping(c.src, to, c.bytes);
            } else {
                core::ptr::write_bytes(to, 0, c.bytes);
            }
        }
    }
}

/// Queues a copy (`cp.async`).
pub(super) fn issue(dst: u32, src: *const u8, bytes: usize, fill: bool) {
    QUEUE.with(|q| {
        q.borrow_mut().open.push(Copy {
            dst,
            src,
            bytes,
            fill,
        })
    });
}

/// Closes the open group (`cp.async.commit_group`).
pub(super) fn commit() {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let group = core::mem::take(&mut q.open);
        q.groups.push_back(group);
    });
}

/// Lands every committed group of this thread but the newest `pending`
/// (`cp.async.wait_group`), and with none pending also every copy of its
/// that a barrier tracks.
pub(super) fn wait(pending: usize) {
    if pending == 0 {
        land_tracked(|tid, _| tid == context().0);
    }
    loop {
        let oldest = QUEUE.with(|q| {
            let mut q = q.borrow_mut();
            if q.groups.len() > pending {
                q.groups.pop_front()
            } else {
                None
            }
        });
        match oldest {
            Some(group) => land(group),
            None => return,
        }
    }
}

/// Every copy this thread has issued, committed or not, tracked by the
/// barrier at `bar` (`cp.async.mbarrier.arrive.noinc`).
pub(super) fn track(bar: u32) {
    let copies = QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let mut copies = core::mem::take(&mut q.open);
        let groups = core::mem::take(&mut q.groups);
        copies.extend(groups.into_iter().flatten());
        copies
    });
    let (tid, block) = context();
    block.tracked.lock().unwrap().push((tid, copies, bar));
}

/// Lands the block's tracked copies that `pick(thread, barrier)` chooses and
/// arrives on their barriers.
fn land_tracked(pick: impl Fn(u32, u32) -> bool) {
    let chosen: Vec<(Vec<Copy>, u32)> = {
        let mut all = context().1.tracked.lock().unwrap();
        let (chosen, kept) = core::mem::take(&mut *all)
            .into_iter()
            .partition(|(tid, _, bar)| pick(*tid, *bar));
        *all = kept;
        chosen.into_iter().map(|(_, copies, bar)| (copies, bar)).collect()
    };
    for (copies, bar) in chosen {
        land(copies);
        // SAFETY: the kernel set the barrier up before tracking copies on it.
        unsafe { super::pipeline::arrive(bar) };
    }
}

/// Lands the copies the barrier at `bar` tracks, for a thread about to wait
/// on it.
pub(super) fn land_for(bar: u32) {
    land_tracked(|_, b| b == bar);
}

/// Lands everything of this thread's still queued: called when it ends.
pub(super) fn finish() {
    wait(0);
    let open = QUEUE.with(|q| core::mem::take(&mut q.borrow_mut().open));
    land(open);
}

#[cfg(test)]
mod tests {
    use super::super::device::{shared, sync_threads, thread_xy};
    use super::super::tensor_core::{cp_async_16, cp_async_commit, cp_async_wait};
    use super::super::{launch, pipeline, Shared};

    /// Sixteen bytes of sevens, aligned as `cp.async` sources are.
    #[repr(C, align(16))]
    struct Source([u8; 16]);
    static SEVENS: Source = Source([7; 16]);

    /// The first byte of the block's shared memory.
    fn first_byte() -> u8 {
        // SAFETY: every emulated block has shared memory.
        unsafe { *shared::<u8>() }
    }

    #[test]
    fn a_committed_group_lands_at_its_wait() {
        let src = Shared(SEVENS.0.as_ptr());
        launch((1, 1, 1), 32, 64, || {
            if thread_xy().0 == 0 {
                // SAFETY: a 16-byte aligned source and destination.
                unsafe { cp_async_16(0, src.get(), true) };
                cp_async_commit();
                assert_eq!(first_byte(), 0xa5, "the copy landed before its wait");
                cp_async_wait::<0>();
                assert_eq!(first_byte(), 7, "the wait did not land the copy");
            }
        });
    }

    #[test]
    fn tracked_copies_land_for_the_barriers_waiters() {
        const BAR: u32 = 32;
        let src = Shared(SEVENS.0.as_ptr());
        launch((1, 1, 1), 64, 64, || {
            let tid = thread_xy().0;
            // SAFETY: the barrier is 8-byte aligned in shared memory, set up
            // before anyone arrives or waits.
            unsafe {
                if tid == 0 {
                    pipeline::init(BAR, 1);
                }
                sync_threads();
                if tid == 0 {
                    cp_async_16(0, src.get(), true);
                    pipeline::arrive_on_copies(BAR);
                    assert_eq!(first_byte(), 0xa5, "the copy landed before anyone waited");
                }
                sync_threads();
                if tid == 32 {
                    pipeline::wait(BAR, 0);
                    assert_eq!(first_byte(), 7, "the waiter found the copy missing");
                }
            }
        });
    }
}
