//! Convolutions through cuDNN: descriptors of filters and convolutions, the
//! algorithm of each direction (heuristics, or timed in benchmark mode) and
//! the forward, backward-data and backward-filter calls.

use super::{at_least_4d, benchmark, channels_last, cuda_error, data_type, int, tensor_desc};
use super::{AlgoKey, Direction, Scale, NO_ALGORITHM};
use crate::backend::conv::ConvSpec;
use crate::backend::cuda::blas::allow_tf32;
use crate::backend::cuda::{CudaRuntime, CudaStorage};
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout};
use cudarc::cudnn::{result as dnn, sys as ds};
use std::ffi::c_int;

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

/// Picks the first algorithm cuDNN ranks as working (by its heuristics, or
/// by time in benchmark mode).
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
        .ok_or_else(|| Error::invalid("conv", NO_ALGORITHM))
}

const ALGOS: usize = 8;

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
            if benchmark() {
                unsafe {
                    ds::cudnnFindConvolutionForwardAlgorithm(
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
                .result()
                .map_err(|e| cuda_error("cudnnFindConvolutionForwardAlgorithm", e))?;
            } else {
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
            }
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
            if benchmark() {
                unsafe {
                    ds::cudnnFindConvolutionBackwardDataAlgorithm(
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
                .result()
                .map_err(|e| cuda_error("cudnnFindConvolutionBackwardDataAlgorithm", e))?;
            } else {
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
            }
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
            if benchmark() {
                unsafe {
                    ds::cudnnFindConvolutionBackwardFilterAlgorithm(
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
                .result()
                .map_err(|e| cuda_error("cudnnFindConvolutionBackwardFilterAlgorithm", e))?;
            } else {
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
            }
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
