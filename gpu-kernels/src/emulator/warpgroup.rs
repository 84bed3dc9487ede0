//! The emulated [`crate::warpgroup`]: each warp's share of a warpgroup
//! product computed at once from its A fragments (exchanged among its
//! lanes) and B read through the descriptor as PTX's ISA lays it out; the
//! fences, commits and waits have nothing to do here.

use super::context;
use super::tensor_core::{half_of, shared_u16, widen};
use crate::fragments::MmaHalf;

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn fence() {}

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn commit() {}

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn wait() {}

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn wait_one() {}

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn shrink_registers<const N: u32>() {}

/// See the real module (nothing to do here).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn grow_registers<const N: u32>() {}

/// See the real module (nothing to do here).
pub fn fence_shared() {}

/// See the real module (nothing to do here).
pub fn pin(_: &mut u32) {}

/// See the real module (nothing to do here).
pub fn pin_c(_: &mut [[f32; 4]; 16], _: usize) {}

/// The shared-space address of element (`k`, `n`) of the B operand that
/// `desc` describes (128-byte swizzle), K-major or N-major.
fn b_address(desc: u64, k: u32, n: u32, n_major: bool) -> u32 {
    let field = |shift: u32| ((desc >> shift) & 0x3fff) as u32 * 16;
    let (start, leading, stride) = (field(0), field(16), field(32));
    assert_eq!(desc >> 46, 1 << 16, "only the 128-byte swizzle is emulated");
    let linear = if n_major {
        start + (n / 64) * leading + (n % 64) * 2 + (k / 8) * stride + (k % 8) * 128
    } else {
        start + (n / 8) * stride + (n % 8) * 128 + k * 2
    };
    // the swizzle: bits 4-6 of the address XOR bits 7-9
    linear ^ (((linear >> 7) & 7) << 4)
}

/// `c += a · B` for this warp's 16 rows, B being 16 × `8·N`.
fn mma<T: MmaHalf>(c: &mut [[f32; 4]; 16], n: usize, a: &[u32; 4], b: u64, n_major: bool) {
    let (tid, block) = context();
    let lane = tid & 31;
    let warp = &block.warps[(tid / 32) as usize];
    let (g, t) = (lane >> 2, lane & 3);
    let d = warp.exchange(lane, a, |read| {
        // A as for `mma.sync` (see the emulated tensor_core module)
        let a_at = |r: u32, k: u32| {
            let reg = (r >= 8) as usize + 2 * (k >= 8) as usize;
            widen::<T>(half_of(read(4 * (r % 8) + (k % 8) / 2, reg), (k % 2) as usize))
        };
        let mut d = *c;
        for (i, frag) in d.iter_mut().enumerate().take(n) {
            for (e, out) in frag.iter_mut().enumerate() {
                let (row, col) = (g + 8 * (e as u32 >> 1), 8 * i as u32 + 2 * t + (e as u32 & 1));
                for k in 0..16 {
                    *out += a_at(row, k) * widen::<T>(shared_u16(b_address(b, k, col, n_major)));
                }
            }
        }
        d
    });
    *c = d;
}

/// `c += A · B` with A 64×16 in shared memory (`a` its descriptor),
/// K-major or M-major: this warp's 16 rows, as A fragments of `mma.sync`.
fn a_fragment(a: u64, m_major: bool) -> [u32; 4] {
    let (tid, _) = context();
    let (lane, warp) = (tid & 31, (tid / 32) % 4);
    let (g, t) = (lane >> 2, lane & 3);
    // A's element (m, k) is B's (k, m) of a K-major or N-major operand
    let at = |m: u32, k: u32| shared_u16(b_address(a, k, 16 * warp + m, m_major)) as u32;
    let pair = |m: u32, k: u32| at(m, k) | at(m, k + 1) << 16;
    [
        pair(g, 2 * t),
        pair(g + 8, 2 * t),
        pair(g, 2 * t + 8),
        pair(g + 8, 2 * t + 8),
    ]
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_ss_n64<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    mma::<T>(c, 8, &a_fragment(a, false), b, false)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_ss_n128<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    mma::<T>(c, 16, &a_fragment(a, false), b, false)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_ss_n64_mn_major<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    mma::<T>(c, 8, &a_fragment(a, true), b, true)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_n64<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: &[u32; 4], b: u64) {
    mma::<T>(c, 8, a, b, false)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_n128<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: &[u32; 4], b: u64) {
    mma::<T>(c, 16, a, b, false)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_n64_n_major<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: &[u32; 4], b: u64) {
    mma::<T>(c, 8, a, b, true)
}

/// See the real module.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn mma_n128_n_major<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: &[u32; 4], b: u64) {
    mma::<T>(c, 16, a, b, true)
}
