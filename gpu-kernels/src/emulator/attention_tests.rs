//! The fused attention kernels (`kernels/attention.rs`) run through the
//! emulator against attention computed in f64: forward outputs and
//! log-sum-exps, and the three gradients, for both half types and f32 (as
//! tf32 pairs) and every head dim, causal or not, grouped-query heads, strided queries and lengths
//! that are not multiples of the tiles.

use super::{launch, Shared};
use crate::attention::{backward_kv, backward_q, forward, FlashElem};
use crate::elem::{BF16, F16};
use crate::fragments::MmaHalf;
use crate::half::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::params::{FlashParams, HeadStrides};
use std::vec::Vec;

/// One attention problem: sizes, options and the half type's rounding.
#[derive(Clone, Copy)]
struct Case {
    batch: usize,
    heads: usize,
    kv_heads: usize,
    l: usize,
    s: usize,
    d: usize,
    causal: bool,
    bf16: bool,
    /// The worst error allowed, relative to the largest value.
    tol: f64,
    dropout: f32,
    /// Key row `j` is scaled by `1 + ramp · j / S`, so that the scores of
    /// later key tiles outgrow the earlier ones (the running maxima move
    /// mid-row).
    ramp: f64,
}

impl Case {
    fn widen(&self, b: u16) -> f64 {
        (if self.bf16 { bf16_to_f32(b) } else { f16_to_f32(b) }) as f64
    }

    /// Worst `|x - y|` over the largest `|y|` (1 when tiny), for the half type.
    fn close(&self, what: &str, got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        let top = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let worst = got
            .iter()
            .zip(want)
            .map(|(a, b)| if a.is_nan() { f64::INFINITY } else { (a - b).abs() })
            .fold(0.0, f64::max);
        let tol = self.tol;
        assert!(
            worst <= tol * top,
            "{what}: worst error {worst} against a largest value {top} (tolerance {tol})"
        );
    }
}

/// Pseudo-random values in [-2, 2) (a fixed xorshift sequence).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0
        })
        .collect()
}

/// Attention in f64 over dense `[b, h, rows, d]` arrays (`q` given by a
/// reader so its layout can differ): the output, the log-sum-exps and, for
/// the output gradient `dout`, the gradients of q, k and v.
struct Reference {
    o: Vec<f64>,
    lse: Vec<f64>,
    dq: Vec<f64>,
    dk: Vec<f64>,
    dv: Vec<f64>,
}

fn reference(
    c: &Case,
    fp: &FlashParams,
    q: &dyn Fn(usize, usize, usize, usize) -> f64,
    k: &[f64],
    v: &[f64],
    dout: &[f64],
) -> Reference {
    let Case {
        batch,
        heads,
        kv_heads,
        l,
        s,
        d,
        causal,
        ..
    } = *c;
    let scale = 1.0 / (d as f64).sqrt();
    let group = heads / kv_heads;
    // the dropout factor of key j for query i of matrix bh
    let z = |bh: usize, i: usize, j: usize| {
        if c.dropout == 0.0 {
            1.0
        } else if fp.keeps(bh as u32, i as u32, j as u32) {
            fp.dropout_scale as f64
        } else {
            0.0
        }
    };
    let mut r = Reference {
        o: std::vec![0.0; batch * heads * l * d],
        lse: std::vec![0.0; batch * heads * l],
        dq: std::vec![0.0; batch * heads * l * d],
        dk: std::vec![0.0; batch * kv_heads * s * d],
        dv: std::vec![0.0; batch * kv_heads * s * d],
    };
    for b in 0..batch {
        for h in 0..heads {
            let kv = (b * kv_heads + h / group) * s * d;
            let bh = b * heads + h;
            for i in 0..l {
                let keys = if causal { (i + 1).min(s) } else { s };
                let scores: Vec<f64> = (0..keys)
                    .map(|j| (0..d).map(|e| q(b, h, i, e) * k[kv + j * d + e]).sum::<f64>() * scale)
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = scores.iter().map(|x| (x - m).exp()).sum();
                let p: Vec<f64> = scores.iter().map(|x| (x - m).exp() / sum).collect();
                r.lse[bh * l + i] = m + sum.ln();
                let row = (bh * l + i) * d;
                for (j, pj) in p.iter().enumerate() {
                    for e in 0..d {
                        r.o[row + e] += pj * z(bh, i, j) * v[kv + j * d + e];
                    }
                }
                let delta: f64 = (0..d).map(|e| dout[row + e] * r.o[row + e]).sum();
                for (j, pj) in p.iter().enumerate() {
                    let dp = (0..d).map(|e| dout[row + e] * v[kv + j * d + e]).sum::<f64>() * z(bh, i, j);
                    let ds = pj * (dp - delta);
                    for e in 0..d {
                        r.dv[kv + j * d + e] += pj * z(bh, i, j) * dout[row + e];
                        r.dq[row + e] += scale * ds * k[kv + j * d + e];
                        r.dk[kv + j * d + e] += scale * ds * q(b, h, i, e);
                    }
                }
            }
        }
    }
    r
}

/// A reordering of an array of elements.
type Permute<'a, B> = dyn Fn(&[B]) -> Vec<B> + 'a;

/// The element types the tests run: rounding from f64, and the Hopper
/// kernels' checks where the type has them.
trait TestElem: FlashElem {
    /// `x` rounded to the type.
    fn round(x: f64) -> Self::Bits;

    /// The Hopper forward and backward on the same problem (halves only).
    #[allow(clippy::too_many_arguments)]
    fn hopper<const D: usize>(
        _c: &Case,
        _h: FlashParams,
        _inputs: [&[Self::Bits]; 4],
        _stats: [&[f32]; 2],
        _want: &Reference,
        _from_rows_outer: &Permute<'_, Self::Bits>,
    ) {
    }
}

macro_rules! half_test_elem {
    ($t:ty) => {
        impl TestElem for $t {
            fn round(x: f64) -> u16 {
                if <$t as MmaHalf>::BF16 {
                    f32_to_bf16(x as f32)
                } else {
                    f32_to_f16(x as f32)
                }
            }

            fn hopper<const D: usize>(
                c: &Case,
                h: FlashParams,
                [qb, kb, vb, dob]: [&[u16]; 4],
                [lse, delta]: [&[f32]; 2],
                want: &Reference,
                from_rows_outer: &Permute<'_, u16>,
            ) {
                if c.dropout > 0.0 || !FlashParams::HOPPER_HEAD_DIMS.contains(&D) {
                    return;
                }
                hopper_forward::<$t, D>(c, h, [qb, kb, vb], want, from_rows_outer);
                let [dq, dk, dv] = hopper_backward::<$t, D>(c, h, [qb, kb, vb, dob], [lse, delta]);
                let wide = |x: &[u16]| -> Vec<f64> { x.iter().map(|&b| c.widen(b)).collect() };
                c.close(
                    "Hopper query gradient",
                    &wide(&from_rows_outer(&dq)),
                    &want.dq,
                );
                c.close("Hopper key gradient", &wide(&dk), &want.dk);
                c.close("Hopper value gradient", &wide(&dv), &want.dv);
                let (dq, dk, dv) = hopper_backward_fused::<$t, D>(c, h, [qb, kb, vb, dob], [lse, delta]);
                let dq: Vec<f64> = from_rows_outer_f32(c, &dq)
                    .iter()
                    .map(|&x| x as f64)
                    .collect();
                c.close("Hopper fused query gradient", &dq, &want.dq);
                c.close("Hopper fused key gradient", &wide(&dk), &want.dk);
                c.close("Hopper fused value gradient", &wide(&dv), &want.dv);
            }
        }
    };
}

half_test_elem!(F16);
half_test_elem!(BF16);

impl TestElem for f32 {
    fn round(x: f64) -> f32 {
        x as f32
    }
}

/// Runs the three kernels on `c` (queries stored as `[B, L, H, D]`, the
/// layout of a projection split into heads) and checks them.
fn check<T: TestElem, const D: usize, const DROP: bool>(c: Case) {
    assert_eq!(DROP, c.dropout > 0.0);
    assert_eq!(c.d, D);
    let Case {
        batch,
        heads,
        kv_heads,
        l,
        s,
        d,
        ..
    } = c;
    let half = |v: Vec<f64>| -> (Vec<T::Bits>, Vec<f64>) {
        let bits: Vec<T::Bits> = v.iter().map(|&x| T::round(x)).collect();
        let wide = bits.iter().map(|&b| T::widen(b) as f64).collect();
        (bits, wide)
    };
    let zero = T::round(0.0);
    let (qb, qw) = half(values(batch * l * heads * d, 1));
    let keys = values(batch * kv_heads * s * d, 2).into_iter().enumerate();
    let ramped = keys.map(|(i, x)| x * (1.0 + c.ramp * ((i / d) % s) as f64 / s as f64));
    let (kb, kw) = half(ramped.collect());
    let (vb, vw) = half(values(batch * kv_heads * s * d, 3));
    let (dob, dow) = half(values(batch * heads * l * d, 4));
    let q_at = |b: usize, h: usize, i: usize, e: usize| qw[((b * l + i) * heads + h) * d + e];

    let rows_outer = HeadStrides {
        batch: (l * heads * d) as u32,
        head: d as u32,
        row: (heads * d) as u32,
    };
    // element (b, h, i, e) of a dense [B, H, L, D] array in [B, L, H, D]
    let ro = |x: usize| {
        let (e, r) = (x % d, x / d);
        let (i, bh) = (r % l, r / l);
        let (hh, b) = (bh % heads, bh / heads);
        ((b * l + i) * heads + hh) * d + e
    };
    let to_rows_outer = |x: &[T::Bits]| -> Vec<T::Bits> {
        let mut y = std::vec![zero; x.len()];
        for (at, &v) in x.iter().enumerate() {
            y[ro(at)] = v;
        }
        y
    };
    let from_rows_outer = |x: &[T::Bits]| -> Vec<T::Bits> { (0..x.len()).map(|at| x[ro(at)]).collect() };
    let h = FlashParams {
        l: l as u32,
        s: s as u32,
        heads: heads as u32,
        group: (heads / kv_heads) as u32,
        causal: c.causal as u32,
        scale: 1.0 / (d as f32).sqrt(),
        q: HeadStrides {
            batch: (l * heads * d) as u32,
            head: d as u32,
            row: (heads * d) as u32,
        },
        k: HeadStrides {
            batch: (kv_heads * s * d) as u32,
            head: (s * d) as u32,
            row: d as u32,
        },
        v: HeadStrides {
            batch: (kv_heads * s * d) as u32,
            head: (s * d) as u32,
            row: d as u32,
        },
        // the output, its gradient and the query gradient as the queries
        // ([B, L, H, D]); the key and value gradients dense
        o: rows_outer,
        dq: rows_outer,
        dk: HeadStrides {
            batch: (kv_heads * s * d) as u32,
            head: (s * d) as u32,
            row: d as u32,
        },
        dv: HeadStrides {
            batch: (kv_heads * s * d) as u32,
            head: (s * d) as u32,
            row: d as u32,
        },
        dropout: c.dropout,
        dropout_scale: (1.0 / (1.0 - c.dropout as f64)) as f32,
        seed: 1234,
        stream: 5,
        draw_at: 0,
    };
    let want = reference(&c, &h, &q_at, &kw, &vw, &dow);
    let mut o = std::vec![zero; batch * heads * l * d];
    let mut lse = std::vec![0f32; batch * heads * l];
    let tiles = |n: usize| n.div_ceil(FlashParams::BLOCK_ROWS as usize) as u32;
    {
        let p = Shared((
            qb.as_ptr(),
            kb.as_ptr(),
            vb.as_ptr(),
            o.as_mut_ptr(),
            lse.as_mut_ptr(),
        ));
        launch(
            (tiles(l), heads as u32, batch as u32),
            FlashParams::THREADS,
            FlashParams::forward_shared_bytes(D, size_of::<T::Bits>()) as usize,
            || {
                let (q, k, v, o, lse) = p.get();
                // SAFETY: the buffers hold the shapes `h` describes.
                unsafe { forward::<T, D, DROP>(q, k, v, o, lse, h) }
            },
        );
    }
    let wide = |x: &[T::Bits]| -> Vec<f64> { x.iter().map(|&b| T::widen(b) as f64).collect() };
    let o_wide = wide(&from_rows_outer(&o));
    c.close("output", &o_wide, &want.o);
    let lse_wide: Vec<f64> = lse.iter().map(|&x| x as f64).collect();
    c.close("log-sum-exp", &lse_wide, &want.lse);

    // delta from the kernel's own output, as the host computes it
    let delta: Vec<f32> = (0..batch * heads * l)
        .map(|r| (0..d).map(|e| dow[r * d + e] * o_wide[r * d + e]).sum::<f64>() as f32)
        .collect();
    let mut dq = std::vec![zero; batch * heads * l * d];
    let mut dk = std::vec![zero; batch * kv_heads * s * d];
    let mut dv = std::vec![zero; batch * kv_heads * s * d];
    let dob = to_rows_outer(&dob);
    {
        let p = Shared((
            qb.as_ptr(),
            kb.as_ptr(),
            vb.as_ptr(),
            dob.as_ptr(),
            lse.as_ptr(),
            delta.as_ptr(),
        ));
        let grads = Shared((dk.as_mut_ptr(), dv.as_mut_ptr()));
        launch(
            (tiles(s), kv_heads as u32, batch as u32),
            FlashParams::THREADS,
            FlashParams::backward_kv_shared_bytes(D, size_of::<T::Bits>()) as usize,
            || {
                let (q, k, v, dout, lse, delta) = p.get();
                let (dk, dv) = grads.get();
                // SAFETY: as above.
                unsafe { backward_kv::<T, D, DROP>(q, k, v, dout, lse, delta, dk, dv, h) }
            },
        );
        let dq_at = Shared(dq.as_mut_ptr());
        launch(
            (tiles(l), heads as u32, batch as u32),
            FlashParams::THREADS,
            FlashParams::backward_q_shared_bytes(D, size_of::<T::Bits>()) as usize,
            || {
                let (q, k, v, dout, lse, delta) = p.get();
                // SAFETY: as above.
                unsafe { backward_q::<T, D, DROP>(q, k, v, dout, lse, delta, dq_at.get(), h) }
            },
        );
    }
    c.close("query gradient", &wide(&from_rows_outer(&dq)), &want.dq);
    c.close("key gradient", &wide(&dk), &want.dk);
    c.close("value gradient", &wide(&dv), &want.dv);
    T::hopper::<D>(
        &c,
        h,
        [&qb, &kb, &vb, &dob],
        [&lse, &delta],
        &want,
        &from_rows_outer,
    );
}

/// The Hopper backward (`attention_hopper_backward.rs`) on the same
/// problem: the query, key and value gradients.
fn hopper_backward<T: MmaHalf, const D: usize>(
    c: &Case,
    h: FlashParams,
    [qb, kb, vb, dob]: [&[u16]; 4],
    [lse, delta]: [&[f32]; 2],
) -> [Vec<u16>; 3] {
    let mut dq = std::vec![0u16; c.batch * c.heads * c.l * D];
    let mut dk = std::vec![0u16; c.batch * c.kv_heads * c.s * D];
    let mut dv = std::vec![0u16; c.batch * c.kv_heads * c.s * D];
    let p = Shared((
        qb.as_ptr(),
        kb.as_ptr(),
        vb.as_ptr(),
        dob.as_ptr(),
        lse.as_ptr(),
        delta.as_ptr(),
    ));
    let grads = Shared((dk.as_mut_ptr(), dv.as_mut_ptr()));
    launch(
        (
            c.s.div_ceil(FlashParams::HOPPER_KV_KEYS as usize) as u32,
            c.kv_heads as u32,
            c.batch as u32,
        ),
        FlashParams::HOPPER_KV_THREADS,
        FlashParams::hopper_backward_kv_shared_bytes(D, false) as usize,
        || {
            let (q, k, v, dout, lse, delta) = p.get();
            let (dk, dv) = grads.get();
            // SAFETY: the buffers hold the shapes `h` describes.
            unsafe {
                let none = std::ptr::null_mut();
                crate::attention_hopper_backward::backward_kv::<T, D, false>(
                    q, k, v, dout, lse, delta, dk, dv, none, h,
                )
            }
        },
    );
    let dq_at = Shared(dq.as_mut_ptr());
    launch(
        (
            c.l.div_ceil(FlashParams::HOPPER_BLOCK_ROWS as usize) as u32,
            c.heads as u32,
            c.batch as u32,
        ),
        FlashParams::HOPPER_THREADS,
        FlashParams::hopper_backward_q_shared_bytes(D) as usize,
        || {
            let (q, k, v, dout, lse, delta) = p.get();
            // SAFETY: as above.
            unsafe {
                crate::attention_hopper_backward::backward_q::<T, D>(
                    q,
                    k,
                    v,
                    dout,
                    lse,
                    delta,
                    dq_at.get(),
                    h,
                )
            }
        },
    );
    [dq, dk, dv]
}

/// `x` in the queries' `[B, L, H, D]` layout, read back as dense
/// `[B, H, L, D]` (f32s: the fused backward's query gradient sums).
fn from_rows_outer_f32(c: &Case, x: &[f32]) -> Vec<f32> {
    let (d, l, heads) = (c.d, c.l, c.heads);
    (0..x.len())
        .map(|at| {
            let (e, r) = (at % d, at / d);
            let (i, bh) = (r % l, r / l);
            let (hh, b) = (bh % heads, bh / heads);
            x[((b * l + i) * heads + hh) * d + e]
        })
        .collect()
}

/// The fused Hopper backward (`flash90_backward_kvq`) on the same problem:
/// the query gradient as the f32 sums it adds up, the key and value
/// gradients.
fn hopper_backward_fused<T: MmaHalf, const D: usize>(
    c: &Case,
    h: FlashParams,
    [qb, kb, vb, dob]: [&[u16]; 4],
    [lse, delta]: [&[f32]; 2],
) -> (Vec<f32>, Vec<u16>, Vec<u16>) {
    let mut dq = std::vec![0f32; c.batch * c.heads * c.l * D];
    let mut dk = std::vec![0u16; c.batch * c.kv_heads * c.s * D];
    let mut dv = std::vec![0u16; c.batch * c.kv_heads * c.s * D];
    let p = Shared((
        qb.as_ptr(),
        kb.as_ptr(),
        vb.as_ptr(),
        dob.as_ptr(),
        lse.as_ptr(),
        delta.as_ptr(),
    ));
    let grads = Shared((dk.as_mut_ptr(), dv.as_mut_ptr(), dq.as_mut_ptr()));
    launch(
        (
            c.s.div_ceil(FlashParams::HOPPER_KV_KEYS as usize) as u32,
            c.kv_heads as u32,
            c.batch as u32,
        ),
        FlashParams::HOPPER_KV_THREADS,
        FlashParams::hopper_backward_kv_shared_bytes(D, true) as usize,
        || {
            let (q, k, v, dout, lse, delta) = p.get();
            let (dk, dv, dq) = grads.get();
            // SAFETY: the buffers hold the shapes `h` describes; `dq` is zeroed.
            unsafe {
                crate::attention_hopper_backward::backward_kv::<T, D, true>(
                    q, k, v, dout, lse, delta, dk, dv, dq, h,
                )
            }
        },
    );
    (dq, dk, dv)
}

/// The Hopper forward (`attention_hopper.rs`) on the same problem, checked
/// against the same reference.
fn hopper_forward<T: MmaHalf, const D: usize>(
    c: &Case,
    h: FlashParams,
    [qb, kb, vb]: [&[u16]; 3],
    want: &Reference,
    from_rows_outer: &dyn Fn(&[u16]) -> Vec<u16>,
) {
    let mut o = std::vec![0u16; c.batch * c.heads * c.l * D];
    let mut lse = std::vec![0f32; c.batch * c.heads * c.l];
    let p = Shared((
        qb.as_ptr(),
        kb.as_ptr(),
        vb.as_ptr(),
        o.as_mut_ptr(),
        lse.as_mut_ptr(),
    ));
    launch(
        (
            c.l.div_ceil(FlashParams::hopper_forward_rows(D) as usize) as u32,
            c.heads as u32,
            c.batch as u32,
        ),
        FlashParams::hopper_forward_threads(D),
        FlashParams::hopper_forward_shared_bytes(D) as usize,
        || {
            let (q, k, v, o, lse) = p.get();
            // SAFETY: the buffers hold the shapes `h` describes.
            unsafe { crate::attention_hopper::forward::<T, D>(q, k, v, o, lse, h) }
        },
    );
    let o_wide: Vec<f64> = from_rows_outer(&o).iter().map(|&b| c.widen(b)).collect();
    c.close("Hopper output", &o_wide, &want.o);
    let lse_wide: Vec<f64> = lse.iter().map(|&x| x as f64).collect();
    c.close("Hopper log-sum-exp", &lse_wide, &want.lse);
}

fn case(l: usize, s: usize, d: usize, causal: bool, bf16: bool) -> Case {
    Case {
        batch: 1,
        heads: 1,
        kv_heads: 1,
        l,
        s,
        d,
        causal,
        bf16,
        tol: if bf16 { 2e-2 } else { 4e-3 },
        dropout: 0.0,
        ramp: 0.0,
    }
}

/// An f32 case: the tf32 pairs' products are as close as f32's.
fn case32(l: usize, s: usize, d: usize, causal: bool) -> Case {
    Case {
        tol: 5e-5,
        ..case(l, s, d, causal, false)
    }
}

#[test]
fn bf16_d64_grouped_heads_odd_lengths() {
    check::<BF16, 64, false>(Case {
        batch: 2,
        heads: 2,
        kv_heads: 1,
        ..case(70, 45, 64, false, true)
    });
}

#[test]
fn f16_d64_causal_more_keys_than_queries() {
    check::<F16, 64, false>(case(45, 70, 64, true, false));
}

#[test]
fn f16_d64_causal_more_queries_than_keys() {
    check::<F16, 64, false>(case(80, 20, 64, true, false));
}

#[test]
fn bf16_d128_causal_two_tiles() {
    check::<BF16, 128, false>(case(130, 130, 128, true, true));
}

#[test]
fn bf16_d128_causal_three_key_tiles() {
    check::<BF16, 128, false>(Case {
        heads: 2,
        kv_heads: 1,
        ..case(260, 300, 128, true, true)
    });
}

#[test]
fn bf16_d128_growing_scores() {
    check::<BF16, 128, false>(Case {
        ramp: 12.0,
        ..case(130, 300, 128, false, true)
    });
}

#[test]
fn f16_d64_causal_growing_scores() {
    check::<F16, 64, false>(Case {
        ramp: 12.0,
        ..case(200, 390, 64, true, false)
    });
}

#[test]
fn f16_d64_five_key_tiles() {
    // more key tiles than the Hopper forward has buffers, so each buffer is
    // reused and its barriers go round their phases
    check::<F16, 64, false>(case(20, 530, 64, false, false));
}

#[test]
fn f16_d64_rows_past_the_queries_five_key_tiles() {
    // the last block's second and third warpgroups hold no query: they
    // compute one tile and give the other four back unread, through every
    // buffer's phases
    check::<F16, 64, false>(case(200, 530, 64, false, false));
}

#[test]
fn bf16_d128_causal_warpgroups_stop_at_their_diagonal() {
    // in the fourth block the first warpgroup needs the block's four key
    // tiles, the second (holding no query) one
    check::<BF16, 128, false>(case(420, 420, 128, true, true));
}

#[test]
fn f16_d64_causal_warpgroups_stop_at_their_diagonal() {
    // in the second block the warpgroups need 2, 3 and 3 of the block's 3 key
    // tiles, in the third 4, 1 and 1 (the last two hold no query)
    check::<F16, 64, false>(case(400, 400, 64, true, false));
}

#[test]
fn bf16_d64_causal_five_query_tiles() {
    check::<BF16, 64, false>(case(300, 300, 64, true, true));
}

#[test]
fn f16_d32_three_query_tiles_fewer_keys() {
    check::<F16, 32, false>(case(140, 37, 32, false, false));
}

#[test]
fn f16_d128_one_query() {
    check::<F16, 128, false>(case(1, 33, 128, false, false));
}

#[test]
fn bf16_d32_causal() {
    check::<BF16, 32, false>(case(70, 70, 32, true, true));
}

#[test]
fn f16_d96_grouped_heads() {
    check::<F16, 96, false>(Case {
        heads: 3,
        kv_heads: 1,
        ..case(40, 77, 96, false, false)
    });
}

#[test]
fn bf16_d64_dropout_causal() {
    check::<BF16, 64, true>(Case {
        dropout: 0.3,
        heads: 2,
        ..case(70, 45, 64, true, true)
    });
}

#[test]
fn f16_d128_dropout_grouped_heads() {
    check::<F16, 128, true>(Case {
        dropout: 0.2,
        heads: 2,
        kv_heads: 1,
        ..case(33, 66, 128, false, false)
    });
}

#[test]
fn f32_d64_causal_grouped_heads_odd_lengths() {
    check::<f32, 64, false>(Case {
        heads: 2,
        kv_heads: 1,
        ..case32(70, 90, 64, true)
    });
}

#[test]
fn f32_d128_growing_scores() {
    check::<f32, 128, false>(Case {
        ramp: 12.0,
        ..case32(66, 130, 128, false)
    });
}

#[test]
fn f32_d32_two_query_tiles() {
    check::<f32, 32, false>(case32(100, 37, 32, false));
}

#[test]
fn f32_d96_one_query() {
    check::<f32, 96, false>(case32(1, 45, 96, true));
}

#[test]
fn f32_d64_dropout_causal() {
    check::<f32, 64, true>(Case {
        dropout: 0.25,
        batch: 2,
        ..case32(70, 70, 64, true)
    });
}

#[test]
fn f16_d64_dropout_keys_a_multiple_of_four() {
    // four weights' keep bits from each Philox block, swapped between lanes
    check::<F16, 64, true>(Case {
        dropout: 0.3,
        heads: 2,
        ..case(70, 96, 64, false, false)
    });
}

#[test]
fn f32_d32_dropout_causal_keys_a_multiple_of_four() {
    check::<f32, 32, true>(Case {
        dropout: 0.4,
        ..case32(100, 100, 32, true)
    });
}
