//! Scans and sorting along the last dim of dense rows.
//!
//! - Scans (`cumsum`, `cumprod`, `cummax`, `cummin`, `logcumsumexp`): rows
//!   are cut into chunks of [`CHUNK`] elements (a block of [`SCAN_THREADS`],
//!   eight consecutive elements per thread). One chunk per row needs only
//!   `scan_apply_*`; longer rows first reduce every chunk (`scan_totals_*`),
//!   turn each row's totals into exclusive prefixes (`scan_carry_*`, one
//!   block per row), then scan every chunk from its prefix. Floats
//!   accumulate in f32 (f64 for f64), integers in i64. `cummax`/`cummin`
//!   carry the position along; ties and NaN take the later position, and NaN
//!   wins, as in PyTorch.
//! - Sorting: a bitonic network over `(key, position)` pairs, the key an
//!   order-preserving u64 image of the value (NaN largest, -0 equal to +0,
//!   bits inverted for descending order) and the position breaking ties, so
//!   the result is stable. Rows are padded to a power of two with keys that
//!   sort last. Stages within 2048 keys run in shared memory
//!   (`sort_local`), wider steps one launch each (`sort_global`);
//!   `sort_keys_*` and `sort_gather_*` convert in and out.
//! - Searching (`sort_search_*`): a binary search of each value's key in
//!   its sorted row, one thread per value (`searchsorted`, `bucketize`,
//!   multinomial draws).

use crate::device::{block_xyz, dims, for_each_index, shared, sync_threads, thread_xy};
use crate::elem::{Elem, BF16, F16};
use crate::kernels::accum::FloatElem;

/// Threads of a scan block.
pub const SCAN_THREADS: u32 = 256;
/// Elements each scan thread handles.
const PER_THREAD: u32 = 8;
/// Elements of one scan chunk.
pub const CHUNK: u32 = SCAN_THREADS * PER_THREAD;

/// A scan: its accumulator cells and how they combine (`combine(a, b)` with
/// `a` the earlier part of the row).
trait Scan<T>: Copy {
    type Cell: Copy;
    fn identity() -> Self::Cell;
    fn lift(x: T, j: u32) -> Self::Cell;
    fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell;
    /// Writes the cell as the result at `at` (and its position, for arg scans).
    unsafe fn store(c: Self::Cell, y: *mut T, yi: *mut i64, at: usize);
}

#[derive(Clone, Copy)]
struct Sum;
#[derive(Clone, Copy)]
struct Prod;
#[derive(Clone, Copy)]
struct Max;
#[derive(Clone, Copy)]
struct Min;
#[derive(Clone, Copy)]
struct LogSumExp;

/// A value and the row position it came from.
#[derive(Clone, Copy)]
struct Arg<A> {
    v: A,
    i: u32,
}

#[allow(clippy::eq_op)]
#[inline(always)]
fn nan<A: PartialOrd + Copy>(a: A) -> bool {
    a != a
}

/// Whether `b` (later) replaces `a` in a running maximum: NaN wins, and
/// ties go to the later position.
#[inline(always)]
fn later_max<A: PartialOrd + Copy>(a: A, b: A) -> bool {
    nan(b) || (!nan(a) && b >= a)
}

/// The same for a running minimum.
#[inline(always)]
fn later_min<A: PartialOrd + Copy>(a: A, b: A) -> bool {
    nan(b) || (!nan(a) && b <= a)
}

macro_rules! float_scans {
    ($t:ty) => {
        impl Scan<$t> for Sum {
            type Cell = <$t as FloatElem>::Acc;
            #[inline(always)]
            fn identity() -> Self::Cell {
                0.0
            }
            #[inline(always)]
            fn lift(x: $t, _: u32) -> Self::Cell {
                x.acc()
            }
            #[inline(always)]
            fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell {
                a + b
            }
            #[inline(always)]
            unsafe fn store(c: Self::Cell, y: *mut $t, _: *mut i64, at: usize) {
                *y.add(at) = <$t>::from_acc(c);
            }
        }
        impl Scan<$t> for Prod {
            type Cell = <$t as FloatElem>::Acc;
            #[inline(always)]
            fn identity() -> Self::Cell {
                1.0
            }
            #[inline(always)]
            fn lift(x: $t, _: u32) -> Self::Cell {
                x.acc()
            }
            #[inline(always)]
            fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell {
                a * b
            }
            #[inline(always)]
            unsafe fn store(c: Self::Cell, y: *mut $t, _: *mut i64, at: usize) {
                *y.add(at) = <$t>::from_acc(c);
            }
        }
        impl Scan<$t> for LogSumExp {
            type Cell = <$t as FloatElem>::Acc;
            #[inline(always)]
            fn identity() -> Self::Cell {
                <Self::Cell>::NEG_INFINITY
            }
            #[inline(always)]
            fn lift(x: $t, _: u32) -> Self::Cell {
                x.acc()
            }
            #[inline(always)]
            fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell {
                if nan(a) || nan(b) {
                    return <Self::Cell>::NAN;
                }
                let (hi, lo) = if a > b { (a, b) } else { (b, a) };
                if lo == <Self::Cell>::NEG_INFINITY || hi == <Self::Cell>::INFINITY {
                    return hi;
                }
                hi + crate::real::Real::ln_1p(crate::real::Real::exp(lo - hi))
            }
            #[inline(always)]
            unsafe fn store(c: Self::Cell, y: *mut $t, _: *mut i64, at: usize) {
                *y.add(at) = <$t>::from_acc(c);
            }
        }
        arg_scans!($t, <$t as FloatElem>::Acc, |x: $t| x.acc(), <$t>::from_acc);
    };
}

macro_rules! arg_scans {
    ($t:ty, $a:ty, $lift:expr, $back:expr) => {
        impl Scan<$t> for Max {
            type Cell = Arg<$a>;
            #[inline(always)]
            fn identity() -> Self::Cell {
                // never kept: the first element replaces it (see `combine`)
                Arg {
                    v: <$a>::MIN,
                    i: u32::MAX,
                }
            }
            #[inline(always)]
            fn lift(x: $t, j: u32) -> Self::Cell {
                Arg {
                    v: ($lift)(x),
                    i: j,
                }
            }
            #[inline(always)]
            fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell {
                if a.i == u32::MAX || (b.i != u32::MAX && later_max(a.v, b.v)) {
                    b
                } else {
                    a
                }
            }
            #[inline(always)]
            unsafe fn store(c: Self::Cell, y: *mut $t, yi: *mut i64, at: usize) {
                *y.add(at) = ($back)(c.v);
                *yi.add(at) = c.i as i64;
            }
        }
        impl Scan<$t> for Min {
            type Cell = Arg<$a>;
            #[inline(always)]
            fn identity() -> Self::Cell {
                Arg {
                    v: <$a>::MAX,
                    i: u32::MAX,
                }
            }
            #[inline(always)]
            fn lift(x: $t, j: u32) -> Self::Cell {
                Arg {
                    v: ($lift)(x),
                    i: j,
                }
            }
            #[inline(always)]
            fn combine(a: Self::Cell, b: Self::Cell) -> Self::Cell {
                if a.i == u32::MAX || (b.i != u32::MAX && later_min(a.v, b.v)) {
                    b
                } else {
                    a
                }
            }
            #[inline(always)]
            unsafe fn store(c: Self::Cell, y: *mut $t, yi: *mut i64, at: usize) {
                *y.add(at) = ($back)(c.v);
                *yi.add(at) = c.i as i64;
            }
        }
    };
}

float_scans!(f32);
float_scans!(f64);
float_scans!(F16);
float_scans!(BF16);

impl Scan<i64> for Sum {
    type Cell = i64;
    #[inline(always)]
    fn identity() -> i64 {
        0
    }
    #[inline(always)]
    fn lift(x: i64, _: u32) -> i64 {
        x
    }
    #[inline(always)]
    fn combine(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    #[inline(always)]
    unsafe fn store(c: i64, y: *mut i64, _: *mut i64, at: usize) {
        *y.add(at) = c;
    }
}

impl Scan<i64> for Prod {
    type Cell = i64;
    #[inline(always)]
    fn identity() -> i64 {
        1
    }
    #[inline(always)]
    fn lift(x: i64, _: u32) -> i64 {
        x
    }
    #[inline(always)]
    fn combine(a: i64, b: i64) -> i64 {
        a.wrapping_mul(b)
    }
    #[inline(always)]
    unsafe fn store(c: i64, y: *mut i64, _: *mut i64, at: usize) {
        *y.add(at) = c;
    }
}

arg_scans!(i64, i64, |x: i64| x, |v: i64| v);

/// Block-wide inclusive scan of one cell per thread through shared memory
/// (every thread of the block calls it); returns this thread's exclusive
/// prefix and the block's total.
#[inline(always)]
unsafe fn block_exclusive<T, S: Scan<T>>(mine: S::Cell) -> (S::Cell, S::Cell) {
    let s = shared::<S::Cell>();
    let (t, _) = thread_xy();
    let n = dims().0;
    *s.add(t as usize) = mine;
    sync_threads();
    let mut d = 1;
    while d < n {
        let v = if t >= d {
            Some(S::combine(*s.add((t - d) as usize), *s.add(t as usize)))
        } else {
            None
        };
        sync_threads();
        if let Some(v) = v {
            *s.add(t as usize) = v;
        }
        sync_threads();
        d *= 2;
    }
    let total = *s.add((n - 1) as usize);
    let excl = if t == 0 {
        S::identity()
    } else {
        *s.add((t - 1) as usize)
    };
    sync_threads();
    (excl, total)
}

/// This block's row, chunk and the chunk's first element.
#[inline(always)]
fn chunk_of(chunk: u32, chunks: u32) -> (u32, u32, u32) {
    let (b, _, _) = block_xyz();
    let (row, c) = (b / chunks, b % chunks);
    (row, c, c * chunk)
}

/// Folds this thread's elements of a chunk.
#[inline(always)]
unsafe fn thread_total<T: Copy, S: Scan<T>>(x: *const T, len: u32, start: u32) -> S::Cell {
    let (t, _) = thread_xy();
    let mut acc = S::identity();
    let first = start + t * PER_THREAD;
    for k in 0..PER_THREAD {
        let j = first + k;
        if j < len {
            acc = S::combine(acc, S::lift(*x.add(j as usize), j));
        }
    }
    acc
}

unsafe fn scan_totals<T: Copy, S: Scan<T>>(
    x: *const T,
    totals: *mut S::Cell,
    a: crate::args::ScanTotalsArgs,
) {
    let (row, c, start) = chunk_of(a.chunk, a.chunks);
    if row >= a.rows {
        return;
    }
    let xr = x.add(row as usize * a.len as usize);
    let mine = thread_total::<T, S>(xr, a.len, start);
    let (_, total) = block_exclusive::<T, S>(mine);
    if thread_xy().0 == 0 {
        *totals.add((row * a.chunks + c) as usize) = total;
    }
}

unsafe fn scan_carry<T, S: Scan<T>>(totals: *mut S::Cell, a: crate::args::ScanCarryArgs) {
    let (row, _, _) = block_xyz();
    if row >= a.rows {
        return;
    }
    let tr = totals.add((row * a.chunks) as usize);
    let (t, _) = thread_xy();
    let n = dims().0;
    let mut carry = S::identity();
    let mut base = 0;
    while base < a.chunks {
        let j = base + t;
        let mine = if j < a.chunks {
            *tr.add(j as usize)
        } else {
            S::identity()
        };
        let (excl, total) = block_exclusive::<T, S>(mine);
        if j < a.chunks {
            *tr.add(j as usize) = S::combine(carry, excl);
        }
        carry = S::combine(carry, total);
        base += n;
    }
}

unsafe fn scan_apply<T: Copy, S: Scan<T>>(
    x: *const T,
    totals: *const S::Cell,
    y: *mut T,
    yi: *mut i64,
    a: crate::args::ScanApplyArgs,
) {
    let (row, c, start) = chunk_of(a.chunk, a.chunks);
    if row >= a.rows {
        return;
    }
    let off = row as usize * a.len as usize;
    let (xr, yr) = (x.add(off), y.add(off));
    let yir = if yi.is_null() { yi } else { yi.add(off) };
    let mine = thread_total::<T, S>(xr, a.len, start);
    let (excl, _) = block_exclusive::<T, S>(mine);
    let mut acc = if a.carry != 0 {
        S::combine(*totals.add((row * a.chunks + c) as usize), excl)
    } else {
        excl
    };
    let first = start + thread_xy().0 * PER_THREAD;
    for k in 0..PER_THREAD {
        let j = first + k;
        if j < a.len {
            acc = S::combine(acc, S::lift(*xr.add(j as usize), j));
            S::store(acc, yr, yir, j as usize);
        }
    }
}

macro_rules! scan_kernels {
    ($op:ident, $s:ty, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(scan_totals, $op, $tn)]
            unsafe extern "ptx-kernel" fn totals(
                x: *const $t,
                totals: *mut <$s as Scan<$t>>::Cell,
                a: crate::args::ScanTotalsArgs,
            ) {
                scan_totals::<$t, $s>(x, totals, a)
            }
            #[export_name = crate::kernel_name!(scan_carry, $op, $tn)]
            unsafe extern "ptx-kernel" fn carry(
                totals: *mut <$s as Scan<$t>>::Cell,
                a: crate::args::ScanCarryArgs,
            ) {
                scan_carry::<$t, $s>(totals, a)
            }
            #[export_name = crate::kernel_name!(scan_apply, $op, $tn)]
            unsafe extern "ptx-kernel" fn apply(
                x: *const $t,
                totals: *const <$s as Scan<$t>>::Cell,
                y: *mut $t,
                yi: *mut i64,
                a: crate::args::ScanApplyArgs,
            ) {
                scan_apply::<$t, $s>(x, totals, y, yi, a)
            }
        };
    };
}

macro_rules! scans_for {
    ($tn:ident, $t:ty) => {
        scan_kernels!(cumsum, Sum, $tn, $t);
        scan_kernels!(cumprod, Prod, $tn, $t);
        scan_kernels!(cummax, Max, $tn, $t);
        scan_kernels!(cummin, Min, $tn, $t);
    };
}
scans_for!(f32, f32);
scans_for!(f64, f64);
scans_for!(f16, F16);
scans_for!(bf16, BF16);
scans_for!(i64, i64);
scan_kernels!(logcumsumexp, LogSumExp, f32, f32);
scan_kernels!(logcumsumexp, LogSumExp, f64, f64);
scan_kernels!(logcumsumexp, LogSumExp, f16, F16);
scan_kernels!(logcumsumexp, LogSumExp, bf16, BF16);

// ------------------------------------------------------------------ sorting

/// An order-preserving u64 image of a value: NaN above +inf, -0 equal to +0.
/// (The keys themselves: `crate::sort_key`, shared with the CPU backend.)
trait SortKey: Copy {
    fn key(self) -> u64;
}

impl SortKey for f64 {
    #[inline(always)]
    fn key(self) -> u64 {
        crate::sort_key::float_key(self)
    }
}

macro_rules! key_via_f64 {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                // f32, f16 and bf16 widen exactly
                crate::sort_key::float_key(self.to_f64())
            }
        }
    )*};
}
key_via_f64!(f32, F16, BF16);

macro_rules! key_via_i64 {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                crate::sort_key::int_key(self.to_i64())
            }
        }
    )*};
}
key_via_i64!(i64, i32, u8);

impl SortKey for bool {
    #[inline(always)]
    fn key(self) -> u64 {
        self as u64
    }
}

/// Whether pair `a` sorts after pair `b`.
#[inline(always)]
fn after(ka: u64, ia: u32, kb: u64, ib: u32) -> bool {
    ka > kb || (ka == kb && ia > ib)
}

macro_rules! sort_ends {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(sort_keys, $tn)]
            unsafe extern "ptx-kernel" fn keys(
                x: *const $t,
                keys: *mut u64,
                idx: *mut u32,
                a: crate::args::SortKeysArgs,
            ) {
                let flip = if a.descending != 0 { u64::MAX } else { 0 };
                for_each_index(a.rows * a.padded, |i| {
                    let (r, j) = (i / a.padded, i % a.padded);
                    let (k, p) = if j < a.len {
                        ((*x.add((r * a.len + j) as usize)).key() ^ flip, j)
                    } else {
                        (u64::MAX, u32::MAX)
                    };
                    *keys.add(i as usize) = k;
                    *idx.add(i as usize) = p;
                });
            }
            #[export_name = crate::kernel_name!(sort_gather, $tn)]
            unsafe extern "ptx-kernel" fn gather(
                x: *const $t,
                idx: *const u32,
                y: *mut $t,
                yi: *mut i64,
                a: crate::args::SortGatherArgs,
            ) {
                for_each_index(a.rows * a.len, |i| {
                    let (r, j) = (i / a.len, i % a.len);
                    let p = *idx.add((r * a.padded + j) as usize);
                    *y.add(i as usize) = *x.add((r * a.len + p) as usize);
                    *yi.add(i as usize) = p as i64;
                });
            }
            #[export_name = crate::kernel_name!(sort_search, $tn)]
            unsafe extern "ptx-kernel" fn search(
                seq: *const $t,
                v: *const $t,
                out: *mut i64,
                a: crate::args::SortSearchArgs,
            ) {
                for_each_index(a.rows * a.m, |i| {
                    let base = if a.shared != 0 { 0 } else { (i / a.m) * a.n } as usize;
                    let key = (*v.add(i as usize)).key();
                    let (mut lo, mut hi) = (0u32, a.n);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        let k = (*seq.add(base + mid as usize)).key();
                        if k < key || (a.right != 0 && k == key) {
                            lo = mid + 1;
                        } else {
                            hi = mid;
                        }
                    }
                    *out.add(i as usize) = lo as i64;
                });
            }
        };
    };
}
for_all_types!(sort_ends!());

/// Bitonic stages `k_lo..=k_hi` within one chunk of keys in shared memory.
#[export_name = "sort_local"]
unsafe extern "ptx-kernel" fn sort_local(keys: *mut u64, idx: *mut u32, a: crate::args::SortLocalArgs) {
    let per_row = a.padded / a.chunk;
    let (b, _, _) = block_xyz();
    if b / per_row >= a.rows {
        return;
    }
    let base = b as usize * a.chunk as usize;
    // position of the chunk's first key within its row
    let row_pos = (b % per_row) * a.chunk;
    let sk = shared::<u64>();
    let si = sk.add(a.chunk as usize) as *mut u32;
    let (t, _) = thread_xy();
    let n = dims().0;
    let mut i = t;
    while i < a.chunk {
        *sk.add(i as usize) = *keys.add(base + i as usize);
        *si.add(i as usize) = *idx.add(base + i as usize);
        i += n;
    }
    sync_threads();
    let mut k = a.k_lo;
    while k <= a.k_hi {
        let mut j = if k / 2 < a.chunk / 2 { k / 2 } else { a.chunk / 2 };
        while j > 0 {
            let mut p = t;
            while p < a.chunk / 2 {
                let lo = (p / j) * 2 * j + p % j;
                let hi = lo + j;
                let ascending = (row_pos + lo) & k == 0;
                let (kl, il) = (*sk.add(lo as usize), *si.add(lo as usize));
                let (kh, ih) = (*sk.add(hi as usize), *si.add(hi as usize));
                if after(kl, il, kh, ih) == ascending {
                    *sk.add(lo as usize) = kh;
                    *si.add(lo as usize) = ih;
                    *sk.add(hi as usize) = kl;
                    *si.add(hi as usize) = il;
                }
                p += n;
            }
            sync_threads();
            j /= 2;
        }
        k *= 2;
    }
    let mut i = t;
    while i < a.chunk {
        *keys.add(base + i as usize) = *sk.add(i as usize);
        *idx.add(base + i as usize) = *si.add(i as usize);
        i += n;
    }
}

/// One bitonic compare-exchange step `(k, j)` across whole rows.
#[export_name = "sort_global"]
unsafe extern "ptx-kernel" fn sort_global(keys: *mut u64, idx: *mut u32, a: crate::args::SortGlobalArgs) {
    let half = a.padded / 2;
    for_each_index(a.rows * half, |t| {
        let (r, p) = (t / half, t % half);
        let lo = (p / a.j) * 2 * a.j + p % a.j;
        let hi = lo + a.j;
        let ascending = lo & a.k == 0;
        let (l, h) = ((r * a.padded + lo) as usize, (r * a.padded + hi) as usize);
        let (kl, il) = (*keys.add(l), *idx.add(l));
        let (kh, ih) = (*keys.add(h), *idx.add(h));
        if after(kl, il, kh, ih) == ascending {
            *keys.add(l) = kh;
            *idx.add(l) = ih;
            *keys.add(h) = kl;
            *idx.add(h) = il;
        }
    });
}
