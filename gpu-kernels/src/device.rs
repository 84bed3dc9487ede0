//! Device support for the kernels (nvptx only): thread indices and the
//! grid-stride loop. The parts of a CUDA runtime header that kiln needs.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _grid_dim_x, _thread_idx_x};

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

/// This thread's index within its warp.
#[inline(always)]
pub fn lane_id() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { _thread_idx_x() as u32 & 31 }
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
