//! Convolutions through cuDNN: each direction runs the execution plan the
//! graph API ([`super::graph`]) chose for its geometry, or, where that API
//! has no engine (or `KILN_CUDNN_LEGACY=1` asks for it), the legacy calls:
//! filter and convolution descriptors, the algorithm of each direction
//! (heuristics, or timed in benchmark mode) and `cudnnConvolution*`.

use super::graph::{self, Geometry};
use super::{at_least_4d, benchmark, channels_last, cuda_error, data_type, int, tensor_desc, TensorDesc};
use super::{AlgoKey, Direction, DnnHandle, Scale, NO_ALGORITHM};
use crate::backend::conv::ConvSpec;
use crate::backend::cuda::blas::allow_tf32;
use crate::backend::cuda::{CudaRuntime, CudaStorage};
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout};
use cudarc::cudnn::{result as dnn, sys as ds};
use std::ffi::c_int;
use std::sync::OnceLock;

/// A filter descriptor, destroyed on drop.
struct FilterDesc(ds::cudnnFilterDescriptor_t);
impl Drop for FilterDesc {
    fn drop(&mut self) {
        // SAFETY: created by this wrapper and destroyed once.
        let _ = unsafe { dnn::destroy_filter_descriptor(self.0) };
    }
}

/// A convolution descriptor, destroyed on drop.
struct ConvDesc(ds::cudnnConvolutionDescriptor_t);
impl Drop for ConvDesc {
    fn drop(&mut self) {
        // SAFETY: created by this wrapper and destroyed once.
        let _ = unsafe { dnn::destroy_convolution_descriptor(self.0) };
    }
}

fn filter_desc(dtype: DType, l: &Layout) -> Result<FilterDesc> {
    use ds::cudnnTensorFormat_t::*;
    let format = if l.is_contiguous() {
        CUDNN_TENSOR_NCHW
    } else if channels_last(l) {
        CUDNN_TENSOR_NHWC
    } else {
        return Err(Error::invalid(
            "conv",
            "internal: cuDNN filters must be packed (NCHW or NHWC)",
        ));
    };
    let (shape, _) = at_least_4d(l);
    let dims = shape.iter().map(|&v| int(v)).collect::<Result<Vec<_>>>()?;
    let d = FilterDesc(
        dnn::create_filter_descriptor().map_err(|e| cuda_error("cudnnCreateFilterDescriptor", e))?,
    );
    // SAFETY: a live descriptor; dims outlive the call.
    unsafe { dnn::set_filternd_descriptor(d.0, data_type(dtype)?, format, int(dims.len())?, dims.as_ptr()) }
        .map_err(|e| cuda_error("cudnnSetFilterNdDescriptor", e))?;
    Ok(d)
}

fn conv_desc(dtype: DType, spec: &ConvSpec) -> Result<ConvDesc> {
    let one = spec.padding.len() == 1;
    let lift = |v: &[usize], fill: usize| -> Result<Vec<c_int>> {
        let mut out: Vec<usize> = if one { vec![fill] } else { vec![] };
        out.extend_from_slice(v);
        out.into_iter().map(int).collect()
    };
    let (pads, strides, dilations) = (
        lift(&spec.padding, 0)?,
        lift(&spec.stride, 1)?,
        lift(&spec.dilation, 1)?,
    );
    let compute = if dtype == DType::F64 {
        ds::cudnnDataType_t::CUDNN_DATA_DOUBLE
    } else {
        ds::cudnnDataType_t::CUDNN_DATA_FLOAT
    };
    let d = ConvDesc(
        dnn::create_convolution_descriptor()
            .map_err(|e| cuda_error("cudnnCreateConvolutionDescriptor", e))?,
    );
    let math = match dtype {
        DType::F16 | DType::BF16 => ds::cudnnMathType_t::CUDNN_TENSOR_OP_MATH,
        DType::F32 if allow_tf32() => ds::cudnnMathType_t::CUDNN_DEFAULT_MATH,
        DType::F32 => ds::cudnnMathType_t::CUDNN_FMA_MATH,
        _ => ds::cudnnMathType_t::CUDNN_DEFAULT_MATH,
    };
    // SAFETY: a live descriptor; the arrays outlive the calls.
    unsafe {
        dnn::set_convolutionnd_descriptor(
            d.0,
            int(pads.len())?,
            pads.as_ptr(),
            strides.as_ptr(),
            dilations.as_ptr(),
            ds::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
            compute,
        )
        .map_err(|e| cuda_error("cudnnSetConvolutionNdDescriptor", e))?;
        dnn::set_convolution_group_count(d.0, int(spec.groups)? as i32)
            .map_err(|e| cuda_error("cudnnSetConvolutionGroupCount", e))?;
        dnn::set_convolution_math_type(d.0, math)
            .map_err(|e| cuda_error("cudnnSetConvolutionMathType", e))?;
    }
    Ok(d)
}

/// The cache key of a geometry.
fn key(dir: Direction, dtype: DType, layouts: [&Layout; 3], spec: &ConvSpec) -> AlgoKey {
    let mut geo = Vec::new();
    for l in layouts {
        geo.push(l.ndim() as i64);
        geo.extend(l.shape().iter().map(|&v| v as i64));
        geo.extend(l.strides().iter().map(|&v| v as i64));
    }
    (dir, [benchmark(), allow_tf32()], dtype, geo, spec.clone())
}

/// The first algorithm cuDNN ranks as working (by its heuristics, or by
/// time in benchmark mode): `(algorithm, workspace bytes, milliseconds)`
/// (the time is cuDNN's measurement in benchmark mode only).
fn first_ok<P>(
    results: &[P],
    count: c_int,
    status: impl Fn(&P) -> bool,
    found: impl Fn(&P) -> (u32, usize, f32),
) -> Result<(u32, usize, f32)> {
    results[..count.max(0) as usize]
        .iter()
        .find(|p| status(p))
        .map(found)
        .ok_or_else(|| Error::invalid("conv", NO_ALGORITHM))
}

const ALGOS: usize = 8;

/// A tensor of a convolution: its storage and layout.
type Operand<'a> = (&'a CudaStorage, &'a Layout);

/// True when `KILN_CUDNN_LEGACY=1` keeps convolutions off the graph API.
fn legacy_only() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("KILN_CUDNN_LEGACY").is_ok_and(|v| v == "1"))
}

/// True when `KILN_CUDNN_DEBUG=1` asks why the graph API was passed over.
fn debug() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("KILN_CUDNN_DEBUG").is_ok_and(|v| v == "1"))
}

impl CudaStorage {
    /// See [`crate::backend::Storage::conv_forward`].
    pub(crate) fn conv_forward(
        &self,
        lx: &Layout,
        w: &CudaStorage,
        lw: &Layout,
        ly: &Layout,
        spec: &ConvSpec,
    ) -> Result<CudaStorage> {
        let y = CudaStorage::alloc(self.dtype, ly.storage_extent())?;
        convolve(Direction::Forward, [(self, lx), (w, lw), (&y, ly)], spec)?;
        Ok(y)
    }

    /// See [`crate::backend::Storage::conv_backward_data`].
    pub(crate) fn conv_backward_data(
        &self,
        ly: &Layout,
        w: &CudaStorage,
        lw: &Layout,
        lx: &Layout,
        spec: &ConvSpec,
    ) -> Result<CudaStorage> {
        let dx = CudaStorage::alloc(self.dtype, lx.storage_extent())?;
        convolve(Direction::BackwardData, [(&dx, lx), (w, lw), (self, ly)], spec)?;
        Ok(dx)
    }

    /// See [`crate::backend::Storage::conv_backward_filter`].
    pub(crate) fn conv_backward_filter(
        &self,
        lx: &Layout,
        dy: &CudaStorage,
        ly: &Layout,
        lw: &Layout,
        spec: &ConvSpec,
    ) -> Result<CudaStorage> {
        let dw = CudaStorage::alloc(self.dtype, lw.storage_extent())?;
        convolve(Direction::BackwardFilter, [(self, lx), (&dw, lw), (dy, ly)], spec)?;
        Ok(dw)
    }
}

/// Dims and strides as the graph API takes them (4-D at least).
fn dims_strides(l: &Layout) -> (Vec<i64>, Vec<i64>) {
    let (shape, strides) = at_least_4d(l);
    (
        shape.iter().map(|&v| v as i64).collect(),
        strides.iter().map(|&v| v as i64).collect(),
    )
}

/// Direction `dir` over `[input side, filter, output side]` (x or dx, w or
/// dw, y or dy), writing the side `dir` produces.
fn convolve(dir: Direction, t: [Operand; 3], spec: &ConvSpec) -> Result<()> {
    let rt = CudaRuntime::get()?;
    let dtype = t[0].0.dtype;
    let stream = rt.cu_stream();
    let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
    let h = dnn_lock.on(stream)?;
    let k = key(dir, dtype, [t[0].1, t[1].1, t[2].1], spec);
    if !legacy_only() {
        let addrs = t.map(|(s, l)| s.addr(l.offset()));
        let alignment = graph::alignment(addrs);
        let gk = (k.clone(), alignment);
        if !dnn_lock.plans.contains_key(&gk) {
            let g = Geometry {
                dtype,
                tensors: t.map(|(_, l)| dims_strides(l)),
                spec: spec.clone(),
                alignment,
                tf32: allow_tf32(),
            };
            // an error of the graph API leaves the legacy calls to try
            let chosen = graph::choose(h, stream, dir, &g, benchmark(), addrs, debug()).unwrap_or_else(|e| {
                if debug() {
                    eprintln!("kiln: cuDNN graph API passed over for {dir:?} {dtype:?}: {e}");
                }
                None
            });
            if chosen.is_none() && debug() {
                eprintln!(
                    "kiln: cuDNN graph API has no plan for {dir:?} {dtype:?} {:?}",
                    k.3
                );
            }
            let plan = match chosen {
                // in benchmark mode the legacy API's fastest algorithm runs
                // instead where it is quicker still (FFT and Winograd
                // kernels the graph API's heuristics do not propose)
                Some((plan, ms)) if benchmark() => {
                    let descs = LegacyDescs::new(dtype, [t[0].1, t[1].1, t[2].1], spec);
                    match descs.and_then(|d| d.query(h, dir)) {
                        Ok((algo, bytes, legacy_ms)) if legacy_ms >= 0.0 && legacy_ms < ms => {
                            if debug() {
                                eprintln!("kiln: cuDNN {dir:?} {dtype:?}: legacy algorithm {algo} is quicker ({legacy_ms:.4} ms)");
                            }
                            dnn_lock.algos.insert(k.clone(), (algo, bytes));
                            None
                        }
                        _ => Some(plan),
                    }
                }
                other => other.map(|(plan, _)| plan),
            };
            dnn_lock.plans.insert(gk.clone(), plan);
        }
        if let Some(plan) = &dnn_lock.plans[&gk] {
            let ws = CudaStorage::alloc(DType::U8, plan.workspace.max(1))?;
            return graph::execute(h, plan, addrs, ws.addr(0));
        }
    }
    legacy(&mut dnn_lock, h, dir, t, k, spec)
}

/// The legacy API's descriptors of a geometry: input side, filter, output
/// side, convolution.
struct LegacyDescs(TensorDesc, FilterDesc, TensorDesc, ConvDesc);

impl LegacyDescs {
    fn new(dtype: DType, [lx, lw, ly]: [&Layout; 3], spec: &ConvSpec) -> Result<LegacyDescs> {
        Ok(LegacyDescs(
            tensor_desc(dtype, lx)?,
            filter_desc(dtype, lw)?,
            tensor_desc(dtype, ly)?,
            conv_desc(dtype, spec)?,
        ))
    }

    /// The legacy algorithm of direction `dir`: `(algorithm, workspace
    /// bytes, milliseconds in benchmark mode)`.
    fn query(&self, h: ds::cudnnHandle_t, dir: Direction) -> Result<(u32, usize, f32)> {
        let LegacyDescs(xd, wd, yd, cd) = self;
        match dir {
            Direction::Forward => forward_algorithm(h, xd, wd, cd, yd),
            Direction::BackwardData => backward_data_algorithm(h, wd, yd, cd, xd),
            Direction::BackwardFilter => backward_filter_algorithm(h, xd, yd, cd, wd),
        }
    }
}

/// The legacy calls for direction `dir`.
fn legacy(
    dnn_lock: &mut DnnHandle,
    h: ds::cudnnHandle_t,
    dir: Direction,
    [(x, lx), (w, lw), (y, ly)]: [Operand; 3],
    k: AlgoKey,
    spec: &ConvSpec,
) -> Result<()> {
    let dtype = x.dtype;
    let descs = LegacyDescs::new(dtype, [lx, lw, ly], spec)?;
    let (algo, bytes) = dnn_lock.algorithm(k, || descs.query(h, dir).map(|(a, b, _)| (a, b)))?;
    let LegacyDescs(xd, wd, yd, cd) = descs;
    let s = Scale::of(dtype);
    let (xa, wa, ya) = (x.addr(lx.offset()), w.addr(lw.offset()), y.addr(ly.offset()));
    let workspace = |bytes: usize| CudaStorage::alloc(DType::U8, bytes.max(1));
    match dir {
        Direction::Forward => {
            // SAFETY: `algo` came from cuDNN's own enumeration of this type.
            let algo: ds::cudnnConvolutionFwdAlgo_t = unsafe { std::mem::transmute(algo) };
            let ws = workspace(bytes)?;
            // SAFETY: descriptors match the buffers' dtypes and layouts; the
            // workspace holds `bytes`; the handle is held under the mutex.
            unsafe {
                dnn::convolution_forward(
                    h,
                    s.alpha(),
                    xd.0,
                    xa,
                    wd.0,
                    wa,
                    cd.0,
                    algo,
                    ws.addr(0),
                    bytes,
                    s.beta(),
                    yd.0,
                    ya,
                )
            }
            .map_err(|e| cuda_error("cudnnConvolutionForward", e))
        }
        Direction::BackwardData => {
            // SAFETY: as above.
            let algo: ds::cudnnConvolutionBwdDataAlgo_t = unsafe { std::mem::transmute(algo) };
            let ws = workspace(bytes)?;
            // SAFETY: as above.
            unsafe {
                dnn::convolution_backward_data(
                    h,
                    s.alpha(),
                    wd.0,
                    wa,
                    yd.0,
                    ya,
                    cd.0,
                    algo,
                    ws.addr(0),
                    bytes,
                    s.beta(),
                    xd.0,
                    xa,
                )
            }
            .map_err(|e| cuda_error("cudnnConvolutionBackwardData", e))
        }
        Direction::BackwardFilter => {
            // SAFETY: as above.
            let algo: ds::cudnnConvolutionBwdFilterAlgo_t = unsafe { std::mem::transmute(algo) };
            let ws = workspace(bytes)?;
            // SAFETY: as above.
            unsafe {
                dnn::convolution_backward_filter(
                    h,
                    s.alpha(),
                    xd.0,
                    xa,
                    yd.0,
                    ya,
                    cd.0,
                    algo,
                    ws.addr(0),
                    bytes,
                    s.beta(),
                    wd.0,
                    wa,
                )
            }
            .map_err(|e| cuda_error("cudnnConvolutionBackwardFilter", e))
        }
    }
}

/// Defines the algorithm query of one direction of the legacy API: timed
/// (`cudnnFind…`) in benchmark mode, cuDNN's heuristics otherwise; the
/// first algorithm that works, with its workspace bytes.
macro_rules! algorithm_query {
    ($name:ident, $perf:ty, $find:ident, $get:ident, $get_name:literal,
     [$a:ident: $ta:ident, $b:ident: $tb:ident, $c:ident: $tc:ident, $d:ident: $td:ident]) => {
        fn $name(h: ds::cudnnHandle_t, $a: &$ta, $b: &$tb, $c: &$tc, $d: &$td) -> Result<(u32, usize, f32)> {
            // SAFETY: a plain C struct for which zero bytes are valid.
            let mut results: [$perf; ALGOS] = unsafe { std::mem::zeroed() };
            let mut count: c_int = 0;
            if benchmark() {
                // SAFETY: live descriptors; `results` holds ALGOS entries.
                unsafe {
                    ds::$find(
                        h,
                        $a.0,
                        $b.0,
                        $c.0,
                        $d.0,
                        ALGOS as c_int,
                        &mut count,
                        results.as_mut_ptr(),
                    )
                }
                .result()
                .map_err(|e| cuda_error(stringify!($find), e))?;
            } else {
                // SAFETY: as above.
                unsafe {
                    dnn::$get(
                        h,
                        $a.0,
                        $b.0,
                        $c.0,
                        $d.0,
                        ALGOS as c_int,
                        &mut count,
                        results.as_mut_ptr(),
                    )
                }
                .map_err(|e| cuda_error($get_name, e))?;
            }
            first_ok(
                &results,
                count,
                |p| p.status == ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
                |p| (p.algo as u32, p.memory, p.time),
            )
        }
    };
}

algorithm_query!(
    forward_algorithm,
    ds::cudnnConvolutionFwdAlgoPerf_t,
    cudnnFindConvolutionForwardAlgorithm,
    get_convolution_forward_algorithm,
    "cudnnGetConvolutionForwardAlgorithm_v7",
    [x: TensorDesc, w: FilterDesc, conv: ConvDesc, y: TensorDesc]
);
algorithm_query!(
    backward_data_algorithm,
    ds::cudnnConvolutionBwdDataAlgoPerf_t,
    cudnnFindConvolutionBackwardDataAlgorithm,
    get_convolution_backward_data_algorithm,
    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
    [w: FilterDesc, dy: TensorDesc, conv: ConvDesc, dx: TensorDesc]
);
algorithm_query!(
    backward_filter_algorithm,
    ds::cudnnConvolutionBwdFilterAlgoPerf_t,
    cudnnFindConvolutionBackwardFilterAlgorithm,
    get_convolution_backward_filter_algorithm,
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    [x: TensorDesc, dy: TensorDesc, conv: ConvDesc, dw: FilterDesc]
);
