//! Indexing along one dim through an i64 index tensor.
//!
//! - `gather_*` (every dtype): `y[i] = x[xo(i) + idx[io(i)] * stride]` over a
//!   strided geometry, `y` dense. With the index operand broadcast over the
//!   other dims (stride 0) this is `index_select`; with the index tensor's own
//!   strides it is PyTorch's `gather`.
//! - `scatter_add_*` (f32, f64, f16, bf16, i64, i32, u8 sources): the adjoint,
//!   `dst[dso(i) + idx[io(i)] * stride] += src[so(i)]`, with atomic adds into a
//!   dense accumulator of the source's accumulator type: f32 for f32, f16 and
//!   bf16 (the host rounds the sum once afterwards, so no half-precision
//!   partial sums), f64 for f64, i64 for i64, i32 for i32 and u8 (wrapping,
//!   exact in any order).
//!
//! An index outside `[0, size)` never addresses memory: the host cannot check
//! the indices without waiting for the GPU, so `gather` writes NaN (floats)
//! or 0 (integers, bool) for it and `scatter_add` skips it.

use crate::device::for_each_index;
use crate::elem::{Elem, BF16, F16};
use crate::params::IndexDim;

/// Whether `k` is a valid index for `h`.
#[inline(always)]
fn in_range(k: i64, h: &IndexDim) -> bool {
    k >= 0 && k < h.size as i64
}

/// What `gather` writes for an out-of-range index: NaN, or 0 for integers and bool.
#[inline(always)]
fn missing<T: Elem>() -> T {
    if T::FLOAT {
        T::from_f64(f64::NAN)
    } else {
        T::from_i64(0)
    }
}

macro_rules! gather {
    ($tn:ident, $t:ty) => {
        const _: () = {
            #[export_name = crate::kernel_name!(gather, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                x: *const $t,
                idx: *const i64,
                y: *mut $t,
                args: crate::args::GatherArgs,
            ) {
                let crate::args::GatherArgs { g, xo, io, h } = args;
                for_each_index(g.n, |i| {
                    let k = *idx.add(g.offset(&io, i) as usize);
                    *y.add(i as usize) = if in_range(k, &h) {
                        *x.add(g.offset(&xo, i) as usize + k as usize * h.stride as usize)
                    } else {
                        missing::<$t>()
                    };
                });
            }
        };
    };
}
for_all_types!(gather!());

/// A relaxed, device-scope atomic `*p += v` on global memory.
trait AtomicAdd: Copy {
    /// # Safety
    /// `p` points into a live global allocation of `Self`s.
    unsafe fn atomic_add(p: *mut Self, v: Self);
}

macro_rules! atomic_add {
    ($t:ty, $ptx:literal, $reg:ident) => {
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) {
                core::arch::asm!(
                    concat!(
                        "{{ .reg .u64 ga; cvta.to.global.u64 ga, {p}; red.global.add.",
                        $ptx,
                        " [ga], {v}; }}"
                    ),
                    p = in(reg64) p as u64,
                    v = in($reg) v,
                );
            }
        }
    };
}
atomic_add!(f32, "f32", reg32);
atomic_add!(f64, "f64", reg64);
atomic_add!(i32, "u32", reg32);
atomic_add!(i64, "u64", reg64);

/// A scatter-add source element and the accumulator it is added into.
trait ScatterSrc: Elem {
    /// The accumulator type.
    type A: AtomicAdd;
    /// The element in the accumulator type (exact).
    fn to_acc(self) -> Self::A;
}

macro_rules! scatter_src {
    ($t:ty, $a:ty, $conv:expr) => {
        impl ScatterSrc for $t {
            type A = $a;
            #[inline(always)]
            fn to_acc(self) -> $a {
                ($conv)(self)
            }
        }
    };
}
scatter_src!(f32, f32, |v: f32| v);
scatter_src!(f64, f64, |v: f64| v);
scatter_src!(F16, f32, |v: F16| v.to_f32());
scatter_src!(BF16, f32, |v: BF16| v.to_f32());
scatter_src!(i64, i64, |v: i64| v);
scatter_src!(i32, i32, |v: i32| v);
scatter_src!(u8, i32, |v: u8| v as i32);

macro_rules! scatter_add {
    ($tn:ident, $t:ty) => {
        const _: () = {
            type A = <$t as ScatterSrc>::A;

            #[export_name = crate::kernel_name!(scatter_add, $tn)]
            unsafe extern "ptx-kernel" fn kernel(
                dst: *mut A,
                idx: *const i64,
                src: *const $t,
                args: crate::args::ScatterAddArgs,
            ) {
                let crate::args::ScatterAddArgs { g, dso, io, so, h } = args;
                for_each_index(g.n, |i| {
                    let k = *idx.add(g.offset(&io, i) as usize);
                    if in_range(k, &h) {
                        let at = g.offset(&dso, i) as usize + k as usize * h.stride as usize;
                        let v = (*src.add(g.offset(&so, i) as usize)).to_acc();
                        A::atomic_add(dst.add(at), v);
                    }
                });
            }
        };
    };
}
for_float_types!(scatter_add!());
for_int_types!(scatter_add!());
