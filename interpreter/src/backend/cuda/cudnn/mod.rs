//! cuDNN convolutions: forward, backward-data and backward-filter through
//! cudarc's `cudnn` bindings (the library is loaded at run time; a machine
//! without it gets a clear error naming it, and everything else still
//! runs). Tensors are described by their strides (NCHW or NHWC order, 3-D
//! to 5-D; a 1-D convolution is a 2-D one of height 1), filters by their
//! packed format. The algorithm of each direction comes once per geometry
//! from cuDNN's heuristics or, in benchmark mode (PyTorch's
//! `cudnn.benchmark`), from timing every algorithm (`cudnnFind…`), and is
//! cached with its workspace size; workspaces come from the caching
//! allocator; every call runs on the calling engine's stream.

use super::runtime::cuda_error;
use super::CudaStorage;
use crate::backend::conv::ConvSpec;
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout};
use cudarc::cudnn::{result as dnn, sys as ds};
use cudarc::driver::sys::CUstream;
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

mod conv;
mod graph;
mod norm;
mod pool;

/// The message of the error for a geometry cuDNN has no algorithm for; the
/// front-end retries such a convolution in the other memory order.
pub(crate) const NO_ALGORITHM: &str = "cuDNN found no algorithm for this convolution";

fn benchmark_flag() -> &'static AtomicBool {
    static ON: OnceLock<AtomicBool> = OnceLock::new();
    ON.get_or_init(|| AtomicBool::new(std::env::var("KILN_CUDNN_BENCHMARK").is_ok_and(|v| v == "1")))
}

/// Whether convolution algorithms are chosen by timing them all once per
/// geometry (off by default; `KILN_CUDNN_BENCHMARK=1` in the environment).
pub fn benchmark() -> bool {
    benchmark_flag().load(Ordering::Relaxed)
}

/// Switches benchmark mode for the whole process (as
/// `torch.backends.cudnn.benchmark`); returns the previous setting.
pub fn set_benchmark(on: bool) -> bool {
    benchmark_flag().swap(on, Ordering::Relaxed)
}

/// The three directions of a convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Direction {
    Forward,
    BackwardData,
    BackwardFilter,
}

/// A geometry's key in the algorithm cache: direction, benchmark mode and
/// TF32, dtype, the three tensors' dims and strides, and the convolution.
type AlgoKey = (Direction, [bool; 2], DType, Vec<i64>, ConvSpec);

/// The cuDNN handle (created on the first convolution), the stream it is
/// bound to, and the algorithms chosen so far: `(algorithm, workspace bytes)`.
pub(crate) struct DnnHandle {
    handle: Option<ds::cudnnHandle_t>,
    bound: CUstream,
    algos: HashMap<AlgoKey, (u32, usize)>,
    /// The graph API's plans by geometry and address alignment (`None`:
    /// that API has no engine for it).
    plans: HashMap<(AlgoKey, i64), Option<graph::Plan>>,
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
            plans: HashMap::new(),
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
pub(super) struct TensorDesc(ds::cudnnTensorDescriptor_t);
impl Drop for TensorDesc {
    fn drop(&mut self) {
        // SAFETY: created by this wrapper and destroyed once.
        let _ = unsafe { dnn::destroy_tensor_descriptor(self.0) };
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
    l.is_dense_in_order(&Layout::channels_last_order(l.ndim()))
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

impl CudaStorage {
    /// The typed address of element `offset`.
    fn addr(&self, offset: usize) -> *mut c_void {
        (self.ptr() as usize + offset * self.dtype.size_in_bytes()) as *mut c_void
    }
}
