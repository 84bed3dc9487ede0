//! [`Generator`]: the seedable state behind `rand`, `randn` and `randint`.
//! Each draw takes the next stream of a counter-based Philox generator, so a
//! draw's values depend only on (seed, draw number, element index): the same
//! on every backend and every thread count.

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
