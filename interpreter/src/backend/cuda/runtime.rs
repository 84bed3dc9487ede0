//! The process-wide CUDA runtime: driver context, the one stream every op is
//! queued on, the PTX module with its kernels resolved once into a table, the
//! cuBLAS handle, the caching allocator and the pinned staging buffers. Created on first use; when no
//! driver or GPU is present it reports why instead of failing later.

use super::allocator::CachingAllocator;
use super::kernels::KernelTable;
use super::staging::Staging;
use crate::error::{Error, Result};
use cudarc::cublas::sys as cublas_sys;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::{Arc, Mutex, OnceLock};

/// The PTX built from `gpu-kernels` by `build.rs` (empty when it could not be built).
const PTX: &str = include_str!(env!("KILN_PTX_PATH"));

/// The embedded PTX text.
pub(crate) fn ptx() -> &'static str {
    PTX
}
/// How the PTX build went (`ok`, or why it is missing).
const PTX_STATUS: &str = env!("KILN_PTX_STATUS");

/// Everything the CUDA backend needs, created once per process.
pub struct CudaRuntime {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) kernels: KernelTable,
    pub(crate) allocator: Mutex<CachingAllocator>,
    pub(crate) staging: Mutex<Staging>,
    pub(crate) blas: BlasHandle,
    pub(crate) name: String,
    pub(crate) sm_count: u32,
}

/// A cuBLAS handle bound to the runtime's stream.
pub(crate) struct BlasHandle(pub(crate) cublas_sys::cublasHandle_t);

// SAFETY: the handle is only used on the runtime's single stream, and cuBLAS
// handles may be used from any thread when calls are not concurrent; kiln
// serialises them through the runtime.
unsafe impl Send for BlasHandle {}
// SAFETY: as above.
unsafe impl Sync for BlasHandle {}

static RUNTIME: OnceLock<std::result::Result<CudaRuntime, String>> = OnceLock::new();

fn driver_present() -> bool {
    ["libcuda.so.1", "libcuda.so"].iter().any(|name| {
        // SAFETY: loading the CUDA driver library runs its initialisers, which is
        // what using CUDA at all requires.
        unsafe { libloading::Library::new(*name) }.is_ok()
    })
}

fn create() -> std::result::Result<CudaRuntime, String> {
    if PTX.is_empty() {
        return Err(format!("this build of kiln has no GPU kernels ({PTX_STATUS})"));
    }
    if !driver_present() {
        return Err("no CUDA driver (libcuda.so) was found".into());
    }
    let attempt = std::panic::catch_unwind(|| -> std::result::Result<CudaRuntime, String> {
        let count = CudaContext::device_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))?;
        if count < 1 {
            return Err("no CUDA device is visible".into());
        }
        let ctx = CudaContext::new(0).map_err(|e| format!("cannot create a CUDA context: {e:?}"))?;
        // One created stream (not the legacy default stream), so that graphs can capture it.
        let stream = ctx
            .new_stream()
            .map_err(|e| format!("cannot create a stream: {e:?}"))?;
        // kiln orders all work on one stream itself: cudarc's per-buffer events are not needed.
        // SAFETY: no cudarc-managed buffers are shared across streams.
        unsafe { ctx.disable_event_tracking() };
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(PTX))
            .map_err(|e| format!("cannot load the kiln PTX module: {e:?}"))?;
        let kernels = KernelTable::load(&module)?;
        let handle = cudarc::cublas::result::create_handle()
            .map_err(|e| format!("cannot create a cuBLAS handle: {e:?}"))?;
        // SAFETY: the handle was just created and the stream lives as long as the runtime.
        unsafe { cudarc::cublas::result::set_stream(handle, stream.cu_stream() as _) }
            .map_err(|e| format!("cannot bind cuBLAS to the stream: {e:?}"))?;
        let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let sm_count = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .unwrap_or(80) as u32;
        Ok(CudaRuntime {
            allocator: Mutex::new(CachingAllocator::new(stream.cu_stream())),
            staging: Mutex::new(Staging::new()),
            ctx,
            stream,
            kernels,
            blas: BlasHandle(handle),
            name,
            sm_count,
        })
    });
    match attempt {
        Ok(r) => r,
        Err(_) => Err("the CUDA driver could not be loaded".into()),
    }
}

impl CudaRuntime {
    /// The runtime, created on first call; an error says why CUDA is unusable.
    pub fn get() -> Result<&'static CudaRuntime> {
        match RUNTIME.get_or_init(create) {
            Ok(rt) => {
                rt.ctx
                    .bind_to_thread()
                    .map_err(|e| cuda_error("bind context", e))?;
                Ok(rt)
            }
            Err(reason) => Err(Error::DeviceUnavailable {
                device: "cuda:0".into(),
                reason: reason.clone(),
            }),
        }
    }

    /// True when a CUDA device can be used.
    pub fn is_available() -> bool {
        CudaRuntime::get().is_ok()
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// True when every op queued so far has finished (records and queries an event;
    /// never waits).
    pub fn is_idle(&self) -> Result<bool> {
        let ev = self
            .stream
            .record_event(None)
            .map_err(|e| cuda_error("record event", e))?;
        Ok(ev.is_complete())
    }

    /// Bytes held by live tensors and by the cache.
    pub fn memory_stats(&self) -> super::MemoryStats {
        self.allocator.lock().map(|a| a.stats()).unwrap_or_default()
    }

    /// Returns cached blocks to the driver.
    pub fn empty_cache(&self) {
        if let Ok(mut a) = self.allocator.lock() {
            a.empty_cache();
        }
    }

    /// Waits until all queued work has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| cuda_error("synchronize", e))
    }
}

/// A driver error as a kiln error naming what failed.
pub(crate) fn cuda_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::invalid("cuda", format!("{what} failed: {e:?}"))
}
