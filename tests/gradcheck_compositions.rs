//! Gradient checks of the ops composed from others in the front-end
//! (rearranging, structure, pointwise math, composed reductions, the
//! activations, layer functions and losses of `torch.nn.functional`): each
//! backward against central finite differences in f64 on the CPU.

mod common;

use common::*;
use kiln::backend::Activation;
use kiln::tensor::integrate::Spacing;
use kiln::tensor::loss::{CrossEntropyOptions, Reduction};
use kiln::tensor::HostValues;
use kiln::{DType, Device, Result, Scalar, Tensor};

#[test]
fn rearranging_ops() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("flip", &[2, 3, 4], |x| x.flip(&[0, 2])),
        ("flip of a transpose", &[3, 4], |x| x.t()?.flip(&[1])),
        ("rot90", &[2, 3, 4], |x| x.rot90(1, &[1, 2])),
        ("rot90 thrice", &[3, 4], |x| x.rot90(-1, &[0, 1])),
        ("roll flat", &[3, 4], |x| x.roll(&[5], &[])),
        ("roll dims", &[2, 3, 4], |x| x.roll(&[1, -2], &[0, 2])),
        ("repeat", &[2, 3], |x| x.repeat(&[2, 1, 3])),
        ("tile", &[2, 3], |x| x.tile(&[2])),
        ("repeat_interleave", &[2, 3], |x| x.repeat_interleave(3, Some(1))),
        ("repeat_interleave tensor", &[3, 2], |x| {
            let r = Tensor::from_host(&HostValues::Int(vec![2, 0, 3]), &[3], DType::I64, Device::Cpu)?;
            x.repeat_interleave_tensor(&r, Some(0))
        }),
        ("chunk", &[5, 3], |x| {
            let parts = x.chunk(2, 0)?;
            parts[1].mul(&parts[1])?.sum()
        }),
        ("split sizes", &[4, 5], |x| {
            let parts = x.split_sizes(&[2, 3], 1)?;
            parts[0].sum()?.mul(&parts[1].sum()?)
        }),
        ("tensor_split at", &[7], |x| {
            Tensor::stack(&x.tensor_split_at(&[2, 4], 0)?[1..2], 0)
        }),
        ("unbind", &[3, 4], |x| x.unbind(1)?[2].exp()),
        ("movedim", &[2, 3, 4], |x| x.movedim(&[0], &[2])),
        ("unflatten", &[2, 6], |x| x.unflatten(1, &[3, -1])),
        ("unfold overlapping", &[3, 7], |x| x.unfold(1, 3, 2)),
        ("unfold step 1 of a transpose", &[5, 3], |x| {
            x.t()?.unfold(1, 2, 1)
        }),
        ("pad constant and crop", &[3, 4], |x| {
            x.pad(&[2, -1, 1, 1], "constant", 0.5)
        }),
        ("pad reflect", &[3, 4], |x| x.pad(&[2, 3, 1, 2], "reflect", 0.0)),
        ("pad replicate", &[3, 4], |x| {
            x.pad(&[1, 2, 2, 0], "replicate", 0.0)
        }),
        ("pad circular", &[3, 4], |x| x.pad(&[3, 1], "circular", 0.0)),
        ("hstack", &[2, 3], |x| Tensor::hstack(&[x.clone(), x.mul(x)?])),
        ("dstack", &[2, 3], |x| Tensor::dstack(&[x.clone(), x.exp()?])),
        ("column_stack", &[4], |x| {
            Tensor::column_stack(&[x.clone(), x.exp()?])
        }),
    ];
    for (name, shape, f) in cases {
        let x = uni(&mut Rng::new(name), shape, -1.0, 1.0);
        gradcheck(name, &[x], |x| f(&x[0])?.exp());
    }
}

#[test]
fn structure_ops() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("tril", &[3, 4], |x| x.tril(0)),
        ("triu batched", &[2, 3, 4], |x| x.triu(-1)),
        ("diagonal", &[4, 3], |x| x.diagonal(1, 1, 0)),
        ("diagonal of a permute", &[2, 3, 4], |x| {
            x.permute(&[2, 0, 1])?.diagonal(-1, 0, 2)
        }),
        ("diag of a vector", &[3], |x| x.diag(1)),
        ("diag of a matrix", &[3, 3], |x| x.diag(-1)),
        ("diag_embed", &[2, 3], |x| x.diag_embed(0, -2, -1)),
        ("diagflat", &[2, 2], |x| x.diagflat(-2)),
        ("trace", &[3, 5], |x| x.trace()),
        ("masked_fill", &[3, 4], |x| {
            let mask = x.compare_scalar(kiln::core::op::CmpOp::Gt, Scalar::Float(0.2), false)?;
            x.masked_fill(
                &mask,
                &Tensor::scalar(Scalar::Float(0.5), DType::F64, Device::Cpu)?,
            )
        }),
        ("take", &[3, 4], |x| {
            x.take(&Tensor::from_host(
                &HostValues::Int(vec![0, 5, 5, 11]),
                &[2, 2],
                DType::I64,
                Device::Cpu,
            )?)
        }),
        ("take_along_dim", &[3, 4], |x| {
            let i = Tensor::from_host(
                &HostValues::Int(vec![2, 0, 2, 1]),
                &[1, 4],
                DType::I64,
                Device::Cpu,
            )?;
            x.take_along_dim(&i, Some(0))
        }),
    ];
    for (name, shape, f) in cases {
        let x = uni(&mut Rng::new(name), shape, -1.0, 1.0);
        gradcheck(name, &[x], |x| f(&x[0])?.exp());
    }
}

#[test]
fn pointwise_compositions() {
    type TwoFn = fn(&Tensor, &Tensor) -> Result<Tensor>;
    /// name, the two shapes, how far from zero the inputs stay (0: anywhere), the op
    type Case<'a> = (&'a str, &'a [usize], &'a [usize], f64, TwoFn);
    let cases: &[Case] = &[
        ("atan2", &[3, 4], &[3, 4], 0.3, |a, b| a.atan2(b)),
        ("logaddexp", &[3, 4], &[4], 0.0, |a, b| a.logaddexp(b)),
        ("logaddexp2", &[3, 4], &[3, 4], 0.0, |a, b| a.logaddexp2(b)),
        ("fmax", &[3, 4], &[3, 4], 0.0, |a, b| a.fmax(b)),
        ("fmin", &[3, 4], &[4], 0.0, |a, b| a.fmin(b)),
        ("trapezoid", &[3, 4], &[4], 0.0, |a, b| {
            a.trapezoid(Spacing::Points(b), -1)
        }),
        ("cumulative_trapezoid", &[3, 4], &[3, 4], 0.0, |a, b| {
            a.cumulative_trapezoid(Spacing::Points(b), 1)
        }),
        ("hypot", &[3, 4], &[4], 0.3, |a, b| a.hypot(b)),
        ("copysign", &[3, 4], &[3, 4], 0.3, |a, b| a.copysign(b)),
        ("xlogy", &[3, 4], &[3, 4], 0.3, |a, b| a.xlogy(&b.abs()?)),
        ("lerp", &[3, 4], &[3, 4], 0.0, |a, b| a.lerp(b, &b.mul(a)?)),
        ("addcmul", &[3, 4], &[4], 0.0, |a, b| a.addcmul(b, a, 0.7)),
        ("addcdiv", &[3, 4], &[4], 0.3, |a, b| a.addcdiv(a, b, -1.5)),
        ("clamp with tensors", &[3, 4], &[4], 0.0, |a, b| {
            a.clamp_tensor(Some(b), Some(&b.add_scalar(0.5)?))
        }),
        ("addmm", &[3, 4], &[4, 4], 0.0, |a, b| {
            b.narrow(0, 0, 3)?.addmm(a, b, 0.5, 2.0)
        }),
        ("addmv", &[3, 4], &[4], 0.0, |a, b| {
            b.narrow(0, 0, 3)?.addmv(a, b, 1.5, -1.0)
        }),
        ("baddbmm", &[2, 3, 4], &[2, 4, 3], 0.0, |a, b| {
            b.matmul(a)?.baddbmm(b, a, 0.5, 1.0)
        }),
        ("addbmm", &[2, 3, 4], &[2, 4, 3], 0.0, |a, b| {
            a.select(0, 0)?.matmul(&b.select(0, 0)?)?.addbmm(a, b, 1.0, 0.5)
        }),
        ("outer", &[3], &[4], 0.0, |a, b| a.outer(b)),
    ];
    for (name, sa, sb, away, f) in cases {
        let mut rng = Rng::new(name);
        // away from zero where the op has a kink or a pole there
        let (a, b) = if *away > 0.0 {
            (sgn(&mut rng, sa, *away, 1.5), sgn(&mut rng, sb, *away, 1.5))
        } else {
            (uni(&mut rng, sa, -1.0, 1.0), uni(&mut rng, sb, -1.0, 1.0))
        };
        gradcheck(name, &[a, b], |x| f(&x[0], &x[1]));
    }
    let p = uni(&mut Rng::new("logit"), &[3, 4], 0.1, 0.9);
    gradcheck("logit", &[p], |x| x[0].logit(None));
}

#[test]
fn composed_reductions() {
    use kiln::tensor::statistics::NormOrd;
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("logsumexp", &[3, 4], |x| x.logsumexp(&[1], false)),
        ("logsumexp keepdim", &[2, 3, 4], |x| x.logsumexp(&[0, 2], true)),
        ("nanmean", &[3, 4], |x| x.nanmean(&[0], false)),
        ("nansum", &[3, 4], |x| x.nansum(&[1], true)),
        ("var_mean", &[3, 4], |x| {
            let vm = x.var_mean(&[1], 1, false)?;
            vm[0].mul(&vm[1])
        }),
        ("vector_norm 2", &[3, 4], |x| x.vector_norm(2.0, &[], false)),
        ("vector_norm 3 over dim", &[3, 4], |x| {
            x.vector_norm(3.0, &[1], true)
        }),
        ("matrix_norm fro", &[2, 3, 4], |x| {
            x.matrix_norm(NormOrd::Fro, false)
        }),
        ("matrix_norm 1", &[3, 4], |x| {
            x.matrix_norm(NormOrd::P(1.0), false)
        }),
        ("cov", &[3, 5], |x| x.cov(1)),
        ("corrcoef", &[3, 5], |x| x.corrcoef()),
    ];
    for (name, shape, f) in cases {
        let x = sgn(&mut Rng::new(name), shape, 0.2, 1.5);
        gradcheck(name, &[x], |x| f(&x[0]));
    }
}

fn labels(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Int(v.to_vec()), shape, DType::I64, Device::Cpu).unwrap()
}

#[test]
fn activations() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, OpFn)] = &[
        ("softplus", |x| x.softplus(1.0, 20.0)),
        ("softplus beta threshold", |x| x.softplus(2.0, 1.0)),
        ("hardtanh", |x| x.hardtanh(-1.0, 1.0)),
        ("leaky_relu", |x| x.leaky_relu(0.1)),
        ("elu", |x| x.elu(0.7)),
        ("celu", |x| x.celu(2.0)),
        ("gelu tanh", |x| x.gelu_tanh()),
        ("tanhshrink", |x| x.tanhshrink()),
        ("hardshrink", |x| x.hardshrink(0.5)),
        ("softshrink", |x| x.softshrink(0.5)),
        ("threshold", |x| x.threshold(0.1, 3.0)),
        ("softmin", |x| x.softmin(1)),
        ("glu", |x| x.glu(-1)),
        ("glu dim 0", |x| x.glu(0)),
        ("rrelu eval", |x| x.rrelu(0.1, 0.3, None)),
        ("normalize", |x| x.normalize(2.0, 1, 1e-12)),
        ("normalize p1", |x| x.normalize(1.0, 0, 1e-12)),
    ];
    for (name, f) in cases {
        // magnitudes avoid the kinks at 0, ±0.5, ±1 and 0.1
        let mut x = sgn(&mut Rng::new(name), &[4, 6], 0.15, 1.6);
        for v in &mut x.values {
            for k in [0.5, 1.0] {
                if (v.abs() - k).abs() < 0.02 {
                    *v += 0.05;
                }
            }
        }
        gradcheck(name, &[x], |x| f(&x[0]));
    }
}

#[test]
fn layer_functions_and_distances() {
    let mut rng = Rng::new("layers");
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let w = sgn(&mut rng, &[2, 4], 0.2, 1.5);
    let b = sgn(&mut rng, &[2], 0.2, 1.5);
    gradcheck("linear", &[x, w, b], |t| t[0].linear(&t[1], Some(&t[2])));
    // with the fused activations (`linear(x, w, b, #{activation})`)
    for act in [Activation::Relu, Activation::GeluTanh] {
        let name = format!("linear {act:?}");
        let mut rng = Rng::new(&name);
        let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
        let w = sgn(&mut rng, &[2, 4], 0.2, 1.5);
        let b = sgn(&mut rng, &[2], 0.2, 1.5);
        gradcheck(&name, &[x, w, b], |t| {
            t[0].linear_activation(&t[1], Some(&t[2]), act)
        });
    }
    let x1 = sgn(&mut rng, &[3, 2], 0.2, 1.5);
    let x2 = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let w = sgn(&mut rng, &[5, 2, 4], 0.2, 1.5);
    let b = sgn(&mut rng, &[5], 0.2, 1.5);
    gradcheck("bilinear", &[x1, x2, w, b], |t| {
        t[0].bilinear(&t[1], &t[2], Some(&t[3]))
    });
    let x = sgn(&mut rng, &[2, 3, 2], 0.2, 1.5);
    let w = sgn(&mut rng, &[3], 0.1, 0.9);
    gradcheck("prelu", &[x, w], |t| t[0].prelu(&t[1]));
    let table = sgn(&mut rng, &[5, 3], 0.2, 1.5);
    gradcheck("embedding", &[table], |t| {
        labels(&[1, 3, 3, 0, 4, 1], &[2, 3]).embedding(&t[0], None)
    });
    // the padding row is read but, as in PyTorch, never receives a gradient
    let table = Tensor::ones(&[5, 3], Some(DType::F64), Device::Cpu).unwrap();
    table.set_requires_grad(true).unwrap();
    let y = labels(&[1, 3, 3, 0], &[4]).embedding(&table, Some(-2)).unwrap();
    assert_eq!(values(&y), vec![1.0; 12]);
    y.sum().unwrap().backward().unwrap();
    let g = grad_of(&table);
    assert_eq!(g, [1., 1., 1., 1., 1., 1., 0., 0., 0., 0., 0., 0., 0., 0., 0.]);
    let a = sgn(&mut rng, &[4, 3], 0.2, 1.5);
    let c = sgn(&mut rng, &[4, 3], 0.2, 1.5);
    gradcheck("cosine_similarity", &[a, c], |t| {
        t[0].cosine_similarity(&t[1], 1, 1e-8)
    });
    for p in [1.0, 2.0, 3.0] {
        let a = sgn(&mut rng, &[4, 3], 0.2, 1.5);
        let c = sgn(&mut rng, &[4, 3], 0.2, 1.5);
        gradcheck(&format!("pairwise_distance p{p}"), &[a, c], move |t| {
            t[0].pairwise_distance(&t[1], p, 1e-6, false)
        });
    }
    for (p, rows) in [(2.0, 3), (2.0, 30), (1.0, 3)] {
        let a = sgn(&mut rng, &[2, rows, 3], 0.2, 1.5);
        let c = sgn(&mut rng, &[2, 4, 3], 0.2, 1.5);
        gradcheck(&format!("cdist p{p} rows {rows}"), &[a, c], move |t| {
            t[0].cdist(&t[1], p)
        });
    }
}

#[test]
fn losses() {
    let mut rng = Rng::new("losses");
    type Pair = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let pairs: &[(&str, Pair)] = &[
        ("mse_loss", |x, y| x.mse_loss(y, Reduction::Mean)),
        ("l1_loss", |x, y| x.l1_loss(y, Reduction::Sum)),
        ("smooth_l1_loss", |x, y| x.smooth_l1_loss(y, Reduction::None, 0.7)),
        ("huber_loss", |x, y| x.huber_loss(y, Reduction::Mean, 0.7)),
        ("poisson_nll_loss", |x, y| {
            x.poisson_nll_loss(y, true, false, 1e-8, Reduction::Mean)
        }),
        ("soft_margin_loss", |x, y| x.soft_margin_loss(y, Reduction::Mean)),
        ("kl_div", |x, y| x.kl_div(&y.abs()?, "batchmean", false)),
        ("kl_div log target", |x, y| x.kl_div(y, "sum", true)),
        ("margin_ranking_loss", |x, y| {
            x.margin_ranking_loss(y, &x.constant(1.0)?, 0.1, Reduction::Mean)
        }),
    ];
    for (name, f) in pairs {
        let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
        let y = sgn(&mut rng, &[3, 4], 0.2, 1.5);
        gradcheck(name, &[x, y], |t| f(&t[0], &t[1]));
    }
    let p = uni(&mut rng, &[3, 4], 0.1, 0.9);
    let t = uni(&mut rng, &[3, 4], 0.0, 1.0);
    gradcheck("binary_cross_entropy", &[p, t], |t| {
        t[0].binary_cross_entropy(&t[1], None, Reduction::Mean)
    });
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let t = uni(&mut rng, &[3, 4], 0.0, 1.0);
    let pw = uni(&mut rng, &[4], 0.5, 2.0);
    gradcheck("binary_cross_entropy_with_logits", &[x, t, pw], |t| {
        t[0].binary_cross_entropy_with_logits(&t[1], None, Some(&t[2]), Reduction::Mean)
    });
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let y = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let v = uni(&mut rng, &[3, 4], 0.3, 2.0);
    gradcheck("gaussian_nll_loss", &[x, y, v], |t| {
        t[0].gaussian_nll_loss(&t[1], &t[2], true, 1e-6, Reduction::Mean)
    });
    let x = sgn(&mut rng, &[4, 5], 0.2, 1.5);
    let w = uni(&mut rng, &[5], 0.5, 2.0);
    gradcheck("nll_loss weight ignore_index", &[x, w], |t| {
        t[0].nll_loss(
            &labels(&[1, -100, 4, 0], &[4]),
            Some(&t[1]),
            -100,
            Reduction::Mean,
        )
    });
    let x = sgn(&mut rng, &[4, 5], 0.2, 1.5);
    let w = uni(&mut rng, &[5], 0.5, 2.0);
    gradcheck("cross_entropy weight smoothing", &[x, w], |t| {
        let o = CrossEntropyOptions {
            label_smoothing: 0.2,
            ..Default::default()
        };
        t[0].cross_entropy_with(&labels(&[1, 3, 4, 0], &[4]), Some(&t[1]), &o)
    });
    let x = sgn(&mut rng, &[2, 3, 2, 2], 0.2, 1.5);
    gradcheck("cross_entropy 2d", &[x], |t| {
        t[0].cross_entropy_with(
            &labels(&[0, 1, 2, 1, 2, 2, 0, 1], &[2, 2, 2]),
            None,
            &Default::default(),
        )
    });
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let q = uni(&mut rng, &[3, 4], 0.0, 1.0);
    gradcheck("cross_entropy probabilities", &[x, q], |t| {
        t[0].cross_entropy_with(&t[1], None, &Default::default())
    });
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    gradcheck("multi_margin_loss", &[x], |t| {
        t[0].multi_margin_loss(&labels(&[1, 3, 0], &[3]), 2, 1.0, None, Reduction::Mean)
    });
    let x = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let y = uni(&mut rng, &[3, 4], 0.0, 1.0);
    gradcheck("multilabel_soft_margin_loss", &[x, y], |t| {
        t[0].multilabel_soft_margin_loss(&t[1], None, Reduction::Mean)
    });
    let x = sgn(&mut rng, &[4], 0.2, 1.5);
    gradcheck("hinge_embedding_loss", &[x], |t| {
        t[0].hinge_embedding_loss(&labels(&[1, -1, -1, 1], &[4]), 2.0, Reduction::Mean)
    });
    let a = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let b = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    gradcheck("cosine_embedding_loss", &[a, b], |t| {
        t[0].cosine_embedding_loss(&t[1], &labels(&[1, -1, 1], &[3]), -0.5, Reduction::Mean)
    });
    let a = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let b = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    let c = sgn(&mut rng, &[3, 4], 0.2, 1.5);
    gradcheck("triplet_margin_loss", &[a, b, c], |t| {
        t[0].triplet_margin_loss(&t[1], &t[2], 3.0, 2.0, 1e-6, true, Reduction::Mean)
    });
}

#[test]
fn polygamma_in_x() {
    for n in [1, 2, 3] {
        let x = uni(&mut Rng::new("polygamma"), &[2, 3], 0.3, 4.0);
        gradcheck(&format!("polygamma {n}"), &[x], move |t| {
            t[0].binary_scalar(kiln::core::op::BinaryOp::Polygamma, Scalar::Int(n), false)
        });
    }
}

#[test]
fn contractions() {
    let mut rng = Rng::new("contractions");
    let cases: &[(&str, &[&[usize]])] = &[
        ("ij,jk->ik", &[&[2, 3], &[3, 4]]),
        ("ii->i", &[&[3, 3]]),
        ("ii", &[&[3, 3]]),
        ("bij,bjk->bik", &[&[2, 3, 2], &[2, 2, 4]]),
        ("...ij,jk->...ik", &[&[2, 2, 3], &[3, 2]]),
        ("ij,ij,ij->i", &[&[2, 3], &[2, 3], &[2, 3]]),
        ("i,j->ij", &[&[3], &[2]]),
        ("ij->", &[&[2, 3]]),
        ("bii->bi", &[&[2, 3, 3]]),
        ("ij,jk,kl->il", &[&[2, 3], &[3, 2], &[2, 2]]),
    ];
    for (eq, shapes) in cases {
        let inputs: Vec<Input> = shapes.iter().map(|s| sgn(&mut rng, s, 0.2, 1.5)).collect();
        gradcheck(&format!("einsum {eq}"), &inputs, |t| Tensor::einsum(eq, t));
    }
    let a = sgn(&mut rng, &[2, 3, 4], 0.2, 1.5);
    let b = sgn(&mut rng, &[4, 3, 2], 0.2, 1.5);
    gradcheck("tensordot", &[a, b], |t| t[0].tensordot(&t[1], &[1, 2], &[1, 0]));
    let a = sgn(&mut rng, &[2, 3], 0.2, 1.5);
    let b = sgn(&mut rng, &[2, 2], 0.2, 1.5);
    gradcheck("kron", &[a, b], |t| t[0].kron(&t[1]));
    let a = sgn(&mut rng, &[4, 3], 0.2, 1.5);
    let b = sgn(&mut rng, &[3], 0.2, 1.5);
    gradcheck("cross", &[a, b], |t| t[0].cross(&t[1], Some(1)));
}

#[test]
fn scans_and_sorts() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, OpFn)] = &[
        ("cumsum", |x| x.cumsum(1, None)),
        ("cumsum dim 0", |x| x.cumsum(0, None)),
        ("cumprod", |x| x.cumprod(1, None)),
        ("cummax", |x| Ok(x.cummax(1)?.swap_remove(0))),
        ("cummin", |x| Ok(x.cummin(0)?.swap_remove(0))),
        ("logcumsumexp", |x| x.logcumsumexp(1)),
        ("sort", |x| Ok(x.sort(1, false)?.swap_remove(0))),
        ("sort descending dim 0", |x| Ok(x.sort(0, true)?.swap_remove(0))),
        ("topk", |x| Ok(x.topk(2, 1, true)?.swap_remove(0))),
        ("kthvalue", |x| Ok(x.kthvalue(2, 1, false)?.swap_remove(0))),
        ("median", |x| Ok(x.median_dim(1, true, false)?.swap_remove(0))),
        ("median all", |x| x.median_all(false)),
        ("mode", |x| {
            // rounded copies repeat, so some rows have a mode that repeats
            let r = x.mul_scalar(2.0)?.round()?.detach();
            Ok(x.add(&r)?.mode(1, false)?.swap_remove(0))
        }),
    ];
    for (name, f) in cases {
        let x = sgn(&mut Rng::new(name), &[3, 5], 0.2, 1.5);
        gradcheck(name, &[x], |x| f(&x[0]));
    }
    // cumprod's gradient through zeros (one and two in a row)
    let x = input(vec![1.5, 0.0, 2.0, -0.5, 0.0, 0.7, 0.0, 1.2, 0.9, 1.1], &[2, 5]);
    gradcheck("cumprod with zeros", &[x], |x| x[0].cumprod(1, None));
}

#[test]
fn where_with_operands_sharing_a_strided_storage() {
    // `where(c, w.detach(), w)` on a transposed view: the operands alias
    let base = Tensor::from_host(
        &HostValues::Float((0..12).map(f64::from).collect()),
        &[3, 4],
        DType::F64,
        Device::Cpu,
    )
    .unwrap();
    let w = base.t().unwrap();
    let c = Tensor::from_host(
        &HostValues::Bool(vec![true, false, true, false]),
        &[4, 1],
        DType::Bool,
        Device::Cpu,
    )
    .unwrap();
    let y = Tensor::where_cond(&c, &w.detach(), &w).unwrap();
    assert_eq!(values(&y), values(&w.contiguous().unwrap()));
}

#[test]
fn selection_ops() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, OpFn)] = &[
        ("masked_select", |x| {
            let m = x.compare_scalar(kiln::core::op::CmpOp::Gt, Scalar::Float(0.0), false)?;
            x.masked_select(&m)
        }),
        ("index_fill", |x| {
            x.index_fill(1, &labels(&[0, 2], &[2]), &x.constant(0.5)?)
        }),
        ("index_put accumulate", |x| {
            x.index_put(
                &[labels(&[0, 2, 0], &[3])],
                &x.select(0, 1)?.mul_scalar(2.0)?,
                true,
            )
        }),
        ("index_tensors", |x| {
            x.index_tensors(&[labels(&[2, 0, 2], &[3]), labels(&[1, 1, 3], &[3])])
        }),
        ("scatter_reduce mean", |x| {
            x.scatter_reduce(
                1,
                &labels(&[0, 0, 3, 1, 1, 1, 2, 0, 0], &[3, 3]),
                &x.narrow(1, 0, 3)?.mul_scalar(3.0)?,
                "mean",
                true,
            )
        }),
        ("scatter_reduce amax", |x| {
            x.scatter_reduce(
                1,
                &labels(&[0, 0, 3, 1, 1, 1, 2, 0, 0], &[3, 3]),
                &x.narrow(1, 1, 3)?.mul_scalar(2.0)?,
                "amax",
                false,
            )
        }),
        ("scatter_reduce prod", |x| {
            x.scatter_reduce(
                1,
                &labels(&[0, 0, 3, 1, 1, 1, 2, 0, 0], &[3, 3]),
                &x.narrow(1, 1, 3)?.mul_scalar(2.0)?,
                "prod",
                true,
            )
        }),
    ];
    for (name, f) in cases {
        let x = sgn(&mut Rng::new(name), &[3, 4], 0.2, 1.5);
        gradcheck(name, &[x], |x| f(&x[0]));
    }
    // the source of index_copy and masked_scatter
    let x = sgn(&mut Rng::new("index_copy"), &[3, 4], 0.2, 1.5);
    let src = sgn(&mut Rng::new("index_copy src"), &[2, 4], 0.2, 1.5);
    gradcheck("index_copy", &[x, src], |t| {
        t[0].index_copy(0, &labels(&[2, 0], &[2]), &t[1])
    });
    let x = sgn(&mut Rng::new("masked_scatter"), &[3, 4], 0.2, 1.5);
    let src = sgn(&mut Rng::new("masked_scatter src"), &[12], 0.2, 1.5);
    gradcheck("masked_scatter", &[x, src], |t| {
        let m = t[0].compare_scalar(kiln::core::op::CmpOp::Lt, Scalar::Float(0.0), false)?;
        t[0].masked_scatter(&m, &t[1])
    });
}

#[test]
fn scans_of_views_with_an_offset_read_their_own_elements() {
    // dim 0 of a transposed slice: moved last it is contiguous but starts
    // past the storage's beginning
    let base = Tensor::from_host(
        &HostValues::Float((0..24).map(f64::from).collect()),
        &[2, 3, 4],
        DType::F64,
        Device::Cpu,
    )
    .unwrap();
    let x = base.select(0, 1).unwrap().t().unwrap(); // [4, 3], offset 12
    let moved = x.t().unwrap().contiguous().unwrap();
    let want = moved.cumsum(1, None).unwrap().t().unwrap().contiguous().unwrap();
    assert_eq!(values(&x.cumsum(0, None).unwrap()), values(&want));
    let sorted = x.sort(0, true).unwrap().swap_remove(0);
    assert_eq!(values(&sorted.select(0, 0).unwrap()), vec![15.0, 19.0, 23.0]);
}

#[test]
fn quantiles_scatters_and_special_functions() {
    use kiln::tensor::quantile::{Interpolation, Quantiles};
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("quantile linear", &[3, 5], |x| {
            x.quantile(Quantiles::One(0.3), Some(1), false, Interpolation::Linear)
        }),
        ("quantile midpoint of all", &[3, 5], |x| {
            x.quantile(Quantiles::One(0.45), None, true, Interpolation::Midpoint)
        }),
        ("nanquantile many", &[4, 3], |x| {
            let q = Tensor::from_host(&HostValues::Float(vec![0.2, 0.9]), &[2], DType::F64, Device::Cpu)?;
            x.nanquantile(Quantiles::Many(&q), Some(0), false, Interpolation::Linear)
        }),
        ("block_diag", &[2, 3], |x| {
            Tensor::block_diag(&[x.clone(), x.select(0, 1)?, x.exp()?])
        }),
        ("vander", &[4], |x| x.vander(Some(4), false)),
        ("combinations", &[4], |x| x.combinations(3, false)),
        ("combinations with replacement", &[3], |x| x.combinations(2, true)),
        ("dist", &[3, 4], |x| x.dist(&x.flip(&[0])?, 3.0)),
        ("mvlgamma", &[3, 4], |x| x.abs()?.add_scalar(2.0)?.mvlgamma(3)),
        ("entr", &[3, 4], |x| x.abs()?.entr()),
        ("ndtr", &[3, 4], |x| x.ndtr()),
        ("log_ndtr", &[3, 4], |x| x.mul_scalar(3.0)?.log_ndtr()),
        ("ndtri", &[3, 4], |x| x.abs()?.mul_scalar(0.5)?.ndtri()),
        ("erfc", &[3, 4], |x| {
            x.mul_scalar(2.0)?.unary(kiln::core::op::UnaryOp::Erfc)
        }),
        ("i0e and i1e past the series", &[3, 4], |x| {
            let far = x.mul_scalar(12.0)?.add_scalar(8.0)?;
            far.unary(kiln::core::op::UnaryOp::I0e)?
                .add(&far.unary(kiln::core::op::UnaryOp::I1e)?)
        }),
        ("as_strided overlapping windows", &[3, 4], |x| {
            x.as_strided(&[4, 5], &[2, 1], Some(1))?.exp()
        }),
        // a view covering its whole storage (through a narrower view the
        // finite differences also see the storage outside it, which the
        // gradient, as PyTorch's, leaves out)
        ("as_strided of a transpose", &[3, 4], |x| {
            x.t()?.as_strided(&[2, 3], &[1, 4], Some(2))?.square()
        }),
        ("igamma and igammac in x", &[3, 4], |x| {
            let x = x.abs()?.mul_scalar(4.0)?.add_scalar(0.1)?;
            let a = Tensor::from_host(
                &HostValues::Float(vec![0.5, 1.5, 3.0, 7.0]),
                &[4],
                DType::F64,
                Device::Cpu,
            )?;
            a.binary(kiln::core::op::BinaryOp::Igamma, &x)?
                .add(&a.binary(kiln::core::op::BinaryOp::Igammac, &x.sqrt()?)?)
        }),
        ("frexp mantissa", &[3, 4], |x| Ok(x.mul_scalar(7.0)?.frexp()?.0)),
        ("pdist", &[4, 3], |x| x.pdist(2.0)),
        ("pdist p 3", &[4, 3], |x| x.pdist(3.0)),
        ("renorm", &[3, 4], |x| x.renorm(2.0, 0, 1.2)),
        ("gradient", &[3, 5], |x| {
            let g = x.gradient(&[Spacing::Step(0.5), Spacing::Step(2.0)], None, 2)?;
            g[0].mul(&g[1])
        }),
        ("gradient at points", &[5], |x| {
            let at = Tensor::from_host(
                &HostValues::Float(vec![0.0, 0.5, 2.0, 2.5, 4.0]),
                &[5],
                DType::F64,
                Device::Cpu,
            )?;
            Ok(x.gradient(&[Spacing::Points(&at)], None, 1)?.swap_remove(0))
        }),
        ("matrix_exp", &[2, 3, 3], |x| x.matrix_exp()),
        ("sum_to_size", &[2, 3, 4], |x| x.sum_to_size(&[3, 1])),
        ("fill_diagonal", &[3, 4], |x| {
            x.fill_diagonal(Scalar::Float(2.0), false)
        }),
        ("matrix_exp scaled", &[3, 3], |x| x.mul_scalar(3.0)?.matrix_exp()),
        ("embedding_bag mean", &[5, 3], |w| {
            let i = Tensor::from_host(
                &HostValues::Int(vec![1, 2, 4, 0, 2]),
                &[5],
                DType::I64,
                Device::Cpu,
            )?;
            let o = Tensor::from_host(&HostValues::Int(vec![0, 2]), &[2], DType::I64, Device::Cpu)?;
            i.embedding_bag(w, Some(&o), "mean", None, false, Some(0))
        }),
        ("embedding_bag max", &[5, 3], |w| {
            let i = Tensor::from_host(
                &HostValues::Int(vec![1, 2, 4, 0, 3, 3]),
                &[2, 3],
                DType::I64,
                Device::Cpu,
            )?;
            i.embedding_bag(w, None, "max", None, false, None)
        }),
    ];
    for (name, shape, f) in cases {
        let x = sgn(&mut Rng::new(name), shape, 0.2, 1.5);
        gradcheck(name, &[x], |x| f(&x[0]));
    }
    type TwoFn = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let two: &[(&str, &[usize], &[usize], TwoFn)] = &[
        ("select_scatter", &[3, 4], &[4], |a, b| a.select_scatter(b, 0, 1)),
        ("slice_scatter", &[3, 4], &[3, 2], |a, b| {
            a.slice_scatter(b, 1, Some(1), None, 2)
        }),
        ("diagonal_scatter", &[3, 4], &[3], |a, b| {
            a.diagonal_scatter(b, 1, 0, 1)
        }),
        ("index_reduce prod", &[4, 3], &[3, 3], |a, b| {
            let i = Tensor::from_host(&HostValues::Int(vec![0, 3, 0]), &[3], DType::I64, Device::Cpu)?;
            a.index_reduce(0, &i, b, "prod", true)
        }),
        ("index_reduce mean", &[4, 3], &[4, 2], |a, b| {
            let i = Tensor::from_host(&HostValues::Int(vec![2, 2]), &[2], DType::I64, Device::Cpu)?;
            a.index_reduce(1, &i, b, "mean", false)
        }),
        ("index_reduce amax", &[4, 3], &[3, 3], |a, b| {
            let i = Tensor::from_host(&HostValues::Int(vec![1, 3, 1]), &[3], DType::I64, Device::Cpu)?;
            a.index_reduce(0, &i, b, "amax", true)
        }),
        ("addr", &[3, 4], &[4], |a, b| {
            a.addr(&b.narrow(0, 0, 3)?, b, 0.5, 2.0)
        }),
        ("mv", &[3, 4], &[4], |a, b| a.mv(b)),
        ("xlog1py", &[3, 4], &[3, 4], |a, b| a.xlog1py(&b.abs()?)),
        ("ldexp", &[3, 4], &[4], |a, b| {
            a.ldexp(&b.mul_scalar(3.0)?.round()?.detach())
        }),
        ("put accumulate", &[3, 4], &[3], |a, b| {
            let i = Tensor::from_host(&HostValues::Int(vec![1, -2, 1]), &[3], DType::I64, Device::Cpu)?;
            a.put(&i, b, true)
        }),
        ("tensorsolve", &[2, 2, 2, 2], &[2, 2], |a, b| {
            let eye = Tensor::eye(4, 4, Some(DType::F64), Device::Cpu)?.mul_scalar(3.0)?;
            a.add(&eye.reshape(&[2, 2, 2, 2])?)?.tensorsolve(b, None)
        }),
        ("multilabel_margin_loss", &[3, 4], &[4], |a, b| {
            let y = Tensor::from_host(
                &HostValues::Int(vec![3, 0, -1, 1, 1, 2, 0, -1, 2, -1, 0, 0]),
                &[3, 4],
                DType::I64,
                Device::Cpu,
            )?;
            a.add(b)?
                .mul_scalar(0.3)?
                .multilabel_margin_loss(&y, Reduction::None)
        }),
    ];
    for (name, sa, sb, f) in two {
        let mut rng = Rng::new(name);
        let (a, b) = (sgn(&mut rng, sa, 0.2, 1.5), sgn(&mut rng, sb, 0.2, 1.5));
        gradcheck(name, &[a, b], |x| f(&x[0], &x[1]));
    }
}
