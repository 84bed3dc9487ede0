//! The attention backward on Hopper's warpgroup tensor cores (sm_90a,
//! `flash90_backward_{kvq,kv,q}_*`): f16 and bf16, head dims 64 and 128,
//! without dropout. The algebra is that of the `mma.sync` backward
//! (`attention.rs`); every product here is a `wgmma`:
//!
//! - `flash90_backward_kvq_*` (what the host launches at head dim 128,
//!   [`FlashParams::hopper_backward_sums_dq`]): the key/value kernel
//!   below, which also writes each step's `dSᵀ` to shared memory and adds
//!   `dQ += dS·K` for the block's keys into an f32 buffer with
//!   `red.global.add.v4` (the product `dQ = dS·K`, dSᵀ read M-major and
//!   K N-major from shared memory): five products a step instead of the
//!   seven of the two kernels that follow, which the host launches at 64.
//! - `flash90_backward_kv_*`: a block of two warpgroups takes 128 keys (64
//!   a warpgroup, their `dK` and `dV` in registers) and walks the query
//!   tiles of 64 rows of every query head that shares them. The transposed
//!   scores `Sᵀ = K·Qᵀ` and `dPᵀ = V·dOᵀ` read both operands from shared
//!   memory (K-major); `dV += Pᵀ·dO` and `dK += dSᵀ·Q` take `Pᵀ` and `dSᵀ`
//!   from registers and read dO and Q N-major. The next query tile, its
//!   output gradient, log-sum-exps and deltas load during each step.
//! - `flash90_backward_q_*`: a block of three warpgroups takes 192 query
//!   rows (their Q and dO in shared memory, `dQ` in registers) and walks
//!   the key/value tiles of 64 rows: `S = Q·Kᵀ`, `dP = dO·Vᵀ`, then
//!   `dQ += dS·K` with K read N-major.
//!
//! Where the registers allow, the operand fixed for a block (K and V, or Q
//! and dO) is held in registers as A fragments, so each scores product
//! reads only the other operand from shared memory
//! ([`FlashParams::hopper_backward_held_steps`]).
//!
//! Tiles are in `wgmma`'s 128-byte swizzle, loaded by `cp.async`. Rows past
//! `L` or `S` load as zeros and their probabilities are masked to 0.

use super::attention_hopper::{
    fma, held_rows, load_swizzled_async, pin_a, product, scores, to_a, NOTHING_HELD,
};
use super::flash_rows::{row_terms, store_key_gradients, store_query_gradient};
use crate::device::{
    block_xyz, opaque, red_add_v4_f32, shared, shfl_xor_f32, sync_threads, thread_xy, unroll, Pack,
};
#[cfg(target_arch = "nvptx64")]
use crate::elem::{BF16, F16};
use crate::fragments::{wgmma_descriptor, wgmma_descriptor_plus};
use crate::math::exp2_f32;
use crate::params::FlashParams;
use crate::tensor_core::{cp_async_4, cp_async_commit, cp_async_wait, shared_address, MmaHalf};
use crate::warpgroup::{self as wg, pin_c};

const LOG2E: f32 = core::f32::consts::LOG2_E;
/// Query rows a tile of the key/value backward, keys a tile of the query backward.
const TILE: u32 = FlashParams::HOPPER_BACKWARD_TILE;

/// The shared memory of a block, from the swizzle's 1024-byte boundary:
/// its shared-space address, and the same place as a generic pointer.
#[inline(always)]
fn shared_base() -> (u32, *mut u8) {
    let smem = shared::<Pack<u32, 4>>() as *mut u8;
    let at = shared_address(smem);
    let base = (at + 1023) & !1023;
    // SAFETY: the launch reserves 1024 bytes for this alignment.
    (base, unsafe { smem.add((base - at) as usize) })
}

/// The key and value gradients of one block: 128 keys of one key/value
/// head, over every query head of its group; with `DQ` also each query
/// tile's share of the query gradient, `dS·K` over the block's keys, added
/// into `dq_acc` (f32, laid out as `h.dq` says, zeroed before the launch)
/// by `red.global.add.v4`: five products a step instead of the seven of this
/// kernel and [`backward_q`] together. Without `DQ`, `dq_acc` is unused.
///
/// # Safety
/// Launched with [`FlashParams::HOPPER_KV_THREADS`] threads, a grid of
/// `(⌈S/128⌉, H / group, B)` and
/// [`FlashParams::hopper_backward_kv_shared_bytes`]`(D, DQ)` of shared
/// memory, without dropout, on an sm_90a GPU; the pointers and strides
/// describe live tensors as [`FlashParams`] says, `lse` and `delta` hold
/// `B·H·L` f32s.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn backward_kv<T: MmaHalf, const D: usize, const DQ: bool>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    dout: *const u16,
    lse: *const f32,
    delta: *const f32,
    dk: *mut u16,
    dv: *mut u16,
    dq_acc: *mut f32,
    h: FlashParams,
) {
    const THREADS: u32 = FlashParams::HOPPER_KV_THREADS;
    const KEYS: u32 = FlashParams::HOPPER_KV_KEYS;
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    let (tile, kvh, batch) = block_xyz();
    let key0 = tile * KEYS;
    // the warpgroup's first key within the block
    let group_key = (warp / 4) * 64;
    let (base, base_ptr) = shared_base();
    let keys_bytes = KEYS * D as u32 * 2;
    let tile_bytes = TILE * D as u32 * 2;
    let (k_tile, v_tile) = (base, base + keys_bytes);
    let q_tile = |b: u32| base + 2 * keys_bytes + 2 * b * tile_bytes;
    let do_tile = |b: u32| base + 2 * keys_bytes + (2 * b + 1) * tile_bytes;
    // buffer b's log-sum-exps, then its deltas
    let stats_at = 2 * keys_bytes + 4 * tile_bytes;
    let stats = |b: u32| stats_at + 2 * b * TILE * 4;
    let stat = |at: u32, i: u32| *(base_ptr.add((at + 4 * i) as usize) as *const f32);
    // with DQ: the step's dSᵀ (keys × queries), the M-major A operand of dQ = dS·K
    let ds_at = stats_at + 4 * TILE * 4;

    let first = if h.causal != 0 { key0 / TILE } else { 0 };
    let per_head = h.l.div_ceil(TILE).saturating_sub(first);
    let steps = h.group * per_head;
    // step n: query head kvh·group + n / per_head, query tile first + n % per_head
    let step_of = |n: u32| (kvh * h.group + n / per_head, (first + n % per_head) * TILE);
    let fetch = |n: u32| {
        let (hq, q0) = step_of(n);
        let b = n % 2;
        let (qs, ds) = (
            q.add(h.q.offset(batch, hq, 0)),
            dout.add(h.o.offset(batch, hq, 0)),
        );
        load_swizzled_async(q_tile(b), qs, h.q.row, q0, TILE, h.l, D, THREADS);
        load_swizzled_async(do_tile(b), ds, h.o.row, q0, TILE, h.l, D, THREADS);
        if tid < TILE {
            let row = q0 + tid;
            let inside = row < h.l;
            let at = ((batch * h.heads + hq) * h.l) as usize + if inside { row as usize } else { 0 };
            cp_async_4(base + stats(b) + 4 * tid, lse.add(at) as *const u8, inside);
            cp_async_4(
                base + stats(b) + 4 * (TILE + tid),
                delta.add(at) as *const u8,
                inside,
            );
        }
    };
    let (kb, vb) = (k.add(h.k.offset(batch, kvh, 0)), v.add(h.v.offset(batch, kvh, 0)));
    load_swizzled_async(k_tile, kb, h.k.row, key0, KEYS, h.s, D, THREADS);
    load_swizzled_async(v_tile, vb, h.v.row, key0, KEYS, h.s, D, THREADS);
    if steps > 0 {
        fetch(0);
    }
    cp_async_commit();

    let scale = h.scale * LOG2E;
    let mut dka = [[0f32; 4]; 16];
    let mut dva = [[0f32; 4]; 16];
    let my_key = key0 + group_key + (warp % 4) * 16 + g;
    // the warpgroup's rows of the key and value tiles, read by every step's
    // scores, or this warp's 16 of them held in registers
    let (group_k, group_v) = (k_tile + group_key * 128, v_tile + group_key * 128);
    let held = FlashParams::hopper_backward_held_steps(D);
    let (mut kf, mut vf) = (NOTHING_HELD, NOTHING_HELD);
    if held > 0 {
        cp_async_wait::<0>();
        sync_threads();
        kf = held_rows(k_tile, KEYS, warp * 16, held);
        vf = held_rows(v_tile, KEYS, warp * 16, held);
    }
    let blocks = TILE * 128;
    let mut n = 0;
    while n < steps {
        cp_async_wait::<0>();
        wg::fence_shared();
        sync_threads();
        if n + 1 < steps {
            fetch(n + 1);
        }
        cp_async_commit();
        let (_, q0) = step_of(n);
        let b = n % 2;

        // Sᵀ and dPᵀ: 64 keys × 64 queries each, in flight together; the
        // probabilities are made while dPᵀ runs, dSᵀ while dV's product runs
        let mut sc = [[0f32; 4]; 16];
        let mut dp = [[0f32; 4]; 16];
        pin_c(&mut sc, 8);
        pin_c(&mut dp, 8);
        wg::fence();
        scores::<T, D>(&mut sc, (group_k, KEYS), (&kf, held), q_tile(b), TILE);
        scores::<T, D>(&mut dp, (group_v, KEYS), (&vf, held), do_tile(b), TILE);
        wg::wait_one();
        pin_c(&mut sc, 8);

        // Pᵀ (0 past the queries and above the diagonal)
        let edge = q0 + TILE > h.l || (h.causal != 0 && q0 < key0 + group_key + 64);
        unroll(8, |nt| {
            unroll(4, |e| {
                let c = nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let x = exp2_f32(fma(sc[nt][e], scale, -stat(stats(b), c) * LOG2E));
                let key = my_key + (e as u32 >> 1) * 8;
                sc[nt][e] = if edge && (q0 + c >= h.l || (h.causal != 0 && q0 + c < key)) {
                    0.0
                } else {
                    x
                };
            })
        });
        let mut pf = [[0u32; 4]; 8];
        to_a::<T>(&sc, &mut pf, 8);

        // dV += Pᵀ·dO, issued before dPᵀ is waited for
        pin_a(&mut pf, 4);
        pin_c(&mut dva, D / 8);
        wg::fence();
        product::<T, D>(&mut dva, &pf, do_tile(b), TILE, blocks);
        wg::wait_one();
        pin_c(&mut dp, 8);

        // dSᵀ = Pᵀ (dPᵀ - Δ), then dK += dSᵀ·Q
        unroll(8, |nt| {
            unroll(4, |e| {
                let c = nt as u32 * 8 + 2 * t + (e as u32 & 1);
                dp[nt][e] = sc[nt][e] * (dp[nt][e] - stat(stats(b) + 4 * TILE, c));
            })
        });
        let mut df = [[0u32; 4]; 8];
        to_a::<T>(&dp, &mut df, 8);
        if DQ {
            store_transposed_scores(
                base_ptr.add(ds_at as usize),
                &df,
                group_key + (warp % 4) * 16 + g,
                t,
            );
        }
        pin_a(&mut df, 4);
        pin_c(&mut dka, D / 8);
        if DQ {
            // dQ = dS·K once both warpgroups' dSᵀ is in shared memory (A:
            // dSᵀ read M-major; B: the key tile read N-major; at head dim
            // 128 warpgroup w takes head dims 64w.. over all 128 keys, at
            // 64 all head dims over its own 64 keys), issued before dK's
            // product, so that its sums go out while that runs
            wg::fence_shared();
            sync_threads();
            let mut dqa = [[0f32; 4]; 16];
            pin_c(&mut dqa, 8);
            wg::fence();
            let (d_block, first_key) = if D == 128 { (warp / 4, 0) } else { (0, group_key) };
            let scores0 = wgmma_descriptor(base + ds_at + first_key * 128, KEYS * 128, 1024);
            let keys0 = wgmma_descriptor(k_tile + d_block * KEYS * 128 + first_key * 128, KEYS * 128, 1024);
            unroll(if D == 128 { 8 } else { 4 }, |kk| {
                let step = kk as u32 * 16 * 128;
                wg::mma_ss_n64_mn_major::<T>(
                    &mut dqa,
                    wgmma_descriptor_plus(scores0, step),
                    wgmma_descriptor_plus(keys0, step),
                );
            });
            wg::commit();
            product::<T, D>(&mut dka, &df, q_tile(b), TILE, blocks);
            wg::wait_one();
            pin_c(&mut dqa, 8);
            let (hq, _) = step_of(n);
            add_query_sums(
                dq_acc,
                &dqa,
                &h,
                (batch, hq),
                q0,
                (warp % 4) * 16 + g,
                d_block * 64 + 2 * t,
            );
        } else {
            wg::fence();
            product::<T, D>(&mut dka, &df, q_tile(b), TILE, blocks);
        }
        wg::wait();
        pin_c(&mut dva, D / 8);
        pin_c(&mut dka, D / 8);
        pin_a(&mut pf, 4);
        pin_a(&mut df, 4);
        n += 1;
    }
    cp_async_wait::<0>();

    store_key_gradients::<T, D>((dk, dv), &dka, &dva, &h, (batch, kvh), my_key, t);
}

/// Stores this lane's share of `dSᵀ` (`df`, the A fragments of a 64×64
/// tile, rows `row` and `row + 8` of the block's 128 keys, `t` its place
/// in its quad) into the swizzled tile at `tile`: keys as rows, queries as
/// columns, which `wgmma` reads as the M-major A operand of `dS·K`.
/// The addresses are [`crate::fragments::swizzled_offset`]'s for one block of 64 columns,
/// from a row start hidden from the optimiser (kept across the steps, the
/// 16 addresses would cost 16 registers the kernel does not have).
///
/// # Safety
/// `tile` is the tile's place in shared memory (1024-byte aligned).
#[inline(always)]
unsafe fn store_transposed_scores(tile: *mut u8, df: &[[u32; 4]; 8], row: u32, t: u32) {
    let row = opaque(row);
    let line = tile.add((row * 128 + 4 * t) as usize);
    unroll(4, |kk| {
        unroll(4, |r| {
            // register r: columns 16kk + 8(r / 2).., row + 8(r % 2), which
            // is in the same place of its group of 8 rows as `row`
            let piece = 2 * kk as u32 + (r as u32 >> 1);
            let at = (r as u32 & 1) * 8 * 128 + ((piece ^ (row % 8)) * 16);
            *(line.add(at as usize) as *mut u32) = df[kk][r];
        })
    });
}

/// Adds `scale` times this lane's share of a 64×64 tile of query-gradient
/// sums (`dqa`, C fragments: query rows `row` and `row + 8` of the tile
/// at `q0`, head dims `dim + 8nt` and the next) into `dq_acc` (f32, laid
/// out as `h.dq` says), four head dims at a time (`red.global.add.v4`):
/// neighbouring lanes swap halves, so that a lane of an even place in its
/// quad holds four dims of row `row`, one of an odd place four of row `row
/// + 8`. Rows past `L` are left out.
///
/// # Safety
/// Every lane of the warp calls it; `dq_acc` holds the query gradient's
/// elements, its rows 16-byte aligned.
#[inline(always)]
unsafe fn add_query_sums(
    dq_acc: *mut f32,
    dqa: &[[f32; 4]; 16],
    h: &FlashParams,
    (batch, head): (u32, u32),
    q0: u32,
    row: u32,
    dim: u32,
) {
    let odd = (dim / 2) & 1;
    let row = q0 + row + 8 * odd;
    let inside = row < h.l;
    let at = h.dq.offset(batch, head, if inside { row } else { q0 }) + (dim - 2 * odd) as usize;
    let first = dq_acc.add(at);
    unroll(8, |nt| {
        let c = &dqa[nt];
        let (keep, send) = if odd == 0 {
            ([c[0], c[1]], [c[2], c[3]])
        } else {
            ([c[2], c[3]], [c[0], c[1]])
        };
        let got = [shfl_xor_f32(send[0], 1), shfl_xor_f32(send[1], 1)];
        let v = if odd == 0 {
            [keep[0], keep[1], got[0], got[1]]
        } else {
            [got[0], got[1], keep[0], keep[1]]
        };
        if inside {
            red_add_v4_f32(first.add(8 * nt), v.map(|x| x * h.scale));
        }
    });
}

/// The query gradient of one block: 192 query rows of one head.
///
/// # Safety
/// Launched with [`FlashParams::HOPPER_THREADS`] threads, a grid of
/// `(⌈L/192⌉, H, B)` and [`FlashParams::hopper_backward_q_shared_bytes`] of
/// shared memory; as for [`backward_kv`] otherwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn backward_q<T: MmaHalf, const D: usize>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    dout: *const u16,
    lse: *const f32,
    delta: *const f32,
    dq: *mut u16,
    h: FlashParams,
) {
    const THREADS: u32 = FlashParams::HOPPER_THREADS;
    const ROWS: u32 = FlashParams::HOPPER_BLOCK_ROWS;
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    let (tile, head, batch) = block_xyz();
    let kvh = head / h.group;
    let row0 = tile * ROWS;
    let wr = warp * 16;
    let (base, _) = shared_base();
    let rows_bytes = ROWS * D as u32 * 2;
    let tile_bytes = TILE * D as u32 * 2;
    let (q_tile, do_tile) = (base, base + rows_bytes);
    let key_tile = |b: u32| base + 2 * rows_bytes + 2 * b * tile_bytes;
    let value_tile = |b: u32| base + 2 * rows_bytes + (2 * b + 1) * tile_bytes;
    // this warpgroup's 64 rows of the query and output-gradient tiles
    let (group_q, group_do) = (q_tile + (warp / 4) * 64 * 128, do_tile + (warp / 4) * 64 * 128);

    let my_row = row0 + wr + g;
    let batch_head = (batch * h.heads + head) as usize;
    let (lse_r, delta_r) = row_terms(lse, delta, &h, batch_head, my_row);

    let tiles = h.key_tiles(row0, ROWS, TILE);
    let (kb, vb) = (k.add(h.k.offset(batch, kvh, 0)), v.add(h.v.offset(batch, kvh, 0)));
    let fetch = |j: u32| {
        load_swizzled_async(key_tile(j % 2), kb, h.k.row, j * TILE, TILE, h.s, D, THREADS);
        load_swizzled_async(value_tile(j % 2), vb, h.v.row, j * TILE, TILE, h.s, D, THREADS);
    };
    let (qs, ds) = (
        q.add(h.q.offset(batch, head, 0)),
        dout.add(h.o.offset(batch, head, 0)),
    );
    load_swizzled_async(q_tile, qs, h.q.row, row0, ROWS, h.l, D, THREADS);
    load_swizzled_async(do_tile, ds, h.o.row, row0, ROWS, h.l, D, THREADS);
    if tiles > 0 {
        fetch(0);
    }
    cp_async_commit();

    let held = FlashParams::hopper_backward_held_steps(D);
    let (mut qf, mut dof) = (NOTHING_HELD, NOTHING_HELD);
    if held > 0 {
        cp_async_wait::<0>();
        sync_threads();
        qf = held_rows(q_tile, ROWS, wr, held);
        dof = held_rows(do_tile, ROWS, wr, held);
    }
    let scale = h.scale * LOG2E;
    let mut dqa = [[0f32; 4]; 16];
    let blocks = TILE * 128;
    let mut j = 0;
    while j < tiles {
        cp_async_wait::<0>();
        wg::fence_shared();
        sync_threads();
        if j + 1 < tiles {
            fetch(j + 1);
        }
        cp_async_commit();
        let key0 = j * TILE;
        let (kt, vt) = (key_tile(j % 2), value_tile(j % 2));

        // S and dP: 64 rows × 64 keys each, in flight together, the first
        // waited for alone (ptxas nonetheless schedules most of the
        // exponentials after the second wait: only code after it reads them)
        let mut sc = [[0f32; 4]; 16];
        let mut dp = [[0f32; 4]; 16];
        pin_c(&mut sc, 8);
        pin_c(&mut dp, 8);
        wg::fence();
        scores::<T, D>(&mut sc, (group_q, ROWS), (&qf, held), kt, TILE);
        scores::<T, D>(&mut dp, (group_do, ROWS), (&dof, held), vt, TILE);
        wg::wait_one();
        pin_c(&mut sc, 8);

        // P = exp(S - lse) (0 past the keys and above the diagonal)
        let edge = key0 + TILE > h.s || (h.causal != 0 && key0 + TILE - 1 > row0 + wr);
        unroll(8, |nt| {
            unroll(4, |e| {
                let col = key0 + nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let row = my_row + (e as u32 >> 1) * 8;
                let p = exp2_f32(fma(sc[nt][e], scale, -lse_r[e >> 1]));
                sc[nt][e] = if edge && (col >= h.s || (h.causal != 0 && col > row)) {
                    0.0
                } else {
                    p
                };
            })
        });
        wg::wait();
        pin_c(&mut dp, 8);
        // dS = P (dP - Δ)
        unroll(8, |nt| {
            unroll(4, |e| dp[nt][e] = sc[nt][e] * (dp[nt][e] - delta_r[e >> 1]))
        });
        let mut df = [[0u32; 4]; 8];
        to_a::<T>(&dp, &mut df, 8);

        // dQ += dS·K
        pin_a(&mut df, 4);
        pin_c(&mut dqa, D / 8);
        wg::fence();
        product::<T, D>(&mut dqa, &df, kt, TILE, blocks);
        wg::wait();
        pin_c(&mut dqa, D / 8);
        pin_a(&mut df, 4);
        j += 1;
    }
    cp_async_wait::<0>();

    store_query_gradient::<T, D>(dq, &dqa, &h, (batch, head), my_row, t);
}

macro_rules! flash90_backward {
    ($tn:ident, $t:ty, $dn:ident, $d:literal) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[export_name = crate::kernel_name!(flash90_backward_kv, $dn, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn bwd_kv(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                dout: *const u16,
                lse: *const f32,
                delta: *const f32,
                dk: *mut u16,
                dv: *mut u16,
                args: crate::args::FlashBackwardKvArgs,
            ) {
                let none = core::ptr::null_mut();
                backward_kv::<$t, $d, false>(q, k, v, dout, lse, delta, dk, dv, none, args.h)
            }

            #[export_name = crate::kernel_name!(flash90_backward_kvq, $dn, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn bwd_kvq(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                dout: *const u16,
                lse: *const f32,
                delta: *const f32,
                dk: *mut u16,
                dv: *mut u16,
                dq_acc: *mut f32,
                args: crate::args::FlashBackwardKvqArgs,
            ) {
                backward_kv::<$t, $d, true>(q, k, v, dout, lse, delta, dk, dv, dq_acc, args.h)
            }

            #[export_name = crate::kernel_name!(flash90_backward_q, $dn, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn bwd_q(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                dout: *const u16,
                lse: *const f32,
                delta: *const f32,
                dq: *mut u16,
                args: crate::args::FlashBackwardQArgs,
            ) {
                backward_q::<$t, $d>(q, k, v, dout, lse, delta, dq, args.h)
            }
        };
    };
}

flash90_backward!(f16, F16, d64, 64);
flash90_backward!(f16, F16, d128, 128);
flash90_backward!(bf16, BF16, d64, 64);
flash90_backward!(bf16, BF16, d128, 128);
