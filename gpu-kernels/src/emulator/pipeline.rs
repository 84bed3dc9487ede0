//! The emulated [`crate::pipeline`]: each barrier an atomic word in the
//! block's shared memory (pending arrivals, expected arrivals, phase), its
//! waits spinning as the GPU's do. An arrival on copies comes with their
//! landing, once a thread waits on the barrier ([`super::copies`]).

use super::context;
use core::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The phase bit of a barrier word (pending arrivals in bits 0–31,
/// expected ones in 32–62).
const PHASE: u64 = 1 << 63;

/// The barrier at shared address `bar`.
fn word(bar: u32) -> &'static AtomicU64 {
    assert!(bar.is_multiple_of(8), "mbarriers are 8-byte aligned");
    // SAFETY: the block's shared memory outlives its threads, and is 16-byte
    // aligned.
    unsafe { &*(context().1.shared.add(bar as usize) as *const AtomicU64) }
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn init(bar: u32, count: u32) {
    word(bar).store((count as u64) << 32 | count as u64, Ordering::SeqCst);
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn arrive(bar: u32) {
    let w = word(bar);
    let mut now = w.load(Ordering::SeqCst);
    loop {
        let (pending, expected) = (now & 0xffff_ffff, (now >> 32) & 0x7fff_ffff);
        assert!(pending > 0, "an arrival on a barrier expecting none");
        let next = if pending == 1 {
            ((now & PHASE) ^ PHASE) | expected << 32 | expected
        } else {
            now - 1
        };
        match w.compare_exchange(now, next, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return,
            Err(seen) => now = seen,
        }
    }
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn arrive_if(bar: u32, arrives: bool) {
    if arrives {
        arrive(bar)
    }
}

/// See the real module: the arrival comes once the copies land
/// ([`super::copies::land_for`]).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn arrive_on_copies(bar: u32) {
    super::copies::track(bar)
}

/// See the real module; a wait that lasts a minute is a deadlock.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn wait(bar: u32, parity: u32) {
    let start = Instant::now();
    while (word(bar).load(Ordering::SeqCst) >> 63) as u32 == parity {
        super::copies::land_for(bar);
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "a barrier phase never completed"
        );
        std::thread::yield_now();
    }
}
