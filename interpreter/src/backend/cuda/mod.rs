//! The CUDA backend: device storage ([`CudaStorage`]) and its ops, queued
//! asynchronously on the runtime's stream. The host waits only in
//! [`CudaStorage::to_cpu`] (values crossing back) and in explicit syncs.
//!
//! Modules: [`runtime`] (context, stream, module, cuBLAS handle), [`allocator`]
//! (the caching allocator), [`kernels`] (kernel table and typed launches),
//! `transfer` (host↔device copies, staged through `staging`'s pinned buffers),
//! [`blas`] (matmul through cuBLAS), `lt` (cuBLASLt: cached plans, bias epilogues), `solver` (factorizations through cuSOLVER), `train` (cross-entropy and the fused
//! optimizer steps), `index` (gather and scatter-add along a dim), [`nccl`]
//! (collectives between GPUs, for the process group of `crate::dist`),
//! [`timing`] (event markers for the profiler), [`graph`] (CUDA graphs: capture and replay).

pub mod allocator;
mod attention;
pub mod blas;
pub(crate) mod cudnn;
pub mod graph;
pub(crate) mod images;
mod index;
pub mod kernels;
pub(crate) mod lt;
pub mod nccl;
mod order;
pub mod runtime;
mod solver;
mod staging;
pub mod timing;
mod train;
mod transfer;

pub use allocator::MemoryStats;
pub use runtime::{CudaRuntime, EngineStream, LazyEngineStream, StreamScope};

use super::cpu::{with_dtype, Element};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::{DType, Layout, Scalar};
use cudarc::driver::{result, sys};
pub use kernels::Kernel;
use kernels::{dense, geometry, DenseReduce};
use kiln_kernels::params::{Geometry, Operand};
use runtime::cuda_error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A block of device memory, returned to the caching allocator on drop,
/// with the stream that last queued work on it and the graph pool it was
/// made in (0: none).
#[derive(Debug)]
struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    size: usize,
    last: AtomicUsize,
    pool: usize,
}

impl DeviceBuffer {
    /// The address, for work about to be queued on the calling thread's
    /// stream: if another stream used the buffer last, this stream first waits
    /// for that stream's work (except in a graph capture, which starts after
    /// all earlier work has finished and may not wait on other streams).
    #[inline]
    fn touch(&self) -> sys::CUdeviceptr {
        if let Some(rt) = CudaRuntime::created() {
            let cur = rt.cu_stream() as usize;
            if self.last.load(Ordering::Acquire) != cur {
                let prev = self.last.swap(cur, Ordering::AcqRel);
                if prev != cur && !crate::core::capture::is_capturing() {
                    // a failed handoff leaves the driver in an error state that the
                    // next launch or copy reports
                    let _ = rt.handoff(prev as sys::CUstream, cur as sys::CUstream);
                }
            }
        }
        self.ptr
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if let Ok(rt) = CudaRuntime::get() {
            if let Ok(mut a) = rt.allocator.lock() {
                a.release(self.ptr, self.size, *self.last.get_mut(), self.pool);
            }
        }
    }
}

/// Elements of one dtype on the GPU.
#[derive(Clone, Debug)]
pub struct CudaStorage {
    buf: Arc<DeviceBuffer>,
    dtype: DType,
    len: usize,
}

impl CudaStorage {
    /// Uninitialised storage for `len` elements of `dtype`.
    pub fn alloc(dtype: DType, len: usize) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let op = crate::core::memory::current_op();
        let bytes = len
            .checked_mul(dtype.size_in_bytes())
            .ok_or_else(|| Error::OutOfMemory {
                op,
                bytes: usize::MAX,
                device: "cuda:0".into(),
                why: format!("{len} elements overflow the address space"),
            })?;
        let stream = rt.cu_stream();
        let (ptr, size, pool) = rt
            .allocator
            .lock()
            .map_err(|_| Error::invalid(op, "the GPU allocator's lock is poisoned"))?
            .alloc(bytes, stream as usize)
            .map_err(|f| {
                if !f.out_of_memory {
                    return Error::Cuda {
                        op,
                        call: "memory allocation".into(),
                        msg: f.driver,
                        shapes: vec![],
                    };
                }
                let (free, total) = cudarc::driver::result::mem_get_info().unwrap_or((0, 0));
                Error::CudaOutOfMemory {
                    op,
                    device: "cuda:0".into(),
                    bytes,
                    allocated: f.stats.allocated,
                    reserved: f.stats.reserved,
                    free,
                    total,
                    shapes: vec![],
                }
            })?;
        Ok(CudaStorage {
            buf: Arc::new(DeviceBuffer {
                ptr,
                size,
                last: AtomicUsize::new(stream as usize),
                pool,
            }),
            dtype,
            len,
        })
    }

    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address, for work queued on the calling thread's stream
    /// (see [`DeviceBuffer::touch`]).
    fn ptr(&self) -> sys::CUdeviceptr {
        self.buf.touch()
    }

    /// The device address of element `offset`, for a kernel that reads it
    /// on the calling thread's stream (a parameter such as a step count).
    pub(crate) fn element_address(&self, offset: usize) -> u64 {
        self.ptr() + (offset * self.dtype.size_in_bytes()) as u64
    }

    /// The address of element `offset`.
    fn at(&self, offset: u32) -> sys::CUdeviceptr {
        self.ptr() + offset as u64 * self.dtype.size_in_bytes() as u64
    }

    /// `n` copies of `value`.
    pub fn full(dtype: DType, n: usize, value: Scalar) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out = CudaStorage::alloc(dtype, n)?;
        let bits = scalar_bits(dtype, value);
        kernels::fill(rt, dtype, n as u32, out.ptr(), bits)?;
        Ok(out)
    }

    /// `start + i * step`.
    pub fn arange(dtype: DType, start: Scalar, step: Scalar, n: usize) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out = CudaStorage::alloc(dtype, n)?;
        kernels::arange(
            rt,
            dtype,
            n as u32,
            out.ptr(),
            start.to_f64(),
            step.to_f64(),
            start.to_i64(),
            step.to_i64(),
        )?;
        Ok(out)
    }

    /// A Philox draw (`normal` or uniform) of a float dtype.
    pub fn rand_float(
        dtype: DType,
        n: usize,
        (seed, stream): (u64, u64),
        view: kiln_kernels::params::RandView,
        normal: bool,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out = CudaStorage::alloc(dtype, n)?;
        let k = if normal {
            Kernel::RandNormal(dtype)
        } else {
            Kernel::RandUniform(dtype)
        };
        kernels::rand_float(rt, k, n as u32, out.ptr(), seed, stream, view)?;
        Ok(out)
    }

    /// An integer Philox draw in `[low, high)`.
    pub fn rand_int(
        dtype: DType,
        n: usize,
        low: i64,
        high: i64,
        seed: u64,
        stream: u64,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out = CudaStorage::alloc(dtype, n)?;
        kernels::rand_int(
            rt,
            dtype,
            n as u32,
            out.ptr(),
            seed,
            stream,
            low,
            high.wrapping_sub(low) as u64,
        )?;
        Ok(out)
    }

    /// `op(self)` as a dense result.
    pub fn unary(&self, op: UnaryOp, l: &Layout) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let out_dtype = if op == UnaryOp::LogicalNot {
            DType::Bool
        } else {
            self.dtype
        };
        let (g, [xo]) = geometry(op.name(), l.shape(), [l])?;
        let out = CudaStorage::alloc(out_dtype, l.numel())?;
        if kernels::packable(self.dtype, &[xo]) {
            if let Some(f) = rt.kernels.find(Kernel::UnaryV(op, self.dtype)) {
                kernels::unary_v(rt, f, self.dtype, g.n, self.at(xo.offset), out.ptr())?;
                return Ok(out);
            }
        }
        kernels::unary(rt, op, self.dtype, g, self.ptr(), xo, out.ptr())?;
        Ok(out)
    }

    fn pairwise(
        &self,
        kernel: Kernel,
        name: &'static str,
        l: &Layout,
        rhs: &CudaStorage,
        lr: &Layout,
        out: DType,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (g, [ao, bo]) = geometry(name, l.shape(), [l, lr])?;
        let y = CudaStorage::alloc(out, l.numel())?;
        if let Kernel::Binary(op, d) = kernel {
            if kernels::packable(d, &[ao, bo]) {
                if let Some(f) = rt.kernels.find(Kernel::BinaryV(op, d)) {
                    kernels::binary_v(rt, f, d, g.n, self.at(ao.offset), rhs.at(bo.offset), y.ptr())?;
                    return Ok(y);
                }
            }
            let row = row_broadcast(d, &g, &ao, &bo);
            if let (Some(row_is_b), Some(f)) = (row, rt.kernels.find(Kernel::BinaryRow(op, d))) {
                let v = kernels::pack(d) as u32;
                let (a, b) = (self.at(ao.offset), rhs.at(bo.offset));
                kernels::binary_row(rt, f, g.n / v, g.sizes[1] / v, row_is_b, a, b, y.ptr())?;
                return Ok(y);
            }
        }
        kernels::binary(rt, kernel, g, self.ptr(), ao, rhs.ptr(), bo, y.ptr())?;
        Ok(y)
    }

    /// `self op rhs` (same dtype, layouts of one shape).
    pub fn binary(&self, op: BinaryOp, l: &Layout, rhs: &CudaStorage, lr: &Layout) -> Result<CudaStorage> {
        self.pairwise(Kernel::Binary(op, self.dtype), op.name(), l, rhs, lr, self.dtype)
    }

    /// A comparison; bool result.
    pub fn compare(&self, op: CmpOp, l: &Layout, rhs: &CudaStorage, lr: &Layout) -> Result<CudaStorage> {
        self.pairwise(Kernel::Cmp(op, self.dtype), op.name(), l, rhs, lr, DType::Bool)
    }

    /// `self op s` (or `s op self`), the scalar as this storage's dtype; `cmp` selects
    /// a comparison (bool result).
    pub fn with_scalar(
        &self,
        kernel: Kernel,
        name: &'static str,
        l: &Layout,
        s: Scalar,
        rev: bool,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (g, [ao]) = geometry(name, l.shape(), [l])?;
        let out = if matches!(kernel, Kernel::CmpScalar(..)) {
            DType::Bool
        } else {
            self.dtype
        };
        let y = CudaStorage::alloc(out, l.numel())?;
        if let Kernel::BinaryScalar(op, d) = kernel {
            if kernels::packable(d, &[ao]) {
                if let Some(f) = rt.kernels.find(Kernel::BinaryScalarV(op, d)) {
                    let bits = scalar_bits(d, s);
                    kernels::binary_scalar_v(rt, f, d, g.n, self.at(ao.offset), bits, rev, y.ptr())?;
                    return Ok(y);
                }
            }
        }
        kernels::binary_scalar(
            rt,
            kernel,
            g,
            self.ptr(),
            ao,
            scalar_bits(self.dtype, s),
            rev,
            y.ptr(),
        )?;
        Ok(y)
    }

    /// `self ? a : b` with a bool `self`.
    pub fn where_cond(
        &self,
        l: &Layout,
        a: &CudaStorage,
        la: &Layout,
        b: &CudaStorage,
        lb: &Layout,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (g, [co, ao, bo]) = geometry("where", l.shape(), [l, la, lb])?;
        let y = CudaStorage::alloc(a.dtype, l.numel())?;
        kernels::where_cond(
            rt,
            a.dtype,
            g,
            (self.ptr(), co),
            (a.ptr(), ao),
            (b.ptr(), bo),
            y.ptr(),
        )?;
        Ok(y)
    }

    /// A dense copy of `l`'s elements as `dtype`.
    pub fn cast(&self, l: &Layout, dtype: DType) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (g, [xo]) = geometry("cast", l.shape(), [l])?;
        let y = CudaStorage::alloc(dtype, l.numel())?;
        if dtype == self.dtype && xo.contiguous != 0 && g.n > 0 {
            // a dense copy: the copy engine, at full bandwidth
            let bytes = g.n as usize * dtype.size_in_bytes();
            // SAFETY: both ranges lie inside live allocations and are ordered on the stream.
            unsafe { result::memcpy_dtod_async(y.ptr(), self.at(xo.offset), bytes, rt.cu_stream()) }
                .map_err(|e| cuda_error("device copy", e))?;
            return Ok(y);
        }
        if dtype != self.dtype && xo.contiguous != 0 && self.at(xo.offset) % 16 == 0 {
            if let Some(f) = rt.kernels.find(Kernel::CastV(self.dtype, dtype)) {
                kernels::cast_v(rt, f, (self.dtype, dtype), g.n, self.at(xo.offset), y.ptr())?;
                return Ok(y);
            }
        }
        if dtype == self.dtype && self.transpose_into(&g, &xo, y.ptr())? {
            return Ok(y);
        }
        kernels::cast(rt, self.dtype, dtype, g, (self.ptr(), xo), (y.ptr(), dense(&g)))?;
        Ok(y)
    }

    /// Copies the elements `xo` walks over `g` into the dense `y` with the tiled
    /// transpose, when the walk is one (its stride-1 dim is the second-to-last of
    /// two or three merged dims); false when it is not.
    fn transpose_into(&self, g: &Geometry, xo: &Operand, y: sys::CUdeviceptr) -> Result<bool> {
        let d = g.ndim as usize;
        if !(2..=3).contains(&d) || xo.strides[d - 2] != 1 || xo.strides[d - 1] <= 1 {
            return Ok(false);
        }
        let (rows, cols) = (g.sizes[d - 2], g.sizes[d - 1]);
        let (batch, sb) = if d == 3 {
            (g.sizes[0], xo.strides[0])
        } else {
            (1, 0)
        };
        let rt = CudaRuntime::get()?;
        let x = self.at(xo.offset);
        let bytes = self.dtype.size_in_bytes();
        Ok(kernels::transpose(rt, bytes, (batch, rows, cols), sb, xo.strides[d - 1], x, y)?.is_some())
    }

    /// Writes `src` (same dtype and shape) into `self` at `l`.
    pub fn copy_from(&mut self, l: &Layout, src: &CudaStorage, ls: &Layout) -> Result<()> {
        let rt = CudaRuntime::get()?;
        let (g, [yo, xo]) = geometry("copy", l.shape(), [l, ls])?;
        if src.dtype == self.dtype && yo.contiguous != 0 && src.transpose_into(&g, &xo, self.at(yo.offset))? {
            return Ok(());
        }
        kernels::cast(rt, src.dtype, self.dtype, g, (src.ptr(), xo), (self.ptr(), yo))
    }
}

/// The longest lane the one-thread-per-output reduction takes.
const SHORT_LANE: u32 = 32;
/// The fewest outputs it takes (fewer: warps split the lanes instead).
const SHORT_OUTPUTS: usize = 4096;

impl CudaStorage {
    /// Reduces `dims` (sorted) of `l`; dense output over the kept dims.
    pub fn reduce(&self, op: ReduceOp, l: &Layout, dims: &[usize]) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (mut os, mut ost, mut is, mut ist) = (vec![], vec![], vec![], vec![]);
        for d in 0..l.ndim() {
            let (v, s) = (l.shape()[d], l.strides()[d]);
            if dims.contains(&d) {
                is.push(v);
                ist.push(s);
            } else {
                os.push(v);
                ost.push(s);
            }
        }
        let outer = Layout::from_parts(os, ost, l.offset());
        let inner = Layout::from_parts(is, ist, 0);
        let out_dtype = op.result_dtype(self.dtype);
        let outputs = outer.numel();
        let y = CudaStorage::alloc(out_dtype, outputs)?;
        if outputs == 0 {
            return Ok(y);
        }
        if self.reduce_dense(op, l, dims, &y)? {
            return Ok(y);
        }
        let (og, [oo]) = geometry(op.name(), outer.shape(), [&outer])?;
        let (ig, [io]) = geometry(op.name(), inner.shape(), [&inner])?;
        let lane = inner.numel() as u32;
        let (code, correction) = reduce_code(op);
        // short lanes (pooling windows, small last dims) with many outputs:
        // one thread per output, no partial states
        let index_out = out_dtype == DType::I64 && out_dtype != self.dtype;
        if lane <= SHORT_LANE && outputs >= SHORT_OUTPUTS && (out_dtype == self.dtype || index_out) {
            kernels::reduce_short(
                rt,
                self.dtype,
                (og, oo),
                (ig, io),
                self.ptr(),
                code,
                correction,
                index_out,
                y.ptr(),
            )?;
            return Ok(y);
        }
        // Enough warps to fill the GPU: split long lanes when outputs are few.
        let target = rt.sm_count.max(1) * 64;
        let mut chunks = if (outputs as u32) >= target {
            1
        } else {
            target.div_ceil(outputs as u32)
        };
        chunks = chunks.min(lane.div_ceil(256)).max(1);
        let chunk_len = lane.div_ceil(chunks).max(1);
        chunks = lane.div_ceil(chunk_len).max(1);
        let state = std::mem::size_of::<kiln_kernels::reduce::RState>();
        let partial = CudaStorage::alloc(DType::U8, outputs * chunks as usize * state)?;
        kernels::reduce_partial(
            rt,
            self.dtype,
            (og, oo),
            (ig, io),
            self.ptr(),
            chunks,
            chunk_len,
            code,
            partial.ptr(),
        )?;
        kernels::reduce_finish(
            rt,
            out_dtype,
            outputs as u32,
            chunks,
            code,
            self.dtype.is_float(),
            correction,
            partial.ptr(),
            y.ptr(),
        )?;
        Ok(y)
    }

    /// The dense float reductions: a dense `l` whose reduced `dims` are adjacent,
    /// seen as `[outer, r, inner]` reduced over `r`. False when they do not apply.
    fn reduce_dense(&self, op: ReduceOp, l: &Layout, dims: &[usize], y: &CudaStorage) -> Result<bool> {
        let Some(kind) = DenseReduce::of(op) else {
            return Ok(false);
        };
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        if !self.dtype.is_float() || !l.is_contiguous() || dims.is_empty() || !adjacent {
            return Ok(false);
        }
        let (a, b) = (dims[0], dims[dims.len() - 1] + 1);
        let size = |ds: &[usize]| crate::core::shape::numel(ds);
        let (outer, r, inner) = (
            size(&l.shape()[..a]),
            size(&l.shape()[a..b]),
            size(&l.shape()[b..]),
        );
        if r == 0 || l.offset() + l.numel() > u32::MAX as usize {
            return Ok(false);
        }
        let rt = CudaRuntime::get()?;
        let x = self.at(l.offset() as u32);
        let acc = if self.dtype == DType::F64 { 8 } else { 4 };
        let sms = rt.sm_count.max(1) as usize;
        let (outer, r, inner) = (outer as u32, r as u32, inner as u32);
        if inner == 1 {
            // each output's elements are adjacent: blocks over (row, chunk)
            let v = kernels::pack(self.dtype) as u32;
            let packed = x % 16 == 0 && r % v == 0;
            let want = (sms * 8)
                .div_ceil(outer as usize)
                .min((r as usize).div_ceil(4096))
                .max(1);
            let mut chunk_len = r.div_ceil(want as u32);
            if packed {
                chunk_len = chunk_len.div_ceil(v) * v;
            }
            let chunks = r.div_ceil(chunk_len);
            let partial_bytes = if chunks > 1 {
                (outer * chunks) as usize * acc
            } else {
                0
            };
            let partial = CudaStorage::alloc(DType::U8, partial_bytes)?;
            let (p, rows) = (partial.ptr(), (outer, r));
            kernels::reduce_lanes(
                rt,
                kind,
                self.dtype,
                rows,
                (chunks, chunk_len),
                packed,
                x,
                p,
                y.ptr(),
            )?;
            if chunks > 1 {
                kernels::reduce_lanes_finish(rt, kind, self.dtype, outer, chunks, r, p, y.ptr())?;
            }
        } else {
            // the reduced axis is `inner` apart: threads across the columns, the axis in chunks
            let columns = outer as usize * inner as usize;
            let want = (sms * 2048)
                .div_ceil(columns)
                .min((r as usize).div_ceil(16))
                .clamp(1, 1024);
            let chunk_len = r.div_ceil(want as u32);
            let chunks = r.div_ceil(chunk_len);
            if columns * chunks as usize > u32::MAX as usize {
                return Ok(false);
            }
            let partial_bytes = if chunks > 1 {
                columns * chunks as usize * acc
            } else {
                0
            };
            let partial = CudaStorage::alloc(DType::U8, partial_bytes)?;
            let (p, shape) = (partial.ptr(), (outer, r, inner));
            kernels::reduce_cols(rt, kind, self.dtype, shape, (chunks, chunk_len), x, p, y.ptr())?;
            if chunks > 1 {
                kernels::reduce_cols_finish(rt, kind, self.dtype, (outer, inner), chunks, r, p, y.ptr())?;
            }
        }
        Ok(true)
    }

    /// Softmax or log-softmax along `dim`; dense output.
    pub fn softmax(&self, l: &Layout, dim: usize, log: bool) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let last = l.ndim() - 1;
        let mut perm: Vec<usize> = (0..l.ndim()).filter(|&d| d != dim).collect();
        perm.push(dim);
        let pl = l.permute(&perm);
        let outer = Layout::from_parts(
            pl.shape()[..last].to_vec(),
            pl.strides()[..last].to_vec(),
            pl.offset(),
        );
        let (len, step) = (pl.shape()[last], pl.strides()[last]);
        let y = CudaStorage::alloc(self.dtype, l.numel())?;
        if l.numel() == 0 {
            return Ok(y);
        }
        if dim == last && l.is_contiguous() && l.offset() + l.numel() <= u32::MAX as usize {
            let rows = (l.numel() / len) as u32;
            let x = self.at(l.offset() as u32);
            kernels::softmax_rows(rt, self.dtype, (rows, len as u32), log, x, y.ptr())?;
            return Ok(y);
        }
        let (g, [ro]) = geometry("softmax", outer.shape(), [&outer])?;
        kernels::softmax(
            rt,
            self.dtype,
            (g, ro),
            self.ptr(),
            len as u32,
            step as u32,
            log,
            y.ptr(),
        )?;
        if dim == last {
            return Ok(y);
        }
        let mut inverse = vec![0; perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p] = i;
        }
        y.cast(&Layout::contiguous(pl.shape()).permute(&inverse), self.dtype)
    }

    /// Layer norm of dense storage over rows of `norm` elements.
    pub fn layer_norm(
        &self,
        norm: usize,
        w: Option<&CudaStorage>,
        b: Option<&CudaStorage>,
        eps: f64,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let y = CudaStorage::alloc(self.dtype, self.len)?;
        if self.len == 0 || norm == 0 {
            return Ok(y);
        }
        let rows = (self.len / norm) as u32;
        kernels::layer_norm(
            rt,
            self.dtype,
            rows,
            norm as u32,
            self.ptr(),
            w.map(|t| t.ptr()),
            b.map(|t| t.ptr()),
            eps,
            y.ptr(),
        )?;
        Ok(y)
    }

    /// The input's gradient of layer norm over dense rows of `norm` elements
    /// from the output's gradient `g` (dense, same dtype), and, with
    /// `want_gxh`, `g · x̂` (the terms of the weight's gradient).
    pub fn layer_norm_backward(
        &self,
        g: &CudaStorage,
        w: Option<&CudaStorage>,
        norm: usize,
        eps: f64,
        want_gxh: bool,
    ) -> Result<(CudaStorage, Option<CudaStorage>)> {
        let rt = CudaRuntime::get()?;
        let gx = CudaStorage::alloc(self.dtype, self.len)?;
        let gxh = want_gxh
            .then(|| CudaStorage::alloc(self.dtype, self.len))
            .transpose()?;
        if self.len == 0 || norm == 0 {
            return Ok((gx, gxh));
        }
        kernels::layer_norm_backward(
            rt,
            self.dtype,
            (self.len / norm) as u32,
            norm as u32,
            (self.ptr(), g.ptr(), w.map(|t| t.ptr())),
            eps,
            gx.ptr(),
            gxh.as_ref().map(|t| t.ptr()),
        )?;
        Ok((gx, gxh))
    }

    /// Inverted dropout of dense storage by the draw `(seed, stream)`.
    pub fn dropout(&self, p: f64, draw: (u64, u64)) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let y = CudaStorage::alloc(self.dtype, self.len)?;
        if self.len > 0 {
            let n = u32::try_from(self.len).map_err(|_| {
                Error::invalid(
                    "dropout",
                    format!("{} elements are more than one launch takes", self.len),
                )
            })?;
            kernels::dropout(rt, self.dtype, n, self.ptr(), y.ptr(), draw, p, 1.0 / (1.0 - p))?;
        }
        Ok(y)
    }
}

/// When `a op b` is a row broadcast the packed row kernel can run (2 merged
/// dims, one operand dense, the other a dense row repeated, whole aligned
/// packs): whether `b` is the row.
fn row_broadcast(dtype: DType, g: &Geometry, ao: &Operand, bo: &Operand) -> Option<bool> {
    let v = kernels::pack(dtype) as u32;
    if g.ndim != 2 || g.sizes[1] % v != 0 || ao.offset % v != 0 || bo.offset % v != 0 {
        return None;
    }
    let is_row = |o: &Operand| o.strides[0] == 0 && o.strides[1] == 1;
    match (ao.contiguous != 0, bo.contiguous != 0) {
        (true, false) if is_row(bo) => Some(true),
        (false, true) if is_row(ao) => Some(false),
        _ => None,
    }
}

fn reduce_code(op: ReduceOp) -> (u32, u32) {
    let (code, param) = op.code();
    (code as u32, param)
}

/// The bytes of `value` as one element of `dtype`, in the low bytes of a u64.
fn scalar_bits(dtype: DType, value: Scalar) -> u64 {
    with_dtype!(dtype, T => {
        let v: T = match value {
            Scalar::Float(f) => T::from_f64(f),
            other => T::from_i64(other.to_i64()),
        };
        let mut bits = 0u64;
        // SAFETY: T is a plain number of at most 8 bytes; its bytes are copied into `bits`.
        unsafe {
            std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>(), (&mut bits as *mut u64).cast::<u8>(), std::mem::size_of::<T>());
        }
        bits
    })
}
