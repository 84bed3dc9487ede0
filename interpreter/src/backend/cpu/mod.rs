//! The CPU backend: the reference implementation every other backend is
//! tested against. Storage is one typed `Vec` per dtype ([`CpuStorage`]);
//! kernels read strided layouts in place (merged dims, stride-0 broadcast) and
//! split large outputs across all cores with rayon.

mod attention;
pub mod collective;
mod element;
mod elementwise;
pub(crate) mod factor;
mod index;
pub mod linalg;
mod loss;
mod nn;
mod optim;
mod order;
mod random;
mod reduce;

pub(crate) use attention::{attention_rows, attention_rows_backward};
pub use element::{cast, Element};
pub(crate) use element::{with_dtype, with_storage};
pub(crate) use elementwise::{binary, cast_to, compare, copy_into, unary, where_cond};
pub(crate) use index::{gather, scatter_add};
pub(crate) use linalg::matmul;
pub use linalg::MatmulDims;
pub(crate) use loss::{cross_entropy, cross_entropy_backward};
pub(crate) use nn::{layer_norm, layer_norm_backward, softmax};
pub(crate) use optim::{adam_step, sgd_step};
pub(crate) use order::{scan, search_sorted, sort};
pub(crate) use random::{dropout, rand_int, rand_normal, rand_uniform};
pub(crate) use reduce::reduce;

use crate::core::{DType, HostValues, Layout, Scalar};
use half::{bf16, f16};
use rayon::prelude::*;

/// Outputs at least this large are split across threads.
pub(crate) const PAR_THRESHOLD: usize = 1 << 15;

/// The elements of a CPU tensor, one typed vector per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum CpuStorage {
    /// bool elements
    Bool(Vec<bool>),
    /// u8 elements
    U8(Vec<u8>),
    /// i32 elements
    I32(Vec<i32>),
    /// i64 elements
    I64(Vec<i64>),
    /// f16 elements
    F16(Vec<f16>),
    /// bf16 elements
    BF16(Vec<bf16>),
    /// f32 elements
    F32(Vec<f32>),
    /// f64 elements
    F64(Vec<f64>),
}

impl CpuStorage {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        with_storage!(self, _v: T => T::DTYPE)
    }

    /// Number of elements held.
    pub fn len(&self) -> usize {
        with_storage!(self, v: T => v.len())
    }

    /// True when no elements are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `n` copies of `value` converted to `dtype`, allocated fallibly (an
    /// allocator failure is an out-of-memory error, not an abort).
    pub fn full(dtype: DType, n: usize, value: Scalar) -> crate::core::error::Result<CpuStorage> {
        Ok(with_dtype!(dtype, T => {
            let v: T = match value {
                Scalar::Float(f) => T::from_f64(f),
                other => T::from_i64(other.to_i64()),
            };
            let mut data = crate::core::memory::try_zeroed_vec::<T>("full", n)?;
            if v != T::default() || v.to_f64().is_sign_negative() {
                data.fill(v);
            }
            T::into_storage(data)
        }))
    }

    /// `start + i * step` for `i in 0..n`, computed in f64 (floats) or i64 (ints).
    pub fn arange(dtype: DType, start: Scalar, step: Scalar, n: usize) -> CpuStorage {
        with_dtype!(dtype, T => {
            let v: Vec<T> = if dtype.is_float() {
                let (a, s) = (start.to_f64(), step.to_f64());
                (0..n).into_par_iter().map(|i| T::from_f64(a + i as f64 * s)).collect()
            } else {
                let (a, s) = (start.to_i64(), step.to_i64());
                (0..n).map(|i| T::from_i64(a.wrapping_add((i as i64).wrapping_mul(s)))).collect()
            };
            T::into_storage(v)
        })
    }

    /// Host values converted to `dtype`, in the given order.
    pub fn from_host(values: &HostValues, dtype: DType) -> CpuStorage {
        with_dtype!(dtype, T => {
            let v: Vec<T> = match values {
                HostValues::Bool(b) => b.iter().map(|&x| T::from_i64(x as i64)).collect(),
                HostValues::Int(i) => i.iter().map(|&x| T::from_i64(x)).collect(),
                HostValues::Float(f) => f.iter().map(|&x| T::from_f64(x)).collect(),
            };
            T::into_storage(v)
        })
    }

    /// The elements of `layout`, in logical order, as host values.
    pub fn to_host(&self, layout: &Layout) -> HostValues {
        let dtype = self.dtype();
        with_storage!(self, v: T => {
            let offs = crate::core::strided::offsets(layout.shape(), layout.strides(), layout.offset());
            if dtype == DType::Bool {
                HostValues::Bool(offs.iter().map(|&o| v[o].to_i64() != 0).collect())
            } else if dtype.is_float() {
                HostValues::Float(offs.iter().map(|&o| v[o].to_f64()).collect())
            } else {
                HostValues::Int(offs.iter().map(|&o| v[o].to_i64()).collect())
            }
        })
    }
}
