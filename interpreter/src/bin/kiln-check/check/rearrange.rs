//! The rearranging ops (`tensor/rearrange.rs`: flip, roll, repeat, tile,
//! repeat_interleave, the splits, movedim, unflatten, unfold, pad and the
//! stacks) and the structure and mask ops (`tensor/structure.rs`: tril,
//! triu, diagonal, diag, diag_embed, trace, masked_fill, take,
//! take_along_dim, one_hot, meshgrid) and the pointwise compositions
//! (`tensor/pointwise.rs`) and the composed reductions
//! (`tensor/statistics.rs`) for every dtype, through every input layout.

use super::*;

impl Checker {
    /// Each op on both backends from the same input, for every dtype and layout.
    pub(super) fn rearrange(&mut self) {
        let ops: Vec<LayoutOp> = vec![
            ("flip", |t| t.flip(&[0, 1])),
            ("fliplr", |t| t.fliplr()),
            ("roll", |t| t.roll(&[3, -5], &[0, 1])),
            ("roll flat", |t| t.roll(&[-7], &[])),
            ("repeat", |t| t.repeat(&[2, 1, 2])),
            ("tile", |t| t.tile(&[3])),
            ("repeat_interleave", |t| t.repeat_interleave(2, Some(1))),
            ("repeat_interleave tensor", |t| {
                let n = t.shape()[0];
                let r: Vec<i64> = (0..n as i64).map(|i| i % 3).collect();
                let r = Tensor::from_host(&HostValues::Int(r), &[n], DType::I64, t.device())?;
                t.repeat_interleave_tensor(&r, Some(0))
            }),
            ("chunk", |t| joined(t.chunk(4, 1))),
            ("split", |t| joined(t.split(6, 0))),
            ("tensor_split", |t| joined(t.tensor_split_at(&[3, 20, 9], 1))),
            ("unbind", |t| joined(t.unbind(0))),
            ("movedim", |t| {
                t.unsqueeze(0)?.movedim(&[0, 2], &[2, 0])?.contiguous()
            }),
            ("unflatten", |t| t.flatten(0, -1)?.unflatten(0, &[-1, 5])),
            ("unfold", |t| t.unfold(1, 4, 3)?.contiguous()),
            ("pad constant", |t| t.pad(&[2, -1, 1, 3], "constant", 1.0)),
            ("pad reflect", |t| t.pad(&[3, 2, 1, 4], "reflect", 0.0)),
            ("pad replicate", |t| t.pad(&[1, 2, 3, 0], "replicate", 0.0)),
            ("pad circular", |t| t.pad(&[4, 5], "circular", 0.0)),
            ("hstack", |t| Tensor::hstack(&[t.clone(), t.clone()])),
            ("vstack", |t| Tensor::vstack(&[t.clone(), t.select(0, 1)?])),
            ("dstack", |t| Tensor::dstack(&[t.clone(), t.clone()])),
            ("column_stack", |t| {
                Tensor::column_stack(&[t.select(1, 0)?, t.clone()])
            }),
            // the structure and mask ops (`tensor/structure.rs`)
            ("tril", |t| t.tril(3)),
            ("triu", |t| t.triu(-2)),
            ("diagonal", |t| t.diagonal(2, 1, 0)?.contiguous()),
            ("diag", |t| t.diag(-3)),
            ("diag_embed", |t| t.narrow(0, 0, 4)?.diag_embed(1, 0, 2)),
            ("trace", |t| t.narrow(1, 0, 30)?.to_dtype(DType::F64)?.trace()),
            ("masked_fill", |t| {
                let mask = t
                    .to_dtype(DType::F64)?
                    .compare_scalar(CmpOp::Gt, Scalar::Float(0.5), false)?;
                t.masked_fill(&mask, &Tensor::scalar(Scalar::Int(1), t.dtype(), t.device())?)
            }),
            ("take", |t| {
                let i: Vec<i64> = (0..40).map(|k| (k * 37 + 11) % t.numel() as i64).collect();
                t.take(&Tensor::from_host(
                    &HostValues::Int(i),
                    &[5, 8],
                    DType::I64,
                    t.device(),
                )?)
            }),
            ("take_along_dim", |t| {
                let i: Vec<i64> = (0..65).map(|k| (k * 7) % 37).collect();
                let i = Tensor::from_host(&HostValues::Int(i), &[1, 65], DType::I64, t.device())?;
                t.take_along_dim(&i, Some(0))
            }),
            ("one_hot", |t| {
                t.to_dtype(DType::F64)?
                    .abs()?
                    .clamp(None, Some(Scalar::Float(9.0)))?
                    .to_dtype(DType::I64)?
                    .one_hot(Some(10))
            }),
            ("meshgrid", |t| {
                joined(Tensor::meshgrid(&[t.select(1, 2)?, t.select(0, 1)?], "xy"))
            }),
            // the pointwise compositions (`tensor/pointwise.rs`), in a float dtype
            ("atan2", |t| t.to_float()?.atan2(&t.to_float()?.flip(&[0])?)),
            ("hypot", |t| t.to_float()?.hypot(&t.to_float()?.flip(&[1])?)),
            ("copysign", |t| t.to_float()?.copysign(&t.to_float()?.flip(&[0])?)),
            ("xlogy", |t| t.to_float()?.xlogy(&t.to_float()?.abs()?)),
            ("logit", |t| t.to_float()?.sigmoid()?.logit(Some(1e-3))),
            ("lerp", |t| {
                let w = Tensor::scalar(Scalar::Float(0.3), t.to_float()?.dtype(), t.device())?;
                t.to_float()?.lerp(&t.to_float()?.flip(&[1])?, &w)
            }),
            ("addcdiv", |t| {
                t.to_float()?
                    .addcdiv(&t.to_float()?, &t.to_float()?.abs()?.add_scalar(1.0)?, 0.5)
            }),
            ("nan_to_num", |t| t.to_float()?.log()?.nan_to_num(0.0, None, None)),
            ("isfinite", |t| t.to_float()?.log()?.isfinite()),
            ("signbit", |t| t.signbit()),
            ("isclose", |t| {
                t.to_float()?
                    .isclose(&t.to_float()?.flip(&[0])?, 1e-2, 1e-1, true)
            }),
            ("addmm", |t| {
                let f = t.to_float()?;
                f.narrow(1, 0, 37)?.addmm(&f, &f.t()?, 0.5, 0.25)
            }),
            ("outer", |t| {
                t.to_float()?.select(0, 0)?.outer(&t.to_float()?.select(1, 1)?)
            }),
            // the composed reductions (`tensor/statistics.rs`), summing in f64
            ("logsumexp", |t| t.to_dtype(DType::F64)?.logsumexp(&[1], false)),
            ("amax", |t| t.amax(&[0, 1], false)),
            ("amin", |t| t.amin(&[1], true)),
            ("count_nonzero", |t| t.count_nonzero(&[0])),
            ("nanmean", |t| t.to_dtype(DType::F64)?.log()?.nanmean(&[1], false)),
            ("var_mean", |t| {
                joined(t.to_dtype(DType::F64)?.var_mean(&[0], 1, false))
            }),
            ("vector_norm 3", |t| {
                t.to_dtype(DType::F64)?.vector_norm(3.0, &[1], false)
            }),
            ("matrix_norm inf", |t| {
                let inf = kiln::tensor::statistics::NormOrd::P(f64::INFINITY);
                t.to_dtype(DType::F64)?.matrix_norm(inf, false)
            }),
            ("cov", |t| t.to_dtype(DType::F64)?.cov(1)),
            ("corrcoef", |t| {
                t.to_dtype(DType::F64)?.narrow(1, 0, 20)?.corrcoef()
            }),
        ];
        self.through_layouts("rearrange", &DType::ALL, &ops, 1.0);
    }
}
