//! The process-wide CUDA runtime: driver context, the streams ops are queued
//! on, the kernel table (modules loaded on first use), the cuBLAS
//! and cuSOLVER handles, the caching allocator and the pinned staging buffers. Created on
//! first use; when no driver or GPU is present it reports why instead of
//! failing later.
//!
//! Streams: work is queued on the calling thread's current stream — the
//! runtime's default stream, or an engine's own [`EngineStream`] while that
//! engine runs (so engines on several threads keep the GPU busy side by side).
//! Every device buffer remembers the stream that last queued work on it; a use
//! from another stream first makes that stream wait for it (an event
//! handoff), so tensors may move between engines. Engine streams are pooled,
//! never destroyed, because buffers may still name them.

use super::allocator::CachingAllocator;
use super::kernels::KernelTable;
use super::staging::Staging;
use crate::core::error::{Error, Result};
use cudarc::cublas::sys as cublas_sys;
use cudarc::driver::{result, sys};
use cudarc::driver::{CudaContext, CudaStream};
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, OnceLock};

/// Everything the CUDA backend needs, created once per process.
pub struct CudaRuntime {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    pub(crate) kernels: KernelTable,
    pub(crate) allocator: Mutex<CachingAllocator>,
    pub(crate) staging: Mutex<Staging>,
    pub(crate) blas: Mutex<BlasHandle>,
    pub(crate) lt: Mutex<super::lt::LtHandle>,
    pub(crate) solver: Mutex<super::solver::SolverHandle>,
    pub(crate) dnn: Mutex<super::cudnn::DnnHandle>,
    pub(crate) name: String,
    pub(crate) sm_count: u32,
    streams: Mutex<Streams>,
    handoffs: std::sync::atomic::AtomicU64,
}

/// The cuBLAS handle, created on the first matmul (creating it loads
/// cuBLAS, which a script without matmuls need not wait for), and the
/// stream it is bound to now.
pub(crate) struct BlasHandle {
    handle: Option<cublas_sys::cublasHandle_t>,
    bound: sys::CUstream,
}

// SAFETY: a cuBLAS handle may be used from any thread as long as calls are
// not concurrent; it is only reached through the runtime's mutex.
unsafe impl Send for BlasHandle {}

impl BlasHandle {
    /// The handle, bound to `stream` (rebinding only when it changes).
    pub(crate) fn on(&mut self, stream: sys::CUstream) -> Result<cublas_sys::cublasHandle_t> {
        let handle = match self.handle {
            Some(h) => h,
            None => {
                // cudarc panics when it cannot load the cuBLAS library.
                let h = std::panic::catch_unwind(cudarc::cublas::result::create_handle)
                    .map_err(|_| Error::DeviceUnavailable {
                        device: "cuda:0".into(),
                        reason: "the cuBLAS library (libcublas) could not be loaded".into(),
                    })?
                    .map_err(|e| cuda_error("cuBLAS create handle", e))?;
                self.handle = Some(h);
                self.bound = std::ptr::null_mut();
                h
            }
        };
        if self.bound != stream {
            // SAFETY: a live handle and a live stream of this context.
            unsafe { cudarc::cublas::result::set_stream(handle, stream as _) }
                .map_err(|e| cuda_error("cuBLAS set stream", e))?;
            self.bound = stream;
        }
        Ok(handle)
    }
}

/// Every stream besides the default one, each with the event it records
/// when another stream must wait for it, and the engine streams not in use.
struct Streams {
    handoff: Vec<(usize, usize)>,
    idle: Vec<usize>,
}

// SAFETY: plain driver handles, used under the runtime's mutex.
unsafe impl Send for Streams {}

thread_local! {
    /// The stream this thread queues work on (0: the runtime's default
    /// stream; [`PENDING_STREAM`]: the engine stream in [`PENDING`], created
    /// on first use).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    /// The engine stream [`LazyEngineStream::enter`] made current.
    static PENDING: RefCell<Option<LazyEngineStream>> = const { RefCell::new(None) };
}

/// [`CURRENT`]'s value while the current stream is an engine's stream that
/// does not exist yet.
const PENDING_STREAM: usize = usize::MAX;

/// An engine's own stream, created on the engine's first CUDA work (or
/// never: a script that does not touch the GPU creates no CUDA context and
/// starts at once). Clones share the stream.
#[derive(Clone, Debug, Default)]
pub struct LazyEngineStream(Arc<OnceLock<Option<EngineStream>>>);

impl LazyEngineStream {
    /// Makes this engine's stream the calling thread's current stream until
    /// the scope drops (creating it only when work is queued).
    pub fn enter(&self) -> StreamScope {
        if let Some(Some(stream)) = self.0.get() {
            return stream.enter();
        }
        let pending = PENDING.with(|p| p.replace(Some(self.clone())));
        let previous = CURRENT.with(|c| c.replace(PENDING_STREAM));
        StreamScope {
            previous,
            pending: Some(pending),
            _not_send: std::marker::PhantomData,
        }
    }

    /// The stream, created now if it does not exist (`None`: the runtime's
    /// default stream is used, as when engine streams are off).
    fn resolve(&self, rt: &CudaRuntime) -> usize {
        self.0
            .get_or_init(|| {
                if CudaRuntime::engine_streams_enabled() {
                    rt.engine_stream().ok()
                } else {
                    None
                }
            })
            .as_ref()
            .map_or(0, |s| s.stream)
    }
}

/// A stream of one engine's own, from [`CudaRuntime::engine_stream`];
/// returned to the runtime's pool when dropped.
#[derive(Debug)]
pub struct EngineStream {
    stream: usize,
}

impl EngineStream {
    /// The stream's handle.
    pub(crate) fn handle(&self) -> sys::CUstream {
        self.stream as sys::CUstream
    }

    /// Makes this the calling thread's current stream until the scope drops.
    pub fn enter(&self) -> StreamScope {
        let previous = CURRENT.with(|c| c.replace(self.stream));
        StreamScope {
            previous,
            pending: None,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for EngineStream {
    fn drop(&mut self) {
        if let Some(Ok(rt)) = RUNTIME.get() {
            if let Ok(mut s) = rt.streams.lock() {
                s.idle.push(self.stream);
            }
        }
    }
}

/// The current stream set by [`EngineStream::enter`] or
/// [`LazyEngineStream::enter`]; restores the previous one when dropped (on
/// the thread that entered).
#[derive(Debug)]
pub struct StreamScope {
    previous: usize,
    /// The pending engine stream to restore, when this scope replaced it.
    pending: Option<Option<LazyEngineStream>>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for StreamScope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
        if let Some(pending) = self.pending.take() {
            PENDING.with(|p| *p.borrow_mut() = pending);
        }
    }
}

static RUNTIME: OnceLock<std::result::Result<CudaRuntime, String>> = OnceLock::new();

fn driver_present() -> bool {
    ["libcuda.so.1", "libcuda.so"].iter().any(|name| {
        // SAFETY: loading the CUDA driver library runs its initialisers, which is
        // what using CUDA at all requires.
        unsafe { libloading::Library::new(*name) }.is_ok()
    })
}

fn create() -> std::result::Result<CudaRuntime, String> {
    if !super::images::built() {
        return Err(format!(
            "this build of kiln has no GPU kernels ({})",
            super::images::status()
        ));
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
        let handoff = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map_err(|e| format!("cannot create an event: {e:?}"))?;
        let name = ctx.name().unwrap_or_else(|_| "CUDA device".into());
        let kernels = KernelTable::new(Arc::clone(&ctx), &name)?;
        let sm_count = ctx
            .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .unwrap_or(80) as u32;
        Ok(CudaRuntime {
            allocator: Mutex::new(CachingAllocator::new()),
            handoffs: std::sync::atomic::AtomicU64::new(0),
            streams: Mutex::new(Streams {
                handoff: vec![(stream.cu_stream() as usize, handoff as usize)],
                idle: vec![],
            }),
            staging: Mutex::new(Staging::new()),
            ctx,
            stream,
            kernels,
            blas: Mutex::new(BlasHandle {
                handle: None,
                bound: std::ptr::null_mut(),
            }),
            lt: Mutex::new(super::lt::LtHandle::default()),
            solver: Mutex::new(super::solver::SolverHandle::new()),
            dnn: Mutex::new(super::cudnn::DnnHandle::new()),
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
    /// The kernel table: every kernel of the module, resolved (what each
    /// compiled to is readable through [`KernelTable::resources`]).
    pub fn kernels(&self) -> &KernelTable {
        &self.kernels
    }

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

    /// True when every op queued so far on the current stream has finished
    /// (never waits).
    pub fn is_idle(&self) -> Result<bool> {
        crate::core::capture::refuse("asks whether the GPU is idle")?;
        // SAFETY: a live stream of this context.
        match unsafe { sys::cuStreamQuery(self.cu_stream()) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            e => Err(cuda_error("stream query", e)),
        }
    }

    /// The runtime if it was created and works (no context binding: for hot paths).
    pub(crate) fn created() -> Option<&'static CudaRuntime> {
        match RUNTIME.get() {
            Some(Ok(rt)) => Some(rt),
            _ => None,
        }
    }

    /// The stream the calling thread queues work on.
    #[inline]
    pub(crate) fn cu_stream(&self) -> sys::CUstream {
        match CURRENT.with(|c| c.get()) {
            0 => self.stream.cu_stream(),
            PENDING_STREAM => {
                let lazy = PENDING.with(|p| p.borrow().clone());
                let s = lazy.map_or(0, |l| l.resolve(self));
                CURRENT.with(|c| c.set(s));
                match s {
                    0 => self.stream.cu_stream(),
                    s => s as sys::CUstream,
                }
            }
            s => s as sys::CUstream,
        }
    }

    /// Makes work queued on `to` from now on wait for everything queued on
    /// `from` so far.
    pub(crate) fn handoff(&self, from: sys::CUstream, to: sys::CUstream) -> Result<()> {
        self.handoffs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ev = {
            let s = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            s.handoff
                .iter()
                .find(|(st, _)| *st == from as usize)
                .map(|&(_, ev)| ev as sys::CUevent)
        };
        let Some(ev) = ev else {
            return Err(Error::invalid(
                "cuda",
                "internal: a buffer names an unknown stream",
            ));
        };
        // SAFETY: live streams and their handoff event, all of this context.
        unsafe {
            result::event::record(ev, from).map_err(|e| cuda_error("event record", e))?;
            result::stream::wait_event(to, ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
                .map_err(|e| cuda_error("stream wait", e))
        }
    }

    /// How many times a buffer moved between streams (each costs an event
    /// record and a stream wait).
    pub fn stream_handoffs(&self) -> u64 {
        self.handoffs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether engines get streams of their own: yes unless the environment
    /// sets `KILN_STREAMS=shared` (every engine then queues on the default
    /// stream, as before there were engine streams).
    pub fn engine_streams_enabled() -> bool {
        static ON: OnceLock<bool> = OnceLock::new();
        *ON.get_or_init(|| std::env::var("KILN_STREAMS").map_or(true, |v| v != "shared"))
    }

    /// A stream for one engine: an idle one from the pool, else a new one.
    pub fn engine_stream(&self) -> Result<EngineStream> {
        let mut s = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(stream) = s.idle.pop() {
            return Ok(EngineStream { stream });
        }
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| cuda_error("stream creation", e))?;
        let ev = match result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING) {
            Ok(ev) => ev,
            Err(e) => {
                // SAFETY: the stream was just created and nothing uses it.
                let _ = unsafe { result::stream::destroy(stream) };
                return Err(cuda_error("event creation", e));
            }
        };
        s.handoff.push((stream as usize, ev as usize));
        Ok(EngineStream {
            stream: stream as usize,
        })
    }

    /// Bytes held by live tensors and by the cache.
    pub fn memory_stats(&self) -> super::MemoryStats {
        self.allocator.lock().map(|a| a.stats()).unwrap_or_default()
    }

    /// Starts the peak of [`Self::memory_stats`] over from the bytes live now.
    pub fn reset_peak_memory(&self) {
        if let Ok(mut a) = self.allocator.lock() {
            a.reset_peak();
        }
    }

    /// Returns cached blocks to the driver.
    pub fn empty_cache(&self) {
        if let Ok(mut a) = self.allocator.lock() {
            a.empty_cache();
        }
    }

    /// Starts (`on`) or stops collection by an attached CUDA profiler, as
    /// `cudaProfilerStart`/`Stop` (Nsight Compute's `--profile-from-start
    /// off` then sees only what runs in between); no effect without one.
    pub fn set_profiling(&self, on: bool) -> Result<()> {
        let r = if on {
            cudarc::driver::profiler_start()
        } else {
            cudarc::driver::profiler_stop()
        };
        r.map_err(|e| cuda_error(if on { "profiler start" } else { "profiler stop" }, e))
    }

    /// Waits until all work queued on the current stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        crate::core::capture::refuse("waits for the GPU (cuda::synchronize, time)")?;
        // SAFETY: a live stream of this context.
        unsafe { result::stream::synchronize(self.cu_stream()) }.map_err(|e| cuda_error("synchronize", e))
    }
}

/// A driver error as a kiln error naming what failed.
pub(crate) fn cuda_error(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Cuda {
        op: crate::core::memory::current_op(),
        call: what.to_string(),
        msg: format!("{e:?}"),
        shapes: vec![],
    }
}
