//! Scans and sorts of dense rows on the CPU, rows in parallel: the oracle of
//! the GPU's chunked scans and bitonic sort (same accumulation types, same
//! order of keys: NaN largest, -0 equal to +0, stable).

use super::{with_storage, CpuStorage, Element};
use crate::core::error::Result;
use crate::core::op::ScanOp;
use crate::core::DType;
use rayon::prelude::*;

/// A running combination in f64, rounded to f32 after every step unless the
/// dtype is f64 (as the GPU accumulates f32, f16 and bf16 in f32).
fn float_scan(op: ScanOp, row: &[f64], wide: bool, out: &mut [f64], pos: &mut [i64]) {
    let round = |v: f64| if wide { v } else { v as f32 as f64 };
    let mut acc = 0.0;
    let mut at = 0i64;
    for (j, &x) in row.iter().enumerate() {
        let x = round(x);
        acc = if j == 0 {
            x
        } else {
            match op {
                ScanOp::Cumsum => round(acc + x),
                ScanOp::Cumprod => round(acc * x),
                ScanOp::Cummax | ScanOp::Cummin => {
                    let later = if op == ScanOp::Cummax { x >= acc } else { x <= acc };
                    if x.is_nan() || (!acc.is_nan() && later) {
                        at = j as i64;
                        x
                    } else {
                        acc
                    }
                }
                ScanOp::Logcumsumexp => {
                    if acc.is_nan() || x.is_nan() {
                        f64::NAN
                    } else {
                        let (hi, lo) = if acc > x { (acc, x) } else { (x, acc) };
                        if lo == f64::NEG_INFINITY || hi == f64::INFINITY {
                            hi
                        } else {
                            round(hi + (lo - hi).exp().ln_1p())
                        }
                    }
                }
            }
        };
        out[j] = acc;
        pos[j] = at;
    }
}

/// The same over i64 (wrapping sums and products).
fn int_scan(op: ScanOp, row: &[i64], out: &mut [i64], pos: &mut [i64]) {
    let mut acc = 0i64;
    let mut at = 0i64;
    for (j, &x) in row.iter().enumerate() {
        acc = if j == 0 {
            x
        } else {
            match op {
                ScanOp::Cumsum => acc.wrapping_add(x),
                ScanOp::Cumprod => acc.wrapping_mul(x),
                ScanOp::Cummax if x >= acc => {
                    at = j as i64;
                    x
                }
                ScanOp::Cummin if x <= acc => {
                    at = j as i64;
                    x
                }
                _ => acc,
            }
        };
        out[j] = acc;
        pos[j] = at;
    }
}

/// The scan `op` of `rows` dense rows of `len` (floats or i64), and the
/// positions for cummax/cummin.
pub fn scan(s: &CpuStorage, op: ScanOp, rows: usize, len: usize) -> Result<(CpuStorage, Option<CpuStorage>)> {
    let dtype = s.dtype();
    let n = rows * len;
    let mut pos = vec![0i64; n];
    let values = if dtype.is_float() {
        let x: Vec<f64> = with_storage!(s, v: T => v[..n].iter().map(|e| e.to_f64()).collect());
        let mut y = vec![0.0; n];
        let wide = dtype == DType::F64;
        if len > 0 {
            y.par_chunks_mut(len)
                .zip(pos.par_chunks_mut(len))
                .zip(x.par_chunks(len))
                .for_each(|((y, p), x)| float_scan(op, x, wide, y, p));
        }
        super::with_dtype!(dtype, T => T::into_storage(y.into_iter().map(T::from_f64).collect()))
    } else {
        let x: Vec<i64> = with_storage!(s, v: T => v[..n].iter().map(|e| e.to_i64()).collect());
        let mut y = vec![0i64; n];
        if len > 0 {
            y.par_chunks_mut(len)
                .zip(pos.par_chunks_mut(len))
                .zip(x.par_chunks(len))
                .for_each(|((y, p), x)| int_scan(op, x, y, p));
        }
        CpuStorage::I64(y)
    };
    Ok((values, op.with_indices().then_some(CpuStorage::I64(pos))))
}

/// `rows` dense rows of `len` sorted stably (NaN last; descending puts the
/// largest, NaN, first), with the i64 positions the values came from.
pub fn sort(s: &CpuStorage, rows: usize, len: usize, descending: bool) -> Result<(CpuStorage, CpuStorage)> {
    let dtype = s.dtype();
    let n = rows * len;
    let flip = if descending { u64::MAX } else { 0 };
    let keys: Vec<u64> = with_storage!(s, v: T => v[..n]
        .par_iter()
        .map(|e| {
            let k = if dtype.is_float() {
                kiln_kernels::sort_key::float_key(e.to_f64())
            } else {
                kiln_kernels::sort_key::int_key(e.to_i64())
            };
            k ^ flip
        })
        .collect());
    let mut order = vec![0i64; n];
    if len > 0 {
        order
            .par_chunks_mut(len)
            .zip(keys.par_chunks(len))
            .for_each(|(o, k)| {
                for (j, slot) in o.iter_mut().enumerate() {
                    *slot = j as i64;
                }
                o.sort_by_key(|&j| k[j as usize]);
            });
    }
    let values = with_storage!(s, v: T => {
        let out: Vec<T> = order
            .iter()
            .enumerate()
            .map(|(i, &j)| v[(i / len.max(1)) * len + j as usize])
            .collect();
        T::into_storage(out)
    });
    Ok((values, CpuStorage::I64(order)))
}

/// For each of `rows` dense rows of `m` values (`v`), its insertion point
/// (i64) in the matching dense row of `n` sorted elements of `seq` (one row
/// for all when `shared`), after equal ones when `right`: a binary search
/// over the sort keys, as the GPU's.
pub fn search_sorted(
    v: &CpuStorage,
    seq: &CpuStorage,
    (rows, m, n): (usize, usize, usize),
    shared: bool,
    right: bool,
) -> Result<CpuStorage> {
    let float = v.dtype().is_float();
    let keys = |s: &CpuStorage| -> Vec<u64> {
        with_storage!(s, x: T => x
            .par_iter()
            .map(|e| {
                if float {
                    kiln_kernels::sort_key::float_key(e.to_f64())
                } else {
                    kiln_kernels::sort_key::int_key(e.to_i64())
                }
            })
            .collect())
    };
    let (vk, sk) = (keys(v), keys(seq));
    let out: Vec<i64> = (0..rows * m)
        .into_par_iter()
        .map(|i| {
            let base = if shared { 0 } else { (i / m.max(1)) * n };
            let row = &sk[base..base + n];
            let key = vk[i];
            row.partition_point(|&k| k < key || (right && k == key)) as i64
        })
        .collect();
    Ok(CpuStorage::I64(out))
}
