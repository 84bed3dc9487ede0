//! The host side of the collectives: combining the element buffers of
//! several ranks in rank order (`all_reduce` over TCP reduces on rank 0
//! with these), in each element type's own arithmetic.

use super::element::{with_storage, Element};
use super::CpuStorage;
use crate::core::collective::ReduceOp;
use crate::core::DType;

/// `acc[i] = acc[i] op x[i]`, in `acc`'s element type.
pub fn accumulate(acc: &mut CpuStorage, x: &CpuStorage, op: ReduceOp) -> Result<(), String> {
    with_storage!(acc, a: T => {
        let b = T::slice(x).ok_or("mixed dtypes in one reduction")?;
        for (a, &b) in a.iter_mut().zip(b) {
            *a = combine_pair(*a, b, op);
        }
        Ok(())
    })
}

/// One reduction step in `T`'s own arithmetic: floats add in f64 and round
/// once (the same as adding in `T`), integers wrap, bools are or/and.
fn combine_pair<T: Element>(a: T, b: T, op: ReduceOp) -> T {
    if T::DTYPE == DType::Bool {
        let (a, b) = (a.to_i64() != 0, b.to_i64() != 0);
        return T::from_i64(match op {
            ReduceOp::Min => (a && b) as i64,
            _ => (a || b) as i64,
        });
    }
    if T::DTYPE.is_float() {
        let (x, y) = (a.to_f64(), b.to_f64());
        match op {
            ReduceOp::Sum | ReduceOp::Mean => T::from_f64(x + y),
            ReduceOp::Max if x.is_nan() || x >= y => a,
            ReduceOp::Min if x.is_nan() || x <= y => a,
            _ => b, // the larger (smaller) one, or a NaN in b
        }
    } else {
        let (x, y) = (a.to_i64(), b.to_i64());
        match op {
            ReduceOp::Sum | ReduceOp::Mean => T::from_i64(x.wrapping_add(y)),
            ReduceOp::Max => T::from_i64(x.max(y)),
            ReduceOp::Min => T::from_i64(x.min(y)),
        }
    }
}

/// `acc[i] /= n` for a float storage (one rounding).
pub fn divide(acc: &mut CpuStorage, n: usize) {
    with_storage!(acc, a: T => {
        for a in a.iter_mut() {
            *a = T::from_f64(a.to_f64() / n as f64);
        }
    })
}
