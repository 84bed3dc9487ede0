//! Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11) and the
//! maps from its words to uniform, normal and integer values. Element `i` of a
//! draw depends only on (seed, stream, i), so the CPU and the GPU produce the
//! same numbers for the same seed, in any order and on any number of threads.

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = (a as u64) * (b as u64);
    ((p >> 32) as u32, p as u32)
}

/// Ten rounds of Philox4x32 on `counter` with `key`.
#[inline]
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    let mut round = 0;
    while round < 10 {
        let (hi0, lo0) = mulhilo(M0, c[0]);
        let (hi1, lo1) = mulhilo(M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
        k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        round += 1;
    }
    c
}

/// The four words of block `block` of stream `stream` under `seed`.
#[inline]
pub fn block(seed: u64, stream: u64, block: u64) -> [u32; 4] {
    philox4x32(
        [
            block as u32,
            (block >> 32) as u32,
            stream as u32,
            (stream >> 32) as u32,
        ],
        [seed as u32, (seed >> 32) as u32],
    )
}

/// A uniform float in `[0, 1)` from one word (24 random bits).
#[inline]
pub fn uniform_f32(w: u32) -> f32 {
    (w >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// A uniform double in `[0, 1)` from two words (53 random bits).
#[inline]
pub fn uniform_f64(hi: u32, lo: u32) -> f64 {
    let bits = (((hi as u64) << 32) | lo as u64) >> 11;
    bits as f64 * (1.0 / 9_007_199_254_740_992.0)
}

/// Word `k` (0..4) of `w`, picked by selects: a run-time index into the
/// array would put it in the GPU's local memory.
#[inline(always)]
pub fn word(w: [u32; 4], k: u64) -> u32 {
    let lo = if k & 1 == 0 { w[0] } else { w[1] };
    let hi = if k & 1 == 0 { w[2] } else { w[3] };
    if k & 2 == 0 {
        lo
    } else {
        hi
    }
}

/// Element `i` of a uniform draw: word `i % 4` of block `i / 4`.
#[inline]
pub fn uniform_at(seed: u64, stream: u64, i: u64) -> f32 {
    uniform_f32(word(block(seed, stream, i / 4), i % 4))
}

/// Element `i` of a uniform f64 draw: words `2(i%2)`, `2(i%2)+1` of block `i / 2`.
#[inline]
pub fn uniform_f64_at(seed: u64, stream: u64, i: u64) -> f64 {
    let w = block(seed, stream, i / 2);
    let j = 2 * (i % 2) as usize;
    uniform_f64(w[j], w[j + 1])
}

/// Element `i` of a standard normal draw (Box–Muller on two words of block `i / 2`),
/// computed in double precision so that every target rounds it the same way.
#[inline]
pub fn normal_at(seed: u64, stream: u64, i: u64) -> f64 {
    let w = block(seed, stream, i / 2);
    let j = 2 * (i % 2) as usize;
    // u1 in (0, 1] so that ln(u1) is finite.
    let u1 = 1.0 - uniform_f32(w[j]) as f64;
    let u2 = uniform_f32(w[j + 1]) as f64;
    crate::math::sqrt_f64(-2.0 * libm::log(u1)) * libm::cos(core::f64::consts::TAU * u2)
}

/// Element `i` of an integer draw in `[low, low + range)` (`range > 0`).
#[inline]
pub fn int_at(seed: u64, stream: u64, i: u64, low: i64, range: u64) -> i64 {
    let w = block(seed, stream, i / 2);
    let j = 2 * (i % 2) as usize;
    let r = ((w[j] as u64) << 32) | w[j + 1] as u64;
    low.wrapping_add((r % range) as i64)
}

/// Dropout's draw for elements `4q .. 4q + 4` (one Philox block): element
/// `i` is kept when its uniform value ([`uniform_at`]) is at least `p`.
#[inline(always)]
pub fn keep4(seed: u64, stream: u64, q: u64, p: f32) -> [bool; 4] {
    let w = block(seed, stream, q);
    [
        uniform_f32(w[0]) >= p,
        uniform_f32(w[1]) >= p,
        uniform_f32(w[2]) >= p,
        uniform_f32(w[3]) >= p,
    ]
}

/// Dropout's draw for element `i` of f64 data: kept when its uniform f64
/// value ([`uniform_f64_at`]) is at least `p`.
#[inline]
pub fn keep_f64(seed: u64, stream: u64, i: u64, p: f64) -> bool {
    uniform_f64_at(seed, stream, i) >= p
}

/// The `(seed, stream)` a kernel draws with: the launch's own, or — in a
/// kernel recorded into a CUDA graph — the replay's, read from the graph's
/// slot at `at` (two `u64`s: the generator's seed at the replay, and how
/// many draws the generator has moved on since the recording), so every
/// replay draws fresh numbers, the ones an eager run would draw then.
///
/// # Safety
/// A nonzero `at` must be the address of two readable `u64`s.
#[inline(always)]
pub unsafe fn replayed(seed: u64, stream: u64, at: u64) -> (u64, u64) {
    if at == 0 {
        return (seed, stream);
    }
    let slot = at as *const u64;
    (*slot, stream.wrapping_add(*slot.add(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_slot_replaces_the_seed_and_moves_the_stream() {
        // SAFETY: no slot, or a live slot of two u64s.
        unsafe {
            assert_eq!(replayed(5, 7, 0), (5, 7));
            let slot = [11u64, 3];
            assert_eq!(replayed(5, 7, slot.as_ptr() as u64), (11, 10));
            let back = [11u64, u64::MAX]; // a shift of -1, as after a reseed
            assert_eq!(replayed(5, 7, back.as_ptr() as u64), (11, 6));
        }
    }

    #[test]
    fn known_answer() {
        // Random123's published known-answer vector for philox4x32-10 on zeros.
        assert_eq!(
            philox4x32([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
    }

    #[test]
    fn ranges() {
        for i in 0..1000 {
            let u = uniform_at(7, 0, i);
            assert!((0.0..1.0).contains(&u));
            let k = int_at(7, 1, i, -3, 5);
            assert!((-3..2).contains(&k));
            assert!(normal_at(7, 2, i).is_finite());
        }
    }
}
