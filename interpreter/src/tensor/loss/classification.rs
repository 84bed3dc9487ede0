//! Classification losses, as `torch.nn.functional` defines them:
//! `nll_loss` (class weights, `ignore_index`, `[N, C, d1, ...]` inputs),
//! `cross_entropy` beyond the fused case (class weights, probability
//! targets, extra dims), `binary_cross_entropy`,
//! `binary_cross_entropy_with_logits` (`pos_weight`), `kl_div`,
//! `soft_margin_loss`, `multilabel_soft_margin_loss` and `multi_margin_loss`.

use super::{check_logits, CrossEntropyOptions, Reduction};
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::Scalar;
use crate::tensor::pointwise::floats;
use crate::tensor::{DType, Tensor};

/// The class dim of a `[C]` or `[N, C, ...]` input.
fn class_dim(input: &Tensor) -> usize {
    usize::from(input.ndim() >= 2)
}

/// Checks that integer `target` fits `input` (`[C]` with a 0-dim target, or
/// `[N, C, d...]` with `[N, d...]`).
fn check_labels(op: &'static str, input: &Tensor, target: &Tensor) -> Result<()> {
    if !target.dtype().is_int() {
        return Err(Error::UnsupportedDType {
            op,
            dtype: target.dtype(),
            hint: " (class-index targets must be integers; probabilities need a float target of the input's shape)".into(),
        });
    }
    let s = input.shape();
    let fits = match s.len() {
        0 => false,
        1 => target.ndim() == 0,
        _ => {
            let mut want = s.to_vec();
            want.remove(1);
            target.shape() == want.as_slice()
        }
    };
    if !fits {
        return Err(Error::shape(
            op,
            format!(
                "expected input [C] with a 0-dim target or [N, C, d...] with target [N, d...], got input {s:?} and target {:?}",
                target.shape()
            ),
        ));
    }
    Ok(())
}

/// `weight` as a `[C]` tensor of `like`'s dtype, or an error naming `op`.
fn class_weight(op: &'static str, weight: &Tensor, like: &Tensor, classes: usize) -> Result<Tensor> {
    if weight.shape() != [classes] {
        return Err(Error::shape(
            op,
            format!(
                "weight of shape {:?} must have one entry per class ({classes})",
                weight.shape()
            ),
        ));
    }
    like.same_device(op, weight)?;
    weight.to_dtype(like.dtype())
}

impl Tensor {
    /// The negative log-likelihood of log-probabilities `self` (`[C]` or
    /// `[N, C, d...]`) at the integer `target`: `-w[y] * input[y]`; targets
    /// equal to `ignore_index` add 0, and the mean divides by the sum of the
    /// weights of the targets counted.
    pub fn nll_loss(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        ignore_index: i64,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "nll_loss";
        if crate::tensor::autocast::widens(self) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.nll_loss(target, weight.map(w).transpose()?.as_ref(), ignore_index, r);
        }
        check_labels(OP, self, target)?;
        self.same_device(OP, target)?;
        let x = self.to_float()?;
        let cd = class_dim(&x);
        let classes = x.shape()[cd];
        // class dim last, labels next to it
        let x = x.movedim(&[cd as i64], &[-1])?;
        let ignored = target.compare_scalar(CmpOp::Eq, Scalar::Int(ignore_index), false)?;
        let zero = Tensor::zeros(&[], Some(target.dtype()), target.device())?;
        let safe = Tensor::where_cond(&ignored, &zero, target)?.to_dtype(DType::I64)?;
        let picked = x.gather(-1, &safe.unsqueeze(-1)?)?.squeeze(Some(&[-1]))?;
        let w = match weight {
            Some(w) => class_weight(OP, w, &x, classes)?
                .index_select(0, &safe.reshape(&[-1])?)?
                .reshape(&safe.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())?,
            None => Tensor::ones(&[], Some(x.dtype()), x.device())?.broadcast_to(safe.shape())?,
        };
        let w = Tensor::where_cond(&ignored, &w.constant(0.0)?, &w)?;
        let loss = picked.mul(&w)?.neg()?;
        match r {
            Reduction::Mean => loss.sum()?.div(&w.sum()?),
            r => loss.reduced(r),
        }
    }

    /// Cross-entropy of logits `[C]` or `[N, C, d...]` against class
    /// indices or class probabilities (a float target of the input's
    /// shape), with optional class weights, as `F.cross_entropy`. Integer
    /// targets of `[N, C]` logits without weights take the fused kernel.
    pub fn cross_entropy_with(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        o: &CrossEntropyOptions,
    ) -> Result<Tensor> {
        const OP: &str = "cross_entropy";
        check_logits(self, o)?;
        let probabilities = target.dtype().is_float();
        if weight.is_none() && !probabilities && self.ndim() <= 2 {
            return self.cross_entropy(target, o);
        }
        if self.ndim() == 0 {
            return Err(Error::shape(OP, "the logits must have a class dim"));
        }
        let cd = class_dim(self) as i64;
        let classes = self.shape()[cd as usize];
        let logp = self.log_softmax(cd)?;
        let w = weight.map(|w| class_weight(OP, w, self, classes)).transpose()?;
        // the weight along the class dim of the input
        let w_b = match &w {
            Some(w) => {
                let mut shape = vec![1i64; self.ndim()];
                shape[cd as usize] = classes as i64;
                Some(w.reshape(&shape)?)
            }
            None => None,
        };
        let eps = o.label_smoothing;
        if probabilities {
            if target.shape() != self.shape() {
                return Err(Error::shape(
                    OP,
                    format!(
                        "probability targets must have the input's shape {:?}, got {:?}",
                        self.shape(),
                        target.shape()
                    ),
                ));
            }
            self.same_device(OP, target)?;
            let mut t = target.to_dtype(logp.dtype())?;
            if eps > 0.0 {
                t = t.mul_scalar(1.0 - eps)?.add_scalar(eps / classes as f64)?;
            }
            let mut terms = logp.mul(&t)?;
            if let Some(w) = &w_b {
                terms = terms.mul(w)?;
            }
            let loss = terms.reduce(ReduceOp::Sum, Some(&[cd]), false)?.neg()?;
            return match o.reduction {
                Reduction::Mean if self.ndim() >= 2 => {
                    loss.sum()?.div_scalar((self.numel() / classes.max(1)) as f64)
                }
                r => loss.reduced(r),
            };
        }
        let nll = logp.nll_loss(target, w.as_ref(), o.ignore_index, o.reduction)?;
        if eps == 0.0 {
            return Ok(nll);
        }
        let ignored = target.compare_scalar(CmpOp::Eq, Scalar::Int(o.ignore_index), false)?;
        let weighted = match &w_b {
            Some(w) => logp.mul(w)?,
            None => logp.clone(),
        };
        let smooth = weighted.reduce(ReduceOp::Sum, Some(&[cd]), false)?.neg()?;
        let smooth = Tensor::where_cond(&ignored, &smooth.constant(0.0)?, &smooth)?;
        let smooth = match o.reduction {
            Reduction::None => smooth,
            Reduction::Sum => smooth.sum()?,
            Reduction::Mean => {
                let kept = ignored.logical_not()?;
                let divisor = match &w {
                    Some(w) => {
                        let zero = Tensor::zeros(&[], Some(target.dtype()), target.device())?;
                        let safe = Tensor::where_cond(&ignored, &zero, target)?.to_dtype(DType::I64)?;
                        let wy = w.index_select(0, &safe.reshape(&[-1])?)?;
                        wy.mul(&kept.reshape(&[-1])?.to_dtype(wy.dtype())?)?.sum()?
                    }
                    None => kept.to_dtype(smooth.dtype())?.sum()?,
                };
                smooth.sum()?.div(&divisor)?
            }
        };
        nll.mul_scalar(1.0 - eps)?
            .add(&smooth.mul_scalar(eps / classes as f64)?)
    }

    /// `-w (t log x + (1 - t) log(1 - x))` for probabilities `x`, each log
    /// clamped at -100 (as PyTorch's).
    pub fn binary_cross_entropy(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        r: Reduction,
    ) -> Result<Tensor> {
        if self.shape() != target.shape() {
            return Err(Error::shape(
                "binary_cross_entropy",
                format!(
                    "target shape {:?} must equal input shape {:?}",
                    target.shape(),
                    self.shape()
                ),
            ));
        }
        let (x, t) = floats(self, target)?;
        let log_x = x.log()?.maximum_scalar(-100.0)?;
        let log_1mx = x.neg()?.add_scalar(1.0)?.log()?.maximum_scalar(-100.0)?;
        let loss = t
            .mul(&log_x)?
            .add(&t.neg()?.add_scalar(1.0)?.mul(&log_1mx)?)?
            .neg()?;
        weighted(loss, weight)?.reduced(r)
    }

    /// Binary cross-entropy of logits, computed stably:
    /// `(1 - t) x + (1 + (pos_weight - 1) t) (log(1 + e^-|x|) + max(-x, 0))`.
    pub fn binary_cross_entropy_with_logits(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        pos_weight: Option<&Tensor>,
        r: Reduction,
    ) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(target) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.binary_cross_entropy_with_logits(
                &w(target)?,
                weight.map(w).transpose()?.as_ref(),
                pos_weight.map(w).transpose()?.as_ref(),
                r,
            );
        }
        if self.shape() != target.shape() {
            return Err(Error::shape(
                "binary_cross_entropy_with_logits",
                format!(
                    "target shape {:?} must equal input shape {:?}",
                    target.shape(),
                    self.shape()
                ),
            ));
        }
        let (x, t) = floats(self, target)?;
        let softplus_neg = x
            .abs()?
            .neg()?
            .exp()?
            .log1p()?
            .add(&x.neg()?.maximum_scalar(0.0)?)?;
        let scale = match pos_weight {
            Some(pw) => pw
                .to_dtype(x.dtype())?
                .sub_scalar(1.0)?
                .mul(&t)?
                .add_scalar(1.0)?,
            None => x.constant(1.0)?,
        };
        let loss = t
            .neg()?
            .add_scalar(1.0)?
            .mul(&x)?
            .add(&scale.mul(&softplus_neg)?)?;
        weighted(loss, weight)?.reduced(r)
    }

    /// The Kullback–Leibler divergence of log-probabilities `self` from
    /// `target`: `target (log target - input)` (0 where target is 0), or
    /// `e^target (target - input)` for a log target. `batchmean` divides
    /// the sum by the batch size (dim 0).
    pub fn kl_div(&self, target: &Tensor, reduction: &str, log_target: bool) -> Result<Tensor> {
        if crate::tensor::autocast::widens(self) || crate::tensor::autocast::widens(target) {
            let w = crate::tensor::autocast::widen;
            return w(self)?.kl_div(&w(target)?, reduction, log_target);
        }
        let (x, t) = floats(self, target)?;
        let loss = if log_target {
            t.exp()?.mul(&t.sub(&x)?)?
        } else {
            t.xlogy(&t)?.sub(&t.mul(&x)?)?
        };
        match reduction {
            "batchmean" => {
                let n = if x.ndim() == 0 { 1 } else { x.shape()[0] };
                loss.sum()?.div_scalar(n as f64)
            }
            other => loss.reduced(Reduction::parse("kl_div", other).map_err(|_| {
                Error::invalid(
                    "kl_div",
                    format!(
                        "unknown reduction '{other}' (expected \"none\", \"mean\", \"sum\" or \"batchmean\")"
                    ),
                )
            })?),
        }
    }

    /// `log(1 + e^(-y x))` for targets `y` of ±1.
    pub fn soft_margin_loss(&self, target: &Tensor, r: Reduction) -> Result<Tensor> {
        let (x, y) = floats(self, target)?;
        x.mul(&y)?.neg()?.softplus(1.0, 20.0)?.reduced(r)
    }

    /// `-(y log σ(x) + (1 - y) log σ(-x))` averaged over the classes (the
    /// last dim), optionally weighted per class.
    pub fn multilabel_soft_margin_loss(
        &self,
        target: &Tensor,
        weight: Option<&Tensor>,
        r: Reduction,
    ) -> Result<Tensor> {
        let (x, y) = floats(self, target)?;
        let terms = y
            .mul(&x.logsigmoid()?)?
            .add(&y.neg()?.add_scalar(1.0)?.mul(&x.neg()?.logsigmoid()?)?)?
            .neg()?;
        let terms = weighted(terms, weight)?;
        let dim = if terms.ndim() == 0 {
            None
        } else {
            Some(&[-1i64][..])
        };
        terms.reduce(ReduceOp::Mean, dim, false)?.reduced(r)
    }

    /// The multi-class hinge loss of scores `[N, C]` (or `[C]`) at labels:
    /// `sum over i != y of max(0, margin - x[y] + x[i])^p / C`, times
    /// `weight[y]`.
    pub fn multi_margin_loss(
        &self,
        target: &Tensor,
        p: i64,
        margin: f64,
        weight: Option<&Tensor>,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "multi_margin_loss";
        if p != 1 && p != 2 {
            return Err(Error::invalid(OP, format!("p must be 1 or 2, got {p}")));
        }
        if self.ndim() > 2 {
            return Err(Error::shape(
                OP,
                format!("expected input [N, C] or [C], got {:?}", self.shape()),
            ));
        }
        check_labels(OP, self, target)?;
        let x = self.to_float()?;
        let (x, y) = if x.ndim() == 1 {
            (x.unsqueeze(0)?, target.reshape(&[1])?)
        } else {
            (x, target.clone())
        };
        let classes = x.shape()[1];
        let y = y.to_dtype(DType::I64)?.unsqueeze(1)?;
        let xy = x.gather(1, &y)?;
        let mut h = x.sub(&xy)?.add_scalar(margin)?.maximum_scalar(0.0)?;
        if p == 2 {
            h = h.square()?;
        }
        let cols = Tensor::arange(
            Scalar::Int(0),
            Scalar::Int(classes as i64),
            Scalar::Int(1),
            None,
            x.device(),
        )?;
        let own = cols.reshape(&[1, -1])?.compare(CmpOp::Eq, &y)?;
        let h = Tensor::where_cond(&own, &h.constant(0.0)?, &h)?;
        let mut loss = h
            .reduce(ReduceOp::Sum, Some(&[1]), false)?
            .div_scalar(classes as f64)?;
        if let Some(w) = weight {
            let w = class_weight(OP, w, &x, classes)?;
            loss = loss.mul(&w.index_select(0, &y.reshape(&[-1])?)?)?;
        }
        let loss = if self.ndim() == 1 {
            loss.reshape(&[])?
        } else {
            loss
        };
        loss.reduced(r)
    }
}

/// `loss * weight` (broadcast), or `loss` without a weight.
fn weighted(loss: Tensor, weight: Option<&Tensor>) -> Result<Tensor> {
    match weight {
        Some(w) => loss.mul(&w.to_dtype(loss.dtype())?),
        None => Ok(loss),
    }
}
