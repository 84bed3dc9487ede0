//! Backends: where tensor data lives and the primitive kernels that act on it.
//! [`Storage`] is one variant per device; each method here matches on the
//! device and forwards to that backend's kernel. The op front-end
//! (`crate::tensor`) has already checked shapes, broadcast layouts and
//! promoted dtypes before anything reaches this module.
//!
//! Every method that makes a new storage first passes `preflight`: the
//! run's stop check and the memory gate for the bytes it is about to
//! allocate (known from the layouts), so an impossible or over-budget output
//! is a typed error before any allocation or kernel launch.

pub mod attention;
pub mod batch_norm;
pub mod conv;
pub mod cpu;
pub mod cuda;
pub mod factor;
pub mod multi_tensor;
pub mod pool;

pub use cpu::CpuStorage;
pub use cpu::MatmulDims;
pub use cuda::CudaStorage;
pub use factor::{Mats, SvdParts};
pub use multi_tensor::{AdamItem, SgdItem};

/// The activation a fused product ([`Storage::matmul_bias`]) applies after
/// adding its bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    /// None: `x @ w + b`.
    Identity,
    /// `max(x, 0)`.
    Relu,
    /// GELU with the tanh approximation (`F.gelu(x, approximate="tanh")`).
    GeluTanh,
}

use crate::core::error::{Error, Result};
use crate::core::index::Along;
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, ScanOp, UnaryOp};
use crate::core::{DType, Device, HostValues, Layout, Scalar};
use kiln_kernels::params::{AdamParams, RandView, SgdParams};

/// The elements of a tensor on one device.
#[derive(Debug)]
pub enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// GPU memory (device 0).
    Cuda(CudaStorage),
}

fn mixed(op: &'static str) -> Error {
    Error::invalid(op, "internal: operands on different devices reached the backend")
}

/// Fails with a clear error for devices this build cannot reach.
pub fn check_device(device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(0) => cuda::CudaRuntime::get().map(|_| ()),
        Device::Cuda(_) => Err(Error::DeviceUnavailable {
            device: device.to_string(),
            reason: "kiln uses one GPU (cuda:0) per process".into(),
        }),
    }
}

/// The gate before a backend queues work for `op` that makes `n` new
/// elements of `dtype` on `device`: fails when the run must stop
/// ([`crate::core::control`]) or the bytes cannot be had
/// ([`crate::core::memory::check_bytes`]).
pub(crate) fn preflight(op: &'static str, device: Device, dtype: DType, n: usize) -> Result<()> {
    crate::core::control::check(op)?;
    let bytes = n.checked_mul(dtype.size_in_bytes()).ok_or_else(|| {
        Error::shape(
            op,
            format!("an output of {n} {dtype} elements has more bytes than can be addressed"),
        )
    })?;
    crate::core::memory::check_bytes(op, bytes, device == Device::Cpu)
}

/// `preflight` for an output in this storage's device.
fn gate(s: &Storage, op: &'static str, dtype: DType, n: usize) -> Result<()> {
    preflight(op, s.device(), dtype, n)
}

/// A one-element CPU storage of `s` broadcast to `l`'s shape.
fn cpu_scalar(dtype: DType, s: Scalar, l: &Layout) -> Result<(CpuStorage, Layout)> {
    Ok((
        CpuStorage::full(dtype, 1, s)?,
        Layout::contiguous(&[]).broadcast_to("scalar", l.shape())?,
    ))
}

impl Storage {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            Storage::Cuda(s) => s.dtype(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.len(),
            Storage::Cuda(s) => s.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device holding the elements.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(_) => Device::Cuda(0),
        }
    }

    /// `n` copies of `value` as `dtype` on `device`.
    pub fn full(device: Device, dtype: DType, n: usize, value: Scalar) -> Result<Storage> {
        check_device(device)?;
        preflight("full", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(CpuStorage::full(dtype, n, value)?),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::full(dtype, n, value)?),
        })
    }

    /// Storage for `n` elements whose values are unspecified (`empty`).
    pub fn uninit(device: Device, dtype: DType, n: usize) -> Result<Storage> {
        check_device(device)?;
        preflight("empty", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(CpuStorage::full(dtype, n, Scalar::Int(0))?),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::alloc(dtype, n)?),
        })
    }

    /// `start + i * step` for `i in 0..n`.
    pub fn arange(device: Device, dtype: DType, start: Scalar, step: Scalar, n: usize) -> Result<Storage> {
        check_device(device)?;
        preflight("arange", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(CpuStorage::arange(dtype, start, step, n)),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::arange(dtype, start, step, n)?),
        })
    }

    /// Host values uploaded as `dtype`.
    pub fn from_host(device: Device, values: &HostValues, dtype: DType) -> Result<Storage> {
        check_device(device)?;
        preflight("tensor", Device::Cpu, dtype, values.len())?;
        let cpu = CpuStorage::from_host(values, dtype);
        Ok(match device {
            Device::Cpu => Storage::Cpu(cpu),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::from_cpu(&cpu)?),
        })
    }

    /// A host storage moved to `device` (kept as it is for the CPU).
    pub fn from_cpu(device: Device, cpu: CpuStorage) -> Result<Storage> {
        check_device(device)?;
        if device != Device::Cpu {
            preflight("to", device, cpu.dtype(), cpu.len())?;
        }
        Ok(match device {
            Device::Cpu => Storage::Cpu(cpu),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::from_cpu(&cpu)?),
        })
    }

    /// The elements of `layout` in logical order, on the host (waits for the device).
    pub fn to_host(&self, layout: &Layout) -> Result<HostValues> {
        // host values of 8 bytes each (i64 / f64) and their 8-byte offsets
        preflight(
            "to_list",
            Device::Cpu,
            DType::F64,
            layout.numel().saturating_mul(2),
        )?;
        match self {
            Storage::Cpu(s) => Ok(s.to_host(layout)),
            Storage::Cuda(s) => {
                let cpu = shaped(s.to_cpu(layout), &[layout])?;
                Ok(cpu.to_host(&Layout::contiguous(layout.shape())))
            }
        }
    }

    /// The elements of `layout` as a dense storage on `device`.
    pub fn to_device(&self, layout: &Layout, device: Device) -> Result<Storage> {
        check_device(device)?;
        preflight("to", device, self.dtype(), layout.numel())?;
        if device != self.device() {
            preflight("to", self.device(), self.dtype(), layout.numel())?;
        }
        Ok(match (self, device) {
            (Storage::Cpu(s), Device::Cpu) => Storage::Cpu(cpu::cast_to(s, layout, s.dtype())),
            (Storage::Cpu(s), Device::Cuda(_)) => {
                // a dense tensor is uploaded from where it is; a view is gathered first
                if layout.is_contiguous() && layout.offset() == 0 && layout.numel() == s.len() {
                    Storage::Cuda(CudaStorage::from_cpu(s)?)
                } else {
                    Storage::Cuda(CudaStorage::from_cpu(&cpu::cast_to(s, layout, s.dtype()))?)
                }
            }
            (Storage::Cuda(s), Device::Cpu) => Storage::Cpu(shaped(s.to_cpu(layout), &[layout])?),
            (Storage::Cuda(s), Device::Cuda(_)) => {
                Storage::Cuda(shaped(s.cast(layout, s.dtype()), &[layout])?)
            }
        })
    }

    /// Uniform `[0, 1)` draw `stream` of the Philox generator under `seed`.
    pub fn rand_uniform(device: Device, dtype: DType, n: usize, seed: u64, stream: u64) -> Result<Storage> {
        Storage::rand_uniform_view(device, dtype, n, (seed, stream), RandView::default())
    }

    /// `n` uniform values taken from draw `stream` under `seed` through `view`
    /// (runs of a larger draw, see [`RandView`]).
    pub fn rand_uniform_view(
        device: Device,
        dtype: DType,
        n: usize,
        (seed, stream): (u64, u64),
        view: RandView,
    ) -> Result<Storage> {
        check_device(device)?;
        preflight("rand", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(cpu::rand_uniform(dtype, n, seed, stream, view)),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::rand_float(dtype, n, (seed, stream), view, false)?),
        })
    }

    /// Standard normal draw.
    pub fn rand_normal(device: Device, dtype: DType, n: usize, seed: u64, stream: u64) -> Result<Storage> {
        check_device(device)?;
        preflight("randn", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(cpu::rand_normal(dtype, n, seed, stream)),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::rand_float(
                dtype,
                n,
                (seed, stream),
                RandView::default(),
                true,
            )?),
        })
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
        preflight("randint", device, dtype, n)?;
        Ok(match device {
            Device::Cpu => Storage::Cpu(cpu::rand_int(dtype, n, low, high, seed, stream)),
            Device::Cuda(_) => Storage::Cuda(CudaStorage::rand_int(dtype, n, low, high, seed, stream)?),
        })
    }

    /// Unary op (input already in the op's dtype); contiguous output.
    pub fn unary(&self, op: UnaryOp, l: &Layout) -> Result<Storage> {
        gate(self, op.name(), self.dtype(), l.numel())?;
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::unary(op, s, l)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(shaped(s.unary(op, l), &[l])?)),
        }
    }

    /// Binary op of two same-dtype operands with layouts of one shape.
    pub fn binary(&self, op: BinaryOp, l: &Layout, rhs: &Storage, lr: &Layout) -> Result<Storage> {
        gate(self, op.name(), self.dtype(), l.numel())?;
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::binary(op, a, l, b, lr)?)),
            (Storage::Cuda(a), Storage::Cuda(b)) => {
                Ok(Storage::Cuda(shaped(a.binary(op, l, b, lr), &[l, lr])?))
            }
            _ => Err(mixed(op.name())),
        }
    }

    /// `self op s` (`s op self` when `rev`) with a host scalar taken as this storage's dtype.
    pub fn binary_scalar(&self, op: BinaryOp, l: &Layout, s: Scalar, rev: bool) -> Result<Storage> {
        gate(self, op.name(), self.dtype(), l.numel())?;
        match self {
            Storage::Cpu(a) => {
                let (b, lb) = cpu_scalar(a.dtype(), s, l)?;
                let r = if rev {
                    cpu::binary(op, &b, &lb, a, l)?
                } else {
                    cpu::binary(op, a, l, &b, &lb)?
                };
                Ok(Storage::Cpu(r))
            }
            Storage::Cuda(a) => Ok(Storage::Cuda(shaped(
                a.with_scalar(cuda::Kernel::BinaryScalar(op, a.dtype()), op.name(), l, s, rev),
                &[l],
            )?)),
        }
    }

    /// A comparison with a host scalar; bool output.
    pub fn compare_scalar(&self, op: CmpOp, l: &Layout, s: Scalar, rev: bool) -> Result<Storage> {
        gate(self, op.name(), DType::Bool, l.numel())?;
        match self {
            Storage::Cpu(a) => {
                let (b, lb) = cpu_scalar(a.dtype(), s, l)?;
                let r = if rev {
                    cpu::compare(op, &b, &lb, a, l)?
                } else {
                    cpu::compare(op, a, l, &b, &lb)?
                };
                Ok(Storage::Cpu(r))
            }
            Storage::Cuda(a) => Ok(Storage::Cuda(shaped(
                a.with_scalar(cuda::Kernel::CmpScalar(op, a.dtype()), op.name(), l, s, rev),
                &[l],
            )?)),
        }
    }

    /// Comparison of two same-dtype operands; bool output.
    pub fn compare(&self, op: CmpOp, l: &Layout, rhs: &Storage, lr: &Layout) -> Result<Storage> {
        gate(self, op.name(), DType::Bool, l.numel())?;
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::compare(op, a, l, b, lr)?)),
            (Storage::Cuda(a), Storage::Cuda(b)) => {
                Ok(Storage::Cuda(shaped(a.compare(op, l, b, lr), &[l, lr])?))
            }
            _ => Err(mixed(op.name())),
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
        gate(self, "where", a.dtype(), l.numel())?;
        match (self, a, b) {
            (Storage::Cpu(c), Storage::Cpu(a), Storage::Cpu(b)) => {
                Ok(Storage::Cpu(cpu::where_cond(c, l, a, la, b, lb)?))
            }
            (Storage::Cuda(c), Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(shaped(
                c.where_cond(l, a, la, b, lb),
                &[l, la, lb],
            )?)),
            _ => Err(mixed("where")),
        }
    }

    /// Contiguous copy of `l`'s elements as `dtype` (also `contiguous()` when the dtype is unchanged).
    pub fn cast(&self, l: &Layout, dtype: DType) -> Result<Storage> {
        gate(self, "to_dtype", dtype, l.numel())?;
        Ok(match self {
            Storage::Cpu(s) => Storage::Cpu(cpu::cast_to(s, l, dtype)),
            Storage::Cuda(s) => Storage::Cuda(shaped(s.cast(l, dtype), &[l])?),
        })
    }

    /// Writes `src` (same dtype and shape) into the elements of `self` at `l`;
    /// `src` may live on the other device (a host↔device copy).
    pub fn copy_from(&mut self, l: &Layout, src: &Storage, ls: &Layout) -> Result<()> {
        crate::core::control::check("copy_")?;
        if self.device() != src.device() {
            // a staging copy on either side at most
            preflight("copy_", Device::Cpu, src.dtype(), ls.numel())?;
        }
        match (self, src) {
            (Storage::Cpu(d), Storage::Cpu(s)) => cpu::copy_into(d, l, s, ls),
            (Storage::Cuda(d), Storage::Cuda(s)) => shaped(d.copy_from(l, s, ls), &[l, ls]),
            (Storage::Cpu(d), Storage::Cuda(s)) => match l.contiguous_range() {
                // a dense destination takes the download as it is
                Some((at, _)) if !ls.has_internal_overlap() => s.download_into(ls, d, at),
                _ => cpu::copy_into(d, l, &s.to_cpu(ls)?, &Layout::contiguous(ls.shape())),
            },
            (Storage::Cuda(d), Storage::Cpu(s)) => {
                let dense;
                let (src, range) = match ls.contiguous_range() {
                    Some((a, b)) if !ls.has_internal_overlap() => (s, a..b),
                    _ => {
                        dense = cpu::cast_to(s, ls, s.dtype());
                        (&dense, 0..ls.numel())
                    }
                };
                match l.contiguous_range() {
                    Some((at, _)) => d.upload_range(at, src, range),
                    None => {
                        let mut part = CudaStorage::alloc(src.dtype(), range.len())?;
                        part.upload_range(0, src, range)?;
                        d.copy_from(l, &part, &Layout::contiguous(ls.shape()))
                    }
                }
            }
        }
    }

    /// Reduction over sorted, distinct `dims`; contiguous output over the kept dims.
    pub fn reduce(&self, op: ReduceOp, l: &Layout, dims: &[usize]) -> Result<Storage> {
        let kept: usize = (0..l.ndim())
            .filter(|d| !dims.contains(d))
            .fold(1usize, |n, d| n.saturating_mul(l.shape()[d]));
        gate(self, op.name(), DType::F64, kept)?;
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::reduce(op, s, l, dims)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(shaped(s.reduce(op, l, dims), &[l])?)),
        }
    }

    /// The scan `op` of `rows` dense rows of `len` (floats, or i64), and the
    /// i64 positions for cummax/cummin.
    pub fn scan(&self, op: ScanOp, rows: usize, len: usize) -> Result<(Storage, Option<Storage>)> {
        gate(self, op.name(), self.dtype(), rows * len)?;
        match self {
            Storage::Cpu(s) => {
                let (y, i) = cpu::scan(s, op, rows, len)?;
                Ok((Storage::Cpu(y), i.map(Storage::Cpu)))
            }
            Storage::Cuda(s) => {
                let (y, i) = s.scan(op, rows, len)?;
                Ok((Storage::Cuda(y), i.map(Storage::Cuda)))
            }
        }
    }

    /// `rows` dense rows of `len` sorted stably, and the i64 positions.
    pub fn sort(&self, rows: usize, len: usize, descending: bool) -> Result<(Storage, Storage)> {
        gate(self, "sort", self.dtype(), rows * len)?;
        gate(self, "sort", DType::I64, rows * len)?;
        match self {
            Storage::Cpu(s) => {
                let (y, i) = cpu::sort(s, rows, len, descending)?;
                Ok((Storage::Cpu(y), Storage::Cpu(i)))
            }
            Storage::Cuda(s) => {
                let (y, i) = s.sort(rows, len, descending)?;
                Ok((Storage::Cuda(y), Storage::Cuda(i)))
            }
        }
    }

    /// For each of `rows` dense rows of `m` values (`self`), its insertion
    /// point (i64) in the matching dense row of `n` sorted elements of
    /// `seq` (one row for all when `shared`), after equal ones when
    /// `right`; both of one dtype.
    pub fn search_sorted(
        &self,
        seq: &Storage,
        rows: usize,
        m: usize,
        n: usize,
        shared: bool,
        right: bool,
    ) -> Result<Storage> {
        gate(self, "searchsorted", DType::I64, rows * m)?;
        match (self, seq) {
            (Storage::Cpu(v), Storage::Cpu(s)) => Ok(Storage::Cpu(cpu::search_sorted(
                v,
                s,
                (rows, m, n),
                shared,
                right,
            )?)),
            (Storage::Cuda(v), Storage::Cuda(s)) => {
                Ok(Storage::Cuda(v.search_sorted(s, rows, m, n, shared, right)?))
            }
            _ => Err(mixed("searchsorted")),
        }
    }

    /// Softmax or log-softmax along `dim`; contiguous output.
    pub fn softmax(&self, l: &Layout, dim: usize, log: bool) -> Result<Storage> {
        gate(
            self,
            if log { "log_softmax" } else { "softmax" },
            self.dtype(),
            l.numel(),
        )?;
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::softmax(s, l, dim, log)?)),
            Storage::Cuda(s) => Ok(Storage::Cuda(shaped(s.softmax(l, dim, log), &[l])?)),
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
        gate(self, "layer_norm", self.dtype(), self.len())?;
        fn cpu_of(s: Option<&Storage>) -> Option<&CpuStorage> {
            match s {
                Some(Storage::Cpu(c)) => Some(c),
                _ => None,
            }
        }
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::layer_norm(s, norm, cpu_of(w), cpu_of(b), eps)?)),
            Storage::Cuda(s) => {
                let cuda_of = |t: Option<&Storage>| match t {
                    Some(Storage::Cuda(c)) => Some(c.clone()),
                    _ => None,
                };
                let (w, b) = (cuda_of(w), cuda_of(b));
                Ok(Storage::Cuda(s.layer_norm(norm, w.as_ref(), b.as_ref(), eps)?))
            }
        }
    }

    /// The input's gradient of layer norm over contiguous rows of `norm`
    /// elements, from the output's gradient `g` and the optional weight (both
    /// contiguous, this storage's dtype and device); with `want_gxh`, also
    /// `g · x̂`, the terms of the weight's gradient.
    pub fn layer_norm_backward(
        &self,
        g: &Storage,
        w: Option<&Storage>,
        norm: usize,
        eps: f64,
        want_gxh: bool,
    ) -> Result<(Storage, Option<Storage>)> {
        gate(
            self,
            "layer_norm",
            self.dtype(),
            self.len() * (1 + want_gxh as usize),
        )?;
        match (self, g) {
            (Storage::Cpu(s), Storage::Cpu(g)) => {
                let w = match w {
                    Some(Storage::Cpu(c)) => Some(c),
                    _ => None,
                };
                let (gx, gxh) = cpu::layer_norm_backward(s, g, w, norm, eps, want_gxh)?;
                Ok((Storage::Cpu(gx), gxh.map(Storage::Cpu)))
            }
            (Storage::Cuda(s), Storage::Cuda(g)) => {
                let w = match w {
                    Some(Storage::Cuda(c)) => Some(c),
                    _ => None,
                };
                let (gx, gxh) = s.layer_norm_backward(g, w, norm, eps, want_gxh)?;
                Ok((Storage::Cuda(gx), gxh.map(Storage::Cuda)))
            }
            _ => Err(Error::invalid(
                "layer_norm",
                "input and gradient on different devices",
            )),
        }
    }

    /// Inverted dropout of contiguous float storage with probability `p`
    /// (`0 < p < 1`) by the Philox draw `(seed, stream)`: the same elements
    /// are kept on every backend.
    pub fn dropout(&self, p: f64, draw: (u64, u64)) -> Result<Storage> {
        gate(self, "dropout", self.dtype(), self.len())?;
        match self {
            Storage::Cpu(s) => Ok(Storage::Cpu(cpu::dropout(s, p, draw.0, draw.1))),
            Storage::Cuda(s) => Ok(Storage::Cuda(s.dropout(p, draw)?)),
        }
    }

    /// Cross-entropy of dense `[rows, classes]` logits against dense i64
    /// `labels`: the per-row losses and log-sum-exps, in the accumulator dtype.
    pub fn cross_entropy(
        &self,
        classes: usize,
        labels: &Storage,
        ignore_index: i64,
        smoothing: f64,
    ) -> Result<(Storage, Storage)> {
        gate(
            self,
            "cross_entropy",
            DType::F64,
            2 * (self.len() / classes.max(1)),
        )?;
        match (self, labels) {
            (Storage::Cpu(x), Storage::Cpu(l)) => {
                let (loss, lse) = cpu::cross_entropy(x, classes, l, ignore_index, smoothing)?;
                Ok((Storage::Cpu(loss), Storage::Cpu(lse)))
            }
            (Storage::Cuda(x), Storage::Cuda(l)) => {
                let (loss, lse) = x.cross_entropy(classes, l, ignore_index, smoothing)?;
                Ok((Storage::Cuda(loss), Storage::Cuda(lse)))
            }
            _ => Err(mixed("cross_entropy")),
        }
    }

    /// The gradient of [`Storage::cross_entropy`]'s per-row losses with respect to
    /// the logits, scaled by `grad[r * grad_stride]`; dense, in the logits' dtype.
    #[allow(clippy::too_many_arguments)]
    pub fn cross_entropy_backward(
        &self,
        classes: usize,
        labels: &Storage,
        lse: &Storage,
        grad: &Storage,
        grad_stride: usize,
        ignore_index: i64,
        smoothing: f64,
    ) -> Result<Storage> {
        gate(self, "cross_entropy", self.dtype(), self.len())?;
        match (self, labels, lse, grad) {
            (Storage::Cpu(x), Storage::Cpu(l), Storage::Cpu(s), Storage::Cpu(g)) => Ok(Storage::Cpu(
                cpu::cross_entropy_backward(x, classes, l, s, g, grad_stride, ignore_index, smoothing)?,
            )),
            (Storage::Cuda(x), Storage::Cuda(l), Storage::Cuda(s), Storage::Cuda(g)) => Ok(Storage::Cuda(
                x.cross_entropy_backward(classes, l, s, g, grad_stride, ignore_index, smoothing)?,
            )),
            _ => Err(mixed("cross_entropy")),
        }
    }

    /// One SGD step in place over `n` dense elements of this parameter from
    /// `offset`, its gradient and (with momentum) its buffer, each with its offset.
    pub fn sgd_step(
        &mut self,
        offset: usize,
        grad: (&Storage, usize),
        buf: Option<(&mut Storage, usize)>,
        n: usize,
        h: &SgdParams,
    ) -> Result<()> {
        match (self, grad.0) {
            (Storage::Cpu(p), Storage::Cpu(g)) => {
                let buf = match buf {
                    None => None,
                    Some((Storage::Cpu(b), o)) => Some((b, o)),
                    Some(_) => return Err(mixed("sgd_step_")),
                };
                cpu::sgd_step((p, offset), (g, grad.1), buf, n, h)
            }
            (Storage::Cuda(p), Storage::Cuda(g)) => {
                let buf = match buf {
                    None => None,
                    Some((Storage::Cuda(b), o)) => Some((&*b, o)),
                    Some(_) => return Err(mixed("sgd_step_")),
                };
                p.sgd_step(offset, (g, grad.1), buf, n, h)
            }
            _ => Err(mixed("sgd_step_")),
        }
    }

    /// One Adam / AdamW step in place over `n` dense elements of this parameter
    /// from `offset`, its gradient and its two moments, each with its offset.
    pub fn adam_step(
        &mut self,
        offset: usize,
        grad: (&Storage, usize),
        m: (&mut Storage, usize),
        v: (&mut Storage, usize),
        n: usize,
        h: &AdamParams,
    ) -> Result<()> {
        match (self, grad.0, m.0, v.0) {
            (Storage::Cpu(p), Storage::Cpu(g), Storage::Cpu(ms), Storage::Cpu(vs)) => {
                cpu::adam_step((p, offset), (g, grad.1), (ms, m.1), (vs, v.1), n, h)
            }
            (Storage::Cuda(p), Storage::Cuda(g), Storage::Cuda(ms), Storage::Cuda(vs)) => {
                p.adam_step(offset, (g, grad.1), (ms, m.1), (vs, v.1), n, h)
            }
            _ => Err(mixed("adam_step_")),
        }
    }

    /// For each element `i` of `lx`'s shape, `self` at `lx(i) + k * along.stride`
    /// with `k = idx[li(i)]` (`idx` is i64, `li` over the same shape); dense
    /// output. An index outside `0..along.size()` is an error on the CPU and
    /// reads NaN / 0 on CUDA (see `crate::core::index`).
    pub fn gather(&self, lx: &Layout, along: &Along, idx: &Storage, li: &Layout) -> Result<Storage> {
        gate(self, along.op, self.dtype(), lx.numel())?;
        match (self, idx) {
            (Storage::Cpu(x), Storage::Cpu(i)) => Ok(Storage::Cpu(cpu::gather(x, lx, along, i, li)?)),
            (Storage::Cuda(x), Storage::Cuda(i)) => {
                Ok(Storage::Cuda(shaped(x.gather(lx, along, i, li), &[lx, li])?))
            }
            _ => Err(mixed(along.op)),
        }
    }

    /// For each element `i` of `ls`'s shape, adds `src[ls(i)]` into `self` at
    /// `ld(i) + k * along.stride` with `k = idx[li(i)]` (all three layouts over
    /// that shape). `self` holds the accumulator dtype of `src`'s dtype
    /// (`crate::core::index::scatter_dtype`). An index outside
    /// `0..along.size()` is an error on the CPU and skipped on CUDA.
    pub fn scatter_add_(
        &mut self,
        ld: &Layout,
        along: &Along,
        idx: &Storage,
        li: &Layout,
        src: &Storage,
        ls: &Layout,
    ) -> Result<()> {
        crate::core::control::check(along.op)?;
        match (self, idx, src) {
            (Storage::Cpu(d), Storage::Cpu(i), Storage::Cpu(s)) => {
                cpu::scatter_add(d, ld, along, i, li, s, ls)
            }
            (Storage::Cuda(d), Storage::Cuda(i), Storage::Cuda(s)) => {
                shaped(d.scatter_add_(ld, along, i, li, s, ls), &[ld, li, ls])
            }
            _ => Err(mixed(along.op)),
        }
    }

    /// `act(self @ rhs + bias)` for 2-D operands and a bias row of `d.n`
    /// dense elements from `bias_offset`, in one fused call where the
    /// backend has one (CUDA: cuBLASLt's epilogues); with `keep_pre` also
    /// the pre-activation (for the tanh GELU's backward). `None` elsewhere
    /// (the caller composes the product, the sum and the activation).
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_bias(
        &self,
        l: &Layout,
        rhs: &Storage,
        lr: &Layout,
        (bias, bias_offset): (&Storage, usize),
        d: &MatmulDims,
        act: Activation,
        keep_pre: bool,
    ) -> Result<Option<(Storage, Option<Storage>)>> {
        match (self, rhs, bias) {
            (Storage::Cuda(a), Storage::Cuda(b), Storage::Cuda(c)) => {
                let outputs = if keep_pre { 2 } else { 1 };
                gate(
                    self,
                    "addmm",
                    self.dtype(),
                    d.m.saturating_mul(d.n).saturating_mul(outputs),
                )?;
                let fused = cuda::blas::matmul_bias(a, l, b, lr, (c, bias_offset), d, (act, keep_pre))?;
                Ok(fused.map(|(y, pre)| (Storage::Cuda(y), pre.map(Storage::Cuda))))
            }
            _ => Ok(None),
        }
    }

    /// Batched matmul (see [`MatmulDims`]); contiguous output.
    pub fn matmul(&self, l: &Layout, rhs: &Storage, lr: &Layout, d: &MatmulDims) -> Result<Storage> {
        let out = d
            .batch
            .iter()
            .try_fold(d.m.saturating_mul(d.n), |acc, &b| acc.checked_mul(b));
        gate(self, "matmul", self.dtype(), out.unwrap_or(usize::MAX))?;
        if matches!(self.dtype(), DType::F16 | DType::BF16) {
            // widened (CPU) or made dense (cuBLAS) copies of both operands
            let inputs = l.numel().saturating_add(lr.numel());
            gate(self, "matmul", DType::F32, inputs)?;
        }
        match (self, rhs) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::matmul(a, l, b, lr, d)?)),
            (Storage::Cuda(a), Storage::Cuda(b)) => Ok(Storage::Cuda(shaped(
                cuda::blas::matmul(a, l, b, lr, d),
                &[l, lr],
            )?)),
            _ => Err(mixed("matmul")),
        }
    }
}

/// A CUDA failure of an op with its operands' shapes attached (only the
/// error path pays: nothing is allocated on success).
fn shaped<T>(r: Result<T>, layouts: &[&Layout]) -> Result<T> {
    r.map_err(|e| {
        let shapes: Vec<&[usize]> = layouts.iter().map(|l| l.shape()).collect();
        e.with_shapes(&shapes)
    })
}
