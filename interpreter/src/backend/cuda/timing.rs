//! Timing markers for the profiler: CUDA events recorded on the calling
//! thread's stream after the work queued so far, read once the device has
//! passed them.

use super::runtime::{cuda_error, CudaRuntime};
use crate::core::error::Result;
use cudarc::driver::{result, sys};

/// A CUDA event recorded on the calling thread's stream; destroyed on drop.
#[derive(Debug)]
pub struct Marker(sys::CUevent);

// SAFETY: an event handle belongs to the context, not to a thread; the
// driver's event calls may come from any thread that binds the context.
unsafe impl Send for Marker {}
unsafe impl Sync for Marker {}

impl Marker {
    /// A marker after all work queued so far on the calling thread's stream;
    /// `None` while no CUDA runtime has been created (nothing to time, and
    /// profiling never starts one).
    pub fn record() -> Result<Option<Marker>> {
        if CudaRuntime::created().is_none() {
            return Ok(None);
        }
        let rt = CudaRuntime::get()?;
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(|e| cuda_error("event create", e))?;
        let marker = Marker(event);
        // SAFETY: a live event and a live stream of the bound context.
        unsafe { result::event::record(marker.0, rt.cu_stream()) }
            .map_err(|e| cuda_error("event record", e))?;
        Ok(Some(marker))
    }

    /// Milliseconds of device time from this marker to `later`; both must
    /// have been passed (synchronize first).
    pub fn elapsed_ms(&self, later: &Marker) -> Result<f64> {
        CudaRuntime::get()?;
        // SAFETY: two live, recorded events of the bound context.
        unsafe { result::event::elapsed(self.0, later.0) }
            .map(f64::from)
            .map_err(|e| cuda_error("event elapsed time", e))
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        // SAFETY: the event is live and dropped once; the driver lets an event
        // be destroyed before the device reached it.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}
