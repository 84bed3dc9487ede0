//! The argument blocks of the kernels: one `#[repr(C)]` struct per kernel
//! family, defined once here and compiled into both sides. A kernel of a
//! family takes the family's device pointers, in the order listed, as its
//! leading parameters and the struct, passed by value, as its last one (one
//! `.param` block of the struct's size); the host fills the same struct and
//! launches every family through one generic launch. A field's place and
//! type therefore cannot differ between host and device, and the host checks
//! that each PTX entry takes exactly its family's pointers and block.
//!
//! The pointers stay parameters of their own because only then does the
//! compiler know they address global memory: read out of a struct they are
//! generic addresses, every access becomes a generic load or store, and the
//! bandwidth-bound kernels lose about 5% (measured on the H200).
//! Scalars whose type depends on the dtype travel as their bits in the low
//! bytes of a `u64` ([`Bits`]).

use crate::params::{
    AdamParams, AttentionRows, CrossEntropyParams, FlashParams, Geometry, IndexDim, MatmulShape, Operand,
    RandView, SgdParams, TensorList,
};

/// Rows of threads in a block of `reduce_cols_finish_*` (32 columns wide).
pub const COLS_FINISH_ROWS: u32 = 32;

/// What each argument struct declares about its family's launches.
pub trait ArgBlock: Copy {
    /// The family's device pointers as the host passes them (`[u64; N]`).
    type Pointers: AsRef<[u64]>;
    /// Their names, in parameter order.
    const POINTERS: &'static [&'static str];
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

/// Declares the argument structs: `Name [pointers] { field: Type, ... }` with a doc.
macro_rules! args {
    ($($(#[doc = $doc:literal])* $name:ident [$($ptr:ident),*] { $($field:ident: $ty:ty),* $(,)? })*) => {
        $(
            $(#[doc = $doc])*
            #[doc = concat!("\n\nDevice pointers, in parameter order:", $(" `", stringify!($ptr), "`",)* ".")]
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq)]
            pub struct $name {
                $( pub $field: $ty, )*
            }

            impl ArgBlock for $name {
                type Pointers = [u64; <[&str]>::len(&[$(stringify!($ptr)),*])];
                const POINTERS: &'static [&'static str] = &[$(stringify!($ptr)),*];
            }
        )*
    };
}

args! {

    /// `unary_*` (and `unary_logical_not_*`): `y[i] = op(x[i])`, y dense.
    UnaryArgs [x, y] { g: Geometry, xo: Operand }

    /// `binary_*` and `cmp_*`: `y[i] = a[i] op b[i]`, y dense.
    BinaryArgs [a, b, y] { g: Geometry, ao: Operand, bo: Operand }

    /// `binary_scalar_*` and `cmp_scalar_*`: `y[i] = a[i] op s` (`s op a[i]` when `rev` is 1).
    ScalarArgs [a, y] { g: Geometry, ao: Operand, s: Bits, rev: u32 }

    /// `where_*`: `y[i] = c[i] ? a[i] : b[i]`, y dense.
    WhereArgs [c, a, b, y] { g: Geometry, co: Operand, ao: Operand, bo: Operand }

    /// `cast_*`: `y[yo(i)] = x[xo(i)]` converted (strided on both sides).
    CastArgs [x, y] { g: Geometry, xo: Operand, yo: Operand }

    /// `unary_v_*` and `cast_v_*`: dense `y[i] = f(x[i])` over `n` elements, 16-byte accesses.
    DenseArgs [x, y] { n: u32 }

    /// `binary_v_*`: dense `y[i] = a[i] op b[i]` over `n` elements.
    DenseBinaryArgs [a, b, y] { n: u32 }

    /// `binary_scalar_v_*`: dense `y[i] = a[i] op s` (`s op a[i]` when `rev` is 1).
    DenseScalarArgs [a, y] { n: u32, s: Bits, rev: u32 }

    /// `binary_row_*`: a dense operand and a dense row of `row_packs` packs
    /// repeated over the rows (`row_side` 1: `b` is the row, 0: `a` is).
    RowArgs [a, b, y] { packs: u32, row_packs: u32, row_side: u32 }

    /// `fill_*`: `y[i] = value` for `n` elements.
    FillArgs [y] { n: u32, value: Bits }

    /// `arange_*`: `y[i] = start + i * step` (floats) or `istart + i * istep` (integers).
    ArangeArgs [y] { n: u32, start: f64, step: f64, istart: i64, istep: i64 }

    /// `rand_uniform_*` and `rand_normal_*`: Philox numbers of `seed` and
    /// `stream` (`draw_at`: a CUDA graph's draw slot, or 0; see
    /// [`crate::philox::replayed`]).
    RandArgs [y] { n: u32, seed: u64, stream: u64, view: RandView, draw_at: u64 }

    /// `dropout_*`: inverted dropout of dense `x` by the draw `(seed, stream)`.
    DropoutArgs [x, y] { n: u32, seed: u64, stream: u64, p: f64, scale: f64, draw_at: u64 }

    /// `rand_int_*`: integers in `low .. low + range`.
    RandIntArgs [y] { n: u32, seed: u64, stream: u64, low: i64, range: u64, draw_at: u64 }

    /// `gather_*`: reads `x` along one dim through the i64 index `idx`.
    GatherArgs [x, idx, y] { g: Geometry, xo: Operand, io: Operand, h: IndexDim }

    /// `scatter_add_*`: atomically adds `src` into `dst` along one dim through `idx`.
    ScatterAddArgs [dst, idx, src] { g: Geometry, dso: Operand, io: Operand, so: Operand, h: IndexDim }

    /// `matmul_int_*`: a batched integer matmul.
    MatmulIntArgs [a, b, y] { g: Geometry, ao: Operand, bo: Operand, dims: MatmulShape }

    /// `reduce_partial_*`: pass 1 of the generic reduction, one partial state per (output, chunk).
    ReducePartialArgs [x, partial] { outer: Geometry, xo: Operand, inner: Geometry, io: Operand, chunks: u32, chunk_len: u32, op: u32 }

    /// `reduce_short_*`: short lanes (a few elements per output), one thread
    /// per output; `index_out` 1: the output is i64 (the state's integer
    /// result), else the input's dtype.
    ReduceShortArgs [x, y] { outer: Geometry, xo: Operand, inner: Geometry, io: Operand, op: u32, correction: u32, index_out: u32 }

    /// `reduce_finish_*`: pass 2, the chunks' states merged into each output.
    ReduceFinishArgs [partial, y] { outputs: u32, chunks: u32, op: u32, float: u32, correction: u32 }

    /// `reduce_lanes_*`: dense rows reduced by blocks (`packed` 1: 16-byte accesses).
    LanesArgs [x, partial, y] { rows: u32, len: u32, chunks: u32, chunk_len: u32, packed: u32 }

    /// `reduce_lanes_finish_*`: the chunks of each row merged.
    LanesFinishArgs [partial, y] { outputs: u32, chunks: u32, count: u32 }

    /// `reduce_cols_*`: a dense middle axis of `r` reduced across columns.
    ColsArgs [x, partial, y] { outer: u32, r: u32, inner: u32, chunks: u32, chunk_len: u32 }

    /// `reduce_cols_finish_*`: the chunks of each column merged, by blocks of
    /// 32 × [`COLS_FINISH_ROWS`] threads (32 columns each).
    ColsFinishArgs [partial, y] { outer: u32, inner: u32, chunks: u32, count: u32 }

    /// `softmax_*`: softmax (`log` 1: log-softmax) along a strided dim.
    SoftmaxArgs [x, y] { rows: Geometry, ro: Operand, len: u32, step: u32, log: u32 }

    /// `softmax_rows_*`: softmax over dense rows, a warp (`per_warp` 1) or a block per row.
    SoftmaxRowsArgs [x, y] { rows: u32, len: u32, per_warp: u32, log: u32 }

    /// `attention_rows_*`: the blocked attention's masked, scaled softmax of
    /// dense score rows with dropout, and the rows' log-sum-exps.
    AttentionRowsArgs [s, w, lse] { rows: u32, per_warp: u32, h: AttentionRows }

    /// `attention_rows_backward_*`: the weights (with dropout) and the
    /// scores' gradient from recomputed scores, elementwise.
    AttentionRowsBackwardArgs [s, lse, gw, delta, wd, ds] { rows: u32, h: AttentionRows }

    /// `layer_norm_*`: layer norm over dense rows of `norm` elements.
    LayerNormArgs [x, w, b, y] { rows: u32, norm: u32, per_warp: u32, flags: u32, eps: f64 }

    /// `layer_norm_backward_*`: the input's gradient of layer norm over dense
    /// rows (flags: 1 weight given, 2 also write `g · x̂` to `gxh`).
    LayerNormBackwardArgs [x, g, w, gx, gxh] { rows: u32, norm: u32, per_warp: u32, flags: u32, eps: f64 }

    /// `transpose_b*`: a tiled transposing copy of elements of that size.
    TransposeArgs [x, y] { batch: u32, rows: u32, cols: u32, sb: u32, sj: u32 }

    /// `cross_entropy_*`: per-row loss and log-sum-exp of dense logits.
    CrossEntropyArgs [x, labels, loss, lse] { h: CrossEntropyParams }

    /// `cross_entropy_backward_*`: the logits' gradient.
    CrossEntropyBackwardArgs [x, labels, lse, grad, gx] { h: CrossEntropyParams }

    /// `sgd_step_*`: one fused SGD step over `n` parameters.
    SgdArgs [p, g, buf] { n: u32, packed: u32, h: SgdParams }

    /// `adam_step_*`: one fused Adam / AdamW step over `n` parameters.
    AdamArgs [p, g, m, v] { n: u32, packed: u32, h: AdamParams }

    /// `flash_forward_*`: fused attention, the output `o [B, H, L, D]` and
    /// the rows' log-sum-exp `lse [B, H, L]` (f32, natural log).
    FlashForwardArgs [q, k, v, o, lse] { h: FlashParams }

    /// `flash_backward_kv_*`: the key and value gradients `dk`, `dv`
    /// `[B, H / group, S, D]` from the output gradient `dout [B, H, L, D]`,
    /// `lse` and `delta = rowsum(dout · o)` (f32 `[B, H, L]`).
    FlashBackwardKvArgs [q, k, v, dout, lse, delta, dk, dv] { h: FlashParams }

    /// `flash90_backward_kvq_*`: the key and value gradients as
    /// `flash_backward_kv_*`, and the query gradient added into `dq_acc`
    /// (f32, in `dq`'s layout, zeroed beforehand).
    FlashBackwardKvqArgs [q, k, v, dout, lse, delta, dk, dv, dq_acc] { h: FlashParams }

    /// `flash_backward_q_*`: the query gradient `dq [B, H, L, D]`.
    FlashBackwardQArgs [q, k, v, dout, lse, delta, dq] { h: FlashParams }

    /// `flash_delta_*`: `delta = rowsum(dout · o)` (f32 `[B, H, L]`) from
    /// the output and its gradient, both in the output's layout; `dq_acc`
    /// null, or f32 query-gradient sums (`h.dq`'s layout) to zero.
    FlashDeltaArgs [o, dout, delta, dq_acc] { h: FlashParams }

    /// `adam_multi_*`: one fused Adam / AdamW step over every tensor of
    /// `list` (a block per chunk; the addresses travel in the list).
    AdamMultiArgs [] { h: AdamParams, list: TensorList }

    /// `sgd_multi_*`: one fused SGD step over every tensor of `list`
    /// (parameters `p`, gradients `g`, momentum buffers `m`, read only
    /// with momentum).
    SgdMultiArgs [] { h: SgdParams, list: TensorList }

    /// `norm_multi_*`: each block's sum of squares (`inf` 1: largest
    /// magnitude) of its chunk of the tensors at `list.p`, to `partial[block]`
    /// in the accumulator type.
    NormMultiArgs [partial] { list: TensorList, inf: u32 }

    /// `scale_multi_*`: every element of the tensors at `list.p` times the
    /// f32 at `coef` (rounded to the tensors' dtype first), in place.
    ScaleMultiArgs [coef] { list: TensorList }

    /// `scan_totals_*`: the combined value of each chunk of `chunk` elements
    /// of `rows` dense rows of `len` (`chunks` per row).
    ScanTotalsArgs [x, totals] { rows: u32, len: u32, chunk: u32, chunks: u32 }

    /// `scan_carry_*`: turns each row's chunk totals into exclusive prefixes, in place.
    ScanCarryArgs [totals] { rows: u32, chunks: u32 }

    /// `scan_apply_*`: the inclusive scan of each chunk, started from its
    /// prefix in `totals` when `carry` is 1; `yi` gets the indices of
    /// `cummax`/`cummin`.
    ScanApplyArgs [x, totals, y, yi] { rows: u32, len: u32, chunk: u32, chunks: u32, carry: u32 }

    /// `sort_keys_*`: order-preserving u64 keys (inverted when `descending`)
    /// and positions of `rows` dense rows of `len`, padded to `padded` with
    /// keys that sort last.
    SortKeysArgs [x, keys, idx] { rows: u32, len: u32, padded: u32, descending: u32 }

    /// `sort_local`: the bitonic stages `k_lo..=k_hi` (doubling) within
    /// chunks of `chunk` keys in shared memory.
    SortLocalArgs [keys, idx] { rows: u32, padded: u32, chunk: u32, k_lo: u32, k_hi: u32 }

    /// `sort_global`: one bitonic compare-exchange step `(k, j)` over whole rows.
    SortGlobalArgs [keys, idx] { rows: u32, padded: u32, k: u32, j: u32 }

    /// `sort_gather_*`: the sorted values and their i64 positions.
    SortGatherArgs [x, idx, y, yi] { rows: u32, len: u32, padded: u32 }

    /// `sort_search_*`: for each of `rows × m` values, its insertion point
    /// in its row of `n` sorted elements (one row for all when `shared`),
    /// after equal ones when `right`.
    SortSearchArgs [seq, v, out] { rows: u32, m: u32, n: u32, shared: u32, right: u32 }
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
