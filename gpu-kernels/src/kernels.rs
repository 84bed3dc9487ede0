//! The PTX kernels (nvptx only). Every kernel is generated here by a macro
//! per op family and exported under the name the host's kernel table looks
//! up: `unary_<op>_<dtype>`, `binary_<op>_<dtype>`, `cmp_<op>_<dtype>`,
//! `where_<dtype>`, `cast_<src>_<dst>`, `fill_<dtype>`, `arange_<dtype>`,
//! `rand_uniform_<dtype>`, `rand_normal_<dtype>`, `rand_int_<dtype>`.
//! Elementwise kernels read strided inputs through [`Geometry::offset`] and
//! write contiguous outputs (casts write strided outputs, for in-place copies).

use crate::device::for_each_index;
use crate::elem::{Elem, BF16, F16};
use crate::params::{Geometry, Operand};
use crate::{math, philox};

macro_rules! for_float_types {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)* f32, f32);
        $m!($($args)* f64, f64);
        $m!($($args)* f16, F16);
        $m!($($args)* bf16, BF16);
    };
}

macro_rules! for_int_types {
    ($m:ident!($($args:tt)*)) => {
        $m!($($args)* u8, u8);
        $m!($($args)* i32, i32);
        $m!($($args)* i64, i64);
    };
}

macro_rules! for_all_types {
    ($m:ident!($($args:tt)*)) => {
        for_float_types!($m!($($args)*));
        for_int_types!($m!($($args)*));
        $m!($($args)* bool, bool);
    };
}

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
macro_rules! cast_from_all {
    ($dn:ident, $d:ty) => {
        for_all_types!(cast_kernel!($dn, $d,));
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

// ---- reductions: one warp per (output, chunk of its lane), then one warp per output ----

use crate::device::{global_index, lane_id, shfl_xor_f64, shfl_xor_u64};
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
            #[export_name = concat!("reduce_partial_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                outer: Geometry,
                xo: Operand,
                inner: Geometry,
                io: Operand,
                x: *const $t,
                chunks: u32,
                chunk_len: u32,
                op: u32,
                partial: *mut RState,
            ) {
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

macro_rules! reduce_finish {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("reduce_finish_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                outputs: u32,
                chunks: u32,
                op: u32,
                float: u32,
                correction: u32,
                partial: *const RState,
                y: *mut $t,
            ) {
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

// ---- softmax and layer norm: one warp per row ----------------------------------------------

macro_rules! row_kernels {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("softmax_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                rows: Geometry,
                ro: Operand,
                x: *const $t,
                len: u32,
                step: u32,
                log: u32,
                y: *mut $t,
            ) {
                let r = global_index() / 32;
                if r >= rows.n {
                    return;
                }
                let base = rows.offset(&ro, r) as usize;
                let at = |j: u32| (*x.add(base + (j * step) as usize)).to_f64();
                let mut m = f64::NEG_INFINITY;
                let mut nan = false;
                let mut j = lane_id();
                while j < len {
                    let v = at(j);
                    nan |= v != v;
                    m = if v > m { v } else { m };
                    j += 32;
                }
                let mut k = 16;
                while k > 0 {
                    let o = shfl_xor_f64(m, k);
                    m = if o > m { o } else { m };
                    nan |= crate::device::shfl_xor(nan as u32, k) != 0;
                    k >>= 1;
                }
                if nan {
                    m = f64::NAN;
                }
                let mut sum = 0.0f64;
                j = lane_id();
                while j < len {
                    sum += row_exp::<$t>(at(j) - m);
                    j += 32;
                }
                k = 16;
                while k > 0 {
                    sum += shfl_xor_f64(sum, k);
                    k >>= 1;
                }
                let ls = libm::log(sum);
                j = lane_id();
                let out = y.add(r as usize * len as usize);
                while j < len {
                    let v = at(j) - m;
                    *out.add(j as usize) = <$t>::from_f64(if log != 0 {
                        v - ls
                    } else {
                        row_exp::<$t>(v) / sum
                    });
                    j += 32;
                }
            }
        };
        const _: () = {
            #[export_name = concat!("layer_norm_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                rows: u32,
                norm: u32,
                x: *const $t,
                w: *const $t,
                b: *const $t,
                flags: u32,
                eps: f64,
                y: *mut $t,
            ) {
                let r = global_index() / 32;
                if r >= rows {
                    return;
                }
                let row = x.add(r as usize * norm as usize);
                let out = y.add(r as usize * norm as usize);
                let mut sum = 0.0f64;
                let mut j = lane_id();
                while j < norm {
                    sum += (*row.add(j as usize)).to_f64();
                    j += 32;
                }
                let mut k = 16;
                while k > 0 {
                    sum += shfl_xor_f64(sum, k);
                    k >>= 1;
                }
                let mean = sum / norm as f64;
                let mut sq = 0.0f64;
                j = lane_id();
                while j < norm {
                    let d = (*row.add(j as usize)).to_f64() - mean;
                    sq += d * d;
                    j += 32;
                }
                k = 16;
                while k > 0 {
                    sq += shfl_xor_f64(sq, k);
                    k >>= 1;
                }
                let inv = 1.0 / math::sqrt_f64(sq / norm as f64 + eps);
                j = lane_id();
                while j < norm {
                    let mut v = ((*row.add(j as usize)).to_f64() - mean) * inv;
                    if flags & 1 != 0 {
                        v *= (*w.add(j as usize)).to_f64();
                    }
                    if flags & 2 != 0 {
                        v += (*b.add(j as usize)).to_f64();
                    }
                    *out.add(j as usize) = <$t>::from_f64(v);
                    j += 32;
                }
            }
        };
    };
}
/// `e^x` at the precision the row's dtype needs: double for f64, the fast
/// single-precision exp otherwise.
#[inline(always)]
fn row_exp<T>(x: f64) -> f64 {
    if core::mem::size_of::<T>() == 8 {
        libm::exp(x)
    } else {
        math::exp_f32(x as f32) as f64
    }
}

for_float_types!(row_kernels!());

// ---- integer matmul (cuBLAS has none): one thread per output element ----------------------

macro_rules! matmul_int {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = concat!("matmul_int_", stringify!($tn))]
            unsafe extern "ptx-kernel" fn kernel(
                g: Geometry,
                ao: Operand,
                bo: Operand,
                dims: crate::params::MatmulShape,
                a: *const $t,
                b: *const $t,
                y: *mut $t,
            ) {
                let crate::params::MatmulShape {
                    m,
                    n,
                    k,
                    ars,
                    acs,
                    brs,
                    bcs,
                } = dims;
                let mn = m * n;
                for_each_index(g.n * mn, |idx| {
                    let (bi, r) = (idx / mn, idx % mn);
                    let (i, j) = (r / n, r % n);
                    let (pa, pb) = (g.offset(&ao, bi), g.offset(&bo, bi));
                    let mut acc = 0i64;
                    let mut p = 0;
                    while p < k {
                        let x = (*a.add((pa + i * ars + p * acs) as usize)).to_i64();
                        let w = (*b.add((pb + p * brs + j * bcs) as usize)).to_i64();
                        acc = acc.wrapping_add(x.wrapping_mul(w));
                        p += 1;
                    }
                    *y.add(idx as usize) = <$t>::from_i64(acc);
                });
            }
        };
    };
}
for_int_types!(matmul_int!());

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
