//! Attention through the fused CUDA kernels (`backend/attention.rs`):
//! f16/bf16 operands, and f32 ones (multiplied on the tensor cores as
//! pairs of tf32 parts, "3xTF32": as accurate as f32 products), with head
//! dims 32, 64, 96 or 128, causal or not, grouped-query
//! heads shared in the kernel (no repeated keys and values), any batch
//! dims the kernels can stride through (others are copied dense first). The
//! forward keeps the output and the rows' log-sum-exp for the backward,
//! whose gradients come from two more kernels. Dropout draws each weight's
//! uniform where the blocked path does, so both drop the same weights.
//! Attention with a mask, other dtypes or head dims, and every CPU
//! attention take the blocked path.
//!
//! They are on by default; `KILN_FLASH=0` (or [`set_fused_attention`])
//! turns them off, so the blocked path serves every attention.

use super::super::autograd::{self, Saved};
use super::super::elementwise::with_all_storages;
use super::super::Tensor;
use super::AttentionOptions;
use crate::backend::attention::{FlashShape, HeadOrder, HeadView};
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::{DType, Device};
use kiln_kernels::params::FlashParams;
use std::sync::atomic::{AtomicU8, Ordering};

const OP: &str = "scaled_dot_product_attention";

/// Whether the kernels serve attention before anything chooses (on since
/// `kiln-check --group attention` passed on an H100).
const DEFAULT_ON: bool = true;

/// 0: not chosen yet (the environment decides), 1: off, 2: on.
static CHOICE: AtomicU8 = AtomicU8::new(0);

/// Turns the fused attention kernels on or off for this process
/// (`KILN_FLASH` sets the starting choice).
pub fn set_fused_attention(on: bool) {
    CHOICE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
}

/// Whether the fused attention kernels serve the attentions they apply to.
pub fn fused_attention_enabled() -> bool {
    match CHOICE.load(Ordering::Relaxed) {
        0 => {
            let on = match std::env::var("KILN_FLASH").as_deref() {
                Ok("1") => true,
                Ok("0") => false,
                _ => DEFAULT_ON,
            };
            set_fused_attention(on);
            on
        }
        c => c == 2,
    }
}

/// Whether the fused kernels take this attention (its operands already checked).
pub(super) fn applies(q: &Tensor, k: &Tensor, v: &Tensor, opts: &AttentionOptions) -> bool {
    let last = |t: &Tensor| *t.shape().last().unwrap_or(&0);
    matches!(q.device(), Device::Cuda(_))
        && matches!(q.dtype(), DType::F16 | DType::BF16 | DType::F32)
        && opts.attn_mask.is_none()
        && last(q) == last(v)
        && FlashParams::HEAD_DIMS.contains(&last(q))
        && (!opts.enable_gqa || (q.ndim() >= 3 && q.ndim() == k.ndim() && k.ndim() == v.ndim()))
        && fits_grid(q, k, v)
        && fused_attention_enabled()
}

/// The launch grid's limit on heads (y) and batch entries (z).
const GRID_LIMIT: usize = 65_535;

/// Whether the operands' heads and (broadcast) batch entries fit the grid.
fn fits_grid(q: &Tensor, k: &Tensor, v: &Tensor) -> bool {
    let dim = |t: &Tensor, back: usize| {
        if t.ndim() >= back {
            t.shape()[t.ndim() - back]
        } else {
            1
        }
    };
    let lead = |t: &Tensor| t.shape()[..t.ndim().saturating_sub(3)].to_vec();
    let heads = dim(q, 3).max(dim(k, 3)).max(dim(v, 3));
    let batch = crate::core::shape::broadcast_shapes(OP, &lead(q), &lead(k))
        .and_then(|b| crate::core::shape::broadcast_shapes(OP, &b, &lead(v)))
        .map(|b| b.iter().product::<usize>());
    matches!(batch, Ok(b) if b <= GRID_LIMIT) && heads <= GRID_LIMIT
}

/// `t` seen as `[B, H, rows, D]` through its strides: the batch size, the
/// heads and the view, or `None` when its leading dims do not merge into
/// one stride or its rows are not 16-byte aligned (in elements of its dtype).
fn head_view(t: &Tensor) -> Option<(usize, usize, HeadView)> {
    let (shape, strides) = (t.shape(), t.layout().strides());
    let n = shape.len();
    if strides[n - 1] != 1 {
        return None;
    }
    let (heads, head) = if n >= 3 {
        (shape[n - 3], strides[n - 3])
    } else {
        (1, 0)
    };
    let lead: Vec<(usize, usize)> = (0..n.saturating_sub(3))
        .filter(|&i| shape[i] != 1)
        .map(|i| (shape[i], strides[i]))
        .collect();
    if lead.windows(2).any(|w| w[0].1 != w[1].0 * w[1].1) {
        return None;
    }
    let batch = lead.last().map_or(0, |&(_, s)| s);
    let view = HeadView {
        offset: t.layout().offset(),
        batch,
        head,
        row: strides[n - 2],
    };
    let per_16_bytes = 16 / t.dtype().size_in_bytes();
    let aligned = [view.offset, view.batch, view.head, view.row]
        .iter()
        .all(|x| x % per_16_bytes == 0);
    aligned.then(|| (lead.iter().map(|&(s, _)| s).product(), heads, view))
}

/// `t` and its `[B, H, rows, D]` view, copied dense when it has none.
fn viewed(t: &Tensor) -> Result<(Tensor, (usize, usize, HeadView))> {
    if let Some(v) = head_view(t) {
        return Ok((t.clone(), v));
    }
    let t = t.dense()?;
    let v = head_view(&t).ok_or_else(|| {
        Error::invalid(
            OP,
            format!("internal: a dense {:?} operand has no head view", t.shape()),
        )
    })?;
    Ok((t, v))
}

/// How one fused attention runs: causal or not, the scale, grouped-query
/// heads (k and v have fewer heads, dim -3, each shared by `Hq / Hkv`
/// query heads), and the dropout probability with its draw.
pub(super) struct Fused {
    pub causal: bool,
    pub scale: f64,
    pub gqa: bool,
    pub dropout: f64,
    pub draw: (u64, u64),
}

/// Fused `softmax(q kᵀ · scale) v` as `how` says, differentiable in q, k
/// and v. The operands are checked and `L`, `S` > 0.
pub(super) fn attention(q: &Tensor, k: &Tensor, v: &Tensor, how: Fused) -> Result<Tensor> {
    let Fused {
        causal,
        scale,
        gqa,
        dropout,
        draw,
    } = how;
    let (q, k, v) = super::blocked::broadcast_lead(q, k, v, if gqa { 3 } else { 2 })?;
    let (q, (batch, heads, qv)) = viewed(&q)?;
    let (k, (_, kv_heads, kv)) = viewed(&k)?;
    let (v, (_, _, vv)) = viewed(&v)?;
    let n = q.ndim();
    // the output and the gradients lie as their operands do (a projection
    // split into heads gets [B, L, H, D] buffers: merging the heads back,
    // and the projection's backward, then copy nothing)
    let out_order = HeadOrder::of(&qv, heads);
    let shape = FlashShape {
        batch: batch.max(1),
        heads,
        kv_heads,
        l: q.shape()[n - 2],
        s: k.shape()[n - 2],
        d: q.shape()[n - 1],
        causal,
        scale,
        dropout,
        draw,
        out: out_order,
        grads: [
            out_order,
            HeadOrder::of(&kv, kv_heads),
            HeadOrder::of(&vv, kv_heads),
        ],
    };
    let (o, lse) = autograd::forward(|| {
        with_all_storages(&[&q, &k, &v], |s| {
            Storage::flash_attention((s[0], qv), (s[1], kv), (s[2], vv), &shape)
        })
    })?;
    let out = shaped(o, q.shape(), out_order)?;
    let inputs = [&q, &k, &v];
    if !autograd::needs_grad(&inputs) {
        return Ok(out);
    }
    let lse = Tensor::from_storage(OP, lse, &[shape.batch * heads * shape.l])?;
    let saved = [&q, &k, &v, &out, &lse].map(Saved::new);
    let dtype = q.dtype();
    Ok(autograd::record(OP, &inputs, out, move |g, _| {
        let [q, k, v, out, lse] = [0, 1, 2, 3, 4].map(|i| saved[i].get(OP));
        let (q, k, v, out, lse) = (q?, k?, v?, out?, lse?);
        let g = in_order(&g.to_dtype(dtype)?, out_order)?;
        let out = in_order(out, out_order)?;
        let (dq, dk, dv) = with_all_storages(&[q, k, v, &g, lse, &out], |s| {
            Storage::flash_attention_backward((s[0], qv), (s[1], kv), (s[2], vv), [s[3], s[4], s[5]], &shape)
        })?;
        Ok(vec![
            Some(shaped(dq, q.shape(), shape.grads[0])?),
            Some(shaped(dk, k.shape(), shape.grads[1])?),
            Some(shaped(dv, v.shape(), shape.grads[2])?),
        ])
    }))
}

/// A `[.., heads, rows, D]` tensor of `shape` over a dense kernel output in
/// `order`.
fn shaped(s: Storage, shape: &[usize], order: HeadOrder) -> Result<Tensor> {
    let n = shape.len();
    match order {
        HeadOrder::HeadsOuter => Tensor::from_storage(OP, s, shape),
        HeadOrder::RowsOuter => {
            let mut rows_outer = shape.to_vec();
            rows_outer.swap(n - 3, n - 2);
            Tensor::from_storage(OP, s, &rows_outer)?.transpose(n as i64 - 3, n as i64 - 2)
        }
    }
}

/// `t` (`[.., heads, rows, D]`) dense in `order`: itself when it already
/// is, else a copy.
fn in_order(t: &Tensor, order: HeadOrder) -> Result<Tensor> {
    match order {
        HeadOrder::HeadsOuter => t.dense(),
        HeadOrder::RowsOuter => {
            let n = t.ndim() as i64;
            t.transpose(n - 3, n - 2)?.dense()?.transpose(n - 3, n - 2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Scalar;

    fn zeros(shape: &[usize]) -> Tensor {
        Tensor::full(shape, Scalar::Float(0.0), Some(DType::BF16), Device::Cpu).unwrap()
    }

    #[test]
    fn dense_operands_have_head_views() {
        let (b, h, view) = head_view(&zeros(&[2, 3, 5, 64])).unwrap();
        assert_eq!((b, h), (2, 3));
        assert_eq!(view, HeadView::dense(3, 5, 64));
        let (b, h, view) = head_view(&zeros(&[7, 128])).unwrap();
        assert_eq!((b, h, view.row, view.head, view.batch), (1, 1, 128, 0, 0));
    }

    #[test]
    fn projections_split_into_heads_are_strided_views() {
        // [B, L, H, D] seen as [B, H, L, D]
        let t = zeros(&[2, 5, 3, 64]).transpose(1, 2).unwrap();
        let (_, _, view) = head_view(&t).unwrap();
        assert_eq!((view.batch, view.head, view.row), (5 * 3 * 64, 64, 3 * 64));
        // leading dims that merge, and an expanded batch (stride 0)
        let t = zeros(&[2, 4, 3, 5, 64]);
        assert_eq!(head_view(&t).unwrap().0, 8);
        let t = zeros(&[1, 3, 5, 64]).expand(&[4, 3, 5, 64]).unwrap();
        assert_eq!(head_view(&t).unwrap().2.batch, 0);
    }

    #[test]
    fn unmergeable_or_unaligned_operands_are_copied() {
        // batch dims that do not merge into one stride
        let t = zeros(&[4, 2, 3, 5, 64]).transpose(0, 1).unwrap();
        assert!(head_view(&t).is_none());
        let (t, (b, _, view)) = viewed(&t).unwrap();
        assert!(t.is_contiguous());
        assert_eq!((b, view), (8, HeadView::dense(3, 5, 64)));
        // rows that start off a 16-byte boundary
        let t = zeros(&[3, 5, 65]).narrow(2, 1, 64).unwrap();
        assert!(head_view(&t).is_none());
        // a transposed last dim
        let t = zeros(&[3, 64, 5]).transpose(1, 2).unwrap();
        assert!(head_view(&t).is_none());
    }
}

#[cfg(test)]
mod dropout_tests {
    use super::super::AttentionOptions;
    use crate::core::{DType, Device, HostValues};
    use crate::tensor::{Generator, Tensor};
    use kiln_kernels::params::FlashParams;

    /// The blocked path drops exactly the weights the fused kernels drop
    /// (`FlashParams::keeps` on the same draw): attention with uniform
    /// scores (q = 0) and v = the key index gives, per row, the mean of the
    /// kept keys' indices scaled by 1 / (1 - p).
    #[test]
    fn the_blocked_path_drops_what_the_kernels_drop() {
        let (b, h, l, s, d) = (2usize, 3usize, 5usize, 7usize, 4usize);
        let p = 0.4f64;
        let q = Tensor::zeros(&[b, h, l, d], Some(DType::F64), Device::Cpu).unwrap();
        let k = q
            .narrow(2, 0, 1)
            .unwrap()
            .expand(&[b as i64, h as i64, s as i64, d as i64])
            .unwrap();
        let idx: Vec<f64> = (0..b * h * s * d).map(|i| ((i / d) % s) as f64).collect();
        let v = Tensor::from_host(&HostValues::Float(idx), &[b, h, s, d], DType::F64, Device::Cpu).unwrap();
        for rows in [None, Some(2)] {
            let o = AttentionOptions {
                dropout_p: p,
                block_rows: rows,
                ..Default::default()
            };
            let mut gen = Generator::new(11);
            let out = q.scaled_dot_product_attention(&k, &v, &o, &mut gen).unwrap();
            let HostValues::Float(got) = out.to_host().unwrap() else {
                panic!("not floats")
            };
            let (seed, stream) = Generator::new(11).next_stream();
            let fp = FlashParams {
                l: l as u32,
                s: s as u32,
                dropout: p as f32,
                seed,
                stream,
                ..Default::default()
            };
            for m in 0..b * h {
                for i in 0..l {
                    let kept: f64 = (0..s)
                        .filter(|&j| fp.keeps(m as u32, i as u32, j as u32))
                        .map(|j| j as f64)
                        .sum();
                    let want = kept / s as f64 / (1.0 - p);
                    let at = (m * l + i) * d;
                    assert!(
                        (got[at] - want).abs() < 1e-12,
                        "matrix {m} row {i}: {} vs {want}",
                        got[at]
                    );
                }
            }
        }
    }
}
