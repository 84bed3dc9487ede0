//! A warp emulator for the kernels' tests on the host: it runs a kernel's
//! own Rust source with one OS thread per GPU thread, the block's shared
//! memory as a buffer, `__syncthreads` as a barrier of the block,
//! asynchronous copies that land as late as they may, and the
//! warp-wide instructions (shuffles, `ldmatrix`, `mma.sync`) as exchanges
//! among the warp's 32 threads that compute what PTX's ISA defines. It stands
//! in for [`crate::device`] and [`crate::tensor_core`] in test builds, so a
//! kernel's indexing, masking and fragment plumbing are checked against a
//! plain reference without a GPU (its numerics are checked on the GPU by
//! `kiln-check`). It is slow: small shapes only.

mod copies;
pub mod device;
pub mod pipeline;
pub mod tensor_core;
pub mod warpgroup;

use std::boxed::Box;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::vec::Vec;

/// Words a lane can post to its warp in one exchange.
const SLOT: usize = 12;

/// One block's state shared by its threads.
struct Block {
    index: (u32, u32, u32),
    shared: *mut u8,
    barrier: Barrier,
    warps: Vec<Warp>,
    /// Asynchronous copies that barriers track, until they land.
    tracked: copies::Tracked,
    /// The named barriers (`bar.sync` / `bar.arrive` with an id).
    named: NamedBarriers,
}

/// The block's 16 named barriers: each the arrivals of its current phase
/// and how many phases have completed.
#[derive(Default)]
struct NamedBarriers {
    state: std::sync::Mutex<[(u32, u64); 16]>,
    moved: std::sync::Condvar,
}

impl NamedBarriers {
    /// One thread's arrival at barrier `id` of `threads`, waiting for the
    /// phase to complete when `wait`.
    fn arrive(&self, id: u32, threads: u32, wait: bool) {
        assert!(
            id < 16 && threads.is_multiple_of(32),
            "named barrier {id} of {threads} threads"
        );
        let mut state = self.state.lock().expect("a named barrier's lock");
        let (arrived, phase) = &mut state[id as usize];
        *arrived += 1;
        let mine = *phase;
        if *arrived == threads {
            *arrived = 0;
            *phase += 1;
            self.moved.notify_all();
            return;
        }
        while wait && state[id as usize].1 == mine {
            state = self.moved.wait(state).expect("a named barrier's lock");
        }
    }
}

/// One warp's exchange: each lane's posted words, and the warp's barrier.
struct Warp {
    slots: Vec<AtomicU32>,
    barrier: Barrier,
}

impl Warp {
    /// Posts this lane's `words`, then calls `f` with a reader of any lane's
    /// posted words once every lane has posted; returns `f`'s result after
    /// every lane has read.
    fn exchange<R>(&self, lane: u32, words: &[u32], f: impl FnOnce(&dyn Fn(u32, usize) -> u32) -> R) -> R {
        for (i, &w) in words.iter().enumerate() {
            self.slots[lane as usize * SLOT + i].store(w, Ordering::Relaxed);
        }
        self.barrier.wait();
        let read = |l: u32, i: usize| self.slots[l as usize * SLOT + i].load(Ordering::Relaxed);
        let r = f(&read);
        self.barrier.wait();
        r
    }
}

std::thread_local! {
    static CONTEXT: Cell<Option<(u32, *const Block)>> = const { Cell::new(None) };
}

/// This thread's index in its block and its block.
fn context() -> (u32, &'static Block) {
    let (tid, block) = CONTEXT
        .with(|c| c.get())
        .expect("a kernel function was called outside an emulated launch");
    // SAFETY: the block outlives every thread of its launch (scoped threads).
    (tid, unsafe { &*block })
}

/// Raw pointers a test hands to an emulated kernel's threads.
#[derive(Clone, Copy)]
pub struct Shared<T>(pub T);
impl<T: Copy> Shared<T> {
    /// The pointers (a method, so that a closure captures the whole wrapper).
    pub fn get(&self) -> T {
        self.0
    }
}

// SAFETY: the emulated kernels touch device buffers as the GPU does; a kernel
// free of races on the GPU is free of them here (barriers order the rest).
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

/// Runs `kernel` on every thread of every block of `grid`, `threads` threads
/// a block (a whole number of warps) with `shared_bytes` of shared memory;
/// blocks run one after another.
pub fn launch(grid: (u32, u32, u32), threads: u32, shared_bytes: usize, kernel: impl Fn() + Sync) {
    assert!(threads.is_multiple_of(32) && threads > 0, "whole warps only");
    for z in 0..grid.2 {
        for y in 0..grid.1 {
            for x in 0..grid.0 {
                let mut memory: Vec<u128> =
                    std::vec![0xa5a5_a5a5_a5a5_a5a5_a5a5_a5a5_a5a5_a5a5; shared_bytes.div_ceil(16)];
                let block = Box::new(Block {
                    index: (x, y, z),
                    shared: memory.as_mut_ptr() as *mut u8,
                    barrier: Barrier::new(threads as usize),
                    tracked: Default::default(),
                    named: Default::default(),
                    warps: (0..threads / 32)
                        .map(|_| Warp {
                            slots: (0..32 * SLOT).map(|_| AtomicU32::new(0)).collect(),
                            barrier: Barrier::new(32),
                        })
                        .collect(),
                });
                let at = Shared(&*block as *const Block);
                let kernel = &kernel;
                std::thread::scope(|s| {
                    for tid in 0..threads {
                        std::thread::Builder::new()
                            .stack_size(1 << 20)
                            .spawn_scoped(s, move || {
                                let at = at;
                                CONTEXT.with(|c| c.set(Some((tid, at.0))));
                                kernel();
                                copies::finish();
                                CONTEXT.with(|c| c.set(None));
                            })
                            .expect("spawning an emulated GPU thread");
                    }
                });
                drop(block);
                drop(memory);
            }
        }
    }
}

#[cfg(test)]
mod attention_tests;
