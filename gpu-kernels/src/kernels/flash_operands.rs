//! The operand types of the `mma.sync` attention kernels (`attention.rs`)
//! and the shared tiles they read them from. Halves (f16, bf16) multiply
//! on `m16n8k16` as they stand; f32 on `m16n8k8` in tf32, each operand
//! split into a high and a low part and three products a step
//! (`hi·hi + hi·lo + lo·hi`, "3xTF32", as PyTorch's f32 memory-efficient
//! attention multiplies): f32 accuracy on the tensor cores.
//!
//! A k-step is 32 bytes of a row either way (16 halves, 8 f32s), so the
//! tiles' byte layout and the `ldmatrix` addresses of A fragments, and of
//! B fragments from `[n][k]` tiles, are the same for both. They differ
//! where a C fragment becomes an A fragment (the probabilities times the
//! values) and where B comes from a `[k][n]` tile: the halves load it by
//! `ldmatrix.trans`, f32 by single words, with the step's k dim permuted
//! (A column `t` is key `2t`, column `t + 4` key `2t + 1`) so that a C
//! fragment's pair of columns is an A fragment as it stands.

use crate::device::{lane_id, thread_xy, Pack};
use crate::fragments::{a_lane_offset, MmaHalf};
use crate::params::FlashParams;
use crate::tensor_core::{cp_async_16, ldmatrix_x4_trans, mma, mma_tf32, pack, shared_address};
use core::marker::PhantomData;

/// What the `mma.sync` attention kernels need of their element type.
pub(crate) trait FlashElem: Copy {
    /// The element as stored: a half's bits, or an `f32`.
    type Bits: Copy;
    /// An A fragment of one k-step, ready to multiply.
    type A: Copy;
    /// A B fragment of one 8-column n-tile and one k-step.
    type B: Copy;
    /// Elements a k-step takes: 32 bytes of a row.
    const K: usize;
    /// The A fragment of the registers `ldmatrix.x4` gives for 16 rows
    /// of one k-step.
    fn a(raw: [u32; 4]) -> Self::A;
    /// The B fragment of registers `b0`, `b1` as `ldmatrix` gives them
    /// from a `[n][k]` tile.
    fn b(b0: u32, b1: u32) -> Self::B;
    /// `c += a · b`.
    fn mma(c: &mut [f32; 4], a: &Self::A, b: &Self::B);
    /// The A fragment of k-step `kk` of the 16-row matrix whose C
    /// fragments (n-tiles of 8 columns) hold `c(nt, e)`: the columns become
    /// the product's k dim.
    fn a_of(c: impl Fn(usize, usize) -> f32, kk: usize) -> Self::A;
    /// The B fragments of n-tiles `n0..n0 + 8` and `n0 + 8..n0 + 16` of the
    /// k-step at row `k0` of the row-major `[k][n]` tile `t`.
    ///
    /// # Safety
    /// Every lane of the warp runs it; the rows and columns lie in `t`,
    /// written before a barrier.
    unsafe fn b_kn(t: Tile<Self>, k0: u32, n0: u32) -> [Self::B; 2];
    /// Stores `lo` and `hi` rounded to the type at `p` and `p + 1`.
    ///
    /// # Safety
    /// `p` is writable for two elements and aligned to two.
    unsafe fn store_pair(p: *mut Self::Bits, lo: f32, hi: f32);
    /// `bits` widened to f32.
    fn widen(bits: Self::Bits) -> f32;
}

impl<T: MmaHalf> FlashElem for T {
    type Bits = u16;
    type A = [u32; 4];
    type B = [u32; 2];
    const K: usize = 16;

    #[inline(always)]
    fn a(raw: [u32; 4]) -> [u32; 4] {
        raw
    }

    #[inline(always)]
    fn b(b0: u32, b1: u32) -> [u32; 2] {
        [b0, b1]
    }

    #[inline(always)]
    fn mma(c: &mut [f32; 4], a: &[u32; 4], b: &[u32; 2]) {
        mma::<T>(c, a, b[0], b[1]);
    }

    #[inline(always)]
    fn a_of(c: impl Fn(usize, usize) -> f32, kk: usize) -> [u32; 4] {
        // columns 0-7 of the step are n-tile 2kk, 8-15 n-tile 2kk + 1
        let (lo, hi) = (2 * kk, 2 * kk + 1);
        [
            pack::<T>(c(lo, 0), c(lo, 1)),
            pack::<T>(c(lo, 2), c(lo, 3)),
            pack::<T>(c(hi, 0), c(hi, 1)),
            pack::<T>(c(hi, 2), c(hi, 3)),
        ]
    }

    #[inline(always)]
    unsafe fn b_kn(t: Tile<T>, k0: u32, n0: u32) -> [[u32; 2]; 2] {
        let (ar, ac) = a_lane_offset(lane_id());
        let b = ldmatrix_x4_trans(t.addr(k0 + ar, n0 + ac));
        [[b[0], b[1]], [b[2], b[3]]]
    }

    #[inline(always)]
    unsafe fn store_pair(p: *mut u16, lo: f32, hi: f32) {
        *(p as *mut u32) = pack::<T>(lo, hi);
    }

    #[inline(always)]
    fn widen(bits: u16) -> f32 {
        if T::BF16 {
            crate::half::bf16_to_f32(bits)
        } else {
            crate::half::f16_to_f32(bits)
        }
    }
}

/// `x`'s high tf32 part (its top 19 bits) and the low part that remains.
#[inline(always)]
fn split(x: u32) -> (u32, u32) {
    let hi = x & 0xffff_e000;
    (hi, (f32::from_bits(x) - f32::from_bits(hi)).to_bits())
}

/// Each register of `raw` split: the high parts, then the low ones.
#[inline(always)]
fn split_all<const N: usize>(raw: [u32; N]) -> [[u32; N]; 2] {
    let mut parts = [[0u32; N]; 2];
    for (i, &x) in raw.iter().enumerate() {
        (parts[0][i], parts[1][i]) = split(x);
    }
    parts
}

impl FlashElem for f32 {
    type Bits = f32;
    /// The high parts, then the low parts.
    type A = [[u32; 4]; 2];
    /// The high parts, then the low parts.
    type B = [[u32; 2]; 2];
    const K: usize = 8;

    #[inline(always)]
    fn a(raw: [u32; 4]) -> [[u32; 4]; 2] {
        split_all(raw)
    }

    #[inline(always)]
    fn b(b0: u32, b1: u32) -> [[u32; 2]; 2] {
        split_all([b0, b1])
    }

    #[inline(always)]
    fn mma(c: &mut [f32; 4], a: &[[u32; 4]; 2], b: &[[u32; 2]; 2]) {
        // the small products first
        mma_tf32(c, &a[1], b[0][0], b[0][1]);
        mma_tf32(c, &a[0], b[1][0], b[1][1]);
        mma_tf32(c, &a[0], b[0][0], b[0][1]);
    }

    #[inline(always)]
    fn a_of(c: impl Fn(usize, usize) -> f32, kk: usize) -> [[u32; 4]; 2] {
        // A (g, t) is key 2t of row g: C element 0; (g + 8, t) element 2;
        // (g, t + 4) key 2t + 1: element 1; (g + 8, t + 4) element 3
        split_all([c(kk, 0), c(kk, 2), c(kk, 1), c(kk, 3)].map(f32::to_bits))
    }

    #[inline(always)]
    unsafe fn b_kn(t: Tile<f32>, k0: u32, n0: u32) -> [[[u32; 2]; 2]; 2] {
        // B (k = t, n = g) is row 2t of the step, (k = t + 4, n = g) row 2t + 1
        let lane = lane_id();
        let (g, t4) = (lane >> 2, lane & 3);
        let (r0, r1) = (k0 + 2 * t4, k0 + 2 * t4 + 1);
        let at = |n: u32| Self::b(t.word(r0, n), t.word(r1, n));
        [at(n0 + g), at(n0 + 8 + g)]
    }

    #[inline(always)]
    unsafe fn store_pair(p: *mut f32, lo: f32, hi: f32) {
        *(p as *mut u64) = lo.to_bits() as u64 | (hi.to_bits() as u64) << 32;
    }

    #[inline(always)]
    fn widen(bits: f32) -> f32 {
        bits
    }
}

/// A tile of rows of `d` elements of `T` in shared memory, each row padded
/// by [`FlashParams::PAD_BYTES`].
pub(crate) struct Tile<T> {
    ptr: *mut u8,
    base: u32,
    stride: usize,
    elem: PhantomData<T>,
}

impl<T> Clone for Tile<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Tile<T> {}

impl<T: FlashElem> Tile<T> {
    /// Bytes of an element.
    const SIZE: usize = core::mem::size_of::<T::Bits>();

    /// The tile at `ptr` (in the block's shared memory) with rows of `d` elements.
    #[inline(always)]
    pub(crate) fn new(ptr: *mut u8, d: usize) -> Tile<T> {
        Tile {
            ptr,
            base: shared_address(ptr),
            stride: FlashParams::row_bytes(d, Self::SIZE),
            elem: PhantomData,
        }
    }

    /// The bytes a tile of `rows` rows takes.
    #[inline(always)]
    pub(crate) const fn len(rows: u32, d: usize) -> usize {
        rows as usize * FlashParams::row_bytes(d, Self::SIZE)
    }

    /// The shared-space address of element (`row`, `col`).
    #[inline(always)]
    pub(crate) fn addr(&self, row: u32, col: u32) -> u32 {
        self.base + (row as usize * self.stride + col as usize * Self::SIZE) as u32
    }

    /// The 32-bit word at element (`row`, `col`).
    ///
    /// # Safety
    /// The word lies in the tile, written before a barrier.
    #[inline(always)]
    unsafe fn word(&self, row: u32, col: u32) -> u32 {
        *(self
            .ptr
            .add(row as usize * self.stride + col as usize * Self::SIZE) as *const u32)
    }

    /// Rows `r0..r0 + rows` of a `[n, d]` matrix at `src` (rows `row` elements
    /// apart) into the tile, in 16-byte pieces; rows at or past `n` are zeros.
    ///
    /// # Safety
    /// Every thread of the block calls it; `src`'s rows below `n` are
    /// readable and 16-byte aligned.
    #[inline(always)]
    pub(crate) unsafe fn load(&self, src: *const T::Bits, row: u32, r0: u32, rows: u32, n: u32, d: usize) {
        let (tid, _) = thread_xy();
        let (pieces, per_piece) = (d * Self::SIZE / 16, 16 / Self::SIZE);
        let total = rows as usize * pieces;
        let mut i = tid as usize;
        while i < total {
            let (r, c) = (i / pieces, i % pieces);
            let g = r0 + r as u32;
            let dst = self.ptr.add(r * self.stride + c * 16) as *mut Pack<u32, 4>;
            if g < n {
                *dst = *(src.add(g as usize * row as usize + c * per_piece) as *const Pack<u32, 4>);
            } else {
                *dst = Pack([0; 4]);
            }
            i += FlashParams::THREADS as usize;
        }
    }

    /// [`Tile::load`] through asynchronous copies (`cp.async`): they land by
    /// the `cp_async_wait` after the caller's `cp_async_commit`.
    ///
    /// # Safety
    /// As for [`Tile::load`]; nobody touches the tile until the copies have
    /// landed and a barrier has passed.
    #[inline(always)]
    pub(crate) unsafe fn load_async(
        &self,
        src: *const T::Bits,
        row: u32,
        r0: u32,
        rows: u32,
        n: u32,
        d: usize,
    ) {
        let (tid, _) = thread_xy();
        let (pieces, per_piece) = (d * Self::SIZE / 16, 16 / Self::SIZE);
        let total = rows as usize * pieces;
        let mut i = tid as usize;
        while i < total {
            let (r, c) = (i / pieces, i % pieces);
            let g = r0 + r as u32;
            let inside = g < n;
            let from = if inside {
                src.add(g as usize * row as usize + c * per_piece)
            } else {
                src
            };
            cp_async_16(
                self.base + (r * self.stride + c * 16) as u32,
                from as *const u8,
                inside,
            );
            i += FlashParams::THREADS as usize;
        }
    }
}
