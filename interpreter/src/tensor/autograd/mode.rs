//! Grad mode: a thread-local switch that says whether ops record their
//! backward ([`is_grad_enabled`], [`set_grad_enabled`]), with the scoped
//! guards [`NoGradGuard`] and [`GradModeGuard`] and the closure form
//! [`no_grad`].

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True when ops record their backward on this thread (the default).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Turns grad mode on or off for this thread; returns the previous mode.
pub fn set_grad_enabled(enabled: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(enabled))
}

/// Grad mode off until dropped (then the previous mode comes back, also on
/// an early return or an error).
pub struct NoGradGuard {
    prev: bool,
}

impl NoGradGuard {
    /// Turns grad mode off for this thread.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NoGradGuard {
            prev: set_grad_enabled(false),
        }
    }
}

impl Drop for NoGradGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}

/// Grad mode set to a given value until dropped (then the previous mode
/// comes back, also on an early return or an error).
pub struct GradModeGuard {
    prev: bool,
}

impl GradModeGuard {
    /// Sets grad mode to `enabled` for this thread.
    pub fn new(enabled: bool) -> Self {
        GradModeGuard {
            prev: set_grad_enabled(enabled),
        }
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}

/// Runs `f` with grad mode off.
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoGradGuard::new();
    f()
}
