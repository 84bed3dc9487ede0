//! Stopping native work: the [`RunControl`] of an engine (an interrupt flag
//! and an optional deadline) and the [`Stop`] token that long CPU loops check
//! every chunk, so that a single op over a huge (or expanded) tensor can be
//! stopped within milliseconds rather than hours.
//!
//! An engine enters its control on the thread that runs a script
//! ([`RunControl::enter`], done by `Runtime::enter`); ops capture it as a
//! [`Stop`] on that thread ([`Stop::current`]) and may check it from any
//! worker thread. Every backend dispatch checks it once before queuing work,
//! so on CUDA an interrupted run queues nothing new (work already queued on
//! the GPU finishes). Outside an entered control nothing is ever stopped and
//! a check costs one thread-local read.

use super::thread_scope::{self, ThreadScope};
use crate::core::error::{Error, Result};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Nanoseconds since the first control of this process started a run.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<RunControl>>> = const { RefCell::new(None) };
}

/// What may stop an engine's run: an interrupt flag another thread can set
/// and a wall-clock limit on each run.
#[derive(Debug, Default)]
pub struct RunControl {
    interrupted: AtomicBool,
    max_duration: Option<Duration>,
    /// When the run in progress must end, in [`now_ns`] time; 0 for never.
    deadline_ns: AtomicU64,
}

impl RunControl {
    /// A control whose runs may last at most `max_duration` (no limit: `None`).
    pub fn new(max_duration: Option<Duration>) -> RunControl {
        RunControl {
            max_duration,
            ..RunControl::default()
        }
    }

    /// Asks the run in progress to stop: Rhai code stops at its next
    /// operation and native ops at their next chunk, with a `Terminated`
    /// error. The flag is cleared when the next run starts.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
    }

    /// True once [`RunControl::interrupt`] was called during this run.
    pub fn is_interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// The wall-clock limit of one run.
    pub fn max_duration(&self) -> Option<Duration> {
        self.max_duration
    }

    /// Starts a run on this thread: clears the interrupt flag, starts the
    /// run's clock and makes this control the one ops check until the
    /// returned scope is dropped (nested entries keep the outer run's clock).
    pub fn enter(self: &Arc<Self>) -> ControlScope {
        let scope = ThreadScope::enter(&CURRENT, self.clone());
        let outer = scope.previous().is_some_and(|p| Arc::ptr_eq(p, self));
        if !outer {
            self.interrupted.store(false, Ordering::SeqCst);
            let deadline = self.max_duration.map_or(0, |m| {
                let ns = u64::try_from(m.as_nanos()).unwrap_or(u64::MAX);
                now_ns().saturating_add(ns).max(1)
            });
            self.deadline_ns.store(deadline, Ordering::SeqCst);
        }
        scope
    }

    /// True when the run in progress has used up its time limit.
    pub fn out_of_time(&self) -> bool {
        let deadline = self.deadline_ns.load(Ordering::Relaxed);
        deadline != 0 && now_ns() >= deadline
    }

    /// True when the run must stop now (interrupted or out of time).
    pub fn must_stop(&self) -> bool {
        self.is_interrupted() || self.out_of_time()
    }

    /// Why the run must stop now, if it must.
    pub fn stop_reason(&self) -> Option<String> {
        if self.is_interrupted() {
            return Some("interrupted".into());
        }
        self.out_of_time().then(|| {
            let limit = self.max_duration.unwrap_or_default();
            format!("the run exceeded its time limit (max_duration = {limit:?})")
        })
    }

    fn check(&self, op: &'static str) -> Result<()> {
        match self.stop_reason() {
            Some(why) => Err(Error::Terminated { op, why }),
            None => Ok(()),
        }
    }
}

/// The control entered on this thread while it lives (see [`RunControl::enter`]).
pub type ControlScope = ThreadScope<RunControl>;

thread_local! {
    /// Elements of work this thread did since it last looked at its run's control.
    static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A handle on the control of the run that started an op, made on the
/// thread that runs the script and shared by reference with the op's worker
/// threads; once one check finds that the run must stop, every later
/// [`Stop::tick`] of this op says so at once.
#[derive(Debug, Default)]
pub struct Stop {
    ctrl: Option<Arc<RunControl>>,
    halted: AtomicBool,
}

impl Stop {
    /// The control entered on this thread (none: never stops).
    pub fn current() -> Stop {
        Stop {
            ctrl: thread_scope::current(&CURRENT),
            halted: AtomicBool::new(false),
        }
    }

    /// Fails with [`Error::Terminated`] naming `op` when the run must stop.
    pub fn check(&self, op: &'static str) -> Result<()> {
        match &self.ctrl {
            Some(c) => c.check(op),
            None => Ok(()),
        }
    }

    /// Counts `n` elements of work about to be done on this thread and says
    /// whether the op must stop instead; the control itself is looked at
    /// once every [`CHECK_EVERY`] elements, so this is cheap in inner loops.
    pub fn tick(&self, n: usize) -> bool {
        let Some(ctrl) = &self.ctrl else {
            return false;
        };
        if self.halted.load(Ordering::Relaxed) {
            return true;
        }
        let done = WORK.with(|w| {
            let v = w.get().saturating_add(n);
            w.set(if v >= CHECK_EVERY { 0 } else { v });
            v
        });
        if done >= CHECK_EVERY && ctrl.must_stop() {
            self.halted.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// After an op's loops: fails when a [`Stop::tick`] stopped them (or the
    /// run must stop now), so a partial result is never returned.
    pub fn finish(&self, op: &'static str) -> Result<()> {
        match &self.ctrl {
            Some(c) if self.halted.load(Ordering::Relaxed) => Err(Error::Terminated {
                op,
                why: c.stop_reason().unwrap_or_else(|| "interrupted".into()),
            }),
            _ => self.check(op),
        }
    }
}

/// Fails when the run entered on this thread must stop (before an op queues work).
pub fn check(op: &'static str) -> Result<()> {
    thread_scope::with_current(&CURRENT, |ctrl| match ctrl {
        Some(c) => c.check(op),
        None => Ok(()),
    })
    .unwrap_or(Ok(()))
}

/// Elements of work a CPU loop does between two checks of its [`Stop`]
/// (a few milliseconds at most).
pub const CHECK_EVERY: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupts_reach_ops_on_the_entered_thread() {
        let c = Arc::new(RunControl::new(None));
        assert!(check("t").is_ok());
        let scope = c.enter();
        let stop = Stop::current();
        assert!(stop.check("t").is_ok());
        c.interrupt();
        let e = check("sum").unwrap_err();
        assert!(matches!(e, Error::Terminated { op: "sum", .. }), "{e}");
        let from_worker = std::thread::spawn(move || stop.check("sum").is_err())
            .join()
            .unwrap();
        assert!(from_worker);
        drop(scope);
        assert!(check("t").is_ok(), "no control outside the run");
        let _again = c.enter();
        assert!(check("t").is_ok(), "a new run clears the flag");
    }

    #[test]
    fn ticks_stop_long_loops() {
        let c = Arc::new(RunControl::new(None));
        let _s = c.enter();
        let stop = Stop::current();
        assert!(!stop.tick(CHECK_EVERY));
        c.interrupt();
        let mut done = 0usize;
        while !stop.tick(1000) {
            done += 1000;
            assert!(done <= 2 * CHECK_EVERY, "the tick never stopped the loop");
        }
        assert!(stop.tick(1), "stopping is sticky");
        assert!(stop.finish("sum").is_err());
        assert!(!Stop::default().tick(usize::MAX));
    }

    #[test]
    fn deadlines_stop_runs() {
        let c = Arc::new(RunControl::new(Some(Duration::from_millis(0))));
        let _s = c.enter();
        let e = check("matmul").unwrap_err();
        assert!(e.to_string().contains("time limit"), "{e}");
    }
}
