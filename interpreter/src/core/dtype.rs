//! Element types ([`DType`]), host scalars ([`Scalar`]) and PyTorch's type
//! promotion rules. Pure metadata: no storage, no math on data.

use crate::core::error::{Error, Result};
use std::fmt;

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Booleans, one byte each.
    Bool,
    /// Unsigned 8-bit integers.
    U8,
    /// Signed 32-bit integers.
    I32,
    /// Signed 64-bit integers (the default integer dtype).
    I64,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision (the default float dtype).
    F32,
    /// IEEE double precision.
    F64,
}

/// The three kinds PyTorch's promotion rules distinguish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// Integer dtypes.
    Int,
    /// Floating-point dtypes.
    Float,
}

impl DType {
    /// The values an integer dtype holds (`None` for floats and bool).
    pub fn int_range(self) -> Option<(i64, i64)> {
        match self {
            DType::U8 => Some((0, u8::MAX as i64)),
            DType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
            DType::I64 => Some((i64::MIN, i64::MAX)),
            _ => None,
        }
    }

    /// Every dtype, in promotion order.
    pub const ALL: [DType; 8] = [
        DType::Bool,
        DType::U8,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// The short name scripts use (`"f32"`, `"bf16"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Parses a dtype name, accepting PyTorch's spellings too (`"float32"`, `"half"`, `"long"`).
    pub fn parse(s: &str) -> Result<DType> {
        let s = s.strip_prefix("torch.").unwrap_or(s);
        Ok(match s {
            "bool" => DType::Bool,
            "u8" | "uint8" => DType::U8,
            "i32" | "int32" | "int" => DType::I32,
            "i64" | "int64" | "long" => DType::I64,
            "f16" | "float16" | "half" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            "f32" | "float32" | "float" => DType::F32,
            "f64" | "float64" | "double" => DType::F64,
            _ => return Err(Error::UnknownDType(s.to_string())),
        })
    }

    /// PyTorch's legacy tensor type name of this dtype (`"FloatTensor"`),
    /// as `Tensor.type()` spells it.
    pub fn legacy_type_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::U8 => "ByteTensor",
            DType::I32 => "IntTensor",
            DType::I64 => "LongTensor",
            DType::F16 => "HalfTensor",
            DType::BF16 => "BFloat16Tensor",
            DType::F32 => "FloatTensor",
            DType::F64 => "DoubleTensor",
        }
    }

    /// The dtype of a legacy tensor type name (`"DoubleTensor"`).
    pub fn from_legacy_type_name(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.legacy_type_name() == s)
    }

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// Bool, integer or float.
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::U8 | DType::I32 | DType::I64 => Category::Int,
            _ => Category::Float,
        }
    }

    /// True for f16, bf16, f32 and f64.
    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    /// True for u8, i32 and i64 (not bool).
    pub fn is_int(self) -> bool {
        self.category() == Category::Int
    }

    /// The dtype float-only ops compute in for this input: itself if float, else f32.
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// `torch.promote_types`: the smallest dtype that holds both.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        let (ca, cb) = (a.category(), b.category());
        if ca != cb {
            return if ca > cb { a } else { b };
        }
        match (a, b) {
            (F16, BF16) | (BF16, F16) => F32,
            _ => a.max(b),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A host number as a script passes it (`2`, `2.5`, `true`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// An integer (Rhai `i64`).
    Int(i64),
    /// A float (Rhai `f64`).
    Float(f64),
}

impl Scalar {
    /// Fails (naming `op`) when this value cannot be stored as `dtype`
    /// without overflow, as PyTorch refuses it: a NaN, an infinity or an
    /// out-of-range number into an integer dtype (`300` as `u8`, `-1` as
    /// `u8`, `3e9` as `i32`). Floats take any number; `bool` any value.
    pub fn check_fits(self, op: &'static str, dtype: DType) -> crate::core::error::Result<()> {
        let Some((lo, hi)) = dtype.int_range() else {
            return Ok(());
        };
        let fits = match self {
            Scalar::Bool(_) => true,
            Scalar::Int(i) => (lo..=hi).contains(&i),
            // truncated toward zero, as the conversion does; every integral
            // f64 in [-2^63, 2^63) converts to i64 exactly, and NaN is in no range
            Scalar::Float(f) => {
                let t = f.trunc();
                let two_63 = -(i64::MIN as f64);
                (-two_63..two_63).contains(&t) && (lo..=hi).contains(&(t as i64))
            }
        };
        if fits {
            return Ok(());
        }
        let v = match self {
            Scalar::Float(f) => f.to_string(),
            other => other.to_i64().to_string(),
        };
        Err(crate::core::error::Error::invalid(
            op,
            format!("value {v} cannot be converted to dtype {dtype} without overflow"),
        ))
    }

    /// Bool, integer or float.
    pub fn category(self) -> Category {
        match self {
            Scalar::Bool(_) => Category::Bool,
            Scalar::Int(_) => Category::Int,
            Scalar::Float(_) => Category::Float,
        }
    }

    /// The value as `f64`.
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }

    /// The value as `i64` (floats truncate toward zero).
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }

    /// The dtype a tensor made from this scalar alone gets.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
        }
    }

    /// The result dtype of an op between a tensor of `dtype` and this scalar:
    /// a scalar only changes the dtype when it is of a higher category
    /// (`f16_tensor * 2.5` stays f16, `i64_tensor * 2.5` becomes f32).
    pub fn promote_with(self, dtype: DType) -> DType {
        if self.category() > dtype.category() {
            self.default_dtype()
        } else {
            dtype
        }
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}

impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_pytorch() {
        use DType::*;
        assert_eq!(DType::promote(F16, BF16), F32);
        assert_eq!(DType::promote(I64, F16), F16);
        assert_eq!(DType::promote(U8, I32), I32);
        assert_eq!(DType::promote(Bool, U8), U8);
        assert_eq!(DType::promote(F32, F64), F64);
        assert_eq!(DType::promote(I32, I64), I64);
    }

    #[test]
    fn scalars_do_not_upcast_within_a_category() {
        assert_eq!(Scalar::Float(2.5).promote_with(DType::F16), DType::F16);
        assert_eq!(Scalar::Float(2.5).promote_with(DType::I64), DType::F32);
        assert_eq!(Scalar::Int(2).promote_with(DType::I32), DType::I32);
        assert_eq!(Scalar::Int(2).promote_with(DType::Bool), DType::I64);
    }

    #[test]
    fn parse_accepts_pytorch_names() {
        assert_eq!(DType::parse("float16").unwrap(), DType::F16);
        assert_eq!(DType::parse("torch.bfloat16").unwrap(), DType::BF16);
        assert!(DType::parse("f8").is_err());
    }
}
