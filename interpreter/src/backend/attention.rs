//! Fused attention as a backend call: CUDA's tensor-core kernels
//! (`cuda/attention.rs`). The front end (`tensor/attention/fused.rs`)
//! decides when they apply (f16/bf16, head dims 32, 64, 96 and 128, no mask)
//! and hands each operand over as a `[B, H, rows, D]` view of its
//! storage; every other attention is composed from tensor ops
//! (`tensor/attention/blocked.rs`), which serves every backend, with the
//! row ops of its softmax here ([`Storage::attention_rows`]).

use super::{cpu, gate, mixed, Storage};
use crate::core::error::{Error, Result};
use crate::core::DType;
use kiln_kernels::params::AttentionRows;

const OP: &str = "scaled_dot_product_attention";

/// Where a `[B, H, rows, D]` attention operand lies in its storage: the
/// element offset and the batch, head and row strides (its last dim dense).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadView {
    /// Offset of element `[0, 0, 0, 0]`.
    pub offset: usize,
    /// Between batch entries.
    pub batch: usize,
    /// Between heads.
    pub head: usize,
    /// Between rows.
    pub row: usize,
}

impl HeadView {
    /// The view of a dense `[batch, heads, rows, d]` array.
    pub fn dense(heads: usize, rows: usize, d: usize) -> HeadView {
        HeadView {
            offset: 0,
            batch: heads * rows * d,
            head: rows * d,
            row: d,
        }
    }
}

/// How a `[B, heads, rows, D]` array the kernels write lies in memory:
/// dense with the heads outer (`[B, heads, rows, D]` contiguous) or with
/// the rows outer (`[B, rows, heads, D]` contiguous: the layout of a
/// projection split into heads, so merging the heads back is free).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HeadOrder {
    /// `[B, heads, rows, D]` contiguous.
    #[default]
    HeadsOuter,
    /// `[B, rows, heads, D]` contiguous.
    RowsOuter,
}

impl HeadOrder {
    /// The order an operand seen through `view` with `heads` heads has.
    pub fn of(view: &HeadView, heads: usize) -> HeadOrder {
        if heads > 1 && view.head < view.row {
            HeadOrder::RowsOuter
        } else {
            HeadOrder::HeadsOuter
        }
    }

    /// The view of a dense `[B, heads, rows, d]` array in this order.
    pub fn view(self, heads: usize, rows: usize, d: usize) -> HeadView {
        match self {
            HeadOrder::HeadsOuter => HeadView::dense(heads, rows, d),
            HeadOrder::RowsOuter => HeadView {
                offset: 0,
                batch: rows * heads * d,
                head: d,
                row: heads * d,
            },
        }
    }
}

/// The sizes and options of one fused attention: `q [B, H, L, D]`,
/// `k`, `v [B, Hkv, S, D]` (`H` a multiple of `Hkv`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlashShape {
    /// Batch entries `B`.
    pub batch: usize,
    /// Query heads `H`.
    pub heads: usize,
    /// Key/value heads `Hkv`.
    pub kv_heads: usize,
    /// Query length `L`.
    pub l: usize,
    /// Key length `S`.
    pub s: usize,
    /// Head dim `D`.
    pub d: usize,
    /// Query `i` attends to keys `0..=i` only.
    pub causal: bool,
    /// The factor on `q·k`.
    pub scale: f64,
    /// Dropout probability of the weights (0: none).
    pub dropout: f64,
    /// The dropout's uniform draw `(seed, stream)`: the weight of key `j`
    /// for query `i` of matrix `b·H + h` is dropped when the draw's element
    /// `((b·H + h)·L + i)·S + j` is below `dropout`.
    pub draw: (u64, u64),
    /// How the output and its gradient lie.
    pub out: HeadOrder,
    /// How the gradients of q, k and v lie.
    pub grads: [HeadOrder; 3],
}

fn cuda_only() -> Error {
    Error::invalid(OP, "internal: the fused attention kernels run on CUDA only")
}

impl Storage {
    /// `(o, lse)`: the output, dense `[B, H, L, D]` in `shape.out`'s order in
    /// the operands' dtype, and the rows' log-sum-exps, dense f32 `[B, H, L]`.
    pub fn flash_attention(
        q: (&Storage, HeadView),
        k: (&Storage, HeadView),
        v: (&Storage, HeadView),
        shape: &FlashShape,
    ) -> Result<(Storage, Storage)> {
        gate(
            q.0,
            OP,
            q.0.dtype(),
            shape.batch * shape.heads * shape.l * shape.d,
        )?;
        gate(q.0, OP, DType::F32, shape.batch * shape.heads * shape.l)?;
        match (q.0, k.0, v.0) {
            (Storage::Cuda(qs), Storage::Cuda(ks), Storage::Cuda(vs)) => {
                let (o, lse) = super::CudaStorage::flash_attention((qs, q.1), (ks, k.1), (vs, v.1), shape)?;
                Ok((Storage::Cuda(o), Storage::Cuda(lse)))
            }
            (Storage::Cpu(_), Storage::Cpu(_), Storage::Cpu(_)) => Err(cuda_only()),
            _ => Err(mixed(OP)),
        }
    }

    /// `(dq, dk, dv)`, dense in `shape.grads`' orders, from the output
    /// gradient `dout [B, H, L, D]` and the forward's output `o` (both dense
    /// in `shape.out`'s order) and its `lse` (dense f32 `[B, H, L]`).
    pub fn flash_attention_backward(
        q: (&Storage, HeadView),
        k: (&Storage, HeadView),
        v: (&Storage, HeadView),
        [dout, lse, out]: [&Storage; 3],
        shape: &FlashShape,
    ) -> Result<(Storage, Storage, Storage)> {
        let n = shape.batch * (shape.heads * shape.l + 2 * shape.kv_heads * shape.s) * shape.d;
        gate(q.0, OP, q.0.dtype(), n)?;
        match (q.0, k.0, v.0, dout, lse, out) {
            (
                Storage::Cuda(qs),
                Storage::Cuda(ks),
                Storage::Cuda(vs),
                Storage::Cuda(g),
                Storage::Cuda(l),
                Storage::Cuda(dl),
            ) => {
                let (dq, dk, dv) = super::CudaStorage::flash_attention_backward(
                    (qs, q.1),
                    (ks, k.1),
                    (vs, v.1),
                    [g, l, dl],
                    shape,
                )?;
                Ok((Storage::Cuda(dq), Storage::Cuda(dk), Storage::Cuda(dv)))
            }
            (Storage::Cpu(_), ..) => Err(cuda_only()),
            _ => Err(mixed(OP)),
        }
    }

    /// The blocked attention's weights and log-sum-exps of one block of
    /// dense score rows `[M, n, S]` (unscaled, f32 or f64; see
    /// [`AttentionRows`]): `w` (same shape, the softmax over the keys the
    /// causal mask leaves, times the dropout's factors) and `lse` (`[M·n]`,
    /// +inf for a row with no key left).
    pub fn attention_rows(&self, h: AttentionRows) -> Result<(Storage, Storage)> {
        gate(
            self,
            OP,
            self.dtype(),
            self.len() + self.len() / h.keys.max(1) as usize,
        )?;
        Ok(match self {
            Storage::Cpu(s) => {
                let (w, lse) = cpu::attention_rows(s, h)?;
                (Storage::Cpu(w), Storage::Cpu(lse))
            }
            Storage::Cuda(s) => {
                let (w, lse) = s.attention_rows(h)?;
                (Storage::Cuda(w), Storage::Cuda(lse))
            }
        })
    }

    /// The backward of [`Storage::attention_rows`] from the recomputed
    /// scores (this storage), the forward's `lse`, `gw = g·vᵀ` (dense, the
    /// scores' shape) and `delta = rowsum(g · out)` (`[M·n]`), all one
    /// dtype: `(w · f, w · (gw · f - delta))`, `f` the dropout's factors.
    pub fn attention_rows_backward(
        &self,
        [lse, gw, delta]: [&Storage; 3],
        h: AttentionRows,
    ) -> Result<(Storage, Storage)> {
        gate(self, OP, self.dtype(), 2 * self.len())?;
        Ok(match (self, lse, gw, delta) {
            (Storage::Cpu(s), Storage::Cpu(l), Storage::Cpu(g), Storage::Cpu(d)) => {
                let (wd, ds) = cpu::attention_rows_backward(s, [l, g, d], h)?;
                (Storage::Cpu(wd), Storage::Cpu(ds))
            }
            (Storage::Cuda(s), Storage::Cuda(l), Storage::Cuda(g), Storage::Cuda(d)) => {
                let (wd, ds) = s.attention_rows_backward([l, g, d], h)?;
                (Storage::Cuda(wd), Storage::Cuda(ds))
            }
            _ => return Err(mixed(OP)),
        })
    }
}
