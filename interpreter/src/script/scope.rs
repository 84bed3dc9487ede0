//! The thread state that belongs to an engine: its grad mode and its TF32
//! setting (`Modes`), and the [`RunScope`] that
//! [`Runtime::enter`](super::Runtime::enter) returns.
//!
//! Grad mode and TF32 are thread-local switches that the tensor layer reads
//! on its fast paths ([`crate::tensor::autograd::is_grad_enabled`],
//! [`crate::backend::cuda::blas::allow_tf32`]). A script may flip them
//! (`set_grad_enabled(false)`, `cuda::set_allow_tf32(true)`); for that not to
//! leak into the next engine run on the same thread, or into the host, each
//! engine keeps its own copy: entering a run saves the thread's switches and
//! applies the engine's, leaving it stores the engine's current switches back
//! into the engine and restores the thread's.

use crate::backend::cuda::blas;
use crate::backend::cuda::StreamScope;
use crate::core::control::ControlScope;
use crate::core::BudgetScope;
use crate::tensor::autograd;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Engine ids start at 1; 0 is "no engine entered".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The id of the engine whose [`RunScope`] is innermost on this thread.
    static ACTIVE: Cell<u64> = const { Cell::new(0) };
}

/// An engine's grad mode and TF32 setting while none of its runs is entered
/// on the thread asking; while one is, the thread's switches are the live
/// values and these accessors read and write those.
#[derive(Debug)]
pub(crate) struct Modes {
    id: u64,
    grad_enabled: AtomicBool,
    allow_tf32: AtomicBool,
}

impl Default for Modes {
    /// Grad mode on and TF32 off, as in a fresh thread.
    fn default() -> Self {
        Modes {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            grad_enabled: AtomicBool::new(true),
            allow_tf32: AtomicBool::new(false),
        }
    }
}

impl Modes {
    /// True when this engine's run is the innermost one entered on this thread.
    fn is_active(&self) -> bool {
        ACTIVE.with(Cell::get) == self.id
    }

    pub(crate) fn grad_enabled(&self) -> bool {
        if self.is_active() {
            autograd::is_grad_enabled()
        } else {
            self.grad_enabled.load(Ordering::Relaxed)
        }
    }

    pub(crate) fn set_grad_enabled(&self, enabled: bool) {
        if self.is_active() {
            autograd::set_grad_enabled(enabled);
        } else {
            self.grad_enabled.store(enabled, Ordering::Relaxed);
        }
    }

    pub(crate) fn allow_tf32(&self) -> bool {
        if self.is_active() {
            blas::allow_tf32()
        } else {
            self.allow_tf32.load(Ordering::Relaxed)
        }
    }

    pub(crate) fn set_allow_tf32(&self, allow: bool) {
        if self.is_active() {
            blas::set_allow_tf32(allow);
        } else {
            self.allow_tf32.store(allow, Ordering::Relaxed);
        }
    }
}

/// The thread's switches from before a run was entered.
#[derive(Debug)]
struct Saved {
    active: u64,
    grad_enabled: bool,
    allow_tf32: bool,
}

/// What [`Runtime::enter`](super::Runtime::enter) sets up on a thread while
/// a script of that runtime runs there: its memory budget, its CUDA stream,
/// its grad mode and TF32 setting. Dropping it stores the engine's grad mode
/// and TF32 setting back into the runtime and restores the thread's own.
///
/// Scopes nest (an engine may run inside a host function called by another
/// engine's script) and must be dropped in the reverse order of entering, on
/// the thread that entered them. Entering the engine whose run is already the
/// innermost one on the thread keeps the live switches as they are.
#[derive(Debug)]
#[must_use = "the runtime applies only while the scope is alive"]
pub struct RunScope {
    modes: Arc<Modes>,
    /// `None` when the same engine was already entered on this thread.
    saved: Option<Saved>,
    _control: Option<ControlScope>,
    _budget: Option<BudgetScope>,
    _stream: Option<StreamScope>,
    _thread: PhantomData<*const ()>,
}

impl RunScope {
    /// Applies `modes` to this thread (the budget and stream scopes are
    /// entered by the caller and dropped after the switches are restored).
    pub(crate) fn enter(
        modes: &Arc<Modes>,
        control: Option<ControlScope>,
        budget: Option<BudgetScope>,
        stream: Option<StreamScope>,
    ) -> RunScope {
        let previous = ACTIVE.with(|a| a.replace(modes.id));
        let saved = (previous != modes.id).then(|| Saved {
            active: previous,
            grad_enabled: autograd::set_grad_enabled(modes.grad_enabled.load(Ordering::Relaxed)),
            allow_tf32: blas::set_allow_tf32(modes.allow_tf32.load(Ordering::Relaxed)),
        });
        RunScope {
            modes: modes.clone(),
            saved,
            _control: control,
            _budget: budget,
            _stream: stream,
            _thread: PhantomData,
        }
    }
}

impl Drop for RunScope {
    fn drop(&mut self) {
        let Some(saved) = self.saved.take() else {
            return;
        };
        let grad = autograd::set_grad_enabled(saved.grad_enabled);
        let tf32 = blas::set_allow_tf32(saved.allow_tf32);
        self.modes.grad_enabled.store(grad, Ordering::Relaxed);
        self.modes.allow_tf32.store(tf32, Ordering::Relaxed);
        ACTIVE.with(|a| a.set(saved.active));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enter(m: &Arc<Modes>) -> RunScope {
        RunScope::enter(m, None, None, None)
    }

    #[test]
    fn each_engine_keeps_its_own_switches() {
        let (a, b) = (Arc::new(Modes::default()), Arc::new(Modes::default()));
        assert!(autograd::is_grad_enabled() && !blas::allow_tf32());
        {
            let _a = enter(&a);
            autograd::set_grad_enabled(false);
            blas::set_allow_tf32(true);
            assert!(!a.grad_enabled() && a.allow_tf32());
            // b is not entered: its stored switches
            assert!(b.grad_enabled() && !b.allow_tf32());
            {
                let _b = enter(&b);
                assert!(autograd::is_grad_enabled() && !blas::allow_tf32());
                autograd::set_grad_enabled(false);
            }
            // back in a, with a's switches
            assert!(!autograd::is_grad_enabled() && blas::allow_tf32());
            assert!(!b.grad_enabled());
        }
        // the thread's switches came back
        assert!(autograd::is_grad_enabled() && !blas::allow_tf32());
        assert!(!a.grad_enabled() && a.allow_tf32());
        {
            let _a = enter(&a);
            assert!(!autograd::is_grad_enabled() && blas::allow_tf32());
            // entering the same engine again keeps the live switches
            autograd::set_grad_enabled(true);
            {
                let _again = enter(&a);
                assert!(autograd::is_grad_enabled());
                a.set_allow_tf32(false);
            }
            assert!(autograd::is_grad_enabled() && !blas::allow_tf32());
        }
        assert!(a.grad_enabled() && !a.allow_tf32());
        assert!(autograd::is_grad_enabled() && !blas::allow_tf32());
    }
}
