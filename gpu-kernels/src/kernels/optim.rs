//! Fused optimizer steps: one launch updates a whole dense parameter and its
//! state in place (SGD with momentum, Adam, AdamW), with the per-element
//! formulas of [`crate::optim`]. State buffers are in the accumulator type
//! (f32 for f32, f16 and bf16 parameters; f64 for f64). A grid-stride loop
//! over packs (16-byte accesses on the widest of the arrays) when every array
//! is 16-byte aligned, else over single elements. `adam_multi_*` updates a
//! whole list of parameters in one launch (PyTorch's `fused=True`): a block
//! per chunk of [`TensorList::CHUNK`] elements; `norm_multi_*` and
//! `scale_multi_*` are `clip_grad_norm_`'s two passes over every gradient.
//!
//! [`TensorList::CHUNK`]: crate::params::TensorList::CHUNK

use super::accum::{max_nan, Acc, FloatElem};
use crate::device::{block_all_reduce, block_xyz, dims, for_each_index, global_index, shared, thread_xy};
use crate::device::{AlignTo, Aligned, Bytes};
use crate::elem::{BF16, F16};
use crate::optim::{Adam, Sgd};
use crate::params::TensorList;

/// Calls `f(0)`, ..., `f(V - 1)` for `V` of 2 or 4, written out so that the
/// packs indexed by `e` stay in registers.
#[inline(always)]
fn each<const V: usize>(mut f: impl FnMut(usize)) {
    f(0);
    f(1);
    if V > 2 {
        f(2);
        f(3);
    }
}

macro_rules! optim_steps {
    ($tn:ident, $t:ty) => {
        const _: () = {
            type S = <$t as FloatElem>::Acc;
            const TS: usize = core::mem::size_of::<$t>();
            const SS: usize = core::mem::size_of::<S>();
            const V: usize = 16 / if TS > SS { TS } else { SS };
            type PT = Aligned<<Bytes<{ V * TS }> as AlignTo>::A, [$t; V]>;
            type PS = Aligned<<Bytes<{ V * SS }> as AlignTo>::A, [S; V]>;

            #[export_name = crate::kernel_name!(sgd_step, $tn)]
            unsafe extern "ptx-kernel" fn sgd(
                p: *mut $t,
                g: *const $t,
                buf: *mut S,
                args: crate::args::SgdArgs,
            ) {
                let crate::args::SgdArgs { n, packed, h } = args;
                let o = Sgd::<S>::new(&h.resolve());
                let with_buf = o.uses_buffer();
                let one = |i: usize| {
                    let b = if with_buf { *buf.add(i) } else { 0.0 };
                    let (np, nb) = o.step((*p.add(i)).acc(), (*g.add(i)).acc(), b);
                    *p.add(i) = <$t>::from_acc(np);
                    if with_buf {
                        *buf.add(i) = nb;
                    }
                };
                if packed == 0 {
                    for_each_index(n, |i| one(i as usize));
                    return;
                }
                let packs = n / V as u32;
                let (pv, gv, bv) = (p as *mut PT, g as *const PT, buf as *mut PS);
                for_each_index(packs, |k| {
                    let k = k as usize;
                    let (mut x, d) = (*pv.add(k), *gv.add(k));
                    let mut b = if with_buf {
                        *bv.add(k)
                    } else {
                        PS::new([0.0; V])
                    };
                    each::<V>(|e| {
                        let (np, nb) = o.step(x.value[e].acc(), d.value[e].acc(), b.value[e]);
                        x.value[e] = <$t>::from_acc(np);
                        b.value[e] = nb;
                    });
                    *pv.add(k) = x;
                    if with_buf {
                        *bv.add(k) = b;
                    }
                });
                let tail = packs * V as u32;
                let t = global_index();
                if t < n - tail {
                    one((tail + t) as usize);
                }
            }

            #[export_name = crate::kernel_name!(adam_multi, $tn)]
            unsafe extern "ptx-kernel" fn adam_multi(args: crate::args::AdamMultiArgs) {
                let o = Adam::<S>::new(&args.h.resolve());
                let list = &args.list;
                let (t, start, end) = list.locate(block_xyz().0);
                let p = TensorList::pick(&list.p, t) as *mut $t;
                let g = TensorList::pick(&list.g, t) as *const $t;
                let m = TensorList::pick(&list.m, t) as *mut S;
                let v = TensorList::pick(&list.v, t) as *mut S;
                let step = dims().0;
                let mut i = start + thread_xy().0;
                while i < end {
                    let k = i as usize;
                    let (np, nm, nv) = o.step((*p.add(k)).acc(), (*g.add(k)).acc(), *m.add(k), *v.add(k));
                    *p.add(k) = <$t>::from_acc(np);
                    *m.add(k) = nm;
                    *v.add(k) = nv;
                    i += step;
                }
            }

            #[export_name = crate::kernel_name!(sgd_multi, $tn)]
            unsafe extern "ptx-kernel" fn sgd_multi(args: crate::args::SgdMultiArgs) {
                let o = Sgd::<S>::new(&args.h.resolve());
                let with_buf = o.uses_buffer();
                let list = &args.list;
                let (t, start, end) = list.locate(block_xyz().0);
                let p = TensorList::pick(&list.p, t) as *mut $t;
                let g = TensorList::pick(&list.g, t) as *const $t;
                let buf = TensorList::pick(&list.m, t) as *mut S;
                let step = dims().0;
                let mut i = start + thread_xy().0;
                while i < end {
                    let k = i as usize;
                    let b = if with_buf { *buf.add(k) } else { S::ZERO };
                    let (np, nb) = o.step((*p.add(k)).acc(), (*g.add(k)).acc(), b);
                    *p.add(k) = <$t>::from_acc(np);
                    if with_buf {
                        *buf.add(k) = nb;
                    }
                    i += step;
                }
            }

            #[export_name = crate::kernel_name!(norm_multi, $tn)]
            unsafe extern "ptx-kernel" fn norm_multi(partial: *mut S, args: crate::args::NormMultiArgs) {
                let list = &args.list;
                let block = block_xyz().0;
                let (t, start, end) = list.locate(block);
                let x = TensorList::pick(&list.p, t) as *const $t;
                let inf = args.inf != 0;
                let combine = move |a: S, b: S| if inf { max_nan(a, b) } else { a + b };
                let (tid, step) = (thread_xy().0, dims().0);
                let mut acc = S::ZERO;
                let mut i = start + tid;
                while i < end {
                    let v = (*x.add(i as usize)).acc();
                    acc = if inf {
                        max_nan(acc, if v < S::ZERO { S::ZERO - v } else { v })
                    } else {
                        acc + v * v
                    };
                    i += step;
                }
                let total = block_all_reduce(acc, shared::<S>(), combine);
                if tid == 0 {
                    *partial.add(block as usize) = total;
                }
            }

            #[export_name = crate::kernel_name!(scale_multi, $tn)]
            unsafe extern "ptx-kernel" fn scale_multi(coef: *const f32, args: crate::args::ScaleMultiArgs) {
                let list = &args.list;
                let (t, start, end) = list.locate(block_xyz().0);
                let x = TensorList::pick(&list.p, t) as *mut $t;
                let c = <$t>::from_acc(S::of_f64(*coef as f64)).acc();
                let step = dims().0;
                let mut i = start + thread_xy().0;
                while i < end {
                    let k = i as usize;
                    *x.add(k) = <$t>::from_acc((*x.add(k)).acc() * c);
                    i += step;
                }
            }

            #[export_name = crate::kernel_name!(adam_step, $tn)]
            unsafe extern "ptx-kernel" fn adam(
                p: *mut $t,
                g: *const $t,
                m: *mut S,
                v: *mut S,
                args: crate::args::AdamArgs,
            ) {
                let crate::args::AdamArgs { n, packed, h } = args;
                let o = Adam::<S>::new(&h.resolve());
                let one = |i: usize| {
                    let (np, nm, nv) = o.step((*p.add(i)).acc(), (*g.add(i)).acc(), *m.add(i), *v.add(i));
                    *p.add(i) = <$t>::from_acc(np);
                    *m.add(i) = nm;
                    *v.add(i) = nv;
                };
                if packed == 0 {
                    for_each_index(n, |i| one(i as usize));
                    return;
                }
                let packs = n / V as u32;
                let (pv, gv) = (p as *mut PT, g as *const PT);
                let (mv, vv) = (m as *mut PS, v as *mut PS);
                for_each_index(packs, |k| {
                    let k = k as usize;
                    let (mut x, d) = (*pv.add(k), *gv.add(k));
                    let (mut a, mut b) = (*mv.add(k), *vv.add(k));
                    each::<V>(|e| {
                        let (np, nm, nv) = o.step(x.value[e].acc(), d.value[e].acc(), a.value[e], b.value[e]);
                        x.value[e] = <$t>::from_acc(np);
                        a.value[e] = nm;
                        b.value[e] = nv;
                    });
                    *pv.add(k) = x;
                    *mv.add(k) = a;
                    *vv.add(k) = b;
                });
                let tail = packs * V as u32;
                let t = global_index();
                if t < n - tail {
                    one((tail + t) as usize);
                }
            }
        };
    };
}
for_float_types!(optim_steps!());
