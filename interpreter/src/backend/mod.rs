//! Backends: where tensor data lives and the primitive kernels that act on it.
//! [`Storage`] is one variant per device; each method here matches on the
//! device and forwards to that backend's kernel. The op front-end
//! (`crate::tensor`) has already checked shapes, broadcast layouts and
//! promoted dtypes before anything reaches this module.

pub mod cpu;

pub use cpu::CpuStorage;
pub use cpu::MatmulDims;

use crate::error::{Error, Result};
use crate::tensor::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::tensor::{DType, Device, HostValues, Layout, Scalar};

/// The elements of a tensor on one device.
#[derive(Clone, Debug)]
pub enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
}

/// Fails with a clear error for devices this build cannot reach.
pub fn check_device(device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(_) => Err(Error::DeviceUnavailable {
            device: device.to_string(),
            reason: "this build of kiln has no CUDA backend yet (cuda::is_available() is false)".into(),
        }),
    }
}

impl Storage {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
        }
    }

    /// The device holding the elements.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
        }
    }

    /// `n` copies of `value` as `dtype` on `device`.
    pub fn full(device: Device, dtype: DType, n: usize, value: Scalar) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(CpuStorage::full(dtype, n, value)))
    }

    /// `start + i * step` for `i in 0..n`.
    pub fn arange(device: Device, dtype: DType, start: Scalar, step: Scalar, n: usize) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(CpuStorage::arange(dtype, start, step, n)))
    }

    /// Host values uploaded as `dtype`.
    pub fn from_host(device: Device, values: &HostValues, dtype: DType) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(CpuStorage::from_host(values, dtype)))
    }

    /// The elements of `layout` in logical order, on the host (waits for the device).
    pub fn to_host(&self, layout: &Layout) -> HostValues {
        match self {
            Storage::Cpu(s) => s.to_host(layout),
        }
    }

    /// Uniform `[0, 1)` draw `stream` of the Philox generator under `seed`.
    pub fn rand_uniform(device: Device, dtype: DType, n: usize, seed: u64, stream: u64) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(cpu::rand_uniform(dtype, n, seed, stream)))
    }

    /// Standard normal draw.
    pub fn rand_normal(device: Device, dtype: DType, n: usize, seed: u64, stream: u64) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(cpu::rand_normal(dtype, n, seed, stream)))
    }

    /// Integer draw in `[low, high)`.
    #[allow(clippy::too_many_arguments)]
    pub fn rand_int(
        device: Device,
        dtype: DType,
        n: usize,
        low: i64,
        high: i64,
        seed: u64,
        stream: u64,
    ) -> Result<Storage> {
        check_device(device)?;
        Ok(Storage::Cpu(cpu::rand_int(dtype, n, low, high, seed, stream)))
    }

    /// Unary op (input already in the op's dtype); contiguous output.
    pub fn unary(&self, op: UnaryOp, l: &Layout) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::unary(op, s, l)?)),
        }
    }

    /// Binary op of two same-dtype operands with layouts of one shape.
    pub fn binary(&self, op: BinaryOp, l: &Layout, rhs: &Storage, lr: &Layout) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::binary(op, a, l, b, lr)?)),
        }
    }

    /// Comparison of two same-dtype operands; bool output.
    pub fn compare(&self, op: CmpOp, l: &Layout, rhs: &Storage, lr: &Layout) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::compare(op, a, l, b, lr)?)),
        }
    }

    /// `self ? a : b` with a bool `self`.
    pub fn where_cond(
        &self,
        l: &Layout,
        a: &Storage,
        la: &Layout,
        b: &Storage,
        lb: &Layout,
    ) -> Result<Storage> {
        match (self, a, b) {
            (Storage::Cpu(c), Storage::Cpu(a), Storage::Cpu(b)) => {
                Ok(Storage::Cpu(cpu::where_cond(c, l, a, la, b, lb)?))
            }
        }
    }

    /// Contiguous copy of `l`'s elements as `dtype` (also `contiguous()` when the dtype is unchanged).
    pub fn cast(&self, l: &Layout, dtype: DType) -> Storage {
        match self {
            Storage::Cpu(s) => Storage::Cpu(cpu::cast_to(s, l, dtype)),
        }
    }

    /// Writes `src` (same dtype and shape) into the elements of `self` at `l`.
    pub fn copy_from(&mut self, l: &Layout, src: &Storage, ls: &Layout) -> Result<()> {
        match (self, src) {
            (Storage::Cpu(d), Storage::Cpu(s)) => cpu::copy_into(d, l, s, ls),
        }
    }

    /// Reduction over sorted, distinct `dims`; contiguous output over the kept dims.
    pub fn reduce(&self, op: ReduceOp, l: &Layout, dims: &[usize]) -> Storage {
        match self {
            Storage::Cpu(s) => Storage::Cpu(cpu::reduce(op, s, l, dims)),
        }
    }

    /// Softmax or log-softmax along `dim`; contiguous output.
    pub fn softmax(&self, l: &Layout, dim: usize, log: bool) -> Result<Storage> {
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::softmax(s, l, dim, log)?)),
        }
    }

    /// Layer norm of contiguous storage over rows of `norm` elements.
    pub fn layer_norm(
        &self,
        norm: usize,
        w: Option<&Storage>,
        b: Option<&Storage>,
        eps: f64,
    ) -> Result<Storage> {
        fn cpu_of(s: Option<&Storage>) -> Option<&CpuStorage> {
            s.map(|Storage::Cpu(c)| c)
        }
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::layer_norm(s, norm, cpu_of(w), cpu_of(b), eps)?)),
        }
    }

    /// Batched matmul (see [`MatmulDims`]); contiguous output.
    pub fn matmul(&self, l: &Layout, rhs: &Storage, lr: &Layout, d: &MatmulDims) -> Result<Storage> {
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::matmul(a, l, b, lr, d)?)),
        }
    }
}
