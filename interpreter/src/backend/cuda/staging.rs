//! Pinned staging for large host↔device copies. The DMA engine reads and
//! writes only page-locked memory at full speed; a pageable source makes the
//! driver stage it through its own small buffers. Here two page-locked buffers
//! of [`CHUNK`] bytes are used in turn: while the GPU moves one chunk, the
//! CPU (all cores) copies the next into or out of the other. Each buffer's
//! event says when the GPU is done with it. Copies below [`STAGE_MIN`] go
//! straight through the driver.

use super::runtime::cuda_error;
use crate::core::error::Result;
use cudarc::driver::{result, sys};
use rayon::prelude::*;

/// Copies at least this large are staged.
pub(crate) const STAGE_MIN: usize = 1 << 20;

/// Bytes of one staging buffer.
const CHUNK: usize = 16 << 20;

/// Pieces a chunk's CPU copy is split into across cores.
const PIECE: usize = 1 << 20;

/// One page-locked buffer and the event recorded after the GPU's last use.
struct Buffer {
    ptr: *mut u8,
    done: sys::CUevent,
}

/// The two staging buffers (allocated on first use).
pub(crate) struct Staging {
    bufs: Vec<Buffer>,
}

// SAFETY: the buffers are plain page-locked host memory and driver events;
// the runtime only uses them under its staging mutex.
unsafe impl Send for Staging {}

impl Staging {
    /// No buffers yet.
    pub(crate) fn new() -> Staging {
        Staging { bufs: vec![] }
    }

    fn ensure(&mut self) -> Result<()> {
        while self.bufs.len() < 2 {
            // SAFETY: a fresh allocation; its contents are written before they are read.
            let ptr = unsafe { result::malloc_host(CHUNK, 0) }
                .map_err(|e| cuda_error("pinned host allocation", e))?;
            let done = match result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING) {
                Ok(ev) => ev,
                Err(e) => {
                    // SAFETY: `ptr` was just returned by malloc_host.
                    let _ = unsafe { result::free_host(ptr) };
                    return Err(cuda_error("event creation", e));
                }
            };
            self.bufs.push(Buffer {
                ptr: ptr.cast(),
                done,
            });
        }
        Ok(())
    }

    /// Queues `src` for copying to `dst` on `stream`; returns once `src` has
    /// been read (the last chunks may still be in flight from pinned memory).
    ///
    /// # Safety
    /// `dst` must hold `src.len()` bytes and stay allocated until the stream
    /// has run the copy.
    pub(crate) unsafe fn upload(
        &mut self,
        stream: sys::CUstream,
        dst: sys::CUdeviceptr,
        src: &[u8],
    ) -> Result<()> {
        self.ensure()?;
        for (i, chunk) in src.chunks(CHUNK).enumerate() {
            let buf = &self.bufs[i % 2];
            // the GPU must be done reading this buffer's previous chunk
            result::event::synchronize(buf.done).map_err(|e| cuda_error("staging wait", e))?;
            parallel_copy(buf.ptr, chunk.as_ptr(), chunk.len());
            let staged = std::slice::from_raw_parts(buf.ptr, chunk.len());
            result::memcpy_htod_async(dst + (i * CHUNK) as u64, staged, stream)
                .map_err(|e| cuda_error("host-to-device copy", e))?;
            result::event::record(buf.done, stream).map_err(|e| cuda_error("event record", e))?;
        }
        Ok(())
    }

    /// Copies `n` bytes from `src` to `dst` after everything queued on
    /// `stream` (waits for the GPU).
    ///
    /// # Safety
    /// `src` must hold `n` bytes and `dst` must be valid for `n` bytes of
    /// writes (it may be uninitialised).
    pub(crate) unsafe fn download(
        &mut self,
        stream: sys::CUstream,
        dst: *mut u8,
        n: usize,
        src: sys::CUdeviceptr,
    ) -> Result<()> {
        self.ensure()?;
        let chunks = n.div_ceil(CHUNK);
        let issue = |bufs: &[Buffer], i: usize| -> Result<()> {
            let len = CHUNK.min(n - i * CHUNK);
            let buf = &bufs[i % 2];
            let staged = std::slice::from_raw_parts_mut(buf.ptr, len);
            result::memcpy_dtoh_async(staged, src + (i * CHUNK) as u64, stream)
                .map_err(|e| cuda_error("device-to-host copy", e))?;
            result::event::record(buf.done, stream).map_err(|e| cuda_error("event record", e))
        };
        // earlier uploads may still read the buffers: they are ordered on the
        // same stream before these copies
        for i in 0..chunks.min(2) {
            issue(&self.bufs, i)?;
        }
        for i in 0..chunks {
            let buf = &self.bufs[i % 2];
            result::event::synchronize(buf.done).map_err(|e| cuda_error("staging wait", e))?;
            let len = CHUNK.min(n - i * CHUNK);
            parallel_copy(dst.add(i * CHUNK), buf.ptr, len);
            if i + 2 < chunks {
                issue(&self.bufs, i + 2)?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for b in &self.bufs {
            // SAFETY: both were created by `ensure`; waiting first keeps the GPU
            // from touching freed memory.
            unsafe {
                let _ = result::event::synchronize(b.done);
                let _ = result::event::destroy(b.done);
                let _ = result::free_host(b.ptr.cast());
            }
        }
    }
}

/// Copies `n` bytes from `src` to `dst`, split across cores.
///
/// # Safety
/// `src` is valid for `n` bytes of reads, `dst` for `n` bytes of writes, and
/// they do not overlap.
unsafe fn parallel_copy(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    (0..n.div_ceil(PIECE)).into_par_iter().for_each(|i| {
        let at = i * PIECE;
        // SAFETY: each piece is inside both ranges, and pieces are disjoint.
        unsafe {
            std::ptr::copy_nonoverlapping((s + at) as *const u8, (d + at) as *mut u8, PIECE.min(n - at))
        };
    });
}
