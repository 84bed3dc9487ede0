//! Margin and embedding losses, as `torch.nn.functional` defines them:
//! `margin_ranking_loss`, `hinge_embedding_loss`, `cosine_embedding_loss`
//! and `triplet_margin_loss`. Targets are ±1.

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
}
