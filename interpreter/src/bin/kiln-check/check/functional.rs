//! `torch.nn.functional`'s activations, layer functions, distances,
//! attention (`tensor/activation.rs`, `tensor/functional.rs`,
//! `tensor/attention.rs`) and losses
//! (`tensor/loss/`), the contractions (`tensor/contraction.rs`) and the scans
//! and sorts (`tensor/order.rs`) and selection (`tensor/select.rs`) on both backends, for every dtype and input layout:
//! activations in the input's float dtype, the rest summing in f64.

use super::*;
use kiln::tensor::attention::AttentionOptions;
use kiln::tensor::loss::{CrossEntropyOptions, Reduction};

/// `t` in a float dtype (f32 for integers and bool).
fn float(t: &Tensor) -> Result<Tensor> {
    t.to_float()
}

/// The first 64 columns of `t` as 4 heads `[4, 37, 16]`, in a float dtype.
fn heads(t: &Tensor) -> Result<Tensor> {
    float(t)?.narrow(1, 0, 64)?.reshape(&[-1, 4, 16])?.transpose(0, 1)
}

/// `t` in f64.
fn wide(t: &Tensor) -> Result<Tensor> {
    t.to_dtype(DType::F64)
}

/// Class labels in `[0, classes)` derived from `t`'s values, one per row.
fn labels(t: &Tensor, classes: i64) -> Result<Tensor> {
    wide(t)?
        .select(1, 0)?
        .abs()?
        .mul_scalar(7.0)?
        .remainder_scalar(classes as f64)?
        .to_dtype(DType::I64)
}

/// Values and positions as one f64 tensor (flattened, end to end).
fn joined_pair(parts: Result<Vec<Tensor>>) -> Result<Tensor> {
    let flat = parts?
        .iter()
        .map(|t| wide(t)?.flatten(0, -1))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat, 0)
}

/// ±1 targets from the signs of `t`'s first column.
fn signs(t: &Tensor) -> Result<Tensor> {
    let pos = wide(t)?
        .select(1, 0)?
        .compare_scalar(CmpOp::Ge, Scalar::Float(0.0), false)?;
    let one = Tensor::scalar(Scalar::Int(1), DType::I64, t.device())?;
    Tensor::where_cond(&pos, &one, &one.neg()?)
}

impl Checker {
    /// Each op on both backends from the same input, for every dtype and layout.
    pub(super) fn functional(&mut self) {
        type Op = (&'static str, fn(&Tensor) -> Result<Tensor>);
        let ops: Vec<Op> = vec![
            ("softplus", |t| float(t)?.softplus(2.0, 3.0)),
            ("hardtanh", |t| float(t)?.hardtanh(-2.0, 2.5)),
            ("leaky_relu", |t| float(t)?.leaky_relu(0.1)),
            ("elu", |t| float(t)?.elu(0.5)),
            ("celu", |t| float(t)?.celu(2.0)),
            ("gelu tanh", |t| float(t)?.gelu_tanh()),
            ("tanhshrink", |t| float(t)?.tanhshrink()),
            ("hardshrink", |t| float(t)?.hardshrink(0.5)),
            ("softshrink", |t| float(t)?.softshrink(0.5)),
            ("threshold", |t| t.threshold(1.0, 3.0)),
            ("softmin", |t| float(t)?.softmin(1)),
            ("glu", |t| float(t)?.narrow(1, 0, 64)?.glu(1)),
            ("prelu", |t| {
                let w = Tensor::full(
                    &[t.shape()[1]],
                    Scalar::Float(0.25),
                    Some(t.dtype().to_float()),
                    t.device(),
                )?;
                float(t)?.prelu(&w)
            }),
            ("rrelu train", |t| {
                float(t)?.rrelu(0.1, 0.3, Some(&mut Generator::new(5)))
            }),
            ("dropout", |t| {
                float(t)?.dropout(0.3, true, &mut Generator::new(9))
            }),
            // attention (`tensor/attention.rs`): heads of 16 from the 37 rows
            ("sdpa causal", |t| {
                let x = heads(t)?;
                let opts = AttentionOptions {
                    is_causal: true,
                    ..Default::default()
                };
                x.scaled_dot_product_attention(&x.flip(&[1])?, &x, &opts, &mut Generator::new(1))
            }),
            ("sdpa bool mask, grouped-query heads", |t| {
                let x = heads(t)?;
                let kv = x.narrow(0, 0, 2)?;
                let keep = kv.select(0, 0)?.matmul(&kv.select(0, 1)?.transpose(0, 1)?)?;
                let keep = keep.compare_scalar(CmpOp::Ge, Scalar::Float(0.0), false)?;
                let opts = AttentionOptions {
                    attn_mask: Some(keep),
                    enable_gqa: true,
                    ..Default::default()
                };
                x.scaled_dot_product_attention(&kv, &kv.flip(&[1])?, &opts, &mut Generator::new(1))
            }),
            ("sdpa causal by blocks of 5 rows", |t| {
                let x = heads(t)?;
                let opts = AttentionOptions {
                    is_causal: true,
                    block_rows: Some(5),
                    ..Default::default()
                };
                x.scaled_dot_product_attention(&x, &x.flip(&[1])?, &opts, &mut Generator::new(1))
            }),
            ("sdpa dropout", |t| {
                let x = heads(t)?;
                let opts = AttentionOptions {
                    dropout_p: 0.25,
                    scale: Some(0.1),
                    ..Default::default()
                };
                x.scaled_dot_product_attention(&x, &x, &opts, &mut Generator::new(4))
            }),
            ("rms_norm", |t| float(t)?.rms_norm(&[65], None, Some(1e-5))),
            ("rope", |t| float(t)?.narrow(1, 0, 64)?.rope(10000.0, 3, None)),
            ("normalize", |t| wide(t)?.normalize(2.0, 1, 1e-12)),
            ("linear", |t| {
                let x = wide(t)?;
                x.linear(&x.narrow(0, 0, 5)?, Some(&x.select(0, 1)?.narrow(0, 0, 5)?))
            }),
            ("bilinear", |t| {
                let x = wide(t)?;
                let w = x.narrow(0, 0, 1)?.narrow(1, 0, 60)?.reshape(&[2, 3, 10])?;
                x.narrow(1, 0, 3)?.bilinear(&x.narrow(1, 5, 10)?, &w, None)
            }),
            ("embedding", |t| {
                let i = wide(t)?
                    .abs()?
                    .narrow(0, 0, 9)?
                    .to_dtype(DType::I64)?
                    .remainder_scalar(4)?;
                i.embedding(&wide(t)?.narrow(0, 0, 4)?, Some(2))
            }),
            ("cosine_similarity", |t| {
                wide(t)?.cosine_similarity(&wide(t)?.flip(&[0])?, 1, 1e-8)
            }),
            ("pairwise_distance", |t| {
                wide(t)?.pairwise_distance(&wide(t)?.flip(&[1])?, 3.0, 1e-6, false)
            }),
            // other points than its own (the matmul form loses exact zeros to rounding)
            ("cdist", |t| {
                wide(t)?.cdist(&wide(t)?.narrow(0, 0, 30)?.add_scalar(0.5)?, 2.0)
            }),
            ("cdist p1", |t| wide(t)?.cdist(&wide(t)?.narrow(0, 0, 7)?, 1.0)),
            // contractions (`tensor/contraction.rs`)
            ("einsum", |t| {
                let x = wide(t)?;
                Tensor::einsum("ij,kj->ik", &[x.clone(), x.narrow(0, 0, 9)?])
            }),
            ("einsum diagonal", |t| {
                Tensor::einsum("ii->i", &[wide(t)?.narrow(1, 0, 37)?])
            }),
            ("einsum batched", |t| {
                let x = wide(t)?.narrow(1, 0, 60)?.reshape(&[37, 5, 12])?;
                Tensor::einsum("bij,bkj->bik", &[x.clone(), x])
            }),
            ("tensordot", |t| {
                let x = wide(t)?;
                x.tensordot(&x.narrow(0, 0, 9)?, &[1], &[1])
            }),
            ("kron", |t| {
                t.narrow(0, 0, 3)?.narrow(1, 0, 4)?.kron(&t.narrow(0, 2, 2)?)
            }),
            ("cross", |t| {
                let x = wide(t)?.narrow(1, 0, 6)?;
                x.narrow(1, 0, 3)?.cross(&x.narrow(1, 3, 3)?, Some(1))
            }),
            // scans and sorts (`tensor/order.rs`), in the input's dtype
            ("cumsum", |t| t.cumsum(1, None)),
            ("cumsum dim 0", |t| t.cumsum(0, None)),
            ("cumprod", |t| t.narrow(1, 0, 12)?.cumprod(1, None)),
            ("cummax", |t| joined_pair(t.cummax(1))),
            ("cummin", |t| joined_pair(t.cummin(0))),
            ("logcumsumexp", |t| t.logcumsumexp(1)),
            ("cumsum long row", |t| {
                wide(t)?.reshape(&[-1])?.repeat(&[3])?.cumsum(0, None)
            }),
            ("sort", |t| joined_pair(t.sort(1, false))),
            ("sort descending dim 0", |t| joined_pair(t.sort(0, true))),
            ("sort long row", |t| {
                joined_pair(t.reshape(&[-1])?.repeat(&[3])?.sort(0, false))
            }),
            ("topk", |t| joined_pair(t.topk(5, 1, true))),
            ("kthvalue", |t| joined_pair(t.kthvalue(3, 0, false))),
            ("median", |t| joined_pair(t.median_dim(1, false, false))),
            ("mode", |t| joined_pair(t.mode(1, false))),
            ("searchsorted rows", |t| {
                let sorted = t.sort(1, false)?.swap_remove(0);
                sorted.searchsorted(&t.narrow(1, 0, 9)?, false)
            }),
            ("searchsorted right, shared", |t| {
                let seq = t.select(0, 0)?.sort(0, false)?.swap_remove(0);
                seq.searchsorted(t, true)
            }),
            // selection (`tensor/select.rs`)
            ("nonzero", |t| t.nonzero()),
            ("masked_select", |t| {
                t.masked_select(&wide(t)?.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?)
            }),
            ("masked_scatter", |t| {
                let m = wide(t)?.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?;
                t.masked_scatter(&m, &t.flip(&[0])?)
            }),
            ("index_put", |t| {
                let i = Tensor::from_host(&HostValues::Int(vec![3, 0, 36, 5]), &[4], DType::I64, t.device())?;
                t.index_put(&[i], &t.select(0, 1)?, true)
            }),
            ("scatter", |t| {
                let i: Vec<i64> = (0..37 * 5).map(|k| (k * 13) % 65).collect();
                let i = Tensor::from_host(&HostValues::Int(i), &[37, 5], DType::I64, t.device())?;
                t.scatter(1, &i, &t.narrow(1, 0, 5)?, None)
            }),
            ("scatter_reduce amax", |t| {
                let i: Vec<i64> = (0..37 * 9).map(|k| (k * 7) % 4).collect();
                let i = Tensor::from_host(&HostValues::Int(i), &[37, 9], DType::I64, t.device())?;
                wide(t)?.scatter_reduce(1, &i, &wide(t)?.narrow(1, 3, 9)?, "amax", false)
            }),
            // losses (`tensor/loss/`)
            ("mse_loss", |t| {
                wide(t)?.mse_loss(&wide(t)?.flip(&[0])?, Reduction::Mean)
            }),
            ("smooth_l1_loss", |t| {
                wide(t)?.smooth_l1_loss(&wide(t)?.flip(&[1])?, Reduction::None, 0.5)
            }),
            ("huber_loss", |t| {
                wide(t)?.huber_loss(&wide(t)?.flip(&[0])?, Reduction::Sum, 2.0)
            }),
            ("poisson_nll_loss", |t| {
                wide(t)?.poisson_nll_loss(&wide(t)?.abs()?, false, true, 1e-8, Reduction::None)
            }),
            ("gaussian_nll_loss", |t| {
                let v = wide(t)?.abs()?.add_scalar(0.1)?;
                wide(t)?.gaussian_nll_loss(&wide(t)?.flip(&[0])?, &v, false, 1e-6, Reduction::Mean)
            }),
            ("nll_loss", |t| {
                let w = wide(t)?.select(0, 3)?.abs()?;
                wide(t)?
                    .log_softmax(1)?
                    .nll_loss(&labels(t, 65)?, Some(&w), 4, Reduction::Mean)
            }),
            ("cross_entropy weight smoothing", |t| {
                let w = wide(t)?.select(0, 3)?.abs()?;
                let o = CrossEntropyOptions {
                    label_smoothing: 0.1,
                    ..Default::default()
                };
                wide(t)?.cross_entropy_with(&labels(t, 65)?, Some(&w), &o)
            }),
            ("cross_entropy probabilities", |t| {
                wide(t)?.cross_entropy_with(&wide(t)?.flip(&[1])?.softmax(1)?, None, &Default::default())
            }),
            ("binary_cross_entropy", |t| {
                wide(t)?.sigmoid()?.binary_cross_entropy(
                    &wide(t)?.flip(&[0])?.sigmoid()?,
                    None,
                    Reduction::None,
                )
            }),
            ("binary_cross_entropy_with_logits", |t| {
                let pw = wide(t)?.select(0, 2)?.abs()?;
                wide(t)?.binary_cross_entropy_with_logits(
                    &wide(t)?.flip(&[0])?.sigmoid()?,
                    None,
                    Some(&pw),
                    Reduction::Mean,
                )
            }),
            ("kl_div", |t| {
                wide(t)?
                    .log_softmax(1)?
                    .kl_div(&wide(t)?.flip(&[1])?.softmax(1)?, "batchmean", false)
            }),
            ("multi_margin_loss", |t| {
                wide(t)?.multi_margin_loss(&labels(t, 65)?, 2, 0.5, None, Reduction::None)
            }),
            ("multilabel_soft_margin_loss", |t| {
                wide(t)?.multilabel_soft_margin_loss(&wide(t)?.flip(&[0])?.sigmoid()?, None, Reduction::Mean)
            }),
            ("margin_ranking_loss", |t| {
                let x = wide(t)?;
                x.select(1, 1)?
                    .margin_ranking_loss(&x.select(1, 2)?, &signs(t)?, 0.2, Reduction::None)
            }),
            ("hinge_embedding_loss", |t| {
                wide(t)?
                    .select(1, 3)?
                    .hinge_embedding_loss(&signs(t)?, 1.5, Reduction::Mean)
            }),
            ("cosine_embedding_loss", |t| {
                wide(t)?.cosine_embedding_loss(&wide(t)?.flip(&[1])?, &signs(t)?, 0.1, Reduction::None)
            }),
            ("triplet_margin_loss", |t| {
                let x = wide(t)?;
                x.triplet_margin_loss(
                    &x.flip(&[0])?,
                    &x.flip(&[1])?,
                    1.0,
                    2.0,
                    1e-6,
                    true,
                    Reduction::None,
                )
            }),
        ];
        for dtype in DType::ALL {
            for (layout, shape, view) in layouts() {
                let x = match input(&mut self.gen, &shape, dtype, false).and_then(|t| view(&t)) {
                    Ok(x) => x,
                    Err(e) => {
                        self.record("functional input", dtype, layout, Err(e));
                        continue;
                    }
                };
                for (name, op) in &ops {
                    let r = self.both(&x, op);
                    self.record(name, dtype, layout, r);
                }
            }
        }
    }
}
