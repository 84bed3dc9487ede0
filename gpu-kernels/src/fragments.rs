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
