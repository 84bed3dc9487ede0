//! Whether this thread is recording a CUDA graph (`cuda::graph`), as the
//! layers below the script see it. While a capture runs, work that a graph
//! cannot replay — waiting for the GPU, reading values back to the host,
//! copying host data in — refuses with [`Error::NotCapturable`] instead of
//! reaching the driver (which would invalidate the capture with a less
//! helpful message). The error names the script function being called,
//! which the script layer notes through [`note_call`] while a capture runs.
//!
//! **Random draws.** A kernel recorded with its Philox `(seed, stream)`
//! would draw the same numbers on every replay. So while a capture runs,
//! generators log their draws here ([`note_draw`]), and each CUDA launch of
//! a random kernel asks for its generator's *draw slot* ([`claim_draw`]):
//! two `u64`s in device memory that the kernel reads for its seed and for
//! how far to move its stream on. A replay fills the slots from the
//! generators' state then and advances them by the draws the block made
//! ([`DrawUse`]), so replays draw what eager runs would.

use super::error::{Error, Result};
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Captures running in the process (the cheap test on every script call).
static RUNNING: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
    static CALL: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
    static DRAWS: RefCell<DrawLog> = const { RefCell::new(DrawLog { base: 0, capacity: 0, uses: Vec::new() }) };
}

/// The draws of one generator during a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrawUse {
    /// The generator's identity.
    pub generator: u64,
    /// Its seed at the capture.
    pub seed: u64,
    /// Its first stream drawn in the capture.
    pub first: u64,
    /// Streams it drew in the capture.
    pub count: u64,
}

/// The capture's draw slots (device memory: `capacity` pairs of `u64` at
/// `base`) and the generators given one, in slot order.
struct DrawLog {
    base: u64,
    capacity: usize,
    uses: Vec<DrawUse>,
}

/// Marks this thread as capturing until dropped.
#[derive(Debug)]
pub struct CaptureScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl CaptureScope {
    /// Starts the capture state on this thread (an error when one is already running here).
    pub fn enter() -> Result<CaptureScope> {
        if is_capturing() {
            return Err(Error::invalid(
                "cuda::graph",
                "a capture is already running on this thread (graphs do not nest)",
            ));
        }
        CAPTURING.with(|c| c.set(true));
        RUNNING.fetch_add(1, Ordering::AcqRel);
        Ok(CaptureScope {
            _not_send: std::marker::PhantomData,
        })
    }
}

impl Drop for CaptureScope {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.set(false));
        CALL.with(|c| c.borrow_mut().take());
        take_draws();
        RUNNING.fetch_sub(1, Ordering::AcqRel);
    }
}

/// True while this thread records a CUDA graph.
#[inline]
pub fn is_capturing() -> bool {
    RUNNING.load(Ordering::Relaxed) != 0 && CAPTURING.with(|c| c.get())
}

/// Notes the script function about to run (named by [`refuse`]'s errors);
/// nearly free when no capture runs.
#[inline]
pub fn note_call(name: &Arc<str>) {
    if is_capturing() {
        CALL.with(|c| *c.borrow_mut() = Some(name.clone()));
    }
}

/// `Err(NotCapturable)` naming `what` while this thread captures, else `Ok`.
#[inline]
pub fn refuse(what: &'static str) -> Result<()> {
    if !is_capturing() {
        return Ok(());
    }
    let op = CALL
        .with(|c| c.borrow().clone())
        .map_or_else(|| "cuda::graph".to_string(), |n| n.to_string());
    Err(Error::NotCapturable { op, what })
}

/// Gives the running capture `capacity` draw slots at the device address
/// `base` (16 bytes each).
pub fn set_draw_slots(base: u64, capacity: usize) {
    DRAWS.with(|d| {
        let mut d = d.borrow_mut();
        d.base = base;
        d.capacity = capacity;
        d.uses.clear();
    });
}

/// Logs a draw of `stream` under `seed` by the generator `generator` while
/// this thread captures (nothing otherwise).
#[inline]
pub fn note_draw(generator: u64, seed: u64, stream: u64) {
    if !is_capturing() {
        return;
    }
    DRAWS.with(|d| {
        let mut d = d.borrow_mut();
        if let Some(u) = d
            .uses
            .iter_mut()
            .find(|u| u.generator == generator && u.seed == seed)
        {
            u.count = (stream + 1).saturating_sub(u.first).max(u.count);
        } else if d.uses.len() < d.capacity {
            d.uses.push(DrawUse {
                generator,
                seed,
                first: stream,
                count: 1,
            });
        }
    });
}

/// The device address of the draw slot of the generator that drew
/// `(seed, stream)` in this capture, for a random kernel's launch; 0 when
/// no capture runs (or the draw was made outside it, or the slots ran out:
/// the kernel then replays its recorded draw).
#[inline]
pub fn claim_draw(seed: u64, stream: u64) -> u64 {
    if !is_capturing() {
        return 0;
    }
    DRAWS.with(|d| {
        let d = d.borrow();
        d.uses
            .iter()
            .rposition(|u| u.seed == seed && stream >= u.first && stream - u.first < u.count)
            .map_or(0, |i| d.base + 16 * i as u64)
    })
}

/// Ends the draw log: the generators the capture drew from, in slot order.
pub fn take_draws() -> Vec<DrawUse> {
    DRAWS.with(|d| {
        let mut d = d.borrow_mut();
        d.base = 0;
        d.capacity = 0;
        std::mem::take(&mut d.uses)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_call_only_while_capturing() {
        assert!(refuse("waits for the GPU").is_ok());
        {
            let _scope = CaptureScope::enter().unwrap();
            assert!(CaptureScope::enter().is_err());
            note_call(&Arc::from("item"));
            let e = refuse("waits for the GPU").unwrap_err().to_string();
            assert!(
                e.starts_with("item: waits for the GPU inside a cuda::graph capture"),
                "{e}"
            );
        }
        assert!(!is_capturing());
        assert!(refuse("waits for the GPU").is_ok());
    }

    #[test]
    fn draws_get_their_generators_slot_while_capturing() {
        note_draw(1, 5, 0);
        assert_eq!(claim_draw(5, 0), 0, "no capture, no slot");
        let _scope = CaptureScope::enter().unwrap();
        set_draw_slots(1000, 2);
        note_draw(7, 5, 10);
        note_draw(7, 5, 11);
        note_draw(8, 9, 0);
        note_draw(9, 9, 0); // a third generator: no slot left
        assert_eq!(claim_draw(5, 11), 1000);
        assert_eq!(claim_draw(9, 0), 1016);
        assert_eq!(claim_draw(5, 12), 0, "a draw the capture did not make");
        let uses = take_draws();
        assert_eq!(
            uses,
            vec![
                DrawUse {
                    generator: 7,
                    seed: 5,
                    first: 10,
                    count: 2
                },
                DrawUse {
                    generator: 8,
                    seed: 9,
                    first: 0,
                    count: 1
                },
            ]
        );
    }
}
