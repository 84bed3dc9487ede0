//! CPU random draws from the shared counter-based Philox generator
//! (`kiln_kernels::philox`): element `i` of draw `stream` under `seed` is the
//! same value on every backend.

use super::element::{with_dtype, Element};
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
