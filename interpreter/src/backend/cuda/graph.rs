//! CUDA graphs: the work a block queues, recorded once by stream capture
//! and replayed with one launch (`cuda::graph`).
//!
//! A [`Capture`] records on a stream of its own (an engine stream from the
//! runtime's pool), which is also the graph's private memory pool (see
//! [`super::allocator`]). Before recording it waits for all earlier work on
//! the device, so buffers made outside the block need no cross-stream waits
//! inside it. The capture runs in relaxed mode (the pool's blocks come from
//! `cuMemAlloc`); what a graph cannot replay — waits for the GPU,
//! read-backs, uploads of host data — refuses first, through
//! [`crate::core::capture`]. A [`CapturedGraph`] replays on its stream
//! after the calling stream's earlier work, and the calling stream's later
//! work waits for the replay. Dropping it waits for its last replay and
//! returns its pool's cached blocks to the driver.
//!
//! A graph owns [`DRAW_SLOTS`] draw slots in device memory, which its random
//! kernels read for their seed and stream (see [`crate::core::capture`]);
//! a replay writes them first.

use super::runtime::{cuda_error, CudaRuntime, EngineStream, StreamScope};
use super::CudaStorage;
use crate::core::capture::{self, CaptureScope, DrawUse};
use crate::core::error::{Error, Result};
use crate::core::DType;
use cudarc::driver::{result, sys};

const OP: &str = "cuda::graph";

/// The generators a graph's random kernels can follow (16 bytes of device
/// memory each); draws of further generators replay their recorded values.
pub const DRAW_SLOTS: usize = 32;

/// A recording in progress on the calling thread; ended by [`Capture::end`]
/// (dropping it instead abandons the recording and its pool).
pub struct Capture {
    stream: Option<EngineStream>,
    scope: Option<StreamScope>,
    marked: Option<CaptureScope>,
    slots: Option<CudaStorage>,
}

impl Capture {
    /// Starts recording the work the calling thread queues from now on.
    pub fn begin() -> Result<Capture> {
        if crate::core::capture::is_capturing() {
            return Err(Error::invalid(
                OP,
                "a capture is already running on this thread (graphs do not nest)",
            ));
        }
        let rt = CudaRuntime::get()?;
        // every earlier piece of work finishes first: the block's reads of
        // buffers from other streams then need no waits inside the capture
        result::ctx::synchronize().map_err(|e| cuda_error("synchronize before capture", e))?;
        let slots = CudaStorage::full(DType::I64, 2 * DRAW_SLOTS, crate::core::Scalar::Int(0))?;
        let slots_address = slots.element_address(0);
        let stream = rt.engine_stream()?;
        let handle = stream.handle();
        lock(rt)?.open_pool(handle as usize);
        let mut capture = Capture {
            scope: Some(stream.enter()),
            stream: Some(stream),
            marked: None,
            slots: Some(slots),
        };
        // SAFETY: a live stream of this context with no work queued.
        unsafe {
            result::stream::begin_capture(handle, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        }
        .map_err(|e| cuda_error("begin stream capture", e))?;
        capture.marked = Some(CaptureScope::enter()?);
        capture::set_draw_slots(slots_address, DRAW_SLOTS);
        Ok(capture)
    }

    /// Ends the recording and makes it replayable.
    pub fn end(mut self) -> Result<CapturedGraph> {
        let rt = CudaRuntime::get()?;
        let draws = capture::take_draws();
        self.marked = None;
        let stream = self.stream.take().expect("a capture has its stream");
        let handle = stream.handle();
        // SAFETY: the stream is capturing (begun in `begin`).
        let ended = unsafe { result::stream::end_capture(handle) };
        self.scope = None;
        let graph = match ended {
            Ok(g) if !g.is_null() => g,
            Ok(_) | Err(_) => {
                close(rt, &stream);
                return Err(Error::Cuda {
                    op: OP,
                    call: "end stream capture".into(),
                    msg: format!(
                        "the driver invalidated the capture ({}): the block did something a CUDA graph cannot record",
                        ended.err().map_or_else(|| "no graph".to_string(), |e| format!("{e:?}"))
                    ),
                    shapes: vec![],
                });
            }
        };
        // SAFETY: a graph just captured.
        let exec = match unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) } {
            Ok(x) => x,
            Err(e) => {
                // SAFETY: the graph is ours and not instantiated.
                let _ = unsafe { result::graph::destroy(graph) };
                close(rt, &stream);
                return Err(cuda_error("instantiate graph", e));
            }
        };
        let mut nodes = 0usize;
        // SAFETY: a live graph; a null array asks for the count only.
        unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) };
        let slots = self.slots.take().expect("a capture has its draw slots");
        Ok(CapturedGraph {
            stream: Some(stream),
            graph,
            exec,
            nodes,
            slots,
            draws,
        })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.marked = None;
        if let Some(stream) = self.stream.take() {
            // an abandoned recording: end it, drop what it recorded
            // SAFETY: the stream was set capturing in `begin` (ending a stream
            // that is not capturing only returns an error).
            if let Ok(g) = unsafe { result::stream::end_capture(stream.handle()) } {
                if !g.is_null() {
                    // SAFETY: the graph is ours.
                    let _ = unsafe { result::graph::destroy(g) };
                }
            }
            self.scope = None;
            if let Ok(rt) = CudaRuntime::get() {
                close(rt, &stream);
            }
        }
    }
}

/// The allocator, locked.
fn lock(rt: &CudaRuntime) -> Result<std::sync::MutexGuard<'_, super::allocator::CachingAllocator>> {
    rt.allocator
        .lock()
        .map_err(|_| Error::invalid(OP, "the GPU allocator's lock is poisoned"))
}

/// Waits for `stream`'s work and ends its pool.
fn close(rt: &CudaRuntime, stream: &EngineStream) {
    // SAFETY: a live stream of this context, not capturing.
    let _ = unsafe { result::stream::synchronize(stream.handle()) };
    if let Ok(mut a) = rt.allocator.lock() {
        a.close_pool(stream.handle() as usize);
    }
}

/// A recorded, instantiated graph.
pub struct CapturedGraph {
    stream: Option<EngineStream>,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    nodes: usize,
    slots: CudaStorage,
    draws: Vec<DrawUse>,
}

// SAFETY: the graph handles are used by one thread at a time (replays take
// `&self` but the driver serialises launches of one executable graph).
unsafe impl Send for CapturedGraph {}
// SAFETY: as above; `cuGraphLaunch` of one executable graph from several
// threads is ordered by the driver.
unsafe impl Sync for CapturedGraph {}

impl CapturedGraph {
    /// The generators the recorded block drew from, in draw-slot order.
    pub fn draws(&self) -> &[DrawUse] {
        &self.draws
    }

    /// Runs the recording again, after the calling stream's earlier work
    /// and before its later work, with `draw_slots` (a seed and a stream
    /// shift per entry of [`Self::draws`]) written to its draw slots first.
    pub fn replay(&self, draw_slots: &[u64]) -> Result<()> {
        capture::refuse("replays a graph")?;
        if draw_slots.len() > 2 * DRAW_SLOTS {
            return Err(Error::invalid(OP, "internal: more draw slots than a graph has"));
        }
        let rt = CudaRuntime::get()?;
        let stream = self.stream.as_ref().expect("a graph has its stream").handle();
        let cur = rt.cu_stream();
        rt.handoff(cur, stream)?;
        if !draw_slots.is_empty() {
            let bytes: Vec<u8> = draw_slots.iter().flat_map(|v| v.to_le_bytes()).collect();
            // SAFETY: the slots hold 2 * DRAW_SLOTS u64s (checked above) and live
            // as long as the graph; a pageable source is copied before the call returns.
            unsafe { result::memcpy_htod_async(self.slots.element_address(0), &bytes, stream) }
                .map_err(|e| cuda_error("graph draw slots", e))?;
        }
        // SAFETY: a live executable graph and a live stream of its context.
        unsafe { result::graph::launch(self.exec, stream) }.map_err(|e| cuda_error("graph launch", e))?;
        rt.handoff(stream, cur)
    }

    /// The number of nodes (kernels, copies, memsets) the graph holds.
    pub fn nodes(&self) -> usize {
        self.nodes
    }
}

impl Drop for CapturedGraph {
    fn drop(&mut self) {
        if let Some(stream) = self.stream.take() {
            // SAFETY: the handles are ours; the stream is synchronised (in
            // `close`) before the pool's blocks go back.
            unsafe {
                let _ = result::stream::synchronize(stream.handle());
                let _ = result::graph::exec_destroy(self.exec);
                let _ = result::graph::destroy(self.graph);
            }
            if let Ok(rt) = CudaRuntime::get() {
                close(rt, &stream);
            }
        }
    }
}
