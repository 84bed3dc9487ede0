//! Memory budgets: a cap on the bytes of tensor storage that one engine's
//! scripts may hold at once, whatever the device.
//!
//! A [`MemoryBudget`] is an `Arc`-shared counter with a limit. While a budget
//! is *entered* on a thread ([`MemoryBudget::enter`], which the
//! [`Interpreter`](crate::Interpreter) does around every script it runs),
//! every new tensor storage made on that thread is charged to it: the
//! creation and broadcasting ops check the bytes they are about to allocate
//! before they allocate (so an impossible request never reaches the
//! allocator), and every new storage is charged when it is wrapped in a
//! tensor, failing with [`Error::MemoryLimit`] when it does not fit. The
//! storage keeps its charge and gives it back when it is dropped, whichever
//! thread drops it and whether or not a script is running then. Views share
//! their storage and cost nothing.
//!
//! The charge is the logical size of the elements (`numel * dtype size`), on
//! the CPU and on a GPU alike; memory a caching allocator keeps for reuse
//! after a tensor is freed is not charged. Tensors the host makes outside any
//! entered budget (inputs it passes in) are not charged either.

use crate::error::{Error, Result};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<MemoryBudget>>> = const { RefCell::new(None) };
}

/// A limit on the bytes of live tensor storage charged to it.
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    in_use: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes, none in use.
    pub fn new(limit: usize) -> MemoryBudget {
        MemoryBudget {
            limit,
            in_use: AtomicUsize::new(0),
        }
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held by live tensors charged to this budget.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// Charges new storage made on this thread to this budget until the
    /// returned guard is dropped (then the budget entered before, if any,
    /// is back).
    pub fn enter(self: &Arc<Self>) -> BudgetScope {
        let prev = CURRENT.try_with(|c| c.replace(Some(self.clone()))).ok().flatten();
        BudgetScope {
            prev,
            _thread: PhantomData,
        }
    }

    fn error(&self, op: &'static str, requested: usize, in_use: usize) -> Error {
        Error::MemoryLimit {
            op,
            requested,
            in_use,
            limit: self.limit,
        }
    }

    /// Takes `bytes` from the budget, or fails when they do not fit.
    fn take(self: &Arc<Self>, op: &'static str, bytes: usize) -> Result<Charge> {
        self.in_use
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .map_err(|used| self.error(op, bytes, used))?;
        Ok(Charge {
            budget: self.clone(),
            bytes,
        })
    }
}

/// The budget entered on this thread while it lives (see
/// [`MemoryBudget::enter`]); it cannot leave the thread.
#[must_use = "the budget applies only while the scope is alive"]
pub struct BudgetScope {
    prev: Option<Arc<MemoryBudget>>,
    _thread: PhantomData<*const ()>,
}

impl Drop for BudgetScope {
    fn drop(&mut self) {
        let prev = self.prev.take();
        let _gone = CURRENT.try_with(|c| *c.borrow_mut() = prev);
    }
}

impl std::fmt::Debug for BudgetScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BudgetScope")
    }
}

/// Bytes taken from a budget, given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<MemoryBudget>,
    bytes: usize,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.in_use.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

fn current() -> Option<Arc<MemoryBudget>> {
    CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
}

/// Fails when `bytes` more would not fit in the budget entered on this
/// thread (before an op allocates them).
pub(crate) fn check(op: &'static str, bytes: usize) -> Result<()> {
    match current() {
        Some(b) => {
            let used = b.in_use();
            if used.checked_add(bytes).is_some_and(|t| t <= b.limit) {
                Ok(())
            } else {
                Err(b.error(op, bytes, used))
            }
        }
        None => Ok(()),
    }
}

/// Charges `bytes` of new storage to the budget entered on this thread, if any.
pub(crate) fn charge(op: &'static str, bytes: usize) -> Result<Option<Charge>> {
    current().map(|b| b.take(op, bytes)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_are_given_back_on_drop() {
        let b = Arc::new(MemoryBudget::new(100));
        let scope = b.enter();
        let c = charge("t", 60).unwrap().unwrap();
        assert_eq!(b.in_use(), 60);
        assert!(check("t", 40).is_ok());
        let e = charge("t", 41).unwrap_err();
        assert_eq!(
            e,
            Error::MemoryLimit {
                op: "t",
                requested: 41,
                in_use: 60,
                limit: 100
            }
        );
        drop(c);
        assert_eq!(b.in_use(), 0);
        drop(scope);
        assert!(charge("t", 1000).unwrap().is_none());
    }

    #[test]
    fn scopes_nest() {
        let (a, b) = (Arc::new(MemoryBudget::new(10)), Arc::new(MemoryBudget::new(10)));
        let _sa = a.enter();
        {
            let _sb = b.enter();
            let _c = charge("t", 5).unwrap();
            assert_eq!((a.in_use(), b.in_use()), (0, 5));
        }
        let _c = charge("t", 3).unwrap();
        assert_eq!((a.in_use(), b.in_use()), (3, 0));
    }
}
