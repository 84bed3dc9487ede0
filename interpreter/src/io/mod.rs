//! Reading and writing tensors in file formats, independent of Rhai:
//! [`csv`] (numeric tables, optionally gzip-compressed), [`npy`] (NumPy's
//! `.npy`), [`safetensors`] (named tensors), over the element codecs in
//! [`raw`]. Every file access of this layer goes through one [`FileAccess`],
//! so an embedder can switch file I/O off in one place. Loaders build CPU
//! tensors and move them to the device asked for; savers copy device
//! tensors to the host first.

pub mod csv;
pub mod npy;
pub mod raw;
pub mod safetensors;

use crate::backend::{CpuStorage, Storage};
use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The gate every file read and write of this layer passes: it can be
/// switched off, after which each access fails with [`Error::FilesDisabled`].
#[derive(Debug)]
pub struct FileAccess {
    allowed: AtomicBool,
}

impl Default for FileAccess {
    /// File access allowed.
    fn default() -> Self {
        FileAccess::new(true)
    }
}

impl FileAccess {
    /// A gate that starts allowed or not.
    pub fn new(allowed: bool) -> Self {
        FileAccess {
            allowed: AtomicBool::new(allowed),
        }
    }

    /// True when files may be read and written.
    pub fn allowed(&self) -> bool {
        self.allowed.load(Ordering::Relaxed)
    }

    /// Allows or forbids file access from now on.
    pub fn set_allowed(&self, allowed: bool) {
        self.allowed.store(allowed, Ordering::Relaxed);
    }

    fn check(&self, op: &'static str) -> Result<()> {
        if self.allowed() {
            Ok(())
        } else {
            Err(Error::FilesDisabled { op })
        }
    }

    /// The whole contents of the file at `path`.
    pub fn read(&self, op: &'static str, path: &Path) -> Result<Vec<u8>> {
        self.check(op)?;
        std::fs::read(path).map_err(|e| access_error(op, path, e))
    }

    /// Creates or replaces the file at `path` with `bytes`.
    pub fn write(&self, op: &'static str, path: &Path, bytes: &[u8]) -> Result<()> {
        self.check(op)?;
        std::fs::write(path, bytes).map_err(|e| access_error(op, path, e))
    }
}

fn access_error(op: &'static str, path: &Path, e: std::io::Error) -> Error {
    let msg = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    Error::FileAccess {
        op,
        path: path.display().to_string(),
        msg,
    }
}

/// An [`Error::FileFormat`] for `path`.
pub(crate) fn format_error(op: &'static str, path: &Path, msg: impl Into<String>) -> Error {
    Error::FileFormat {
        op,
        path: path.display().to_string(),
        msg: msg.into(),
    }
}

/// True for bytes that start like a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// `bytes` decompressed when they are gzip (by magic bytes, or a `.gz`
/// name), else unchanged.
pub(crate) fn gunzip_if_compressed(op: &'static str, path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>> {
    let named_gz = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if !is_gzip(&bytes) && !named_gz {
        return Ok(bytes);
    }
    let mut out = vec![];
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| format_error(op, path, format!("not a valid gzip stream: {e}")))?;
    Ok(out)
}

/// A tensor of `shape` over `storage` (whose length must match), on `device`.
pub(crate) fn tensor_from_cpu(storage: CpuStorage, shape: &[usize], device: Device) -> Result<Tensor> {
    let n = crate::tensor::shape::checked_numel("load", shape)?;
    if storage.len() != n {
        return Err(Error::shape(
            "load",
            format!("{} values cannot fill shape {shape:?}", storage.len()),
        ));
    }
    Tensor::from_storage("load", Storage::Cpu(storage), shape)?.to_device(device)
}

/// The elements of `t` in row-major order, as a host storage of its dtype
/// (a device tensor is copied to the host).
pub(crate) fn cpu_data(t: &Tensor) -> Result<CpuStorage> {
    let t = t.to_device(Device::Cpu)?.dense()?;
    let s = t.storage();
    match &*s {
        Storage::Cpu(c) => Ok(c.clone()),
        Storage::Cuda(_) => Err(Error::invalid(
            "save",
            "internal: tensor not on the host after a copy",
        )),
    }
}
