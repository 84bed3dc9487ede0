//! Tensor cores from Rust (nvptx only): the warp-wide `mma.sync` of a
//! 16×16 half-precision tile by a 16×8 one into f32 accumulators,
//! `ldmatrix` loads of fragments from shared memory, and the packing of f32
//! pairs into `f16x2`/`bf16x2` registers. Inline PTX, as PTX's ISA defines
//! the fragments (lane = 4·g + t):
//!
//! - A (16×16, row-major), four registers of two halves: rows `g` and
//!   `g + 8` by columns `2t, 2t + 1`, then the same rows at columns `2t + 8, 2t + 9`;
//! - B (16×8, "col"), two registers: rows (k) `2t, 2t + 1`, then
//!   `2t + 8, 2t + 9`, column `g`;
//! - C/D (16×8, f32), four values: row `g` at columns `2t, 2t + 1`, then row `g + 8`.
//!
//! The C fragments of two neighbouring 16×8 results are, packed to halves,
//! exactly the A fragment of their 16×16 tile: that is how attention's
//! probabilities feed the next product without leaving registers.

pub use crate::fragments::{a_lane_offset, b_lane_offset, MmaHalf};
use core::arch::asm;

/// One `mma.sync` of shape and types `$kind` on a warp's fragments: `c` (4
/// f32, in and out), `a` (4 registers), `b0`, `b1`.
macro_rules! mma_sync {
    ($kind:literal, $c:ident, $a:ident, $b0:ident, $b1:ident) => {
        asm!(
            concat!(
                "mma.sync.aligned.",
                $kind,
                " {{{c0}, {c1}, {c2}, {c3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{c0}, {c1}, {c2}, {c3}}};"
            ),
            c0 = inout(reg32) $c[0],
            c1 = inout(reg32) $c[1],
            c2 = inout(reg32) $c[2],
            c3 = inout(reg32) $c[3],
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            b0 = in(reg32) $b0,
            b1 = in(reg32) $b1,
            options(nomem, nostack),
        )
    };
}

/// `c += a · b` for this warp's fragments of a 16×16 `a`, a 16×8 `b`
/// (`b0`, `b1`) and a 16×8 f32 `c`.
#[inline(always)]
pub fn mma<T: MmaHalf>(c: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    // SAFETY: a register-only warp instruction; every lane of the warp runs it
    // together (the kernels keep warps convergent around it).
    unsafe {
        if T::BF16 {
            mma_sync!("m16n8k16.row.col.f32.bf16.bf16.f32", c, a, b0, b1);
        } else {
            mma_sync!("m16n8k16.row.col.f32.f16.f16.f32", c, a, b0, b1);
        }
    }
}

/// `c += a · b` for this warp's fragments of a 16×8 tf32 `a` and an 8×8
/// tf32 `b` (`mma.sync.m16n8k8`; lane `4g + t`): A holds rows `g`, `g + 8`
/// at column `t`, then the same rows at column `t + 4`; B rows (k) `t` and
/// `t + 4` of column `g`; C as above. The tensor cores read only the top
/// 19 bits of each f32 (the kernels split f32 operands into two such
/// parts for f32 accuracy).
#[inline(always)]
pub fn mma_tf32(c: &mut [f32; 4], a: &[u32; 4], b0: u32, b1: u32) {
    // SAFETY: as for `mma`.
    unsafe { mma_sync!("m16n8k8.row.col.f32.tf32.tf32.f32", c, a, b0, b1) };
}

/// `lo` and `hi` rounded to `T` and packed (`lo` in the low half).
#[inline(always)]
pub fn pack<T: MmaHalf>(lo: f32, hi: f32) -> u32 {
    let r: u32;
    // SAFETY: a pure conversion instruction (the first source goes to the upper half).
    unsafe {
        if T::BF16 {
            asm!("cvt.rn.bf16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack));
        } else {
            asm!("cvt.rn.f16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack));
        }
    }
    r
}

/// The shared-space address of a pointer into the block's shared memory.
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: an address conversion; `p` points into shared memory.
    unsafe {
        asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) a, p = in(reg64) p as u64, options(pure, nomem, nostack));
    }
    a as u32
}

/// Four 8×8 matrices of 16-bit elements from shared memory: lanes `8m..8m + 8`
/// give the addresses of matrix `m`'s rows (16 bytes each, 16-byte
/// aligned); register `m` gets row `g`, columns `2t, 2t + 1` of matrix `m`.
///
/// # Safety
/// Every lane of the warp runs it with the address of a row inside the
/// block's shared memory, written before a barrier.
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    asm!(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
        r0 = out(reg32) r0,
        r1 = out(reg32) r1,
        r2 = out(reg32) r2,
        r3 = out(reg32) r3,
        a = in(reg32) addr,
        options(readonly, nostack),
    );
    [r0, r1, r2, r3]
}

/// [`ldmatrix_x4`] transposed: register `m` gets rows `2t, 2t + 1`, column `g`
/// of matrix `m`.
///
/// # Safety
/// As for [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    let (r0, r1, r2, r3): (u32, u32, u32, u32);
    asm!(
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];",
        r0 = out(reg32) r0,
        r1 = out(reg32) r1,
        r2 = out(reg32) r2,
        r3 = out(reg32) r3,
        a = in(reg32) addr,
        options(readonly, nostack),
    );
    [r0, r1, r2, r3]
}

/// Starts an asynchronous 16-byte copy from global memory at `src` to
/// shared memory at `dst` (a shared-space address), or a 16-byte zero fill
/// when `fill` is false (`src` is not read then). It lands by the matching
/// [`cp_async_wait`].
///
/// # Safety
/// `src` (when read) is 16 readable, 16-byte aligned bytes of global
/// memory; `dst` is 16-byte aligned inside the block's shared memory, not
/// read or written by anyone until the copy has landed and a barrier passed.
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const u8, fill: bool) {
    let bytes: u32 = if fill { 16 } else { 0 };
    asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {s}; cp.async.cg.shared.global [{d}], [g], 16, {n}; }}",
        d = in(reg32) dst,
        s = in(reg64) src as u64,
        n = in(reg32) bytes,
        options(nostack),
    );
}

/// Closes this thread's group of [`cp_async_16`] copies started since the last one.
#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: bookkeeping of this thread's asynchronous copies.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// Waits until at most `PENDING` of this thread's committed groups are still in flight.
#[inline(always)]
pub fn cp_async_wait<const PENDING: u32>() {
    // SAFETY: as above; memory is clobbered, so no shared read moves above it.
    unsafe { asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack)) };
}

/// [`cp_async_16`] of 4 bytes (`cp.async.ca`), or a 4-byte zero fill.
///
/// # Safety
/// As for [`cp_async_16`], with 4-byte alignment.
#[inline(always)]
pub unsafe fn cp_async_4(dst: u32, src: *const u8, fill: bool) {
    let bytes: u32 = if fill { 4 } else { 0 };
    asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {s}; cp.async.ca.shared.global [{d}], [g], 4, {n}; }}",
        d = in(reg32) dst,
        s = in(reg64) src as u64,
        n = in(reg32) bytes,
        options(nostack),
    );
}
