//! The producer side of the Hopper attention kernels that are split into a
//! producer warpgroup and consumer warpgroups (the forward and the query
//! backward): where a block keeps its fixed tiles, its buffers of key and
//! value tiles and their `mbarrier`s, and the producer's loop that fills
//! them by `cp.async`.
//!
//! Key tile `j` and value tile `j` go to buffer `j % BUFFERS`; each buffer
//! has a barrier for its key copies and one for its value copies having
//! landed, and one each for its readers being done with them (tile `j`'s
//! use of its buffer is phase `j / BUFFERS` of all four).

use super::attention_hopper::load_swizzled_async;
use crate::params::FlashParams;
use crate::pipeline;
use crate::tensor_core::cp_async_wait;

/// The barriers of a buffer: its key copies have landed.
pub(super) const KEYS_LANDED: u32 = 0;
/// Its value copies have landed.
pub(super) const VALUES_LANDED: u32 = 1;
/// Every consumer warp has finished reading its key tile.
pub(super) const KEYS_READ: u32 = 2;
/// Every consumer warp has finished reading its value tile.
pub(super) const VALUES_READ: u32 = 3;
/// The threads of the producer warpgroup.
pub(super) const PRODUCER_THREADS: u32 = 128;

/// Where a block keeps its key/value buffers and its barriers.
#[derive(Clone, Copy)]
pub(super) struct Stages {
    /// The shared address of buffer 0's key tile (1024-byte aligned).
    pub tiles: u32,
    /// The bytes of one key (or value) tile.
    pub tile_bytes: u32,
    /// The shared address of the barriers (8-byte aligned).
    pub barriers: u32,
}

impl Stages {
    pub const BUFFERS: u32 = FlashParams::HOPPER_BUFFERS;

    pub fn key_tile(self, j: u32) -> u32 {
        self.tiles + 2 * (j % Self::BUFFERS) * self.tile_bytes
    }
    pub fn value_tile(self, j: u32) -> u32 {
        self.key_tile(j) + self.tile_bytes
    }
    /// The barrier of the fixed tiles' copies.
    pub fn fixed_landed(self) -> u32 {
        self.barriers
    }
    /// The barrier `which` ([`KEYS_LANDED`], [`VALUES_LANDED`],
    /// [`KEYS_READ`] or [`VALUES_READ`]) of tile `j`'s buffer.
    pub fn barrier(self, which: u32, j: u32) -> u32 {
        self.barriers + 8 * (1 + which * Self::BUFFERS + j % Self::BUFFERS)
    }
    /// The parity of tile `j`'s phase of its buffer's barriers.
    pub fn parity(j: u32) -> u32 {
        (j / Self::BUFFERS) & 1
    }

    /// Sets every barrier up: the copies' barriers expect the producer's
    /// threads, the readers' ones `consumer_warps` (one lane a warp).
    ///
    /// # Safety
    /// One thread calls it, and a block barrier follows before any other
    /// touches them.
    pub unsafe fn init(self, consumer_warps: u32) {
        pipeline::init(self.fixed_landed(), PRODUCER_THREADS);
        let mut j = 0;
        while j < Self::BUFFERS {
            pipeline::init(self.barrier(KEYS_LANDED, j), PRODUCER_THREADS);
            pipeline::init(self.barrier(VALUES_LANDED, j), PRODUCER_THREADS);
            pipeline::init(self.barrier(KEYS_READ, j), consumer_warps);
            pipeline::init(self.barrier(VALUES_READ, j), consumer_warps);
            j += 1;
        }
    }
}

/// A tile that stays for the whole block: `rows` rows from `row0` of the
/// `[n, D]` matrix at `src` (`stride` elements a row) into the swizzled tile
/// at shared address `tile`.
#[derive(Clone, Copy)]
pub(super) struct Fixed {
    pub tile: u32,
    pub src: *const u16,
    pub stride: u32,
}

/// The producer warpgroup's work: the fixed tiles (`rows` rows from `row0`,
/// zeros at or past `h.l`), arriving on [`Stages::fixed_landed`], then key
/// tiles `0..tiles` and value tiles `0..tiles` of `keys` rows each, value
/// tile `j` after key tile `j + LAG` (the order the consumers need them), each into its buffer once every consumer warp has finished
/// reading the tile before it there.
///
/// # Safety
/// Every thread of the producer warpgroup calls it, with the barriers set
/// up; as for [`load_swizzled_async`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn produce<const D: usize, const LAG: u32>(
    st: Stages,
    fixed: &[Fixed],
    [(kb, k_stride), (vb, v_stride)]: [(*const u16, u32); 2],
    h: &crate::params::FlashParams,
    (row0, rows): (u32, u32),
    keys: u32,
    tiles: u32,
) {
    for f in fixed {
        load_swizzled_async(f.tile, f.src, f.stride, row0, rows, h.l, D, PRODUCER_THREADS);
    }
    pipeline::arrive_on_copies(st.fixed_landed());
    let load = |tile: u32, src: *const u16, stride: u32, j: u32, landed: u32, read: u32| {
        if j >= Stages::BUFFERS {
            pipeline::wait(st.barrier(read, j), Stages::parity(j) ^ 1);
        }
        load_swizzled_async(tile, src, stride, j * keys, keys, h.s, D, PRODUCER_THREADS);
        pipeline::arrive_on_copies(st.barrier(landed, j));
    };
    let mut j = 0;
    while j < tiles + LAG {
        if j < tiles {
            load(st.key_tile(j), kb, k_stride, j, KEYS_LANDED, KEYS_READ);
        }
        if j >= LAG {
            let jv = j - LAG;
            load(st.value_tile(jv), vb, v_stride, jv, VALUES_LANDED, VALUES_READ);
        }
        j += 1;
    }
    // no copy outlives its thread
    cp_async_wait::<0>();
}

/// A consumer warp's side: waits for the copies of tile `j`'s barrier
/// `which` ([`KEYS_LANDED`] or [`VALUES_LANDED`]) to have landed, and makes
/// them visible to the tensor cores' reads.
///
/// # Safety
/// The barriers are set up and the producer will fill tile `j`.
#[inline(always)]
pub(super) unsafe fn landed(st: Stages, which: u32, j: u32) {
    pipeline::wait(st.barrier(which, j), Stages::parity(j));
    crate::warpgroup::fence_shared();
}

/// A consumer warp's side: after the first `my_tiles` of the block's
/// `tiles`, every later tile given back to the producer unread, each once
/// its copies have landed (so that the arrival counts toward that tile's
/// use of its buffer). `lane0` arrives for the warp.
///
/// # Safety
/// As for [`landed`]; the warp has arrived on both "read" barriers of
/// every tile before `my_tiles`.
#[inline(always)]
pub(super) unsafe fn give_back(st: Stages, my_tiles: u32, tiles: u32, lane0: bool) {
    let mut j = my_tiles;
    while j < tiles {
        pipeline::wait(st.barrier(KEYS_LANDED, j), Stages::parity(j));
        pipeline::arrive_if(st.barrier(KEYS_READ, j), lane0);
        pipeline::wait(st.barrier(VALUES_LANDED, j), Stages::parity(j));
        pipeline::arrive_if(st.barrier(VALUES_READ, j), lane0);
        j += 1;
    }
}
