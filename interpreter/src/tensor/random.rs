//! [`Generator`]: the seedable state behind `rand`, `randn`, `randint` and
//! `randperm`. Each draw takes the next stream of a counter-based Philox
//! generator, so a draw's values depend only on (seed, draw number, element
//! index): the same on every backend and every thread count.

use crate::core::capture::{self, DrawUse};
use kiln_kernels::philox;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// PyTorch's default CPU seed, so unseeded runs are reproducible too.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// Seed and draw counter of one random stream family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    draws: u64,
    /// Which generator this is (kept across reseeds; copies share it): a
    /// CUDA graph's replays find the generators its block drew from by it.
    id: u64,
}

/// The next generator identity.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Default for Generator {
    fn default() -> Self {
        Generator::new(DEFAULT_SEED)
    }
}

impl Generator {
    /// A generator starting at its first draw under `seed`.
    pub fn new(seed: u64) -> Self {
        Generator {
            seed,
            draws: 0,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Restarts under `seed` (what the script's `seed(n)` does).
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed;
        self.draws = 0;
    }

    /// The seed in use.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `(seed, stream)` of the next draw, advancing the counter.
    pub fn next_stream(&mut self) -> (u64, u64) {
        let stream = self.draws;
        self.draws = self.draws.wrapping_add(1);
        capture::note_draw(self.id, self.seed, stream);
        (self.seed, stream)
    }
}

/// A generator shared between a script engine (or a script's generator
/// object) and the CUDA graphs recorded from it, which advance it on every
/// replay. Made by [`shared`].
pub type SharedGenerator = Arc<Mutex<Generator>>;

/// Every live [`SharedGenerator`], for [`replay_draws`].
static LIVE: Mutex<Vec<Weak<Mutex<Generator>>>> = Mutex::new(Vec::new());

/// `gen`, shared and known to CUDA graphs' replays.
pub fn shared(gen: Generator) -> SharedGenerator {
    let g = Arc::new(Mutex::new(gen));
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.retain(|w| w.strong_count() > 0);
    live.push(Arc::downgrade(&g));
    g
}

/// Calls `f` on the live shared generator of identity `id`, if any.
fn with_generator<R>(id: u64, f: impl FnOnce(&mut Generator) -> R) -> Option<R> {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for g in live.iter().filter_map(Weak::upgrade) {
        let mut g = g.lock().unwrap_or_else(|p| p.into_inner());
        if g.id == id {
            return Some(f(&mut g));
        }
    }
    None
}

/// After a capture: each generator it drew from goes back to where it
/// was before (the recorded kernels did not run; the first replay makes
/// those draws).
pub fn rewind_captured(uses: &[DrawUse]) {
    for u in uses {
        with_generator(u.generator, |g| {
            if g.seed == u.seed {
                g.draws = u.first;
            }
        });
    }
}

/// Before a replay: the draw slots' values (seed, then how far the
/// streams move on) for `uses`, each generator advanced past the draws the
/// block makes, as an eager run of the block would.
pub fn replay_draws(uses: &[DrawUse]) -> Vec<u64> {
    let mut slots = Vec::with_capacity(2 * uses.len());
    for u in uses {
        let (seed, shift) = with_generator(u.generator, |g| {
            let shift = g.draws.wrapping_sub(u.first);
            g.draws = g.draws.wrapping_add(u.count);
            (g.seed, shift)
        })
        .unwrap_or((u.seed, 0));
        slots.extend([seed, shift]);
    }
    slots
}

/// A random permutation of `0..n`: Fisher–Yates on the host, step `i` (from
/// `n - 1` down to 1) swapping element `i` with element `j`, where `j` is
/// element `i` of the integer Philox draw `stream` under `seed` in `[0, i]`.
/// The host computes it for every device, so it is the same everywhere.
pub fn permutation(n: usize, seed: u64, stream: u64) -> Vec<i64> {
    let mut p: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        let j = philox::int_at(seed, stream, i as u64, 0, i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_continue_the_generators_a_graph_drew_from() {
        let g = shared(Generator::new(5));
        let id = g.lock().unwrap().id;
        // a warm-up drew streams 0..2, the recording 2..4
        g.lock().unwrap().draws = 4;
        let uses = [DrawUse {
            generator: id,
            seed: 5,
            first: 2,
            count: 2,
        }];
        rewind_captured(&uses);
        assert_eq!(g.lock().unwrap().draws, 2, "the recording drew nothing yet");
        // replay 1 draws streams 2..4 (the recorded ones), replay 2 4..6
        assert_eq!(replay_draws(&uses), vec![5, 0]);
        assert_eq!(replay_draws(&uses), vec![5, 2]);
        assert_eq!(g.lock().unwrap().draws, 6);
        // a reseed between replays: streams 0..2 under the new seed
        g.lock().unwrap().reseed(9);
        let slots = replay_draws(&uses);
        assert_eq!((slots[0], 2u64.wrapping_add(slots[1])), (9, 0));
        // a generator that is gone replays its recorded draw
        let gone = [DrawUse {
            generator: u64::MAX,
            seed: 3,
            first: 7,
            count: 1,
        }];
        assert_eq!(replay_draws(&gone), vec![3, 0]);
    }

    #[test]
    fn permutations_are_permutations_and_depend_on_the_stream() {
        for n in [0usize, 1, 2, 7, 1000] {
            let mut p = permutation(n, 5, 0);
            p.sort_unstable();
            assert_eq!(p, (0..n as i64).collect::<Vec<_>>());
        }
        assert_ne!(permutation(50, 5, 0), permutation(50, 5, 1));
        assert_eq!(permutation(50, 5, 1), permutation(50, 5, 1));
        // every position is reached: position 0 of 3 over many streams
        let mut seen = [0usize; 3];
        for s in 0..300 {
            seen[permutation(3, 9, s)[0] as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 70), "{seen:?}");
    }
}
