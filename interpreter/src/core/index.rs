//! What an index op hands a backend: the indexed dim ([`Along`]) and the
//! dtype sums are kept in ([`scatter_dtype`]). The ops themselves live in
//! the front-end (`tensor::index`).

use super::DType;

/// The indexed dim of a gather or scatter-add, as the backends see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Along {
    /// The op (named in errors).
    pub op: &'static str,
    /// The indexed dim.
    pub dim: usize,
    /// The indexed tensor's shape; its size along `dim` bounds the indices.
    pub shape: Vec<usize>,
    /// The stride of `dim` in the indexed storage, in elements.
    pub stride: usize,
}

impl Along {
    /// The size of the indexed dim: valid indices are `0..size`.
    pub fn size(&self) -> usize {
        self.shape[self.dim]
    }
}

/// The dtype scatter-add sums `dtype` in (`None` for bool, which has no sum).
pub fn scatter_dtype(dtype: DType) -> Option<DType> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => Some(DType::F32),
        DType::F64 => Some(DType::F64),
        DType::I64 => Some(DType::I64),
        DType::I32 | DType::U8 => Some(DType::I32),
        DType::Bool => None,
    }
}
