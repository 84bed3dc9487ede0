//! Elementwise kernels: unary, binary, comparisons, where, casts, fills,
//! ranges and random numbers. The strided variants read inputs through
//! [`Geometry::offset`] and write contiguous outputs (casts write strided
//! outputs too, for in-place copies); the dense variants use 16-byte accesses.

use crate::device::{for_each_index, AlignTo, Aligned, Bytes};
use crate::elem::{Elem, BF16, F16};
use crate::params::{Geometry, Operand};
use crate::{math, philox};

// ---- unary ------------------------------------------------------------------

/// One float unary kernel: computes in f64 for f64, in f32 otherwise.
macro_rules! unary_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("unary_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(g: Geometry, x: *const $t, xo: Operand, y: *mut $t) {
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
            #[export_name = concat!("unary_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(g: Geometry, x: *const $t, xo: Operand, y: *mut $t) {
                for_each_index(g.n, |i| {
                    let v = (*x.add(g.offset(&xo, i) as usize)).to_i64();
                    *y.add(i as usize) = <$t>::from_i64(($f)(v));
                });
            }
        };
    };
}

/// One line per float unary op: its strided and its dense (packed) kernels.
macro_rules! float_unary_ops {
    ($($op:ident => $f32:expr, $f64:expr;)*) => {
        $(
            for_float_types!(unary_float!($op, $f32, $f64,));
            for_float_types!(unary_packed!($op, $f32, $f64,));
        )*
    };
}

fn relu32(x: f32) -> f32 {
    if x > 0.0 || x != x {
        x
    } else {
        0.0
    }
}
fn relu64(x: f64) -> f64 {
    if x > 0.0 || x != x {
        x
    } else {
        0.0
    }
}
fn sign32(x: f32) -> f32 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}
fn sign64(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

for_int_types!(unary_int!(abs, |x: i64| x.wrapping_abs(),));
for_int_types!(unary_int!(neg, |x: i64| x.wrapping_neg(),));
for_int_types!(unary_int!(relu, |x: i64| if x > 0 { x } else { 0 },));
for_int_types!(unary_int!(sign, |x: i64| x.signum(),));
for_int_types!(unary_int!(square, |x: i64| x.wrapping_mul(x),));
for_int_types!(unary_int!(floor, |x: i64| x,));
for_int_types!(unary_int!(ceil, |x: i64| x,));
for_int_types!(unary_int!(round, |x: i64| x,));

macro_rules! logical_not {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("unary_logical_not_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(g: Geometry, x: *const $t, xo: Operand, y: *mut bool) {
                for_each_index(g.n, |i| {
                    let v = *x.add(g.offset(&xo, i) as usize);
                    *y.add(i as usize) = v.to_f64() == 0.0;
                });
            }
        };
    };
}
for_all_types!(logical_not!());

// ---- binary -----------------------------------------------------------------

macro_rules! binary_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("binary_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                a: *const $t,
                ao: Operand,
                b: *const $t,
                bo: Operand,
                y: *mut $t,
            ) {
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
            #[export_name = concat!("binary_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                a: *const $t,
                ao: Operand,
                b: *const $t,
                bo: Operand,
                y: *mut $t,
            ) {
                for_each_index(g.n, |i| {
                    let p = (*a.add(g.offset(&ao, i) as usize)).to_i64();
                    let q = (*b.add(g.offset(&bo, i) as usize)).to_i64();
                    *y.add(i as usize) = <$t>::from_i64(($f)(p, q));
                });
            }
        };
    };
}

fn rem32(a: f32, b: f32) -> f32 {
    let r = libm::fmodf(a, b);
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}
fn rem64(a: f64, b: f64) -> f64 {
    let r = libm::fmod(a, b);
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}
fn max32(a: f32, b: f32) -> f32 {
    if a != a || b != b {
        f32::NAN
    } else if a > b {
        a
    } else {
        b
    }
}
fn max64(a: f64, b: f64) -> f64 {
    if a != a || b != b {
        f64::NAN
    } else if a > b {
        a
    } else {
        b
    }
}
fn min32(a: f32, b: f32) -> f32 {
    if a != a || b != b {
        f32::NAN
    } else if a < b {
        a
    } else {
        b
    }
}
fn min64(a: f64, b: f64) -> f64 {
    if a != a || b != b {
        f64::NAN
    } else if a < b {
        a
    } else {
        b
    }
}
fn irem(a: i64, b: i64) -> i64 {
    match a.checked_rem(b) {
        Some(r) if r != 0 && ((r < 0) != (b < 0)) => r + b,
        Some(r) => r,
        None => 0,
    }
}
fn ipow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 if exp % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut r, mut b, mut e) = (1i64, base, exp as u64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}

for_int_types!(binary_int!(add, |a: i64, b: i64| a.wrapping_add(b),));
for_int_types!(binary_int!(sub, |a: i64, b: i64| a.wrapping_sub(b),));
for_int_types!(binary_int!(mul, |a: i64, b: i64| a.wrapping_mul(b),));
for_int_types!(binary_int!(remainder, irem,));
for_int_types!(binary_int!(pow, ipow,));
for_int_types!(binary_int!(maximum, |a: i64, b: i64| if a > b { a } else { b },));
for_int_types!(binary_int!(minimum, |a: i64, b: i64| if a < b { a } else { b },));
binary_int!(add, |a: i64, b: i64| ((a | b) != 0) as i64, bool, bool);
binary_int!(maximum, |a: i64, b: i64| ((a | b) != 0) as i64, bool, bool);
binary_int!(mul, |a: i64, b: i64| ((a & b) != 0) as i64, bool, bool);
binary_int!(minimum, |a: i64, b: i64| ((a & b) != 0) as i64, bool, bool);

// ---- comparisons and where -------------------------------------------------------

macro_rules! compare {
    ($op:ident, $cmp:tt, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("cmp_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                a: *const $t,
                ao: Operand,
                b: *const $t,
                bo: Operand,
                y: *mut bool,
            ) {
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
for_all_types!(compare!(eq, ==,));
for_all_types!(compare!(ne, !=,));
for_all_types!(compare!(lt, <,));
for_all_types!(compare!(le, <=,));
for_all_types!(compare!(gt, >,));
for_all_types!(compare!(ge, >=,));

macro_rules! where_kernel {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("where_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                c: *const bool,
                co: Operand,
                a: *const $t,
                ao: Operand,
                b: *const $t,
                bo: Operand,
                y: *mut $t,
            ) {
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
            #[export_name = concat!("cast_", stringify!($sn), "_", stringify!($dn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                x: *const $s,
                xo: Operand,
                y: *mut $d,
                yo: Operand,
            ) {
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
            #[export_name = concat!("cast_v_", stringify!($sn), "_", stringify!($dn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, x: *const $s, y: *mut $d) {
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
            #[export_name = concat!("fill_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, y: *mut $t, value: $t) {
                for_each_index(n, |i| *y.add(i as usize) = value);
            }
        };
        const _: () = {
            #[export_name = concat!("arange_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                n: u32,
                y: *mut $t,
                start: f64,
                step: f64,
                istart: i64,
                istep: i64,
            ) {
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
            #[export_name = concat!("rand_uniform_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, y: *mut $t, seed: u64, stream: u64) {
                for_each_index(n, |i| {
                    let v: $t = if core::mem::size_of::<$t>() == 8 {
                        <$t>::from_f64(philox::uniform_f64_at(seed, stream, i as u64))
                    } else {
                        let x = <$t>::from_f32(philox::uniform_at(seed, stream, i as u64));
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
            #[export_name = concat!("rand_normal_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, y: *mut $t, seed: u64, stream: u64) {
                for_each_index(n, |i| {
                    *y.add(i as usize) = <$t>::from_f64(philox::normal_at(seed, stream, i as u64));
                });
            }
        };
    };
}
for_float_types!(random_float!());

macro_rules! random_int {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("rand_int_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                n: u32,
                y: *mut $t,
                seed: u64,
                stream: u64,
                low: i64,
                range: u64,
            ) {
                for_each_index(n, |i| {
                    *y.add(i as usize) = <$t>::from_i64(philox::int_at(seed, stream, i as u64, low, range));
                });
            }
        };
    };
}
for_all_types!(random_int!());

// ---- bitwise (integers and bool) --------------------------------------------------

for_int_types!(binary_int!(bitwise_and, |a: i64, b: i64| a & b,));
for_int_types!(binary_int!(bitwise_or, |a: i64, b: i64| a | b,));
for_int_types!(binary_int!(bitwise_xor, |a: i64, b: i64| a ^ b,));
binary_int!(bitwise_and, |a: i64, b: i64| a & b, bool, bool);
binary_int!(bitwise_or, |a: i64, b: i64| a | b, bool, bool);
binary_int!(bitwise_xor, |a: i64, b: i64| a ^ b, bool, bool);

// ---- ops with a host scalar (passed by value; `rev` puts the scalar first) --------

macro_rules! binary_scalar_float {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("binary_scalar_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                a: *const $t,
                ao: Operand,
                s: $t,
                rev: u32,
                y: *mut $t,
            ) {
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
            #[export_name = concat!("binary_scalar_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                a: *const $t,
                ao: Operand,
                s: $t,
                rev: u32,
                y: *mut $t,
            ) {
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

for_int_types!(binary_scalar_int!(add, |a: i64, b: i64| a.wrapping_add(b),));
for_int_types!(binary_scalar_int!(sub, |a: i64, b: i64| a.wrapping_sub(b),));
for_int_types!(binary_scalar_int!(mul, |a: i64, b: i64| a.wrapping_mul(b),));
for_int_types!(binary_scalar_int!(remainder, irem,));
for_int_types!(binary_scalar_int!(pow, ipow,));
for_int_types!(binary_scalar_int!(maximum, |a: i64, b: i64| if a > b {
    a
} else {
    b
},));
for_int_types!(binary_scalar_int!(minimum, |a: i64, b: i64| if a < b {
    a
} else {
    b
},));
for_int_types!(binary_scalar_int!(bitwise_and, |a: i64, b: i64| a & b,));
for_int_types!(binary_scalar_int!(bitwise_or, |a: i64, b: i64| a | b,));
for_int_types!(binary_scalar_int!(bitwise_xor, |a: i64, b: i64| a ^ b,));
binary_scalar_int!(add, |a: i64, b: i64| ((a | b) != 0) as i64, bool, bool);
binary_scalar_int!(maximum, |a: i64, b: i64| ((a | b) != 0) as i64, bool, bool);
binary_scalar_int!(mul, |a: i64, b: i64| ((a & b) != 0) as i64, bool, bool);
binary_scalar_int!(minimum, |a: i64, b: i64| ((a & b) != 0) as i64, bool, bool);
binary_scalar_int!(bitwise_and, |a: i64, b: i64| a & b, bool, bool);
binary_scalar_int!(bitwise_or, |a: i64, b: i64| a | b, bool, bool);
binary_scalar_int!(bitwise_xor, |a: i64, b: i64| a ^ b, bool, bool);

macro_rules! compare_scalar {
    ($op:ident, $cmp:tt, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("cmp_scalar_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(g: Geometry, a: *const $t, ao: Operand, s: $t, rev: u32, y: *mut bool) {
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
for_all_types!(compare_scalar!(eq, ==,));
for_all_types!(compare_scalar!(ne, !=,));
for_all_types!(compare_scalar!(lt, <,));
for_all_types!(compare_scalar!(le, <=,));
for_all_types!(compare_scalar!(gt, >,));
for_all_types!(compare_scalar!(ge, >=,));

// ---- dense fast paths: 16-byte accesses, no index arithmetic --------------------------

macro_rules! unary_packed {
    ($op:ident, $f32:expr, $f64:expr, $tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("unary_v_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, x: *const $t, y: *mut $t) {
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
            #[export_name = concat!("binary_v_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, a: *const $t, b: *const $t, y: *mut $t) {
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
            #[export_name = concat!("binary_scalar_v_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(n: u32, a: *const $t, s: $t, rev: u32, y: *mut $t) {
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
            #[export_name = concat!("binary_row_", stringify!($op), "_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                packs: u32,
                row_packs: u32,
                row_side: u32,
                a: *const $t,
                b: *const $t,
                y: *mut $t,
            ) {
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

// ---- the float op tables (each op once; every kernel family generated from it) --------

float_unary_ops! {
    abs => libm::fabsf, libm::fabs;
    neg => |x: f32| -x, |x: f64| -x;
    exp => math::exp_f32, libm::exp;
    log => libm::logf, libm::log;
    log2 => libm::log2f, libm::log2;
    log1p => libm::log1pf, libm::log1p;
    expm1 => libm::expm1f, libm::expm1;
    sqrt => math::sqrt_f32, math::sqrt_f64;
    rsqrt => |x: f32| 1.0 / math::sqrt_f32(x), |x: f64| 1.0 / math::sqrt_f64(x);
    sin => libm::sinf, libm::sin;
    cos => libm::cosf, libm::cos;
    tan => libm::tanf, libm::tan;
    tanh => libm::tanhf, libm::tanh;
    sigmoid => math::sigmoid_f32, math::sigmoid_f64;
    relu => relu32, relu64;
    gelu => math::gelu_f32, math::gelu_f64;
    silu => math::silu_f32, math::silu_f64;
    erf => math::erf_f32, math::erf_f64;
    floor => libm::floorf, libm::floor;
    ceil => libm::ceilf, libm::ceil;
    round => libm::rintf, libm::rint;
    sign => sign32, sign64;
    square => |x: f32| x * x, |x: f64| x * x;
    reciprocal => |x: f32| 1.0 / x, |x: f64| 1.0 / x;
}

/// One line per float binary op: strided, with a scalar, and dense kernels.
macro_rules! float_binary_ops {
    ($($op:ident => $f32:expr, $f64:expr;)*) => {
        $(
            for_float_types!(binary_float!($op, $f32, $f64,));
            for_float_types!(binary_scalar_float!($op, $f32, $f64,));
            for_float_types!(binary_packed!($op, $f32, $f64,));
            for_float_types!(binary_row!($op, $f32, $f64,));
        )*
    };
}

float_binary_ops! {
    add => |a: f32, b: f32| a + b, |a: f64, b: f64| a + b;
    sub => |a: f32, b: f32| a - b, |a: f64, b: f64| a - b;
    mul => |a: f32, b: f32| a * b, |a: f64, b: f64| a * b;
    div => |a: f32, b: f32| a / b, |a: f64, b: f64| a / b;
    remainder => rem32, rem64;
    pow => math::pow_f32, math::pow_f64;
    maximum => max32, max64;
    minimum => min32, min64;
}
