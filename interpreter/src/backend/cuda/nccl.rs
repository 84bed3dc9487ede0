//! NCCL collectives on device memory: a [`Communicator`] (one per process
//! group, made from a unique id that rank 0 creates and the group hands to
//! every rank) and in-place all-reduce, broadcast and all-gather on element
//! ranges of [`CudaStorage`]. Every call is queued on the calling thread's
//! stream (the engine's stream, or a stream the caller entered) and returns at
//! once, like every other op; buffers hand off between streams as usual.
//!
//! `libnccl.so` is loaded at the first use, through cudarc's bindings;
//! [`is_available`] says whether it can be.

use super::runtime::CudaRuntime;
use super::CudaStorage;
use crate::core::collective::ReduceOp;
use crate::core::error::{Error, Result};
use crate::core::DType;
use cudarc::nccl::{result, sys};
use std::ffi::CStr;
use std::mem::MaybeUninit;

/// The size of an NCCL unique id, in bytes.
pub const ID_BYTES: usize = 128;

/// True when the NCCL library can be loaded (looked up once).
pub fn is_available() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: loading the library runs its initialisers, which using NCCL at
    // all requires.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// The NCCL version, as `major.minor.patch`.
pub fn version() -> Result<String> {
    loaded("version")?;
    let v = result::get_nccl_version().map_err(|e| nccl_error("version", &e, None))?;
    Ok(format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100))
}

/// A new unique id (rank 0 makes it; every rank of the group needs it).
pub fn unique_id() -> Result<[u8; ID_BYTES]> {
    loaded("init")?;
    let id = result::get_uniqueid().map_err(|e| nccl_error("init", &e, None))?;
    Ok(id.internal.map(|c| c as u8))
}

/// An NCCL communicator of one rank on this process's CUDA device.
#[derive(Debug)]
pub struct Communicator {
    comm: sys::ncclComm_t,
    rank: usize,
    world_size: usize,
}

// SAFETY: an NCCL communicator may be used from any thread; callers serialise
// calls on one communicator (the process group holds it behind a mutex).
unsafe impl Send for Communicator {}
// SAFETY: see above; `&Communicator` only reads the handle.
unsafe impl Sync for Communicator {}

impl Drop for Communicator {
    fn drop(&mut self) {
        // SAFETY: the handle came from ncclCommInitRank and is destroyed once.
        let _ = unsafe { result::comm_destroy(self.comm) };
    }
}

/// The NCCL element type of `dtype` (bools travel as bytes).
fn data_type(dtype: DType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as T;
    match dtype {
        DType::Bool | DType::U8 => T::ncclUint8,
        DType::I32 => T::ncclInt32,
        DType::I64 => T::ncclInt64,
        DType::F16 => T::ncclFloat16,
        DType::BF16 => T::ncclBfloat16,
        DType::F32 => T::ncclFloat32,
        DType::F64 => T::ncclFloat64,
    }
}

/// The NCCL reduction of `op` on `dtype`: the mean is NCCL's average; on bools
/// a sum (or max) is a logical or and a min a logical and, as on the host.
fn red_op(op: ReduceOp, dtype: DType) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as R;
    match (op, dtype) {
        (ReduceOp::Sum, DType::Bool) | (ReduceOp::Max, _) => R::ncclMax,
        (ReduceOp::Sum, _) => R::ncclSum,
        (ReduceOp::Mean, _) => R::ncclAvg,
        (ReduceOp::Min, _) => R::ncclMin,
    }
}

impl Communicator {
    /// Joins the communicator of `world_size` ranks named by `id` as `rank`.
    /// Every rank must call this with the same id; it returns when all have.
    pub fn new(id: [u8; ID_BYTES], rank: usize, world_size: usize) -> Result<Communicator> {
        loaded("init")?;
        CudaRuntime::get()?;
        let bad = |what: &str| Error::Distributed {
            op: "init",
            msg: format!("{what} does not fit NCCL's int"),
        };
        let nranks = i32::try_from(world_size).map_err(|_| bad("the world size"))?;
        let r = i32::try_from(rank).map_err(|_| bad("the rank"))?;
        let id = sys::ncclUniqueId {
            internal: id.map(|b| b as std::ffi::c_char),
        };
        let mut comm = MaybeUninit::uninit();
        // SAFETY: `comm` is written by NCCL on success; the id is a plain value.
        unsafe { result::comm_init_rank(comm.as_mut_ptr(), nranks, id, r) }
            .map_err(|e| nccl_error("init", &e, None))?;
        // SAFETY: initialised by the successful call above.
        let comm = unsafe { comm.assume_init() };
        Ok(Communicator {
            comm,
            rank,
            world_size,
        })
    }

    /// This communicator's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// Reduces elements `start..start + count` of `buf` over all ranks with
    /// `op`, in place.
    pub fn all_reduce(&self, buf: &CudaStorage, start: usize, count: usize, op: ReduceOp) -> Result<()> {
        let rt = CudaRuntime::get()?;
        let p = range(buf, start, count)?;
        // SAFETY: `p` addresses `count` elements of `buf` (checked by `range`),
        // which stays alive until the work is done (the allocator reuses it only
        // for later work on the same stream, or after a handoff).
        unsafe {
            result::all_reduce(
                p as _,
                p as _,
                count,
                data_type(buf.dtype()),
                red_op(op, buf.dtype()),
                self.comm,
                rt.cu_stream() as _,
            )
        }
        .map(drop)
        .map_err(|e| nccl_error("all_reduce", &e, Some(self.comm)))
    }

    /// Copies rank `root`'s elements `start..start + count` of `buf` into
    /// every rank's, in place.
    pub fn broadcast(&self, buf: &CudaStorage, start: usize, count: usize, root: usize) -> Result<()> {
        let rt = CudaRuntime::get()?;
        let p = range(buf, start, count)?;
        let root = i32::try_from(root).map_err(|_| Error::Distributed {
            op: "broadcast",
            msg: format!("root {root} does not fit NCCL's int"),
        })?;
        // SAFETY: as in `all_reduce`.
        unsafe {
            result::broadcast(
                p as _,
                p as _,
                count,
                data_type(buf.dtype()),
                root,
                self.comm,
                rt.cu_stream() as _,
            )
        }
        .map(drop)
        .map_err(|e| nccl_error("broadcast", &e, Some(self.comm)))
    }

    /// Every rank's elements `start..start + count` of `buf`, one after the
    /// other in rank order, in new storage of `count * world_size` elements.
    pub fn all_gather(&self, buf: &CudaStorage, start: usize, count: usize) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out = CudaStorage::alloc(buf.dtype(), count * self.world_size)?;
        let p = range(buf, start, count)?;
        let q = range(&out, 0, out.len())?;
        // SAFETY: `p` addresses `count` elements and `q` `count * world_size`,
        // both alive until the work is done.
        unsafe {
            result::all_gather(
                p as _,
                q as _,
                count,
                data_type(buf.dtype()),
                self.comm,
                rt.cu_stream() as _,
            )
        }
        .map_err(|e| nccl_error("all_gather", &e, Some(self.comm)))?;
        Ok(out)
    }
}

/// The device address of elements `start..start + count` of `buf`, for work
/// about to be queued on the calling thread's stream.
fn range(buf: &CudaStorage, start: usize, count: usize) -> Result<cudarc::driver::sys::CUdeviceptr> {
    if start.checked_add(count).is_none_or(|end| end > buf.len()) {
        return Err(Error::invalid(
            "dist",
            format!(
                "internal: elements {start}..{} outside a buffer of {}",
                start.saturating_add(count),
                buf.len()
            ),
        ));
    }
    Ok(buf.ptr() + (start * buf.dtype().size_in_bytes()) as u64)
}

/// Fails unless the NCCL library can be loaded (cudarc would panic).
fn loaded(op: &'static str) -> Result<()> {
    if is_available() {
        Ok(())
    } else {
        Err(Error::Distributed {
            op,
            msg: "the NCCL library (libnccl.so) was not found; install NCCL or set KILN_DIST_BACKEND=host"
                .into(),
        })
    }
}

/// An NCCL failure as a typed error, with NCCL's own words.
fn nccl_error(op: &'static str, e: &result::NcclError, comm: Option<sys::ncclComm_t>) -> Error {
    // SAFETY: NCCL returns static, NUL-terminated strings (or null).
    let text = |p: *const std::ffi::c_char| {
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    // SAFETY: plain lookups in a loaded library.
    let what = text(unsafe { sys::ncclGetErrorString(e.0) }).unwrap_or_else(|| format!("{:?}", e.0));
    let last = comm
        .and_then(|c| text(unsafe { sys::ncclGetLastError(c) }))
        .or_else(|| text(unsafe { sys::ncclGetLastError(std::ptr::null_mut()) }))
        .filter(|s| !s.trim().is_empty());
    Error::Distributed {
        op,
        msg: match last {
            Some(l) => format!("NCCL: {what}: {}", l.trim()),
            None => format!("NCCL: {what}"),
        },
    }
}
