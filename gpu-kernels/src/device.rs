//! Device support for the kernels (nvptx only): thread and block indices,
//! the grid-stride loop, barriers, dynamic shared memory, warp shuffles,
//! block-wide all-reductions and 16-byte packed access. The parts of a CUDA
//! runtime header that kiln needs.

use core::arch::nvptx::{
    _block_dim_x, _block_idx_x, _block_idx_y, _block_idx_z, _grid_dim_x, _grid_dim_z, _syncthreads,
    _thread_idx_x, _thread_idx_y,
};

/// This thread's index in the whole grid (x dimension).
#[inline(always)]
pub fn global_index() -> u32 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { (_block_idx_x() as u32) * (_block_dim_x() as u32) + _thread_idx_x() as u32 }
}

/// Number of threads in the whole grid (x dimension).
#[inline(always)]
pub fn grid_size() -> u32 {
    // SAFETY: as above.
    unsafe { (_grid_dim_x() as u32) * (_block_dim_x() as u32) }
}

/// Calls `f(i)` for every `i < n` handled by this thread (grid-stride loop).
#[inline(always)]
pub fn for_each_index(n: u32, mut f: impl FnMut(u32)) {
    let step = grid_size();
    let mut i = global_index();
    while i < n {
        f(i);
        i = match i.checked_add(step) {
            Some(v) => v,
            None => break,
        };
    }
}

/// This thread's index in its block (x, y).
#[inline(always)]
pub fn thread_xy() -> (u32, u32) {
    // SAFETY: reading special registers has no preconditions.
    unsafe { (_thread_idx_x() as u32, _thread_idx_y() as u32) }
}

/// This block's index in the grid (x, y, z).
#[inline(always)]
pub fn block_xyz() -> (u32, u32, u32) {
    // SAFETY: as above.
    unsafe {
        (
            _block_idx_x() as u32,
            _block_idx_y() as u32,
            _block_idx_z() as u32,
        )
    }
}

/// Threads per block (x) and blocks per grid (x, z).
#[inline(always)]
pub fn dims() -> (u32, u32, u32) {
    // SAFETY: as above.
    unsafe { (_block_dim_x() as u32, _grid_dim_x() as u32, _grid_dim_z() as u32) }
}

/// Waits until every thread of the block has reached this point.
///
/// # Safety
/// Every thread of the block must call it (no divergent barriers).
#[inline(always)]
pub unsafe fn sync_threads() {
    _syncthreads()
}

/// Waits at named barrier `id` (1 to 15; 0 is [`sync_threads`]'s) until
/// `threads` threads, this one's warp among them, have arrived at it by
/// this or by [`named_barrier_arrive`].
///
/// # Safety
/// Whole warps call it; `threads` is a multiple of 32 and every phase of
/// the barrier gets exactly that many arrivals.
#[inline(always)]
pub unsafe fn named_barrier_sync(id: u32, threads: u32) {
    core::arch::asm!("bar.sync {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack));
}

/// Arrives at named barrier `id` without waiting (see
/// [`named_barrier_sync`]).
///
/// # Safety
/// As for [`named_barrier_sync`].
#[inline(always)]
pub unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    core::arch::asm!("bar.arrive {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack));
}

/// `p[0..4] += v` on global memory, relaxed and without a result
/// (`red.global.add.v4.f32`, sm_90): partial sums many blocks add into one
/// buffer, 16 bytes an instruction.
///
/// # Safety
/// `p` points into a live global allocation of f32s, 16-byte aligned.
#[inline(always)]
pub unsafe fn red_add_v4_f32(p: *mut f32, v: [f32; 4]) {
    core::arch::asm!(
        "{{ .reg .u64 ga; cvta.to.global.u64 ga, {p}; red.global.add.v4.f32 [ga], {{{a}, {b}, {c}, {d}}}; }}",
        p = in(reg64) p as u64,
        a = in(reg32) v[0],
        b = in(reg32) v[1],
        c = in(reg32) v[2],
        d = in(reg32) v[3],
        options(nostack),
    );
}

/// The block's dynamic shared memory (sized by the launch), as `T`s.
#[inline(always)]
pub fn shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// This thread's index within its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { _thread_idx_x() as u32 & 31 }
}

/// Whether `p` holds on any lane of this warp (all 32 lanes take part).
#[inline(always)]
pub fn warp_any(p: bool) -> bool {
    let r: u32;
    // SAFETY: every lane of the warp executes this together (callers keep warps uniform).
    unsafe {
        core::arch::asm!(
            "{{ .reg .pred a, b; setp.ne.u32 a, {p}, 0; vote.sync.any.pred b, a, -1; selp.u32 {r}, 1, 0, b; }}",
            r = out(reg32) r,
            p = in(reg32) p as u32,
        )
    };
    r != 0
}

/// The value of `v` held by lane `lane ^ mask` of this warp (all 32 lanes take part).
#[inline(always)]
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    let r: u32;
    // SAFETY: every lane of the warp executes this together (callers keep warps uniform).
    unsafe {
        core::arch::asm!(
            "shfl.sync.bfly.b32 {r}, {v}, {m}, 31, -1;",
            r = out(reg32) r,
            v = in(reg32) v,
            m = in(reg32) mask,
        )
    };
    r
}

/// [`shfl_xor`] of a 64-bit value.
#[inline(always)]
pub fn shfl_xor_u64(v: u64, mask: u32) -> u64 {
    let lo = shfl_xor(v as u32, mask) as u64;
    let hi = shfl_xor((v >> 32) as u32, mask) as u64;
    (hi << 32) | lo
}

/// [`shfl_xor`] of an f64.
#[inline(always)]
pub fn shfl_xor_f64(v: f64, mask: u32) -> f64 {
    f64::from_bits(shfl_xor_u64(v.to_bits(), mask))
}

/// `f(0)`, ..., `f(3)` written out (see [`unroll16`]).
#[inline(always)]
pub fn unroll4(mut f: impl FnMut(usize)) {
    f(0);
    f(1);
    f(2);
    f(3);
}

/// Calls `f(0)`, ..., `f(15)`, written out so that arrays indexed by `k`
/// stay in registers (a loop the compiler leaves rolled would index local
/// memory).
#[inline(always)]
pub fn unroll16(mut f: impl FnMut(usize)) {
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
    f(8);
    f(9);
    f(10);
    f(11);
    f(12);
    f(13);
    f(14);
    f(15);
}

/// Calls `f(0)`, ..., `f(n - 1)` for `n <= 16`, written out: with `n` known
/// at compile time (a const generic's arithmetic) the tests fold away and
/// arrays indexed by the argument stay in registers.
#[inline(always)]
pub fn unroll(n: usize, mut f: impl FnMut(usize)) {
    unroll16(|i| {
        if i < n {
            f(i)
        }
    });
}

/// [`shfl_xor`] of an f32.
#[inline(always)]
pub fn shfl_xor_f32(v: f32, mask: u32) -> f32 {
    f32::from_bits(shfl_xor(v.to_bits(), mask))
}

/// A value that can be combined across a warp or a block.
pub trait Shuffle: Copy {
    /// The value held by lane `lane ^ mask`.
    fn shfl_xor(self, mask: u32) -> Self;
}

impl Shuffle for f32 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        shfl_xor_f32(self, mask)
    }
}

impl Shuffle for f64 {
    #[inline(always)]
    fn shfl_xor(self, mask: u32) -> Self {
        shfl_xor_f64(self, mask)
    }
}

/// `f` over the 32 lanes of the warp; every lane gets the result.
#[inline(always)]
pub fn warp_all_reduce<T: Shuffle>(mut v: T, f: impl Fn(T, T) -> T) -> T {
    let mut m = 16;
    while m > 0 {
        v = f(v, v.shfl_xor(m));
        m >>= 1;
    }
    v
}

/// `f` over every thread of the block (a whole number of warps, at most 32);
/// every thread gets the result. `scratch` is shared memory for 32 values.
///
/// # Safety
/// Every thread of the block calls it; `scratch` holds 32 `T`s of shared memory
/// that no other code uses between the calls' barriers.
#[inline(always)]
pub unsafe fn block_all_reduce<T: Shuffle>(v: T, scratch: *mut T, f: impl Fn(T, T) -> T + Copy) -> T {
    let v = warp_all_reduce(v, f);
    let (tx, _) = thread_xy();
    let warps = dims().0 / 32;
    if warps <= 1 {
        return v;
    }
    if tx & 31 == 0 {
        *scratch.add((tx / 32) as usize) = v;
    }
    sync_threads();
    let mut r = *scratch;
    let mut w = 1;
    while w < warps {
        r = f(r, *scratch.add(w as usize));
        w += 1;
    }
    // nobody may overwrite `scratch` before every thread has read it
    sync_threads();
    r
}

/// `value` aligned as `A` (a zero-sized array of `A` sets the alignment).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Aligned<A: Copy, T: Copy> {
    _align: [A; 0],
    /// The value.
    pub value: T,
}

/// Alignment markers for [`Aligned`].
#[repr(align(1))]
#[derive(Clone, Copy)]
pub struct A1;
/// 2-byte alignment.
#[repr(align(2))]
#[derive(Clone, Copy)]
pub struct A2;
/// 4-byte alignment.
#[repr(align(4))]
#[derive(Clone, Copy)]
pub struct A4;
/// 8-byte alignment.
#[repr(align(8))]
#[derive(Clone, Copy)]
pub struct A8;
/// 16-byte alignment.
#[repr(align(16))]
#[derive(Clone, Copy)]
pub struct A16;

/// The alignment marker for `N` bytes.
pub struct Bytes<const N: usize>;
/// Maps [`Bytes`] to its alignment marker.
pub trait AlignTo {
    /// The marker.
    type A: Copy;
}
impl AlignTo for Bytes<1> {
    type A = A1;
}
impl AlignTo for Bytes<2> {
    type A = A2;
}
impl AlignTo for Bytes<4> {
    type A = A4;
}
impl AlignTo for Bytes<8> {
    type A = A8;
}
impl AlignTo for Bytes<16> {
    type A = A16;
}

impl<A: Copy, T: Copy> Aligned<A, T> {
    /// Wraps `value`.
    #[inline(always)]
    pub fn new(value: T) -> Self {
        Aligned { _align: [], value }
    }
}

/// `V` elements loaded or stored as one 16-byte access.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct Pack<T: Copy, const V: usize>(pub [T; V]);

/// `y[i] = f(a[i], b[i])` over dense, 16-byte aligned arrays (see [`map_packed`]).
///
/// # Safety
/// `a`, `b` and `y` hold `n` elements and are 16-byte aligned.
#[inline(always)]
pub unsafe fn map_packed2<T: Copy, const V: usize>(
    n: u32,
    a: *const T,
    b: *const T,
    y: *mut T,
    f: impl Fn(T, T) -> T,
) {
    let packs = n / V as u32;
    let (av, bv, yv) = (
        a as *const Pack<T, V>,
        b as *const Pack<T, V>,
        y as *mut Pack<T, V>,
    );
    for_each_index(packs, |p| {
        let (x, w) = (*av.add(p as usize), *bv.add(p as usize));
        let mut out = x;
        let mut k = 0;
        while k < V {
            out.0[k] = f(x.0[k], w.0[k]);
            k += 1;
        }
        *yv.add(p as usize) = out;
    });
    let tail = packs * V as u32;
    let t = global_index();
    if t < n - tail {
        let i = (tail + t) as usize;
        *y.add(i) = f(*a.add(i), *b.add(i));
    }
}

/// `y[i] = f(i, x[i])` over dense, 16-byte aligned arrays: whole packs of `V`
/// through a grid-stride loop, the tail one element per thread.
///
/// # Safety
/// `x` and `y` hold `n` elements and are 16-byte aligned.
#[inline(always)]
pub unsafe fn map_packed<T: Copy, U: Copy, const V: usize>(
    n: u32,
    x: *const T,
    y: *mut U,
    f: impl Fn(u32, T) -> U,
) where
    [T; V]: Sized,
{
    let packs = n / V as u32;
    let (xv, yv) = (x as *const Pack<T, V>, y as *mut Pack<U, V>);
    for_each_index(packs, |p| {
        let a = *xv.add(p as usize);
        let first = (*yv.add(p as usize)).0[0];
        let mut out = Pack([first; V]);
        let mut k = 0;
        while k < V {
            out.0[k] = f(p * V as u32 + k as u32, a.0[k]);
            k += 1;
        }
        *yv.add(p as usize) = out;
    });
    let tail = packs * V as u32;
    let t = global_index();
    if t < n - tail {
        let i = tail + t;
        *y.add(i as usize) = f(i, *x.add(i as usize));
    }
}

/// `x`, hidden from the optimizer: what is computed from it is recomputed
/// inside each loop trip instead of being hoisted out of the loop and kept in
/// registers across it (a row kernel's per-slot offsets, hoisted out of the
/// grid-stride loop, cost dozens of registers and most of the occupancy).
#[inline(always)]
pub fn opaque(x: u32) -> u32 {
    let y: u32;
    // SAFETY: a register move.
    unsafe { core::arch::asm!("mov.u32 {0}, {1};", out(reg32) y, in(reg32) x, options(nomem, nostack)) };
    y
}
