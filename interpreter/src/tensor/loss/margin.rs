//! Margin and embedding losses, as `torch.nn.functional` defines them:
//! `margin_ranking_loss`, `hinge_embedding_loss`, `cosine_embedding_loss`
//! (targets ±1), `triplet_margin_loss` and `triplet_margin_with_distance_loss` (a
//! distance of the caller's), and `multilabel_margin_loss`
//! (targets: class indices, ended by -1).

use super::Reduction;
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::Scalar;
use crate::tensor::pointwise::floats;
use crate::tensor::Tensor;

impl Tensor {
    /// `max(0, -y (x1 - x2) + margin)`.
    pub fn margin_ranking_loss(
        &self,
        x2: &Tensor,
        target: &Tensor,
        margin: f64,
        r: Reduction,
    ) -> Result<Tensor> {
        let (a, b) = floats(self, x2)?;
        let y = target.to_dtype(a.dtype())?;
        y.mul(&a.sub(&b)?)?
            .neg()?
            .add_scalar(margin)?
            .maximum_scalar(0.0)?
            .reduced(r)
    }

    /// `x` where the target is 1, `max(0, margin - x)` where it is -1.
    pub fn hinge_embedding_loss(&self, target: &Tensor, margin: f64, r: Reduction) -> Result<Tensor> {
        let x = self.to_float()?;
        let zero = x.constant(0.0)?;
        let hinge = x.neg()?.add_scalar(margin)?.maximum_scalar(0.0)?;
        let not_pos = target.compare_scalar(CmpOp::Ne, Scalar::Int(1), false)?;
        let not_neg = target.compare_scalar(CmpOp::Ne, Scalar::Int(-1), false)?;
        Tensor::where_cond(&not_pos, &hinge, &zero)?
            .add(&Tensor::where_cond(&not_neg, &x, &zero)?)?
            .reduced(r)
    }

    /// `1 - cos(x1, x2)` where the target is 1, `max(0, cos - margin)` where
    /// it is -1; the cosine is taken along dim 1 of `[N, D]` inputs (dim 0 of
    /// `[D]` ones), each squared norm plus 1e-12.
    pub fn cosine_embedding_loss(
        &self,
        x2: &Tensor,
        target: &Tensor,
        margin: f64,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "cosine_embedding_loss";
        let (a, b) = floats(self, x2)?;
        let ok = a.shape() == b.shape()
            && matches!(a.ndim(), 1 | 2)
            && target.ndim() + 1 == a.ndim()
            && (a.ndim() == 1 || target.shape()[0] == a.shape()[0]);
        if !ok {
            return Err(Error::shape(
                OP,
                format!(
                    "expected inputs [N, D] with target [N] (or [D] with a 0-dim target), got {:?}, {:?} and {:?}",
                    a.shape(),
                    b.shape(),
                    target.shape()
                ),
            ));
        }
        let dim = [a.ndim() as i64 - 1];
        let sum = |t: Tensor| t.reduce(ReduceOp::Sum, Some(&dim), false);
        let dot = sum(a.mul(&b)?)?;
        let na = sum(a.square()?)?.add_scalar(1e-12)?;
        let nb = sum(b.square()?)?.add_scalar(1e-12)?;
        let cos = dot.div(&na.mul(&nb)?.sqrt()?)?;
        let zero = cos.constant(0.0)?;
        let pos = target.compare_scalar(CmpOp::Eq, Scalar::Int(1), false)?;
        let neg = target.compare_scalar(CmpOp::Eq, Scalar::Int(-1), false)?;
        let lp = Tensor::where_cond(&pos, &cos.neg()?.add_scalar(1.0)?, &zero)?;
        let ln = Tensor::where_cond(&neg, &cos.sub_scalar(margin)?.maximum_scalar(0.0)?, &zero)?;
        lp.add(&ln)?.reduced(r)
    }

    /// `max(d(a, p) - d(a, n) + margin, 0)` with `d` the pairwise p-norm
    /// distance (eps added); `swap` uses `min(d(a, n), d(p, n))`.
    #[allow(clippy::too_many_arguments)]
    pub fn triplet_margin_loss(
        &self,
        positive: &Tensor,
        negative: &Tensor,
        margin: f64,
        p: f64,
        eps: f64,
        swap: bool,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "triplet_margin_loss";
        let n = self.ndim();
        if positive.ndim() != n || negative.ndim() != n || !matches!(n, 1 | 2) {
            return Err(Error::shape(
                OP,
                format!(
                    "anchor, positive and negative must all be [N, D] or all [D], got {:?}, {:?} and {:?}",
                    self.shape(),
                    positive.shape(),
                    negative.shape()
                ),
            ));
        }
        let d_ap = self.pairwise_distance(positive, p, eps, false)?;
        let mut d_an = self.pairwise_distance(negative, p, eps, false)?;
        if swap {
            let d_pn = positive.pairwise_distance(negative, p, eps, false)?;
            d_an = d_an.minimum(&d_pn)?;
        }
        d_ap.sub(&d_an)?
            .add_scalar(margin)?
            .maximum_scalar(0.0)?
            .reduced(r)
    }

    /// `max(d(a, p) - d(a, n) + margin, 0)` with any distance `d` of two
    /// batches (`F.triplet_margin_with_distance_loss`; PyTorch's default is
    /// [`Tensor::pairwise_distance`]); `swap` uses `min(d(a, n), d(p, n))`.
    pub fn triplet_margin_with_distance_loss(
        &self,
        positive: &Tensor,
        negative: &Tensor,
        distance: &mut dyn FnMut(&Tensor, &Tensor) -> Result<Tensor>,
        margin: f64,
        swap: bool,
        r: Reduction,
    ) -> Result<Tensor> {
        const OP: &str = "triplet_margin_with_distance_loss";
        if positive.ndim() != self.ndim() || negative.ndim() != self.ndim() {
            return Err(Error::shape(
                OP,
                format!(
                    "anchor, positive and negative must have the same number of dimensions, got {:?}, {:?} and {:?}",
                    self.shape(),
                    positive.shape(),
                    negative.shape()
                ),
            ));
        }
        if margin <= 0.0 {
            return Err(Error::invalid(
                OP,
                format!("margin must be greater than 0, got {margin}"),
            ));
        }
        let d_ap = distance(self, positive)?;
        let mut d_an = distance(self, negative)?;
        if swap {
            d_an = d_an.minimum(&distance(positive, negative)?)?;
        }
        d_ap.sub(&d_an)?
            .add_scalar(margin)?
            .maximum_scalar(0.0)?
            .reduced(r)
    }

    /// The multi-class multi-label hinge loss of scores `[N, C]` (or `[C]`):
    /// each row of `target` lists its classes, ended by the first -1;
    /// `Σ_{j in y} Σ_{i not in y} max(0, 1 - (x[j] - x[i])) / C`.
    pub fn multilabel_margin_loss(&self, target: &Tensor, r: Reduction) -> Result<Tensor> {
        const OP: &str = "multilabel_margin_loss";
        if self.ndim() > 2 || target.shape() != self.shape() || !target.dtype().is_int() {
            return Err(Error::shape(
                OP,
                format!(
                    "expects input [N, C] or [C] and an integer target of the same shape, got {:?} and {} {:?}",
                    self.shape(),
                    target.dtype(),
                    target.shape()
                ),
            ));
        }
        let x = self.to_float()?;
        let (x, y) = if x.ndim() == 1 {
            (x.unsqueeze(0)?, target.unsqueeze(0)?)
        } else {
            (x, target.clone())
        };
        let classes = x.shape()[1] as i64;
        let y = y.to_dtype(crate::core::DType::I64)?;
        // the listed labels: those before the first -1
        let listed = y
            .compare_scalar(CmpOp::Ne, Scalar::Int(-1), false)?
            .to_dtype(crate::core::DType::I64)?
            .cumprod(1, None)?;
        let bad = y
            .compare_scalar(CmpOp::Lt, Scalar::Int(0), false)?
            .binary(
                crate::core::op::BinaryOp::BitOr,
                &y.compare_scalar(CmpOp::Ge, Scalar::Int(classes), false)?,
            )?
            .to_dtype(crate::core::DType::I64)?
            .mul(&listed)?;
        if bad.reduce(ReduceOp::Sum, None, false)?.item()?.to_i64() > 0 {
            return Err(Error::invalid(
                OP,
                format!("target labels must be in [0, {classes}) before the first -1"),
            ));
        }
        // is_target[n, c]: 1 where class c is listed for sample n
        let is_target = x.zeros_like()?.scatter_reduce(
            1,
            &y.clamp(Some(Scalar::Int(0)), None)?,
            &listed.to_dtype(x.dtype())?,
            "amax",
            true,
        )?;
        // margins[n, j, i] = 1 - x[n, j] + x[n, i]
        let margins = x
            .unsqueeze(2)?
            .neg()?
            .add(&x.unsqueeze(1)?)?
            .add_scalar(1.0)?
            .maximum_scalar(0.0)?;
        let pairs = is_target
            .unsqueeze(2)?
            .mul(&is_target.neg()?.add_scalar(1.0)?.unsqueeze(1)?)?;
        let per = margins
            .mul(&pairs)?
            .reduce(ReduceOp::Sum, Some(&[1, 2]), false)?
            .div_scalar(classes as f64)?;
        let per = if self.ndim() == 1 { per.reshape(&[])? } else { per };
        per.reduced(r)
    }
}
