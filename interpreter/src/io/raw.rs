//! Element codecs shared by the binary formats: the element types a file may
//! hold ([`FileDType`]), decoding raw bytes in either byte order into a
//! typed [`CpuStorage`], and encoding a storage as little-endian bytes. Types
//! kiln lacks are widened losslessly (i8, i16, u16 → i32; u32 → i64); u64
//! values above `i64::MAX` are an error. Storage is allocated fallibly, and
//! [`decode_into`] appends, so a loader can decode a file a chunk at a time.
//! No file access happens here.

use crate::backend::CpuStorage;
use crate::core::memory::try_vec_with_capacity;
use crate::core::DType;
use half::{bf16, f16};
use std::convert::identity;

/// Byte order of multi-byte elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

/// An element type as a file stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileDType {
    /// One byte, zero is false.
    Bool,
    /// Unsigned 8-bit.
    U8,
    /// Signed 8-bit (read as i32).
    I8,
    /// Signed 16-bit (read as i32).
    I16,
    /// Unsigned 16-bit (read as i32).
    U16,
    /// Signed 32-bit.
    I32,
    /// Unsigned 32-bit (read as i64).
    U32,
    /// Signed 64-bit.
    I64,
    /// Unsigned 64-bit (read as i64, values above `i64::MAX` refused).
    U64,
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
}

impl FileDType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            FileDType::Bool | FileDType::U8 | FileDType::I8 => 1,
            FileDType::I16 | FileDType::U16 | FileDType::F16 | FileDType::BF16 => 2,
            FileDType::I32 | FileDType::U32 | FileDType::F32 => 4,
            FileDType::I64 | FileDType::U64 | FileDType::F64 => 8,
        }
    }

    /// The kiln dtype this file type is read into.
    pub fn kiln(self) -> DType {
        match self {
            FileDType::Bool => DType::Bool,
            FileDType::U8 => DType::U8,
            FileDType::I8 | FileDType::I16 | FileDType::U16 | FileDType::I32 => DType::I32,
            FileDType::U32 | FileDType::I64 | FileDType::U64 => DType::I64,
            FileDType::F16 => DType::F16,
            FileDType::BF16 => DType::BF16,
            FileDType::F32 => DType::F32,
            FileDType::F64 => DType::F64,
        }
    }

    /// The file type a kiln dtype is written as.
    pub fn of(dtype: DType) -> FileDType {
        match dtype {
            DType::Bool => FileDType::Bool,
            DType::U8 => FileDType::U8,
            DType::I32 => FileDType::I32,
            DType::I64 => FileDType::I64,
            DType::F16 => FileDType::F16,
            DType::BF16 => FileDType::BF16,
            DType::F32 => FileDType::F32,
            DType::F64 => FileDType::F64,
        }
    }
}

/// Appends the `N`-byte elements of `bytes` to `v`, each decoded by `f`.
fn extend<const N: usize, T>(v: &mut Vec<T>, bytes: &[u8], f: impl Fn([u8; N]) -> T) {
    v.extend(bytes.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        f(a)
    }));
}

macro_rules! extend_as {
    ($v:expr, $bytes:expr, $endian:expr, $t:ty, $map:expr) => {
        match $endian {
            Endian::Little => extend($v, $bytes, |a| ($map)(<$t>::from_le_bytes(a))),
            Endian::Big => extend($v, $bytes, |a| ($map)(<$t>::from_be_bytes(a))),
        }
    };
}

/// An empty host storage of `dtype` with room for `n` elements, allocated
/// fallibly (an allocator failure is an [`crate::core::error::Error::OutOfMemory`]).
pub(crate) fn with_capacity(
    op: &'static str,
    dtype: DType,
    n: usize,
) -> crate::core::error::Result<CpuStorage> {
    Ok(match dtype {
        DType::Bool => CpuStorage::Bool(try_vec_with_capacity(op, n)?),
        DType::U8 => CpuStorage::U8(try_vec_with_capacity(op, n)?),
        DType::I32 => CpuStorage::I32(try_vec_with_capacity(op, n)?),
        DType::I64 => CpuStorage::I64(try_vec_with_capacity(op, n)?),
        DType::F16 => CpuStorage::F16(try_vec_with_capacity(op, n)?),
        DType::BF16 => CpuStorage::BF16(try_vec_with_capacity(op, n)?),
        DType::F32 => CpuStorage::F32(try_vec_with_capacity(op, n)?),
        DType::F64 => CpuStorage::F64(try_vec_with_capacity(op, n)?),
    })
}

/// Decodes `bytes` (a whole number of `dtype` elements) and appends them to
/// `out`, a storage of `dtype.kiln()`; the error says why values do not fit
/// (then `out` is as it was).
pub fn decode_into(
    out: &mut CpuStorage,
    bytes: &[u8],
    dtype: FileDType,
    endian: Endian,
) -> Result<(), String> {
    if bytes.len() % dtype.size() != 0 {
        return Err(format!(
            "{} bytes are not a whole number of {}-byte elements",
            bytes.len(),
            dtype.size()
        ));
    }
    match (dtype, out) {
        (FileDType::Bool, CpuStorage::Bool(v)) => v.extend(bytes.iter().map(|&b| b != 0)),
        (FileDType::U8, CpuStorage::U8(v)) => v.extend_from_slice(bytes),
        (FileDType::I8, CpuStorage::I32(v)) => v.extend(bytes.iter().map(|&b| i32::from(b as i8))),
        (FileDType::I16, CpuStorage::I32(v)) => extend_as!(v, bytes, endian, i16, i32::from),
        (FileDType::U16, CpuStorage::I32(v)) => extend_as!(v, bytes, endian, u16, i32::from),
        (FileDType::I32, CpuStorage::I32(v)) => extend_as!(v, bytes, endian, i32, identity),
        (FileDType::U32, CpuStorage::I64(v)) => extend_as!(v, bytes, endian, u32, i64::from),
        (FileDType::I64, CpuStorage::I64(v)) => extend_as!(v, bytes, endian, i64, identity),
        (FileDType::U64, CpuStorage::I64(v)) => {
            let start = v.len();
            // a u64 above i64::MAX is exactly one whose bits read as a negative i64
            extend_as!(v, bytes, endian, i64, identity);
            if v[start..].iter().any(|&x| x < 0) {
                v.truncate(start);
                return Err("a u64 value above the largest i64 cannot be read".into());
            }
        }
        (FileDType::F16, CpuStorage::F16(v)) => extend_as!(v, bytes, endian, u16, f16::from_bits),
        (FileDType::BF16, CpuStorage::BF16(v)) => extend_as!(v, bytes, endian, u16, bf16::from_bits),
        (FileDType::F32, CpuStorage::F32(v)) => extend_as!(v, bytes, endian, f32, identity),
        (FileDType::F64, CpuStorage::F64(v)) => extend_as!(v, bytes, endian, f64, identity),
        (d, out) => {
            return Err(format!(
                "internal: {d:?} elements cannot go into a {} storage",
                out.dtype()
            ))
        }
    }
    Ok(())
}

/// Decodes `bytes` (a whole number of `dtype` elements) into a storage of
/// `dtype.kiln()`, allocated fallibly; the error says why values do not fit.
pub fn decode(bytes: &[u8], dtype: FileDType, endian: Endian) -> Result<CpuStorage, String> {
    let mut out =
        with_capacity("decode", dtype.kiln(), bytes.len() / dtype.size()).map_err(|e| e.to_string())?;
    decode_into(&mut out, bytes, dtype, endian)?;
    Ok(out)
}

/// The elements of `s` as little-endian bytes (bools as 0/1).
pub fn encode_le(s: &CpuStorage) -> Vec<u8> {
    fn flat<const N: usize, T: Copy>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.len() * N);
        for &x in v {
            out.extend_from_slice(&f(x));
        }
        out
    }
    match s {
        CpuStorage::Bool(v) => v.iter().map(|&b| b as u8).collect(),
        CpuStorage::U8(v) => v.clone(),
        CpuStorage::I32(v) => flat(v, i32::to_le_bytes),
        CpuStorage::I64(v) => flat(v, i64::to_le_bytes),
        CpuStorage::F16(v) => flat(v, |x: f16| x.to_bits().to_le_bytes()),
        CpuStorage::BF16(v) => flat(v, |x: bf16| x.to_bits().to_le_bytes()),
        CpuStorage::F32(v) => flat(v, f32::to_le_bytes),
        CpuStorage::F64(v) => flat(v, f64::to_le_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_byte_orders_decode() {
        let le = decode(&[1, 0, 0, 0, 0, 0, 0x80, 0x3f], FileDType::F32, Endian::Little).unwrap();
        assert_eq!(le, CpuStorage::F32(vec![1.4e-45, 1.0]));
        let be = decode(&[0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0], FileDType::F32, Endian::Big).unwrap();
        assert_eq!(be, CpuStorage::F32(vec![1.0, -2.0]));
        let i16s = decode(&[0xff, 0xfe, 0x00, 0x07], FileDType::I16, Endian::Big).unwrap();
        assert_eq!(i16s, CpuStorage::I32(vec![-2, 7]));
    }

    #[test]
    fn narrow_types_widen() {
        assert_eq!(
            decode(&[0xff, 0x01], FileDType::I8, Endian::Little).unwrap(),
            CpuStorage::I32(vec![-1, 1])
        );
        assert_eq!(
            decode(&[0xff, 0xff], FileDType::U16, Endian::Little).unwrap(),
            CpuStorage::I32(vec![65535])
        );
        assert_eq!(
            decode(&[0xff; 4], FileDType::U32, Endian::Little).unwrap(),
            CpuStorage::I64(vec![4294967295])
        );
        assert!(decode(&[0xff; 8], FileDType::U64, Endian::Little).is_err());
        assert_eq!(
            decode(&[0, 2, 1], FileDType::Bool, Endian::Little).unwrap(),
            CpuStorage::Bool(vec![false, true, true])
        );
    }

    #[test]
    fn decode_into_appends_and_leaves_the_storage_alone_on_error() {
        let mut out = with_capacity("t", DType::I64, 4).unwrap();
        decode_into(&mut out, &7u64.to_le_bytes(), FileDType::U64, Endian::Little).unwrap();
        decode_into(&mut out, &9u32.to_be_bytes(), FileDType::U32, Endian::Big).unwrap();
        assert_eq!(out, CpuStorage::I64(vec![7, 9]));
        let mut big = 1u64.to_le_bytes().to_vec();
        big.extend(u64::MAX.to_le_bytes());
        assert!(decode_into(&mut out, &big, FileDType::U64, Endian::Little).is_err());
        assert_eq!(out, CpuStorage::I64(vec![7, 9]));
        let e = decode_into(&mut out, &[1, 2], FileDType::F16, Endian::Little).unwrap_err();
        assert!(e.contains("internal"), "{e}");
    }

    #[test]
    fn partial_elements_are_an_error() {
        assert!(decode(&[0, 0, 0], FileDType::F32, Endian::Little).is_err());
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let all = [
            CpuStorage::Bool(vec![true, false]),
            CpuStorage::U8(vec![0, 255]),
            CpuStorage::I32(vec![i32::MIN, -1, 7]),
            CpuStorage::I64(vec![i64::MAX, -3]),
            CpuStorage::F16(vec![f16::from_f32(1.5), f16::from_f32(-0.25)]),
            CpuStorage::BF16(vec![bf16::from_f32(3.0), bf16::from_f32(-1e-3)]),
            CpuStorage::F32(vec![1.25, f32::MIN_POSITIVE]),
            CpuStorage::F64(vec![std::f64::consts::PI, -0.0]),
        ];
        for s in all {
            let fd = FileDType::of(s.dtype());
            assert_eq!(decode(&encode_le(&s), fd, Endian::Little).unwrap(), s);
        }
    }
}
