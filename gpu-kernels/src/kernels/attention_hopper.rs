//! The attention forward on Hopper's warpgroup tensor cores (sm_90a,
//! `flash90_forward_*`): f16 and bf16, head dims 64 and 128, without
//! dropout (the `mma.sync` kernels of `attention.rs` serve the rest and
//! every other GPU).
//!
//! - A block of a producer warpgroup and three consumers (head dim 64, 160
//!   registers a consumer thread) or two (head dim 128, 240 registers) takes 64
//!   query rows a consumer. The producer loads the query tile and then the
//!   key/value tiles of 128 keys by `cp.async` into three buffers of each, in
//!   `wgmma`'s 128-byte swizzle, and keeps 24 registers a thread
//!   (`setmaxnreg`). The consumers compute, 64 query rows each. `mbarrier`s
//!   ([`crate::pipeline`]) pass the buffers back and forth: a consumer waits
//!   only for the tile it needs and gives a buffer back once its products are
//!   done, so the consumers drift apart and one's softmax runs beside another's
//!   products; no barrier of the whole block is left in the loop. A consumer
//!   stops at the last key tile its own 64 rows need (fewer than the block's on
//!   the causal diagonal; one where its rows are all past the queries) and
//!   gives the block's later tiles back unread. Two consumers (head dim 128)
//!   also take turns issuing their products (ping-pong, through two named
//!   barriers), so one's products run while the other makes probabilities.
//! - The scores `Q·Kᵀ` (`m64n128k16`, K-major; a warp may hold the first
//!   columns of its 16 query rows in registers as A fragments, loaded once:
//!   [`FlashParams::hopper_forward_held_steps`])
//!   and the product `P·V` (`m64nDk16`, P from registers, V read N-major:
//!   neither operand is ever transposed) are asynchronous, and the loop is
//!   skewed by one tile, as FlashAttention-3 does within a warpgroup: step
//!   `j` waits for the scores of tile `j`, runs their online softmax while
//!   the product of tile `j - 1` is in flight, rescales the output, then
//!   issues the scores of tile `j + 1` and the product of tile `j`.
//! - The softmax reduces rows as trees (two warps a scheduler hide little
//!   latency) and folds a positive scale into its exponentials.
//! - The output and each row's log-sum-exp are those of the `mma.sync`
//!   forward, so the backward kernels take either.

use super::flash_rows::{quad_max, store_rows};
use crate::device::{
    block_xyz, named_barrier_arrive, named_barrier_sync, shared, sync_threads, thread_xy, unroll, warp_any,
    Pack,
};
#[cfg(target_arch = "nvptx64")]
use crate::elem::{BF16, F16};
use crate::fragments::{a_lane_offset, swizzled_offset, wgmma_descriptor, wgmma_descriptor_plus};
use crate::params::FlashParams;
use crate::pipeline;
use crate::tensor_core::{cp_async_16, cp_async_wait, ldmatrix_x4, pack, shared_address, MmaHalf};
use crate::warpgroup::{self as wg, pin, pin_c};

const LOG2E: f32 = core::f32::consts::LOG2_E;

/// Rows `r0..r0 + keys` (queries, keys or values) of a `[n, d]` matrix at
/// `src` (rows `row` elements apart) into the swizzled tile at shared
/// address `dst` (1024-byte aligned), in 16-byte pieces shared among the
/// block's `threads`; rows at or past `n` are zeros.
///
/// A thread copies the same piece of every `threads / (d / 8)`-th row; when
/// that stride is a multiple of the swizzle's 8 rows, its place in the tile
/// and in `src` only move by constants from one row to the next, so a copy
/// costs an add or two beside its `cp.async`.
///
/// # Safety
/// Every thread of the block calls it; `src`'s rows below `n` are readable
/// and 16-byte aligned; nobody touches the tile until the copies have
/// landed, been fenced ([`wg::fence_shared`]) and a barrier passed.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn load_swizzled_async(
    dst: u32,
    src: *const u16,
    row: u32,
    r0: u32,
    keys: u32,
    n: u32,
    d: usize,
    threads: u32,
) {
    let (tid, _) = thread_xy();
    let pieces = d as u32 / 8;
    let rows_a_pass = threads / pieces;
    if threads.is_multiple_of(pieces) && rows_a_pass.is_multiple_of(8) {
        let (mut r, c) = (tid / pieces, tid % pieces);
        let mut to = dst + swizzled_offset(r, c, keys);
        let mut from = src.wrapping_add((r0 + r) as usize * row as usize + c as usize * 8);
        let step = rows_a_pass as usize * row as usize;
        while r < keys {
            let inside = r0 + r < n;
            cp_async_16(to, if inside { from } else { src } as *const u8, inside);
            r += rows_a_pass;
            to += rows_a_pass * 128;
            from = from.wrapping_add(step);
        }
        return;
    }
    let mut i = tid;
    while i < keys * pieces {
        let (r, c) = (i / pieces, i % pieces);
        let g = r0 + r;
        let inside = g < n;
        let from = if inside {
            src.add(g as usize * row as usize + c as usize * 8)
        } else {
            src
        };
        cp_async_16(dst + swizzled_offset(r, c, keys), from as *const u8, inside);
        i += threads;
    }
}

/// `op` over row `r` (0: this lane's first row, 1: its second) of the
/// first `n` fragments of `sc`, as a tree of depth log₂(2n).
#[inline(always)]
fn tree(sc: &[[f32; 4]; 16], n: usize, r: usize, op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut v = [0f32; 16];
    unroll(n, |nt| v[nt] = op(sc[nt][2 * r], sc[nt][2 * r + 1]));
    let mut width = n;
    while width > 1 {
        width /= 2;
        unroll(width, |i| v[i] = op(v[i], v[i + width]));
    }
    v[0]
}

/// `a·b + c` rounded once.
#[inline(always)]
pub(super) fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            core::arch::asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// The online softmax of one tile of scores `sc` (16 rows × `8·n` keys from
/// `key0`, this lane's rows `my_row` and `my_row + 8`, the warp's first
/// `warp_row`): masks (only a tile that crosses the end of the keys or the
/// causal diagonal), turns the scores into probabilities against the
/// running maxima, updates the running sums and returns the factors the
/// output must be rescaled by, if it must be.
///
/// A running maximum moves only when some row of the warp has outgrown its
/// own by more than [`RESCALE_AT`] (log2 units), as FlashAttention-4 does:
/// against a stale maximum the probabilities stay below 2^8, the sums and
/// the output carry the same maximum, and most tiles of a long row skip
/// rescaling the output.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn softmax_tile(
    sc: &mut [[f32; 4]; 16],
    n: usize,
    m_run: &mut [f32; 2],
    l_run: &mut [f32; 2],
    scale: f32,
    h: FlashParams,
    key0: u32,
    my_row: u32,
    warp_row: u32,
    t: u32,
) -> Option<[f32; 2]> {
    let keys = 8 * n as u32;
    // a positive scale is folded into the exponentials (the maxima of the
    // raw scores are the scaled maxima); any other multiplies first
    let s = if scale > 0.0 {
        scale
    } else {
        unroll(n, |nt| unroll(4, |e| sc[nt][e] *= scale));
        1.0
    };
    if key0 + keys > h.s || (h.causal != 0 && key0 + keys - 1 > warp_row) {
        unroll(n, |nt| {
            unroll(4, |e| {
                let col = key0 + nt as u32 * 8 + 2 * t + (e as u32 & 1);
                let row = my_row + (e as u32 >> 1) * 8;
                if col >= h.s || (h.causal != 0 && col > row) {
                    sc[nt][e] = f32::NEG_INFINITY;
                }
            })
        });
    }
    // reductions as trees, not chains: two warps a scheduler hide little latency
    let mut mx = [0f32; 2];
    unroll(2, |r| mx[r] = tree(sc, n, r, f32::max));
    unroll(2, |r| mx[r] = m_run[r].max(quad_max(mx[r]) * s));
    // (from -inf any finite maximum moves; a row masked so far stays at -inf)
    let moves = warp_any(mx[0] > m_run[0] + RESCALE_AT || mx[1] > m_run[1] + RESCALE_AT);
    let mut alpha = None;
    if moves {
        let mut a = [0f32; 2];
        unroll(2, |r| {
            let shift = if mx[r] == f32::NEG_INFINITY { 0.0 } else { mx[r] };
            a[r] = crate::math::exp2_f32(m_run[r] - shift);
            m_run[r] = mx[r];
            l_run[r] *= a[r];
        });
        alpha = Some(a);
    }
    let mut shift = [0f32; 2];
    unroll(2, |r| {
        shift[r] = if m_run[r] == f32::NEG_INFINITY {
            0.0
        } else {
            m_run[r]
        }
    });
    unroll(n, |nt| {
        unroll(4, |e| {
            sc[nt][e] = crate::math::exp2_f32(fma(sc[nt][e], s, -shift[e >> 1]))
        })
    });
    unroll(2, |r| l_run[r] += tree(sc, n, r, |a, b| a + b));
    alpha
}

/// How far (log2 units) a row's maximum may outgrow the running one before
/// the running one moves: probabilities stay below 2^8, well inside f16.
const RESCALE_AT: f32 = 8.0;

/// The descriptor of columns `16kk..16kk + 16` of the swizzled tile at
/// `tile` (`rows` rows, K-major), the operand of a scores product's step
/// `kk`.
#[inline(always)]
fn k_major_step(tile: u32, rows: u32, kk: usize) -> u64 {
    let (half, quarter) = (kk as u32 / 4, kk as u32 % 4);
    wgmma_descriptor_plus(wgmma_descriptor(tile, 16, 1024), half * rows * 128 + quarter * 32)
}

/// Issues `sc += A·Bᵀ` over the head dim `D` (the scores `Q·Kᵀ`, and in
/// the backward `K·Qᵀ`, `V·dOᵀ` or `dO·Vᵀ`) and commits it: A the
/// warpgroup's 64 rows starting at shared address `a` of a swizzled tile of
/// `a_rows` rows, of which this warp holds the first `steps` k-steps
/// (columns `0..16·steps`) in registers as the A fragments `held`
/// ([`held_rows`]), so that those read only B from shared memory; B the
/// swizzled tile at `tile` (`keys` rows, 64 or 128).
///
/// # Safety
/// Every thread of the warpgroup calls it after [`wg::fence`]; the tiles
/// have landed and been fenced.
#[inline(always)]
pub(super) unsafe fn scores<T: MmaHalf, const D: usize>(
    sc: &mut [[f32; 4]; 16],
    (a, a_rows): (u32, u32),
    (held, steps): (&[[u32; 4]; 8], usize),
    tile: u32,
    keys: u32,
) {
    unroll(D / 16, |kk| {
        let b = k_major_step(tile, keys, kk);
        match (kk < steps, keys == 64) {
            (true, true) => wg::mma_n64::<T>(sc, &held[kk], b),
            (true, false) => wg::mma_n128::<T>(sc, &held[kk], b),
            (false, true) => wg::mma_ss_n64::<T>(sc, k_major_step(a, a_rows, kk), b),
            (false, false) => wg::mma_ss_n128::<T>(sc, k_major_step(a, a_rows, kk), b),
        }
    });
    wg::commit();
}

/// No rows held in registers: the `held` of a [`scores`] with no held steps.
pub(super) const NOTHING_HELD: [[u32; 4]; 8] = [[0; 4]; 8];

/// This warp's A fragments of rows `row0..row0 + 16` of the swizzled tile
/// at `tile` (`rows` rows), the first `steps` k-steps of them (fragment
/// `kk` columns `16kk..16kk + 16`): the operand a block holds for all its
/// [`scores`].
///
/// # Safety
/// Every lane of the warp calls it; the tile has landed.
#[inline(always)]
pub(super) unsafe fn held_rows(tile: u32, rows: u32, row0: u32, steps: usize) -> [[u32; 4]; 8] {
    let (r, c) = a_lane_offset(thread_xy().0 & 31);
    let mut held = [[0u32; 4]; 8];
    unroll(steps, |kk| {
        held[kk] = ldmatrix_x4(tile + swizzled_offset(row0 + r, (16 * kk as u32 + c) / 8, rows));
    });
    held
}

/// Issues `acc += P·V` for the probabilities' A fragments `pf` and the
/// value tile at `tile` (`keys` rows, read N-major, `blocks` bytes between
/// its blocks of 64 columns), and commits it; in the backward also `dV +=
/// Pᵀ·dO`, `dK += dSᵀ·Q` and `dQ += dS·K`.
///
/// # Safety
/// As for [`scores`].
#[inline(always)]
pub(super) unsafe fn product<T: MmaHalf, const D: usize>(
    acc: &mut [[f32; 4]; 16],
    pf: &[[u32; 4]; 8],
    tile: u32,
    keys: u32,
    blocks: u32,
) {
    unroll(keys as usize / 16, |kk| {
        let b = wgmma_descriptor_plus(wgmma_descriptor(tile, blocks, 1024), kk as u32 * 16 * 128);
        if D == 64 {
            wg::mma_n64_n_major::<T>(acc, &pf[kk], b);
        } else {
            wg::mma_n128_n_major::<T>(acc, &pf[kk], b);
        }
    });
    wg::commit();
}

/// The first `2·n` probability fragments of `sc`, rounded to `T`, as the
/// `n` A fragments of `pf`.
#[inline(always)]
pub(super) fn to_a<T: MmaHalf>(sc: &[[f32; 4]; 16], pf: &mut [[u32; 4]; 8], frags: usize) {
    unroll(frags / 2, |kk| {
        let (lo, hi) = (&sc[2 * kk], &sc[2 * kk + 1]);
        pf[kk] = [
            pack::<T>(lo[0], lo[1]),
            pack::<T>(lo[2], lo[3]),
            pack::<T>(hi[0], hi[1]),
            pack::<T>(hi[2], hi[3]),
        ];
    });
}

/// [`pin`] of the first `n` A fragments.
#[inline(always)]
pub(super) fn pin_a(a: &mut [[u32; 4]; 8], n: usize) {
    unroll(n, |kk| unroll(4, |r| pin(&mut a[kk][r])));
}

/// Where a block of the forward keeps its tiles and its pipeline's
/// barriers in shared memory: key tile `j` and value tile `j` in buffer `j
/// % BUFFERS`, each buffer with a barrier for its copies having landed and
/// one for its readers being done (its use by tile `j` being phase `j /
/// BUFFERS` of both).
#[derive(Clone, Copy)]
struct Stages {
    tiles: u32,
    tile_bytes: u32,
    barriers: u32,
}

impl Stages {
    const BUFFERS: u32 = FlashParams::HOPPER_BUFFERS;

    fn key_tile(self, j: u32) -> u32 {
        self.tiles + 2 * (j % Self::BUFFERS) * self.tile_bytes
    }
    fn value_tile(self, j: u32) -> u32 {
        self.key_tile(j) + self.tile_bytes
    }
    /// The barrier of the query tile's copies.
    fn queries_landed(self) -> u32 {
        self.barriers
    }
    /// The barrier `which` (0: keys landed, 1: values landed, 2: keys
    /// read, 3: values read) of tile `j`'s buffer.
    fn barrier(self, which: u32, j: u32) -> u32 {
        self.barriers + 8 * (1 + which * Self::BUFFERS + j % Self::BUFFERS)
    }
    /// The parity of tile `j`'s phase of its buffer's barriers.
    fn parity(j: u32) -> u32 {
        (j / Self::BUFFERS) & 1
    }
}

const KEYS_LANDED: u32 = 0;
const VALUES_LANDED: u32 = 1;
const KEYS_READ: u32 = 2;
const VALUES_READ: u32 = 3;
const PRODUCER_THREADS: u32 = 128;

/// The producer warpgroup's part of the forward: the query tile, then the
/// key and value tiles in the order the products need them (key tile `j +
/// 1` before value tile `j`), each into its buffer once every consumer has
/// finished reading the tile before it there.
///
/// # Safety
/// Every thread of the producer warpgroup calls it, with the barriers set
/// up; as for [`load_swizzled_async`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn produce<const D: usize>(
    st: Stages,
    q_tile: u32,
    [qb, kb, vb]: [*const u16; 3],
    h: FlashParams,
    (row0, rows): (u32, u32),
    keys: u32,
    tiles: u32,
) {
    load_swizzled_async(q_tile, qb, h.q.row, row0, rows, h.l, D, PRODUCER_THREADS);
    pipeline::arrive_on_copies(st.queries_landed());
    let load = |tile: u32, src: *const u16, row: u32, j: u32, landed: u32, read: u32| {
        if j >= Stages::BUFFERS {
            pipeline::wait(st.barrier(read, j), Stages::parity(j) ^ 1);
        }
        load_swizzled_async(tile, src, row, j * keys, keys, h.s, D, PRODUCER_THREADS);
        pipeline::arrive_on_copies(st.barrier(landed, j));
    };
    let mut j = 0;
    while j <= tiles {
        if j < tiles {
            load(st.key_tile(j), kb, h.k.row, j, KEYS_LANDED, KEYS_READ);
        }
        if j > 0 {
            load(
                st.value_tile(j - 1),
                vb,
                h.v.row,
                j - 1,
                VALUES_LANDED,
                VALUES_READ,
            );
        }
        j += 1;
    }
    // no copy outlives its thread
    cp_async_wait::<0>();
}

/// The forward of one block: [`FlashParams::hopper_forward_rows`] query
/// rows of one head.
///
/// - The first warpgroup produces ([`produce`]): it loads every tile by
///   `cp.async` and keeps 24 registers a thread.
/// - The others ([`FlashParams::hopper_forward_consumers`]) consume: each owns
///   64 query rows, waits for a buffer's copies to land, and tells the producer
///   when it has finished reading it (one lane a warp). Nothing else holds them
///   together, so one warpgroup's softmax runs beside another's products. Past
///   the last tile its rows need, a consumer only tells the producer it is done
///   with each later tile.
///
/// # Safety
/// Launched with [`FlashParams::hopper_forward_threads`] threads, a grid of
/// `(⌈L/rows⌉, H, B)` for [`FlashParams::hopper_forward_rows`] and
/// [`FlashParams::hopper_forward_shared_bytes`] of shared memory, without
/// dropout, on an sm_90a GPU; the pointers and strides describe live
/// tensors as [`FlashParams`] says.
#[inline(always)]
pub(crate) unsafe fn forward<T: MmaHalf, const D: usize>(
    q: *const u16,
    k: *const u16,
    v: *const u16,
    o: *mut u16,
    lse: *mut f32,
    h: FlashParams,
) {
    let (tid, _) = thread_xy();
    let (tile, head, batch) = block_xyz();
    let kvh = head / h.group;
    // the block's query rows, 64 a consumer warpgroup
    let block_rows = FlashParams::hopper_forward_rows(D);
    // the warps that compute, each arriving once on a buffer's "read" barrier
    let consumer_warps = 4 * FlashParams::hopper_forward_consumers(D);
    let row0 = tile * block_rows;
    let smem = shared::<Pack<u32, 4>>() as *mut u16;
    // the tiles from a 1024-byte boundary (the swizzle's period): the
    // block's queries, then the buffers of key and value tiles, then the
    // barriers
    let base = (shared_address(smem) + 1023) & !1023;
    let keys = FlashParams::hopper_key_rows(D);
    let tile_bytes = keys * D as u32 * 2;
    let q_tile = base;
    let tiles_at = base + block_rows * D as u32 * 2;
    let st = Stages {
        tiles: tiles_at,
        tile_bytes,
        barriers: tiles_at + 2 * Stages::BUFFERS * tile_bytes,
    };
    // the block's key tiles: the producer loads them all
    let tiles = h.key_tiles(row0, block_rows, keys);
    if tid == 0 {
        pipeline::init(st.queries_landed(), PRODUCER_THREADS);
        let mut j = 0;
        while j < Stages::BUFFERS {
            pipeline::init(st.barrier(KEYS_LANDED, j), PRODUCER_THREADS);
            pipeline::init(st.barrier(VALUES_LANDED, j), PRODUCER_THREADS);
            pipeline::init(st.barrier(KEYS_READ, j), consumer_warps);
            pipeline::init(st.barrier(VALUES_READ, j), consumer_warps);
            j += 1;
        }
    }
    sync_threads();
    if tid < PRODUCER_THREADS {
        wg::shrink_registers::<{ FlashParams::HOPPER_PRODUCER_REGISTERS }>();
        let sources = [
            q.add(h.q.offset(batch, head, 0)),
            k.add(h.k.offset(batch, kvh, 0)),
            v.add(h.v.offset(batch, kvh, 0)),
        ];
        produce::<D>(st, q_tile, sources, h, (row0, block_rows), keys, tiles);
        return;
    }
    if FlashParams::hopper_forward_consumers(D) == 2 {
        wg::grow_registers::<{ FlashParams::hopper_forward_consumer_registers(128) }>();
    } else {
        wg::grow_registers::<{ FlashParams::hopper_forward_consumer_registers(64) }>();
    }
    let ctid = tid - PRODUCER_THREADS;
    let (lane, warp) = (ctid & 31, ctid / 32);
    let (g, t) = (lane >> 2, lane & 3);
    // this warp's first row (block-relative)
    let wr = warp * 16;
    let frags = keys as usize / 8;
    let scale = h.scale * LOG2E;
    let mut m_run = [f32::NEG_INFINITY; 2];
    let mut l_run = [0f32; 2];
    let mut acc = [[0f32; 4]; 16];
    // the probabilities of the current tile, as A fragments
    let mut pf = [[0u32; 4]; 8];
    let my_row = row0 + wr + g;
    // the key tiles this warpgroup's 64 rows need: fewer than the block's
    // on the causal diagonal, one where the rows are all past the queries
    let group_row0 = row0 + (warp / 4) * 64;
    let my_tiles = if group_row0 < h.l {
        h.key_tiles(group_row0, 64, keys)
    } else {
        1
    };
    let blocks = keys * 128;
    // With two consumers they take turns issuing their products (ping-pong,
    // as FlashAttention-3 does): a warpgroup waits for its turn (named
    // barrier 1 or 2) before issuing step j's products and passes the turn
    // on after, so one's products keep the tensor cores busy while the
    // other makes its probabilities. The first takes the first turn; the
    // second does not pass its last one, so every phase of either barrier
    // has both warpgroups' 256 threads. A warpgroup with fewer steps than
    // the block (one holding no query) takes its missing turns without
    // products, as it gives its unread tiles back.
    let ping_pong = FlashParams::hopper_forward_consumers(D) == 2;
    let me = warp / 4;
    let rounds = tiles - 1;
    let take_turn = || {
        if ping_pong {
            named_barrier_sync(1 + me, 256);
        }
    };
    let pass_turn = |round: u32| {
        if ping_pong && !(me == 1 && round + 1 == rounds) {
            named_barrier_arrive(2 - me, 256);
        }
    };
    if ping_pong && me == 1 && rounds > 0 {
        named_barrier_arrive(1, 256);
    }
    // a buffer's copies have landed (and are visible to the products)
    let landed = |which: u32, j: u32| {
        pipeline::wait(st.barrier(which, j), Stages::parity(j));
        wg::fence_shared();
    };
    // this warp has finished reading a buffer
    let read = |which: u32, j: u32| pipeline::arrive_if(st.barrier(which, j), lane == 0);

    // every register a product reads or accumulates into is written before
    // its fence, and read after its wait (the pins); the products are issued
    // on straight-line paths, so the compiler keeps them asynchronous
    pipeline::wait(st.queries_landed(), 0);
    // this warp's 16 query rows (their first columns where the registers
    // allow), held for every tile's scores
    let q_steps = FlashParams::hopper_forward_held_steps(D);
    let qf = held_rows(q_tile, block_rows, wr, q_steps);
    let queries = ((q_tile + (warp / 4) * 64 * 128, block_rows), (&qf, q_steps));
    landed(KEYS_LANDED, 0);
    let mut sc = [[0f32; 4]; 16];
    pin_c(&mut sc, frags);
    // the output and probabilities are zeroed here, not while the scores run
    pin_c(&mut acc, D / 8);
    pin_a(&mut pf, frags / 2);
    wg::fence();
    scores::<T, D>(&mut sc, queries.0, queries.1, st.key_tile(0), keys);
    wg::wait();
    // the scores of tile j (issued with the product of tile j - 1) become
    // probabilities while that product runs, then the output is rescaled;
    // the buffers of key tile j and value tile j - 1 are given back as soon
    // as their products are done
    macro_rules! probabilities {
        ($j:expr, $values_read:block) => {
            wg::wait_one();
            read(KEYS_READ, $j);
            pin_c(&mut sc, frags);
            let alpha = softmax_tile(
                &mut sc,
                frags,
                &mut m_run,
                &mut l_run,
                scale,
                h,
                $j * keys,
                my_row,
                row0 + wr,
                t,
            );
            wg::wait();
            $values_read
            pin_c(&mut acc, D / 8);
            pin_a(&mut pf, frags / 2);
            if let Some(alpha) = alpha {
                unroll(D / 8, |nt| unroll(4, |e| acc[nt][e] *= alpha[e >> 1]));
            }
            to_a::<T>(&sc, &mut pf, frags);
        };
    }
    probabilities!(0, {});
    // step j: the scores of tile j + 1 and the product of tile j are issued
    // (in that order, so that the first wait is for the scores alone); then
    // the scores become probabilities
    let mut j = 0;
    while j + 1 < my_tiles {
        landed(KEYS_LANDED, j + 1);
        landed(VALUES_LANDED, j);
        sc = [[0f32; 4]; 16];
        pin_c(&mut sc, frags);
        pin_a(&mut pf, frags / 2);
        pin_c(&mut acc, D / 8);
        take_turn();
        wg::fence();
        scores::<T, D>(&mut sc, queries.0, queries.1, st.key_tile(j + 1), keys);
        product::<T, D>(&mut acc, &pf, st.value_tile(j), keys, blocks);
        pass_turn(j);
        probabilities!(j + 1, { read(VALUES_READ, j) });
        j += 1;
    }
    landed(VALUES_LANDED, j);
    pin_a(&mut pf, frags / 2);
    pin_c(&mut acc, D / 8);
    wg::fence();
    product::<T, D>(&mut acc, &pf, st.value_tile(j), keys, blocks);
    wg::wait();
    pin_c(&mut acc, D / 8);

    store_rows::<T, D>(o, lse, &h, (batch, head), my_row, t, &acc, (m_run, l_run));

    // the block's tiles past this warpgroup's are given back unread, each
    // once its copies have landed (so that the arrival counts toward that
    // tile's use of its buffer)
    if my_tiles < tiles {
        read(VALUES_READ, my_tiles - 1);
        let mut j = my_tiles;
        while j < tiles {
            pipeline::wait(st.barrier(KEYS_LANDED, j), Stages::parity(j));
            read(KEYS_READ, j);
            pipeline::wait(st.barrier(VALUES_LANDED, j), Stages::parity(j));
            read(VALUES_READ, j);
            take_turn();
            pass_turn(j - 1);
            j += 1;
        }
    }
}

macro_rules! flash90 {
    ($tn:ident, $t:ty, $dn:ident, $d:literal) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[export_name = crate::kernel_name!(flash90_forward, $dn, $tn)]
            unsafe extern "ptx-kernel" fn fwd(
                q: *const u16,
                k: *const u16,
                v: *const u16,
                o: *mut u16,
                lse: *mut f32,
                args: crate::args::FlashForwardArgs,
            ) {
                forward::<$t, $d>(q, k, v, o, lse, args.h)
            }
        };
    };
}

flash90!(f16, F16, d64, 64);
flash90!(f16, F16, d128, 128);
flash90!(bf16, BF16, d64, 64);
flash90!(bf16, BF16, d128, 128);
