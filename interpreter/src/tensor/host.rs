//! Host data in and out of tensors without a script: typed constructors from
//! slices and vectors, and typed reads back, for every [`Element`] type
//! (`bool`, `u8`, `i32`, `i64`, [`half::f16`], [`half::bf16`], `f32`, `f64`).
//!
//! ```
//! use kiln::{DType, Device, Tensor};
//! let t = Tensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3], Device::Cpu)?;
//! assert_eq!((t.shape(), t.dtype()), (&[2, 3][..], DType::I32));
//! let s = t.t()?.mul_scalar(10)?;                          // a strided view, then an op
//! assert_eq!(s.to_vec::<i32>()?, [10, 40, 20, 50, 30, 60]);
//! assert!(s.to_vec::<f32>().is_err());                   // the dtype is i32, not f32
//! assert_eq!(s.to_vec_as::<f32>()?, [10.0, 40.0, 20.0, 50.0, 30.0, 60.0]);
//! # Ok::<(), kiln::Error>(())
//! ```

pub use crate::backend::cpu::Element;

use super::{Device, Tensor};
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::shape::{check_alloc, checked_numel};

impl Tensor {
    /// A tensor of `shape` on `device` holding a copy of `values` in
    /// row-major order; its dtype is `T`'s ([`Element::DTYPE`]).
    pub fn from_slice<T: Element>(values: &[T], shape: &[usize], device: Device) -> Result<Tensor> {
        Tensor::check_len("from_slice", values.len(), shape, T::DTYPE)?;
        Tensor::from_cpu("from_slice", T::into_storage(values.to_vec()), shape, device)
    }

    /// Like [`Tensor::from_slice`], taking the vector: a CPU tensor keeps it
    /// without a copy.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: &[usize], device: Device) -> Result<Tensor> {
        Tensor::check_len("from_vec", values.len(), shape, T::DTYPE)?;
        Tensor::from_cpu("from_vec", T::into_storage(values), shape, device)
    }

    fn check_len(op: &'static str, len: usize, shape: &[usize], dtype: super::DType) -> Result<()> {
        let n = checked_numel(op, shape)?;
        if len != n {
            return Err(Error::shape(
                op,
                format!("{len} values cannot fill shape {shape:?} ({n} elements)"),
            ));
        }
        check_alloc(op, shape, dtype)
    }

    fn from_cpu(
        op: &'static str,
        cpu: crate::backend::CpuStorage,
        shape: &[usize],
        device: Device,
    ) -> Result<Tensor> {
        Tensor::from_storage(op, Storage::from_cpu(device, cpu)?, shape)
    }

    /// The elements in row-major order, copied to the host (waiting for the
    /// device). `T` must be the tensor's dtype, else the error is
    /// [`Error::DTypeMismatch`]; [`Tensor::to_vec_as`] converts instead.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let mismatch = || Error::DTypeMismatch {
            op: "to_vec",
            expected: T::DTYPE,
            found: self.dtype(),
        };
        if T::DTYPE != self.dtype() {
            return Err(mismatch());
        }
        let t = self.detach().to_device(Device::Cpu)?;
        let s = t.storage();
        let Storage::Cpu(c) = &*s else {
            return Err(Error::invalid(
                "to_vec",
                "internal: tensor not on the host after a copy",
            ));
        };
        let v = T::slice(c).ok_or_else(mismatch)?;
        let l = t.layout();
        let out_of_range = || Error::invalid("to_vec", "internal: layout outside its storage");
        if let Some((a, b)) = l.contiguous_range() {
            return v.get(a..b).map(<[T]>::to_vec).ok_or_else(out_of_range);
        }
        crate::core::strided::offsets(l.shape(), l.strides(), l.offset())
            .into_iter()
            .map(|o| v.get(o).copied().ok_or_else(out_of_range))
            .collect()
    }

    /// The elements in row-major order as `T`, converted from the tensor's
    /// dtype the way [`Tensor::to_dtype`] converts (floats to integers
    /// truncate toward zero, to bool is `!= 0`, to a narrower float rounds).
    pub fn to_vec_as<T: Element>(&self) -> Result<Vec<T>> {
        self.detach().to_dtype(T::DTYPE)?.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DType;
    use half::{bf16, f16};

    fn roundtrip<T: Element + PartialEq>(v: &[T], dtype: DType) {
        let t = Tensor::from_slice(v, &[2, v.len() / 2], Device::Cpu).unwrap();
        assert_eq!(t.dtype(), dtype);
        assert_eq!(t.to_vec::<T>().unwrap(), v);
        let u = Tensor::from_vec(v.to_vec(), &[v.len()], Device::Cpu).unwrap();
        assert_eq!(u.to_vec::<T>().unwrap(), v);
    }

    #[test]
    fn every_element_type_round_trips() {
        roundtrip(&[true, false, false, true], DType::Bool);
        roundtrip(&[0u8, 7, 200, 255], DType::U8);
        roundtrip(&[-5i32, 0, 7, i32::MAX], DType::I32);
        roundtrip(&[i64::MIN, -1, 0, (1 << 60) + 1], DType::I64);
        roundtrip(
            &[
                f16::from_f32(0.5),
                f16::from_f32(-2.0),
                f16::MAX,
                f16::MIN_POSITIVE,
            ],
            DType::F16,
        );
        roundtrip(
            &[bf16::from_f32(0.5), bf16::from_f32(-3.0), bf16::MAX, bf16::ONE],
            DType::BF16,
        );
        roundtrip(&[0.1f32, -2.5, f32::MAX, 1e-30], DType::F32);
        roundtrip(&[0.1f64, -2.5, f64::MAX, 1e-300], DType::F64);
    }

    #[test]
    fn views_and_conversions() {
        let t = Tensor::from_slice(&[1.5f64, 2.5, 3.5, 4.5, 5.5, 6.5], &[3, 2], Device::Cpu).unwrap();
        assert_eq!(
            t.t().unwrap().to_vec::<f64>().unwrap(),
            [1.5, 3.5, 5.5, 2.5, 4.5, 6.5]
        );
        assert_eq!(
            t.narrow(0, 1, 2).unwrap().to_vec::<f64>().unwrap(),
            [3.5, 4.5, 5.5, 6.5]
        );
        assert_eq!(t.to_vec_as::<i64>().unwrap(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(
            t.to_vec::<f32>().unwrap_err(),
            Error::DTypeMismatch {
                op: "to_vec",
                expected: DType::F32,
                found: DType::F64
            }
        );
        let e = Tensor::from_slice(&[1u8, 2, 3], &[2, 2], Device::Cpu).unwrap_err();
        assert_eq!(
            e.to_string(),
            "from_slice: 3 values cannot fill shape [2, 2] (4 elements)"
        );
    }
}
