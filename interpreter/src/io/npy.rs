//! NumPy's `.npy` format: reading versions 1.0, 2.0 and 3.0 (little or big
//! endian, C or Fortran order; Fortran data is transposed into row-major
//! order), and writing version 1.0, little-endian, C order (2.0 only when a
//! header outgrows 64 KiB). The header, a Python dict literal, is parsed here
//! by a small parser bounded in depth (`pyliteral`); a key given twice
//! takes its last value, as in Python. Malformed or truncated files are
//! errors, never panics.
//!
//! Loading streams the file: the magic and a header of at most
//! [`MAX_HEADER_LEN`] bytes first; then the shape (at most [`MAX_DIMS`] dims,
//! checked products) is checked against the file's length and the memory
//! budget, and exactly the data it promises is read, a chunk at a time.
//!
//! dtypes: `b1` → bool, `u1` → u8, `i1 i2 u2 i4` → i32, `u4 i8 u8` → i64
//! (u8 values above `i64::MAX` are refused), `f2 f4 f8` → f16, f32, f64.
//! kiln's bf16 has no NumPy dtype: saving it is an error that says to
//! convert first. Complex, string, object and structured dtypes are refused.

use super::raw::{self, Endian, FileDType};
use super::{read_up_to, Decode, FileAccess};
use crate::core::error::{Error, Result};
use crate::core::shape::{check_alloc, MAX_DIMS};
use crate::core::{memory, DType, Device};
use crate::tensor::Tensor;
use pyliteral::Py;
use std::io::Read;
use std::path::Path;

mod pyliteral;

const MAGIC: &[u8] = b"\x93NUMPY";
const OP: &str = "load_npy";
/// The longest header read. A valid one with at most [`MAX_DIMS`] dims is a
/// few KiB at most (NumPy itself refuses more than 10 000 bytes by default).
pub const MAX_HEADER_LEN: usize = 1 << 20;

/// Reads the `.npy` file at `path` (gzip-compressed too) into a tensor on `device`.
pub fn load(files: &FileAccess, path: &Path, device: Device) -> Result<Tensor> {
    let mut src = files.open(OP, path, true)?;
    read(&mut src.reader, src.len, device).map_err(|e| e.into_error(OP, path))
}

/// Writes `t` to `path` as a `.npy` file.
pub fn save(files: &FileAccess, t: &Tensor, path: &Path) -> Result<()> {
    let bytes = encode(t)?;
    files.write("save_npy", path, &bytes)
}

/// The header's contents: element type, byte order, layout and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Element type.
    pub dtype: FileDType,
    /// Byte order of the elements.
    pub endian: Endian,
    /// True when the data is in column-major (Fortran) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
}

/// Decodes the bytes of a `.npy` file.
pub fn decode(bytes: &[u8], device: Device) -> std::result::Result<Tensor, Decode> {
    read(&mut &bytes[..], Some(bytes.len() as u64), device)
}

/// Reads a `.npy` stream of `len` bytes (when known): the magic and the
/// bounded header, then, once the data size it declares is checked against
/// `len` and the memory budget, exactly that many bytes of data (anything
/// after them is ignored, as NumPy does).
fn read(
    r: &mut (impl Read + ?Sized),
    len: Option<u64>,
    device: Device,
) -> std::result::Result<Tensor, Decode> {
    let (header, header_end) = read_header(r)?;
    let too_large = || Decode::Format(format!("shape {:?} is too large", header.shape));
    let numel = crate::core::shape::checked_numel("load_npy", &header.shape).map_err(|_| too_large())?;
    let need = numel.checked_mul(header.dtype.size()).ok_or_else(too_large)?;
    let truncated = |have: u64| {
        format!(
            "truncated: shape {:?} needs {need} bytes of data, the file holds {have}",
            header.shape
        )
    };
    if let Some(len) = len {
        let have = len.saturating_sub(header_end as u64);
        if have < need as u64 {
            return Err(Decode::Format(truncated(have)));
        }
    }
    let kiln = header.dtype.kiln();
    check_alloc(OP, &header.shape, kiln)?;
    // the tensor, then either the chunk being read or a second copy (the
    // row-major transpose of Fortran data, or the move to a device)
    let tensor_bytes = numel.saturating_mul(kiln.size_in_bytes());
    let copy = (header.fortran_order && header.shape.len() > 1) || device != Device::Cpu;
    let extra = if copy {
        tensor_bytes
    } else {
        need.min(super::CHUNK)
    };
    memory::check_bytes(OP, tensor_bytes.saturating_add(extra), true)?;
    let storage = super::read_elements(OP, r, header.dtype, header.endian, numel, |have| {
        truncated(have as u64)
    })?;
    let t = if header.fortran_order && header.shape.len() > 1 {
        // column-major data is the row-major array of the reversed shape, transposed
        let reversed: Vec<usize> = header.shape.iter().rev().copied().collect();
        let perm: Vec<i64> = (0..reversed.len() as i64).rev().collect();
        super::tensor_from_cpu(storage, &reversed, Device::Cpu)
            .and_then(|t| t.permute(&perm))
            .and_then(|t| t.contiguous())
            .and_then(|t| t.to_device(device))
    } else {
        super::tensor_from_cpu(storage, &header.shape, device)
    };
    Ok(t?)
}

/// Reads the magic, version and header; returns the header and the offset of the data.
fn read_header(r: &mut (impl Read + ?Sized)) -> std::result::Result<(Header, usize), Decode> {
    let mut pre = [0u8; 8];
    let n = read_up_to(r, &mut pre)?;
    if n < pre.len() || &pre[..MAGIC.len()] != MAGIC {
        return Err(Decode::Format(
            "not a .npy file (it does not start with \\x93NUMPY)".into(),
        ));
    }
    let (major, minor) = (pre[6], pre[7]);
    let (len_bytes, utf8) = match major {
        1 => (2, false),
        2 => (4, false),
        3 => (4, true),
        _ => {
            return Err(Decode::Format(format!(
                "unsupported .npy format version {major}.{minor}"
            )))
        }
    };
    let mut len_field = [0u8; 4];
    if read_up_to(r, &mut len_field[..len_bytes])? < len_bytes {
        return Err(Decode::Format("truncated header".into()));
    }
    let header_len = u32::from_le_bytes(len_field) as usize;
    if header_len > MAX_HEADER_LEN {
        return Err(Decode::Format(format!(
            "the header announces {header_len} bytes, more than the {MAX_HEADER_LEN} kiln reads"
        )));
    }
    let mut text = vec![0u8; header_len];
    let got = read_up_to(r, &mut text)?;
    if got < header_len {
        return Err(Decode::Format(format!(
            "truncated header: {header_len} bytes announced, {got} present"
        )));
    }
    let text: String = if utf8 {
        String::from_utf8(text).map_err(|_| "the header is not valid UTF-8".to_string())?
    } else {
        // versions 1 and 2 are latin-1
        text.iter().map(|&b| b as char).collect()
    };
    Ok((parse_header(&text)?, 8 + len_bytes + header_len))
}

/// The parsed header and the data bytes after it.
pub fn split(bytes: &[u8]) -> std::result::Result<(Header, &[u8]), String> {
    let (header, end) = read_header(&mut &bytes[..]).map_err(|e| e.to_string())?;
    Ok((header, bytes.get(end..).unwrap_or_default()))
}

/// Parses the header dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
/// A key given twice takes its last value, as in Python.
pub fn parse_header(text: &str) -> std::result::Result<Header, String> {
    let Py::Dict(entries) = pyliteral::parse(text)? else {
        return Err("the header is not a dict".into());
    };
    let get = |k: &str| entries.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Py::Str(s)) => s.as_str(),
        Some(_) => return Err("structured (record) dtypes are not supported".into()),
        None => return Err("the header has no 'descr'".into()),
    };
    let (dtype, endian) = parse_descr(descr)?;
    let fortran_order = match get("fortran_order") {
        Some(Py::Bool(b)) => *b,
        Some(_) => return Err("'fortran_order' must be True or False".into()),
        None => return Err("the header has no 'fortran_order'".into()),
    };
    let shape = match get("shape") {
        Some(Py::Tuple(items)) | Some(Py::List(items)) => {
            if items.len() > MAX_DIMS {
                return Err(format!(
                    "the array has {} dims; a kiln tensor may have at most {MAX_DIMS}",
                    items.len()
                ));
            }
            items
                .iter()
                .map(|d| match d {
                    Py::Int(n) if *n >= 0 => {
                        usize::try_from(*n).map_err(|_| format!("dimension {n} is too large"))
                    }
                    _ => Err("'shape' must hold non-negative integers".to_string()),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?
        }
        Some(_) => return Err("'shape' must be a tuple".into()),
        None => return Err("the header has no 'shape'".into()),
    };
    Ok(Header {
        dtype,
        endian,
        fortran_order,
        shape,
    })
}

/// Parses a dtype string such as `<f4`, `>i8`, `|b1`.
fn parse_descr(d: &str) -> std::result::Result<(FileDType, Endian), String> {
    let native = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };
    let (endian, code) = match d.as_bytes().first() {
        Some(b'<') => (Endian::Little, &d[1..]),
        Some(b'>') => (Endian::Big, &d[1..]),
        Some(b'|') | Some(b'=') => (native, &d[1..]),
        _ => (native, d),
    };
    let dtype = match code {
        "b1" | "?" => FileDType::Bool,
        "u1" => FileDType::U8,
        "i1" => FileDType::I8,
        "i2" => FileDType::I16,
        "u2" => FileDType::U16,
        "i4" => FileDType::I32,
        "u4" => FileDType::U32,
        "i8" => FileDType::I64,
        "u8" => FileDType::U64,
        "f2" => FileDType::F16,
        "f4" => FileDType::F32,
        "f8" => FileDType::F64,
        _ => {
            return Err(format!(
                "unsupported dtype '{d}' (supported: b1, u1, i1, i2, u2, i4, u4, i8, u8, f2, f4, f8)"
            ))
        }
    };
    Ok((dtype, endian))
}

/// The dtype string kiln writes for `dtype` (None for bf16).
fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::BF16 => return None,
    })
}

/// The bytes of a version 1.0 (2.0 for huge headers) `.npy` file holding `t`.
pub fn encode(t: &Tensor) -> Result<Vec<u8>> {
    let d = descr(t.dtype()).ok_or_else(|| Error::UnsupportedDType {
        op: "save_npy",
        dtype: t.dtype(),
        hint: " (NumPy has no bfloat16; convert first, e.g. t.to_dtype(\"f32\"), or use save_safetensors)"
            .into(),
    })?;
    let shape = match t.shape() {
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut dict = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic + version + length field + dict + '\n', padded with spaces to a multiple of 64
    let (version, len_bytes) = if dict.len() + 11 < 65536 {
        (1u8, 2)
    } else {
        (2u8, 4)
    };
    let unpadded = MAGIC.len() + 2 + len_bytes + dict.len() + 1;
    dict.extend(std::iter::repeat_n(' ', unpadded.next_multiple_of(64) - unpadded));
    dict.push('\n');
    let data = raw::encode_le(&super::cpu_data(t)?);
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + len_bytes + dict.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(&data);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{HostValues, MemoryBudget};
    use std::io::Write;
    use std::sync::Arc;

    /// A `.npy` file as NumPy writes it: version, dict padded to 64 bytes, data.
    fn npy(version: u8, dict: &str, data: &[u8]) -> Vec<u8> {
        let len_bytes = if version == 1 { 2 } else { 4 };
        let mut h = dict.to_string();
        let unpadded = 6 + 2 + len_bytes + h.len() + 1;
        h.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
        h.push('\n');
        let mut out = b"\x93NUMPY".to_vec();
        out.extend([version, 0]);
        if version == 1 {
            out.extend((h.len() as u16).to_le_bytes());
        } else {
            out.extend((h.len() as u32).to_le_bytes());
        }
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    fn f32_le(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn host(t: &Tensor) -> HostValues {
        t.to_host().unwrap()
    }

    #[test]
    fn reads_a_numpy_written_f32_matrix() {
        // np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3))
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let bytes = npy(1, dict, &f32_le(&[0., 1., 2., 3., 4., 5.]));
        assert_eq!(bytes.len(), 128 + 24);
        assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00\x76\x00");
        let t = decode(&bytes, Device::Cpu).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.dtype(), DType::F32);
        assert_eq!(host(&t), HostValues::Float(vec![0., 1., 2., 3., 4., 5.]));
    }

    #[test]
    fn reads_big_endian_and_versions_2_and_3() {
        let be: Vec<u8> = [1i32, -2, 300].iter().flat_map(|x| x.to_be_bytes()).collect();
        let dict = "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }";
        for version in [1, 2, 3] {
            let t = decode(&npy(version, dict, &be), Device::Cpu).unwrap();
            assert_eq!(t.dtype(), DType::I32);
            assert_eq!(host(&t), HostValues::Int(vec![1, -2, 300]));
        }
        let be: Vec<u8> = [1.5f64, -0.25].iter().flat_map(|x| x.to_be_bytes()).collect();
        let dict = "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }";
        let t = decode(&npy(1, dict, &be), Device::Cpu).unwrap();
        assert_eq!(host(&t), HostValues::Float(vec![1.5, -0.25]));
    }

    #[test]
    fn reads_fortran_order_as_row_major() {
        // np.asfortranarray([[0, 1, 2], [3, 4, 5]]) stores columns: 0 3 1 4 2 5
        let dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
        let t = decode(&npy(1, dict, &f32_le(&[0., 3., 1., 4., 2., 5.])), Device::Cpu).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(host(&t), HostValues::Float(vec![0., 1., 2., 3., 4., 5.]));
    }

    #[test]
    fn reads_zero_d_and_empty_arrays() {
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
        let t = decode(&npy(1, dict, &2.5f64.to_le_bytes()), Device::Cpu).unwrap();
        assert_eq!(t.shape(), &[] as &[usize]);
        assert_eq!(host(&t), HostValues::Float(vec![2.5]));
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4), }";
        let t = decode(&npy(1, dict, &[]), Device::Cpu).unwrap();
        assert_eq!(t.shape(), &[0, 4]);
        assert_eq!(t.numel(), 0);
    }

    #[test]
    fn reads_every_supported_dtype() {
        let cases: [(&str, Vec<u8>, DType, HostValues); 9] = [
            (
                "|b1",
                vec![1, 0],
                DType::Bool,
                HostValues::Bool(vec![true, false]),
            ),
            ("|u1", vec![255, 7], DType::U8, HostValues::Int(vec![255, 7])),
            ("|i1", vec![0xff, 7], DType::I32, HostValues::Int(vec![-1, 7])),
            (
                "<i2",
                vec![0xfe, 0xff, 1, 0],
                DType::I32,
                HostValues::Int(vec![-2, 1]),
            ),
            (
                "<u2",
                vec![0xff, 0xff, 1, 0],
                DType::I32,
                HostValues::Int(vec![65535, 1]),
            ),
            (
                "<u4",
                vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
                DType::I64,
                HostValues::Int(vec![4294967295, 0]),
            ),
            (
                "<i8",
                [-5i64, 9].iter().flat_map(|x| x.to_le_bytes()).collect(),
                DType::I64,
                HostValues::Int(vec![-5, 9]),
            ),
            (
                "<u8",
                [5u64, 9].iter().flat_map(|x| x.to_le_bytes()).collect(),
                DType::I64,
                HostValues::Int(vec![5, 9]),
            ),
            (
                "<f2",
                vec![0x00, 0x3c, 0x00, 0xc0],
                DType::F16,
                HostValues::Float(vec![1.0, -2.0]),
            ),
        ];
        for (d, data, dtype, values) in cases {
            let dict = format!("{{'descr': '{d}', 'fortran_order': False, 'shape': (2,), }}");
            let t = decode(&npy(1, &dict, &data), Device::Cpu).unwrap();
            assert_eq!((t.dtype(), host(&t)), (dtype, values), "{d}");
        }
    }

    #[test]
    fn round_trips_every_kiln_dtype_but_bf16() {
        let v = HostValues::Float(vec![0.0, 1.0, 2.0, 3.0, 4.5, 1.0]);
        for dtype in DType::ALL {
            let t = Tensor::from_host(&v, &[2, 3], dtype, Device::Cpu).unwrap();
            if dtype == DType::BF16 {
                let e = encode(&t).unwrap_err().to_string();
                assert!(e.contains("bfloat16"), "{e}");
                continue;
            }
            let bytes = encode(&t).unwrap();
            assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0);
            assert_eq!(bytes[9 + header_len], b'\n');
            let back = decode(&bytes, Device::Cpu).unwrap();
            assert_eq!(back.shape(), &[2, 3]);
            assert_eq!(back.dtype(), dtype);
            assert_eq!(host(&back), host(&t), "{dtype}");
        }
    }

    #[test]
    fn writes_numpys_exact_header() {
        let t = Tensor::from_f32(&[1., 2., 3.], &[3], Device::Cpu).unwrap();
        let bytes = encode(&t).unwrap();
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
        assert_eq!(bytes, npy(1, dict, &f32_le(&[1., 2., 3.])));
        let s = Tensor::from_f32(&[7.], &[], Device::Cpu).unwrap();
        let (h, data) = split(&encode(&s).unwrap()).map(|(h, d)| (h, d.to_vec())).unwrap();
        assert_eq!(h.shape, Vec::<usize>::new());
        assert_eq!(data, 7f32.to_le_bytes());
    }

    #[test]
    fn writes_views_in_logical_order() {
        let t = Tensor::from_f32(&[0., 1., 2., 3., 4., 5.], &[2, 3], Device::Cpu).unwrap();
        let tt = t.transpose(0, 1).unwrap();
        let back = decode(&encode(&tt).unwrap(), Device::Cpu).unwrap();
        assert_eq!(back.shape(), &[3, 2]);
        assert_eq!(host(&back), HostValues::Float(vec![0., 3., 1., 4., 2., 5.]));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let t = Tensor::from_f32(&[1., 2., 3., 4.], &[2, 2], Device::Cpu).unwrap();
        let bytes = encode(&t).unwrap();
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], Device::Cpu).is_err(), "prefix of {n} bytes");
        }
        assert!(decode(&bytes, Device::Cpu).is_ok());
    }

    #[test]
    fn corrupted_headers_are_errors() {
        let bad = [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3) ",
            "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
            "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }",
            "{'descr': '<f4', 'shape': (2,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999999,), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ((((((((((((2,),),),),),),),),),),), }",
            "{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }",
            "[1, 2]",
            "",
        ];
        for dict in bad {
            let bytes = npy(1, dict, &[0; 8]);
            assert!(decode(&bytes, Device::Cpu).is_err(), "{dict}");
        }
        let mut wrong_magic = npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        );
        wrong_magic[1] = b'X';
        assert!(decode(&wrong_magic, Device::Cpu).is_err());
        let mut wrong_version = npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        );
        wrong_version[6] = 9;
        assert!(decode(&wrong_version, Device::Cpu)
            .unwrap_err()
            .to_string()
            .contains("version 9.0"));
        let mut huge_len = npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &[0; 8],
        );
        huge_len[8] = 0xff;
        huge_len[9] = 0xff;
        assert!(decode(&huge_len, Device::Cpu)
            .unwrap_err()
            .to_string()
            .contains("truncated"));
    }

    #[test]
    fn random_bytes_never_panic() {
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let good = npy(1, dict, &f32_le(&[0.; 6]));
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % b.len();
                b[i] = (x >> 32) as u8;
            }
            let _ = decode(&b, Device::Cpu);
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("kiln-npy-test-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn dev_zero_is_refused_at_once() {
        let e = load(&FileAccess::default(), Path::new("/dev/zero"), Device::Cpu).unwrap_err();
        assert_eq!(
            e,
            Error::FileFormat {
                op: "load_npy",
                path: "/dev/zero".into(),
                msg: "not a .npy file (it does not start with \\x93NUMPY)".into()
            }
        );
    }

    #[test]
    fn more_than_64_dims_is_an_error() {
        let dims = "1, ".repeat(20_000);
        let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}");
        let e = decode(&npy(1, &dict, &f32_le(&[1.0])), Device::Cpu).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the array has 20000 dims; a kiln tensor may have at most 64"
        );
        let dims = "1, ".repeat(64);
        let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({dims}), }}");
        let t = decode(&npy(1, &dict, &f32_le(&[1.0])), Device::Cpu).unwrap();
        assert_eq!(t.shape().len(), 64);
    }

    #[test]
    fn a_key_given_twice_takes_its_last_value() {
        // NumPy reads the header as a Python dict literal, where the last value wins
        let dict = "{'descr': '<i4', 'fortran_order': True, 'shape': (9,), \
                    'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let t = decode(&npy(1, dict, &f32_le(&[1.5, 2.5])), Device::Cpu).unwrap();
        assert_eq!((t.dtype(), t.shape()), (DType::F32, &[2][..]));
        assert_eq!(host(&t), HostValues::Float(vec![1.5, 2.5]));
    }

    #[test]
    fn a_huge_declared_size_is_an_error_before_any_allocation() {
        // 8 TiB declared, 8 bytes present: the length check answers
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }";
        let e = decode(&npy(1, dict, &[0; 8]), Device::Cpu)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "truncated: shape [1099511627776] needs 8796093022208 bytes of data, the file holds 8"
        );
        // gzip has no length up front: the machine's memory answers
        let p = temp_file("huge.npy.gz", &gzip(&npy(1, dict, &[0; 8])));
        let e = load(&FileAccess::default(), &p, Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { op: "load_npy", .. }), "{e}");
        // ... or the budget
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }";
        let p = temp_file("big.npy.gz", &gzip(&npy(1, dict, &[0; 8])));
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let scope = budget.enter();
        let e = load(&FileAccess::default(), &p, Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit { op: "load_npy", .. }), "{e}");
        drop(scope);
        // within the budget, a short stream is truncated
        let e = load(&FileAccess::default(), &p, Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "big.npy.gz': truncated: shape [1000, 1000] needs 4000000 bytes of data, the file holds 8"
            ),
            "{e}"
        );
        assert_eq!(budget.in_use(), 0);
        for name in ["huge.npy.gz", "big.npy.gz"] {
            let _ = std::fs::remove_file(temp_file(name, &[]));
        }
    }

    #[test]
    fn reads_exactly_the_declared_data_from_an_endless_stream() {
        let dict = "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 2), }";
        let head = npy(1, dict, &[]);
        let mut endless = head.as_slice().chain(std::io::repeat(1));
        let t = read(&mut endless, None, Device::Cpu).unwrap();
        assert_eq!(host(&t), HostValues::Int(vec![257; 6]));
        let mut b = [0u8; 4];
        endless.read_exact(&mut b).unwrap();
        assert_eq!(b, [1; 4]);
    }

    #[test]
    fn loads_gzip_files_and_keeps_the_budget() {
        let t = Tensor::from_f32(&[1., 2., 3., 4.], &[2, 2], Device::Cpu).unwrap();
        let p = temp_file("t.npy.gz", &gzip(&encode(&t).unwrap()));
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let scope = budget.enter();
        let back = load(&FileAccess::default(), &p, Device::Cpu).unwrap();
        assert_eq!(budget.in_use(), 16 + Tensor::handle_bytes(2));
        assert_eq!(host(&back), host(&t));
        drop((back, scope));
        let p = temp_file("cut.npy.gz", &gzip(&encode(&t).unwrap())[..20]);
        let e = load(&FileAccess::default(), &p, Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a valid gzip stream"), "{e}");
        for name in ["t.npy.gz", "cut.npy.gz"] {
            let _ = std::fs::remove_file(temp_file(name, &[]));
        }
    }

    #[test]
    fn an_oversized_header_is_refused_unread() {
        let mut b = b"\x93NUMPY\x02\x00".to_vec();
        b.extend(u32::MAX.to_le_bytes());
        let e = decode(&b, Device::Cpu).unwrap_err().to_string();
        assert_eq!(
            e,
            "the header announces 4294967295 bytes, more than the 1048576 kiln reads"
        );
    }
}
