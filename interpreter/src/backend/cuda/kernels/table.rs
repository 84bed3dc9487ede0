//! The kernels by name: every kernel of the GPU code, named by the same
//! `kernel_name!` macro the kernels are exported under (no string work per
//! launch), the module that exports it, its parameters, and the list of
//! kernels the host expects (the op-table kernels by each row's dtype rule).
//! A kernel a module lacks is a load error naming it; tests check that each
//! embedded module exports exactly its expected set with the expected
//! parameters.

use crate::core::op::{BinaryOp, BinaryRule, CmpOp, ReduceOp, ScanOp, UnaryOp, UnaryRule};
use crate::core::DType;
use kiln_kernels::kernel_name;
use std::collections::HashSet;

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
    /// `reduce_short_<input dtype>`
    ReduceShort(DType),
    /// `reduce_finish_<output dtype>`
    ReduceFinish(DType),
    /// `softmax_<dtype>`
    Softmax(DType),
    /// `layer_norm_<dtype>`
    LayerNorm(DType),
    /// `layer_norm_backward_<dtype>`
    LayerNormBackward(DType),
    /// `dropout_<dtype>`
    Dropout(DType),
    /// `attention_rows_<dtype>`
    AttentionRows(DType),
    /// `attention_rows_backward_<dtype>`
    AttentionRowsBackward(DType),
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
    /// `adam_multi_<param dtype>`: one fused Adam / AdamW step over a list of parameters
    AdamMulti(DType),
    /// `sgd_multi_<param dtype>`: one fused SGD step over a list of parameters
    SgdMulti(DType),
    /// `norm_multi_<dtype>`: per-block sums of squares (or largest magnitudes) over a list of tensors
    NormMulti(DType),
    /// `scale_multi_<dtype>`: a list of tensors scaled in place by a device scalar
    ScaleMulti(DType),
    /// `gather_<dtype>`: reads along a dim through an i64 index (index_select, gather)
    Gather(DType),
    /// `scatter_add_<source dtype>`: atomic adds along a dim through an i64 index
    ScatterAdd(DType),
    /// `scan_totals_<op>_<dtype>`: each chunk's combined value
    ScanTotals(ScanOp, DType),
    /// `scan_carry_<op>_<dtype>`: chunk totals to exclusive prefixes
    ScanCarry(ScanOp, DType),
    /// `scan_apply_<op>_<dtype>`: each chunk's scan from its prefix
    ScanApply(ScanOp, DType),
    /// `sort_keys_<dtype>`: order-preserving keys and positions
    SortKeys(DType),
    /// `sort_local`: bitonic stages in shared memory
    SortLocal,
    /// `sort_global`: one bitonic step across whole rows
    SortGlobal,
    /// `sort_gather_<dtype>`: sorted values and positions
    SortGather(DType),
    /// `sort_search_<dtype>`: binary searches in sorted rows
    SortSearch(DType),
    /// `flash_forward[_dropout]_d<head dim>_<dtype>`: fused attention, output and log-sum-exp
    FlashForward(DType, usize, bool),
    /// `flash_backward_kv[_dropout]_d<head dim>_<dtype>`: its key and value gradients
    FlashBackwardKv(DType, usize, bool),
    /// `flash_backward_q[_dropout]_d<head dim>_<dtype>`: its query gradient
    FlashBackwardQ(DType, usize, bool),
    /// `flash90_forward_d<head dim>_<dtype>`: the forward on Hopper's `wgmma` (sm_90a)
    FlashForwardHopper(DType, usize),
    /// `flash90_backward_kv_d<head dim>_<dtype>`: its key and value gradients there
    FlashBackwardKvHopper(DType, usize),
    /// `flash90_backward_q_d<head dim>_<dtype>`: its query gradient there
    FlashBackwardQHopper(DType, usize),
    /// `flash90_backward_kvq_d<head dim>_<dtype>`: the key and value
    /// gradients there, adding the query gradient up in f32 as it goes
    FlashBackwardKvqHopper(DType, usize),
    /// `flash_delta_d<head dim>_<dtype>`: the backward's `rowsum(dout · o)`
    FlashDelta(DType, usize),
}

/// The name of a fused attention kernel (`family` 0 forward, 1 key/value
/// gradients, 2 query gradient; with dropout or not); dtypes other than
/// f16, f32 and bf16, and head dims other than `FlashParams::HEAD_DIMS`,
/// name bf16 / d128 kernels (never launched: the front end checks first).
fn flash_name(d: DType, head_dim: usize, family: u8, dropout: bool) -> &'static str {
    macro_rules! by_dim {
        ($family:ident) => {
            match (d, head_dim) {
                (DType::F16, 32) => kernel_name!($family, d32, f16),
                (DType::F16, 64) => kernel_name!($family, d64, f16),
                (DType::F16, 96) => kernel_name!($family, d96, f16),
                (DType::F16, _) => kernel_name!($family, d128, f16),
                (DType::F32, 32) => kernel_name!($family, d32, f32),
                (DType::F32, 64) => kernel_name!($family, d64, f32),
                (DType::F32, 96) => kernel_name!($family, d96, f32),
                (DType::F32, _) => kernel_name!($family, d128, f32),
                (_, 32) => kernel_name!($family, d32, bf16),
                (_, 64) => kernel_name!($family, d64, bf16),
                (_, 96) => kernel_name!($family, d96, bf16),
                _ => kernel_name!($family, d128, bf16),
            }
        };
    }
    match (family, dropout) {
        (0, false) => by_dim!(flash_forward),
        (1, false) => by_dim!(flash_backward_kv),
        (_, false) => by_dim!(flash_backward_q),
        (0, true) => by_dim!(flash_forward_dropout),
        (1, true) => by_dim!(flash_backward_kv_dropout),
        (_, true) => by_dim!(flash_backward_q_dropout),
    }
}

/// The name of a Hopper attention kernel (`family` 0 the forward, 1 the
/// key/value backward, 2 the query backward, 3 the key/value backward that
/// adds up the query gradient too; head dims 64 and 128).
fn hopper_name(d: DType, head_dim: usize, family: u8) -> &'static str {
    macro_rules! by_dim {
        ($family:ident) => {
            match (d, head_dim) {
                (DType::F16, 64) => kernel_name!($family, d64, f16),
                (DType::F16, _) => kernel_name!($family, d128, f16),
                (_, 64) => kernel_name!($family, d64, bf16),
                _ => kernel_name!($family, d128, bf16),
            }
        };
    }
    match family {
        0 => by_dim!(flash90_forward),
        1 => by_dim!(flash90_backward_kv),
        2 => by_dim!(flash90_backward_q),
        _ => by_dim!(flash90_backward_kvq),
    }
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

    const ALL: [DenseReduce; 4] = [
        DenseReduce::Sum,
        DenseReduce::Mean,
        DenseReduce::Max,
        DenseReduce::Min,
    ];
}

/// `kernel_name!(family, <dtype>)` for a runtime dtype.
macro_rules! by_dtype {
    ($d:expr, $($part:ident),+) => {
        match $d {
            DType::F32 => kernel_name!($($part),+, f32),
            DType::F64 => kernel_name!($($part),+, f64),
            DType::F16 => kernel_name!($($part),+, f16),
            DType::BF16 => kernel_name!($($part),+, bf16),
            DType::I64 => kernel_name!($($part),+, i64),
            DType::I32 => kernel_name!($($part),+, i32),
            DType::U8 => kernel_name!($($part),+, u8),
            DType::Bool => kernel_name!($($part),+, bool),
        }
    };
}

/// `kernel_name!(family, <src>, <dst>)` for two runtime dtypes.
macro_rules! by_dtype_pair {
    ($s:expr, $d:expr, $family:ident) => {
        match $s {
            DType::F32 => by_dtype!($d, $family, f32),
            DType::F64 => by_dtype!($d, $family, f64),
            DType::F16 => by_dtype!($d, $family, f16),
            DType::BF16 => by_dtype!($d, $family, bf16),
            DType::I64 => by_dtype!($d, $family, i64),
            DType::I32 => by_dtype!($d, $family, i32),
            DType::U8 => by_dtype!($d, $family, u8),
            DType::Bool => by_dtype!($d, $family, bool),
        }
    };
}

/// The names of the op-table kernels, one arm per row.
macro_rules! unary_names {
    ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
        fn unary_name(op: UnaryOp, d: DType, dense: bool) -> &'static str {
            match (op, dense) {
                $(
                    (UnaryOp::$v, false) => by_dtype!(d, unary, $n),
                    (UnaryOp::$v, true) => by_dtype!(d, unary_v, $n),
                )*
            }
        }
    };
}
kiln_kernels::unary_ops!(unary_names);

/// The variants of a binary kernel.
#[derive(Clone, Copy)]
enum BinaryForm {
    Strided,
    Scalar,
    Dense,
    DenseScalar,
    Row,
}

macro_rules! binary_names {
    ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
        fn binary_name(op: BinaryOp, d: DType, form: BinaryForm) -> &'static str {
            match (op, form) {
                $(
                    (BinaryOp::$v, BinaryForm::Strided) => by_dtype!(d, binary, $n),
                    (BinaryOp::$v, BinaryForm::Scalar) => by_dtype!(d, binary_scalar, $n),
                    (BinaryOp::$v, BinaryForm::Dense) => by_dtype!(d, binary_v, $n),
                    (BinaryOp::$v, BinaryForm::DenseScalar) => by_dtype!(d, binary_scalar_v, $n),
                    (BinaryOp::$v, BinaryForm::Row) => by_dtype!(d, binary_row, $n),
                )*
            }
        }
    };
}
kiln_kernels::binary_ops!(binary_names);

macro_rules! cmp_names {
    ($($v:ident $n:ident $doc:literal $op:tt;)*) => {
        fn cmp_name(op: CmpOp, d: DType, scalar: bool) -> &'static str {
            match (op, scalar) {
                $(
                    (CmpOp::$v, false) => by_dtype!(d, cmp, $n),
                    (CmpOp::$v, true) => by_dtype!(d, cmp_scalar, $n),
                )*
            }
        }
    };
}
kiln_kernels::cmp_ops!(cmp_names);

fn dense_reduce_name(op: DenseReduce, d: DType, family: u8) -> &'static str {
    macro_rules! by_op {
        ($($family:ident)_+) => {
            match op {
                DenseReduce::Sum => by_dtype!(d, $($family),+, sum),
                DenseReduce::Mean => by_dtype!(d, $($family),+, mean),
                DenseReduce::Max => by_dtype!(d, $($family),+, max),
                DenseReduce::Min => by_dtype!(d, $($family),+, min),
            }
        };
    }
    match family {
        0 => by_op!(reduce_lanes),
        1 => by_op!(reduce_lanes_finish),
        2 => by_op!(reduce_cols),
        _ => by_op!(reduce_cols_finish),
    }
}

fn scan_name(op: ScanOp, d: DType, family: u8) -> &'static str {
    macro_rules! by_op {
        ($family:ident) => {
            match op {
                ScanOp::Cumsum => by_dtype!(d, $family, cumsum),
                ScanOp::Cumprod => by_dtype!(d, $family, cumprod),
                ScanOp::Cummax => by_dtype!(d, $family, cummax),
                ScanOp::Cummin => by_dtype!(d, $family, cummin),
                ScanOp::Logcumsumexp => by_dtype!(d, $family, logcumsumexp),
            }
        };
    }
    match family {
        0 => by_op!(scan_totals),
        1 => by_op!(scan_carry),
        _ => by_op!(scan_apply),
    }
}

impl Kernel {
    /// The exported PTX name (from `kernel_name!`, the macro the kernels
    /// export themselves under).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Unary(op, d) => unary_name(op, d, false),
            Kernel::UnaryV(op, d) => unary_name(op, d, true),
            Kernel::Binary(op, d) => binary_name(op, d, BinaryForm::Strided),
            Kernel::BinaryScalar(op, d) => binary_name(op, d, BinaryForm::Scalar),
            Kernel::BinaryV(op, d) => binary_name(op, d, BinaryForm::Dense),
            Kernel::BinaryScalarV(op, d) => binary_name(op, d, BinaryForm::DenseScalar),
            Kernel::BinaryRow(op, d) => binary_name(op, d, BinaryForm::Row),
            Kernel::Cmp(op, d) => cmp_name(op, d, false),
            Kernel::CmpScalar(op, d) => cmp_name(op, d, true),
            Kernel::Where(d) => by_dtype!(d, where),
            Kernel::Cast(s, d) => by_dtype_pair!(s, d, cast),
            Kernel::CastV(s, d) => by_dtype_pair!(s, d, cast_v),
            Kernel::Fill(d) => by_dtype!(d, fill),
            Kernel::Arange(d) => by_dtype!(d, arange),
            Kernel::RandUniform(d) => by_dtype!(d, rand_uniform),
            Kernel::RandNormal(d) => by_dtype!(d, rand_normal),
            Kernel::RandInt(d) => by_dtype!(d, rand_int),
            Kernel::ReducePartial(d) => by_dtype!(d, reduce_partial),
            Kernel::ReduceShort(d) => by_dtype!(d, reduce_short),
            Kernel::ReduceFinish(d) => by_dtype!(d, reduce_finish),
            Kernel::Softmax(d) => by_dtype!(d, softmax),
            Kernel::LayerNorm(d) => by_dtype!(d, layer_norm),
            Kernel::LayerNormBackward(d) => by_dtype!(d, layer_norm_backward),
            Kernel::Dropout(d) => by_dtype!(d, dropout),
            Kernel::AttentionRows(d) => by_dtype!(d, attention_rows),
            Kernel::AttentionRowsBackward(d) => by_dtype!(d, attention_rows_backward),
            Kernel::MatmulInt(d) => by_dtype!(d, matmul_int),
            Kernel::ReduceLanes(op, d) => dense_reduce_name(op, d, 0),
            Kernel::ReduceLanesFinish(op, d) => dense_reduce_name(op, d, 1),
            Kernel::ReduceCols(op, d) => dense_reduce_name(op, d, 2),
            Kernel::ReduceColsFinish(op, d) => dense_reduce_name(op, d, 3),
            Kernel::SoftmaxRows(d) => by_dtype!(d, softmax_rows),
            Kernel::Transpose(1) => kernel_name!(transpose, b1),
            Kernel::Transpose(2) => kernel_name!(transpose, b2),
            Kernel::Transpose(4) => kernel_name!(transpose, b4),
            Kernel::Transpose(_) => kernel_name!(transpose, b8),
            Kernel::CrossEntropy(d) => by_dtype!(d, cross_entropy),
            Kernel::CrossEntropyBackward(d) => by_dtype!(d, cross_entropy_backward),
            Kernel::SgdStep(d) => by_dtype!(d, sgd_step),
            Kernel::AdamStep(d) => by_dtype!(d, adam_step),
            Kernel::AdamMulti(d) => by_dtype!(d, adam_multi),
            Kernel::SgdMulti(d) => by_dtype!(d, sgd_multi),
            Kernel::NormMulti(d) => by_dtype!(d, norm_multi),
            Kernel::ScaleMulti(d) => by_dtype!(d, scale_multi),
            Kernel::Gather(d) => by_dtype!(d, gather),
            Kernel::ScatterAdd(d) => by_dtype!(d, scatter_add),
            Kernel::ScanTotals(op, d) => scan_name(op, d, 0),
            Kernel::ScanCarry(op, d) => scan_name(op, d, 1),
            Kernel::ScanApply(op, d) => scan_name(op, d, 2),
            Kernel::SortKeys(d) => by_dtype!(d, sort_keys),
            Kernel::SortLocal => "sort_local",
            Kernel::SortGlobal => "sort_global",
            Kernel::SortGather(d) => by_dtype!(d, sort_gather),
            Kernel::SortSearch(d) => by_dtype!(d, sort_search),
            Kernel::FlashForward(d, e, drop) => flash_name(d, e, 0, drop),
            Kernel::FlashBackwardKv(d, e, drop) => flash_name(d, e, 1, drop),
            Kernel::FlashBackwardQ(d, e, drop) => flash_name(d, e, 2, drop),
            Kernel::FlashDelta(d, e) => match (d, e) {
                (DType::F16, 32) => kernel_name!(flash_delta, d32, f16),
                (DType::F16, 64) => kernel_name!(flash_delta, d64, f16),
                (DType::F16, 96) => kernel_name!(flash_delta, d96, f16),
                (DType::F16, _) => kernel_name!(flash_delta, d128, f16),
                (DType::F32, 32) => kernel_name!(flash_delta, d32, f32),
                (DType::F32, 64) => kernel_name!(flash_delta, d64, f32),
                (DType::F32, 96) => kernel_name!(flash_delta, d96, f32),
                (DType::F32, _) => kernel_name!(flash_delta, d128, f32),
                (_, 32) => kernel_name!(flash_delta, d32, bf16),
                (_, 64) => kernel_name!(flash_delta, d64, bf16),
                (_, 96) => kernel_name!(flash_delta, d96, bf16),
                _ => kernel_name!(flash_delta, d128, bf16),
            },
            Kernel::FlashForwardHopper(d, e) => hopper_name(d, e, 0),
            Kernel::FlashBackwardKvHopper(d, e) => hopper_name(d, e, 1),
            Kernel::FlashBackwardQHopper(d, e) => hopper_name(d, e, 2),
            Kernel::FlashBackwardKvqHopper(d, e) => hopper_name(d, e, 3),
        }
    }

    /// The sizes of the kernel's PTX parameters: 8 bytes for each of its
    /// family's device pointers, then its argument block (the family's struct
    /// in `kiln_kernels::args`).
    pub fn params(self) -> Vec<usize> {
        use kiln_kernels::args::*;
        fn size_of<A: ArgBlock>() -> Vec<usize> {
            let mut sizes = vec![8; A::POINTERS.len()];
            sizes.push(std::mem::size_of::<A>());
            sizes
        }
        match self {
            Kernel::Unary(..) => size_of::<UnaryArgs>(),
            Kernel::Binary(..) | Kernel::Cmp(..) => size_of::<BinaryArgs>(),
            Kernel::BinaryScalar(..) | Kernel::CmpScalar(..) => size_of::<ScalarArgs>(),
            Kernel::Where(_) => size_of::<WhereArgs>(),
            Kernel::Cast(..) => size_of::<CastArgs>(),
            Kernel::CastV(..) | Kernel::UnaryV(..) => size_of::<DenseArgs>(),
            Kernel::BinaryV(..) => size_of::<DenseBinaryArgs>(),
            Kernel::BinaryScalarV(..) => size_of::<DenseScalarArgs>(),
            Kernel::BinaryRow(..) => size_of::<RowArgs>(),
            Kernel::Fill(_) => size_of::<FillArgs>(),
            Kernel::Arange(_) => size_of::<ArangeArgs>(),
            Kernel::RandUniform(_) | Kernel::RandNormal(_) => size_of::<RandArgs>(),
            Kernel::RandInt(_) => size_of::<RandIntArgs>(),
            Kernel::ReducePartial(_) => size_of::<ReducePartialArgs>(),
            Kernel::ReduceShort(_) => size_of::<ReduceShortArgs>(),
            Kernel::ReduceFinish(_) => size_of::<ReduceFinishArgs>(),
            Kernel::Softmax(_) => size_of::<SoftmaxArgs>(),
            Kernel::LayerNorm(_) => size_of::<LayerNormArgs>(),
            Kernel::LayerNormBackward(_) => size_of::<LayerNormBackwardArgs>(),
            Kernel::Dropout(_) => size_of::<DropoutArgs>(),
            Kernel::AttentionRows(_) => size_of::<AttentionRowsArgs>(),
            Kernel::AttentionRowsBackward(_) => size_of::<AttentionRowsBackwardArgs>(),
            Kernel::MatmulInt(_) => size_of::<MatmulIntArgs>(),
            Kernel::ReduceLanes(..) => size_of::<LanesArgs>(),
            Kernel::ReduceLanesFinish(..) => size_of::<LanesFinishArgs>(),
            Kernel::ReduceCols(..) => size_of::<ColsArgs>(),
            Kernel::ReduceColsFinish(..) => size_of::<ColsFinishArgs>(),
            Kernel::SoftmaxRows(_) => size_of::<SoftmaxRowsArgs>(),
            Kernel::Transpose(_) => size_of::<TransposeArgs>(),
            Kernel::CrossEntropy(_) => size_of::<CrossEntropyArgs>(),
            Kernel::CrossEntropyBackward(_) => size_of::<CrossEntropyBackwardArgs>(),
            Kernel::SgdStep(_) => size_of::<SgdArgs>(),
            Kernel::AdamStep(_) => size_of::<AdamArgs>(),
            Kernel::AdamMulti(_) => size_of::<AdamMultiArgs>(),
            Kernel::SgdMulti(_) => size_of::<SgdMultiArgs>(),
            Kernel::NormMulti(_) => size_of::<NormMultiArgs>(),
            Kernel::ScaleMulti(_) => size_of::<ScaleMultiArgs>(),
            Kernel::Gather(_) => size_of::<GatherArgs>(),
            Kernel::ScatterAdd(_) => size_of::<ScatterAddArgs>(),
            Kernel::ScanTotals(..) => size_of::<ScanTotalsArgs>(),
            Kernel::ScanCarry(..) => size_of::<ScanCarryArgs>(),
            Kernel::ScanApply(..) => size_of::<ScanApplyArgs>(),
            Kernel::SortKeys(_) => size_of::<SortKeysArgs>(),
            Kernel::SortLocal => size_of::<SortLocalArgs>(),
            Kernel::SortGlobal => size_of::<SortGlobalArgs>(),
            Kernel::SortGather(_) => size_of::<SortGatherArgs>(),
            Kernel::SortSearch(_) => size_of::<SortSearchArgs>(),
            Kernel::FlashForward(..) | Kernel::FlashForwardHopper(..) => size_of::<FlashForwardArgs>(),
            Kernel::FlashDelta(..) => size_of::<FlashDeltaArgs>(),
            Kernel::FlashBackwardKv(..) | Kernel::FlashBackwardKvHopper(..) => {
                size_of::<FlashBackwardKvArgs>()
            }
            Kernel::FlashBackwardQ(..) | Kernel::FlashBackwardQHopper(..) => size_of::<FlashBackwardQArgs>(),
            Kernel::FlashBackwardKvqHopper(..) => size_of::<FlashBackwardKvqArgs>(),
        }
    }

    /// The module that exports the kernel (an index into
    /// `kiln_kernels::modules::MODULES`, which `build.rs` splits the PTX by;
    /// a test checks the two agree).
    pub fn module(self) -> usize {
        match self {
            Kernel::Unary(..) => 0,
            Kernel::UnaryV(..) => 1,
            Kernel::Binary(..) | Kernel::BinaryScalar(..) | Kernel::Cmp(..) | Kernel::CmpScalar(..) => 2,
            Kernel::Where(_) => 2,
            Kernel::BinaryV(..) | Kernel::BinaryScalarV(..) | Kernel::BinaryRow(..) => 3,
            Kernel::Cast(..) | Kernel::CastV(..) | Kernel::Fill(_) | Kernel::Arange(_) => 4,
            Kernel::RandUniform(_) | Kernel::RandNormal(_) | Kernel::RandInt(_) | Kernel::Dropout(_) => 5,
            Kernel::ReducePartial(_)
            | Kernel::ReduceShort(_)
            | Kernel::ReduceFinish(_)
            | Kernel::ReduceLanes(..)
            | Kernel::ReduceLanesFinish(..)
            | Kernel::ReduceCols(..)
            | Kernel::ReduceColsFinish(..) => 6,
            Kernel::Softmax(_) | Kernel::SoftmaxRows(_) | Kernel::LayerNorm(_) => 7,
            Kernel::LayerNormBackward(_) | Kernel::AttentionRows(_) | Kernel::AttentionRowsBackward(_) => 7,
            Kernel::Transpose(_) => 8,
            Kernel::CrossEntropy(_) | Kernel::CrossEntropyBackward(_) => 9,
            Kernel::SgdStep(_)
            | Kernel::AdamStep(_)
            | Kernel::AdamMulti(_)
            | Kernel::SgdMulti(_)
            | Kernel::NormMulti(_)
            | Kernel::ScaleMulti(_) => 10,
            Kernel::Gather(_) | Kernel::ScatterAdd(_) | Kernel::MatmulInt(_) => 11,
            Kernel::ScanTotals(..)
            | Kernel::ScanCarry(..)
            | Kernel::ScanApply(..)
            | Kernel::SortKeys(_)
            | Kernel::SortLocal
            | Kernel::SortGlobal
            | Kernel::SortGather(_)
            | Kernel::SortSearch(_) => 12,
            Kernel::FlashForward(..)
            | Kernel::FlashBackwardKv(..)
            | Kernel::FlashBackwardQ(..)
            | Kernel::FlashDelta(..) => 13,
            Kernel::FlashForwardHopper(..)
            | Kernel::FlashBackwardKvHopper(..)
            | Kernel::FlashBackwardQHopper(..)
            | Kernel::FlashBackwardKvqHopper(..) => kiln_kernels::modules::HOPPER_MODULE,
        }
    }

    /// Every kernel the module must export: the op-table kernels by each
    /// row's dtype rule, the other families for the dtypes they are built for.
    pub fn expected() -> Vec<Kernel> {
        let mut v = vec![];
        for d in DType::ALL {
            let (float, int) = (d.is_float(), d.is_int());
            for &op in UnaryOp::ALL {
                let strided = match op.rule() {
                    UnaryRule::Float => float,
                    UnaryRule::Keep => d != DType::Bool,
                    UnaryRule::Logical => true,
                };
                if strided {
                    v.push(Kernel::Unary(op, d));
                }
                if float && op.rule() != UnaryRule::Logical {
                    v.push(Kernel::UnaryV(op, d));
                }
            }
            for &op in BinaryOp::ALL {
                if op.accepts(d) {
                    v.extend([Kernel::Binary(op, d), Kernel::BinaryScalar(op, d)]);
                }
                if float && op.rule() != BinaryRule::Bitwise {
                    v.extend([
                        Kernel::BinaryV(op, d),
                        Kernel::BinaryScalarV(op, d),
                        Kernel::BinaryRow(op, d),
                    ]);
                }
            }
            for &op in CmpOp::ALL {
                v.extend([Kernel::Cmp(op, d), Kernel::CmpScalar(op, d)]);
            }
            for s in DType::ALL {
                v.extend([Kernel::Cast(s, d), Kernel::CastV(s, d)]);
            }
            v.extend([
                Kernel::Where(d),
                Kernel::Fill(d),
                Kernel::Arange(d),
                Kernel::RandInt(d),
                Kernel::ReducePartial(d),
                Kernel::ReduceShort(d),
                Kernel::ReduceFinish(d),
                Kernel::Gather(d),
            ]);
            if d != DType::Bool {
                v.push(Kernel::ScatterAdd(d));
            }
            v.extend([Kernel::SortKeys(d), Kernel::SortGather(d), Kernel::SortSearch(d)]);
            for op in ScanOp::ALL {
                if op.computes_in(d) {
                    v.extend([
                        Kernel::ScanTotals(op, d),
                        Kernel::ScanCarry(op, d),
                        Kernel::ScanApply(op, d),
                    ]);
                }
            }
            if int {
                v.push(Kernel::MatmulInt(d));
            }
            if float {
                for op in DenseReduce::ALL {
                    v.extend([
                        Kernel::ReduceLanes(op, d),
                        Kernel::ReduceLanesFinish(op, d),
                        Kernel::ReduceCols(op, d),
                        Kernel::ReduceColsFinish(op, d),
                    ]);
                }
                v.extend([
                    Kernel::RandUniform(d),
                    Kernel::RandNormal(d),
                    Kernel::Softmax(d),
                    Kernel::SoftmaxRows(d),
                    Kernel::LayerNorm(d),
                    Kernel::LayerNormBackward(d),
                    Kernel::Dropout(d),
                    Kernel::AttentionRows(d),
                    Kernel::AttentionRowsBackward(d),
                    Kernel::CrossEntropy(d),
                    Kernel::CrossEntropyBackward(d),
                    Kernel::SgdStep(d),
                    Kernel::AdamStep(d),
                    Kernel::AdamMulti(d),
                    Kernel::SgdMulti(d),
                    Kernel::NormMulti(d),
                    Kernel::ScaleMulti(d),
                ]);
            }
        }
        v.extend([1, 2, 4, 8].map(Kernel::Transpose));
        v.extend([Kernel::SortLocal, Kernel::SortGlobal]);
        for d in [DType::F16, DType::BF16, DType::F32] {
            for e in kiln_kernels::params::FlashParams::HEAD_DIMS {
                for drop in [false, true] {
                    v.extend([
                        Kernel::FlashForward(d, e, drop),
                        Kernel::FlashBackwardKv(d, e, drop),
                        Kernel::FlashBackwardQ(d, e, drop),
                    ]);
                }
                v.push(Kernel::FlashDelta(d, e));
            }
        }
        for d in [DType::F16, DType::BF16] {
            for e in kiln_kernels::params::FlashParams::HOPPER_HEAD_DIMS {
                v.extend([
                    Kernel::FlashForwardHopper(d, e),
                    Kernel::FlashBackwardKvHopper(d, e),
                    Kernel::FlashBackwardQHopper(d, e),
                    Kernel::FlashBackwardKvqHopper(d, e),
                ]);
            }
        }
        v
    }
}

/// The names of the kernels a PTX module exports.
pub(crate) fn ptx_entries(ptx: &str) -> HashSet<&str> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .filter_map(|l| l.split('(').next())
        .map(str::trim)
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Each embedded PTX module exports exactly the kernels the host
    /// expects of it: none missing (a launch would fail), none unknown (a
    /// kernel nobody can launch), none in another module than
    /// [`Kernel::module`] says (it would never be found). Skipped when this
    /// build has no PTX (no nightly toolchain).
    #[test]
    fn each_module_exports_exactly_its_expected_kernels() {
        use crate::backend::cuda::images;
        if !images::built() {
            eprintln!("no PTX in this build; skipped");
            return;
        }
        for (m, image) in images::MODULES.iter().enumerate() {
            let exported = ptx_entries(image.ptx);
            let expected: HashSet<&str> = Kernel::expected()
                .into_iter()
                .filter(|k| k.module() == m)
                .map(|k| k.name())
                .collect();
            let missing: Vec<_> = expected.difference(&exported).collect();
            let unknown: Vec<_> = exported.difference(&expected).collect();
            assert!(
                missing.is_empty(),
                "kernels module {} lacks: {missing:?}",
                image.name
            );
            assert!(
                unknown.is_empty(),
                "kernels of module {} the host does not expect there: {unknown:?}",
                image.name
            );
        }
    }

    /// The host's module of each kernel is the one `build.rs` puts it in.
    #[test]
    fn the_host_and_the_build_agree_on_modules() {
        for k in Kernel::expected() {
            assert_eq!(
                Some(k.module()),
                kiln_kernels::modules::module_of(k.name()),
                "{}",
                k.name()
            );
        }
    }

    /// The sizes of the parameters of every PTX entry, by name.
    fn ptx_params(ptx: &str) -> HashMap<&str, Vec<usize>> {
        let mut out = HashMap::new();
        let mut rest = ptx;
        while let Some(i) = rest.find(".visible .entry ") {
            rest = &rest[i + ".visible .entry ".len()..];
            let name = rest.split('(').next().unwrap_or("").trim();
            let close = rest.find(')').unwrap_or(0);
            let sizes = rest[..close]
                .lines()
                .filter_map(|l| l.trim().strip_prefix(".param"))
                .map(|l| {
                    // `.align A .b8 NAME[SIZE]` or `.u32 NAME` (4 bytes) / `.u64 NAME`
                    match (l.find('['), l.find(']')) {
                        (Some(a), Some(b)) => l[a + 1..b].parse().unwrap_or(0),
                        _ if l.contains(".u64") || l.contains(".b64") || l.contains(".f64") => 8,
                        _ => 4,
                    }
                })
                .collect();
            out.insert(name, sizes);
        }
        out
    }

    /// Every kernel takes exactly its family's pointers and argument block:
    /// a host/kernel disagreement cannot go unnoticed.
    #[test]
    fn every_kernel_takes_its_familys_argument_block() {
        use crate::backend::cuda::images;
        if !images::built() {
            eprintln!("no PTX in this build; skipped");
            return;
        }
        let params: HashMap<&str, Vec<usize>> =
            images::MODULES.iter().flat_map(|m| ptx_params(m.ptx)).collect();
        let mut wrong = vec![];
        for k in Kernel::expected() {
            let got = params.get(k.name()).cloned().unwrap_or_default();
            if got != k.params() {
                wrong.push(format!("{}: {got:?}, expected {:?}", k.name(), k.params()));
            }
        }
        assert!(
            wrong.is_empty(),
            "{} kernels disagree:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn names_follow_the_table() {
        assert_eq!(Kernel::Unary(UnaryOp::Exp, DType::F32).name(), "unary_exp_f32");
        assert_eq!(
            Kernel::UnaryV(UnaryOp::Gelu, DType::BF16).name(),
            "unary_v_gelu_bf16"
        );
        assert_eq!(
            Kernel::BinaryScalar(BinaryOp::Rem, DType::I64).name(),
            "binary_scalar_remainder_i64"
        );
        assert_eq!(Kernel::Cast(DType::U8, DType::F16).name(), "cast_u8_f16");
        assert_eq!(
            Kernel::ReduceColsFinish(DenseReduce::Mean, DType::F64).name(),
            "reduce_cols_finish_mean_f64"
        );
        assert_eq!(Kernel::Transpose(4).name(), "transpose_b4");
        assert_eq!(
            Kernel::FlashBackwardKv(DType::F16, 64, false).name(),
            "flash_backward_kv_d64_f16"
        );
        assert_eq!(
            Kernel::FlashForward(DType::BF16, 96, true).name(),
            "flash_forward_dropout_d96_bf16"
        );
        assert_eq!(
            Kernel::FlashBackwardQ(DType::F32, 64, true).name(),
            "flash_backward_q_dropout_d64_f32"
        );
        assert_eq!(Kernel::FlashDelta(DType::F32, 32).name(), "flash_delta_d32_f32");
        assert_eq!(
            Kernel::FlashBackwardQHopper(DType::BF16, 128).name(),
            "flash90_backward_q_d128_bf16"
        );
        assert_eq!(
            Kernel::FlashBackwardKvqHopper(DType::F16, 64).name(),
            "flash90_backward_kvq_d64_f16"
        );
        let all = Kernel::expected();
        let names: HashSet<&str> = all.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), all.len(), "two kernels share a name");
    }
}
