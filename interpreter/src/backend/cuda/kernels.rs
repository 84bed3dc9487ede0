//! The kernel table and the typed launches. Every kernel of the PTX module is
//! resolved once, at start-up, into a table keyed by [`Kernel`] (no string
//! work per launch), and each kernel family has exactly one launch function
//! here whose Rust signature mirrors the kernel's (the parameter structs come
//! from `kiln_kernels::params`, compiled into both sides).

use super::runtime::{cuda_error, CudaRuntime};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::strided::Merged;
use crate::core::{DType, Layout};
use cudarc::driver::{result, sys, CudaFunction, CudaModule};
use kiln_kernels::params::{
    AdamParams, CrossEntropyParams, Geometry, IndexDim, MatmulShape, Operand, SgdParams, MAX_DIMS,
};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// One kernel of the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// `unary_<op>_<dtype>`
    Unary(UnaryOp, DType),
    /// `binary_<op>_<dtype>`
    Binary(BinaryOp, DType),
    /// `cmp_<op>_<dtype>`
    Cmp(CmpOp, DType),
    /// `binary_scalar_<op>_<dtype>` (the scalar passed by value)
    BinaryScalar(BinaryOp, DType),
    /// `cmp_scalar_<op>_<dtype>`
    CmpScalar(CmpOp, DType),
    /// `where_<dtype>`
    Where(DType),
    /// `cast_<src>_<dst>`
    Cast(DType, DType),
    /// `cast_v_<src>_<dst>`: dense, the wider side in 16-byte accesses
    CastV(DType, DType),
    /// `fill_<dtype>`
    Fill(DType),
    /// `arange_<dtype>`
    Arange(DType),
    /// `rand_uniform_<dtype>`
    RandUniform(DType),
    /// `rand_normal_<dtype>`
    RandNormal(DType),
    /// `rand_int_<dtype>`
    RandInt(DType),
    /// `reduce_partial_<input dtype>`
    ReducePartial(DType),
    /// `reduce_finish_<output dtype>`
    ReduceFinish(DType),
    /// `softmax_<dtype>`
    Softmax(DType),
    /// `layer_norm_<dtype>`
    LayerNorm(DType),
    /// `matmul_int_<dtype>`
    MatmulInt(DType),
    /// `unary_v_<op>_<dtype>`: dense, 16-byte accesses
    UnaryV(UnaryOp, DType),
    /// `binary_v_<op>_<dtype>`: dense, 16-byte accesses
    BinaryV(BinaryOp, DType),
    /// `binary_scalar_v_<op>_<dtype>`: dense, 16-byte accesses
    BinaryScalarV(BinaryOp, DType),
    /// `binary_row_<op>_<dtype>`: a dense operand and a repeated dense row
    BinaryRow(BinaryOp, DType),
    /// `reduce_lanes_<op>_<dtype>`: dense rows reduced by blocks
    ReduceLanes(DenseReduce, DType),
    /// `reduce_lanes_finish_<op>_<dtype>`
    ReduceLanesFinish(DenseReduce, DType),
    /// `reduce_cols_<op>_<dtype>`: a dense middle axis reduced across columns
    ReduceCols(DenseReduce, DType),
    /// `reduce_cols_finish_<op>_<dtype>`
    ReduceColsFinish(DenseReduce, DType),
    /// `softmax_rows_<dtype>`: dense rows
    SoftmaxRows(DType),
    /// `transpose_b<bytes>`: tiled transposing copy of elements of that size
    Transpose(usize),
    /// `cross_entropy_<dtype>`: per-row loss and log-sum-exp of dense logits
    CrossEntropy(DType),
    /// `cross_entropy_backward_<dtype>`: the logits' gradient
    CrossEntropyBackward(DType),
    /// `sgd_step_<param dtype>`: one fused SGD step
    SgdStep(DType),
    /// `adam_step_<param dtype>`: one fused Adam / AdamW step
    AdamStep(DType),
    /// `gather_<dtype>`: reads along a dim through an i64 index (index_select, gather)
    Gather(DType),
    /// `scatter_add_<source dtype>`: atomic adds along a dim through an i64 index
    ScatterAdd(DType),
}

/// The reductions with dense float kernels (value-only, one accumulator).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DenseReduce {
    /// sum
    Sum,
    /// mean
    Mean,
    /// maximum (NaN propagates)
    Max,
    /// minimum (NaN propagates)
    Min,
}

impl DenseReduce {
    /// The dense kernel family of `op`, when it has one.
    pub fn of(op: ReduceOp) -> Option<DenseReduce> {
        match op {
            ReduceOp::Sum => Some(DenseReduce::Sum),
            ReduceOp::Mean => Some(DenseReduce::Mean),
            ReduceOp::Max => Some(DenseReduce::Max),
            ReduceOp::Min => Some(DenseReduce::Min),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            DenseReduce::Sum => "sum",
            DenseReduce::Mean => "mean",
            DenseReduce::Max => "max",
            DenseReduce::Min => "min",
        }
    }

    const ALL: [DenseReduce; 4] = [
        DenseReduce::Sum,
        DenseReduce::Mean,
        DenseReduce::Max,
        DenseReduce::Min,
    ];
}

const UNARY: [UnaryOp; 25] = {
    use UnaryOp::*;
    [
        Abs, Neg, Exp, Log, Log2, Log1p, Expm1, Sqrt, Rsqrt, Sin, Cos, Tan, Tanh, Sigmoid, Relu, Gelu, Silu,
        Erf, Floor, Ceil, Round, Sign, Square, Reciprocal, LogicalNot,
    ]
};
const BINARY: [BinaryOp; 11] = {
    use BinaryOp::*;
    [
        Add, Sub, Mul, Div, Rem, Pow, Maximum, Minimum, BitAnd, BitOr, BitXor,
    ]
};
const CMP: [CmpOp; 6] = [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge];

impl Kernel {
    /// The exported PTX name.
    pub fn name(self) -> String {
        match self {
            Kernel::Unary(op, d) => format!("unary_{}_{d}", op.name()),
            Kernel::Binary(op, d) => format!("binary_{}_{d}", op.name()),
            Kernel::Cmp(op, d) => format!("cmp_{}_{d}", op.name()),
            Kernel::BinaryScalar(op, d) => format!("binary_scalar_{}_{d}", op.name()),
            Kernel::CmpScalar(op, d) => format!("cmp_scalar_{}_{d}", op.name()),
            Kernel::Where(d) => format!("where_{d}"),
            Kernel::Cast(s, d) => format!("cast_{s}_{d}"),
            Kernel::CastV(s, d) => format!("cast_v_{s}_{d}"),
            Kernel::Fill(d) => format!("fill_{d}"),
            Kernel::Arange(d) => format!("arange_{d}"),
            Kernel::RandUniform(d) => format!("rand_uniform_{d}"),
            Kernel::RandNormal(d) => format!("rand_normal_{d}"),
            Kernel::RandInt(d) => format!("rand_int_{d}"),
            Kernel::ReducePartial(d) => format!("reduce_partial_{d}"),
            Kernel::ReduceFinish(d) => format!("reduce_finish_{d}"),
            Kernel::Softmax(d) => format!("softmax_{d}"),
            Kernel::LayerNorm(d) => format!("layer_norm_{d}"),
            Kernel::MatmulInt(d) => format!("matmul_int_{d}"),
            Kernel::UnaryV(op, d) => format!("unary_v_{}_{d}", op.name()),
            Kernel::BinaryV(op, d) => format!("binary_v_{}_{d}", op.name()),
            Kernel::BinaryScalarV(op, d) => format!("binary_scalar_v_{}_{d}", op.name()),
            Kernel::BinaryRow(op, d) => format!("binary_row_{}_{d}", op.name()),
            Kernel::ReduceLanes(op, d) => format!("reduce_lanes_{}_{d}", op.name()),
            Kernel::ReduceLanesFinish(op, d) => format!("reduce_lanes_finish_{}_{d}", op.name()),
            Kernel::ReduceCols(op, d) => format!("reduce_cols_{}_{d}", op.name()),
            Kernel::ReduceColsFinish(op, d) => format!("reduce_cols_finish_{}_{d}", op.name()),
            Kernel::SoftmaxRows(d) => format!("softmax_rows_{d}"),
            Kernel::Transpose(bytes) => format!("transpose_b{bytes}"),
            Kernel::CrossEntropy(d) => format!("cross_entropy_{d}"),
            Kernel::CrossEntropyBackward(d) => format!("cross_entropy_backward_{d}"),
            Kernel::SgdStep(d) => format!("sgd_step_{d}"),
            Kernel::AdamStep(d) => format!("adam_step_{d}"),
            Kernel::Gather(d) => format!("gather_{d}"),
            Kernel::ScatterAdd(d) => format!("scatter_add_{d}"),
        }
    }

    fn all() -> Vec<Kernel> {
        let mut v = vec![];
        for d in DType::ALL {
            v.extend(UNARY.iter().map(|&op| Kernel::Unary(op, d)));
            v.extend(BINARY.iter().map(|&op| Kernel::Binary(op, d)));
            v.extend(CMP.iter().map(|&op| Kernel::Cmp(op, d)));
            v.extend(BINARY.iter().map(|&op| Kernel::BinaryScalar(op, d)));
            v.extend(UNARY.iter().map(|&op| Kernel::UnaryV(op, d)));
            v.extend(BINARY.iter().map(|&op| Kernel::BinaryV(op, d)));
            v.extend(BINARY.iter().map(|&op| Kernel::BinaryScalarV(op, d)));
            v.extend(BINARY.iter().map(|&op| Kernel::BinaryRow(op, d)));
            for op in DenseReduce::ALL {
                v.extend([
                    Kernel::ReduceLanes(op, d),
                    Kernel::ReduceLanesFinish(op, d),
                    Kernel::ReduceCols(op, d),
                    Kernel::ReduceColsFinish(op, d),
                ]);
            }
            v.extend(CMP.iter().map(|&op| Kernel::CmpScalar(op, d)));
            v.extend(DType::ALL.iter().map(|&s| Kernel::Cast(s, d)));
            v.extend(DType::ALL.iter().map(|&s| Kernel::CastV(s, d)));
            v.extend([
                Kernel::Where(d),
                Kernel::Fill(d),
                Kernel::Arange(d),
                Kernel::RandUniform(d),
                Kernel::RandNormal(d),
                Kernel::RandInt(d),
                Kernel::ReducePartial(d),
                Kernel::ReduceFinish(d),
                Kernel::Softmax(d),
                Kernel::SoftmaxRows(d),
                Kernel::LayerNorm(d),
                Kernel::MatmulInt(d),
                Kernel::CrossEntropy(d),
                Kernel::CrossEntropyBackward(d),
                Kernel::SgdStep(d),
                Kernel::AdamStep(d),
                Kernel::Gather(d),
                Kernel::ScatterAdd(d),
            ]);
        }
        v.extend([1, 2, 4, 8].map(Kernel::Transpose));
        v
    }
}

/// Every kernel of the module, resolved once.
pub struct KernelTable {
    functions: HashMap<Kernel, CudaFunction>,
    /// The most threads a block of each kernel may have (its register use
    /// decides: a heavy kernel cannot run 1024 threads a block).
    max_threads: HashMap<Kernel, u32>,
}

impl KernelTable {
    /// Resolves every kernel the module exports.
    pub fn load(module: &Arc<CudaModule>) -> std::result::Result<Self, String> {
        let ptx_names: std::collections::HashSet<&str> = ptx_entries(super::runtime::ptx());
        let (mut functions, mut max_threads) = (HashMap::new(), HashMap::new());
        for k in Kernel::all() {
            let name = k.name();
            if ptx_names.contains(name.as_str()) {
                let f = module
                    .load_function(&name)
                    .map_err(|e| format!("cannot load kernel {name}: {e:?}"))?;
                let limit = f.max_threads_per_block().unwrap_or(256).clamp(32, 1024) as u32;
                max_threads.insert(k, limit);
                functions.insert(k, f);
            }
        }
        Ok(KernelTable {
            functions,
            max_threads,
        })
    }

    /// The kernel, or a clear error when the module has none for these dtypes.
    pub fn get(&self, k: Kernel) -> Result<&CudaFunction> {
        self.functions.get(&k).ok_or_else(|| {
            Error::invalid(
                "cuda",
                format!(
                    "no CUDA kernel {} (this op/dtype is not supported on CUDA)",
                    k.name()
                ),
            )
        })
    }

    /// The most threads a block of `k` may have (256 when unknown).
    pub fn max_threads(&self, k: Kernel) -> u32 {
        self.max_threads.get(&k).copied().unwrap_or(256)
    }

    /// Registers a thread, local (spilled) bytes a thread and the block limit
    /// of `k`, as the driver compiled it.
    pub fn resources(&self, k: Kernel) -> Option<(i32, i32, u32)> {
        let f = self.functions.get(&k)?;
        Some((
            f.num_regs().ok()?,
            f.local_size_bytes().ok()?,
            self.max_threads(k),
        ))
    }

    /// The kernel when the module has it.
    pub fn find(&self, k: Kernel) -> Option<&CudaFunction> {
        self.functions.get(&k)
    }

    /// Number of kernels resolved.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// True when no kernel was resolved.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }
}

fn ptx_entries(ptx: &str) -> std::collections::HashSet<&str> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|l| l.split('(').next())
        .map(str::trim)
        .collect()
}

/// The kernel geometry of `N` operands sharing `shape` (merged dims, u32 indices).
pub fn geometry<const N: usize>(
    op: &'static str,
    shape: &[usize],
    layouts: [&Layout; N],
) -> Result<(Geometry, [Operand; N])> {
    let n = crate::core::shape::numel(shape);
    let too_big = || {
        Error::invalid(
            op,
            format!("shape {shape:?} is too large for the CUDA kernels (32-bit indexing)"),
        )
    };
    // Every layout passed `Layout::check_fits` against its storage when its
    // tensor was made, so the extents below are exact and every offset the
    // kernels compute lies inside the buffers they are given.
    if n > u32::MAX as usize || layouts.iter().any(|l| l.storage_extent() > u32::MAX as usize) {
        return Err(too_big());
    }
    let m = Merged::<N>::new(shape, std::array::from_fn(|k| layouts[k].strides()));
    if m.shape.len() > MAX_DIMS {
        return Err(Error::invalid(
            op,
            format!("shape {shape:?} has too many non-mergeable dims for CUDA (max {MAX_DIMS})"),
        ));
    }
    let mut g = Geometry {
        n: n as u32,
        ndim: m.shape.len() as u32,
        ..Default::default()
    };
    for (d, &s) in m.shape.iter().enumerate() {
        g.sizes[d] = s as u32;
    }
    let dense = crate::core::shape::contiguous_strides(&m.shape);
    let ops = std::array::from_fn(|k| {
        let mut o = Operand {
            offset: layouts[k].offset() as u32,
            ..Default::default()
        };
        for (d, &s) in m.strides[k].iter().enumerate() {
            o.strides[d] = s as u32;
        }
        o.contiguous = (m.strides[k] == dense || n <= 1) as u32;
        o
    });
    Ok((g, ops))
}

/// The operand of a dense output.
pub fn dense(g: &Geometry) -> Operand {
    let mut o = Operand {
        contiguous: 1,
        ..Default::default()
    };
    let mut acc = 1u32;
    for d in (0..g.ndim as usize).rev() {
        o.strides[d] = acc;
        acc = acc.wrapping_mul(g.sizes[d].max(1));
    }
    o
}

fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// Launches `f` over `n` elements (grid-stride; 256 threads a block).
///
/// # Safety
/// `params` must match the kernel's parameters in number, order and type, and
/// every pointer in them must be a live device allocation large enough for
/// the accesses the geometry implies.
unsafe fn launch(rt: &CudaRuntime, f: &CudaFunction, n: u32, params: &mut [*mut c_void]) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let block = 256u32;
    let grid = n.div_ceil(block).min(rt.sm_count.max(1) * 16);
    result::launch_kernel(
        f.cu_function(),
        (grid, 1, 1),
        (block, 1, 1),
        0,
        rt.cu_stream(),
        params,
    )
    .map_err(|e| cuda_error("kernel launch", e))
}

/// Launches `f` on an explicit grid and block with `shared` bytes of dynamic shared memory.
///
/// # Safety
/// As for [`launch`]; the kernel must expect this block shape and shared size.
unsafe fn launch_with(
    rt: &CudaRuntime,
    f: &CudaFunction,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Ok(());
    }
    result::launch_kernel(f.cu_function(), grid, block, shared, rt.cu_stream(), params)
        .map_err(|e| cuda_error("kernel launch", e))
}

/// Shared memory for one block-wide all-reduce: 32 accumulators of up to 8 bytes.
const REDUCE_SCRATCH: u32 = 32 * 8;

/// Launches `f` with one warp (32 threads) per item.
///
/// # Safety
/// As for [`launch`].
unsafe fn launch_warps(
    rt: &CudaRuntime,
    f: &CudaFunction,
    items: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    if items == 0 {
        return Ok(());
    }
    let threads = items as u64 * 32;
    let block = 256u64;
    let grid = threads.div_ceil(block);
    if grid > i32::MAX as u64 {
        return Err(Error::invalid("cuda", "too many rows for one launch"));
    }
    result::launch_kernel(
        f.cu_function(),
        (grid as u32, 1, 1),
        (block as u32, 1, 1),
        0,
        rt.cu_stream(),
        params,
    )
    .map_err(|e| cuda_error("kernel launch", e))
}

/// Pass 1 of a reduction: one warp per (output, chunk) writes a partial state.
#[allow(clippy::too_many_arguments)]
pub fn reduce_partial(
    rt: &CudaRuntime,
    dtype: DType,
    outer: (Geometry, Operand),
    inner: (Geometry, Operand),
    x: sys::CUdeviceptr,
    chunks: u32,
    chunk_len: u32,
    op: u32,
    partial: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReducePartial(dtype))?;
    let ((mut og, mut oo), (mut ig, mut io)) = (outer, inner);
    let (mut x, mut chunks, mut chunk_len, mut op, mut partial) = (x, chunks, chunk_len, op, partial);
    let warps = og.n * chunks;
    // SAFETY: matches `reduce_partial_*(outer, xo, inner, io, x, chunks, chunk_len, op, partial: *mut RState)`.
    unsafe {
        launch_warps(
            rt,
            f,
            warps,
            &mut [
                arg(&mut og),
                arg(&mut oo),
                arg(&mut ig),
                arg(&mut io),
                arg(&mut x),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut op),
                arg(&mut partial),
            ],
        )
    }
}

/// Pass 2 of a reduction: one warp per output merges its chunks and stores the result.
#[allow(clippy::too_many_arguments)]
pub fn reduce_finish(
    rt: &CudaRuntime,
    out_dtype: DType,
    outputs: u32,
    chunks: u32,
    op: u32,
    float: bool,
    correction: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceFinish(out_dtype))?;
    let (mut n, mut chunks, mut op, mut float, mut corr, mut partial, mut y) =
        (outputs, chunks, op, float as u32, correction, partial, y);
    // SAFETY: matches `reduce_finish_*(outputs, chunks, op, float, correction, partial, y)`.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            &mut [
                arg(&mut n),
                arg(&mut chunks),
                arg(&mut op),
                arg(&mut float),
                arg(&mut corr),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Softmax (or log-softmax) of `len` elements `step` apart in each row; y dense.
#[allow(clippy::too_many_arguments)]
pub fn softmax(
    rt: &CudaRuntime,
    dtype: DType,
    rows: (Geometry, Operand),
    x: sys::CUdeviceptr,
    len: u32,
    step: u32,
    log: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Softmax(dtype))?;
    let (mut g, mut ro) = rows;
    let (mut x, mut len, mut step, mut log, mut y) = (x, len, step, log as u32, y);
    let n = g.n;
    // SAFETY: matches `softmax_*(rows, ro, x, len: u32, step: u32, log: u32, y)`.
    unsafe {
        launch_warps(
            rt,
            f,
            n,
            &mut [
                arg(&mut g),
                arg(&mut ro),
                arg(&mut x),
                arg(&mut len),
                arg(&mut step),
                arg(&mut log),
                arg(&mut y),
            ],
        )
    }
}

/// Dense reduction of `rows` rows of `len` adjacent elements, each split into
/// `chunks` chunks of `chunk_len` (one block per chunk): with one chunk the
/// results go to `y`, else the partials (accumulator type) to `partial`.
#[allow(clippy::too_many_arguments)]
pub fn reduce_lanes(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (rows, len): (u32, u32),
    (chunks, chunk_len): (u32, u32),
    packed: bool,
    x: sys::CUdeviceptr,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceLanes(op, dtype))?;
    let items = rows * chunks;
    let grid = items.min(rt.sm_count.max(1) * 64);
    let (mut rows, mut len, mut chunks, mut chunk_len, mut packed) =
        (rows, len, chunks, chunk_len, packed as u32);
    let (mut x, mut partial, mut y) = (x, partial, y);
    // SAFETY: matches `reduce_lanes_*(rows, len, chunks, chunk_len, packed, x, partial, y)`;
    // 256 threads a block and the scratch of one block all-reduce.
    unsafe {
        launch_with(
            rt,
            f,
            (grid, 1, 1),
            (256, 1, 1),
            REDUCE_SCRATCH,
            &mut [
                arg(&mut rows),
                arg(&mut len),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut packed),
                arg(&mut x),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Merges the chunk partials of [`reduce_lanes`] (one warp per output).
#[allow(clippy::too_many_arguments)]
pub fn reduce_lanes_finish(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    outputs: u32,
    chunks: u32,
    count: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceLanesFinish(op, dtype))?;
    let (mut n, mut chunks, mut count, mut partial, mut y) = (outputs, chunks, count, partial, y);
    // SAFETY: matches `reduce_lanes_finish_*(outputs, chunks, count, partial, y)`.
    unsafe {
        launch_warps(
            rt,
            f,
            outputs,
            &mut [
                arg(&mut n),
                arg(&mut chunks),
                arg(&mut count),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Dense `[outer, r, inner]` reduced over `r` in `chunks` chunks of `chunk_len`
/// (one thread per output column and chunk).
#[allow(clippy::too_many_arguments)]
pub fn reduce_cols(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (outer, r, inner): (u32, u32, u32),
    (chunks, chunk_len): (u32, u32),
    x: sys::CUdeviceptr,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceCols(op, dtype))?;
    let n = outer * chunks * inner;
    let (mut outer, mut r, mut inner, mut chunks, mut chunk_len) = (outer, r, inner, chunks, chunk_len);
    let (mut x, mut partial, mut y) = (x, partial, y);
    // SAFETY: matches `reduce_cols_*(outer, r, inner, chunks, chunk_len, x, partial, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut outer),
                arg(&mut r),
                arg(&mut inner),
                arg(&mut chunks),
                arg(&mut chunk_len),
                arg(&mut x),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// Merges the chunk partials of [`reduce_cols`] (one thread per output).
#[allow(clippy::too_many_arguments)]
pub fn reduce_cols_finish(
    rt: &CudaRuntime,
    op: DenseReduce,
    dtype: DType,
    (outer, inner): (u32, u32),
    chunks: u32,
    count: u32,
    partial: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ReduceColsFinish(op, dtype))?;
    let n = outer * inner;
    let (mut outer, mut inner, mut chunks, mut count, mut partial, mut y) =
        (outer, inner, chunks, count, partial, y);
    // SAFETY: matches `reduce_cols_finish_*(outer, inner, chunks, count, partial, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut outer),
                arg(&mut inner),
                arg(&mut chunks),
                arg(&mut count),
                arg(&mut partial),
                arg(&mut y),
            ],
        )
    }
}

/// How row kernel `k` covers rows of `len`: a warp per row for short rows,
/// else a block whose threads each keep up to 16 elements in registers.
fn row_config(rt: &CudaRuntime, k: Kernel, rows: u32, len: u32) -> (bool, (u32, u32, u32), (u32, u32, u32)) {
    const CACHE: u32 = 16;
    let cap = rt.sm_count.max(1) * 32;
    if len <= 32 * CACHE {
        let grid = (rows.div_ceil(8)).min(cap);
        (true, (grid, 1, 1), (256, 1, 1))
    } else {
        // at most 512 threads, and fewer when the kernel's registers do not
        // allow that many; rows longer than the block caches are re-read
        let limit = rt.kernels.max_threads(k).min(512);
        let limit = 1 << (31 - limit.leading_zeros());
        let threads = len.div_ceil(CACHE).next_power_of_two().clamp(32, limit);
        (false, (rows.min(cap), 1, 1), (threads, 1, 1))
    }
}

/// Softmax (or log-softmax) of `rows` dense rows of `len` elements into dense `y`.
pub fn softmax_rows(
    rt: &CudaRuntime,
    dtype: DType,
    (rows, len): (u32, u32),
    log: bool,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::SoftmaxRows(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, len);
    let (mut rows, mut len, mut per_warp, mut log, mut x, mut y) =
        (rows, len, per_warp as u32, log as u32, x, y);
    // SAFETY: matches `softmax_rows_*(rows, len, per_warp, log, x, y)`; the block shape
    // follows `per_warp` and carries the all-reduce scratch.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            &mut [
                arg(&mut rows),
                arg(&mut len),
                arg(&mut per_warp),
                arg(&mut log),
                arg(&mut x),
                arg(&mut y),
            ],
        )
    }
}

/// A tiled transposing copy of `bytes`-sized elements: dense `y[b][i][j] =
/// x[b * sb + i + j * sj]` over `[batch, rows, cols]`; `None` when the grid
/// would be too large (the caller then uses the strided copy).
#[allow(clippy::too_many_arguments)]
pub fn transpose(
    rt: &CudaRuntime,
    bytes: usize,
    (batch, rows, cols): (u32, u32, u32),
    sb: u32,
    sj: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<Option<()>> {
    let Some(f) = rt.kernels.find(Kernel::Transpose(bytes)) else {
        return Ok(None);
    };
    let grid = (cols.div_ceil(32), rows.div_ceil(32), batch.min(65535));
    if grid.1 > 65535 {
        return Ok(None);
    }
    let (mut batch, mut rows, mut cols, mut sb, mut sj, mut x, mut y) = (batch, rows, cols, sb, sj, x, y);
    // SAFETY: matches `transpose_b*(batch, rows, cols, sb, sj, x, y)` with 32 x 8 threads
    // a block and a 32 x 33 tile of shared memory.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            (32, 8, 1),
            (33 * 32 * bytes) as u32,
            &mut [
                arg(&mut batch),
                arg(&mut rows),
                arg(&mut cols),
                arg(&mut sb),
                arg(&mut sj),
                arg(&mut x),
                arg(&mut y),
            ],
        )
    }
    .map(Some)
}

/// `y = a op b` over `packs` 16-byte packs where one operand is a dense row of
/// `row_packs` packs repeated (`row_is_b`: `b` is the row).
#[allow(clippy::too_many_arguments)]
pub fn binary_row(
    rt: &CudaRuntime,
    f: &CudaFunction,
    packs: u32,
    row_packs: u32,
    row_is_b: bool,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut packs_, mut row_packs, mut side, mut a, mut b, mut y) =
        (packs, row_packs, row_is_b as u32, a, b, y);
    // SAFETY: matches `binary_row_*(packs, row_packs, row_side, a, b, y)`; all aligned.
    unsafe {
        launch(
            rt,
            f,
            packs,
            &mut [
                arg(&mut packs_),
                arg(&mut row_packs),
                arg(&mut side),
                arg(&mut a),
                arg(&mut b),
                arg(&mut y),
            ],
        )
    }
}

/// Layer norm of dense rows of `norm` elements (weight/bias optional: null pointers).
#[allow(clippy::too_many_arguments)]
pub fn layer_norm(
    rt: &CudaRuntime,
    dtype: DType,
    rows: u32,
    norm: u32,
    x: sys::CUdeviceptr,
    w: Option<sys::CUdeviceptr>,
    b: Option<sys::CUdeviceptr>,
    eps: f64,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::LayerNorm(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, rows, norm);
    let mut flags = w.is_some() as u32 | (b.is_some() as u32) << 1;
    let (mut rows, mut norm, mut per_warp, mut x, mut w, mut b, mut eps, mut y) = (
        rows,
        norm,
        per_warp as u32,
        x,
        w.unwrap_or(0),
        b.unwrap_or(0),
        eps,
        y,
    );
    // SAFETY: matches `layer_norm_*(rows, norm, per_warp, x, w, b, flags, eps, y)`; w/b are
    // only read when flagged; the block shape follows `per_warp`.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            &mut [
                arg(&mut rows),
                arg(&mut norm),
                arg(&mut per_warp),
                arg(&mut x),
                arg(&mut w),
                arg(&mut b),
                arg(&mut flags),
                arg(&mut eps),
                arg(&mut y),
            ],
        )
    }
}

/// Integer batched matmul over the batch geometry.
#[allow(clippy::too_many_arguments)]
pub fn matmul_int(
    rt: &CudaRuntime,
    dtype: DType,
    batch: (Geometry, Operand, Operand),
    dims: MatmulShape,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::MatmulInt(dtype))?;
    let (mut g, mut ao, mut bo) = batch;
    let (mut dims, mut a, mut b, mut y) = (dims, a, b, y);
    let n = g.n * dims.m * dims.n;
    // SAFETY: matches `matmul_int_*(g, ao, bo, dims: MatmulShape, a, b, y)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut g),
                arg(&mut ao),
                arg(&mut bo),
                arg(&mut dims),
                arg(&mut a),
                arg(&mut b),
                arg(&mut y),
            ],
        )
    }
}

/// Elements per 16-byte pack of `dtype`.
pub fn pack(dtype: DType) -> usize {
    16 / dtype.size_in_bytes()
}

/// True when every operand is dense and 16-byte aligned: the packed kernels apply.
pub fn packable(dtype: DType, ops: &[Operand]) -> bool {
    ops.iter()
        .all(|o| o.contiguous != 0 && o.offset as usize % pack(dtype) == 0)
}

/// Dense `y = op(x)` with 16-byte accesses.
pub fn unary_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut x, mut y) = (n, x, y);
    // SAFETY: matches `unary_v_*(n: u32, x: *const T, y: *mut T)`; both dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [arg(&mut n_), arg(&mut x), arg(&mut y)],
        )
    }
}

/// Dense `y = a op b` with 16-byte accesses.
pub fn binary_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    a: sys::CUdeviceptr,
    b: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut a, mut b, mut y) = (n, a, b, y);
    // SAFETY: matches `binary_v_*(n: u32, a: *const T, b: *const T, y: *mut T)`; all dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [arg(&mut n_), arg(&mut a), arg(&mut b), arg(&mut y)],
        )
    }
}

/// Dense `y = a op s` (or `s op a`) with 16-byte accesses.
#[allow(clippy::too_many_arguments)]
pub fn binary_scalar_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    dtype: DType,
    n: u32,
    a: sys::CUdeviceptr,
    bits: u64,
    rev: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let (mut n_, mut a, mut bits, mut rev, mut y) = (n, a, bits, rev as u32, y);
    // SAFETY: matches `binary_scalar_v_*(n: u32, a: *const T, s: T, rev: u32, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(pack(dtype) as u32),
            &mut [
                arg(&mut n_),
                arg(&mut a),
                arg(&mut bits),
                arg(&mut rev),
                arg(&mut y),
            ],
        )
    }
}

/// `y = op(x)` (y dense).
pub fn unary(
    rt: &CudaRuntime,
    op: UnaryOp,
    dtype: DType,
    g: Geometry,
    x: sys::CUdeviceptr,
    xo: Operand,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Unary(op, dtype))?;
    let (mut g, mut x, mut xo, mut y) = (g, x, xo, y);
    // SAFETY: matches `unary_*(g: Geometry, x: *const T, xo: Operand, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [arg(&mut g), arg(&mut x), arg(&mut xo), arg(&mut y)],
        )
    }
}

/// `y = a op b` (y dense); `kernel` is a `Binary` or `Cmp` kernel.
#[allow(clippy::too_many_arguments)]
pub fn binary(
    rt: &CudaRuntime,
    kernel: Kernel,
    g: Geometry,
    a: sys::CUdeviceptr,
    ao: Operand,
    b: sys::CUdeviceptr,
    bo: Operand,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut g, mut a, mut ao, mut b, mut bo, mut y) = (g, a, ao, b, bo, y);
    // SAFETY: matches `binary_*`/`cmp_*(g, a: *const T, ao, b: *const T, bo, y: *mut _)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut b),
                arg(&mut bo),
                arg(&mut y),
            ],
        )
    }
}

/// `y = a op s` (or `s op a` when `rev`), the scalar's bytes in the low bytes of `bits`;
/// `kernel` is a `BinaryScalar` or `CmpScalar` kernel.
#[allow(clippy::too_many_arguments)]
pub fn binary_scalar(
    rt: &CudaRuntime,
    kernel: Kernel,
    g: Geometry,
    a: sys::CUdeviceptr,
    ao: Operand,
    bits: u64,
    rev: bool,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut g, mut a, mut ao, mut bits, mut rev, mut y) = (g, a, ao, bits, rev as u32, y);
    // SAFETY: matches `*_scalar_*(g, a: *const T, ao, s: T, rev: u32, y: *mut _)`; T's bytes
    // are the low bytes of `bits`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut bits),
                arg(&mut rev),
                arg(&mut y),
            ],
        )
    }
}

/// `y = c ? a : b` (y dense).
#[allow(clippy::too_many_arguments)]
pub fn where_cond(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    c: (sys::CUdeviceptr, Operand),
    a: (sys::CUdeviceptr, Operand),
    b: (sys::CUdeviceptr, Operand),
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Where(dtype))?;
    let (mut g, mut y) = (g, y);
    let ((mut c, mut co), (mut a, mut ao), (mut b, mut bo)) = (c, a, b);
    // SAFETY: matches `where_*(g, c: *const bool, co, a: *const T, ao, b: *const T, bo, y: *mut T)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut c),
                arg(&mut co),
                arg(&mut a),
                arg(&mut ao),
                arg(&mut b),
                arg(&mut bo),
                arg(&mut y),
            ],
        )
    }
}

/// `y[yo] = cast(x[xo])`, both strided.
pub fn cast(
    rt: &CudaRuntime,
    src: DType,
    dst: DType,
    g: Geometry,
    x: (sys::CUdeviceptr, Operand),
    y: (sys::CUdeviceptr, Operand),
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Cast(src, dst))?;
    let mut g = g;
    let ((mut x, mut xo), (mut y, mut yo)) = (x, y);
    // SAFETY: matches `cast_*(g, x: *const S, xo, y: *mut D, yo)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [arg(&mut g), arg(&mut x), arg(&mut xo), arg(&mut y), arg(&mut yo)],
        )
    }
}

/// Dense `y = cast(x)` of `n` elements; both 16-byte aligned.
pub fn cast_v(
    rt: &CudaRuntime,
    f: &CudaFunction,
    (src, dst): (DType, DType),
    n: u32,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let v = 16 / src.size_in_bytes().max(dst.size_in_bytes());
    let (mut n_, mut x, mut y) = (n, x, y);
    // SAFETY: matches `cast_v_*(n: u32, x: *const S, y: *mut D)`; both dense and aligned.
    unsafe {
        launch(
            rt,
            f,
            n.div_ceil(v as u32),
            &mut [arg(&mut n_), arg(&mut x), arg(&mut y)],
        )
    }
}

/// `y[i] = value` for `i < n`; `bits` holds the value's bytes (little-endian, low bytes).
pub fn fill(rt: &CudaRuntime, dtype: DType, n: u32, y: sys::CUdeviceptr, bits: u64) -> Result<()> {
    let f = rt.kernels.get(Kernel::Fill(dtype))?;
    let (mut n, mut y, mut bits) = (n, y, bits);
    // SAFETY: matches `fill_*(n: u32, y: *mut T, value: T)`: T's bytes are the low bytes of `bits`.
    unsafe { launch(rt, f, n, &mut [arg(&mut n), arg(&mut y), arg(&mut bits)]) }
}

/// `y[i] = start + i * step` (floats) or `istart + i * istep` (integers).
#[allow(clippy::too_many_arguments)]
pub fn arange(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    y: sys::CUdeviceptr,
    start: f64,
    step: f64,
    istart: i64,
    istep: i64,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Arange(dtype))?;
    let (mut n, mut y, mut a, mut s, mut ia, mut is) = (n, y, start, step, istart, istep);
    // SAFETY: matches `arange_*(n: u32, y: *mut T, start: f64, step: f64, istart: i64, istep: i64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut n),
                arg(&mut y),
                arg(&mut a),
                arg(&mut s),
                arg(&mut ia),
                arg(&mut is),
            ],
        )
    }
}

/// A Philox draw: `kernel` is `RandUniform` or `RandNormal`.
pub fn rand_float(
    rt: &CudaRuntime,
    kernel: Kernel,
    n: u32,
    y: sys::CUdeviceptr,
    seed: u64,
    stream: u64,
) -> Result<()> {
    let f = rt.kernels.get(kernel)?;
    let (mut n, mut y, mut seed, mut stream) = (n, y, seed, stream);
    // SAFETY: matches `rand_{uniform,normal}_*(n: u32, y: *mut T, seed: u64, stream: u64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [arg(&mut n), arg(&mut y), arg(&mut seed), arg(&mut stream)],
        )
    }
}

/// An integer Philox draw in `[low, low + range)`.
#[allow(clippy::too_many_arguments)]
pub fn rand_int(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    y: sys::CUdeviceptr,
    seed: u64,
    stream: u64,
    low: i64,
    range: u64,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::RandInt(dtype))?;
    let (mut n, mut y, mut seed, mut stream, mut low, mut range) = (n, y, seed, stream, low, range);
    // SAFETY: matches `rand_int_*(n: u32, y: *mut T, seed: u64, stream: u64, low: i64, range: u64)`.
    unsafe {
        launch(
            rt,
            f,
            n,
            &mut [
                arg(&mut n),
                arg(&mut y),
                arg(&mut seed),
                arg(&mut stream),
                arg(&mut low),
                arg(&mut range),
            ],
        )
    }
}

/// Per-row cross-entropy of dense logits `x` (`h.rows` rows of `h.classes`)
/// against i64 `labels`: losses and log-sum-exps (accumulator type) to `loss`, `lse`.
pub fn cross_entropy(
    rt: &CudaRuntime,
    dtype: DType,
    h: CrossEntropyParams,
    x: sys::CUdeviceptr,
    labels: sys::CUdeviceptr,
    loss: sys::CUdeviceptr,
    lse: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::CrossEntropy(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, h.rows, h.classes);
    let mut h = CrossEntropyParams {
        per_warp: per_warp as u32,
        ..h
    };
    let (mut x, mut labels, mut loss, mut lse) = (x, labels, loss, lse);
    // SAFETY: matches `cross_entropy_*(h, x, labels: *const i64, loss: *mut A, lse: *mut A)`;
    // the block shape follows `h.per_warp` and carries the all-reduce scratch.
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            REDUCE_SCRATCH,
            &mut [
                arg(&mut h),
                arg(&mut x),
                arg(&mut labels),
                arg(&mut loss),
                arg(&mut lse),
            ],
        )
    }
}

/// The logits' gradient of [`cross_entropy`]: dense `gx` from `x`, the labels, the
/// saved log-sum-exps and the per-row output gradient (`h.grad_stride` apart).
#[allow(clippy::too_many_arguments)]
pub fn cross_entropy_backward(
    rt: &CudaRuntime,
    dtype: DType,
    h: CrossEntropyParams,
    x: sys::CUdeviceptr,
    labels: sys::CUdeviceptr,
    lse: sys::CUdeviceptr,
    grad: sys::CUdeviceptr,
    gx: sys::CUdeviceptr,
) -> Result<()> {
    let k = Kernel::CrossEntropyBackward(dtype);
    let f = rt.kernels.get(k)?;
    let (per_warp, grid, block) = row_config(rt, k, h.rows, h.classes);
    let mut h = CrossEntropyParams {
        per_warp: per_warp as u32,
        ..h
    };
    let (mut x, mut labels, mut lse, mut grad, mut gx) = (x, labels, lse, grad, gx);
    // SAFETY: matches `cross_entropy_backward_*(h, x, labels, lse: *const A, grad: *const A,
    // gx: *mut T)`; the block shape follows `h.per_warp` (no shared memory is used).
    unsafe {
        launch_with(
            rt,
            f,
            grid,
            block,
            0,
            &mut [
                arg(&mut h),
                arg(&mut x),
                arg(&mut labels),
                arg(&mut lse),
                arg(&mut grad),
                arg(&mut gx),
            ],
        )
    }
}

/// Elements per pack of the optimizer kernels for parameters of `dtype` (16
/// bytes of the wider of the parameter and its f32/f64 state).
fn optim_pack(dtype: DType) -> u32 {
    16 / dtype.size_in_bytes().max(if dtype == DType::F64 { 8 } else { 4 }) as u32
}

/// One SGD step over `n` dense elements: parameter `p`, gradient `g`, momentum
/// buffer `buf` (0 without momentum); `packed` when every pointer is 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    packed: bool,
    p: sys::CUdeviceptr,
    g: sys::CUdeviceptr,
    buf: sys::CUdeviceptr,
    h: SgdParams,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::SgdStep(dtype))?;
    let threads = if packed { n.div_ceil(optim_pack(dtype)) } else { n };
    let (mut n, mut packed, mut p, mut g, mut buf, mut h) = (n, packed as u32, p, g, buf, h);
    // SAFETY: matches `sgd_step_*(n, packed, p: *mut T, g: *const T, buf: *mut S, h: SgdParams)`;
    // `buf` is only read when `h` asks for momentum; packed accesses need the alignment
    // the caller checked, and the tail needs fewer threads than one block has.
    unsafe {
        launch(
            rt,
            f,
            threads,
            &mut [
                arg(&mut n),
                arg(&mut packed),
                arg(&mut p),
                arg(&mut g),
                arg(&mut buf),
                arg(&mut h),
            ],
        )
    }
}

/// One Adam / AdamW step over `n` dense elements: parameter `p`, gradient `g`,
/// moments `m` and `v`; `packed` when every pointer is 16-byte aligned.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    rt: &CudaRuntime,
    dtype: DType,
    n: u32,
    packed: bool,
    (p, g): (sys::CUdeviceptr, sys::CUdeviceptr),
    (m, v): (sys::CUdeviceptr, sys::CUdeviceptr),
    h: AdamParams,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::AdamStep(dtype))?;
    let threads = if packed { n.div_ceil(optim_pack(dtype)) } else { n };
    let (mut n, mut packed, mut p, mut g, mut m, mut v, mut h) = (n, packed as u32, p, g, m, v, h);
    // SAFETY: matches `adam_step_*(n, packed, p: *mut T, g: *const T, m: *mut S, v: *mut S,
    // h: AdamParams)`; packed accesses need the alignment the caller checked.
    unsafe {
        launch(
            rt,
            f,
            threads,
            &mut [
                arg(&mut n),
                arg(&mut packed),
                arg(&mut p),
                arg(&mut g),
                arg(&mut m),
                arg(&mut v),
                arg(&mut h),
            ],
        )
    }
}

/// `y[i] = x[xo(i) + idx[io(i)] * h.stride]` over `g` into dense `y`; an index
/// outside `[0, h.size)` gives NaN (floats) or 0.
pub fn gather(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    x: (sys::CUdeviceptr, Operand),
    idx: (sys::CUdeviceptr, Operand),
    h: IndexDim,
    y: sys::CUdeviceptr,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::Gather(dtype))?;
    let (mut g, mut h, mut y) = (g, h, y);
    let ((mut x, mut xo), (mut idx, mut io)) = (x, idx);
    // SAFETY: matches `gather_*(g, x: *const T, xo, idx: *const i64, io, h: IndexDim, y: *mut T)`;
    // the kernel only reads `x` at indices inside `[0, h.size)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut x),
                arg(&mut xo),
                arg(&mut idx),
                arg(&mut io),
                arg(&mut h),
                arg(&mut y),
            ],
        )
    }
}

/// `dst[dso(i) + idx[io(i)] * h.stride] += src[so(i)]` over `g`, with atomic adds
/// into `dst` (the accumulator type of the source `dtype`); an index outside
/// `[0, h.size)` is skipped.
pub fn scatter_add(
    rt: &CudaRuntime,
    dtype: DType,
    g: Geometry,
    dst: (sys::CUdeviceptr, Operand),
    idx: (sys::CUdeviceptr, Operand),
    src: (sys::CUdeviceptr, Operand),
    h: IndexDim,
) -> Result<()> {
    let f = rt.kernels.get(Kernel::ScatterAdd(dtype))?;
    let (mut g, mut h) = (g, h);
    let ((mut dst, mut dso), (mut idx, mut io), (mut src, mut so)) = (dst, idx, src);
    // SAFETY: matches `scatter_add_*(g, dst: *mut A, dso, idx: *const i64, io, src: *const T, so,
    // h: IndexDim)`; the kernel only writes `dst` at indices inside `[0, h.size)`.
    unsafe {
        launch(
            rt,
            f,
            g.n,
            &mut [
                arg(&mut g),
                arg(&mut dst),
                arg(&mut dso),
                arg(&mut idx),
                arg(&mut io),
                arg(&mut src),
                arg(&mut so),
                arg(&mut h),
            ],
        )
    }
}
