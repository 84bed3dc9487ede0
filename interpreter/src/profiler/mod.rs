//! The op profiler behind `profile(|| …)` and the REPL's `:profile`.
//!
//! While a [`Session`] is open on a thread, every script function call and
//! every autograd backward node that runs on that thread is a *span*
//! ([`span`]): its host start and duration, the change in GPU memory held by
//! tensors, and, once CUDA is in use, a pair of CUDA events on the stream
//! around the device work it queued. [`Session::finish`] waits for the
//! device and returns the [`Report`]: one row per name (calls, self and
//! total host and GPU time, memory), as `torch.profiler`'s
//! `key_averages()`, and a Chrome trace with a host and a GPU row.
//!
//! Event pairs time the device from the moment it reaches the first event
//! to the moment it reaches the second: when the GPU waits for the host in
//! between (a starved queue), that wait counts too. Spans nest (a function
//! that calls a script closure, `backward` and its nodes): *self* time is a
//! span's time less its children's. Without a session a span costs one
//! thread-local read.

mod report;

pub use report::{Report, Row, SortBy};

use crate::backend::cuda::timing::Marker;
use crate::backend::cuda::CudaRuntime;
use crate::core::error::{Error, Result};
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Instant;

thread_local! {
    /// True while a session records on this thread (the fast check).
    static ON: Cell<bool> = const { Cell::new(false) };
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// True while a profiling session records on this thread.
#[inline]
pub fn active() -> bool {
    ON.try_with(Cell::get).unwrap_or(false)
}

/// One span as it is recorded.
struct Open {
    name: Arc<str>,
    parent: Option<usize>,
    start: Instant,
    host_us: Option<f64>,
    mem_before: i64,
    mem_after: i64,
    gpu: (Option<Marker>, Option<Marker>),
}

/// The spans of one session.
struct Recorder {
    start: Instant,
    spans: Vec<Open>,
    /// Indices of the spans open now, innermost last.
    stack: Vec<usize>,
}

/// Bytes of GPU memory held by live tensors (0 before CUDA is used).
fn gpu_allocated() -> i64 {
    CudaRuntime::created().map_or(0, |rt| rt.memory_stats().allocated as i64)
}

/// A profiling session on the calling thread: spans are recorded from
/// [`Session::start`] until [`Session::finish`] (or the session is dropped,
/// which discards them).
#[must_use = "a session records until it is finished or dropped"]
pub struct Session {
    /// Sessions belong to the thread that started them.
    _thread: std::marker::PhantomData<*const ()>,
}

impl Session {
    /// Starts recording on this thread; an error while a session already
    /// records here (sessions do not nest).
    pub fn start() -> Result<Session> {
        if active() {
            return Err(Error::invalid(
                "profile",
                "a profile is already recording on this thread (profiles do not nest)",
            ));
        }
        RECORDER.with(|r| {
            *r.borrow_mut() = Some(Recorder {
                start: Instant::now(),
                spans: Vec::new(),
                stack: Vec::new(),
            })
        });
        ON.with(|on| on.set(true));
        Ok(Session {
            _thread: std::marker::PhantomData,
        })
    }

    /// Stops recording, waits for the device to pass every span's end, and
    /// returns what was recorded.
    pub fn finish(self) -> Result<Report> {
        let recorder = stop();
        let Some(rec) = recorder else {
            return Err(Error::invalid("profile", "the profile stopped recording"));
        };
        let wall_us = rec.start.elapsed().as_secs_f64() * 1e6;
        let timed = rec.spans.iter().any(|s| s.gpu.0.is_some());
        if timed {
            CudaRuntime::get()?.synchronize()?;
        }
        // GPU times are placed on the host's clock at the first timed span
        let origin = rec
            .spans
            .iter()
            .find_map(|s| s.gpu.0.as_ref().map(|m| (m, s.start)));
        let mut done = Vec::with_capacity(rec.spans.len());
        for s in &rec.spans {
            let start_us = (s.start - rec.start).as_secs_f64() * 1e6;
            let gpu = match (&s.gpu, origin) {
                ((Some(a), Some(b)), Some((first, first_host))) => {
                    let offset = first.elapsed_ms(a)? * 1e3;
                    let host0 = (first_host - rec.start).as_secs_f64() * 1e6;
                    Some((host0 + offset, a.elapsed_ms(b)? * 1e3))
                }
                _ => None,
            };
            done.push(report::Span {
                name: s.name.clone(),
                parent: s.parent,
                start_us,
                host_us: s.host_us.unwrap_or(wall_us - start_us),
                gpu,
                mem_bytes: s.mem_after - s.mem_before,
            });
        }
        Ok(Report::new(done, wall_us, timed))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        stop();
    }
}

/// Ends recording on this thread and takes what was recorded.
fn stop() -> Option<Recorder> {
    let _ = ON.try_with(|on| on.set(false));
    RECORDER.try_with(|r| r.borrow_mut().take()).ok().flatten()
}

/// An open span: closed when dropped.
#[must_use = "a span closes when it is dropped"]
pub struct SpanGuard {
    index: usize,
}

/// Opens a span named `name()` when a session records on this thread (the
/// name is made only then).
#[inline]
pub fn span(name: impl FnOnce() -> Arc<str>) -> Option<SpanGuard> {
    if !active() {
        return None;
    }
    open(name())
}

fn open(name: Arc<str>) -> Option<SpanGuard> {
    let mem_before = gpu_allocated();
    // the start marker goes after the work queued before this span
    let first = Marker::record().ok().flatten();
    RECORDER.with(|r| {
        let mut r = r.borrow_mut();
        let rec = r.as_mut()?;
        let index = rec.spans.len();
        rec.spans.push(Open {
            name,
            parent: rec.stack.last().copied(),
            start: Instant::now(),
            host_us: None,
            mem_before,
            mem_after: mem_before,
            gpu: (first, None),
        });
        rec.stack.push(index);
        Some(SpanGuard { index })
    })
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        let end = Instant::now();
        let mem_after = gpu_allocated();
        let marker = Marker::record().ok().flatten();
        let _ = RECORDER.try_with(|r| {
            let mut r = r.borrow_mut();
            let Some(rec) = r.as_mut() else { return };
            if let Some(pos) = rec.stack.iter().rposition(|&i| i == self.index) {
                rec.stack.truncate(pos);
            }
            if let Some(s) = rec.spans.get_mut(self.index) {
                s.host_us = Some((end - s.start).as_secs_f64() * 1e6);
                s.mem_after = mem_after;
                // a span whose start had no runtime yet (CUDA first used
                // inside it) has no device time
                if s.gpu.0.is_some() {
                    s.gpu.1 = marker;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> impl FnOnce() -> Arc<str> + '_ {
        move || Arc::from(s)
    }

    #[test]
    fn spans_nest_and_aggregate_by_name() {
        let session = Session::start().unwrap();
        for _ in 0..3 {
            let _outer = span(name("outer"));
            let _inner = span(name("inner"));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let report = session.finish().unwrap();
        let rows = report.rows(SortBy::HostTotal);
        let outer = rows.iter().find(|r| &*r.name == "outer").unwrap();
        let inner = rows.iter().find(|r| &*r.name == "inner").unwrap();
        assert_eq!((outer.calls, inner.calls), (3, 3));
        assert!(inner.host_total_us >= 6000.0, "{inner:?}");
        // the outer span's own time excludes the inner one's
        assert!(outer.host_self_us < outer.host_total_us - inner.host_total_us + 1.0);
        assert!(outer.host_total_us >= inner.host_total_us);
        assert!(!active());
    }

    #[test]
    fn sessions_do_not_nest_and_stop_when_dropped() {
        let s = Session::start().unwrap();
        assert!(Session::start().is_err());
        drop(s);
        assert!(!active());
        assert!(span(name("after")).is_none());
        let s = Session::start().unwrap();
        assert_eq!(s.finish().unwrap().rows(SortBy::HostTotal).len(), 0);
    }
}
