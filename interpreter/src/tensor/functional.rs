//! The layer functions of `torch.nn.functional` that compose existing ops:
//! `linear`, `bilinear`, `embedding` (with `padding_idx`), functional
//! `dropout`, and the distances `normalize`, `cosine_similarity`,
//! `pairwise_distance` and `cdist`.

use super::{autograd, DType, Generator, Tensor};
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

    /// `F.embedding_bag`: the rows of `weight` at the indices `self`,
    /// combined per bag by `mode` (`"sum"`, `"mean"`, `"max"`). Bags are the
    /// rows of a 2-D `self`, or, for a 1-D `self`, the runs starting at
    /// `offsets` (with `include_last_offset` its last entry is the end).
    /// `per_sample_weights` (sum only) weigh each row; `padding_idx` rows
    /// are left out; an empty bag gives zeros. `[bags, dim]`.
    #[allow(clippy::too_many_arguments)]
    pub fn embedding_bag(
        &self,
        weight: &Tensor,
        offsets: Option<&Tensor>,
        mode: &str,
        per_sample_weights: Option<&Tensor>,
        include_last_offset: bool,
        padding_idx: Option<i64>,
    ) -> Result<Tensor> {
        const OP: &str = "embedding_bag";
        if !matches!(mode, "sum" | "mean" | "max") {
            return Err(Error::invalid(
                OP,
                format!("unknown mode '{mode}' (expected sum, mean, max)"),
            ));
        }
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
            return Err(Error::invalid(
                OP,
                format!("the indices must be an integer tensor, got {}", self.dtype()),
            ));
        }
        let dev = self.device();
        let flat = self.reshape(&[-1])?.to_dtype(DType::I64)?;
        let len = flat.numel();
        // the bag of each index
        let (bags, bag) = match (self.ndim(), offsets) {
            (2, None) => {
                let (b, per) = (self.shape()[0], self.shape()[1]);
                let ids = Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(b as i64),
                    Scalar::Int(1),
                    Some(DType::I64),
                    dev,
                )?;
                (b, ids.repeat_interleave(per as i64, Some(0))?)
            }
            (1, Some(o)) => {
                if o.ndim() != 1 || !o.dtype().is_int() {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "offsets must be a 1-D integer tensor, got {} of shape {:?}",
                            o.dtype(),
                            o.shape()
                        ),
                    ));
                }
                let o = o.to_dtype(DType::I64)?.to_device(dev)?;
                // as PyTorch, checked where the offsets can be read without
                // waiting for a device (on the CPU)
                if !dev.is_cuda() && o.numel() > 0 {
                    let v = o.to_vec_as::<i64>()?;
                    let (first, last) = (v[0], v[v.len() - 1]);
                    if first != 0 || last > len as i64 {
                        return Err(Error::invalid(
                            OP,
                            format!(
                                "offsets must start at 0 and end at most at the input's length {len}, got offsets[0] = {first} and offsets[-1] = {last}"
                            ),
                        ));
                    }
                }
                let o = if include_last_offset {
                    if o.numel() == 0 {
                        return Err(Error::shape(OP, "include_last_offset needs at least one offset"));
                    }
                    o.narrow(0, 0, o.numel() as i64 - 1)?
                } else {
                    o
                };
                let positions = Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(len as i64),
                    Scalar::Int(1),
                    Some(DType::I64),
                    dev,
                )?;
                // the last offset at or before each position
                let b = o.searchsorted(&positions, true)?.sub_scalar(1)?;
                (o.numel(), b.clamp(Some(Scalar::Int(0)), None)?)
            }
            (2, Some(_)) => {
                return Err(Error::invalid(
                    OP,
                    "offsets must be absent for a 2-D input (each row is a bag)",
                ))
            }
            _ => {
                return Err(Error::shape(
                    OP,
                    format!(
                        "expects 2-D indices, or 1-D indices with offsets, got shape {:?}",
                        self.shape()
                    ),
                ))
            }
        };
        let rows = flat.embedding(weight, None)?;
        let dim = weight.shape()[1];
        // which indices count (not the padding row)
        let n = weight.shape()[0] as i64;
        let keep = match padding_idx {
            Some(p) if p < -n || p >= n => {
                return Err(Error::invalid(
                    OP,
                    format!("padding_idx {p} is out of range for {n} embeddings"),
                ))
            }
            Some(p) => flat.compare_scalar(CmpOp::Ne, Scalar::Int(if p < 0 { p + n } else { p }), false)?,
            None => Tensor::ones(&[len], Some(DType::Bool), dev)?,
        };
        let keep_f = keep.to_dtype(rows.dtype())?.unsqueeze(1)?;
        let zeros = Tensor::zeros(&[bags, dim], Some(rows.dtype()), dev)?;
        if let Some(w) = per_sample_weights {
            if mode != "sum" {
                return Err(Error::invalid(
                    OP,
                    format!("per_sample_weights only work with mode 'sum', got '{mode}'"),
                ));
            }
            if w.shape() != self.shape() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "per_sample_weights of shape {:?} must have the indices' shape {:?}",
                        w.shape(),
                        self.shape()
                    ),
                ));
            }
        }
        match mode {
            "max" => {
                // left-out rows lose every comparison; empty bags give 0
                let low = rows.constant(f64::NEG_INFINITY)?;
                let vals = Tensor::where_cond(&keep.unsqueeze(1)?, &rows, &low)?;
                let index = bag.unsqueeze(1)?.expand(&[len as i64, dim as i64])?;
                let m = zeros.scatter_reduce(0, &index, &vals, "amax", false)?;
                let counts = Tensor::zeros(&[bags], Some(rows.dtype()), dev)?.index_add(
                    0,
                    &bag,
                    &keep_f.squeeze(Some(&[1]))?,
                )?;
                let empty = counts
                    .compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?
                    .unsqueeze(1)?;
                Tensor::where_cond(&empty, &rows.constant(0.0)?, &m)
            }
            _ => {
                let mut scaled = rows.mul(&keep_f)?;
                if let Some(w) = per_sample_weights {
                    scaled = scaled.mul(&w.reshape(&[-1, 1])?.to_dtype(rows.dtype())?)?;
                }
                let sum = zeros.index_add(0, &bag, &scaled)?;
                if mode == "sum" {
                    return Ok(sum);
                }
                let counts = Tensor::zeros(&[bags], Some(rows.dtype()), dev)?
                    .index_add(0, &bag, &keep_f.squeeze(Some(&[1]))?)?
                    .clamp(Some(Scalar::Float(1.0)), None)?;
                sum.div(&counts.unsqueeze(1)?)
            }
        }
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

    /// `F.alpha_dropout` (`feature` false) and `F.feature_alpha_dropout`
    /// (whole channels of `[N, C, *]`): while `training`, elements (or
    /// channels) are set to SELU's negative saturation with probability `p`
    /// and the result is scaled and shifted so that a SELU network's
    /// activations keep zero mean and unit variance.
    pub fn alpha_dropout(
        &self,
        p: f64,
        training: bool,
        feature: bool,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        let op = if feature {
            "feature_alpha_dropout"
        } else {
            "alpha_dropout"
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                op,
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        if feature && self.ndim() < 2 {
            return Err(Error::shape(
                op,
                format!(
                    "expects at least 2 dims [N, C, ...], got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let x = self.to_float()?;
        if !training || p == 0.0 {
            return Ok(x);
        }
        if p == 1.0 {
            return x.mul_scalar(0.0);
        }
        let shape: Vec<usize> = if feature {
            let mut s = x.shape()[..2].to_vec();
            s.extend(std::iter::repeat_n(1, x.ndim() - 2));
            s
        } else {
            x.shape().to_vec()
        };
        // -SELU's scale × alpha: where SELU saturates
        const ALPHA: f64 = 1.758_099_340_847_376_6;
        let a = 1.0 / ((ALPHA * ALPHA * p + 1.0) * (1.0 - p)).sqrt();
        let keep = Tensor::rand(&shape, Some(x.dtype()), x.device(), gen)?
            .compare_scalar(CmpOp::Ge, Scalar::Float(p), false)?
            .to_dtype(x.dtype())?;
        // x · keep · a + (keep - 1) · α a + α a p
        let shift = keep
            .sub_scalar(1.0)?
            .mul_scalar(ALPHA * a)?
            .add_scalar(ALPHA * a * p)?;
        x.mul(&keep.mul_scalar(a)?)?.add(&shift)
    }

    /// `F.gumbel_softmax`: `softmax((logits + g) / tau)` along `dim` with
    /// Gumbel noise `g`; `hard` gives the one-hot of its argmax in the
    /// forward pass and the soft sample's gradient (straight through).
    pub fn gumbel_softmax(&self, tau: f64, hard: bool, dim: i64, gen: &mut Generator) -> Result<Tensor> {
        const OP: &str = "gumbel_softmax";
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("expects float logits, got {}", self.dtype()),
            ));
        }
        if tau <= 0.0 || !tau.is_finite() {
            return Err(Error::invalid(
                OP,
                format!("tau must be positive and finite, got {tau}"),
            ));
        }
        // -ln(E), E ~ Exp(1): E = -ln(1 - u)
        let u = Tensor::rand(self.shape(), Some(self.dtype()), self.device(), gen)?;
        let gumbel = u.neg()?.log1p()?.neg()?.log()?.neg()?;
        let y = self.add(&gumbel)?.div_scalar(tau)?.softmax(dim)?;
        if !hard {
            return Ok(y);
        }
        let d = normalize_dim(OP, dim, self.shape())? as i64;
        let index = y.detach().reduce(ReduceOp::ArgMax, Some(&[d]), true)?;
        let one = Tensor::scalar(Scalar::Float(1.0), y.dtype(), y.device())?;
        let y_hard = y.detach().zeros_like()?.scatter(d, &index, &one, None)?;
        y_hard.sub(&y.detach())?.add(&y)
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

    /// The p-norm distances between the rows of `self` `[N, M]`, each pair
    /// `i < j` once, in row-major order: `N (N - 1) / 2` values
    /// (`torch.pdist`).
    pub fn pdist(&self, p: f64) -> Result<Tensor> {
        const OP: &str = "pdist";
        if self.ndim() != 2 {
            return Err(Error::shape(
                OP,
                format!("expects a 2-D input [N, M], got shape {:?}", self.shape()),
            ));
        }
        if p < 0.0 {
            return Err(Error::invalid(OP, format!("p must be non-negative, got {p}")));
        }
        let n = self.shape()[0] as i64;
        let pairs = Tensor::triangle_indices(n, n, 1, true, self.device())?;
        let x = self.to_float()?;
        let (i, j) = (pairs.select(0, 0)?, pairs.select(0, 1)?);
        x.index_select(0, &i)?
            .sub(&x.index_select(0, &j)?)?
            .vector_norm(p, &[1], false)
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
