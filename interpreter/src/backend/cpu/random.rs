//! CPU random draws from the shared counter-based Philox generator
//! (`kiln_kernels::philox`): element `i` of draw `stream` under `seed` is the
//! same value on every backend.

use super::element::{with_dtype, with_storage, Element};
use super::CpuStorage;
use crate::core::DType;
use kiln_kernels::params::RandView;
use kiln_kernels::philox;
use rayon::prelude::*;

/// `n` uniform values in `[0, 1)` of a float `dtype`, the stream's
/// elements `view` picks.
pub(crate) fn rand_uniform(dtype: DType, n: usize, seed: u64, stream: u64, view: RandView) -> CpuStorage {
    with_dtype!(dtype, T => {
        let v: Vec<T> = (0..n as u64).into_par_iter().map(|e| {
            let i = view.index(e);
            if dtype == DType::F64 {
                T::from_f64(philox::uniform_f64_at(seed, stream, i))
            } else {
                let x = T::from_f32(philox::uniform_at(seed, stream, i));
                // Rounding to a narrow type may reach 1.0; keep the interval half-open.
                if x.to_f64() >= 1.0 { T::from_f64(0.0) } else { x }
            }
        }).collect();
        T::into_storage(v)
    })
}

/// `n` standard normal values of a float `dtype`.
pub(crate) fn rand_normal(dtype: DType, n: usize, seed: u64, stream: u64) -> CpuStorage {
    with_dtype!(dtype, T => {
        let v: Vec<T> = (0..n as u64)
            .into_par_iter()
            .map(|i| T::from_f64(philox::normal_at(seed, stream, i)))
            .collect();
        T::into_storage(v)
    })
}

/// `n` integers uniform in `[low, high)` (`high > low`) stored as `dtype`.
pub(crate) fn rand_int(dtype: DType, n: usize, low: i64, high: i64, seed: u64, stream: u64) -> CpuStorage {
    let range = high.wrapping_sub(low) as u64;
    with_dtype!(dtype, T => {
        let v: Vec<T> = (0..n as u64)
            .into_par_iter()
            .map(|i| T::from_i64(philox::int_at(seed, stream, i, low, range)))
            .collect();
        T::into_storage(v)
    })
}

/// Inverted dropout of contiguous float storage by the draw `(seed, stream)`:
/// element `i` is `x · scale` (`scale = 1 / (1 - p)`) where the draw keeps it
/// (`philox::keep4`, `philox::keep_f64` for f64: the GPU's decisions), else 0.
/// Narrow types multiply in f32 as the GPU does.
pub(crate) fn dropout(s: &CpuStorage, p: f64, seed: u64, stream: u64) -> CpuStorage {
    let scale = 1.0 / (1.0 - p);
    with_storage!(s, v: T => {
        let out: Vec<T> = if T::DTYPE == DType::F64 {
            v.par_iter().enumerate().map(|(i, x)| {
                T::from_f64(if philox::keep_f64(seed, stream, i as u64, p) { x.to_f64() * scale } else { 0.0 })
            }).collect()
        } else {
            let (p32, s32) = (p as f32, scale as f32);
            let mut out = vec![T::default(); v.len()];
            out.par_chunks_mut(4).zip(v.par_chunks(4)).enumerate().for_each(|(q, (o, x))| {
                let keep = philox::keep4(seed, stream, q as u64, p32);
                for (k, (o, x)) in o.iter_mut().zip(x).enumerate() {
                    let y = if keep[k] { x.to_f64() as f32 * s32 } else { 0.0 };
                    *o = T::from_f64(y as f64);
                }
            });
            out
        };
        T::into_storage(out)
    })
}
