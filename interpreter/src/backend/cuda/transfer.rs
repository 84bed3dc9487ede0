//! Host↔device copies of CUDA storage: uploads of CPU storage into device
//! memory, and downloads into fresh or existing CPU storage (`t.cpu()`,
//! `host.copy_(device)`). Copies of at least `staging::STAGE_MIN` bytes go
//! through the pinned staging buffers; smaller ones straight through the
//! driver. Uploads are queued (they return once the source has been read);
//! downloads wait for the GPU.

use super::runtime::{cuda_error, CudaRuntime};
use super::{staging, CudaStorage};
use crate::backend::cpu::{with_dtype, with_storage, CpuStorage, Element};
use crate::core::error::{Error, Result};
use crate::core::Layout;
use cudarc::driver::{result, sys};
use std::borrow::Cow;
use std::ops::Range;

/// What a read-back is, in a capture's refusal.
const READ_BACK: &str =
    "reads GPU values back to the host (item, to_list, print, cpu, or a result whose shape depends on values)";

impl CudaStorage {
    /// Uploads a CPU storage.
    pub fn from_cpu(cpu: &CpuStorage) -> Result<CudaStorage> {
        let mut out = CudaStorage::alloc(cpu.dtype(), cpu.len())?;
        out.upload_range(0, cpu, 0..cpu.len())?;
        Ok(out)
    }

    /// Writes the elements `range` of the host storage `src` (same dtype) to
    /// elements `at..` of this storage. Queued on the stream; returns once
    /// `src` has been read.
    pub(crate) fn upload_range(&mut self, at: usize, src: &CpuStorage, range: Range<usize>) -> Result<()> {
        if src.dtype() != self.dtype || range.end > src.len() || at + range.len() > self.len {
            return Err(Error::invalid("copy", "host-to-device copy out of range"));
        }
        if range.is_empty() {
            return Ok(());
        }
        crate::core::capture::refuse(
            "copies host data to the GPU (a tensor made from host values, a CPU operand, .cuda())",
        )?;
        let rt = CudaRuntime::get()?;
        let dst = self.ptr() + (at * self.dtype.size_in_bytes()) as u64;
        with_storage!(src, v: T => {
            let part = &v[range];
            // SAFETY: a plain-data slice viewed as its bytes.
            let bytes = unsafe { std::slice::from_raw_parts(part.as_ptr().cast::<u8>(), std::mem::size_of_val(part)) };
            // SAFETY: the destination holds these bytes (checked above) and lives in
            // the stream-ordered cache until the copy has run.
            unsafe { upload_bytes(rt, dst, bytes) }?;
        });
        Ok(())
    }

    /// The elements of `l` in logical order, copied to the host (waits for the GPU).
    pub fn to_cpu(&self, l: &Layout) -> Result<CpuStorage> {
        crate::core::capture::refuse(READ_BACK)?;
        let rt = CudaRuntime::get()?;
        let src = self.dense(l)?;
        let n = l.numel();
        let out = with_dtype!(self.dtype, T => {
            let mut v: Vec<T> = Vec::with_capacity(n);
            let bytes = n * std::mem::size_of::<T>();
            advise_huge_pages(v.as_mut_ptr().cast(), bytes);
            // SAFETY: `src` holds `n` elements and `v` has room for them; every byte
            // is written before `set_len`, from device values of T (bools are 0 or 1).
            unsafe {
                download_bytes(rt, v.as_mut_ptr().cast(), bytes, src.ptr())?;
                v.set_len(n);
            }
            T::into_storage(v)
        });
        Ok(out)
    }

    /// Copies the elements of `l` in logical order into `dst[at..at + n]`
    /// (same dtype; waits for the GPU): a download into memory that already
    /// exists, as `host.copy_(device)` does.
    pub(crate) fn download_into(&self, l: &Layout, dst: &mut CpuStorage, at: usize) -> Result<()> {
        let n = l.numel();
        if dst.dtype() != self.dtype || at + n > dst.len() {
            return Err(Error::invalid("copy", "device-to-host copy out of range"));
        }
        crate::core::capture::refuse(READ_BACK)?;
        let rt = CudaRuntime::get()?;
        let src = self.dense(l)?;
        with_storage!(dst, v: T => {
            let part = &mut v[at..at + n];
            // SAFETY: `part` holds the `n` elements `src` holds; device values of T
            // are valid values of T.
            unsafe { download_bytes(rt, part.as_mut_ptr().cast(), std::mem::size_of_val(part), src.ptr()) }?;
        });
        Ok(())
    }

    /// This storage when `l` is all of it in order, else a dense copy of `l`.
    fn dense(&self, l: &Layout) -> Result<Cow<'_, CudaStorage>> {
        if l.contiguous_range() == Some((0, self.len)) {
            Ok(Cow::Borrowed(self))
        } else {
            Ok(Cow::Owned(self.cast(l, self.dtype)?))
        }
    }
}

/// Queues the copy of `src` to `dst`; returns once `src` has been read.
///
/// # Safety
/// `dst` must hold `src.len()` bytes and stay allocated until the stream has
/// run the copy.
unsafe fn upload_bytes(rt: &CudaRuntime, dst: sys::CUdeviceptr, src: &[u8]) -> Result<()> {
    if src.len() >= staging::STAGE_MIN {
        let mut st = rt.staging.lock().unwrap_or_else(|p| p.into_inner());
        st.upload(rt.cu_stream(), dst, src)
    } else {
        // a pageable source is staged by the driver before this call returns
        result::memcpy_htod_async(dst, src, rt.cu_stream()).map_err(|e| cuda_error("host-to-device copy", e))
    }
}

/// Copies `n` bytes from `src` to `dst` after everything queued (waits).
///
/// # Safety
/// `src` must hold `n` bytes; `dst` must be valid for `n` bytes of writes.
unsafe fn download_bytes(rt: &CudaRuntime, dst: *mut u8, n: usize, src: sys::CUdeviceptr) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if n >= staging::STAGE_MIN {
        let mut st = rt.staging.lock().unwrap_or_else(|p| p.into_inner());
        return st.download(rt.cu_stream(), dst, n, src);
    }
    let out = std::slice::from_raw_parts_mut(dst, n);
    result::memcpy_dtoh_async(out, src, rt.cu_stream()).map_err(|e| cuda_error("device-to-host copy", e))?;
    rt.synchronize()
}

/// Asks the kernel to back a large, fresh host buffer with huge pages: the
/// first touch of each 2 MiB then costs one fault instead of 512, which is
/// most of the time a download into new memory takes.
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + bytes) & !(HUGE - 1);
        if end > start {
            // SAFETY: advice on whole pages inside this process's own allocation;
            // it changes no contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}
