//! The stages of a producer/consumer pipeline in shared memory (sm_90):
//! `mbarrier` objects, each an 8-byte word in shared memory that counts
//! arrivals and flips its phase when the expected number has arrived.
//!
//! A stage has two: *full*, which the producer's copies arrive on when they
//! land (`cp.async.mbarrier.arrive.noinc`), and *empty*, which the
//! consumers arrive on once they have finished reading it. Use `n` of a
//! stage (`n = 0, 1, …`) is the barrier's phase `n`; [`wait`] for its
//! parity `n & 1` returns once that phase has completed.

use core::arch::asm;

/// Sets up the barrier at shared address `bar` (8-byte aligned) to expect
/// `count` arrivals a phase.
///
/// # Safety
/// One thread does it before any other thread touches the barrier, and a
/// block barrier separates the two.
#[inline(always)]
pub unsafe fn init(bar: u32, count: u32) {
    asm!("mbarrier.init.shared::cta.b64 [{b}], {n};", b = in(reg32) bar, n = in(reg32) count, options(nostack));
}

/// One arrival on the barrier at `bar`: this thread's earlier memory
/// accesses happen before any thread's return from [`wait`] on this phase.
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
pub unsafe fn arrive(bar: u32) {
    asm!(
        "{{ .reg .b64 state; mbarrier.arrive.shared::cta.b64 state, [{b}]; }}",
        b = in(reg32) bar,
        options(nostack)
    );
}

/// [`arrive`] where `arrives` holds (without a branch: one lane of a warp
/// arrives for the warp while products may be in flight).
///
/// # Safety
/// As for [`arrive`].
#[inline(always)]
pub unsafe fn arrive_if(bar: u32, arrives: bool) {
    asm!(
        "{{ .reg .pred p; .reg .b64 state; setp.ne.u32 p, {a}, 0; @p mbarrier.arrive.shared::cta.b64 state, [{b}]; }}",
        a = in(reg32) arrives as u32,
        b = in(reg32) bar,
        options(nostack)
    );
}

/// One arrival on the barrier at `bar` once every `cp.async` copy this
/// thread has started has landed (the barrier's count includes it).
///
/// # Safety
/// `bar` is an initialised barrier.
#[inline(always)]
pub unsafe fn arrive_on_copies(bar: u32) {
    asm!("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [{b}];", b = in(reg32) bar, options(nostack));
}

/// Waits until the phase of parity `parity` of the barrier at `bar` has
/// completed.
///
/// # Safety
/// `bar` is an initialised barrier whose phase will complete.
#[inline(always)]
pub unsafe fn wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        asm!(
            "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {p}; selp.u32 {d}, 1, 0, p; }}",
            b = in(reg32) bar,
            p = in(reg32) parity,
            d = out(reg32) done,
            options(nostack)
        );
        if done != 0 {
            break;
        }
    }
}
