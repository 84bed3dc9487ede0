//! Hopper's warpgroup tensor cores from Rust (sm_90a only): `wgmma.mma_async`
//! of a 64×16 A held in registers by the four warps of a warpgroup (or read
//! from shared memory) by a 16×N B read from shared memory through a matrix
//! descriptor
//! ([`crate::fragments::wgmma_descriptor`]), into f32 accumulators, and the
//! fences, commits and waits around it.
//!
//! Per warp the fragments are those of `mma.sync.m16n8k16`
//! ([`crate::tensor_core`]): warp `w` of the warpgroup holds rows
//! `16w..16w + 16` of A as one A fragment, and of the result as `N / 8`
//! C fragments, so a kernel's softmax and packing code serves both.
//!
//! The products are asynchronous: an accumulator or A register must not be
//! touched between the product that uses it and [`wait`]. The kernels keep
//! that rule with [`pin`] and [`pin_c`], which make the compiler finish
//! every write before [`fence`] and start every read after [`wait`].

use crate::device::{unroll, unroll4};
use crate::fragments::MmaHalf;
use core::arch::asm;

/// Orders this thread's register writes before the products that follow.
///
/// # Safety
/// Every thread of the warpgroup runs it together.
#[inline(always)]
pub unsafe fn fence() {
    asm!("wgmma.fence.sync.aligned;", options(nostack));
}

/// Closes the group of products issued since the last commit.
///
/// # Safety
/// As for [`fence`].
#[inline(always)]
pub unsafe fn commit() {
    asm!("wgmma.commit_group.sync.aligned;", options(nostack));
}

/// Waits until every committed product has finished.
///
/// # Safety
/// As for [`fence`].
#[inline(always)]
pub unsafe fn wait() {
    asm!("wgmma.wait_group.sync.aligned 0;", options(nostack));
}

/// Waits until at most one committed group of products (the newest) is
/// still running.
///
/// # Safety
/// As for [`fence`].
#[inline(always)]
pub unsafe fn wait_one() {
    asm!("wgmma.wait_group.sync.aligned 1;", options(nostack));
}

/// Gives registers back: each thread of this warpgroup keeps `N` (a
/// multiple of 8, from 24), for another warpgroup's [`grow_registers`].
///
/// # Safety
/// Every thread of the warpgroup runs it together.
#[inline(always)]
pub unsafe fn shrink_registers<const N: u32>() {
    asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack));
}

/// Takes registers given back: each thread of this warpgroup may use `N`
/// (a multiple of 8, at most 256); waits until the SM has them.
///
/// # Safety
/// Every thread of the warpgroup runs it together; the block's warpgroups
/// never ask for more than the registers it was launched with.
#[inline(always)]
pub unsafe fn grow_registers<const N: u32>() {
    asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack));
}

/// Makes this thread's shared-memory writes (plain stores and landed
/// `cp.async` copies) visible to the products, which read through the
/// asynchronous proxy; a barrier must follow before the products.
#[inline(always)]
pub fn fence_shared() {
    // SAFETY: a memory fence.
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// A register the compiler must treat as rewritten here: every earlier
/// write to it happens before, every later read after (emits nothing).
#[inline(always)]
pub fn pin(x: &mut u32) {
    // SAFETY: an empty instruction.
    unsafe {
        asm!(
            "/* {x} */",
            x = inout(reg32) * x,
            options(nomem, nostack, preserves_flags)
        )
    };
}

/// [`pin`] of every element of the first `n` of 16 C fragments.
#[inline(always)]
pub fn pin_c(c: &mut [[f32; 4]; 16], n: usize) {
    unroll(n, |i| {
        unroll4(|e| {
            // SAFETY: an empty instruction.
            unsafe { asm!("/* {x} */", x = inout(reg32) c[i][e], options(nomem, nostack, preserves_flags)) };
        })
    });
}

macro_rules! regs32 {
    () => {
        "{{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}}}"
    };
}

macro_rules! regs64 {
    () => {
        "{{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}}}"
    };
}

/// One `wgmma.mma_async` with A in registers: shape, element type, B's
/// transpose flag (0 K-major, 1 N-major), the accumulator list, and the
/// accumulator fragments by index.
macro_rules! wgmma {
    ($shape:literal, $ty:literal, $tb:literal, $regs:expr, $c:ident, $a:ident, $b:ident, [$($i:literal),*]) => {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.",
                $shape, ".f32.", $ty, ".", $ty, " ", $regs,
                ", {{{a0}, {a1}, {a2}, {a3}}}, {b}, p, 1, 1, ", $tb, "; }}"
            ),
            $(inout(reg32) $c[$i][0], inout(reg32) $c[$i][1], inout(reg32) $c[$i][2], inout(reg32) $c[$i][3],)*
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            b = in(reg64) $b,
            one = in(reg32) 1u32,
            options(nostack),
        )
    };
}

/// One `wgmma.mma_async` with A and B in shared memory: shape, element
/// type, the transpose flags of A and B (`"0, 0"` both K-major, `"1, 1"`
/// both M/N-major), the accumulator list, and the accumulator fragments.
macro_rules! wgmma_ss {
    ($shape:literal, $ty:literal, $tr:literal, $regs:expr, $c:ident, $a:ident, $b:ident, [$($i:literal),*]) => {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {one}, 0; wgmma.mma_async.sync.aligned.",
                $shape, ".f32.", $ty, ".", $ty, " ", $regs,
                ", {a}, {b}, p, 1, 1, ", $tr, "; }}"
            ),
            $(inout(reg32) $c[$i][0], inout(reg32) $c[$i][1], inout(reg32) $c[$i][2], inout(reg32) $c[$i][3],)*
            a = in(reg64) $a,
            b = in(reg64) $b,
            one = in(reg32) 1u32,
            options(nostack),
        )
    };
}

/// `c += A · B` with A 64×16 (`a` its descriptor: the warpgroup's rows,
/// K-major) and B 16×64 (`b`, stored `[n][k]`, K-major), both in shared
/// memory; `c[..8]` the warp's 16×64 C fragments (the rest untouched:
/// one array type for every width keeps them in registers).
///
/// # Safety
/// Every thread of the warpgroup runs it together, between [`fence`] and
/// [`commit`]; the descriptors describe tiles written, fenced
/// ([`fence_shared`]) and behind a barrier.
#[inline(always)]
pub unsafe fn mma_ss_n64<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    if T::BF16 {
        wgmma_ss!(
            "m64n64k16",
            "bf16",
            "0, 0",
            regs32!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
    } else {
        wgmma_ss!(
            "m64n64k16",
            "f16",
            "0, 0",
            regs32!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
    }
}

/// [`mma_ss_n64`] with B 16×128: `c` the warp's 16×128 C fragments.
///
/// # Safety
/// As for [`mma_ss_n64`].
#[inline(always)]
pub unsafe fn mma_ss_n128<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    if T::BF16 {
        wgmma_ss!(
            "m64n128k16",
            "bf16",
            "0, 0",
            regs64!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
        );
    } else {
        wgmma_ss!(
            "m64n128k16",
            "f16",
            "0, 0",
            regs64!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
        );
    }
}

/// `c += A · B` with A 64×16 stored `[k][m]` (M-major) and B 16×64
/// stored `[k][n]` (N-major), both in shared memory: the product of two
/// operands that were written with their other dimension outermost.
///
/// # Safety
/// As for [`mma_ss_n64`].
#[inline(always)]
pub unsafe fn mma_ss_n64_mn_major<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: u64, b: u64) {
    if T::BF16 {
        wgmma_ss!(
            "m64n64k16",
            "bf16",
            "1, 1",
            regs32!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
    } else {
        wgmma_ss!(
            "m64n64k16",
            "f16",
            "1, 1",
            regs32!(),
            c,
            a,
            b,
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
    }
}

/// Defines a product with A in registers: `$name(c, a, b)` is `c += a ·
/// B` for this warp's A fragment `a` and B read from shared memory through
/// the descriptor `b`, of the shape `$shape`, B K-major (`$tb` 0) or N-major
/// (1), into the C fragments `$i` of `c`.
macro_rules! register_a_product {
    ($(#[$doc:meta])* $name:ident, $shape:literal, $tb:literal, $regs:ident, [$($i:literal),*]) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As for [`mma_ss_n64`].
        #[inline(always)]
        pub unsafe fn $name<T: MmaHalf>(c: &mut [[f32; 4]; 16], a: &[u32; 4], b: u64) {
            if T::BF16 {
                wgmma!($shape, "bf16", $tb, $regs!(), c, a, b, [$($i),*]);
            } else {
                wgmma!($shape, "f16", $tb, $regs!(), c, a, b, [$($i),*]);
            }
        }
    };
}

register_a_product!(
    /// `c += a · B` with A 64×16 held in registers (`a` this warp's A
    /// fragment) and B 16×64 in shared memory stored `[n][k]` (K-major), as
    /// for [`mma_ss_n64`]: the operand fixed for a whole block is read from
    /// shared memory once, not by every product.
    mma_n64, "m64n64k16", "0", regs32, [0, 1, 2, 3, 4, 5, 6, 7]
);

register_a_product!(
    /// [`mma_n64`] with B 16×128: `c` the warp's 16×128 C fragments.
    mma_n128, "m64n128k16", "0", regs64,
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);

register_a_product!(
    /// `c += a · B` with B 16×64 in shared memory stored `[k][n]` (N-major).
    mma_n64_n_major, "m64n64k16", "1", regs32, [0, 1, 2, 3, 4, 5, 6, 7]
);

register_a_product!(
    /// `c += a · B` with B 16×128 in shared memory stored `[k][n]` (N-major).
    mma_n128_n_major, "m64n128k16", "1", regs64,
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
);
