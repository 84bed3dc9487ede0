//! IDX files, the format of MNIST and Fashion-MNIST (`.gz` too): a 4-byte
//! magic (two zero bytes, an element type code, the rank), the dims as
//! big-endian u32, then the elements, big-endian, row-major. Read with the
//! same checks as every loader here: rank and sizes against the file's
//! length (when known) and the memory budget before any data is read.

use super::raw::{Endian, FileDType};
use super::{Decode, FileAccess};
use crate::core::error::Result;
use crate::core::{memory, Device};
use crate::tensor::Tensor;
use std::io::Read;
use std::path::Path;

const OP: &str = "load_idx";

/// Reads the IDX file at `path` (gzip-compressed too) into a tensor on
/// `device`: u8 data as u8, i8/i16 as i32, i32, f32 and f64 as themselves.
pub fn load(files: &FileAccess, path: &Path, device: Device) -> Result<Tensor> {
    let mut src = files.open(OP, path, true)?;
    read(&mut src.reader, src.len, device).map_err(|e| e.into_error(OP, path))
}

/// Decodes the bytes of an IDX file.
pub fn decode(bytes: &[u8], device: Device) -> std::result::Result<Tensor, Decode> {
    read(&mut &bytes[..], Some(bytes.len() as u64), device)
}

/// The element type of an IDX type code.
fn file_dtype(code: u8) -> Option<FileDType> {
    Some(match code {
        0x08 => FileDType::U8,
        0x09 => FileDType::I8,
        0x0B => FileDType::I16,
        0x0C => FileDType::I32,
        0x0D => FileDType::F32,
        0x0E => FileDType::F64,
        _ => return None,
    })
}

fn read(
    r: &mut (impl Read + ?Sized),
    len: Option<u64>,
    device: Device,
) -> std::result::Result<Tensor, Decode> {
    let mut magic = [0u8; 4];
    let got = super::read_up_to(r, &mut magic)?;
    if got < 4 || magic[0] != 0 || magic[1] != 0 {
        return Err(Decode::Format(
            "not an IDX file (it must start with two zero bytes, a type code and the rank)".into(),
        ));
    }
    let dtype = file_dtype(magic[2]).ok_or_else(|| {
        Decode::Format(format!(
            "unknown IDX element type code 0x{:02X} (expected 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32 or 0x0E f64)",
            magic[2]
        ))
    })?;
    let rank = magic[3] as usize;
    if rank == 0 || rank > crate::core::shape::MAX_DIMS {
        return Err(Decode::Format(format!(
            "rank {rank} is not between 1 and {}",
            crate::core::shape::MAX_DIMS
        )));
    }
    let mut dims = vec![0u8; 4 * rank];
    if super::read_up_to(r, &mut dims)? < dims.len() {
        return Err(Decode::Format(format!(
            "truncated header: {rank} dims need {} bytes",
            4 * rank
        )));
    }
    let shape: Vec<usize> = dims
        .chunks(4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    let too_large = || Decode::Format(format!("shape {shape:?} is too large"));
    let numel = crate::core::shape::checked_numel(OP, &shape).map_err(|_| too_large())?;
    let need = numel.checked_mul(dtype.size()).ok_or_else(too_large)?;
    let header = 4 + 4 * rank as u64;
    let truncated =
        |have: u64| format!("truncated: shape {shape:?} needs {need} bytes of data, the file holds {have}");
    if let Some(len) = len {
        let have = len.saturating_sub(header);
        if have < need as u64 {
            return Err(Decode::Format(truncated(have)));
        }
        if have > need as u64 {
            return Err(Decode::Format(format!(
                "{} bytes after the data of shape {shape:?} (a wrong header?)",
                have - need as u64
            )));
        }
    }
    let kiln = dtype.kiln();
    crate::core::shape::check_alloc(OP, &shape, kiln)?;
    let tensor_bytes = numel.saturating_mul(kiln.size_in_bytes());
    let extra = if device == Device::Cpu {
        need.min(super::CHUNK)
    } else {
        tensor_bytes
    };
    memory::check_bytes(OP, tensor_bytes.saturating_add(extra), true)?;
    let storage = super::read_elements(OP, r, dtype, Endian::Big, numel, |have| truncated(have as u64))?;
    if len.is_none() {
        // a compressed stream: its length shows only at the end
        let mut probe = [0u8; 1];
        if super::read_up_to(r, &mut probe)? > 0 {
            return Err(Decode::Format(format!(
                "bytes after the data of shape {shape:?} (a wrong header?)"
            )));
        }
    }
    Ok(super::tensor_from_cpu(storage, &shape, device)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(code: u8, dims: &[u32], data: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, code, dims.len() as u8];
        for d in dims {
            b.extend(d.to_be_bytes());
        }
        b.extend(data);
        b
    }

    #[test]
    fn reads_u8_and_big_endian_floats() {
        let t = decode(&file(0x08, &[2, 3], &[1, 2, 3, 4, 5, 255]), Device::Cpu).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.dtype(), crate::DType::U8);
        assert_eq!(t.to_vec::<u8>().unwrap(), vec![1, 2, 3, 4, 5, 255]);
        let mut data = Vec::new();
        for v in [1.5f32, -2.0] {
            data.extend(v.to_be_bytes());
        }
        let t = decode(&file(0x0D, &[2], &data), Device::Cpu).unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
        let t = decode(&file(0x0B, &[1], &(-300i16).to_be_bytes()), Device::Cpu).unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![-300]);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let err = |bytes: &[u8]| {
            decode(bytes, Device::Cpu)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err(b"\x1f\x8b\x08\x00").contains("not an IDX file"));
        assert!(err(&file(0x07, &[1], &[0])).contains("unknown IDX element type code 0x07"));
        assert!(err(&[0, 0, 8, 0]).contains("rank 0"));
        assert!(err(&[0, 0, 8, 2, 0, 0]).contains("truncated header"));
        assert!(err(&file(0x08, &[2, 2], &[1, 2, 3]))
            .contains("truncated: shape [2, 2] needs 4 bytes of data, the file holds 3"));
        assert!(err(&file(0x08, &[2], &[1, 2, 3])).contains("1 bytes after the data"));
        assert!(
            err(&file(0x0C, &[u32::MAX, u32::MAX, u32::MAX], &[])).contains("too large")
                || err(&file(0x0C, &[u32::MAX, u32::MAX, u32::MAX], &[])).contains("truncated")
        );
    }
}
