//! Fused attention on tensor cores (FlashAttention-2's algorithm and work
//! split, written for `mma.sync`): f16 and bf16 operands, and f32 ones
//! multiplied as tf32 pairs (`flash_operands.rs`), f32 accumulators, head
//! dims 32, 64, 96 and 128, no `L × S` matrix anywhere.
//!
//! - `flash_forward_*`: a block of four warps takes 64 query rows (16 a
//!   warp, kept in registers as A fragments) and walks the key/value tiles
//!   of 64 rows through shared memory: scores by `mma`, the online softmax
//!   in registers (row maxima and sums across the four lanes of a row),
//!   the probabilities packed straight into A fragments for `P·V`. It
//!   writes the output and each row's log-sum-exp.
//! - `flash_backward_kv_*`: a block takes 64 keys (16 a warp) and walks the
//!   query tiles of every query head that shares them, computing the
//!   transposed scores `K·Qᵀ` so that `Pᵀ` and `dSᵀ` are A fragments as
//!   they stand: `dV += Pᵀ·dO`, `dPᵀ = V·dOᵀ`, `dSᵀ = Pᵀ(dPᵀ - Δ)`,
//!   `dK += dSᵀ·Q`.
//! - each with dropout (`*_dropout_*`, a separate build so that the plain
//!   kernels keep their registers): a weight is kept where the uniform of
//!   its place in the batch of score matrices ([`FlashParams::keeps`]) is
//!   at least the probability, as the blocked attention draws it;
//! - `flash_backward_q_*`: a block takes 64 query rows and walks the key
//!   tiles: `dQ += dS·K`. Splitting the backward in two costs one more
//!   product per tile than FlashAttention-2's atomics on `dQ`, and buys
//!   deterministic gradients.
//!
//! Shared tiles keep rows padded by 16 bytes, so the eight rows one
//! `ldmatrix` reads fall in distinct banks. Rows past `L` or `S` are loaded
//! as zeros and masked: their scores are `-inf` (forward) or their
//! probabilities 0 (backward, through a log-sum-exp of `+inf`).

pub(crate) use super::flash_operands::FlashElem;
use super::flash_operands::Tile;
use super::flash_rows::{quad_max, row_terms, store_key_gradients, store_query_gradient, store_rows};
use crate::device::{block_xyz, lane_id, shared, shfl_xor, sync_threads, thread_xy, unroll, Pack};
#[cfg(target_arch = "nvptx64")]
use crate::elem::{BF16, F16};
use crate::params::{FlashParams, HeadStrides};
use crate::tensor_core::{a_lane_offset, b_lane_offset, ldmatrix_x4, shared_address};
use crate::tensor_core::{cp_async_4, cp_async_commit, cp_async_wait};

/// Rows a warp owns.
const WARP_ROWS: u32 = 16;
const BLOCK_ROWS: u32 = FlashParams::BLOCK_ROWS;
const LOG2E: f32 = core::f32::consts::LOG2_E;

/// The block's dynamic shared memory as bytes, declared 16-byte aligned
/// (asked for as 16-byte packs: `cp.async`, `ldmatrix` and the tiles'
/// 16-byte rows need that).
#[inline(always)]
fn shared_tiles() -> *mut u8 {
    shared::<Pack<u32, 4>>() as *mut u8
}

/// The double-buffered pipeline's turn: starts step `n + 1`'s copies
/// (`fetch` starts and commits one step's), waits until step `n`'s have
/// landed, then the barrier that makes them visible to every thread.
///
/// # Safety
/// Every thread of the block calls it; nobody reads the buffer `fetch`
/// fills until its own turn.
#[inline(always)]
unsafe fn next_tiles(n: u32, steps: u32, fetch: impl Fn(u32)) {
    if n + 1 < steps {
        fetch(n + 1);
        cp_async_wait::<1>();
    } else {
        cp_async_wait::<0>();
    }
    sync_threads();
}

/// `2^x` (`ex2.approx`: a few ulp; `-inf` gives 0).
#[inline(always)]
fn exp2(x: f32) -> f32 {
    crate::math::exp2_f32(x)
}

/// The dropout's keep bits of a thread's fragment elements `(nt, e)` for
/// `nt < tiles` (bit `4·nt + e`), `at` giving each element's matrix row and
/// column; all kept without dropout.
#[inline(always)]
fn keep_bits<const DROP: bool>(
    h: &FlashParams,
    bh: u32,
    tiles: usize,
    at: impl Fn(usize, usize) -> (u32, u32),
) -> u64 {
    if !DROP {
        return u64::MAX;
    }
    let mut bits = 0u64;
    unroll(tiles, |nt| {
        unroll(4, |e| {
            let (row, col) = at(nt, e);
            if h.keeps(bh, row, col) {
                bits |= 1 << (4 * nt + e);
            }
        })
    });
    bits
}

/// [`keep_bits`] of a fragment of score rows (this lane's queries
/// `my_row` and `my_row + 8`, keys from `key0`: the forward's and the
/// query backward's orientation). Where `S` is a multiple of 4 each Philox
/// block gives four weights' bits: the two lanes of a pair (`t`, `t ^ 1`)
/// hold four neighbouring keys of two rows, so each draws one row's block
/// and they swap the bits, a quarter of the draws of one a weight.
#[inline(always)]
fn row_keep_bits<const DROP: bool>(
    h: &FlashParams,
    bh: u32,
    tiles: usize,
    my_row: u32,
    key0: u32,
    t: u32,
) -> u64 {
    if !DROP || !h.s.is_multiple_of(4) {
        return keep_bits::<DROP>(h, bh, tiles, |nt, e| {
            (
                my_row + (e as u32 >> 1) * 8,
                key0 + nt as u32 * 8 + 2 * t + (e as u32 & 1),
            )
        });
    }
    let odd = t & 1;
    let mut bits = 0u64;
    unroll(tiles, |nt| {
        // the even lane draws row g's block, the odd one row g + 8's
        let mine = h.keeps4(bh, my_row + 8 * odd, key0 + nt as u32 * 8 + 4 * (t >> 1));
        let theirs = shfl_xor(mine, 1);
        let (top, bottom) = if odd == 0 { (mine, theirs) } else { (theirs, mine) };
        // this lane's keys are 2t and 2t + 1 of the tile: bits 2·odd, 2·odd + 1
        let pick = |b: u32| ((b >> (2 * odd)) & 3) as u64;
        bits |= (pick(top) | pick(bottom) << 2) << (4 * nt);
    });
    bits
}

/// [`keep_bits`] of a fragment of transposed score rows (this lane's keys
/// `my_key` and `my_key + 8`, queries from `q0`: the key/value backward's
/// orientation). Where `S` is a multiple of 4 each Philox block gives four
/// weights' bits: the four lanes of a column (`g` from `4m` to `4m + 3`)
/// hold four neighbouring keys of the same queries, so each draws one of
/// the four blocks they need (two queries, two groups of keys) and they
/// swap the bits.
#[inline(always)]
fn key_keep_bits<const DROP: bool>(
    h: &FlashParams,
    bh: u32,
    tiles: usize,
    my_key: u32,
    q0: u32,
    t: u32,
) -> u64 {
    if !DROP || !h.s.is_multiple_of(4) {
        return keep_bits::<DROP>(h, bh, tiles, |nt, e| {
            (
                q0 + nt as u32 * 8 + 2 * t + (e as u32 & 1),
                my_key + (e as u32 >> 1) * 8,
            )
        });
    }
    // this lane's place among the four, and the group's first key
    let j = (lane_id() >> 2) & 3;
    let first = my_key - j;
    let mut bits = 0u64;
    unroll(tiles, |nt| {
        // block a + 2b: query 2t + a of the tile, keys from first + 8b
        let (a, b) = (j & 1, j >> 1);
        let mine = h.keeps4(bh, q0 + nt as u32 * 8 + 2 * t + a, first + 8 * b);
        let (x1, x2) = (shfl_xor(mine, 4), shfl_xor(mine, 8));
        let x3 = shfl_xor(x1, 8);
        let all = mine << (4 * j) | x1 << (4 * (j ^ 1)) | x2 << (4 * (j ^ 2)) | x3 << (4 * (j ^ 3));
        // element e: query 2t + (e & 1), key my_key + 8 (e >> 1): bit j of block e
        unroll(4, |e| {
            bits |= (((all >> (4 * e as u32 + j)) & 1) as u64) << (4 * nt + e)
        });
    });
    bits
}

/// The dropout factor of fragment element `(nt, e)` from its keep bits.
#[inline(always)]
fn kept<const DROP: bool>(h: &FlashParams, bits: u64, nt: usize, e: usize) -> f32 {
    if !DROP {
        1.0
    } else if (bits >> (4 * nt + e)) & 1 != 0 {
        h.dropout_scale
    } else {
        0.0
    }
}

/// `acc[..2·n16] += a · B` where B is the `[K × 16·n16]` slice at row
/// `k0` of the row-major `[k][n]` tile `t`.
#[inline(always)]
unsafe fn mma_kn<T: FlashElem>(acc: &mut [[f32; 4]; 16], a: &T::A, t: Tile<T>, k0: u32, n16: usize) {
    unrolled!(n16, np => {
        let b = T::b_kn(t, k0, np as u32 * 16);
        T::mma(&mut acc[2 * np], a, &b[0]);
        T::mma(&mut acc[2 * np + 1], a, &b[1]);
    });
}

/// `acc[..2·n16] += a · Bᵀ` where B's rows are rows `0..16·n16` of the
/// row-major `[n][k]` tile `t` at column `k0`.
#[inline(always)]
unsafe fn mma_nk<T: FlashElem>(acc: &mut [[f32; 4]; 16], a: &T::A, t: Tile<T>, k0: u32, n16: usize) {
    // the lane offsets count 16-bit elements: twice as many bytes
    let (br, bc) = b_lane_offset(lane_id());
    unrolled!(n16, np => {
        let b = ldmatrix_x4(t.addr(np as u32 * 16 + br, k0) + 2 * bc);
        T::mma(&mut acc[2 * np], a, &T::b(b[0], b[1]));
        T::mma(&mut acc[2 * np + 1], a, &T::b(b[2], b[3]));
    });
}

/// The registers of the A fragment of rows `r0..r0 + 16`, the k-step at
/// column `k0` of `t`, as `ldmatrix` gives them ([`FlashElem::a`] makes
/// the fragment).
#[inline(always)]
unsafe fn frag_a<T: FlashElem>(t: Tile<T>, r0: u32, k0: u32) -> [u32; 4] {
    let (ar, ac) = a_lane_offset(lane_id());
    ldmatrix_x4(t.addr(r0 + ar, k0) + 2 * ac)
}

/// The element offset of the base of head `head` of batch `batch` in `s`.
#[inline(always)]
fn head_base(s: &HeadStrides, batch: u32, head: u32) -> usize {
    s.offset(batch, head, 0)
}

/// The forward of one block: 64 query rows of one head.
///
/// # Safety
/// Launched with [`FlashParams::THREADS`] threads, a grid of `(⌈L/64⌉, H, B)` and
/// [`FlashParams::forward_shared_bytes`] of shared memory; the pointers and strides
/// describe live tensors as [`FlashParams`] says.
#[inline(always)]
pub(crate) unsafe fn forward<T: FlashElem, const D: usize, const DROP: bool>(
    q: *const T::Bits,
    k: *const T::Bits,
    v: *const T::Bits,
    o: *mut T::Bits,
    lse: *mut f32,
    h: FlashParams,
) {
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    let (tile, head, batch) = block_xyz();
    let kvh = head / h.group;
    let row0 = tile * BLOCK_ROWS;
    let wr = warp * WARP_ROWS;
    let smem = shared_tiles();
    // two buffers of a key and a value tile: tile j + 1 loads while j is used
    let buffer = |b: u32| {
        let at = |t: u32| Tile::<T>::new(smem.add(t as usize * Tile::<T>::len(BLOCK_ROWS, D)), D);
        (at(2 * b), at(2 * b + 1))
    };
    let (qb, kb, vb) = (
        q.add(head_base(&h.q, batch, head)),
        k.add(head_base(&h.k, batch, kvh)),
        v.add(head_base(&h.v, batch, kvh)),
    );

    // this warp's 16 query rows, as A fragments for every k-step: loaded
    // once into registers (through the first buffer), or at every step
    // from a tile of their own after the buffers
    let keep = FlashParams::rows_in_registers(D, size_of::<T::Bits>(), 1);
    let tq = if keep {
        buffer(0).0
    } else {
        Tile::<T>::new(smem.add(4 * Tile::<T>::len(BLOCK_ROWS, D)), D)
    };
    tq.load(qb, h.q.row, row0, BLOCK_ROWS, h.l, D);
    sync_threads();
    let mut qf = [[0u32; 4]; 16];
    if keep {
        unroll(D / T::K, |kk| qf[kk] = frag_a(tq, wr, (kk * T::K) as u32));
        sync_threads();
    }
    let fetch = |j: u32| {
        let (tk, tv) = buffer(j % 2);
        tk.load_async(kb, h.k.row, j * BLOCK_ROWS, BLOCK_ROWS, h.s, D);
        tv.load_async(vb, h.v.row, j * BLOCK_ROWS, BLOCK_ROWS, h.s, D);
        cp_async_commit();
    };

    let scale = h.scale * LOG2E;
    let mut m_run = [f32::NEG_INFINITY; 2];
    let mut l_run = [0f32; 2];
    let mut acc = [[0f32; 4]; 16];
    let tiles = h.key_tiles(row0, BLOCK_ROWS, BLOCK_ROWS);
    let my_row = row0 + wr + g;
    fetch(0);
    let mut j = 0;
    while j < tiles {
        let key0 = j * BLOCK_ROWS;
        next_tiles(j, tiles, fetch);
        let (tk, tv) = buffer(j % 2);

        // scores of 16 rows × 64 keys, in log2 units
        let mut sc = [[0f32; 4]; 16];
        unrolled!(D / T::K, kk => {
            let k0 = (kk * T::K) as u32;
            let a = if keep { qf[kk] } else { frag_a(tq, wr, k0) };
            mma_nk::<T>(&mut sc, &T::a(a), tk, k0, 4);
        });
        let masked = key0 + BLOCK_ROWS > h.s || (h.causal != 0 && key0 + BLOCK_ROWS - 1 > row0 + wr);
        unroll(8, |nt| {
            unroll(4, |e| {
                let col = key0 + nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let row = my_row + (e as u32 >> 1) * 8;
                let x = sc[nt][e] * scale;
                sc[nt][e] = if masked && (col >= h.s || (h.causal != 0 && col > row)) {
                    f32::NEG_INFINITY
                } else {
                    x
                };
            })
        });

        // the online softmax: new maxima, rescaled sums and outputs
        let mut mx = m_run;
        unroll(8, |nt| {
            mx[0] = mx[0].max(sc[nt][0].max(sc[nt][1]));
            mx[1] = mx[1].max(sc[nt][2].max(sc[nt][3]));
        });
        let mut base = [0f32; 2];
        let mut alpha = [0f32; 2];
        unroll(2, |r| {
            mx[r] = quad_max(mx[r]);
            base[r] = if mx[r] == f32::NEG_INFINITY { 0.0 } else { mx[r] };
            alpha[r] = exp2(m_run[r] - base[r]);
            m_run[r] = mx[r];
            l_run[r] *= alpha[r];
        });
        unroll(8, |nt| {
            unroll(4, |e| {
                let p = exp2(sc[nt][e] - base[e >> 1]);
                sc[nt][e] = p;
                l_run[e >> 1] += p;
            })
        });
        unroll(D / 8, |nt| unroll(4, |e| acc[nt][e] *= alpha[e >> 1]));
        // the sums keep every weight; the output only the kept ones
        if DROP {
            let bits = row_keep_bits::<DROP>(&h, batch * h.heads + head, 8, my_row, key0, t);
            unroll(8, |nt| unroll(4, |e| sc[nt][e] *= kept::<DROP>(&h, bits, nt, e)));
        }

        // out += P · V
        unrolled!(BLOCK_ROWS as usize / T::K, kk => {
            let a = T::a_of(|nt, e| sc[nt][e], kk);
            mma_kn::<T>(&mut acc, &a, tv, (kk * T::K) as u32, D / 16);
        });
        sync_threads();
        j += 1;
    }

    store_rows::<T, D>(o, lse, &h, (batch, head), my_row, t, &acc, (m_run, l_run));
}

/// The key and value gradients of one block: 64 keys of one key/value head,
/// over every query head of its group.
///
/// # Safety
/// Launched with [`FlashParams::THREADS`] threads, a grid of `(⌈S/64⌉, H / group, B)`
/// and [`FlashParams::backward_kv_shared_bytes`] of shared memory; as for [`forward`] otherwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn backward_kv<T: FlashElem, const D: usize, const DROP: bool>(
    q: *const T::Bits,
    k: *const T::Bits,
    v: *const T::Bits,
    dout: *const T::Bits,
    lse: *const f32,
    delta: *const f32,
    dk: *mut T::Bits,
    dv: *mut T::Bits,
    h: FlashParams,
) {
    let bq = FlashParams::kv_query_rows(D);
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    let (tile, kvh, batch) = block_xyz();
    let key0 = tile * BLOCK_ROWS;
    let wr = warp * WARP_ROWS;
    let smem = shared_tiles();
    let tk = Tile::<T>::new(smem, D);
    let tv = Tile::<T>::new(smem.add(Tile::<T>::len(BLOCK_ROWS, D)), D);
    // two buffers of a query tile, an output-gradient tile and the tile's
    // log-sum-exps and deltas: tile n + 1 loads while n is used
    let tiles_end = 2 * Tile::<T>::len(BLOCK_ROWS, D);
    let buffer = |b: u32| {
        let at = |t: u32| Tile::<T>::new(smem.add(tiles_end + t as usize * Tile::<T>::len(bq, D)), D);
        let stats = smem.add(tiles_end + 4 * Tile::<T>::len(bq, D)) as *mut f32;
        let s = stats.add(2 * b as usize * bq as usize);
        (at(2 * b), at(2 * b + 1), s, s.add(bq as usize))
    };

    let scale = h.scale * LOG2E;
    let mut dka = [[0f32; 4]; 16];
    let mut dva = [[0f32; 4]; 16];
    let my_key = key0 + wr + g;
    let first = if h.causal != 0 { key0 / bq } else { 0 };
    let query_tiles = h.l.div_ceil(bq);
    let per_head = query_tiles.saturating_sub(first);
    // step n: query head kvh·group + n / per_head, query tile first + n % per_head
    let step_of = |n: u32| (kvh * h.group + n / per_head, (first + n % per_head) * bq);
    let fetch = |n: u32| {
        let (hq, q0) = step_of(n);
        let (tq, tdo, lse_s, delta_s) = buffer(n % 2);
        tq.load_async(q.add(head_base(&h.q, batch, hq)), h.q.row, q0, bq, h.l, D);
        tdo.load_async(dout.add(head_base(&h.o, batch, hq)), h.o.row, q0, bq, h.l, D);
        if tid < bq {
            let row = q0 + tid;
            let inside = row < h.l;
            let at = ((batch * h.heads + hq) * h.l) as usize + if inside { row as usize } else { 0 };
            cp_async_4(
                shared_address(lse_s.add(tid as usize)),
                lse.add(at) as *const u8,
                inside,
            );
            cp_async_4(
                shared_address(delta_s.add(tid as usize)),
                delta.add(at) as *const u8,
                inside,
            );
        }
        cp_async_commit();
    };

    // the block's keys and values, with the first query tile
    tk.load_async(
        k.add(head_base(&h.k, batch, kvh)),
        h.k.row,
        key0,
        BLOCK_ROWS,
        h.s,
        D,
    );
    tv.load_async(
        v.add(head_base(&h.v, batch, kvh)),
        h.v.row,
        key0,
        BLOCK_ROWS,
        h.s,
        D,
    );
    let steps = h.group * per_head;
    if steps > 0 {
        fetch(0);
    } else {
        cp_async_commit();
    }
    let mut n = 0;
    while n < steps {
        next_tiles(n, steps, fetch);
        let (hq, q0) = step_of(n);
        let (tq, tdo, lse_s, delta_s) = buffer(n % 2);

        // Sᵀ: 16 keys × bq queries; then Pᵀ (0 past the queries and above the diagonal)
        let mut p = [[0f32; 4]; 16];
        unrolled!(D / T::K, kk => {
            let a = T::a(frag_a(tk, wr, (kk * T::K) as u32));
            mma_nk::<T>(&mut p, &a, tq, (kk * T::K) as u32, bq as usize / 16);
        });
        unroll(bq as usize / 8, |nt| {
            unroll(4, |e| {
                let c = nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let key = my_key + (e as u32 >> 1) * 8;
                let x = exp2(p[nt][e] * scale - *lse_s.add(c as usize) * LOG2E);
                let out = q0 + c >= h.l || (h.causal != 0 && q0 + c < key);
                p[nt][e] = if out { 0.0 } else { x };
            })
        });
        // the kept weights of this tile (rows of Pᵀ are keys, columns queries)
        let bits = key_keep_bits::<DROP>(&h, batch * h.heads + hq, bq as usize / 8, my_key, q0, t);
        // dV += (Pᵀ with dropout) · dO
        unrolled!(bq as usize / T::K, kk => {
            let a = T::a_of(|nt, e| p[nt][e] * kept::<DROP>(&h, bits, nt, e), kk);
            mma_kn::<T>(&mut dva, &a, tdo, (kk * T::K) as u32, D / 16);
        });
        // dPᵀ = V · dOᵀ, then dSᵀ = Pᵀ (dPᵀ - Δ)
        let mut dp = [[0f32; 4]; 16];
        unrolled!(D / T::K, kk => {
            let a = T::a(frag_a(tv, wr, (kk * T::K) as u32));
            mma_nk::<T>(&mut dp, &a, tdo, (kk * T::K) as u32, bq as usize / 16);
        });
        unroll(bq as usize / 8, |nt| {
            unroll(4, |e| {
                let c = nt as u32 * 8 + 2 * t + (e as u32 & 1);
                p[nt][e] *= dp[nt][e] * kept::<DROP>(&h, bits, nt, e) - *delta_s.add(c as usize);
            })
        });
        // dK += dSᵀ · Q
        unrolled!(bq as usize / T::K, kk => {
            let a = T::a_of(|nt, e| p[nt][e], kk);
            mma_kn::<T>(&mut dka, &a, tq, (kk * T::K) as u32, D / 16);
        });
        sync_threads();
        n += 1;
    }
    cp_async_wait::<0>();

    store_key_gradients::<T, D>((dk, dv), &dka, &dva, &h, (batch, kvh), my_key, t);
}

/// The query gradient of one block: 64 query rows of one head.
///
/// # Safety
/// Launched with [`FlashParams::THREADS`] threads, a grid of `(⌈L/64⌉, H, B)` and
/// [`FlashParams::backward_q_shared_bytes`] of shared memory; as for [`forward`] otherwise.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) unsafe fn backward_q<T: FlashElem, const D: usize, const DROP: bool>(
    q: *const T::Bits,
    k: *const T::Bits,
    v: *const T::Bits,
    dout: *const T::Bits,
    lse: *const f32,
    delta: *const f32,
    dq: *mut T::Bits,
    h: FlashParams,
) {
    let bk = FlashParams::q_key_rows(D);
    let (tid, _) = thread_xy();
    let (lane, warp) = (tid & 31, tid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    let (tile, head, batch) = block_xyz();
    let kvh = head / h.group;
    let row0 = tile * BLOCK_ROWS;
    let wr = warp * WARP_ROWS;
    let smem = shared_tiles();
    let tq = Tile::<T>::new(smem, D);
    let tdo = Tile::<T>::new(smem.add(Tile::<T>::len(BLOCK_ROWS, D)), D);
    // then two buffers of a key and a value tile of `bk` rows: tile j + 1
    // loads while j is used; in the same memory where the rows of Q and dO
    // move to registers, after them where they stay
    let keep = FlashParams::rows_in_registers(D, size_of::<T::Bits>(), 2);
    let staged = if keep {
        0
    } else {
        2 * Tile::<T>::len(BLOCK_ROWS, D)
    };
    let buffer = |b: u32| {
        let at = |t: u32| Tile::<T>::new(smem.add(staged + t as usize * Tile::<T>::len(bk, D)), D);
        (at(2 * b), at(2 * b + 1))
    };
    let batch_head = (batch * h.heads + head) as usize;

    // this warp's rows of Q and dO as A fragments
    tq.load(
        q.add(head_base(&h.q, batch, head)),
        h.q.row,
        row0,
        BLOCK_ROWS,
        h.l,
        D,
    );
    tdo.load(
        dout.add(head_base(&h.o, batch, head)),
        h.o.row,
        row0,
        BLOCK_ROWS,
        h.l,
        D,
    );
    sync_threads();
    let mut qf = [[0u32; 4]; 16];
    let mut df = [[0u32; 4]; 16];
    if keep {
        unrolled!(D / T::K, kk => {
            qf[kk] = frag_a(tq, wr, (kk * T::K) as u32);
            df[kk] = frag_a(tdo, wr, (kk * T::K) as u32);
        });
        sync_threads();
    }

    let my_row = row0 + wr + g;
    let (lse_r, delta_r) = row_terms(lse, delta, &h, batch_head, my_row);

    let scale = h.scale * LOG2E;
    let mut dqa = [[0f32; 4]; 16];
    let tiles = h.key_tiles(row0, BLOCK_ROWS, bk);
    let (kb, vb) = (
        k.add(head_base(&h.k, batch, kvh)),
        v.add(head_base(&h.v, batch, kvh)),
    );
    let fetch = |j: u32| {
        let (tk, tv) = buffer(j % 2);
        tk.load_async(kb, h.k.row, j * bk, bk, h.s, D);
        tv.load_async(vb, h.v.row, j * bk, bk, h.s, D);
        cp_async_commit();
    };
    fetch(0);
    let mut j = 0;
    while j < tiles {
        let key0 = j * bk;
        next_tiles(j, tiles, fetch);
        let (tk, tv) = buffer(j % 2);

        // P = exp(S - lse), masked
        let mut p = [[0f32; 4]; 16];
        unrolled!(D / T::K, kk => {
            let k0 = (kk * T::K) as u32;
            let a = if keep { qf[kk] } else { frag_a(tq, wr, k0) };
            mma_nk::<T>(&mut p, &T::a(a), tk, k0, bk as usize / 16)
        });
        unroll(bk as usize / 8, |nt| {
            unroll(4, |e| {
                let col = key0 + nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let row = my_row + (e as u32 >> 1) * 8;
                let x = exp2(p[nt][e] * scale - lse_r[e >> 1]);
                p[nt][e] = if col >= h.s || (h.causal != 0 && col > row) {
                    0.0
                } else {
                    x
                };
            })
        });
        // dP = dO · Vᵀ (through the dropout), dS = P (dP - Δ)
        let bits = row_keep_bits::<DROP>(&h, batch * h.heads + head, bk as usize / 8, my_row, key0, t);
        let mut dp = [[0f32; 4]; 16];
        unrolled!(D / T::K, kk => {
            let k0 = (kk * T::K) as u32;
            let a = if keep { df[kk] } else { frag_a(tdo, wr, k0) };
            mma_nk::<T>(&mut dp, &T::a(a), tv, k0, bk as usize / 16)
        });
        unroll(bk as usize / 8, |nt| {
            unroll(4, |e| {
                p[nt][e] *= dp[nt][e] * kept::<DROP>(&h, bits, nt, e) - delta_r[e >> 1]
            })
        });
        // dQ += dS · K
        unrolled!(bk as usize / T::K, kk => {
            let a = T::a_of(|nt, e| p[nt][e], kk);
            mma_kn::<T>(&mut dqa, &a, tk, (kk * T::K) as u32, D / 16);
        });
        sync_threads();
        j += 1;
    }

    store_query_gradient::<T, D>(dq, &dqa, &h, (batch, head), my_row, t);
}

macro_rules! flash {
    ($tn:ident, $t:ty, $dn:ident, $d:literal) => {
        flash!(@variant $tn, $t, $dn, $d, false, flash_forward, flash_backward_kv, flash_backward_q);
        flash!(@variant $tn, $t, $dn, $d, true, flash_forward_dropout, flash_backward_kv_dropout, flash_backward_q_dropout);
    };
    (@variant $tn:ident, $t:ty, $dn:ident, $d:literal, $drop:literal, $fwd:ident, $kv:ident, $q:ident) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[export_name = crate::kernel_name!($fwd, $dn, $tn)]
            unsafe extern "ptx-kernel" fn fwd(
                q: *const <$t as FlashElem>::Bits,
                k: *const <$t as FlashElem>::Bits,
                v: *const <$t as FlashElem>::Bits,
                o: *mut <$t as FlashElem>::Bits,
                lse: *mut f32,
                args: crate::args::FlashForwardArgs,
            ) {
                forward::<$t, $d, $drop>(q, k, v, o, lse, args.h.replayed())
            }

            #[export_name = crate::kernel_name!($kv, $dn, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn bwd_kv(
                q: *const <$t as FlashElem>::Bits,
                k: *const <$t as FlashElem>::Bits,
                v: *const <$t as FlashElem>::Bits,
                dout: *const <$t as FlashElem>::Bits,
                lse: *const f32,
                delta: *const f32,
                dk: *mut <$t as FlashElem>::Bits,
                dv: *mut <$t as FlashElem>::Bits,
                args: crate::args::FlashBackwardKvArgs,
            ) {
                backward_kv::<$t, $d, $drop>(q, k, v, dout, lse, delta, dk, dv, args.h.replayed())
            }

            #[export_name = crate::kernel_name!($q, $dn, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn bwd_q(
                q: *const <$t as FlashElem>::Bits,
                k: *const <$t as FlashElem>::Bits,
                v: *const <$t as FlashElem>::Bits,
                dout: *const <$t as FlashElem>::Bits,
                lse: *const f32,
                delta: *const f32,
                dq: *mut <$t as FlashElem>::Bits,
                args: crate::args::FlashBackwardQArgs,
            ) {
                backward_q::<$t, $d, $drop>(q, k, v, dout, lse, delta, dq, args.h.replayed())
            }
        };
    };
}

flash!(f16, F16, d32, 32);
flash!(f16, F16, d64, 64);
flash!(f16, F16, d96, 96);
flash!(f16, F16, d128, 128);
flash!(bf16, BF16, d32, 32);
flash!(bf16, BF16, d64, 64);
flash!(bf16, BF16, d96, 96);
flash!(bf16, BF16, d128, 128);
flash!(f32, f32, d32, 32);
flash!(f32, f32, d64, 64);
flash!(f32, f32, d96, 96);
flash!(f32, f32, d128, 128);
