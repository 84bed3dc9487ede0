//! The fragment layouts of `mma.sync.m16n8k16` that the tensor-core kernels
//! and their host emulator share: the element types and where each lane's
//! `ldmatrix` row address points (PTX's ISA; lane = 4·g + t).

use crate::elem::{BF16, F16};

/// The half-precision element types `mma.sync` multiplies (f32 accumulators).
pub trait MmaHalf: Copy {
    /// bf16 rather than f16.
    const BF16: bool;
}

impl MmaHalf for F16 {
    const BF16: bool = false;
}

impl MmaHalf for BF16 {
    const BF16: bool = true;
}

/// The row and column (in elements) within a 16×16 tile whose address lane
/// `lane` gives to `ldmatrix.x4` for an A fragment of a row-major tile, or
/// to `ldmatrix.x4.trans` for the B fragments of two neighbouring n-tiles
/// of a row-major `[k][n]` tile: rows `lane % 16`, columns `8 · (lane / 16)`.
#[inline(always)]
pub fn a_lane_offset(lane: u32) -> (u32, u32) {
    (lane & 15, (lane >> 4) << 3)
}

/// The same for the B fragments of two neighbouring n-tiles of a row-major
/// `[n][k]` tile through `ldmatrix.x4` (registers: `b0, b1` of n-tile 0,
/// then of n-tile 1): rows `lane % 8 + 8 · (lane / 16)`, columns `8 · (lane / 8 % 2)`.
#[inline(always)]
pub fn b_lane_offset(lane: u32) -> (u32, u32) {
    ((lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) << 3)
}

/// The shared-memory matrix descriptor `wgmma` reads a B operand through,
/// for a tile in the 128-byte swizzle (PTX's ISA: bits 0-13 the start
/// address, 16-29 the leading and 32-45 the stride byte offsets, each in
/// 16-byte units, bits 62-63 the swizzle mode, 1 for 128 bytes). The tile
/// is laid out by [`swizzled_offset`] from a 1024-byte aligned base; `start`
/// is the shared-space address of the product's first element. K-major:
/// `stride` 1024 (8 rows of N), `leading` unused. N-major: `leading` the
/// distance between blocks of 64 N-elements, `stride` 1024 (8 rows of K).
#[inline(always)]
pub const fn wgmma_descriptor(start: u32, leading: u32, stride: u32) -> u64 {
    ((start as u64 >> 4) & 0x3fff)
        | (((leading as u64 >> 4) & 0x3fff) << 16)
        | (((stride as u64 >> 4) & 0x3fff) << 32)
        | (1 << 62)
}

/// The descriptor of the same tile `offset` bytes (a multiple of 16) past
/// the start of `desc`'s: a 32-bit add to its address field, which cannot
/// carry out of it (shared addresses stay below 2^18 bytes), so the step's
/// descriptors of an unrolled product cost an add each.
#[inline(always)]
pub const fn wgmma_descriptor_plus(desc: u64, offset: u32) -> u64 {
    let start = (desc as u32).wrapping_add(offset >> 4);
    ((desc >> 32) << 32) | start as u64
}

/// The byte offset of 16-byte piece `c` (elements `8c..8c + 8`) of row `r`
/// in a tile of `rows` rows of 16-bit elements in `wgmma`'s 128-byte
/// swizzle: blocks of 64 columns one after another (`128·rows` bytes each),
/// rows 128 bytes apart within a block, and the piece's place in its row
/// XORed with the row's place in its group of 8, so the 8 rows of a group
/// spread one column over all the banks.
#[inline(always)]
pub const fn swizzled_offset(r: u32, c: u32, rows: u32) -> u32 {
    (c / 8) * rows * 128 + r * 128 + (((c % 8) ^ (r % 8)) * 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lane_addresses_a_distinct_row_of_its_matrix() {
        for offset in [a_lane_offset, b_lane_offset] {
            let mut seen = [[false; 8]; 4];
            for lane in 0..32 {
                let (r, c) = offset(lane);
                // matrix m = lane / 8 covers rows (r / 8) and columns (c / 8)
                assert!(r < 16 && c < 16 && c % 8 == 0);
                let m = (lane / 8) as usize;
                assert!(!seen[m][(r % 8) as usize]);
                seen[m][(r % 8) as usize] = true;
            }
        }
    }
}
