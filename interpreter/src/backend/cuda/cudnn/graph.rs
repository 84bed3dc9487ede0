//! Convolutions through cuDNN's graph API (the backend descriptors of
//! cuDNN 8 and 9, the path PyTorch takes): each geometry becomes a one-node
//! operation graph; cuDNN's heuristics (the instant list, then the fallback
//! list) propose engine configurations; the first that finalizes into an
//! execution plan — or, in benchmark mode, the fastest of the first ten,
//! timed on the engine's stream — is cached with its workspace size, and
//! every call runs it with a variant pack of the three tensors' addresses.
//! It reaches engines the legacy `cudnnConvolution*` calls do not
//! (channels-last and bf16 kernels above all). Engines whose numerics the
//! caller did not allow are skipped, as PyTorch skips them: down-converted
//! inputs always, tensor cores for f32 unless TF32 is on.

use super::{cuda_error, data_type, Direction};
use crate::backend::conv::ConvSpec;
use crate::backend::cuda::CudaStorage;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::cudnn::sys as ds;
use cudarc::driver::{result as drv, sys as cu};
use ds::cudnnBackendAttributeName_t as A;
use ds::cudnnBackendAttributeType_t as T;
use ds::cudnnBackendDescriptorType_t as D;
use std::ffi::c_void;

/// How many engine configurations benchmark mode times at most (PyTorch's
/// `cudnn.benchmark_limit` default).
const BENCHMARK_LIMIT: usize = 10;

/// The unique ids of the three tensors in every graph: the input side
/// (x or dx), the filter (w or dw) and the output side (y or dy).
const UIDS: [i64; 3] = [1, 2, 3];

/// A backend descriptor, destroyed on drop.
struct Desc(ds::cudnnBackendDescriptor_t);

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by `Desc::new` and destroyed once.
        let _ = unsafe { ds::cudnnBackendDestroyDescriptor(self.0) };
    }
}

impl Desc {
    fn new(kind: D) -> Result<Desc> {
        let mut d: ds::cudnnBackendDescriptor_t = std::ptr::null_mut();
        // SAFETY: `d` receives a new descriptor.
        unsafe { ds::cudnnBackendCreateDescriptor(kind, &mut d) }
            .result()
            .map_err(|e| cuda_error("cudnnBackendCreateDescriptor", e))?;
        Ok(Desc(d))
    }

    fn set<V>(&self, name: A, ty: T, values: &[V]) -> Result<()> {
        // SAFETY: `values` holds `len` elements of the attribute's type
        // (every caller pairs `ty` with the matching Rust type).
        unsafe { ds::cudnnBackendSetAttribute(self.0, name, ty, values.len() as i64, values.as_ptr().cast()) }
            .result()
            .map_err(|e| cuda_error(&format!("cudnnBackendSetAttribute({name:?})"), e))
    }

    fn set_i64(&self, name: A, values: &[i64]) -> Result<()> {
        self.set(name, T::CUDNN_TYPE_INT64, values)
    }

    fn set_descs(&self, name: A, descs: &[&Desc]) -> Result<()> {
        let raw: Vec<ds::cudnnBackendDescriptor_t> = descs.iter().map(|d| d.0).collect();
        self.set(name, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw)
    }

    /// Finalizes; `false` when cuDNN does not support this configuration.
    fn try_finalize(&self) -> bool {
        // SAFETY: a live descriptor.
        unsafe { ds::cudnnBackendFinalize(self.0) }.result().is_ok()
    }

    fn finalize(&self, what: &str) -> Result<()> {
        // SAFETY: a live descriptor.
        unsafe { ds::cudnnBackendFinalize(self.0) }
            .result()
            .map_err(|e| cuda_error(&format!("cudnnBackendFinalize({what})"), e))
    }
}

/// One geometry: dtype, each tensor's dims and strides (4-D or more, in the
/// order input side, filter, output side), the convolution, and the byte
/// alignment of the three addresses.
pub(super) struct Geometry {
    pub dtype: DType,
    pub tensors: [(Vec<i64>, Vec<i64>); 3],
    pub spec: ConvSpec,
    pub alignment: i64,
    pub tf32: bool,
}

/// A finalized execution plan and the descriptors it was built from.
pub(crate) struct Plan {
    plan: Desc,
    /// cuDNN's global index of the engine.
    engine: i64,
    pub(super) workspace: usize,
    _graph: Vec<Desc>,
}

// SAFETY: plans live in the cuDNN handle's cache, which is only reached
// under the runtime's mutex.
unsafe impl Send for Plan {}

/// The largest power of two up to 16 dividing every address.
pub(super) fn alignment(addrs: [*mut c_void; 3]) -> i64 {
    addrs
        .iter()
        .map(|&a| (a as usize | 16).trailing_zeros())
        .min()
        .map_or(16, |z| 1 << z)
}

fn tensor(dtype: DType, uid: i64, (dims, strides): &(Vec<i64>, Vec<i64>), align: i64) -> Result<Desc> {
    let t = Desc::new(D::CUDNN_BACKEND_TENSOR_DESCRIPTOR)?;
    t.set(
        A::CUDNN_ATTR_TENSOR_DATA_TYPE,
        T::CUDNN_TYPE_DATA_TYPE,
        &[data_type(dtype)?],
    )?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_DIMENSIONS, dims)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_STRIDES, strides)?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_UNIQUE_ID, &[uid])?;
    t.set_i64(A::CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, &[align])?;
    t.finalize("tensor")?;
    Ok(t)
}

fn convolution(g: &Geometry) -> Result<Desc> {
    let one = g.spec.padding.len() == 1;
    let lift = |v: &[usize], fill: i64| -> Vec<i64> {
        let mut out = if one { vec![fill] } else { vec![] };
        out.extend(v.iter().map(|&x| x as i64));
        out
    };
    let pads = lift(&g.spec.padding, 0);
    let c = Desc::new(D::CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)?;
    c.set(
        A::CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
        T::CUDNN_TYPE_DATA_TYPE,
        &[compute_type(g.dtype)],
    )?;
    c.set(
        A::CUDNN_ATTR_CONVOLUTION_CONV_MODE,
        T::CUDNN_TYPE_CONVOLUTION_MODE,
        &[ds::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION],
    )?;
    c.set_i64(A::CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &[pads.len() as i64])?;
    c.set_i64(A::CUDNN_ATTR_CONVOLUTION_DILATIONS, &lift(&g.spec.dilation, 1))?;
    c.set_i64(A::CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, &lift(&g.spec.stride, 1))?;
    c.set_i64(A::CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, &pads)?;
    c.set_i64(A::CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, &pads)?;
    c.finalize("convolution")?;
    Ok(c)
}

fn compute_type(dtype: DType) -> ds::cudnnDataType_t {
    if dtype == DType::F64 {
        ds::cudnnDataType_t::CUDNN_DATA_DOUBLE
    } else {
        ds::cudnnDataType_t::CUDNN_DATA_FLOAT
    }
}

/// The operation node of one direction over tensors `[x, w, y]` (or their
/// gradients), alpha = 1 and beta = 0.
fn operation(dir: Direction, g: &Geometry, t: &[Desc; 3], conv: &Desc) -> Result<Desc> {
    use A::*;
    let (kind, [x, w, y, alpha, beta, desc]) = match dir {
        Direction::Forward => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
            [
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
            ],
        ),
        Direction::BackwardData => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            [
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
            ],
        ),
        Direction::BackwardFilter => (
            D::CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
            [
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
            ],
        ),
    };
    let op = Desc::new(kind)?;
    op.set_descs(x, &[&t[0]])?;
    op.set_descs(w, &[&t[1]])?;
    op.set_descs(y, &[&t[2]])?;
    op.set_descs(desc, &[conv])?;
    if g.dtype == DType::F64 {
        op.set(alpha, T::CUDNN_TYPE_DOUBLE, &[1.0f64])?;
        op.set(beta, T::CUDNN_TYPE_DOUBLE, &[0.0f64])?;
    } else {
        op.set(alpha, T::CUDNN_TYPE_FLOAT, &[1.0f32])?;
        op.set(beta, T::CUDNN_TYPE_FLOAT, &[0.0f32])?;
    }
    op.finalize("convolution operation")?;
    Ok(op)
}

/// The engine configurations cuDNN's heuristics of `mode` propose for
/// `graph`, best first.
fn proposals(graph: &Desc, mode: ds::cudnnBackendHeurMode_t) -> Result<Vec<Desc>> {
    let heur = Desc::new(D::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)?;
    heur.set_descs(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, &[graph])?;
    heur.set(A::CUDNN_ATTR_ENGINEHEUR_MODE, T::CUDNN_TYPE_HEUR_MODE, &[mode])?;
    if !heur.try_finalize() {
        return Ok(vec![]);
    }
    let mut count = 0i64;
    // SAFETY: asking for the number of results only.
    unsafe {
        ds::cudnnBackendGetAttribute(
            heur.0,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            0,
            &mut count,
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(|e| cuda_error("cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)", e))?;
    let configs = (0..count.max(0))
        .map(|_| Desc::new(D::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))
        .collect::<Result<Vec<_>>>()?;
    let mut raw: Vec<ds::cudnnBackendDescriptor_t> = configs.iter().map(|d| d.0).collect();
    let mut got = 0i64;
    // SAFETY: `raw` holds `count` created engine-config descriptors that
    // cuDNN fills in.
    unsafe {
        ds::cudnnBackendGetAttribute(
            heur.0,
            A::CUDNN_ATTR_ENGINEHEUR_RESULTS,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            count,
            &mut got,
            raw.as_mut_ptr().cast(),
        )
    }
    .result()
    .map_err(|e| cuda_error("cudnnBackendGetAttribute(ENGINEHEUR_RESULTS)", e))?;
    let mut configs = configs;
    configs.truncate(got.clamp(0, count) as usize);
    Ok(configs)
}

/// The global index of the engine of `config`, when its engine keeps the
/// numerics asked for.
fn allowed(config: &Desc, dtype: DType, tf32: bool) -> Result<Option<i64>> {
    use ds::cudnnBackendNumericalNote_t::*;
    let engine = Desc::new(D::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?;
    let mut raw = engine.0;
    let mut n = 0i64;
    // SAFETY: `raw` is one created engine descriptor cuDNN fills in.
    let got = unsafe {
        ds::cudnnBackendGetAttribute(
            config.0,
            A::CUDNN_ATTR_ENGINECFG_ENGINE,
            T::CUDNN_TYPE_BACKEND_DESCRIPTOR,
            1,
            &mut n,
            (&mut raw as *mut ds::cudnnBackendDescriptor_t).cast(),
        )
    };
    if got.result().is_err() {
        return Ok(None);
    }
    let mut index = -1i64;
    // SAFETY: one INT64 result.
    let _ = unsafe {
        ds::cudnnBackendGetAttribute(
            engine.0,
            A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
            T::CUDNN_TYPE_INT64,
            1,
            &mut n,
            (&mut index as *mut i64).cast(),
        )
    };
    // read as integers: a newer library may know notes this binding does not
    let mut notes = [u32::MAX; 32];
    // SAFETY: `notes` holds 32 enum-sized slots.
    let got = unsafe {
        ds::cudnnBackendGetAttribute(
            engine.0,
            A::CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
            T::CUDNN_TYPE_NUMERICAL_NOTE,
            notes.len() as i64,
            &mut n,
            notes.as_mut_ptr().cast(),
        )
    };
    if got.result().is_err() {
        return Ok(None);
    }
    let notes = &notes[..n.clamp(0, 32) as usize];
    let has = |note: ds::cudnnBackendNumericalNote_t| notes.contains(&(note as u32));
    let down_converts = has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
    let tf32_cores = dtype == DType::F32 && !tf32 && has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    Ok((!down_converts && !tf32_cores).then_some(index))
}

/// The plans for direction `dir` of geometry `g` that finalize on this
/// device, in cuDNN's order of preference: all of them up to `limit`.
#[allow(clippy::type_complexity)]
fn plans(h: ds::cudnnHandle_t, dir: Direction, g: &Geometry, limit: usize) -> Result<(Vec<Plan>, Vec<Desc>)> {
    let t = [
        tensor(g.dtype, UIDS[0], &g.tensors[0], g.alignment)?,
        tensor(g.dtype, UIDS[1], &g.tensors[1], g.alignment)?,
        tensor(g.dtype, UIDS[2], &g.tensors[2], g.alignment)?,
    ];
    let conv = convolution(g)?;
    let op = operation(dir, g, &t, &conv)?;
    let graph = Desc::new(D::CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)?;
    graph.set(A::CUDNN_ATTR_OPERATIONGRAPH_HANDLE, T::CUDNN_TYPE_HANDLE, &[h])?;
    graph.set_descs(A::CUDNN_ATTR_OPERATIONGRAPH_OPS, &[&op])?;
    if !graph.try_finalize() {
        return Ok((vec![], vec![]));
    }
    let mut configs = proposals(&graph, ds::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_INSTANT)?;
    configs.extend(proposals(
        &graph,
        ds::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK,
    )?);
    let mut found = Vec::new();
    for config in configs {
        if found.len() >= limit {
            break;
        }
        let Some(engine) = allowed(&config, g.dtype, g.tf32)? else {
            continue;
        };
        let plan = Desc::new(D::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)?;
        plan.set(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, T::CUDNN_TYPE_HANDLE, &[h])?;
        plan.set_descs(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, &[&config])?;
        if !plan.try_finalize() {
            continue;
        }
        let mut bytes = 0i64;
        let mut n = 0i64;
        // SAFETY: one INT64 result.
        unsafe {
            ds::cudnnBackendGetAttribute(
                plan.0,
                A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                T::CUDNN_TYPE_INT64,
                1,
                &mut n,
                (&mut bytes as *mut i64).cast(),
            )
        }
        .result()
        .map_err(|e| cuda_error("cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)", e))?;
        found.push(Plan {
            plan,
            engine,
            workspace: bytes.max(0) as usize,
            _graph: vec![config],
        });
    }
    // the tensors, convolution, operation and graph: to outlive the plans
    let mut shared: Vec<Desc> = t.into_iter().collect();
    shared.extend([conv, op, graph]);
    Ok((found, shared))
}

/// Runs `plan` on the three addresses (input side, filter, output side)
/// with a workspace of `plan.workspace` bytes at `workspace`.
pub(super) fn execute(
    h: ds::cudnnHandle_t,
    plan: &Plan,
    addrs: [*mut c_void; 3],
    workspace: *mut c_void,
) -> Result<()> {
    let pack = Desc::new(D::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)?;
    pack.set_i64(A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, &UIDS)?;
    pack.set(
        A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
        T::CUDNN_TYPE_VOID_PTR,
        &addrs,
    )?;
    pack.set(
        A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
        T::CUDNN_TYPE_VOID_PTR,
        &[workspace],
    )?;
    pack.finalize("variant pack")?;
    // SAFETY: a finalized plan and a variant pack whose addresses hold the
    // tensors the plan was built for; the handle is held under the mutex.
    unsafe { ds::cudnnBackendExecute(h, plan.plan.0, pack.0) }
        .result()
        .map_err(|e| cuda_error("cudnnBackendExecute", e))
}

/// The plan for direction `dir` of `g` and its time per run in
/// milliseconds: cuDNN's first working proposal (not timed: NaN), or with
/// `benchmark` the fastest of its first ten, each run on `addrs` (the
/// output side is overwritten, which the caller does next anyway). `None`
/// when the graph API has no engine for it.
pub(super) fn choose(
    h: ds::cudnnHandle_t,
    stream: cu::CUstream,
    dir: Direction,
    g: &Geometry,
    benchmark: bool,
    addrs: [*mut c_void; 3],
    debug: bool,
) -> Result<Option<(Plan, f32)>> {
    let built = plans(h, dir, g, if benchmark { BENCHMARK_LIMIT } else { 1 })?;
    // declared first, dropped last: every plan goes before the descriptors
    // it was built from, on every path out of here
    let shared = built.1;
    let mut plans = built.0;
    if !benchmark {
        if let (Some(p), true) = (plans.first(), debug) {
            eprintln!("kiln: cuDNN {dir:?} {:?} takes engine {}", g.dtype, p.engine);
        }
        return Ok(plans.pop().map(|mut p| {
            p._graph.extend(shared);
            (p, f32::NAN)
        }));
    }
    let mut best: Option<(f32, usize)> = None;
    for (i, plan) in plans.iter().enumerate() {
        let ms = time(h, stream, plan, addrs)?;
        if debug {
            eprintln!(
                "kiln: cuDNN {dir:?} {:?} engine {} workspace {} B: {}",
                g.dtype,
                plan.engine,
                plan.workspace,
                ms.map_or("failed".into(), |t| format!("{t:.4} ms"))
            );
        }
        if let Some(ms) = ms {
            if best.is_none_or(|(b, _)| ms < b) {
                best = Some((ms, i));
            }
        }
    }
    let Some((ms, i)) = best else {
        return Ok(None);
    };
    // the shared descriptors go with the winner
    let mut chosen = plans.swap_remove(i);
    chosen._graph.extend(shared);
    if debug {
        eprintln!("kiln: cuDNN {dir:?} {:?} chose engine {}", g.dtype, chosen.engine);
    }
    Ok(Some((chosen, ms)))
}

/// The time per run of `plan` (the mean of three after one warm-up), or
/// `None` when it fails to run (or its workspace cannot be had).
fn time(
    h: ds::cudnnHandle_t,
    stream: cu::CUstream,
    plan: &Plan,
    addrs: [*mut c_void; 3],
) -> Result<Option<f32>> {
    crate::core::capture::refuse(
        "times cuDNN's algorithms for a new shape (cudnn benchmark; run the block once before capturing)",
    )?;
    let Ok(ws) = CudaStorage::alloc(DType::U8, plan.workspace.max(1)) else {
        return Ok(None);
    };
    let ws_addr = ws.addr(0);
    if execute(h, plan, addrs, ws_addr).is_err() {
        return Ok(None);
    }
    let flags = cu::CUevent_flags::CU_EVENT_DEFAULT;
    let start = drv::event::create(flags).map_err(|e| cuda_error("cuEventCreate", e))?;
    let end = drv::event::create(flags).map_err(|e| cuda_error("cuEventCreate", e))?;
    // SAFETY: live events and the stream the handle is bound to.
    let ms = unsafe {
        let timed = (|| -> Result<f32> {
            drv::event::record(start, stream).map_err(|e| cuda_error("cuEventRecord", e))?;
            for _ in 0..3 {
                execute(h, plan, addrs, ws_addr)?;
            }
            drv::event::record(end, stream).map_err(|e| cuda_error("cuEventRecord", e))?;
            drv::event::synchronize(end).map_err(|e| cuda_error("cuEventSynchronize", e))?;
            drv::event::elapsed(start, end).map_err(|e| cuda_error("cuEventElapsedTime", e))
        })()
        .map(|ms| ms / 3.0);
        let _ = drv::event::destroy(start);
        let _ = drv::event::destroy(end);
        timed
    };
    Ok(ms.ok())
}
