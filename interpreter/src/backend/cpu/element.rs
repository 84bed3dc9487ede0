//! [`Element`]: the host element types behind each [`DType`], their
//! conversions, and the macro that dispatches a generic body over a
//! [`CpuStorage`]'s variants.

use super::CpuStorage;
use crate::core::DType;
use half::{bf16, f16};

mod sealed {
    /// Implemented for the eight element types only.
    pub trait Sealed {}
}

/// A host element type of a CPU storage: `bool`, `u8`, `i32`, `i64`,
/// [`half::f16`], [`half::bf16`], `f32`, `f64`, one per [`DType`]. Sealed:
/// kiln implements it for these types and no others.
pub trait Element:
    sealed::Sealed + Copy + Send + Sync + Default + PartialOrd + std::fmt::Debug + 'static
{
    /// The dtype this type stores.
    const DTYPE: DType;
    /// Converts to `f64` (exact for every type but i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts from `f64` with rounding (floats) or truncation toward zero (ints).
    fn from_f64(v: f64) -> Self;
    /// Converts to `i64` (floats truncate toward zero).
    fn to_i64(self) -> i64;
    /// Converts from `i64` (wrapping for narrower ints).
    fn from_i64(v: i64) -> Self;
    /// Converts to `f32` (one rounding at most; exact for f16 and bf16).
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    /// Converts from `f32` with one rounding.
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    /// Wraps a vector as a storage.
    fn into_storage(v: Vec<Self>) -> CpuStorage;
    /// Views a storage as a slice of this type, if it holds this type.
    fn slice(s: &CpuStorage) -> Option<&[Self]>;
    /// Views a storage as a mutable slice of this type, if it holds this type.
    fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]>;
}

/// Converts between element types: through `i64` when both are integers
/// (exact), through `f64` otherwise (one rounding).
#[inline(always)]
pub fn cast<S: Element, D: Element>(x: S) -> D {
    if S::DTYPE.is_float() || D::DTYPE.is_float() {
        D::from_f64(x.to_f64())
    } else {
        D::from_i64(x.to_i64())
    }
}

macro_rules! impl_element {
    (@half $t:ty, $variant:ident, $to_f:expr, $from_f:expr, $to_i:expr, $from_i:expr) => {
        impl_element!($t, $variant, $to_f, $from_f, $to_i, $from_i, {
            #[inline(always)]
            fn to_f32(self) -> f32 {
                <$t>::to_f32(self)
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                <$t>::from_f32(v)
            }
        });
    };
    ($t:ty, $variant:ident, $to_f:expr, $from_f:expr, $to_i:expr, $from_i:expr) => {
        impl_element!($t, $variant, $to_f, $from_f, $to_i, $from_i, {});
    };
    ($t:ty, $variant:ident, $to_f:expr, $from_f:expr, $to_i:expr, $from_i:expr, {$($extra:tt)*}) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            $($extra)*
            const DTYPE: DType = DType::$variant;
            #[inline(always)]
            fn to_f64(self) -> f64 {
                ($to_f)(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                ($from_f)(v)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                ($to_i)(self)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                ($from_i)(v)
            }
            fn into_storage(v: Vec<Self>) -> CpuStorage {
                CpuStorage::$variant(v)
            }
            fn slice(s: &CpuStorage) -> Option<&[Self]> {
                match s {
                    CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(s: &mut CpuStorage) -> Option<&mut [Self]> {
                match s {
                    CpuStorage::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

impl_element!(
    bool,
    Bool,
    |x: bool| x as u8 as f64,
    |v: f64| v != 0.0,
    |x: bool| x as i64,
    |v: i64| v != 0
);
impl_element!(
    u8,
    U8,
    |x: u8| x as f64,
    |v: f64| v as i64 as u8,
    |x: u8| x as i64,
    |v: i64| v as u8
);
impl_element!(
    i32,
    I32,
    |x: i32| x as f64,
    |v: f64| v as i32,
    |x: i32| x as i64,
    |v: i64| v as i32
);
impl_element!(
    i64,
    I64,
    |x: i64| x as f64,
    |v: f64| v as i64,
    |x: i64| x,
    |v: i64| v
);
impl_element!(@half f16, F16, |x: f16| x.to_f64(), f16::from_f64, |x: f16| x.to_f64() as i64, |v: i64| f16::from_f64(v as f64));
impl_element!(@half bf16, BF16, |x: bf16| x.to_f64(), bf16_from_f64, |x: bf16| x.to_f64() as i64, |v: i64| bf16_from_f64(v as f64));
impl_element!(
    f32,
    F32,
    |x: f32| x as f64,
    |v: f64| v as f32,
    |x: f32| x as i64,
    |v: i64| v as f32
);
impl_element!(f64, F64, |x: f64| x, |v: f64| v, |x: f64| x as i64, |v: i64| v
    as f64);

/// Runs `$body` with `$v` bound to the typed vector of a `CpuStorage`
/// (`$T` names its element type inside the body).
macro_rules! with_storage {
    ($s:expr, $v:ident : $T:ident => $body:expr) => {
        match $s {
            $crate::backend::cpu::CpuStorage::Bool($v) => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            $crate::backend::cpu::CpuStorage::U8($v) => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
            $crate::backend::cpu::CpuStorage::I32($v) => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            $crate::backend::cpu::CpuStorage::I64($v) => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::backend::cpu::CpuStorage::F16($v) => {
                #[allow(dead_code)]
                type $T = half::f16;
                $body
            }
            $crate::backend::cpu::CpuStorage::BF16($v) => {
                #[allow(dead_code)]
                type $T = half::bf16;
                $body
            }
            $crate::backend::cpu::CpuStorage::F32($v) => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::backend::cpu::CpuStorage::F64($v) => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
        }
    };
}

/// Runs `$body` with `$T` bound to the element type of a [`DType`].
macro_rules! with_dtype {
    ($d:expr, $T:ident => $body:expr) => {
        match $d {
            $crate::core::DType::Bool => {
                #[allow(dead_code)]
                type $T = bool;
                $body
            }
            $crate::core::DType::U8 => {
                #[allow(dead_code)]
                type $T = u8;
                $body
            }
            $crate::core::DType::I32 => {
                #[allow(dead_code)]
                type $T = i32;
                $body
            }
            $crate::core::DType::I64 => {
                #[allow(dead_code)]
                type $T = i64;
                $body
            }
            $crate::core::DType::F16 => {
                #[allow(dead_code)]
                type $T = half::f16;
                $body
            }
            $crate::core::DType::BF16 => {
                #[allow(dead_code)]
                type $T = half::bf16;
                $body
            }
            $crate::core::DType::F32 => {
                #[allow(dead_code)]
                type $T = f32;
                $body
            }
            $crate::core::DType::F64 => {
                #[allow(dead_code)]
                type $T = f64;
                $body
            }
        }
    };
}

pub(crate) use {with_dtype, with_storage};

/// f64 to bf16, rounded once to nearest even (`half`'s own `from_f64` rounds
/// some values down that lie above the halfway point, e.g. 6.650228e-9).
/// The f32 step rounds to odd, so the second rounding cannot round twice.
pub(crate) fn bf16_from_f64(v: f64) -> bf16 {
    let mut f = v as f32;
    if f.is_finite() && f as f64 != v && f.to_bits() & 1 == 0 {
        // one step toward `v`: away from zero when |v| > |f|, else toward it
        let away = (v.abs()) > (f as f64).abs();
        let mag = f.to_bits() & 0x7fff_ffff;
        let mag = if away { mag + 1 } else { mag - 1 };
        f = f32::from_bits(mag | if v < 0.0 { 0x8000_0000 } else { 0 });
    }
    bf16::from_f32(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_from_f64_rounds_once() {
        let mut s = 0x1234_5678u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f32::from_bits(s as u32);
            if !x.is_nan() {
                assert_eq!(
                    bf16_from_f64(x as f64).to_bits(),
                    bf16::from_f32(x).to_bits(),
                    "{x:e}"
                );
            }
        }
        // just above the halfway point between 1 and the next bf16: up, not to even
        assert_eq!(bf16_from_f64(1.00390625 + 1e-12).to_f64(), 1.0078125);
        assert_eq!(bf16_from_f64(1.00390625).to_f64(), 1.0);
        assert_eq!(bf16_from_f64(-1.00390625 - 1e-12).to_f64(), -1.0078125);
        assert!(bf16_from_f64(f64::NAN).is_nan());
        assert_eq!(bf16_from_f64(1e300).to_f64(), f64::INFINITY);
    }
}
