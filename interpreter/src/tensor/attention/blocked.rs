//! Attention by blocks of queries, FlashAttention's algorithm at the level
//! of tensor ops: the forward computes each block's scores, their
//! log-sum-exp and its share of the output, keeping only the output and the
//! log-sum-exp; the backward recomputes each block's probabilities from them
//! (and replays the dropout draws from the generator's saved state). So no
//! more than one block's `rows × S` scores exist at a time, in either
//! direction, on every device and dtype. Without a mask or with the causal
//! one, the softmax with its mask, scale and dropout is one row kernel
//! (`Storage::attention_rows`) and its backward one elementwise pass.

use super::super::autograd::{self, functions, Saved};
use super::super::Tensor;
use crate::core::error::Result;
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::{DType, Scalar};
use kiln_kernels::params::{AttentionRows, RandView};

const OP: &str = "scaled_dot_product_attention";

/// `t` in f32 when it is f16 or bf16: scores, their exponentials and the
/// log-sum-exp are kept in f32, as FlashAttention keeps them.
fn wide(t: &Tensor) -> Result<Tensor> {
    match t.dtype() {
        DType::F16 | DType::BF16 => t.to_dtype(DType::F32),
        _ => Ok(t.clone()),
    }
}

/// How the scores of a block are masked.
#[derive(Clone)]
pub(super) enum Mask {
    None,
    /// Key `j` takes part for query `i` when `j <= i` (top-left aligned).
    Causal,
    /// True takes part; broadcast to `[..., L, S]`.
    Keep(Tensor),
    /// Added to the scores; broadcast to `[..., L, S]`.
    Add(Tensor),
}

/// The fixed parts of one attention: scale, mask, dropout and its draws.
#[derive(Clone)]
pub(super) struct Plan {
    pub scale: f64,
    pub mask: Mask,
    pub dropout: f64,
    /// The draw the dropout takes its uniforms from (seed, stream): query
    /// `i`'s weight of key `j` in matrix `bh` of the batch uses the draw's
    /// element `(bh·L + i)·S + j`, whatever the blocks (and in the fused
    /// kernels too).
    pub draw: Option<(u64, u64)>,
    /// Query rows per block.
    pub rows: usize,
}

/// The scores of one budget's worth of rows: how many query rows a block
/// takes so that its scores hold about 2^26 elements.
pub(super) fn rows_per_block(batch: usize, l: usize, s: usize) -> usize {
    const BUDGET: usize = 1 << 26;
    (BUDGET / (batch.max(1) * s.max(1))).clamp(1, l.max(1))
}

impl Plan {
    /// The masked, scaled scores of query rows `i0..i0 + n`: `[..., n, S]`.
    fn scores(&self, q: &Tensor, k: &Tensor, i0: usize, n: usize) -> Result<Tensor> {
        let qb = q.narrow(-2, i0 as i64, n as i64)?;
        let s = wide(&qb.matmul(&k.transpose(-2, -1)?)?)?.mul_scalar(self.scale)?;
        let rows = |m: &Tensor| -> Result<Tensor> {
            if m.ndim() >= 2 && m.shape()[m.ndim() - 2] != 1 {
                m.narrow(-2, i0 as i64, n as i64)
            } else {
                Ok(m.clone())
            }
        };
        let neg_inf = s.constant(f64::NEG_INFINITY)?;
        match &self.mask {
            Mask::None => Ok(s),
            Mask::Add(m) => s.add(&rows(m)?),
            Mask::Keep(m) => Tensor::where_cond(&rows(m)?, &s, &neg_inf),
            Mask::Causal => {
                let keys = k.shape()[k.ndim() - 2];
                let dev = s.device();
                let i = Tensor::arange(
                    Scalar::Int(i0 as i64),
                    Scalar::Int((i0 + n) as i64),
                    Scalar::Int(1),
                    None,
                    dev,
                )?
                .reshape(&[n as i64, 1])?;
                let j = Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(keys as i64),
                    Scalar::Int(1),
                    None,
                    dev,
                )?
                .reshape(&[1, keys as i64])?;
                Tensor::where_cond(&j.compare(CmpOp::Le, &i)?, &s, &neg_inf)
            }
        }
    }

    /// The row kernels' parameters for query rows `i0..i0 + n` of `l`
    /// against `keys` keys, when they apply: no mask or the causal one
    /// (other masks take the composed ops).
    fn row_params(&self, i0: usize, n: usize, l: usize, keys: usize) -> Option<AttentionRows> {
        let causal = match self.mask {
            Mask::None => false,
            Mask::Causal => true,
            Mask::Keep(_) | Mask::Add(_) => return None,
        };
        let fits = |x: usize| u32::try_from(x).is_ok();
        if !(fits(l) && fits(keys) && fits(n * keys)) {
            return None;
        }
        let (seed, stream) = match (self.draw, self.dropout > 0.0) {
            (Some(d), true) => d,
            (None, true) => return None,
            _ => (0, 0),
        };
        Some(AttentionRows {
            n: n as u32,
            keys: keys as u32,
            i0: i0 as u32,
            l: l as u32,
            causal: causal as u32,
            dropout: self.dropout as f32,
            scale: self.scale,
            keep_scale: 1.0 / (1.0 - self.dropout),
            seed,
            stream,
            draw_at: 0,
        })
    }

    /// The weights (softmax over the keys the mask leaves, with dropout)
    /// and log-sum-exps `[..., n, 1]` of the raw scores `s` (`q·kᵀ` of the
    /// block, wide) through the row kernels.
    fn fused_weights(s: &Tensor, h: AttentionRows) -> Result<(Tensor, Tensor)> {
        let s = s.dense()?;
        let (w, lse) = s.storage().attention_rows(h)?;
        let mut lse_shape = s.shape().to_vec();
        *lse_shape.last_mut().unwrap_or(&mut 0) = 1;
        Ok((
            Tensor::from_storage(OP, w, s.shape())?,
            Tensor::from_storage(OP, lse, &lse_shape)?,
        ))
    }

    /// The dropout factor of the probabilities of query rows `i0..i0 + n`
    /// out of `l` (kept / (1 - p), or 0): the draw's elements of those rows;
    /// `None` without dropout.
    fn dropout_factor(&self, like: &Tensor, i0: usize, l: usize) -> Result<Option<Tensor>> {
        let (Some(draw), true) = (self.draw, self.dropout > 0.0) else {
            return Ok(None);
        };
        let nd = like.ndim();
        let (n, s) = (like.shape()[nd - 2], like.shape()[nd - 1]);
        let view = RandView {
            start: (i0 * s) as u64,
            stride: (l * s) as u64,
            run: (n * s) as u64,
        };
        // f32 uniforms whatever the scores' dtype, as the fused kernels draw them
        let u = Tensor::rand_view(like.shape(), DType::F32, like.device(), draw, view)?;
        let keep = u.compare_scalar(CmpOp::Ge, Scalar::Float(self.dropout), false)?;
        let f = like.constant(1.0 / (1.0 - self.dropout))?;
        Ok(Some(Tensor::where_cond(&keep, &f, &like.constant(0.0)?)?))
    }

    /// Output `[..., L, Ev]` and log-sum-exp `[..., L, 1]` (+inf for a row
    /// with no key left, whose output is zeros).
    fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let l = q.shape()[q.ndim() - 2];
        let (mut outs, mut lses) = (Vec::new(), Vec::new());
        let mut i0 = 0;
        let keys = k.shape()[k.ndim() - 2];
        while i0 < l {
            let n = self.rows.min(l - i0);
            if let Some(h) = self.row_params(i0, n, l, keys) {
                let qb = q.narrow(-2, i0 as i64, n as i64)?;
                let (w, lse) = Plan::fused_weights(&wide(&qb.matmul(&k.transpose(-2, -1)?)?)?, h)?;
                outs.push(w.to_dtype(v.dtype())?.matmul(v)?);
                lses.push(lse);
                i0 += n;
                continue;
            }
            let s = self.scores(q, k, i0, n)?;
            let m = s.amax(&[-1], true)?;
            let empty = m.compare_scalar(CmpOp::Eq, Scalar::Float(f64::NEG_INFINITY), false)?;
            let m = Tensor::where_cond(&empty, &m.constant(0.0)?, &m)?;
            let p = s.sub(&m)?.exp()?;
            let sum = p.reduce(ReduceOp::Sum, Some(&[-1]), true)?;
            let sum = Tensor::where_cond(&empty, &sum.constant(1.0)?, &sum)?;
            let mut w = p.div(&sum)?;
            if let Some(f) = self.dropout_factor(&w, i0, l)? {
                w = w.mul(&f)?;
            }
            outs.push(w.to_dtype(v.dtype())?.matmul(v)?);
            let lse = m.add(&sum.log()?)?;
            lses.push(Tensor::where_cond(&empty, &lse.constant(f64::INFINITY)?, &lse)?);
            i0 += n;
        }
        Ok((joined(outs)?, joined(lses)?))
    }

    /// Gradients of q, k, v and (for an additive mask) the mask, from the
    /// output's gradient `g`, recomputing each block's probabilities.
    #[allow(clippy::type_complexity)]
    fn backward(
        &self,
        (q, k, v): (&Tensor, &Tensor, &Tensor),
        (out, lse): (&Tensor, &Tensor),
        g: &Tensor,
        mask_grad: bool,
    ) -> Result<(Tensor, Tensor, Tensor, Option<Tensor>)> {
        let l = q.shape()[q.ndim() - 2];
        let d = wide(&g.mul(out)?)?.reduce(ReduceOp::Sum, Some(&[-1]), true)?;
        let low = |t: &Tensor| t.to_dtype(q.dtype());
        let (mut gq, mut gm) = (Vec::new(), Vec::new());
        let (mut gk, mut gv): (Option<Tensor>, Option<Tensor>) = (None, None);
        let add = |acc: Option<Tensor>, t: Tensor| -> Result<Option<Tensor>> {
            Ok(Some(match acc {
                Some(a) => a.add(&t)?,
                None => t,
            }))
        };
        let keys = k.shape()[k.ndim() - 2];
        let mut i0 = 0;
        while i0 < l {
            let n = self.rows.min(l - i0);
            let block = |t: &Tensor| t.narrow(-2, i0 as i64, n as i64);
            let gb = block(g)?;
            let gw = wide(&gb.matmul(&v.transpose(-2, -1)?)?)?;
            // the dropped-out weights (for dV) and the scores' gradient
            let (w_d, ds) = match (self.row_params(i0, n, l, keys), mask_grad) {
                (Some(h), false) => {
                    // one elementwise pass over the recomputed scores
                    let s = wide(&block(q)?.matmul(&k.transpose(-2, -1)?)?)?.dense()?;
                    let (gw, lse_b, d_b) = (gw.dense()?, block(lse)?.dense()?, block(&d)?.dense()?);
                    let (wd, ds) = {
                        let (ss, ls, gs, ds) = (s.storage(), lse_b.storage(), gw.storage(), d_b.storage());
                        ss.attention_rows_backward([&ls, &gs, &ds], h)?
                    };
                    (
                        Tensor::from_storage(OP, wd, s.shape())?,
                        Tensor::from_storage(OP, ds, s.shape())?,
                    )
                }
                _ => {
                    let s = self.scores(q, k, i0, n)?;
                    let w = s.sub(&block(lse)?)?.exp()?;
                    let (w_d, gw) = match self.dropout_factor(&w, i0, l)? {
                        Some(f) => (w.mul(&f)?, gw.mul(&f)?),
                        None => (w.clone(), gw),
                    };
                    let ds = w.mul(&gw.sub(&block(&d)?)?)?;
                    if mask_grad {
                        gm.push(ds.clone());
                    }
                    (w_d, ds)
                }
            };
            gv = add(gv, low(&w_d)?.transpose(-2, -1)?.matmul(&gb)?)?;
            let ds = low(&ds)?;
            gq.push(ds.matmul(k)?.mul_scalar(self.scale)?);
            gk = add(
                gk,
                ds.transpose(-2, -1)?.matmul(&block(q)?)?.mul_scalar(self.scale)?,
            )?;
            i0 += n;
        }
        let gm = if mask_grad {
            Some(Tensor::cat(&gm, -2)?)
        } else {
            None
        };
        let zeros = |t: &Tensor| t.mul_scalar(0.0);
        let gk = match gk {
            Some(t) => t,
            None => zeros(k)?,
        };
        let gv = match gv {
            Some(t) => t,
            None => zeros(v)?,
        };
        Ok((joined(gq)?, gk, gv, gm))
    }
}

/// The blocks' pieces joined along the rows: the one piece itself when
/// there is one block (no copy).
fn joined(mut pieces: Vec<Tensor>) -> Result<Tensor> {
    if pieces.len() == 1 {
        return Ok(pieces.remove(0));
    }
    Tensor::cat(&pieces, -2)
}

/// `softmax(q kᵀ · scale + mask) v` by blocks of `plan.rows` query rows,
/// differentiable in q, k, v and an additive mask, and the generator after
/// the forward's dropout draws. `q`, `k`, `v` share their batch dims; the
/// mask broadcasts to `[..., L, S]`.
pub(super) fn attention(q: &Tensor, k: &Tensor, v: &Tensor, plan: Plan) -> Result<Tensor> {
    let mask = match &plan.mask {
        Mask::Add(m) => Some(m.clone()),
        _ => None,
    };
    let mut inputs = vec![q, k, v];
    inputs.extend(mask.as_ref());
    if !autograd::needs_grad(&inputs) {
        return Ok(autograd::forward(|| plan.forward(q, k, v))?.0);
    }
    let (out, lse) = autograd::forward(|| plan.forward(q, k, v))?;
    let saved = [q, k, v, &out, &lse].map(Saved::new);
    let mask_like = mask.as_ref().map(|m| (m.shape().to_vec(), m.dtype()));
    let dtype = q.dtype();
    let out = autograd::record(OP, &inputs, out, move |g, needs| {
        let [q, k, v, out, lse] = [0, 1, 2, 3, 4].map(|i| saved[i].get(OP));
        let (q, k, v, out, lse) = (q?, k?, v?, out?, lse?);
        let want_mask = needs.get(3).copied().unwrap_or(false);
        let g = if g.dtype() == dtype {
            g.clone()
        } else {
            g.to_dtype(dtype)?
        };
        let (gq, gk, gv, gm) = plan.backward((q, k, v), (out, lse), &g, want_mask)?;
        let mut grads = vec![Some(gq), Some(gk), Some(gv)];
        if let Some((shape, mask_dtype)) = mask_like {
            grads.push(match gm {
                Some(gm) => Some(functions::sum_to(&gm, &shape)?.to_dtype(mask_dtype)?),
                None => None,
            });
        }
        Ok(grads)
    });
    Ok(out)
}

/// The common batch shape of q, k and v (all but their last two dims),
/// each expanded to it.
pub(super) fn broadcast_batch(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    broadcast_lead(q, k, v, 2)
}

/// q, k and v expanded to the common shape of their dims before the last
/// `keep` (which stay their own).
pub(super) fn broadcast_lead(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    keep: usize,
) -> Result<(Tensor, Tensor, Tensor)> {
    let lead = |t: &Tensor| t.shape()[..t.ndim().saturating_sub(keep)].to_vec();
    let b = crate::core::shape::broadcast_shapes(
        OP,
        &crate::core::shape::broadcast_shapes(OP, &lead(q), &lead(k))?,
        &lead(v),
    )?;
    let expand = |t: &Tensor| -> Result<Tensor> {
        let own = t.ndim().min(keep);
        let mut shape: Vec<i64> = b.iter().map(|&d| d as i64).collect();
        shape.extend(t.shape()[t.ndim() - own..].iter().map(|&d| d as i64));
        if t.shape().len() == shape.len() && t.shape().iter().zip(&shape).all(|(&a, &b)| a as i64 == b) {
            Ok(t.clone())
        } else {
            t.expand(&shape)
        }
    };
    Ok((expand(q)?, expand(k)?, expand(v)?))
}

#[cfg(test)]
mod tests {
    use super::super::AttentionOptions;
    use crate::core::{DType, Device, HostValues};
    use crate::tensor::{Generator, Tensor};

    fn values(t: &Tensor) -> Vec<f64> {
        match t.to_host().unwrap() {
            HostValues::Float(v) => v,
            _ => panic!("not floats"),
        }
    }

    /// The row kernels (no mask, causal) give what the composed ops give
    /// for the same mask written out (a bool `tril` mask), with dropout,
    /// forward and backward, in blocks of rows or one block.
    #[test]
    fn the_row_kernels_match_the_composed_softmax() {
        let mut gen = Generator::new(3);
        let (b, h, l, s, d) = (2usize, 3usize, 7usize, 7usize, 5usize);
        let q = Tensor::randn(&[b, h, l, d], Some(DType::F64), Device::Cpu, &mut gen).unwrap();
        let k = Tensor::randn(&[b, h, s, d], Some(DType::F64), Device::Cpu, &mut gen).unwrap();
        let v = Tensor::randn(&[b, h, s, d], Some(DType::F64), Device::Cpu, &mut gen).unwrap();
        let g = Tensor::randn(&[b, h, l, d], Some(DType::F64), Device::Cpu, &mut gen).unwrap();
        let tril = Tensor::ones(&[l, s], Some(DType::Bool), Device::Cpu)
            .unwrap()
            .tril(0)
            .unwrap();
        let all = Tensor::ones(&[l, s], Some(DType::Bool), Device::Cpu).unwrap();
        for (causal, rows, p) in [
            (true, None, 0.0),
            (true, Some(3), 0.3),
            (false, Some(2), 0.25),
            (false, None, 0.0),
        ] {
            let run = |mask: Option<Tensor>| -> Vec<Vec<f64>> {
                let (q, k, v) = (q.detach(), k.detach(), v.detach());
                for t in [&q, &k, &v] {
                    t.set_requires_grad(true).unwrap();
                }
                let o = AttentionOptions {
                    is_causal: causal && mask.is_none(),
                    attn_mask: mask,
                    dropout_p: p,
                    block_rows: rows,
                    ..Default::default()
                };
                let out = q
                    .scaled_dot_product_attention(&k, &v, &o, &mut Generator::new(9))
                    .unwrap();
                out.backward_with(&g).unwrap();
                let mut r = vec![values(&out)];
                r.extend([&q, &k, &v].map(|t| values(&t.grad().unwrap())));
                r
            };
            let fused = run(None);
            let composed = run(Some(if causal { tril.clone() } else { all.clone() }));
            for (a, c) in fused.iter().zip(&composed) {
                for (x, y) in a.iter().zip(c) {
                    assert!(
                        (x - y).abs() < 1e-12,
                        "causal {causal} rows {rows:?} p {p}: {x} vs {y}"
                    );
                }
            }
        }
    }
}
