//! Per-thread "current" values entered for the length of a scope: the memory
//! budget ([`super::memory`]) and the run control ([`super::control`]) an
//! engine enters on the thread that runs its script. A `Slot` holds the
//! value; `ThreadScope::enter` sets it and returns the [`ThreadScope`] that puts the
//! previous one back when dropped (scopes nest and never leave their thread).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;
use std::thread::LocalKey;

/// A thread-local slot for the current `T` (declare it with `thread_local!`).
pub(crate) type Slot<T> = LocalKey<RefCell<Option<Arc<T>>>>;

/// The value entered in a `Slot` while this lives; the one before is back
/// when it is dropped. It cannot leave its thread.
#[must_use = "the value applies only while the scope is alive"]
pub struct ThreadScope<T: 'static> {
    slot: &'static Slot<T>,
    prev: Option<Arc<T>>,
    _thread: PhantomData<*const ()>,
}

impl<T: 'static> ThreadScope<T> {
    /// Makes `value` the current one of `slot` on this thread.
    pub(crate) fn enter(slot: &'static Slot<T>, value: Arc<T>) -> ThreadScope<T> {
        let prev = slot.try_with(|c| c.replace(Some(value))).ok().flatten();
        ThreadScope {
            slot,
            prev,
            _thread: PhantomData,
        }
    }

    /// The value that was current before this scope.
    pub(crate) fn previous(&self) -> Option<&Arc<T>> {
        self.prev.as_ref()
    }
}

impl<T: 'static> Drop for ThreadScope<T> {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _gone = self.slot.try_with(|c| *c.borrow_mut() = prev);
    }
}

impl<T: 'static> std::fmt::Debug for ThreadScope<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThreadScope<{}>", std::any::type_name::<T>())
    }
}

/// The current value of `slot` on this thread.
pub(crate) fn current<T: 'static>(slot: &'static Slot<T>) -> Option<Arc<T>> {
    slot.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// `f` of the current value of `slot` (without cloning it), `None` as its
/// argument outside any scope; `None` as the result only while the thread
/// is being torn down.
pub(crate) fn with_current<T: 'static, R>(
    slot: &'static Slot<T>,
    f: impl FnOnce(Option<&T>) -> R,
) -> Option<R> {
    slot.try_with(|c| f(c.borrow().as_deref())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static NUMBER: RefCell<Option<Arc<u32>>> = const { RefCell::new(None) };
    }

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(current(&NUMBER), None);
        let outer = ThreadScope::enter(&NUMBER, Arc::new(1));
        {
            let inner = ThreadScope::enter(&NUMBER, Arc::new(2));
            assert_eq!(inner.previous().map(|p| **p), Some(1));
            assert_eq!(with_current(&NUMBER, |n| n.copied()), Some(Some(2)));
        }
        assert_eq!(current(&NUMBER).map(|n| *n), Some(1));
        drop(outer);
        assert_eq!(with_current(&NUMBER, |n| n.copied()), Some(None));
    }
}
