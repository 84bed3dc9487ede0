//! Fused attention as a backend call: CUDA's tensor-core kernels
//! (`cuda/attention.rs`). The front end (`tensor/attention/fused.rs`)
//! decides when they apply (f16/bf16, head dims 32, 64, 96 and 128, no mask)
//! and hands each operand over as a `[B, H, rows, D]` view of its
//! storage; every other attention is composed from tensor ops
//! (`tensor/attention/blocked.rs`), which serves every backend.

use super::{gate, mixed, Storage};
use crate::core::error::{Error, Result};
use crate::core::DType;

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
}

fn cuda_only() -> Error {
    Error::invalid(OP, "internal: the fused attention kernels run on CUDA only")
}

impl Storage {
    /// `(o, lse)`: the output, dense `[B, H, L, D]` in the operands' dtype,
    /// and the rows' log-sum-exps, dense f32 `[B, H, L]`.
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

    /// `(dq, dk, dv)`, dense like q, k and v, from the dense output
    /// gradient `dout [B, H, L, D]`, the forward's `lse` and
    /// `delta = rowsum(dout · o)` (dense f32 `[B, H, L]`).
    pub fn flash_attention_backward(
        q: (&Storage, HeadView),
        k: (&Storage, HeadView),
        v: (&Storage, HeadView),
        [dout, lse, delta]: [&Storage; 3],
        shape: &FlashShape,
    ) -> Result<(Storage, Storage, Storage)> {
        let n = shape.batch * (shape.heads * shape.l + 2 * shape.kv_heads * shape.s) * shape.d;
        gate(q.0, OP, q.0.dtype(), n)?;
        match (q.0, k.0, v.0, dout, lse, delta) {
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
}
