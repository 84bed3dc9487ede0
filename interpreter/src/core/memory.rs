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
//! thread drops it and whether or not a script is running then. Every tensor
//! handle made in a budget (a view included, which shares its storage) is
//! charged its own metadata too (`Tensor::handle_bytes`: the handle and its
//! shape and strides), so that many views cannot hold memory unseen.
//!
//! The charge is the logical size of the elements (`numel * dtype size`), on
//! the CPU and on a GPU alike; memory a caching allocator keeps for reuse
//! after a tensor is freed is not charged. Tensors the host makes outside any
//! entered budget (inputs it passes in) are not charged either.
//!
//! Below any budget, [`check_bytes`] is the one gate every allocation passes
//! first: a request larger than the machine's memory or than what this
//! process's address-space limit (`ulimit -v`) still allows is an
//! [`Error::OutOfMemory`] naming the op and the bytes, never an abort of the
//! host process. `try_zeroed_vec` and `try_vec_with_capacity` allocate host
//! memory fallibly after that gate.

use super::thread_scope::{self, ThreadScope};
use crate::core::error::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

thread_local! {
    static CURRENT: RefCell<Option<Arc<MemoryBudget>>> = const { RefCell::new(None) };
    /// The op that last passed the allocation gate on this thread, named by
    /// device allocators in their out-of-memory errors.
    static CURRENT_OP: std::cell::Cell<&'static str> = const { std::cell::Cell::new("allocate") };
}

/// The op that last passed [`check_bytes`] on this thread (for errors of
/// allocators that are not told the op).
pub(crate) fn current_op() -> &'static str {
    CURRENT_OP.try_with(|c| c.get()).unwrap_or("allocate")
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
        ThreadScope::enter(&CURRENT, self.clone())
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
pub type BudgetScope = ThreadScope<MemoryBudget>;

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
    thread_scope::current(&CURRENT)
}

/// Fails when `bytes` more would not fit in the budget entered on this
/// thread (before an op allocates them).
pub(crate) fn check(op: &'static str, bytes: usize) -> Result<()> {
    thread_scope::with_current(&CURRENT, |budget| match budget {
        Some(b) => {
            let used = b.in_use();
            if used.checked_add(bytes).is_some_and(|t| t <= b.limit) {
                Ok(())
            } else {
                Err(b.error(op, bytes, used))
            }
        }
        None => Ok(()),
    })
    .unwrap_or(Ok(()))
}

/// Charges `bytes` to the budget entered on this thread, if any, even past
/// its limit: for what an op that cannot fail makes (the handles of
/// `detach`, autograd results); the next allocation then fails.
pub(crate) fn charge_unchecked(bytes: usize) -> Option<Charge> {
    current().map(|budget| {
        budget.in_use.fetch_add(bytes, Ordering::Relaxed);
        Charge { budget, bytes }
    })
}

/// Charges `bytes` of new storage to the budget entered on this thread, if any.
pub(crate) fn charge(op: &'static str, bytes: usize) -> Result<Option<Charge>> {
    current().map(|b| b.take(op, bytes)).transpose()
}

/// Requests at least this large look at the process's address-space limit
/// (reading `/proc`); smaller ones only at the machine's memory.
const LARGE_REQUEST: usize = 64 << 20;

/// The machine's physical memory in bytes where it can be read.
fn machine_memory() -> usize {
    static TOTAL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *TOTAL.get_or_init(|| {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
                let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
                kb.checked_mul(1024)
            })
            .unwrap_or(usize::MAX / 2)
    })
}

/// Bytes this process may still map under its address-space limit
/// (`RLIMIT_AS`), or `None` when there is no limit or it cannot be read.
#[cfg(target_os = "linux")]
fn address_space_left() -> Option<usize> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we pass and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    let limit = usize::try_from(lim.rlim_cur).ok()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf only reads a system constant.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    Some(limit.saturating_sub(pages.saturating_mul(page)))
}

#[cfg(not(target_os = "linux"))]
fn address_space_left() -> Option<usize> {
    None
}

/// Fails unless `bytes` more of host memory could be had: not more than
/// the machine's memory nor than the address space left to this process.
pub(crate) fn check_host_bytes(op: &'static str, bytes: usize) -> Result<()> {
    let oom = |why: String| Error::OutOfMemory {
        op,
        bytes,
        device: "cpu".into(),
        why,
    };
    let total = machine_memory();
    if bytes > total {
        return Err(oom(format!("the machine has {total} bytes of memory")));
    }
    if bytes >= LARGE_REQUEST {
        if let Some(left) = address_space_left() {
            if bytes > left {
                return Err(oom(format!(
                    "the process's address-space limit leaves {left} bytes"
                )));
            }
        }
    }
    Ok(())
}

/// The gate before every new tensor storage: fails when `bytes` would not fit
/// in the budget entered on this thread, or (for host memory) could not be
/// allocated at all. A device allocator reports its own out-of-memory.
pub fn check_bytes(op: &'static str, bytes: usize, on_host: bool) -> Result<()> {
    let _ = CURRENT_OP.try_with(|c| c.set(op));
    check(op, bytes)?;
    if on_host {
        check_host_bytes(op, bytes)?;
    }
    Ok(())
}

/// A host vector of `n` zero-valued `T` (all-zero bytes), allocated
/// fallibly: an allocator failure is an [`Error::OutOfMemory`], not an abort.
pub(crate) fn try_zeroed_vec<T: zeroable::Zeroable>(op: &'static str, n: usize) -> Result<Vec<T>> {
    let bytes = n
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::OutOfMemory {
            op,
            bytes: usize::MAX,
            device: "cpu".into(),
            why: format!("{n} elements overflow the address space"),
        })?;
    check_host_bytes(op, bytes)?;
    if n == 0 || bytes == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<T>(n).map_err(|e| Error::OutOfMemory {
        op,
        bytes,
        device: "cpu".into(),
        why: e.to_string(),
    })?;
    // SAFETY: `layout` has a non-zero size (checked above); `alloc_zeroed`
    // returns null on failure, which is handled, or memory for `n` values of
    // `T` with T's alignment, all bytes zero, which `Zeroable` says is a valid
    // `T`. The Vec takes ownership with the same layout (capacity `n`).
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            return Err(Error::OutOfMemory {
                op,
                bytes,
                device: "cpu".into(),
                why: "the allocator refused".into(),
            });
        }
        Ok(Vec::from_raw_parts(ptr, n, n))
    }
}

/// An empty host vector with room for `n` values, allocated fallibly.
pub(crate) fn try_vec_with_capacity<T>(op: &'static str, n: usize) -> Result<Vec<T>> {
    let bytes = n.saturating_mul(std::mem::size_of::<T>());
    check_host_bytes(op, bytes)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| Error::OutOfMemory {
        op,
        bytes,
        device: "cpu".into(),
        why: e.to_string(),
    })?;
    Ok(v)
}

/// Types whose all-zero bit pattern is a valid value (the tensor element types).
pub(crate) mod zeroable {
    /// A type for which all-zero bytes are a valid value.
    ///
    /// # Safety
    /// Implement only for types where every field is valid when all its bytes are zero.
    pub unsafe trait Zeroable {}
    // SAFETY: zero is `false`, integer 0, float +0.0.
    unsafe impl Zeroable for bool {}
    // SAFETY: as above.
    unsafe impl Zeroable for u8 {}
    // SAFETY: as above.
    unsafe impl Zeroable for i32 {}
    // SAFETY: as above.
    unsafe impl Zeroable for i64 {}
    // SAFETY: as above.
    unsafe impl Zeroable for f32 {}
    // SAFETY: as above.
    unsafe impl Zeroable for f64 {}
    // SAFETY: half's types are plain u16 bit patterns; zero is +0.0.
    unsafe impl Zeroable for half::f16 {}
    // SAFETY: as above.
    unsafe impl Zeroable for half::bf16 {}
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
    fn impossible_host_requests_are_errors() {
        let e = try_zeroed_vec::<f64>("t", usize::MAX / 4).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { op: "t", .. }), "{e}");
        let e = try_vec_with_capacity::<u8>("t", usize::MAX / 2).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert_eq!(try_zeroed_vec::<f32>("t", 3).unwrap(), vec![0.0; 3]);
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
