//! [`Generator`]: the seedable state behind `rand`, `randn`, `randint` and
//! `randperm`. Each draw takes the next stream of a counter-based Philox
//! generator, so a draw's values depend only on (seed, draw number, element
//! index): the same on every backend and every thread count.

use kiln_kernels::philox;

/// PyTorch's default CPU seed, so unseeded runs are reproducible too.
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// Seed and draw counter of one random stream family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    draws: u64,
}

impl Default for Generator {
    fn default() -> Self {
        Generator::new(DEFAULT_SEED)
    }
}

impl Generator {
    /// A generator starting at its first draw under `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { seed, draws: 0 }
    }

    /// Restarts under `seed` (what the script's `seed(n)` does).
    pub fn reseed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }

    /// The seed in use.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// `(seed, stream)` of the next draw, advancing the counter.
    pub fn next_stream(&mut self) -> (u64, u64) {
        let stream = self.draws;
        self.draws = self.draws.wrapping_add(1);
        (self.seed, stream)
    }
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
