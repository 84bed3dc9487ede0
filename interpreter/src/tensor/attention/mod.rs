//! The transformer ops of `torch.nn.functional`: `scaled_dot_product_attention`
//! (through the fused CUDA kernels where they apply, in `fused.rs`; else
//! by blocks of queries on every device and float dtype, in `blocked.rs`:
//! no `L × S` score matrix is kept, the backward recomputes; a row every
//! key of which is masked gives zeros, as PyTorch's math path does),
//! `rms_norm`, and rotary position embeddings (`rope`, the rotate-half
//! form).

mod blocked;
mod fused;

pub use fused::{fused_attention_enabled, set_fused_attention};

use super::{Generator, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::core::{DType, Scalar};
use blocked::{Mask, Plan};

/// The options of [`Tensor::scaled_dot_product_attention`] (PyTorch's
/// keywords and defaults).
#[derive(Clone, Debug, Default)]
pub struct AttentionOptions {
    /// Bool (true takes part) or additive float mask, broadcast to
    /// `[..., L, S]`.
    pub attn_mask: Option<Tensor>,
    /// Dropout probability on the attention weights.
    pub dropout_p: f64,
    /// A causal mask: query `i` attends to keys `0..=i`.
    pub is_causal: bool,
    /// The factor on `q·k`; `1/√E` when absent.
    pub scale: Option<f64>,
    /// Grouped-query attention: fewer key/value heads (dim -3) than query
    /// heads, each shared by `Hq / Hkv` query heads.
    pub enable_gqa: bool,
    /// Query rows per block (default: as many as keep a block's scores near
    /// 2^26 elements); results do not depend on it beyond rounding.
    pub block_rows: Option<usize>,
}

const SDPA: &str = "scaled_dot_product_attention";

impl Tensor {
    /// `softmax(q kᵀ · scale + mask) v` over `q [..., L, E]`, `k [..., S, E]`,
    /// `v [..., S, Ev]` (batch dims broadcast): `[..., L, Ev]`, as
    /// `F.scaled_dot_product_attention`.
    pub fn scaled_dot_product_attention(
        &self,
        k: &Tensor,
        v: &Tensor,
        opts: &AttentionOptions,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        if super::autocast::enabled() {
            let lower = super::autocast::lower;
            let mut o = opts.clone();
            o.attn_mask = opts.attn_mask.as_ref().map(lower).transpose()?;
            let (q, k, v) = (lower(self)?, lower(k)?, lower(v)?);
            let _off = super::autocast::AutocastGuard::new(None)?;
            return q.scaled_dot_product_attention(&k, &v, &o, gen);
        }
        let q = self;
        check_operands(q, k, v, opts)?;
        let e = *q.shape().last().unwrap_or(&1);
        let scale = opts.scale.unwrap_or(1.0 / (e as f64).sqrt());
        let (l, s) = (q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]);
        if opts.enable_gqa {
            gqa_group(q, k, v)?;
        }
        if l > 0 && s > 0 && fused::applies(q, k, v, opts) {
            let how = fused::Fused {
                causal: opts.is_causal,
                scale,
                gqa: opts.enable_gqa,
                dropout: opts.dropout_p,
                // one draw per attention, as the blocked path takes it
                draw: if opts.dropout_p > 0.0 {
                    gen.next_stream()
                } else {
                    (0, 0)
                },
            };
            return fused::attention(q, k, v, how);
        }
        let (k, v) = if opts.enable_gqa {
            share_heads(q, k, v)?
        } else {
            (k.clone(), v.clone())
        };
        let (q, k, v) = blocked::broadcast_batch(q, &k, &v)?;
        let mask = match &opts.attn_mask {
            _ if opts.is_causal => Mask::Causal,
            Some(m) if m.dtype() == DType::Bool => Mask::Keep(m.clone()),
            Some(m) => Mask::Add(m.clone()),
            None => Mask::None,
        };
        if let Some(m) = &opts.attn_mask {
            let mut full = q.shape()[..q.ndim() - 2].to_vec();
            full.extend([l, s]);
            let fits = crate::core::shape::broadcast_shapes(SDPA, m.shape(), &full).is_ok_and(|b| b == full);
            if !fits {
                return Err(Error::shape(
                    SDPA,
                    format!(
                        "attn_mask of shape {:?} does not broadcast to the scores' shape {full:?}",
                        m.shape()
                    ),
                ));
            }
        }
        if l == 0 || s == 0 {
            // no queries, or no keys (every row empty): zeros of the output's shape
            let mut shape = q.shape()[..q.ndim() - 1].to_vec();
            shape.push(v.shape()[v.ndim() - 1]);
            return Tensor::full(&shape, Scalar::Float(0.0), Some(q.dtype()), q.device());
        }
        let batch: usize = q.shape()[..q.ndim() - 2].iter().product();
        let plan = Plan {
            scale,
            mask,
            dropout: opts.dropout_p,
            draw: (opts.dropout_p > 0.0).then(|| gen.next_stream()),
            rows: opts
                .block_rows
                .unwrap_or_else(|| blocked::rows_per_block(batch, l, s))
                .max(1),
        };
        blocked::attention(&q, &k, &v, plan)
    }

    /// `x / √(mean(x², normalized dims) + eps) · weight` over the trailing
    /// `normalized_shape` dims (`F.rms_norm`); `eps` defaults to the dtype's
    /// machine epsilon; half types compute in f32.
    pub fn rms_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        eps: Option<f64>,
    ) -> Result<Tensor> {
        if super::autocast::enabled() {
            let widen = super::autocast::widen;
            let (x, w) = (widen(self)?, weight.map(widen).transpose()?);
            let _off = super::autocast::AutocastGuard::new(None)?;
            return x.rms_norm(normalized_shape, w.as_ref(), eps);
        }
        let n = normalized_shape.len();
        if !self.dtype().is_float() {
            return Err(Error::dtype("rms_norm", self.dtype()));
        }
        if n > self.ndim() || self.shape()[self.ndim() - n..] != *normalized_shape {
            return Err(Error::shape(
                "rms_norm",
                format!(
                    "normalized_shape {normalized_shape:?} does not match the trailing dims of input of shape {:?}",
                    self.shape()
                ),
            ));
        }
        if let Some(w) = weight {
            if w.shape() != normalized_shape {
                return Err(Error::shape(
                    "rms_norm",
                    format!(
                        "weight of shape {:?} does not match normalized_shape {normalized_shape:?}",
                        w.shape()
                    ),
                ));
            }
        }
        let eps = eps.unwrap_or(match self.dtype() {
            DType::F64 => f64::EPSILON,
            DType::F16 => 0.0009765625,
            DType::BF16 => 0.0078125,
            _ => f32::EPSILON as f64,
        });
        let x = match self.dtype() {
            DType::F16 | DType::BF16 => self.to_dtype(DType::F32)?,
            _ => self.clone(),
        };
        let dims: Vec<i64> = (0..n as i64).map(|i| -1 - i).collect();
        let ms = x.mul(&x)?.reduce(ReduceOp::Mean, Some(&dims), true)?;
        let y = x.mul(&ms.add_scalar(eps)?.rsqrt()?)?.to_dtype(self.dtype())?;
        match weight {
            Some(w) => y.mul(w),
            None => Ok(y),
        }
    }

    /// Rotary position embedding of `x [..., L, D]` (D even), rotate-half
    /// form: the pairs `(x[i], x[i + D/2])` turn by `position · base^(-2i/D)`,
    /// positions `offset, offset + 1, ...` along dim -2 (or `positions`, one
    /// per row, for cached decoding).
    pub fn rope(&self, base: f64, offset: i64, positions: Option<&Tensor>) -> Result<Tensor> {
        if self.ndim() < 2 || !self.dtype().is_float() {
            return Err(Error::shape(
                "rope",
                format!(
                    "expected a float tensor [..., L, D], got {:?} of shape {:?}",
                    self.dtype(),
                    self.shape()
                ),
            ));
        }
        let (l, d) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        if d % 2 != 0 {
            return Err(Error::shape(
                "rope",
                format!("the last dim must be even, got shape {:?}", self.shape()),
            ));
        }
        let dev = self.device();
        // the angle tables ([L, D/2]) in f64 whatever the input, so that every
        // device rounds them alike (the GPU's fast f32 exp and sin would
        // differ from the CPU's by more than f32's tolerance at large angles)
        let at = DType::F64;
        let pos = match positions {
            Some(p) if p.numel() == l => p.reshape(&[l as i64, 1])?.to_dtype(at)?,
            Some(p) => {
                return Err(Error::shape(
                    "rope",
                    format!("{} positions for {l} rows (shape {:?})", p.numel(), self.shape()),
                ))
            }
            None => Tensor::arange(
                Scalar::Int(offset),
                Scalar::Int(offset + l as i64),
                Scalar::Int(1),
                Some(at),
                dev,
            )?
            .reshape(&[l as i64, 1])?,
        };
        let half = d / 2;
        let i = Tensor::arange(
            Scalar::Int(0),
            Scalar::Int(half as i64),
            Scalar::Int(1),
            Some(at),
            dev,
        )?;
        let inv_freq = i.mul_scalar(-2.0 * base.ln() / d as f64)?.exp()?;
        let angles = pos.mul(&inv_freq.reshape(&[1, half as i64])?)?; // [L, D/2]
        let (cos, sin) = (
            angles.cos()?.to_dtype(self.dtype())?,
            angles.sin()?.to_dtype(self.dtype())?,
        );
        let (x1, x2) = (
            self.narrow(-1, 0, half as i64)?,
            self.narrow(-1, half as i64, half as i64)?,
        );
        let a = x1.mul(&cos)?.sub(&x2.mul(&sin)?)?;
        let b = x1.mul(&sin)?.add(&x2.mul(&cos)?)?;
        Tensor::cat(&[a, b], -1)
    }
}

/// Shapes, dtypes and options of attention, checked with PyTorch's rules.
fn check_operands(q: &Tensor, k: &Tensor, v: &Tensor, opts: &AttentionOptions) -> Result<()> {
    let shapes = || {
        format!(
            "query {:?}, key {:?}, value {:?}",
            q.shape(),
            k.shape(),
            v.shape()
        )
    };
    if q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2 {
        return Err(Error::shape(
            SDPA,
            format!("expected [..., L, E] operands, got {}", shapes()),
        ));
    }
    if q.dtype() != k.dtype() || q.dtype() != v.dtype() || !q.dtype().is_float() {
        return Err(Error::invalid(
            SDPA,
            format!(
                "expected query, key and value of one float dtype, got {:?}, {:?} and {:?}",
                q.dtype(),
                k.dtype(),
                v.dtype()
            ),
        ));
    }
    let last = |t: &Tensor, i: usize| t.shape()[t.ndim() - i];
    if last(q, 1) != last(k, 1) || last(k, 2) != last(v, 2) {
        return Err(Error::shape(
            SDPA,
            format!(
                "query and key need one embedding size, key and value one length; got {}",
                shapes()
            ),
        ));
    }
    if !(0.0..=1.0).contains(&opts.dropout_p) {
        return Err(Error::invalid(
            SDPA,
            format!("dropout_p must be in [0, 1], got {}", opts.dropout_p),
        ));
    }
    if opts.is_causal && opts.attn_mask.is_some() {
        return Err(Error::invalid(
            SDPA,
            "an explicit attn_mask cannot be given with is_causal=true",
        ));
    }
    if let Some(m) = &opts.attn_mask {
        if m.dtype() != DType::Bool && m.dtype() != q.dtype() {
            return Err(Error::invalid(
                SDPA,
                format!(
                    "attn_mask must be bool or {:?} like the query, got {:?}",
                    q.dtype(),
                    m.dtype()
                ),
            ));
        }
    }
    Ok(())
}

/// Query heads per key/value head under grouped-query attention, checked.
fn gqa_group(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<usize> {
    if q.ndim() < 3 || k.ndim() < 3 || v.ndim() < 3 {
        return Err(Error::shape(
            SDPA,
            format!(
                "enable_gqa needs a heads dim (-3): query {:?}, key {:?}, value {:?}",
                q.shape(),
                k.shape(),
                v.shape()
            ),
        ));
    }
    let heads = |t: &Tensor| t.shape()[t.ndim() - 3];
    let (hq, hk, hv) = (heads(q), heads(k), heads(v));
    if hk == 0 || hk != hv || hq % hk != 0 {
        return Err(Error::shape(
            SDPA,
            format!(
                "enable_gqa: query heads ({hq}) must be a multiple of key and value heads ({hk}, {hv}): query {:?}, key {:?}, value {:?}",
                q.shape(),
                k.shape(),
                v.shape()
            ),
        ));
    }
    Ok(hq / hk)
}

/// Key and value heads repeated to the query's head count (dim -3).
fn share_heads(q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
    let r = gqa_group(q, k, v)? as i64;
    Ok((
        k.repeat_interleave(r, Some(-3))?,
        v.repeat_interleave(r, Some(-3))?,
    ))
}
