//! Elementwise kernels: unary, binary, comparisons, where, casts, fills,
//! ranges, random numbers and dropout. The strided variants read inputs through
//! [`Geometry::offset`] and write contiguous outputs (casts write strided
//! outputs too, for in-place copies); the dense variants use 16-byte accesses.

use crate::device::{for_each_index, AlignTo, Aligned, Bytes};
use crate::elem::{Elem, BF16, F16};
use crate::philox;

// ---- unary ------------------------------------------------------------------

/// One float unary kernel: computes in f64 for f64, in f32 otherwise.
macro_rules! unary_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(unary, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::UnaryArgs) {
                let crate::args::UnaryArgs { g, xo } = args;
                for_each_index(g.n, |i| {
                    let v = *x.add(g.offset(&xo, i) as usize);
                    let r: $t = if <$t>::FLOAT && core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(v.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(v.to_f32()))
                    };
                    *y.add(i as usize) = r;
                });
            }
        };
    };
}

macro_rules! unary_int {
    ($op:ident, $f:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(unary, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::UnaryArgs) {
                let crate::args::UnaryArgs { g, xo } = args;
                for_each_index(g.n, |i| {
                    let v = (*x.add(g.offset(&xo, i) as usize)).to_i64();
                    *y.add(i as usize) = <$t>::from_i64(($f)(v));
                });
            }
        };
    };
}

macro_rules! logical_not {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(unary_logical_not, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut bool, args: crate::args::UnaryArgs) {
                let crate::args::UnaryArgs { g, xo } = args;
                for_each_index(g.n, |i| {
                    let v = *x.add(g.offset(&xo, i) as usize);
                    *y.add(i as usize) = v.to_f64() == 0.0;
                });
            }
        };
    };
}

// ---- binary -----------------------------------------------------------------

macro_rules! binary_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::BinaryArgs,
            ) {
                let crate::args::BinaryArgs { g, ao, bo } = args;
                for_each_index(g.n, |i| {
                    let p = *a.add(g.offset(&ao, i) as usize);
                    let q = *b.add(g.offset(&bo, i) as usize);
                    let r: $t = if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(p.to_f64(), q.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(p.to_f32(), q.to_f32()))
                    };
                    *y.add(i as usize) = r;
                });
            }
        };
    };
}

macro_rules! binary_int {
    ($op:ident, $f:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::BinaryArgs,
            ) {
                let crate::args::BinaryArgs { g, ao, bo } = args;
                for_each_index(g.n, |i| {
                    let p = (*a.add(g.offset(&ao, i) as usize)).to_i64();
                    let q = (*b.add(g.offset(&bo, i) as usize)).to_i64();
                    *y.add(i as usize) = <$t>::from_i64(($f)(p, q));
                });
            }
        };
    };
}

// ---- comparisons and where -------------------------------------------------------

macro_rules! compare {
    ($op:ident, $cmp:tt, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(cmp, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(a: *const $t, b: *const $t, y: *mut bool, args: crate::args::BinaryArgs) {
                let crate::args::BinaryArgs { g, ao, bo } = args;
                for_each_index(g.n, |i| {
                    let p = *a.add(g.offset(&ao, i) as usize);
                    let q = *b.add(g.offset(&bo, i) as usize);
                    *y.add(i as usize) = if <$t>::FLOAT {
                        p.to_f64() $cmp q.to_f64()
                    } else {
                        p.to_i64() $cmp q.to_i64()
                    };
                });
            }
        };
    };
}
macro_rules! where_kernel {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(where, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                c: *const bool,
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::WhereArgs,
            ) {
                let crate::args::WhereArgs { g, co, ao, bo } = args;
                for_each_index(g.n, |i| {
                    let v = if *c.add(g.offset(&co, i) as usize) {
                        *a.add(g.offset(&ao, i) as usize)
                    } else {
                        *b.add(g.offset(&bo, i) as usize)
                    };
                    *y.add(i as usize) = v;
                });
            }
        };
    };
}
for_all_types!(where_kernel!());

// ---- casts, copies and fills ----------------------------------------------------

macro_rules! cast_kernel {
    ($dn:ident, $d:ty, $sn:ident, $s:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(cast, $sn, $dn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $s, y: *mut $d, args: crate::args::CastArgs) {
                let crate::args::CastArgs { g, xo, yo } = args;
                for_each_index(g.n, |i| {
                    let v = *x.add(g.offset(&xo, i) as usize);
                    let r: $d = if <$s>::FLOAT || <$d>::FLOAT {
                        if core::mem::size_of::<$s>() == 8 || core::mem::size_of::<$d>() == 8 {
                            <$d>::from_f64(v.to_f64())
                        } else {
                            <$d>::from_f32(v.to_f32())
                        }
                    } else {
                        <$d>::from_i64(v.to_i64())
                    };
                    *y.add(g.offset(&yo, i) as usize) = r;
                });
            }
        };
    };
}
/// The dense cast `cast_v_<src>_<dst>`: packs of `V` elements, `V` chosen so
/// the wider side moves 16 bytes per access (the narrower one 8, 4 or 2).
macro_rules! cast_packed {
    ($dn:ident, $d:ty, $sn:ident, $s:ty) => {
        const _: () = {
            const SS: usize = core::mem::size_of::<$s>();
            const DS: usize = core::mem::size_of::<$d>();
            const V: usize = 16 / if SS > DS { SS } else { DS };
            type PS = Aligned<<Bytes<{ V * SS }> as AlignTo>::A, [$s; V]>;
            type PD = Aligned<<Bytes<{ V * DS }> as AlignTo>::A, [$d; V]>;
            #[inline(always)]
            fn convert(v: $s) -> $d {
                if <$s>::FLOAT || <$d>::FLOAT {
                    if SS == 8 || DS == 8 {
                        <$d>::from_f64(v.to_f64())
                    } else {
                        <$d>::from_f32(v.to_f32())
                    }
                } else {
                    <$d>::from_i64(v.to_i64())
                }
            }
            #[export_name = crate::kernel_name!(cast_v, $sn, $dn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $s, y: *mut $d, args: crate::args::DenseArgs) {
                let crate::args::DenseArgs { n } = args;
                let packs = n / V as u32;
                let (xv, yv) = (x as *const PS, y as *mut PD);
                for_each_index(packs, |p| {
                    let a = (*xv.add(p as usize)).value;
                    let mut out = [convert(a[0]); V];
                    let mut k = 1;
                    while k < V {
                        out[k] = convert(a[k]);
                        k += 1;
                    }
                    *yv.add(p as usize) = PD::new(out);
                });
                let tail = packs * V as u32;
                let t = crate::device::global_index();
                if t < n - tail {
                    let i = (tail + t) as usize;
                    *y.add(i) = convert(*x.add(i));
                }
            }
        };
    };
}
macro_rules! cast_from_all {
    ($dn:ident, $d:ty) => {
        for_all_types!(cast_kernel!($dn, $d,));
        for_all_types!(cast_packed!($dn, $d,));
    };
}
for_all_types!(cast_from_all!());

macro_rules! fill_kernel {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(fill, $tn)]
            unsafe extern "ptx-kernel" fn kernel(y: *mut $t, args: crate::args::FillArgs) {
                let crate::args::FillArgs { n, value } = args;
                let value: $t = value.get();
                for_each_index(n, |i| *y.add(i as usize) = value);
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(arange, $tn)]
            unsafe extern "ptx-kernel" fn kernel(y: *mut $t, args: crate::args::ArangeArgs) {
                let crate::args::ArangeArgs {
                    n,
                    start,
                    step,
                    istart,
                    istep,
                } = args;
                for_each_index(n, |i| {
                    *y.add(i as usize) = if <$t>::FLOAT {
                        <$t>::from_f64(start + i as f64 * step)
                    } else {
                        <$t>::from_i64(istart.wrapping_add((i as i64).wrapping_mul(istep)))
                    };
                });
            }
        };
    };
}
for_all_types!(fill_kernel!());

// ---- random -------------------------------------------------------------------

macro_rules! random_float {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(rand_uniform, $tn)]
            unsafe extern "ptx-kernel" fn kernel(y: *mut $t, args: crate::args::RandArgs) {
                let crate::args::RandArgs {
                    n,
                    seed,
                    stream,
                    view,
                    draw_at,
                } = args;
                let (seed, stream) = philox::replayed(seed, stream, draw_at);
                for_each_index(n, |i| {
                    let at = view.index(i as u64);
                    let v: $t = if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(philox::uniform_f64_at(seed, stream, at))
                    } else {
                        let x = <$t>::from_f32(philox::uniform_at(seed, stream, at));
                        if x.to_f64() >= 1.0 {
                            <$t>::from_f64(0.0)
                        } else {
                            x
                        }
                    };
                    *y.add(i as usize) = v;
                });
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(rand_normal, $tn)]
            unsafe extern "ptx-kernel" fn kernel(y: *mut $t, args: crate::args::RandArgs) {
                let crate::args::RandArgs {
                    n,
                    seed,
                    stream,
                    view,
                    draw_at,
                } = args;
                let (seed, stream) = philox::replayed(seed, stream, draw_at);
                for_each_index(n, |i| {
                    *y.add(i as usize) =
                        <$t>::from_f64(philox::normal_at(seed, stream, view.index(i as u64)));
                });
            }
        };
    };
}
for_float_types!(random_float!());

/// Inverted dropout of dense `x`: element `i` is `x · scale` where the
/// draw keeps it ([`philox::keep4`]; [`philox::keep_f64`] for f64), else 0.
/// The same launch on the output's gradient is the backward. Four elements a
/// thread: one Philox block decides them all.
macro_rules! dropout_kernel {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(dropout, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::DropoutArgs) {
                let crate::args::DropoutArgs {
                    n,
                    seed,
                    stream,
                    p,
                    scale,
                    draw_at,
                } = args;
                let (seed, stream) = philox::replayed(seed, stream, draw_at);
                if core::mem::size_of::<$t>() == 8 {
                    for_each_index(n, |i| {
                        let keep = philox::keep_f64(seed, stream, i as u64, p);
                        let v = (*x.add(i as usize)).to_f64() * scale;
                        *y.add(i as usize) = <$t>::from_f64(if keep { v } else { 0.0 });
                    });
                } else {
                    let (p, scale) = (p as f32, scale as f32);
                    for_each_index(n.div_ceil(4), |q| {
                        let keep = philox::keep4(seed, stream, q as u64, p);
                        crate::device::unroll4(|k| {
                            let i = q * 4 + k as u32;
                            if i < n {
                                let v = (*x.add(i as usize)).to_f32() * scale;
                                *y.add(i as usize) = <$t>::from_f32(if keep[k] { v } else { 0.0 });
                            }
                        });
                    });
                }
            }
        };
    };
}
for_float_types!(dropout_kernel!());

macro_rules! random_int {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(rand_int, $tn)]
            unsafe extern "ptx-kernel" fn kernel(y: *mut $t, args: crate::args::RandIntArgs) {
                let crate::args::RandIntArgs {
                    n,
                    seed,
                    stream,
                    low,
                    range,
                    draw_at,
                } = args;
                let (seed, stream) = philox::replayed(seed, stream, draw_at);
                for_each_index(n, |i| {
                    *y.add(i as usize) = <$t>::from_i64(philox::int_at(seed, stream, i as u64, low, range));
                });
            }
        };
    };
}
for_all_types!(random_int!());

// ---- ops with a host scalar (passed by value; `rev` puts the scalar first) --------

macro_rules! binary_scalar_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary_scalar, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(a: *const $t, y: *mut $t, args: crate::args::ScalarArgs) {
                let crate::args::ScalarArgs { g, ao, s, rev } = args;
                let s: $t = s.get();
                for_each_index(g.n, |i| {
                    let x = *a.add(g.offset(&ao, i) as usize);
                    let (p, q) = if rev != 0 { (s, x) } else { (x, s) };
                    let r: $t = if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(p.to_f64(), q.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(p.to_f32(), q.to_f32()))
                    };
                    *y.add(i as usize) = r;
                });
            }
        };
    };
}

macro_rules! binary_scalar_int {
    ($op:ident, $f:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary_scalar, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(a: *const $t, y: *mut $t, args: crate::args::ScalarArgs) {
                let crate::args::ScalarArgs { g, ao, s, rev } = args;
                let s: $t = s.get();
                for_each_index(g.n, |i| {
                    let x = (*a.add(g.offset(&ao, i) as usize)).to_i64();
                    let s = s.to_i64();
                    let (p, q) = if rev != 0 { (s, x) } else { (x, s) };
                    *y.add(i as usize) = <$t>::from_i64(($f)(p, q));
                });
            }
        };
    };
}

macro_rules! compare_scalar {
    ($op:ident, $cmp:tt, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(cmp_scalar, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(a: *const $t, y: *mut bool, args: crate::args::ScalarArgs) {
                let crate::args::ScalarArgs { g, ao, s, rev } = args;
                let s: $t = s.get();
                for_each_index(g.n, |i| {
                    let x = *a.add(g.offset(&ao, i) as usize);
                    let (p, q) = if rev != 0 { (s, x) } else { (x, s) };
                    *y.add(i as usize) = if <$t>::FLOAT {
                        p.to_f64() $cmp q.to_f64()
                    } else {
                        p.to_i64() $cmp q.to_i64()
                    };
                });
            }
        };
    };
}
// ---- dense fast paths: 16-byte accesses, no index arithmetic --------------------------

macro_rules! unary_packed {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(unary_v, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(x: *const $t, y: *mut $t, args: crate::args::DenseArgs) {
                let crate::args::DenseArgs { n } = args;
                crate::device::map_packed::<$t, $t, { 16 / core::mem::size_of::<$t>() }>(n, x, y, |_, v| {
                    if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(v.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(v.to_f32()))
                    }
                });
            }
        };
    };
}

macro_rules! binary_packed {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary_v, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::DenseBinaryArgs,
            ) {
                let crate::args::DenseBinaryArgs { n } = args;
                crate::device::map_packed2::<$t, { 16 / core::mem::size_of::<$t>() }>(n, a, b, y, |p, q| {
                    if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(p.to_f64(), q.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(p.to_f32(), q.to_f32()))
                    }
                });
            }
        };
        const _: () = {
            #[export_name = crate::kernel_name!(binary_scalar_v, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                y: *mut $t,
                args: crate::args::DenseScalarArgs,
            ) {
                let crate::args::DenseScalarArgs { n, s, rev } = args;
                let s: $t = s.get();
                crate::device::map_packed::<$t, $t, { 16 / core::mem::size_of::<$t>() }>(n, a, y, |_, x| {
                    let (p, q) = if rev != 0 { (s, x) } else { (x, s) };
                    if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(($f64)(p.to_f64(), q.to_f64()))
                    } else {
                        <$t>::from_f32(($f32)(p.to_f32(), q.to_f32()))
                    }
                });
            }
        };
    };
}

/// `y = a op b` where one operand is dense and the other a dense row of
/// `row_packs` packs repeated over the rows (`row_side` 1: `b` is the row, 0:
/// `a` is): a row broadcast such as `M + v`, with 16-byte accesses.
macro_rules! binary_row {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(binary_row, $op, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                a: *const $t,
                b: *const $t,
                y: *mut $t,
                args: crate::args::RowArgs,
            ) {
                let crate::args::RowArgs {
                    packs,
                    row_packs,
                    row_side,
                } = args;
                type P = crate::device::Pack<$t, { 16 / core::mem::size_of::<$t>() }>;
                let (av, bv, yv) = (a as *const P, b as *const P, y as *mut P);
                for_each_index(packs, |p| {
                    let q = p % row_packs;
                    let (x, w) = if row_side != 0 {
                        (*av.add(p as usize), *bv.add(q as usize))
                    } else {
                        (*av.add(q as usize), *bv.add(p as usize))
                    };
                    let mut out = x;
                    let mut k = 0;
                    while k < out.0.len() {
                        let (l, r) = (x.0[k], w.0[k]);
                        out.0[k] = if core::mem::size_of::<$t>() == 8 {
                            <$t>::from_f64(($f64)(l.to_f64(), r.to_f64()))
                        } else {
                            <$t>::from_f32(($f32)(l.to_f32(), r.to_f32()))
                        };
                        k += 1;
                    }
                    *yv.add(p as usize) = out;
                });
            }
        };
    };
}

/// Every row of the unary op table: float kernels (strided and dense) for
/// every row, integer kernels for the `keep` rows, and the bool-valued
/// `logical_not` for any input dtype.
macro_rules! unary_kernels {
    ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
        $( unary_kernels!(@ $rule $n); )*
    };
    (@float $n:ident) => {
        for_float_types!(unary_float!($n, crate::ops::unary::$n::<f32>, crate::ops::unary::$n::<f64>,));
        for_float_types!(unary_packed!($n, crate::ops::unary::$n::<f32>, crate::ops::unary::$n::<f64>,));
    };
    (@keep $n:ident) => {
        unary_kernels!(@float $n);
        for_int_types!(unary_int!($n, crate::ops::unary::int::$n,));
    };
    (@logical $n:ident) => {
        for_all_types!(logical_not!());
    };
}
crate::unary_ops!(unary_kernels);

/// Every row of the binary op table: float kernels (strided, with a scalar,
/// dense and row-broadcast) for the `arith` and `float` rows, integer kernels
/// for the `arith` and `bitwise` rows, bool kernels where a row has a bool
/// formula.
macro_rules! binary_kernels {
    ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
        $( binary_kernels!(@ $rule $n $b); )*
    };
    (@float $n:ident $b:tt) => {
        for_float_types!(binary_float!($n, crate::ops::binary::$n::<f32>, crate::ops::binary::$n::<f64>,));
        for_float_types!(binary_scalar_float!($n, crate::ops::binary::$n::<f32>, crate::ops::binary::$n::<f64>,));
        for_float_types!(binary_packed!($n, crate::ops::binary::$n::<f32>, crate::ops::binary::$n::<f64>,));
        for_float_types!(binary_row!($n, crate::ops::binary::$n::<f32>, crate::ops::binary::$n::<f64>,));
    };
    (@arith $n:ident $b:tt) => {
        binary_kernels!(@float $n $b);
        binary_kernels!(@bitwise $n $b);
    };
    (@bitwise $n:ident $b:tt) => {
        for_int_types!(binary_int!($n, crate::ops::binary::int::$n,));
        for_int_types!(binary_scalar_int!($n, crate::ops::binary::int::$n,));
        binary_kernels!(@bool $n $b);
    };
    (@bool $n:ident ()) => {};
    (@bool $n:ident $b:tt) => {
        binary_int!($n, crate::ops::binary::boolean::$n, bool, bool);
        binary_scalar_int!($n, crate::ops::binary::boolean::$n, bool, bool);
    };
}
crate::binary_ops!(binary_kernels);

/// Every row of the comparison table, for every dtype: strided and with a scalar.
macro_rules! cmp_kernels {
    ($($v:ident $n:ident $doc:literal $op:tt;)*) => {
        $(
            for_all_types!(compare!($n, $op,));
            for_all_types!(compare_scalar!($n, $op,));
        )*
    };
}
crate::cmp_ops!(cmp_kernels);
