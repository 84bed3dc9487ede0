//! What the attention kernels (`attention.rs` on `mma.sync`,
//! `attention_hopper*.rs` on `wgmma`; every element type of
//! [`FlashElem`]) do per fragment row: the maxima and
//! sums across the four lanes that share a row, the forward's store of the
//! normalised output and the row's log-sum-exp, the query backward's load
//! of each row's log-sum-exp and delta, and the backward's gradient
//! stores. Their C fragments have the same layout (lane `4g + t` holds rows
//! `g` and `g + 8`), so one version serves all.

use super::flash_operands::FlashElem;
use crate::device::{shfl_xor_f32, unroll};
use crate::params::FlashParams;

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
pub(crate) unsafe fn store_rows<T: FlashElem, const D: usize>(
    o: *mut T::Bits,
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
                T::store_pair(
                    out.add(nt * 8 + 2 * t as usize),
                    acc[nt][2 * r] * inv,
                    acc[nt][2 * r + 1] * inv,
                );
            });
            if t == 0 {
                *lse.add(batch_head * h.l as usize + row as usize) =
                    (m_run[r] + crate::math::log2_f32(l)) * core::f32::consts::LN_2;
            }
        }
    });
}

/// This lane's two rows' (`my_row`, `my_row + 8`) terms of the query
/// backward, from the forward's log-sum-exps (turned into log2 units) and
/// `delta = rowsum(dout · o)` (both f32 `[B, H, L]`, at `batch_head`'s
/// rows): a row at or past `L` gets a log-sum-exp of +∞, which makes its
/// probabilities 0.
///
/// # Safety
/// `lse` and `delta` hold `B·H·L` f32s and `batch_head < B·H`.
#[inline(always)]
pub(crate) unsafe fn row_terms(
    lse: *const f32,
    delta: *const f32,
    h: &FlashParams,
    batch_head: usize,
    my_row: u32,
) -> ([f32; 2], [f32; 2]) {
    let mut lse_r = [f32::INFINITY; 2];
    let mut delta_r = [0f32; 2];
    unroll(2, |r| {
        let row = my_row + r as u32 * 8;
        if row < h.l {
            let at = batch_head * h.l as usize + row as usize;
            lse_r[r] = *lse.add(at) * core::f32::consts::LOG2_E;
            delta_r[r] = *delta.add(at);
        }
    });
    (lse_r, delta_r)
}

/// Stores this lane's two query rows `my_row` and `my_row + 8` (those
/// below `L`) of the query gradient `dq` of head `head` of batch entry
/// `batch`: the first `D / 8` C fragments of `dqa` times the scale, rounded
/// to `T`.
///
/// # Safety
/// `dq` lies as `h.dq` says; `t` is this lane's place in its quad.
#[inline(always)]
pub(crate) unsafe fn store_query_gradient<T: FlashElem, const D: usize>(
    dq: *mut T::Bits,
    dqa: &[[f32; 4]; 16],
    h: &FlashParams,
    (batch, head): (u32, u32),
    my_row: u32,
    t: u32,
) {
    unroll(2, |r| {
        let row = my_row + r as u32 * 8;
        if row < h.l {
            let out = dq.add(h.dq.offset(batch, head, row));
            unroll(D / 8, |nt| {
                T::store_pair(
                    out.add(nt * 8 + 2 * t as usize),
                    dqa[nt][2 * r] * h.scale,
                    dqa[nt][2 * r + 1] * h.scale,
                );
            });
        }
    });
}

/// Stores this lane's two key rows `my_key` and `my_key + 8` (those below
/// `S`) of the key and value gradients of key/value head `kvh` of batch
/// entry `batch`: the first `D / 8` C fragments of `dka` times the scale
/// and of `dva`, rounded to `T` (interleaved, which keeps ptxas from
/// spilling where these kernels are tight on registers).
///
/// # Safety
/// `dk` and `dv` lie as `h.dk` and `h.dv` say; `t` is this lane's place in
/// its quad.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn store_key_gradients<T: FlashElem, const D: usize>(
    (dk, dv): (*mut T::Bits, *mut T::Bits),
    dka: &[[f32; 4]; 16],
    dva: &[[f32; 4]; 16],
    h: &FlashParams,
    (batch, kvh): (u32, u32),
    my_key: u32,
    t: u32,
) {
    unroll(2, |r| {
        let key = my_key + r as u32 * 8;
        if key < h.s {
            let (at_k, at_v) = (h.dk.offset(batch, kvh, key), h.dv.offset(batch, kvh, key));
            unroll(D / 8, |nt| {
                let col = nt * 8 + 2 * t as usize;
                T::store_pair(
                    dk.add(at_k + col),
                    dka[nt][2 * r] * h.scale,
                    dka[nt][2 * r + 1] * h.scale,
                );
                T::store_pair(dv.add(at_v + col), dva[nt][2 * r], dva[nt][2 * r + 1]);
            });
        }
    });
}
