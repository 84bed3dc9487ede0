//! Reading and writing tensors in file formats, independent of Rhai:
//! [`csv`] (numeric tables, optionally gzip-compressed), [`npy`] (NumPy's
//! `.npy`), [`idx`] (MNIST's IDX), [`safetensors`] (named tensors), over the element codecs in
//! [`raw`]. Every file access of this layer goes through one [`FileAccess`],
//! so an embedder can switch file I/O off in one place. Loaders build CPU
//! tensors and move them to the device asked for; savers copy device
//! tensors to the host first.
//!
//! Loaders treat files as untrusted. None reads a whole file into memory:
//! each streams it, reads its magic bytes and a bounded header first, checks
//! the sizes the header declares (rank, element counts, bytes) against the
//! file's length where it is known and against the memory budget entered on
//! this thread ([`crate::core::memory`]), and only then reads exactly the
//! bytes promised, into fallibly allocated storage. Text and decompressed
//! streams, whose size is not known up front, are checked as they grow, so an
//! endless input or a decompression bomb stops early with an error.

pub mod csv;
pub mod idx;
pub mod npy;
pub mod raw;
pub mod safetensors;
pub mod text;

use crate::backend::{CpuStorage, Storage};
use crate::core::error::{Error, Result};
use crate::core::{memory, Device};
use crate::tensor::Tensor;
use raw::{Endian, FileDType};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
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

    /// Opens the file at `path` for streaming. With `gunzip`, a gzip stream
    /// (by its magic bytes, or a `.gz` name) is decompressed as it is read.
    pub(crate) fn open(&self, op: &'static str, path: &Path, gunzip: bool) -> Result<Source> {
        self.check(op)?;
        let access = |e| access_error(op, path, e);
        let mut file = File::open(path).map_err(access)?;
        let meta = file.metadata().map_err(access)?;
        // devices, pipes and the like have no length to trust
        let len = meta.is_file().then_some(meta.len());
        if !gunzip {
            return Ok(Source {
                reader: Box::new(BufReader::new(file)),
                len,
            });
        }
        let mut magic = [0u8; 2];
        let n = read_up_to(&mut file, &mut magic).map_err(access)?;
        let named_gz = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
        let whole = io::Cursor::new(magic).take(n as u64).chain(file);
        if !is_gzip(&magic[..n]) && !named_gz {
            return Ok(Source {
                reader: Box::new(BufReader::new(whole)),
                len,
            });
        }
        Ok(Source {
            reader: Box::new(BufReader::new(Gunzip(flate2::read::MultiGzDecoder::new(whole)))),
            len: None,
        })
    }

    /// Creates or replaces the file at `path` with `bytes`.
    pub fn write(&self, op: &'static str, path: &Path, bytes: &[u8]) -> Result<()> {
        self.check(op)?;
        std::fs::write(path, bytes).map_err(|e| access_error(op, path, e))
    }
}

/// A file opened for loading.
pub(crate) struct Source {
    /// Its bytes (decompressed when it is gzip).
    pub reader: Box<dyn BufRead>,
    /// How many bytes `reader` holds, when known (a regular, uncompressed file).
    pub len: Option<u64>,
}

/// A gzip decoder whose malformed-stream errors say so.
struct Gunzip<R: Read>(flate2::read::MultiGzDecoder<R>);

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
                io::Error::other(Decode::Format(format!("not a valid gzip stream: {e}")))
            }
            _ => e,
        })
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

/// Why decoding a file failed.
#[derive(Debug)]
pub enum Decode {
    /// The bytes do not follow the format; the message says how.
    Format(String),
    /// A kiln error: the memory budget or the machine's memory, or the device.
    Kiln(Error),
    /// Reading the bytes failed.
    Io(io::Error),
}

impl Decode {
    /// The error for the file at `path`, read by `op`.
    pub(crate) fn into_error(self, op: &'static str, path: &Path) -> Error {
        match self {
            Decode::Format(msg) => format_error(op, path, msg),
            Decode::Kiln(e) => e,
            Decode::Io(e) => access_error(op, path, e),
        }
    }
}

impl std::fmt::Display for Decode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decode::Format(m) => f.write_str(m),
            Decode::Kiln(e) => e.fmt(f),
            Decode::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Decode {}

impl From<Error> for Decode {
    fn from(e: Error) -> Decode {
        Decode::Kiln(e)
    }
}

impl From<String> for Decode {
    fn from(msg: String) -> Decode {
        Decode::Format(msg)
    }
}

impl From<io::Error> for Decode {
    /// A read error; one that carries a [`Decode`] (raised by a checking
    /// reader under a parser) gives it back.
    fn from(e: io::Error) -> Decode {
        if !e.get_ref().is_some_and(|inner| inner.is::<Decode>()) {
            return Decode::Io(e);
        }
        match e.into_inner().map(|inner| inner.downcast::<Decode>()) {
            Some(Ok(d)) => *d,
            Some(Err(inner)) => Decode::Io(io::Error::other(inner)),
            None => Decode::Format("unreadable input".into()),
        }
    }
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
pub(crate) fn read_up_to(r: &mut (impl Read + ?Sized), buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Bytes of file data read and decoded at a time.
const CHUNK: usize = 64 << 10;

/// Reads exactly `numel` elements of `dtype` from `r` into a new host
/// storage of `dtype.kiln()`, a chunk at a time; `truncated` words the error
/// when the input ends early, given the bytes that were there. The caller
/// has checked the storage's size against the memory budget.
pub(crate) fn read_elements(
    op: &'static str,
    r: &mut (impl Read + ?Sized),
    dtype: FileDType,
    endian: Endian,
    numel: usize,
    truncated: impl FnOnce(usize) -> String,
) -> std::result::Result<CpuStorage, Decode> {
    let total = numel
        .checked_mul(dtype.size())
        .ok_or_else(|| Decode::Format(format!("{numel} elements are more bytes than can be addressed")))?;
    let mut out = raw::with_capacity(op, dtype.kiln(), numel)?;
    // element sizes are powers of two up to 8, so a chunk holds whole elements
    let mut buf = memory::try_zeroed_vec::<u8>(op, total.min(CHUNK))?;
    let mut done = 0;
    while done < total {
        let want = (total - done).min(buf.len());
        let got = read_up_to(r, &mut buf[..want])?;
        if got < want {
            return Err(Decode::Format(truncated(done + got)));
        }
        raw::decode_into(&mut out, &buf[..want], dtype, endian)?;
        done += want;
    }
    Ok(out)
}

/// Checks memory that a loader's intermediates grow into (see
/// [`memory::check_bytes`]) with some headroom, so that the check, which may
/// read `/proc`, runs once per eighth of growth rather than on every step.
#[derive(Debug)]
pub(crate) struct Gauge {
    op: &'static str,
    checked: usize,
}

impl Gauge {
    /// Nothing checked yet, for `op`.
    pub(crate) fn new(op: &'static str) -> Gauge {
        Gauge { op, checked: 0 }
    }

    /// Fails unless `bytes` of host memory in all fit the budget and the machine.
    pub(crate) fn need(&mut self, bytes: usize) -> Result<()> {
        if bytes <= self.checked {
            return Ok(());
        }
        let roomy = bytes.saturating_add(bytes / 8).max(1 << 16);
        if memory::check_bytes(self.op, roomy, true).is_ok() {
            self.checked = roomy;
            return Ok(());
        }
        memory::check_bytes(self.op, bytes, true)?;
        self.checked = bytes;
        Ok(())
    }
}

/// A tensor of `shape` over `storage` (whose length must match), on `device`.
pub(crate) fn tensor_from_cpu(storage: CpuStorage, shape: &[usize], device: Device) -> Result<Tensor> {
    let n = crate::core::shape::checked_numel("load", shape)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::MemoryBudget;
    use std::sync::Arc;

    #[test]
    fn a_decode_error_survives_a_trip_through_io_error() {
        let e = io::Error::other(Decode::Format("bad".into()));
        assert!(matches!(Decode::from(e), Decode::Format(m) if m == "bad"));
        let e = io::Error::other(Decode::Kiln(Error::FilesDisabled { op: "t" }));
        assert!(matches!(
            Decode::from(e),
            Decode::Kiln(Error::FilesDisabled { op: "t" })
        ));
        let e = Decode::from(io::Error::new(io::ErrorKind::PermissionDenied, "no"));
        assert_eq!(
            e.into_error("t", Path::new("f")),
            Error::FileAccess {
                op: "t",
                path: "f".into(),
                msg: "permission denied".into()
            }
        );
    }

    #[test]
    fn read_elements_reads_exactly_what_is_asked() {
        let bytes: Vec<u8> = (0..200_000u32).flat_map(|x| x.to_le_bytes()).collect();
        let mut r = bytes.as_slice();
        let s = read_elements("t", &mut r, FileDType::U32, Endian::Little, 100_000, |_| {
            String::new()
        })
        .unwrap();
        match s {
            CpuStorage::I64(v) => assert_eq!((v.len(), v[99_999]), (100_000, 99_999)),
            other => panic!("{other:?}"),
        }
        assert_eq!(r.len(), 400_000);
        let e = read_elements("t", &mut r, FileDType::U32, Endian::Little, 100_001, |have| {
            format!("only {have}")
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "only 400000");
    }

    #[test]
    fn the_gauge_checks_the_budget_with_headroom() {
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let _scope = budget.enter();
        let mut g = Gauge::new("t");
        g.need(100).unwrap();
        assert_eq!(g.checked, 1 << 16);
        g.need(800_000).unwrap();
        assert_eq!(g.checked, 900_000);
        // no room for the headroom: the exact amount
        g.need(1 << 20).unwrap();
        assert_eq!(g.checked, 1 << 20);
        let e = g.need((1 << 20) + 1).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit { op: "t", .. }), "{e}");
    }

    #[test]
    fn open_sniffs_gzip_and_reports_lengths() {
        let files = FileAccess::default();
        let p = std::env::temp_dir().join(format!("kiln-io-open-{}.bin", std::process::id()));
        std::fs::write(&p, b"\x1f\x8bnot really").unwrap();
        let mut src = files.open("t", &p, false).unwrap();
        assert_eq!(src.len, Some(12));
        let mut all = vec![];
        src.reader.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"\x1f\x8bnot really");
        let mut src = files.open("t", &p, true).unwrap();
        assert_eq!(src.len, None);
        let e = Decode::from(src.reader.read_to_end(&mut all).unwrap_err());
        assert!(e.to_string().starts_with("not a valid gzip stream"), "{e}");
        std::fs::write(&p, b"x").unwrap();
        let mut src = files.open("t", &p, true).unwrap();
        all.clear();
        src.reader.read_to_end(&mut all).unwrap();
        assert_eq!((all.as_slice(), src.len), (&b"x"[..], Some(1)));
        std::fs::remove_file(&p).unwrap();
        let e = files.open("t", &p, true).err().map(|e| e.to_string());
        assert_eq!(
            e,
            Some(format!(
                "t: cannot access '{}': no such file or directory",
                p.display()
            ))
        );
        assert_eq!(
            FileAccess::new(false).open("t", &p, true).err(),
            Some(Error::FilesDisabled { op: "t" })
        );
    }
}
