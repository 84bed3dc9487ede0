//! Pooling through cuDNN: maximum and average windows over 1 to 3 spatial
//! dims (a 1-D pooling is a 2-D one of height 1), forward and backward.

use super::{cuda_error, int, tensor_desc, Scale};
use crate::backend::cuda::{CudaRuntime, CudaStorage};
use crate::backend::pool::{PoolMode, PoolSpec};
use crate::core::error::Result;
use crate::core::Layout;
use cudarc::cudnn::{result as dnn, sys as ds};

/// A pooling descriptor, destroyed on drop.
struct PoolDesc(ds::cudnnPoolingDescriptor_t);
impl Drop for PoolDesc {
    fn drop(&mut self) {
        // SAFETY: created by this wrapper and destroyed once.
        let _ = unsafe { ds::cudnnDestroyPoolingDescriptor(self.0) };
    }
}

fn pool_desc(spec: &PoolSpec) -> Result<PoolDesc> {
    let one = spec.window.len() == 1;
    let lift = |v: &[usize], fill: usize| -> Result<Vec<i32>> {
        let mut out: Vec<usize> = if one { vec![fill] } else { vec![] };
        out.extend_from_slice(v);
        out.into_iter().map(int).collect()
    };
    let (window, pads, strides) = (
        lift(&spec.window, 1)?,
        lift(&spec.padding, 0)?,
        lift(&spec.stride, 1)?,
    );
    let mode = match spec.mode {
        PoolMode::Max => ds::cudnnPoolingMode_t::CUDNN_POOLING_MAX,
        PoolMode::AvgIncludePad => ds::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
        PoolMode::AvgExcludePad => ds::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
    };
    let d = PoolDesc(
        dnn::create_pooling_descriptor().map_err(|e| cuda_error("cudnnCreatePoolingDescriptor", e))?,
    );
    // SAFETY: a live descriptor; the arrays outlive the call.
    unsafe {
        dnn::set_pooling_descriptor(
            d.0,
            mode,
            ds::cudnnNanPropagation_t::CUDNN_PROPAGATE_NAN,
            int(window.len())?,
            &window,
            &pads,
            &strides,
        )
    }
    .map_err(|e| cuda_error("cudnnSetPoolingNdDescriptor", e))?;
    Ok(d)
}

impl CudaStorage {
    /// See [`crate::backend::Storage::pool_forward`].
    pub(crate) fn pool_forward(&self, lx: &Layout, ly: &Layout, spec: &PoolSpec) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, yd, pd) = (tensor_desc(dtype, lx)?, tensor_desc(dtype, ly)?, pool_desc(spec)?);
        let y = CudaStorage::alloc(dtype, ly.storage_extent())?;
        let s = Scale::of(dtype);
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        // SAFETY: descriptors match the buffers' dtypes and layouts; the
        // handle is held under the mutex.
        unsafe {
            dnn::pooling_forward(
                h,
                pd.0,
                s.alpha(),
                xd.0,
                self.addr(lx.offset()),
                s.beta(),
                yd.0,
                y.addr(ly.offset()),
            )
        }
        .map_err(|e| cuda_error("cudnnPoolingForward", e))?;
        Ok(y)
    }

    /// See [`crate::backend::Storage::pool_backward`].
    pub(crate) fn pool_backward(
        &self,
        ly: &Layout,
        y: &CudaStorage,
        x: &CudaStorage,
        lx: &Layout,
        spec: &PoolSpec,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let dtype = self.dtype;
        let (xd, yd, pd) = (tensor_desc(dtype, lx)?, tensor_desc(dtype, ly)?, pool_desc(spec)?);
        let dx = CudaStorage::alloc(dtype, lx.storage_extent())?;
        let s = Scale::of(dtype);
        let mut dnn_lock = rt.dnn.lock().unwrap_or_else(|p| p.into_inner());
        let h = dnn_lock.on(rt.cu_stream())?;
        // SAFETY: as in `pool_forward`; `y`, `dy` share `ly`, `x`, `dx` share `lx`.
        unsafe {
            ds::cudnnPoolingBackward(
                h,
                pd.0,
                s.alpha(),
                yd.0,
                y.addr(ly.offset()),
                yd.0,
                self.addr(ly.offset()),
                xd.0,
                x.addr(lx.offset()),
                s.beta(),
                xd.0,
                dx.addr(lx.offset()),
            )
        }
        .result()
        .map_err(|e| cuda_error("cudnnPoolingBackward", e))?;
        Ok(dx)
    }
}
