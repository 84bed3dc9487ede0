//! The layer functions of `torch.nn.functional` that compose existing ops:
//! `linear`, `bilinear`, `embedding` (with `padding_idx`), functional
//! `dropout`, and the distances `normalize`, `cosine_similarity`,
//! `pairwise_distance` and `cdist`.

use super::{autograd, Generator, Tensor};
use crate::backend::Activation;
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

impl Tensor {
    /// `x @ weight.T + bias` (`F.linear`): `x` `[*, in]`, `weight`
    /// `[out, in]` (or `[in]` for one output), `bias` `[out]` or broadcastable.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        if super::autocast::enabled() {
            let lower = super::autocast::lower;
            let (x, w, b) = (lower(self)?, lower(weight)?, bias.map(lower).transpose()?);
            let _off = super::autocast::AutocastGuard::new(None)?;
            return x.linear(&w, b.as_ref());
        }
        if let Some(y) = self.linear_fused(weight, bias, Activation::Identity)? {
            return Ok(y);
        }
        let y = match weight.ndim() {
            1 => self.matmul(weight)?,
            2 => self.matmul(&weight.t()?)?,
            _ => {
                return Err(Error::shape(
                    "linear",
                    format!("weight must be 1-D or 2-D, got shape {:?}", weight.shape()),
                ))
            }
        };
        match bias {
            Some(b) => y.add(b),
            None => Ok(y),
        }
    }

    /// `act(x @ weight.T + bias)`: with a bias and a 2-D weight on CUDA one
    /// cuBLASLt call (bias and activation in the GEMM's epilogue; the tanh
    /// GELU's backward reads the pre-activation the epilogue also writes),
    /// else [`Tensor::linear`] then the activation. Under autocast the
    /// operands are lowered first, as for `linear`.
    pub fn linear_activation(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        act: Activation,
    ) -> Result<Tensor> {
        if act == Activation::Identity {
            return self.linear(weight, bias);
        }
        if super::autocast::enabled() {
            let lower = super::autocast::lower;
            let (x, w, b) = (lower(self)?, lower(weight)?, bias.map(lower).transpose()?);
            let _off = super::autocast::AutocastGuard::new(None)?;
            return x.linear_activation(&w, b.as_ref(), act);
        }
        if let Some(y) = self.linear_fused(weight, bias, act)? {
            return Ok(y);
        }
        let y = self.linear(weight, bias)?;
        match act {
            Activation::Identity => Ok(y),
            Activation::Relu => y.relu(),
            Activation::GeluTanh => y.gelu_tanh(),
        }
    }

    /// `linear` (then the activation) as one GEMM with the bias in its
    /// epilogue, for a 2-D weight, a bias, and an input that is 2-D or a
    /// contiguous stack of rows (`[*, in]` taken as `[rows, in]`); `None`
    /// where that path does not apply.
    fn linear_fused(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        act: Activation,
    ) -> Result<Option<Tensor>> {
        let (Some(b), 2) = (bias, weight.ndim()) else {
            return Ok(None);
        };
        match self.ndim() {
            2 => Tensor::addmm_fused(b, self, &weight.t()?, act),
            n if n > 2 && self.is_contiguous() => {
                let shape = self.shape();
                let rows = self.reshape(&[-1, shape[n - 1] as i64])?;
                let Some(y) = Tensor::addmm_fused(b, &rows, &weight.t()?, act)? else {
                    return Ok(None);
                };
                let mut out: Vec<i64> = shape[..n - 1].iter().map(|&d| d as i64).collect();
                out.push(weight.shape()[0] as i64);
                y.reshape(&out).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// `x1ᵀ A x2 + b` per output (`F.bilinear`): `x1` `[*, in1]`, `x2`
    /// `[*, in2]`, `weight` `[out, in1, in2]`, `bias` `[out]`.
    pub fn bilinear(&self, x2: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        const OP: &str = "bilinear";
        let (s1, s2, w) = (self.shape(), x2.shape(), weight.shape());
        let ok = w.len() == 3
            && !s1.is_empty()
            && s1.len() == s2.len()
            && s1[..s1.len() - 1] == s2[..s2.len() - 1]
            && s1[s1.len() - 1] == w[1]
            && s2[s2.len() - 1] == w[2];
        if !ok {
            return Err(Error::shape(
                OP,
                format!("expected input1 [*, in1], input2 [*, in2] and weight [out, in1, in2], got {s1:?}, {s2:?} and {w:?}"),
            ));
        }
        let (out, in1, in2) = (w[0] as i64, w[1] as i64, w[2] as i64);
        let lead: Vec<i64> = s1[..s1.len() - 1].iter().map(|&d| d as i64).collect();
        let a = self.reshape(&[-1, in1])?;
        let b = x2.reshape(&[-1, 1, in2])?;
        // x1 · W over in1 for every (out, in2), then · x2 over in2
        let wm = weight.permute(&[1, 0, 2])?.reshape(&[in1, out * in2])?;
        let t = a.matmul(&wm)?.reshape(&[-1, out, in2])?;
        let y = t.mul(&b)?.reduce(ReduceOp::Sum, Some(&[2]), false)?;
        let y = match bias {
            Some(bias) => y.add(bias)?,
            None => y,
        };
        let mut shape = lead;
        shape.push(out);
        y.reshape(&shape)
    }

    /// Rows of `weight` `[n, d]` at the integer indices `self` (any shape):
    /// `[*self.shape, d]`. The row `padding_idx` receives no gradient.
    pub fn embedding(&self, weight: &Tensor, padding_idx: Option<i64>) -> Result<Tensor> {
        const OP: &str = "embedding";
        if weight.ndim() != 2 {
            return Err(Error::shape(
                OP,
                format!(
                    "weight must be 2-D [num_embeddings, dim], got {:?}",
                    weight.shape()
                ),
            ));
        }
        if !self.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                hint: " (the indices must be an integer tensor)".into(),
            });
        }
        let n = weight.shape()[0] as i64;
        let table = match padding_idx {
            Some(p) if p < -n || p >= n => {
                return Err(Error::invalid(
                    OP,
                    format!("padding_idx {p} is out of range for {n} embeddings"),
                ))
            }
            Some(p) => {
                let p = if p < 0 { p + n } else { p };
                let rows = Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(n),
                    Scalar::Int(1),
                    None,
                    weight.device(),
                )?
                .reshape(&[n, 1])?;
                let pad = rows.compare_scalar(CmpOp::Eq, Scalar::Int(p), false)?;
                Tensor::where_cond(&pad, &weight.detach(), weight)?
            }
            None => weight.clone(),
        };
        let mut shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        shape.push(weight.shape()[1] as i64);
        table.index_select(0, &self.reshape(&[-1])?)?.reshape(&shape)
    }

    /// Inverted dropout: while `training`, zeroes each element with
    /// probability `p` and scales the rest by `1 / (1 - p)`.
    pub fn dropout(&self, p: f64, training: bool, gen: &mut Generator) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "dropout",
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        if !training || p == 0.0 {
            return Ok(self.clone());
        }
        let x = self.to_float()?;
        if p == 1.0 {
            return x.mul_scalar(0.0);
        }
        let draw = gen.next_stream();
        x.dropout_draw(p, draw)
    }

    /// Inverted dropout by the Philox draw `draw` (one fused kernel): element
    /// `i` of the data in memory order is kept when the draw's uniform value
    /// `i` is at least `p`, so a channels-last tensor stays channels-last
    /// (as PyTorch's). Its gradient is the same dropout of the output's
    /// gradient, taken in the input's memory order.
    fn dropout_draw(&self, p: f64, draw: (u64, u64)) -> Result<Tensor> {
        self.dropout_in_order(p, draw, super::elementwise::channels_last_perm(self))
    }

    /// [`Tensor::dropout_draw`] with the elements taken in the order `perm`
    /// makes contiguous (the row-major order without one).
    fn dropout_in_order(&self, p: f64, draw: (u64, u64), perm: Option<Vec<i64>>) -> Result<Tensor> {
        let y = autograd::forward(|| -> Result<Tensor> {
            let x = match &perm {
                Some(order) => self.permute(order)?.dense()?,
                None => self.dense()?,
            };
            let out = x.storage().dropout(p, draw)?;
            let y = Tensor::from_storage("dropout", out, x.shape())?;
            match &perm {
                Some(order) => y.permute(&super::elementwise::inverse(order)),
                None => Ok(y),
            }
        })?;
        if !autograd::needs_grad(&[self]) {
            return Ok(y);
        }
        Ok(autograd::record("dropout", &[self], y, move |g, _| {
            Ok(vec![Some(g.dropout_in_order(p, draw, perm)?)])
        }))
    }

    /// `x / max(‖x‖_p, eps)` along `dim` (`F.normalize`).
    pub fn normalize(&self, p: f64, dim: i64, eps: f64) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.normalize(p, dim, eps);
        }
        let x = self.to_float()?;
        let norm = x.vector_norm(p, &[dim], true)?;
        x.div(&norm.maximum_scalar(eps)?)
    }

    /// The cosine of the angle between `self` and `other` along `dim`, each
    /// norm kept at least `eps` (`F.cosine_similarity`; broadcasting).
    pub fn cosine_similarity(&self, other: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(other) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.cosine_similarity(&w(other)?, dim, eps);
        }
        let (a, b) = super::pointwise::floats(self, other)?;
        let shape = crate::core::shape::broadcast_shapes("cosine_similarity", a.shape(), b.shape())?;
        normalize_dim("cosine_similarity", dim, &shape)?;
        let a = a.broadcast_to(&shape)?;
        let b = b.broadcast_to(&shape)?;
        let na = a.vector_norm(2.0, &[dim], true)?.maximum_scalar(eps)?;
        let nb = b.vector_norm(2.0, &[dim], true)?.maximum_scalar(eps)?;
        a.div(&na)?
            .mul(&b.div(&nb)?)?
            .reduce(ReduceOp::Sum, Some(&[dim]), false)
    }

    /// `‖x1 - x2 + eps‖_p` over the last dim (`F.pairwise_distance`).
    pub fn pairwise_distance(&self, other: &Tensor, p: f64, eps: f64, keepdim: bool) -> Result<Tensor> {
        let (a, b) = super::pointwise::floats(self, other)?;
        let d = a.sub(&b)?.add_scalar(eps)?;
        if d.ndim() == 0 {
            return d.abs();
        }
        d.vector_norm(p, &[-1], keepdim)
    }

    /// The p-norm distance between every row of `self` `[*, P, M]` and every
    /// row of `other` `[*, R, M]`: `[*, P, R]` (`torch.cdist`). For p = 2 on
    /// larger inputs the squared norms and one matrix product give it (as
    /// PyTorch's `use_mm_for_euclid_dist_if_necessary`).
    pub fn cdist(&self, other: &Tensor, p: f64) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(other) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.cdist(&w(other)?, p);
        }
        const OP: &str = "cdist";
        let (s1, s2) = (self.shape(), other.shape());
        if s1.len() < 2 || s2.len() < 2 || s1[s1.len() - 1] != s2[s2.len() - 1] {
            return Err(Error::shape(
                OP,
                format!("expected x1 [*, P, M] and x2 [*, R, M] with the same M, got {s1:?} and {s2:?}"),
            ));
        }
        if p < 0.0 {
            return Err(Error::invalid(OP, format!("p must be at least 0, got {p}")));
        }
        let (a, b) = super::pointwise::floats(self, other)?;
        let (rows, cols) = (s1[s1.len() - 2], s2[s2.len() - 2]);
        if p == 2.0 && (rows > 25 || cols > 25) {
            let aa = a.square()?.reduce(ReduceOp::Sum, Some(&[-1]), true)?;
            let bb = b.square()?.reduce(ReduceOp::Sum, Some(&[-1]), true)?;
            let ab = a.matmul(&b.transpose(-1, -2)?)?;
            let d2 = aa.add(&bb.transpose(-1, -2)?)?.sub(&ab.mul_scalar(2.0)?)?;
            return d2.maximum_scalar(1e-30)?.sqrt();
        }
        let diff = a.unsqueeze(-2)?.sub(&b.unsqueeze(-3)?)?;
        diff.vector_norm(p, &[-1], false)
    }
}
