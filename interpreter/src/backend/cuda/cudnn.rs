//! cuDNN convolutions: forward, backward-data and backward-filter through
//! cudarc's `cudnn` bindings (the library is loaded at run time; a machine
//! without it gets a clear error naming it, and everything else still
//! runs). Tensors are described by their strides (NCHW or NHWC order, 3-D
//! to 5-D; a 1-D convolution is a 2-D one of height 1), filters by their
//! packed format. The algorithm of each direction comes from cuDNN's
//! heuristics once per geometry and is cached with its workspace size (as
//! PyTorch's cache of `cudnnFind` results); workspaces come from the
//! caching allocator; every call runs on the calling engine's stream.

use super::blas::allow_tf32;
use super::runtime::cuda_error;
use super::{CudaRuntime, CudaStorage};
use crate::backend::conv::ConvSpec;
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout};
use cudarc::cudnn::{result as dnn, sys as ds};
use cudarc::driver::sys::CUstream;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

/// The three directions of a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Direction {
    Forward,
    BackwardData,
    BackwardFilter,
}

/// A geometry's key in the algorithm cache: direction, dtype, the three
/// tensors' dims and strides, and the convolution.
type AlgoKey = (Direction, DType, Vec<i64>, ConvSpec);

/// The cuDNN handle (created on the first convolution), the stream it is
/// bound to, and the algorithms chosen so far: `(algorithm, workspace bytes)`.
pub(crate) struct DnnHandle {
    handle: Option<ds::cudnnHandle_t>,
    bound: CUstream,
    algos: HashMap<AlgoKey, (u32, usize)>,
}

// SAFETY: a cuDNN handle may be used from any thread as long as calls are
// not concurrent; it is only reached through the runtime's mutex.
unsafe impl Send for DnnHandle {}

impl DnnHandle {
    pub(crate) fn new() -> DnnHandle {
        DnnHandle {
            handle: None,
            bound: std::ptr::null_mut(),
            algos: HashMap::new(),
        }
    }

    /// The handle, bound to `stream`.
    fn on(&mut self, stream: CUstream) -> Result<ds::cudnnHandle_t> {
        let handle = match self.handle {
            Some(h) => h,
            None => {
                // cudarc panics when it cannot load the library
                let h = std::panic::catch_unwind(dnn::create_handle)
                    .map_err(|_| Error::DeviceUnavailable {
                        device: "cuda:0".into(),
                        reason: "the cuDNN library (libcudnn.so.9) could not be loaded; convolutions on CUDA through cuDNN need it"
                            .into(),
                    })?
                    .map_err(|e| cuda_error("cudnnCreate", e))?;
                self.handle = Some(h);
                self.bound = std::ptr::null_mut();
                h
            }
        };
        if self.bound != stream {
            // SAFETY: a live handle and a live stream of this context.
            unsafe { dnn::set_stream(handle, stream as _) }.map_err(|e| cuda_error("cudnnSetStream", e))?;
            self.bound = stream;
        }
        Ok(handle)
    }
}

impl DnnHandle {
    /// The algorithm and workspace bytes for geometry `k`: cached, or from
    /// `query` (cuDNN's heuristics) the first time.
    fn algorithm(
        &mut self,
        k: AlgoKey,
        query: impl FnOnce() -> Result<(u32, usize)>,
    ) -> Result<(u32, usize)> {
        if let Some(&found) = self.algos.get(&k) {
            return Ok(found);
        }
        let found = query()?;
        self.algos.insert(k, found);
        Ok(found)
    }
}

/// A tensor descriptor, destroyed on drop.
struct TensorDesc(ds::cudnnTensorDescriptor_t);
impl Drop for TensorDesc {
    fn drop(&mut self) {
        // SAFETY: created by this wrapper and destroyed once.
        let _ = unsafe { dnn::destroy_tensor_descriptor(self.0) };
    }
}

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

fn data_type(dtype: DType) -> Result<ds::cudnnDataType_t> {
    use ds::cudnnDataType_t::*;
    Ok(match dtype {
        DType::F32 => CUDNN_DATA_FLOAT,
        DType::F64 => CUDNN_DATA_DOUBLE,
        DType::F16 => CUDNN_DATA_HALF,
        DType::BF16 => CUDNN_DATA_BFLOAT16,
        d => {
            return Err(Error::UnsupportedDType {
                op: "conv",
                dtype: d,
                hint: " (convolutions take f16, bf16, f32 or f64)".into(),
            })
        }
    })
}

fn int(v: usize) -> Result<c_int> {
    c_int::try_from(v)
        .map_err(|_| Error::invalid("conv", format!("a size or stride of {v} is too large for cuDNN")))
}

/// Shape and strides with a height-1 dim inserted before the last one when
/// the tensor has one spatial dim (cuDNN's descriptors start at 4-D).
fn at_least_4d(l: &Layout) -> (Vec<usize>, Vec<usize>) {
    let (mut shape, mut strides) = (l.shape().to_vec(), l.strides().to_vec());
    if shape.len() == 3 {
        let (len, step) = (shape[2], strides[2]);
        shape.insert(2, 1);
        strides.insert(2, len.max(1) * step);
    }
    (shape, strides)
}

fn tensor_desc(dtype: DType, l: &Layout) -> Result<TensorDesc> {
    let (shape, strides) = at_least_4d(l);
    let dims = shape.iter().map(|&v| int(v)).collect::<Result<Vec<_>>>()?;
    let steps = strides.iter().map(|&v| int(v)).collect::<Result<Vec<_>>>()?;
    let d = TensorDesc(
        dnn::create_tensor_descriptor().map_err(|e| cuda_error("cudnnCreateTensorDescriptor", e))?,
    );
    // SAFETY: a live descriptor; dims and strides outlive the call.
    unsafe {
        dnn::set_tensornd_descriptor(
            d.0,
            data_type(dtype)?,
            int(dims.len())?,
            dims.as_ptr(),
            steps.as_ptr(),
        )
    }
    .map_err(|e| cuda_error("cudnnSetTensorNdDescriptor", e))?;
    Ok(d)
}

/// True when `l` is dense with channels innermost (NHWC order).
fn channels_last(l: &Layout) -> bool {
    let (shape, strides) = (l.shape(), l.strides());
    let n = shape.len();
    let mut order: Vec<usize> = vec![0];
    order.extend(2..n);
    order.push(1);
    let mut expected = 1;
    for &d in order.iter().rev() {
        if shape[d] != 1 && strides[d] != expected {
            return false;
        }
        expected *= shape[d];
    }
    true
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
    (dir, dtype, geo, spec.clone())
}

/// The scaling factors alpha = 1, beta = 0 in the compute type.
enum Scale {
    F32([f32; 2]),
    F64([f64; 2]),
}

impl Scale {
    fn of(dtype: DType) -> Scale {
        if dtype == DType::F64 {
            Scale::F64([1.0, 0.0])
        } else {
            Scale::F32([1.0, 0.0])
        }
    }
    fn alpha(&self) -> *const c_void {
        match self {
            Scale::F32(v) => &v[0] as *const f32 as *const c_void,
            Scale::F64(v) => &v[0] as *const f64 as *const c_void,
        }
    }
    fn beta(&self) -> *const c_void {
        match self {
            Scale::F32(v) => &v[1] as *const f32 as *const c_void,
            Scale::F64(v) => &v[1] as *const f64 as *const c_void,
        }
    }
}

/// Picks the first algorithm cuDNN's heuristics rank as working.
fn first_ok<P>(
    results: &[P],
    count: c_int,
    status: impl Fn(&P) -> bool,
    algo: impl Fn(&P) -> u32,
    ws: impl Fn(&P) -> usize,
) -> Result<(u32, usize)> {
    results[..count.max(0) as usize]
        .iter()
        .find(|p| status(p))
        .map(|p| (algo(p), ws(p)))
        .ok_or_else(|| Error::invalid("conv", "cuDNN found no algorithm for this convolution"))
}

const ALGOS: usize = 8;

impl CudaStorage {
    /// A dense output of `l`'s elements and a workspace of `bytes`.
    fn conv_buffers(dtype: DType, l: &Layout, bytes: usize) -> Result<(CudaStorage, CudaStorage)> {
        Ok((
            CudaStorage::alloc(dtype, l.storage_extent())?,
            CudaStorage::alloc(DType::U8, bytes.max(1))?,
        ))
    }

    /// The typed address of element `offset`.
    fn addr(&self, offset: usize) -> *mut c_void {
        (self.ptr() as usize + offset * self.dtype.size_in_bytes()) as *mut c_void
    }

    /// See [`crate::backend::Storage::conv_forward`].
    pub(crate) fn conv_forward(
        &self,
        lx: &Layout,
        w: &CudaStorage,
        lw: &Layout,
        ly: &Layout,
        spec: &ConvSpec,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, wd, yd, cd) = (
            tensor_desc(dtype, lx)?,
            filter_desc(dtype, lw)?,
            tensor_desc(dtype, ly)?,
            conv_desc(dtype, spec)?,
        );
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        let k = key(Direction::Forward, dtype, [lx, lw, ly], spec);
        let (algo, bytes) = dnn_lock.algorithm(k, || {
            let mut results: [ds::cudnnConvolutionFwdAlgoPerf_t; ALGOS] = unsafe { std::mem::zeroed() };
            let mut count: c_int = 0;
            // SAFETY: live descriptors; `results` holds ALGOS entries.
            unsafe {
                dnn::get_convolution_forward_algorithm(
                    h,
                    xd.0,
                    wd.0,
                    cd.0,
                    yd.0,
                    ALGOS as c_int,
                    &mut count,
                    results.as_mut_ptr(),
                )
            }
            .map_err(|e| cuda_error("cudnnGetConvolutionForwardAlgorithm_v7", e))?;
            first_ok(
                &results,
                count,
                |p| p.status == ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
                |p| p.algo as u32,
                |p| p.memory,
            )
        })?;
        // SAFETY: `algo` came from cuDNN's own enumeration of this type.
        let algo: ds::cudnnConvolutionFwdAlgo_t = unsafe { std::mem::transmute(algo) };
        let (y, ws) = Self::conv_buffers(dtype, ly, bytes)?;
        let s = Scale::of(dtype);
        // SAFETY: descriptors match the buffers' dtypes and layouts; the
        // workspace holds `bytes`; the handle is held under the mutex.
        unsafe {
            dnn::convolution_forward(
                h,
                s.alpha(),
                xd.0,
                self.addr(lx.offset()),
                wd.0,
                w.addr(lw.offset()),
                cd.0,
                algo,
                ws.addr(0),
                bytes,
                s.beta(),
                yd.0,
                y.addr(ly.offset()),
            )
        }
        .map_err(|e| cuda_error("cudnnConvolutionForward", e))?;
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
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (dyd, wd, dxd, cd) = (
            tensor_desc(dtype, ly)?,
            filter_desc(dtype, lw)?,
            tensor_desc(dtype, lx)?,
            conv_desc(dtype, spec)?,
        );
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        let k = key(Direction::BackwardData, dtype, [lx, lw, ly], spec);
        let (algo, bytes) = dnn_lock.algorithm(k, || {
            let mut results: [ds::cudnnConvolutionBwdDataAlgoPerf_t; ALGOS] = unsafe { std::mem::zeroed() };
            let mut count: c_int = 0;
            // SAFETY: live descriptors; `results` holds ALGOS entries.
            unsafe {
                dnn::get_convolution_backward_data_algorithm(
                    h,
                    wd.0,
                    dyd.0,
                    cd.0,
                    dxd.0,
                    ALGOS as c_int,
                    &mut count,
                    results.as_mut_ptr(),
                )
            }
            .map_err(|e| cuda_error("cudnnGetConvolutionBackwardDataAlgorithm_v7", e))?;
            first_ok(
                &results,
                count,
                |p| p.status == ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
                |p| p.algo as u32,
                |p| p.memory,
            )
        })?;
        // SAFETY: `algo` came from cuDNN's own enumeration of this type.
        let algo: ds::cudnnConvolutionBwdDataAlgo_t = unsafe { std::mem::transmute(algo) };
        let (dx, ws) = Self::conv_buffers(dtype, lx, bytes)?;
        let s = Scale::of(dtype);
        // SAFETY: as in `conv_forward`.
        unsafe {
            dnn::convolution_backward_data(
                h,
                s.alpha(),
                wd.0,
                w.addr(lw.offset()),
                dyd.0,
                self.addr(ly.offset()),
                cd.0,
                algo,
                ws.addr(0),
                bytes,
                s.beta(),
                dxd.0,
                dx.addr(lx.offset()),
            )
        }
        .map_err(|e| cuda_error("cudnnConvolutionBackwardData", e))?;
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
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, dyd, dwd, cd) = (
            tensor_desc(dtype, lx)?,
            tensor_desc(dtype, ly)?,
            filter_desc(dtype, lw)?,
            conv_desc(dtype, spec)?,
        );
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        let k = key(Direction::BackwardFilter, dtype, [lx, lw, ly], spec);
        let (algo, bytes) = dnn_lock.algorithm(k, || {
            let mut results: [ds::cudnnConvolutionBwdFilterAlgoPerf_t; ALGOS] = unsafe { std::mem::zeroed() };
            let mut count: c_int = 0;
            // SAFETY: live descriptors; `results` holds ALGOS entries.
            unsafe {
                dnn::get_convolution_backward_filter_algorithm(
                    h,
                    xd.0,
                    dyd.0,
                    cd.0,
                    dwd.0,
                    ALGOS as c_int,
                    &mut count,
                    results.as_mut_ptr(),
                )
            }
            .map_err(|e| cuda_error("cudnnGetConvolutionBackwardFilterAlgorithm_v7", e))?;
            first_ok(
                &results,
                count,
                |p| p.status == ds::cudnnStatus_t::CUDNN_STATUS_SUCCESS,
                |p| p.algo as u32,
                |p| p.memory,
            )
        })?;
        // SAFETY: `algo` came from cuDNN's own enumeration of this type.
        let algo: ds::cudnnConvolutionBwdFilterAlgo_t = unsafe { std::mem::transmute(algo) };
        let (dw, ws) = Self::conv_buffers(dtype, lw, bytes)?;
        let s = Scale::of(dtype);
        // SAFETY: as in `conv_forward`.
        unsafe {
            dnn::convolution_backward_filter(
                h,
                s.alpha(),
                xd.0,
                self.addr(lx.offset()),
                dyd.0,
                dy.addr(ly.offset()),
                cd.0,
                algo,
                ws.addr(0),
                bytes,
                s.beta(),
                dwd.0,
                dw.addr(lw.offset()),
            )
        }
        .map_err(|e| cuda_error("cudnnConvolutionBackwardFilter", e))?;
        Ok(dw)
    }
}
