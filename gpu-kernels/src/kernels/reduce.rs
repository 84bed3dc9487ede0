//! Reductions. The generic pair (`reduce_partial_*`, `reduce_finish_*`) walks any
//! layout with an [`RState`] per warp: one warp per (output, chunk of its
//! lane), then one warp per output; `reduce_short_*` serves short lanes (the
//! windows of a pooling, a small last dim) with one thread per output. The dense float kernels handle the common
//! cases at memory bandwidth, accumulating in f32 (f64 for f64):
//! `reduce_lanes_*` (the reduced elements of each output are adjacent: one
//! block per row chunk) and `reduce_cols_*` (they are `inner` apart: threads
//! across the output columns, the reduced axis split into chunks).

use super::accum::{Combine, FloatElem};
use crate::device::{
    block_all_reduce, dims, for_each_index, global_index, lane_id, shared, sync_threads, thread_xy,
};
use crate::device::{shfl_xor_f64, shfl_xor_u64, warp_all_reduce};
use crate::elem::{Elem, BF16, F16};
use crate::reduce::{RState, ReduceCode};

#[inline(always)]
fn shfl_state(s: RState, m: u32) -> RState {
    RState {
        a: shfl_xor_f64(s.a, m),
        b: shfl_xor_f64(s.b, m),
        c: shfl_xor_f64(s.c, m),
        i: shfl_xor_u64(s.i as u64, m) as i64,
        idx: shfl_xor_u64(s.idx as u64, m) as i64,
    }
}

#[inline(always)]
fn warp_merge(mut s: RState, op: ReduceCode, float: bool) -> RState {
    let mut m = 16;
    while m > 0 {
        let t = shfl_state(s, m);
        s = s.merge(op, float, t);
        m >>= 1;
    }
    s
}

macro_rules! reduce_partial {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_partial, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                partial: *mut RState,
                args: crate::args::ReducePartialArgs,
            ) {
                let crate::args::ReducePartialArgs {
                    outer,
                    xo,
                    inner,
                    io,
                    chunks,
                    chunk_len,
                    op,
                } = args;
                let warp = global_index() / 32;
                if warp >= outer.n * chunks {
                    return;
                }
                let code = ReduceCode::from_u32(op);
                let (o, c) = (warp / chunks, warp % chunks);
                let base = outer.offset(&xo, o);
                let start = c * chunk_len;
                let end = if inner.n - start < chunk_len {
                    inner.n
                } else {
                    start + chunk_len
                };
                let mut s = RState::init(code);
                let at = |j: u32| *x.add((base + inner.offset(&io, j)) as usize);
                let push = |s: &mut RState, v: $t, j: u32| {
                    let vi = if <$t>::FLOAT { 0 } else { v.to_i64() };
                    s.push(code, <$t>::FLOAT, v.to_f64(), vi, j as i64);
                };
                let mut j = start + lane_id();
                // four loads in flight per thread, then one at a time for the rest
                while j + 96 < end {
                    let (v0, v1, v2, v3) = (at(j), at(j + 32), at(j + 64), at(j + 96));
                    push(&mut s, v0, j);
                    push(&mut s, v1, j + 32);
                    push(&mut s, v2, j + 64);
                    push(&mut s, v3, j + 96);
                    j += 128;
                }
                while j < end {
                    push(&mut s, at(j), j);
                    j += 32;
                }
                let s = warp_merge(s, code, <$t>::FLOAT);
                if lane_id() == 0 {
                    *partial.add(warp as usize) = s;
                }
            }
        };
    };
}
for_all_types!(reduce_partial!());

macro_rules! reduce_short {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_short, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                y: *mut u8,
                args: crate::args::ReduceShortArgs,
            ) {
                let crate::args::ReduceShortArgs {
                    outer,
                    xo,
                    inner,
                    io,
                    op,
                    correction,
                    index_out,
                } = args;
                let code = ReduceCode::from_u32(op);
                for_each_index(outer.n, |o| {
                    let base = outer.offset(&xo, o);
                    let mut s = RState::init(code);
                    let mut j = 0;
                    while j < inner.n {
                        let v = *x.add((base + inner.offset(&io, j)) as usize);
                        let vi = if <$t>::FLOAT { 0 } else { v.to_i64() };
                        s.push(code, <$t>::FLOAT, v.to_f64(), vi, j as i64);
                        j += 1;
                    }
                    let (f, i) = s.finish(code, <$t>::FLOAT, correction);
                    if index_out != 0 {
                        *(y as *mut i64).add(o as usize) = i;
                    } else {
                        *(y as *mut $t).add(o as usize) = if <$t>::FLOAT {
                            <$t>::from_f64(f)
                        } else {
                            <$t>::from_i64(i)
                        };
                    }
                });
            }
        };
    };
}
for_all_types!(reduce_short!());

macro_rules! reduce_finish {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_finish, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                partial: *const RState,
                y: *mut $t,
                args: crate::args::ReduceFinishArgs,
            ) {
                let crate::args::ReduceFinishArgs {
                    outputs,
                    chunks,
                    op,
                    float,
                    correction,
                } = args;
                let o = global_index() / 32;
                if o >= outputs {
                    return;
                }
                let code = ReduceCode::from_u32(op);
                let float = float != 0;
                let mut s = RState::init(code);
                let mut c = lane_id();
                while c < chunks {
                    s = s.merge(code, float, *partial.add((o * chunks + c) as usize));
                    c += 32;
                }
                let s = warp_merge(s, code, float);
                if lane_id() == 0 {
                    let (f, i) = s.finish(code, float, correction);
                    *y.add(o as usize) = if <$t>::FLOAT {
                        <$t>::from_f64(f)
                    } else {
                        <$t>::from_i64(i)
                    };
                }
            }
        };
    };
}
for_all_types!(reduce_finish!());

// ---- dense float reductions ---------------------------------------------------------------

/// Rows of `len` adjacent elements, each split into `chunks` chunks of
/// `chunk_len`; one block per (row, chunk), grid-stride over them. With one
/// chunk the block writes the result to `y[row]`, else its partial to
/// `partial[row * chunks + chunk]` (merged by [`lanes_finish`]). `packed`:
/// `x` is 16-byte aligned and `len`, `chunk_len` are whole packs.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn lanes<T: FloatElem, const OP: u32, const V: usize>(
    rows: u32,
    len: u32,
    chunks: u32,
    chunk_len: u32,
    packed: u32,
    x: *const T,
    partial: *mut T::Acc,
    y: *mut T,
) {
    let (width, blocks, _) = dims();
    let (tx, _) = thread_xy();
    let scratch = shared::<T::Acc>();
    let items = rows * chunks;
    let mut item = crate::device::block_xyz().0;
    while item < items {
        let (r, c) = (item / chunks, item % chunks);
        let start = c * chunk_len;
        let end = if len - start < chunk_len {
            len
        } else {
            start + chunk_len
        };
        let row = x.add(r as usize * len as usize);
        let mut acc = [Combine::<OP>::identity::<T::Acc>(); 4];
        if packed != 0 {
            let p = row.add(start as usize) as *const crate::device::Pack<T, V>;
            let n = (end - start) / V as u32;
            let mut j = tx;
            // two 16-byte loads in flight per thread
            while j + width < n {
                let (v0, v1) = (*p.add(j as usize), *p.add((j + width) as usize));
                let mut k = 0;
                while k < V {
                    acc[0] = Combine::<OP>::apply(acc[0], v0.0[k].acc());
                    acc[1] = Combine::<OP>::apply(acc[1], v1.0[k].acc());
                    k += 1;
                }
                j += 2 * width;
            }
            if j < n {
                let v = *p.add(j as usize);
                let mut k = 0;
                while k < V {
                    acc[2] = Combine::<OP>::apply(acc[2], v.0[k].acc());
                    k += 1;
                }
            }
        } else {
            let mut j = start + tx;
            while j + 3 * width < end {
                let v = [
                    *row.add(j as usize),
                    *row.add((j + width) as usize),
                    *row.add((j + 2 * width) as usize),
                    *row.add((j + 3 * width) as usize),
                ];
                let mut k = 0;
                while k < 4 {
                    acc[k] = Combine::<OP>::apply(acc[k], v[k].acc());
                    k += 1;
                }
                j += 4 * width;
            }
            while j < end {
                acc[0] = Combine::<OP>::apply(acc[0], (*row.add(j as usize)).acc());
                j += width;
            }
        }
        let a = Combine::<OP>::apply(
            Combine::<OP>::apply(acc[0], acc[1]),
            Combine::<OP>::apply(acc[2], acc[3]),
        );
        let a = block_all_reduce(a, scratch, Combine::<OP>::apply);
        if tx == 0 {
            if chunks == 1 {
                *y.add(r as usize) = T::from_acc(Combine::<OP>::finish(a, len));
            } else {
                *partial.add(item as usize) = a;
            }
        }
        item += blocks;
    }
}

/// Merges the `chunks` partials of each of `outputs` rows (one warp per row).
#[inline(always)]
unsafe fn lanes_finish<T: FloatElem, const OP: u32>(
    outputs: u32,
    chunks: u32,
    count: u32,
    partial: *const T::Acc,
    y: *mut T,
) {
    let o = global_index() / 32;
    if o >= outputs {
        return;
    }
    let mut a = Combine::<OP>::identity::<T::Acc>();
    let mut c = lane_id();
    while c < chunks {
        a = Combine::<OP>::apply(a, *partial.add((o * chunks + c) as usize));
        c += 32;
    }
    let a = warp_all_reduce(a, Combine::<OP>::apply);
    if lane_id() == 0 {
        *y.add(o as usize) = T::from_acc(Combine::<OP>::finish(a, count));
    }
}

/// A dense `[outer, r, inner]` tensor reduced over `r`: one thread per
/// (outer, chunk of r, column), columns adjacent across threads. With one
/// chunk the thread writes `y[outer * inner + column]`, else its partial to
/// `partial[(outer * chunks + chunk) * inner + column]`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn cols<T: FloatElem, const OP: u32>(
    outer: u32,
    r: u32,
    inner: u32,
    chunks: u32,
    chunk_len: u32,
    x: *const T,
    partial: *mut T::Acc,
    y: *mut T,
) {
    for_each_index(outer * chunks * inner, |t| {
        let (q, i) = (t / inner, t % inner);
        let (o, c) = (q / chunks, q % chunks);
        let start = c * chunk_len;
        let end = if r - start < chunk_len {
            r
        } else {
            start + chunk_len
        };
        let p = x.add(o as usize * r as usize * inner as usize + i as usize);
        let at = |k: u32| (*p.add(k as usize * inner as usize)).acc();
        let mut acc = [Combine::<OP>::identity::<T::Acc>(); 8];
        let mut k = start;
        while k + 8 <= end {
            let v = [
                at(k),
                at(k + 1),
                at(k + 2),
                at(k + 3),
                at(k + 4),
                at(k + 5),
                at(k + 6),
                at(k + 7),
            ];
            let mut u = 0;
            while u < 8 {
                acc[u] = Combine::<OP>::apply(acc[u], v[u]);
                u += 1;
            }
            k += 8;
        }
        while k < end {
            acc[0] = Combine::<OP>::apply(acc[0], at(k));
            k += 1;
        }
        let mut a = acc[0];
        let mut u = 1;
        while u < 8 {
            a = Combine::<OP>::apply(a, acc[u]);
            u += 1;
        }
        if chunks == 1 {
            *y.add((o * inner + i) as usize) = T::from_acc(Combine::<OP>::finish(a, r));
        } else {
            *partial.add(t as usize) = a;
        }
    });
}

/// Merges the `chunks` partials of each of `outer * inner` outputs. A block
/// of 32 × [`COLS_FINISH_ROWS`] threads takes 32 adjacent outputs: each row
/// of threads folds every `COLS_FINISH_ROWS`-th chunk (four loads in flight),
/// then row 0 merges the rows through shared memory. (One thread per output
/// walked all the chunks alone: a few hundred threads on the whole GPU for a
/// bias gradient, each waiting on hundreds of loads in turn.)
#[inline(always)]
unsafe fn cols_finish<T: FloatElem, const OP: u32>(
    outer: u32,
    inner: u32,
    chunks: u32,
    count: u32,
    partial: *const T::Acc,
    y: *mut T,
) {
    const ROWS: u32 = crate::args::COLS_FINISH_ROWS;
    let (tx, ty) = thread_xy();
    let n = outer * inner;
    let scratch = shared::<T::Acc>();
    let id = Combine::<OP>::identity::<T::Acc>;
    let mut group = crate::device::block_xyz().0;
    while group * 32 < n {
        let t = group * 32 + tx;
        let mut a = [id(), id(), id(), id()];
        if t < n {
            let (o, i) = (t / inner, t % inner);
            let base = partial.add(o as usize * chunks as usize * inner as usize + i as usize);
            let at = |c: u32| *base.add(c as usize * inner as usize);
            let mut c = ty;
            while c + 3 * ROWS < chunks {
                let v = [at(c), at(c + ROWS), at(c + 2 * ROWS), at(c + 3 * ROWS)];
                a[0] = Combine::<OP>::apply(a[0], v[0]);
                a[1] = Combine::<OP>::apply(a[1], v[1]);
                a[2] = Combine::<OP>::apply(a[2], v[2]);
                a[3] = Combine::<OP>::apply(a[3], v[3]);
                c += 4 * ROWS;
            }
            while c < chunks {
                a[0] = Combine::<OP>::apply(a[0], at(c));
                c += ROWS;
            }
        }
        let v = Combine::<OP>::apply(Combine::<OP>::apply(a[0], a[1]), Combine::<OP>::apply(a[2], a[3]));
        *scratch.add((ty * 32 + tx) as usize) = v;
        sync_threads();
        if ty == 0 && t < n {
            let mut r = *scratch.add(tx as usize);
            let mut k = 1;
            while k < ROWS {
                r = Combine::<OP>::apply(r, *scratch.add((k * 32 + tx) as usize));
                k += 1;
            }
            *y.add(t as usize) = T::from_acc(Combine::<OP>::finish(r, count));
        }
        // the next group overwrites the scratch
        sync_threads();
        group += dims().1;
    }
}

macro_rules! dense_reduce {
    ($op:ident, $code:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_lanes, $op, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                partial: *mut <$t as FloatElem>::Acc,
                y: *mut $t,
                args: crate::args::LanesArgs,
            ) {
                let crate::args::LanesArgs {
                    rows,
                    len,
                    chunks,
                    chunk_len,
                    packed,
                } = args;
                lanes::<$t, { $code }, { 16 / core::mem::size_of::<$t>() }>(
                    rows, len, chunks, chunk_len, packed, x, partial, y,
                );
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_lanes_finish, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                partial: *const <$t as FloatElem>::Acc,
                y: *mut $t,
                args: crate::args::LanesFinishArgs,
            ) {
                let crate::args::LanesFinishArgs {
                    outputs,
                    chunks,
                    count,
                } = args;
                lanes_finish::<$t, { $code }>(outputs, chunks, count, partial, y);
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_cols, $op, $tn)]
            #[allow(clippy::too_many_arguments)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                partial: *mut <$t as FloatElem>::Acc,
                y: *mut $t,
                args: crate::args::ColsArgs,
            ) {
                let crate::args::ColsArgs {
                    outer,
                    r,
                    inner,
                    chunks,
                    chunk_len,
                } = args;
                cols::<$t, { $code }>(outer, r, inner, chunks, chunk_len, x, partial, y);
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(reduce_cols_finish, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                partial: *const <$t as FloatElem>::Acc,
                y: *mut $t,
                args: crate::args::ColsFinishArgs,
            ) {
                let crate::args::ColsFinishArgs {
                    outer,
                    inner,
                    chunks,
                    count,
                } = args;
                cols_finish::<$t, { $code }>(outer, inner, chunks, count, partial, y);
            }
        };
    };
}
for_float_types!(dense_reduce!(sum, 0,));
for_float_types!(dense_reduce!(mean, 2,));
for_float_types!(dense_reduce!(max, 5,));
for_float_types!(dense_reduce!(min, 6,));
