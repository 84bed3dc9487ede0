//! The safetensors format (named tensors, little-endian, C order) through the
//! `safetensors` crate. Every kiln dtype is written as itself (bool, u8, i32,
//! i64, f16, bf16, f32, f64); reading also accepts i8, i16, u16 (→ i32),
//! u32 and u64 (→ i64, values above `i64::MAX` refused). Other dtypes (fp8,
//! complex, ...) are a clear error. Device tensors are copied to the host
//! for saving.
//!
//! Loading streams the file: the header (at most 100 MB, the format's limit)
//! is read and validated first (the crate checks that the data offsets tile
//! the data and match each shape; here each tensor may have at most
//! [`MAX_DIMS`] dims), the declared sizes are checked against the file's
//! length and all the tensors together against the memory budget, and only
//! then is each tensor's data read, in file order.

use super::raw::{self, Endian, FileDType};
pub use super::Decode;
use super::{read_up_to, FileAccess};
use crate::core::error::{Error, Result};
use crate::core::shape::MAX_DIMS;
use crate::core::{memory, Device};
use crate::tensor::Tensor;
use safetensors::tensor::{Dtype, Metadata, TensorView, View};
use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

const OP: &str = "load_safetensors";
/// The largest header the format allows (the `safetensors` crate's limit).
const MAX_HEADER_LEN: u64 = 100_000_000;

/// Reads the safetensors file at `path`: its tensors by name, on `device`.
pub fn load(files: &FileAccess, path: &Path, device: Device) -> Result<Vec<(String, Tensor)>> {
    let mut src = files.open(OP, path, false)?;
    read(&mut src.reader, src.len, device).map_err(|e| e.into_error(OP, path))
}

/// Writes the named tensors to `path`.
pub fn save(files: &FileAccess, tensors: &[(String, Tensor)], path: &Path) -> Result<()> {
    let bytes = encode(tensors)?;
    files.write("save_safetensors", path, &bytes)
}

/// Decodes the bytes of a safetensors file into named tensors, sorted by name.
pub fn decode(bytes: &[u8], device: Device) -> std::result::Result<Vec<(String, Tensor)>, Decode> {
    read(&mut &bytes[..], Some(bytes.len() as u64), device)
}

/// One tensor to read: its name, element type, shape and element count.
struct Planned {
    name: String,
    dtype: FileDType,
    shape: Vec<usize>,
    numel: usize,
}

/// Reads a safetensors stream of `len` bytes (when known): the header
/// length and the header, then, once every declared tensor is checked
/// (dtype, at most [`MAX_DIMS`] dims, element counts, data offsets, the
/// file's length) and all of them together fit the memory budget, each
/// tensor's data in file order.
fn read(
    r: &mut (impl Read + ?Sized),
    len: Option<u64>,
    device: Device,
) -> std::result::Result<Vec<(String, Tensor)>, Decode> {
    let bad = |m: &str| Decode::Format(format!("not a valid safetensors file: {m}"));
    let mut n8 = [0u8; 8];
    if read_up_to(r, &mut n8)? < n8.len() {
        return Err(bad("header too small"));
    }
    let n = u64::from_le_bytes(n8);
    if n > MAX_HEADER_LEN {
        return Err(bad("header too large"));
    }
    if let Some(len) = len {
        let after = len.saturating_sub(8);
        if n > after {
            return Err(bad(&format!(
                "truncated: the header is {n} bytes, the file holds {after} after its length"
            )));
        }
    }
    // n <= MAX_HEADER_LEN, so it fits a usize
    let n = n as usize;
    memory::check_bytes(OP, n, true)?;
    let mut header = memory::try_zeroed_vec::<u8>(OP, n)?;
    let got = read_up_to(r, &mut header)?;
    if got < n {
        return Err(bad(&format!("truncated: the header is {n} bytes, {got} present")));
    }
    let text = std::str::from_utf8(&header).map_err(|e| bad(&format!("the header is not UTF-8: {e}")))?;
    // the crate checks that the data offsets tile the data section and
    // match each shape and dtype (with checked products)
    let meta: Metadata = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    drop(header);
    let data_len = meta.data_len();
    if let Some(len) = len {
        let have = len.saturating_sub(8 + n as u64);
        if have < data_len as u64 {
            return Err(bad(&format!(
                "truncated: the tensors need {data_len} bytes of data, the file holds {have}"
            )));
        }
        if have > data_len as u64 {
            return Err(bad(&format!(
                "{have} bytes of data follow the header, the tensors use {data_len}"
            )));
        }
    }
    let (plan, total) = plan(&meta)?;
    // all the tensors, plus the chunk being read or one tensor's device copy
    let extra = if device == Device::Cpu {
        data_len.min(super::CHUNK)
    } else {
        plan.iter()
            .map(|p| p.numel.saturating_mul(p.dtype.kiln().size_in_bytes()))
            .max()
            .unwrap_or(0)
    };
    memory::check_bytes(OP, total.saturating_add(extra), true)?;
    let mut out = Vec::with_capacity(plan.len());
    for p in plan {
        let storage = super::read_elements(OP, r, p.dtype, Endian::Little, p.numel, |have| {
            format!(
                "truncated: tensor '{}' needs {} bytes, the file holds {have}",
                p.name,
                p.numel.saturating_mul(p.dtype.size())
            )
        })?;
        let t = super::tensor_from_cpu(storage, &p.shape, device)?;
        out.push((p.name, t));
    }
    if len.is_none() && read_up_to(r, &mut [0u8; 1])? > 0 {
        return Err(bad("there are bytes after the last tensor's data"));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The tensors of `meta` in file order, checked for kiln, and the bytes of
/// host memory they take together.
fn plan(meta: &Metadata) -> std::result::Result<(Vec<Planned>, usize), Decode> {
    let mut plan = vec![];
    let mut total = 0usize;
    for name in meta.offset_keys() {
        let Some(info) = meta.info(&name) else {
            continue;
        };
        let dtype = file_dtype(info.dtype).ok_or_else(|| {
            Decode::Format(format!(
                "tensor '{name}' has dtype {:?}, which kiln cannot read",
                info.dtype
            ))
        })?;
        if info.shape.len() > MAX_DIMS {
            return Err(Decode::Format(format!(
                "tensor '{name}' has {} dims; a kiln tensor may have at most {MAX_DIMS}",
                info.shape.len()
            )));
        }
        let too_large = || Decode::Format(format!("tensor '{name}': shape {:?} is too large", info.shape));
        let numel =
            crate::core::shape::checked_numel("load_safetensors", &info.shape).map_err(|_| too_large())?;
        total = numel
            .checked_mul(dtype.kiln().size_in_bytes())
            .and_then(|b| b.checked_add(total))
            .ok_or_else(too_large)?;
        plan.push(Planned {
            shape: info.shape.clone(),
            name,
            dtype,
            numel,
        });
    }
    Ok((plan, total))
}

fn file_dtype(d: Dtype) -> Option<FileDType> {
    Some(match d {
        Dtype::BOOL => FileDType::Bool,
        Dtype::U8 => FileDType::U8,
        Dtype::I8 => FileDType::I8,
        Dtype::I16 => FileDType::I16,
        Dtype::U16 => FileDType::U16,
        Dtype::I32 => FileDType::I32,
        Dtype::U32 => FileDType::U32,
        Dtype::I64 => FileDType::I64,
        Dtype::U64 => FileDType::U64,
        Dtype::F16 => FileDType::F16,
        Dtype::BF16 => FileDType::BF16,
        Dtype::F32 => FileDType::F32,
        Dtype::F64 => FileDType::F64,
        _ => return None,
    })
}

fn st_dtype(d: FileDType) -> Dtype {
    match d {
        FileDType::Bool => Dtype::BOOL,
        FileDType::U8 => Dtype::U8,
        FileDType::I8 => Dtype::I8,
        FileDType::I16 => Dtype::I16,
        FileDType::U16 => Dtype::U16,
        FileDType::I32 => Dtype::I32,
        FileDType::U32 => Dtype::U32,
        FileDType::I64 => Dtype::I64,
        FileDType::U64 => Dtype::U64,
        FileDType::F16 => Dtype::F16,
        FileDType::BF16 => Dtype::BF16,
        FileDType::F32 => Dtype::F32,
        FileDType::F64 => Dtype::F64,
    }
}

/// One tensor's bytes as the crate's serializer wants them.
struct Bytes {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Bytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// The bytes of a safetensors file holding the named tensors.
pub fn encode(tensors: &[(String, Tensor)]) -> Result<Vec<u8>> {
    let mut prepared = Vec::with_capacity(tensors.len());
    for (name, t) in tensors {
        let data = raw::encode_le(&super::cpu_data(t)?);
        prepared.push((
            name.clone(),
            Bytes {
                dtype: st_dtype(FileDType::of(t.dtype())),
                shape: t.shape().to_vec(),
                data,
            },
        ));
    }
    // the crate checks each view's byte count against its shape
    for (name, b) in &prepared {
        TensorView::new(b.dtype, b.shape.clone(), &b.data)
            .map_err(|e| Error::invalid("save_safetensors", format!("tensor '{name}': {e}")))?;
    }
    safetensors::tensor::serialize(prepared.iter().map(|(n, b)| (n.as_str(), b)), None)
        .map_err(|e| Error::invalid("save_safetensors", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{DType, HostValues, MemoryBudget};
    use std::sync::Arc;

    /// A file with header `json` (padded to 8 bytes) and `data`.
    fn file(json: &str, data: &[u8]) -> Vec<u8> {
        let mut h = json.as_bytes().to_vec();
        while h.len() % 8 != 0 {
            h.push(b' ');
        }
        let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
        bytes.extend(&h);
        bytes.extend(data);
        bytes
    }

    fn format_error(r: std::result::Result<Vec<(String, Tensor)>, Decode>) -> String {
        match r {
            Err(Decode::Format(m)) => m,
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    #[test]
    fn round_trips_every_kiln_dtype() {
        let v = HostValues::Float(vec![0.0, 1.0, 2.0, 3.0, 4.5, 1.0]);
        let tensors: Vec<(String, Tensor)> = DType::ALL
            .iter()
            .map(|&d| {
                (
                    format!("t_{d}"),
                    Tensor::from_host(&v, &[3, 2], d, Device::Cpu).unwrap(),
                )
            })
            .collect();
        let back = decode(&encode(&tensors).unwrap(), Device::Cpu).unwrap();
        assert_eq!(back.len(), tensors.len());
        for (name, t) in &tensors {
            let (_, b) = back.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!((b.dtype(), b.shape()), (t.dtype(), t.shape()), "{name}");
            assert_eq!(b.to_host().unwrap(), t.to_host().unwrap(), "{name}");
        }
    }

    #[test]
    fn round_trips_scalars_empty_tensors_and_views() {
        let s = Tensor::from_f32(&[2.5], &[], Device::Cpu).unwrap();
        let e = Tensor::from_f32(&[], &[0, 3], Device::Cpu).unwrap();
        let m = Tensor::from_f32(&[0., 1., 2., 3., 4., 5.], &[2, 3], Device::Cpu).unwrap();
        let v = m.transpose(0, 1).unwrap();
        let named = vec![("s".to_string(), s), ("e".into(), e), ("v".into(), v)];
        let back = decode(&encode(&named).unwrap(), Device::Cpu).unwrap();
        let names: Vec<&str> = back.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["e", "s", "v"]);
        assert_eq!(back[0].1.shape(), &[0, 3]);
        assert_eq!(back[1].1.to_host().unwrap(), HostValues::Float(vec![2.5]));
        assert_eq!(back[2].1.shape(), &[3, 2]);
        assert_eq!(
            back[2].1.to_host().unwrap(),
            HostValues::Float(vec![0., 3., 1., 4., 2., 5.])
        );
    }

    #[test]
    fn reads_a_hand_written_file() {
        // header {"w":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}} padded to 8
        let mut h = br#"{"w":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}}"#.to_vec();
        while h.len() % 8 != 0 {
            h.push(b' ');
        }
        let mut bytes = (h.len() as u64).to_le_bytes().to_vec();
        bytes.extend(&h);
        bytes.extend([0xfe, 0xff, 0x05, 0x00]);
        let t = decode(&bytes, Device::Cpu).unwrap();
        assert_eq!(t[0].0, "w");
        assert_eq!(t[0].1.dtype(), DType::I32);
        assert_eq!(t[0].1.to_host().unwrap(), HostValues::Int(vec![-2, 5]));
    }

    #[test]
    fn truncated_and_corrupted_files_are_errors() {
        let t = Tensor::from_f32(&[1., 2., 3.], &[3], Device::Cpu).unwrap();
        let bytes = encode(&[("x".to_string(), t)]).unwrap();
        for n in 0..bytes.len() {
            assert!(decode(&bytes[..n], Device::Cpu).is_err(), "prefix of {n} bytes");
        }
        let mut x: u64 = 0x2545f4914f6cdd1d;
        for _ in 0..2000 {
            let mut b = bytes.clone();
            for _ in 0..3 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let i = (x as usize) % b.len();
                b[i] = (x >> 40) as u8;
            }
            let _ = decode(&b, Device::Cpu);
        }
        let mut h = br#"{"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}"#.to_vec();
        while h.len() % 8 != 0 {
            h.push(b' ');
        }
        let mut fp8 = (h.len() as u64).to_le_bytes().to_vec();
        fp8.extend(&h);
        fp8.extend([0, 0]);
        match decode(&fp8, Device::Cpu) {
            Err(Decode::Format(m)) => assert!(m.contains("F8_E4M3"), "{m}"),
            other => panic!("expected a format error, got {other:?}"),
        }
    }

    #[test]
    fn huge_declared_sizes_are_errors_before_any_allocation() {
        // 4 TiB declared, 8 bytes present: the file's length answers
        let json = r#"{"w":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,4398046511104]}}"#;
        let bytes = file(json, &[0; 8]);
        assert_eq!(
            format_error(decode(&bytes, Device::Cpu)),
            "not a valid safetensors file: truncated: the tensors need 4398046511104 bytes of data, the file holds 8"
        );
        // a stream has no length up front: the machine's memory answers
        let e = read(&mut bytes.as_slice(), None, Device::Cpu).unwrap_err();
        assert!(
            matches!(e, Decode::Kiln(Error::OutOfMemory { op: OP, .. })),
            "{e}"
        );
        // ... or the budget
        let json = r#"{"w":{"dtype":"F32","shape":[1000,1000],"data_offsets":[0,4000000]}}"#;
        let bytes = file(json, &[0; 8]);
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let scope = budget.enter();
        let e = read(&mut bytes.as_slice(), None, Device::Cpu).unwrap_err();
        assert!(
            matches!(e, Decode::Kiln(Error::MemoryLimit { op: OP, .. })),
            "{e}"
        );
        drop(scope);
        let e = read(&mut bytes.as_slice(), None, Device::Cpu)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "truncated: tensor 'w' needs 4000000 bytes, the file holds 8");
    }

    #[test]
    fn all_tensors_together_must_fit_the_budget() {
        let one = Tensor::zeros(&[150_000], Some(DType::F32), Device::Cpu).unwrap();
        let named = vec![("a".to_string(), one.clone()), ("b".to_string(), one)];
        let bytes = encode(&named).unwrap();
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let _scope = budget.enter();
        let e = decode(&bytes, Device::Cpu).unwrap_err();
        // refused as a whole, before the first tensor is built
        assert!(
            matches!(e, Decode::Kiln(Error::MemoryLimit { op: OP, .. })),
            "{e}"
        );
        assert_eq!(budget.in_use(), 0);
        let half = decode(&encode(&named[..1]).unwrap(), Device::Cpu).unwrap();
        assert_eq!(budget.in_use(), 600_000 + Tensor::handle_bytes(1));
        drop(half);
    }

    #[test]
    fn crafted_headers_are_errors_not_panics() {
        let dims = vec!["1"; 65].join(",");
        let too_many_dims = format!(r#"{{"w":{{"dtype":"F32","shape":[{dims}],"data_offsets":[0,4]}}}}"#);
        assert_eq!(
            format_error(decode(&file(&too_many_dims, &[0; 4]), Device::Cpu)),
            "tensor 'w' has 65 dims; a kiln tensor may have at most 64"
        );
        let bad = [
            // products that overflow
            r#"{"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}}"#,
            r#"{"w":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}}"#,
            // offsets that overlap, run backwards, leave gaps or lie about the size
            r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#,
            r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[4,0]}}"#,
            r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}}"#,
            r#"{"w":{"dtype":"U8","shape":[3],"data_offsets":[0,4]}}"#,
            r#"{"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,4]}}"#,
            r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]}}"#,
            r#"{"w":{"dtype":"Q9","shape":[4],"data_offsets":[0,4]}}"#,
            r#"{"w":[1,2]}"#,
            r#"[]"#,
            r#"{"#,
        ];
        for json in bad {
            let e = format_error(decode(&file(json, &[0; 8]), Device::Cpu));
            assert!(e.starts_with("not a valid safetensors file"), "{json}: {e}");
        }
        // the header length past the end, and bytes after the data
        let mut short = file(
            r#"{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#,
            &[1, 2, 3, 4],
        );
        assert!(decode(&short, Device::Cpu).is_ok());
        short.push(9);
        assert_eq!(
            format_error(decode(&short, Device::Cpu)),
            "not a valid safetensors file: 5 bytes of data follow the header, the tensors use 4"
        );
        let e = read(&mut short.as_slice(), None, Device::Cpu)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "not a valid safetensors file: there are bytes after the last tensor's data"
        );
        short[0] = 200;
        assert!(format_error(decode(&short, Device::Cpu)).contains("truncated: the header is 200 bytes"));
    }

    #[test]
    fn dev_zero_and_missing_files_are_errors() {
        let files = FileAccess::default();
        let e = load(&files, Path::new("/dev/zero"), Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("load_safetensors: '/dev/zero': not a valid safetensors file"),
            "{e}"
        );
        let e = load(&files, Path::new("/no/such.safetensors"), Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::FileAccess { .. }), "{e}");
    }
}
