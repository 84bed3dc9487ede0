//! The argument blocks of the kernels: one `#[repr(C)]` struct per kernel
//! family, defined once here and compiled into both sides. Every kernel
//! takes its family's struct as its single parameter (passed by value: one
//! `.param` block of the struct's size), and the host fills the same struct
//! and launches it through one generic launch. A field's place and type
//! therefore cannot differ between host and device; the host also checks
//! that the PTX entry of every kernel takes exactly one block of its
//! family's size.
//!
//! Device pointers travel as [`DevPtr`] (a 64-bit address); the kernel reads
//! them as pointers of its element type. Scalars whose type depends on the
//! dtype travel as their bits in the low bytes of a `u64` ([`Bits`]).

use crate::params::{AdamParams, CrossEntropyParams, Geometry, IndexDim, MatmulShape, Operand, SgdParams};

/// A device address (a `CUdeviceptr`).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevPtr(pub u64);

impl DevPtr {
    /// The address as a pointer to `T`.
    #[inline(always)]
    pub fn get<T>(self) -> *const T {
        self.0 as usize as *const T
    }

    /// The address as a mutable pointer to `T`.
    #[inline(always)]
    pub fn get_mut<T>(self) -> *mut T {
        self.0 as usize as *mut T
    }
}

/// A scalar of the kernel's element type, as its bits in the low bytes of a
/// `u64` (little-endian on both sides).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bits(pub u64);

impl Bits {
    /// The value as a `T` of at most 8 bytes.
    #[inline(always)]
    pub fn get<T: Copy>(self) -> T {
        // SAFETY: every kernel element type has at most 8 bytes and no
        // invalid bit patterns among those the host writes (bools as 0/1);
        // the low bytes of a little-endian u64 come first.
        unsafe { core::ptr::read_unaligned(&self.0 as *const u64 as *const T) }
    }
}

/// Declares the argument structs: `Name { field: Type, ... }` with a doc.
macro_rules! args {
    ($($(#[doc = $doc:literal])* $name:ident { $($(#[doc = $fdoc:literal])* $field:ident: $ty:ty),* $(,)? })*) => {
        $(
            $(#[doc = $doc])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq)]
            pub struct $name {
                $( $(#[doc = $fdoc])* pub $field: $ty, )*
            }
        )*
    };
}

args! {
    /// `unary_*` (and `unary_logical_not_*`): `y[i] = op(x[i])`, y dense.
    UnaryArgs { g: Geometry, x: DevPtr, xo: Operand, y: DevPtr }
    /// `binary_*` and `cmp_*`: `y[i] = a[i] op b[i]`, y dense.
    BinaryArgs { g: Geometry, a: DevPtr, ao: Operand, b: DevPtr, bo: Operand, y: DevPtr }
    /// `binary_scalar_*` and `cmp_scalar_*`: `y[i] = a[i] op s` (`s op a[i]` when `rev` is 1).
    ScalarArgs { g: Geometry, a: DevPtr, ao: Operand, s: Bits, rev: u32, y: DevPtr }
    /// `where_*`: `y[i] = c[i] ? a[i] : b[i]`, y dense.
    WhereArgs { g: Geometry, c: DevPtr, co: Operand, a: DevPtr, ao: Operand, b: DevPtr, bo: Operand, y: DevPtr }
    /// `cast_*`: `y[yo(i)] = x[xo(i)]` converted (strided on both sides).
    CastArgs { g: Geometry, x: DevPtr, xo: Operand, y: DevPtr, yo: Operand }
    /// `unary_v_*` and `cast_v_*`: dense `y[i] = f(x[i])` over `n` elements, 16-byte accesses.
    DenseArgs { n: u32, x: DevPtr, y: DevPtr }
    /// `binary_v_*`: dense `y[i] = a[i] op b[i]` over `n` elements.
    DenseBinaryArgs { n: u32, a: DevPtr, b: DevPtr, y: DevPtr }
    /// `binary_scalar_v_*`: dense `y[i] = a[i] op s` (`s op a[i]` when `rev` is 1).
    DenseScalarArgs { n: u32, a: DevPtr, s: Bits, rev: u32, y: DevPtr }
    /// `binary_row_*`: a dense operand and a dense row of `row_packs` packs
    /// repeated over the rows (`row_side` 1: `b` is the row, 0: `a` is).
    RowArgs { packs: u32, row_packs: u32, row_side: u32, a: DevPtr, b: DevPtr, y: DevPtr }
    /// `fill_*`: `y[i] = value` for `n` elements.
    FillArgs { n: u32, y: DevPtr, value: Bits }
    /// `arange_*`: `y[i] = start + i * step` (floats) or `istart + i * istep` (integers).
    ArangeArgs { n: u32, y: DevPtr, start: f64, step: f64, istart: i64, istep: i64 }
    /// `rand_uniform_*` and `rand_normal_*`: Philox numbers of `seed` and `stream`.
    RandArgs { n: u32, y: DevPtr, seed: u64, stream: u64 }
    /// `rand_int_*`: integers in `low .. low + range`.
    RandIntArgs { n: u32, y: DevPtr, seed: u64, stream: u64, low: i64, range: u64 }
    /// `gather_*`: reads `x` along one dim through the i64 index `idx`.
    GatherArgs { g: Geometry, x: DevPtr, xo: Operand, idx: DevPtr, io: Operand, h: IndexDim, y: DevPtr }
    /// `scatter_add_*`: atomically adds `src` into `dst` along one dim through `idx`.
    ScatterAddArgs { g: Geometry, dst: DevPtr, dso: Operand, idx: DevPtr, io: Operand, src: DevPtr, so: Operand, h: IndexDim }
    /// `matmul_int_*`: a batched integer matmul.
    MatmulIntArgs { g: Geometry, ao: Operand, bo: Operand, dims: MatmulShape, a: DevPtr, b: DevPtr, y: DevPtr }
    /// `reduce_partial_*`: pass 1 of the generic reduction, one partial state per (output, chunk).
    ReducePartialArgs {
        outer: Geometry, xo: Operand, inner: Geometry, io: Operand, x: DevPtr,
        chunks: u32, chunk_len: u32, op: u32, partial: DevPtr,
    }
    /// `reduce_finish_*`: pass 2, the chunks' states merged into each output.
    ReduceFinishArgs { outputs: u32, chunks: u32, op: u32, float: u32, correction: u32, partial: DevPtr, y: DevPtr }
    /// `reduce_lanes_*`: dense rows reduced by blocks (`packed` 1: 16-byte accesses).
    LanesArgs { rows: u32, len: u32, chunks: u32, chunk_len: u32, packed: u32, x: DevPtr, partial: DevPtr, y: DevPtr }
    /// `reduce_lanes_finish_*`: the chunks of each row merged.
    LanesFinishArgs { outputs: u32, chunks: u32, count: u32, partial: DevPtr, y: DevPtr }
    /// `reduce_cols_*`: a dense middle axis of `r` reduced across columns.
    ColsArgs { outer: u32, r: u32, inner: u32, chunks: u32, chunk_len: u32, x: DevPtr, partial: DevPtr, y: DevPtr }
    /// `reduce_cols_finish_*`: the chunks of each column merged.
    ColsFinishArgs { outer: u32, inner: u32, chunks: u32, count: u32, partial: DevPtr, y: DevPtr }
    /// `softmax_*`: softmax (`log` 1: log-softmax) along a strided dim.
    SoftmaxArgs { rows: Geometry, ro: Operand, x: DevPtr, len: u32, step: u32, log: u32, y: DevPtr }
    /// `softmax_rows_*`: softmax over dense rows, a warp (`per_warp` 1) or a block per row.
    SoftmaxRowsArgs { rows: u32, len: u32, per_warp: u32, log: u32, x: DevPtr, y: DevPtr }
    /// `layer_norm_*`: layer norm over dense rows of `norm` elements.
    LayerNormArgs { rows: u32, norm: u32, per_warp: u32, x: DevPtr, w: DevPtr, b: DevPtr, flags: u32, eps: f64, y: DevPtr }
    /// `transpose_b*`: a tiled transposing copy of elements of that size.
    TransposeArgs { batch: u32, rows: u32, cols: u32, sb: u32, sj: u32, x: DevPtr, y: DevPtr }
    /// `cross_entropy_*`: per-row loss and log-sum-exp of dense logits.
    CrossEntropyArgs { h: CrossEntropyParams, x: DevPtr, labels: DevPtr, loss: DevPtr, lse: DevPtr }
    /// `cross_entropy_backward_*`: the logits' gradient.
    CrossEntropyBackwardArgs { h: CrossEntropyParams, x: DevPtr, labels: DevPtr, lse: DevPtr, grad: DevPtr, gx: DevPtr }
    /// `sgd_step_*`: one fused SGD step over `n` parameters.
    SgdArgs { n: u32, packed: u32, p: DevPtr, g: DevPtr, buf: DevPtr, h: SgdParams }
    /// `adam_step_*`: one fused Adam / AdamW step over `n` parameters.
    AdamArgs { n: u32, packed: u32, p: DevPtr, g: DevPtr, m: DevPtr, v: DevPtr, h: AdamParams }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_read_back_the_low_bytes() {
        assert_eq!(Bits(0x1234_5678_9abc_def0).get::<u16>(), 0xdef0);
        assert_eq!(Bits(2.5f32.to_bits() as u64).get::<f32>(), 2.5);
        assert_eq!(Bits((-3i64) as u64).get::<i64>(), -3);
        assert!(Bits(1).get::<bool>());
    }
}
