//! What both attention forwards (`attention.rs` on `mma.sync`,
//! `attention_hopper.rs` on `wgmma`) do per fragment row: the maxima and
//! sums across the four lanes that share a row, and the final store of the
//! normalised output and the row's log-sum-exp. Their C fragments have the
//! same layout (lane `4g + t` holds rows `g` and `g + 8`), so one version
//! serves both.

use crate::device::{shfl_xor_f32, unroll};
use crate::params::FlashParams;
use crate::tensor_core::{pack, MmaHalf};

/// The maximum of `v` over the four lanes that share a fragment row.
#[inline(always)]
pub(crate) fn quad_max(v: f32) -> f32 {
    let v = v.max(shfl_xor_f32(v, 1));
    v.max(shfl_xor_f32(v, 2))
}

/// The sum of `v` over the four lanes that share a fragment row.
#[inline(always)]
pub(crate) fn quad_sum(v: f32) -> f32 {
    let v = v + shfl_xor_f32(v, 1);
    v + shfl_xor_f32(v, 2)
}

/// Stores this lane's two output rows `my_row` and `my_row + 8` of head
/// `head` of batch entry `batch`: the accumulated `acc` (the first `D / 8`
/// C fragments) over the rows' sums `l_run`, rounded to `T`, and each row's
/// log-sum-exp from its running maximum `m_run` (log2 units) into `lse`;
/// rows at or past `L` are skipped.
///
/// # Safety
/// `o` and `lse` hold the forward's outputs as [`FlashParams`] says; `t`
/// is this lane's place in its quad.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn store_rows<T: MmaHalf, const D: usize>(
    o: *mut u16,
    lse: *mut f32,
    h: &FlashParams,
    (batch, head): (u32, u32),
    my_row: u32,
    t: u32,
    acc: &[[f32; 4]; 16],
    (m_run, l_run): ([f32; 2], [f32; 2]),
) {
    let batch_head = (batch * h.heads + head) as usize;
    unroll(2, |r| {
        let l = quad_sum(l_run[r]);
        let inv = 1.0 / l;
        let row = my_row + r as u32 * 8;
        if row < h.l {
            let out = o.add(h.o.offset(batch, head, row));
            unroll(D / 8, |nt| {
                let v = pack::<T>(acc[nt][2 * r] * inv, acc[nt][2 * r + 1] * inv);
                *(out.add(nt * 8 + 2 * t as usize) as *mut u32) = v;
            });
            if t == 0 {
                *lse.add(batch_head * h.l as usize + row as usize) =
                    (m_run[r] + crate::math::log2_f32(l)) * core::f32::consts::LN_2;
            }
        }
    });
}
