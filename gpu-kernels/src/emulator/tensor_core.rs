//! The emulated [`crate::tensor_core`]: `mma.sync`, `ldmatrix` and the
//! half packing, computed from the fragment layouts of PTX's ISA (lane =
//! 4·g + t; see the real module's documentation).

use super::context;
pub use crate::fragments::{a_lane_offset, b_lane_offset, MmaHalf};
use crate::half::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};

pub(super) fn widen<T: MmaHalf>(bits: u16) -> f32 {
    if T::BF16 {
        bf16_to_f32(bits)
    } else {
        f16_to_f32(bits)
    }
}

/// The half of a packed register: element `i` (0 low, 1 high).
pub(super) fn half_of(word: u32, i: usize) -> u16 {
    (word >> (16 * i)) as u16
}

/// A lane's reader of the warp's posted words: `read(lane, register)`.
type Reader<'a> = &'a dyn Fn(u32, usize) -> u32;

/// `c += a · b` over `depth` values of k for this warp's fragments (`words`:
/// A's four registers, then B's two), A's element (row, k) and B's (k,
/// column) read through `a_at` and `b_at`; C as PTX lays it out.
fn warp_product(
    c: &mut [f32; 4],
    words: [u32; 6],
    depth: u32,
    a_at: impl Fn(Reader, u32, u32) -> f32,
    b_at: impl Fn(Reader, u32, u32) -> f32,
) {
    let (tid, block) = context();
    let lane = tid & 31;
    let warp = &block.warps[(tid / 32) as usize];
    let (g, t) = (lane >> 2, lane & 3);
    *c = warp.exchange(lane, &words, |read| {
        let mut d = *c;
        for (e, out) in d.iter_mut().enumerate() {
            let (row, col) = (g + 8 * (e as u32 >> 1), 2 * t + (e as u32 & 1));
            for k in 0..depth {
                *out += a_at(read, row, k) * b_at(read, k, col);
            }
        }
        d
    });
}

/// `c += a · b` for this warp's fragments.
pub fn mma<T: MmaHalf>(c: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    warp_product(
        c,
        [a[0], a[1], a[2], a[3], b0, b1],
        16,
        // A (16×16): row r, column k is in lane 4·(r % 8) + (k % 8) / 2,
        // register (r >= 8) + 2·(k >= 8), half k % 2
        |read, r, k| {
            let reg = (r >= 8) as usize + 2 * (k >= 8) as usize;
            widen::<T>(half_of(read(4 * (r % 8) + (k % 8) / 2, reg), (k % 2) as usize))
        },
        // B (16×8): row k, column n is in lane 4·n + (k % 8) / 2, register 4 + (k >= 8)
        |read, k, n| {
            widen::<T>(half_of(
                read(4 * n + (k % 8) / 2, 4 + (k >= 8) as usize),
                (k % 2) as usize,
            ))
        },
    );
}

/// The f32 a tf32 operand register stands for: its top 19 bits.
fn tf32(bits: u32) -> f32 {
    f32::from_bits(bits & 0xffff_e000)
}

/// `c += a · b` for this warp's tf32 fragments (`m16n8k8`).
pub fn mma_tf32(c: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    warp_product(
        c,
        [a[0], a[1], a[2], a[3], b0, b1],
        8,
        // A (16×8): row r, column k is in lane 4·(r % 8) + k % 4, register (r >= 8) + 2·(k >= 4)
        |read, r, k| {
            tf32(read(
                4 * (r % 8) + k % 4,
                (r >= 8) as usize + 2 * (k >= 4) as usize,
            ))
        },
        // B (8×8): row k, column n is in lane 4·n + k % 4, register 4 + (k >= 4)
        |read, k, n| tf32(read(4 * n + k % 4, 4 + (k >= 4) as usize)),
    );
}

/// `lo` and `hi` rounded to `T` and packed (`lo` in the low half).
pub fn pack<T: MmaHalf>(lo: f32, hi: f32) -> u32 {
    let r = |x: f32| if T::BF16 { f32_to_bf16(x) } else { f32_to_f16(x) };
    r(lo) as u32 | (r(hi) as u32) << 16
}

/// The address of `p` in the block's shared memory (its byte offset).
pub fn shared_address<T>(p: *const T) -> u32 {
    let base = context().1.shared as usize;
    let at = p as usize;
    assert!(at >= base, "not a shared-memory pointer");
    (at - base) as u32
}

/// The 16-bit element at byte offset `addr` of shared memory.
pub(super) fn shared_u16(addr: u32) -> u16 {
    assert!(addr.is_multiple_of(2), "misaligned shared read");
    // SAFETY: the kernels address their own block's shared memory, sized by the launch.
    unsafe { *(context().1.shared.add(addr as usize) as *const u16) }
}

fn ldmatrix(addr: u32, trans: bool) -> [u32; 4] {
    let (tid, block) = context();
    let lane = tid & 31;
    assert!(
        addr.is_multiple_of(16),
        "ldmatrix row addresses are 16-byte aligned"
    );
    let warp = &block.warps[(tid / 32) as usize];
    let (g, t) = (lane >> 2, lane & 3);
    warp.exchange(lane, &[addr], |read| {
        core::array::from_fn(|m| {
            let m = m as u32;
            let (lo, hi) = if trans {
                // rows 2t and 2t + 1 of matrix m, column g
                (
                    shared_u16(read(8 * m + 2 * t, 0) + 2 * g),
                    shared_u16(read(8 * m + 2 * t + 1, 0) + 2 * g),
                )
            } else {
                // row g of matrix m, columns 2t and 2t + 1
                let row = read(8 * m + g, 0);
                (shared_u16(row + 4 * t), shared_u16(row + 4 * t + 2))
            };
            lo as u32 | (hi as u32) << 16
        })
    })
}

/// Four 8×8 matrices of 16-bit elements from shared memory.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    ldmatrix(addr, false)
}

/// [`ldmatrix_x4`] transposed.
///
/// # Safety
/// As for the real instruction.
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    ldmatrix(addr, true)
}

/// The emulated asynchronous copy: queued, to land as late as the ISA lets
/// it ([`super::copies`]).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn cp_async_16(dst: u32, src: *const u8, fill: bool) {
    assert!(
        dst.is_multiple_of(16),
        "cp.async destinations are 16-byte aligned"
    );
    if fill {
        assert!(
            (src as usize).is_multiple_of(16),
            "cp.async sources are 16-byte aligned"
        );
    }
    super::copies::issue(dst, src, 16, fill);
}

/// The emulated 4-byte asynchronous copy (queued as [`cp_async_16`]).
///
/// # Safety
/// As for the real instruction.
pub unsafe fn cp_async_4(dst: u32, src: *const u8, fill: bool) {
    assert!(
        dst.is_multiple_of(4),
        "4-byte cp.async destinations are 4-byte aligned"
    );
    super::copies::issue(dst, src, 4, fill);
}

/// See the real module.
pub fn cp_async_commit() {
    super::copies::commit();
}

/// See the real module: lands every committed group but the newest
/// `PENDING`.
pub fn cp_async_wait<const PENDING: u32>() {
    super::copies::wait(PENDING as usize);
}
