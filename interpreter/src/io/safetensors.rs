//! The safetensors format (named tensors, little-endian, C order) through the
//! `safetensors` crate. Every kiln dtype is written as itself (bool, u8, i32,
//! i64, f16, bf16, f32, f64); reading also accepts i8, i16, u16 (→ i32),
//! u32 and u64 (→ i64, values above `i64::MAX` refused). Other dtypes (fp8,
//! complex, ...) are a clear error. Device tensors are copied to the host
//! for saving.

use super::raw::{self, Endian, FileDType};
use super::{format_error, FileAccess};
use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};
use safetensors::tensor::{Dtype, TensorView, View};
use std::borrow::Cow;
use std::path::Path;

/// Reads the safetensors file at `path`: its tensors by name, on `device`.
pub fn load(files: &FileAccess, path: &Path, device: Device) -> Result<Vec<(String, Tensor)>> {
    let bytes = files.read("load_safetensors", path)?;
    decode(&bytes, device).map_err(|e| match e {
        Decode::Format(msg) => format_error("load_safetensors", path, msg),
        Decode::Kiln(e) => e,
    })
}

/// Writes the named tensors to `path`.
pub fn save(files: &FileAccess, tensors: &[(String, Tensor)], path: &Path) -> Result<()> {
    let bytes = encode(tensors)?;
    files.write("save_safetensors", path, &bytes)
}

/// Why decoding failed: the file, or kiln (a device error).
#[derive(Debug)]
pub enum Decode {
    /// The bytes are not a valid safetensors file.
    Format(String),
    /// Building the tensor failed.
    Kiln(Error),
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

/// Decodes the bytes of a safetensors file into named tensors, sorted by name.
pub fn decode(bytes: &[u8], device: Device) -> std::result::Result<Vec<(String, Tensor)>, Decode> {
    let st = safetensors::SafeTensors::deserialize(bytes)
        .map_err(|e| Decode::Format(format!("not a valid safetensors file: {e}")))?;
    let mut out = vec![];
    for (name, view) in st.iter() {
        let fd = file_dtype(view.dtype()).ok_or_else(|| {
            Decode::Format(format!(
                "tensor '{name}' has dtype {:?}, which kiln cannot read",
                view.dtype()
            ))
        })?;
        let storage = raw::decode(view.data(), fd, Endian::Little)
            .map_err(|m| Decode::Format(format!("tensor '{name}': {m}")))?;
        let t = super::tensor_from_cpu(storage, view.shape(), device).map_err(Decode::Kiln)?;
        out.push((name.to_string(), t));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
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
    use crate::tensor::{DType, HostValues};

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
}
