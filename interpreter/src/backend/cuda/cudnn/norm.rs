//! Batch normalisation while training through cuDNN (spatial mode: one
//! mean and variance per channel over the batch and positions), forward
//! with the running statistics' update and backward with the parameters'
//! gradients in the same call.

use super::{cuda_error, tensor_desc, Scale, TensorDesc};
use crate::backend::cuda::{CudaRuntime, CudaStorage};
use crate::core::error::Result;
use crate::core::{DType, Layout};
use cudarc::cudnn::{result as dnn, sys as ds};
use std::ffi::c_void;

const MODE: ds::cudnnBatchNormMode_t = ds::cudnnBatchNormMode_t::CUDNN_BATCHNORM_SPATIAL;

/// The `[1, C, 1, 1]` descriptor of the per-channel parameters of `x`.
fn param_desc(x: &TensorDesc) -> Result<TensorDesc> {
    let d = TensorDesc(
        dnn::create_tensor_descriptor().map_err(|e| cuda_error("cudnnCreateTensorDescriptor", e))?,
    );
    // SAFETY: two live descriptors.
    unsafe { ds::cudnnDeriveBNTensorDescriptor(d.0, x.0, MODE) }
        .result()
        .map_err(|e| cuda_error("cudnnDeriveBNTensorDescriptor", e))?;
    Ok(d)
}

/// The dtype of the per-channel parameters and statistics for inputs of `dtype`.
fn param_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

impl CudaStorage {
    /// See [`crate::backend::Storage::batch_norm_train`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn batch_norm_train(
        &self,
        lx: &Layout,
        ly: &Layout,
        weight: &CudaStorage,
        bias: &CudaStorage,
        running: Option<[(&CudaStorage, usize); 2]>,
        momentum: f64,
        eps: f64,
    ) -> Result<[CudaStorage; 3]> {
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, yd) = (tensor_desc(dtype, lx)?, tensor_desc(dtype, ly)?);
        let pd = param_desc(&xd)?;
        let channels = lx.shape()[1];
        let y = CudaStorage::alloc(dtype, ly.storage_extent())?;
        let mean = CudaStorage::alloc(param_dtype(dtype), channels)?;
        let inv_std = CudaStorage::alloc(param_dtype(dtype), channels)?;
        let (rm, rv): (*mut c_void, *mut c_void) = match running {
            Some([(m, mo), (v, vo)]) => (m.addr(mo), v.addr(vo)),
            None => (std::ptr::null_mut(), std::ptr::null_mut()),
        };
        let s = Scale::of(dtype);
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        // SAFETY: descriptors match the buffers' dtypes and layouts; the
        // parameters and statistics hold `channels` elements of the
        // parameter dtype; the handle is held under the mutex.
        unsafe {
            ds::cudnnBatchNormalizationForwardTraining(
                h,
                MODE,
                s.alpha(),
                s.beta(),
                xd.0,
                self.addr(lx.offset()),
                yd.0,
                y.addr(ly.offset()),
                pd.0,
                weight.addr(0),
                bias.addr(0),
                momentum,
                rm,
                rv,
                eps,
                mean.addr(0),
                inv_std.addr(0),
            )
        }
        .result()
        .map_err(|e| cuda_error("cudnnBatchNormalizationForwardTraining", e))?;
        Ok([y, mean, inv_std])
    }

    /// See [`crate::backend::Storage::batch_norm_backward`].
    pub(crate) fn batch_norm_backward(
        &self,
        lx: &Layout,
        dy: &CudaStorage,
        ly: &Layout,
        weight: &CudaStorage,
        saved: [&CudaStorage; 2],
        eps: f64,
    ) -> Result<[CudaStorage; 3]> {
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, dyd) = (tensor_desc(dtype, lx)?, tensor_desc(dtype, ly)?);
        let pd = param_desc(&xd)?;
        let channels = lx.shape()[1];
        let dx = CudaStorage::alloc(dtype, lx.storage_extent())?;
        let dw = CudaStorage::alloc(param_dtype(dtype), channels)?;
        let db = CudaStorage::alloc(param_dtype(dtype), channels)?;
        let s = Scale::of(dtype);
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        // SAFETY: as in `batch_norm_train`; `dx` shares `x`'s layout.
        unsafe {
            ds::cudnnBatchNormalizationBackward(
                h,
                MODE,
                s.alpha(),
                s.beta(),
                s.alpha(),
                s.beta(),
                xd.0,
                self.addr(lx.offset()),
                dyd.0,
                dy.addr(ly.offset()),
                xd.0,
                dx.addr(lx.offset()),
                pd.0,
                weight.addr(0),
                dw.addr(0),
                db.addr(0),
                eps,
                saved[0].addr(0),
                saved[1].addr(0),
            )
        }
        .result()
        .map_err(|e| cuda_error("cudnnBatchNormalizationBackward", e))?;
        Ok([dx, dw, db])
    }
}
