//! Gradient checks: for every differentiable op, the gradient that
//! `backward` computes is compared with central finite differences in f64 on
//! the CPU. The loss is `(f(x) * w).sum()` with a random weighting `w`, so
//! every output element matters; inputs come from a fixed seed and are built
//! away from the points where an op is not differentiable (abs and relu at 0,
//! ties of max/min, clamp bounds). The graph's own behaviour is tested in
//! `autograd_graph.rs`.

mod common;

use common::*;
use kiln::core::op::{BinaryOp, Domain, ReduceOp, UnaryOp, UnaryRule};
use kiln::tensor::HostValues;
use kiln::{DType, Device, Interpreter, Result, Scalar, Tensor};

// ---------------------------------------------------------------- elementwise

#[test]
fn unary_ops() {
    let shape = [3, 4];
    // every differentiable row of the op table, on the domain it is smooth on
    let cases = UnaryOp::ALL.iter().filter(|op| op.rule() != UnaryRule::Logical);
    for &op in cases {
        let domain = op.domain();
        let mut rng = Rng::new(op.name());
        let x = match domain {
            Domain::Positive => uni(&mut rng, &shape, 0.2, 2.0),
            Domain::Nonzero => sgn(&mut rng, &shape, 0.2, 1.5),
            Domain::Any => uni(&mut rng, &shape, -1.2, 1.2),
            Domain::Unit => uni(&mut rng, &shape, -0.9, 0.9),
            Domain::AboveOne => uni(&mut rng, &shape, 1.2, 3.0),
        };
        gradcheck(op.name(), &[x], |x| x[0].unary(op));
        // through a non-contiguous view of the input
        let mut rng = Rng::new(op.name());
        let x = match domain {
            Domain::Positive => uni(&mut rng, &[4, 3], 0.2, 2.0),
            Domain::Nonzero => sgn(&mut rng, &[4, 3], 0.2, 1.5),
            Domain::Any => uni(&mut rng, &[4, 3], -1.2, 1.2),
            Domain::Unit => uni(&mut rng, &[4, 3], -0.9, 0.9),
            Domain::AboveOne => uni(&mut rng, &[4, 3], 1.2, 3.0),
        };
        gradcheck(&format!("{} of a transpose", op.name()), &[x], |x| {
            x[0].t()?.unary(op)
        });
    }
}

/// Inputs for `a op b` where the op is smooth: positive bases for pow,
/// divisors away from zero.
fn binary_inputs(op: BinaryOp, rng: &mut Rng, sa: &[usize], sb: &[usize]) -> [Input; 2] {
    match op {
        BinaryOp::Pow => [uni(rng, sa, 0.3, 2.0), uni(rng, sb, -1.5, 1.5)],
        BinaryOp::Div | BinaryOp::Rem | BinaryOp::Fmod => [uni(rng, sa, -2.0, 2.0), sgn(rng, sb, 0.4, 1.5)],
        _ => [uni(rng, sa, -2.0, 2.0), uni(rng, sb, -2.0, 2.0)],
    }
}

#[test]
fn binary_ops_with_broadcasting() {
    use BinaryOp::*;
    let shapes: &[(&[usize], &[usize])] = &[
        (&[2, 3], &[2, 3]),
        (&[2, 3, 4], &[3, 1]),
        (&[3, 1], &[2, 1, 4]),
        (&[4], &[3, 4]),
        (&[2, 3], &[]),
        (&[], &[2, 3]),
    ];
    for op in [Add, Sub, Mul, Div, Rem, Fmod, Pow, Maximum, Minimum] {
        for (sa, sb) in shapes {
            let name = format!("{} {sa:?} {sb:?}", op.name());
            let mut rng = Rng::new(&name);
            let [a, b] = binary_inputs(op, &mut rng, sa, sb);
            gradcheck(&name, &[a, b], |x| x[0].binary(op, &x[1]));
        }
        // one side constant (it needs no gradient), each way round
        let name = format!("{} with a constant", op.name());
        let mut rng = Rng::new(&name);
        let [a, b] = binary_inputs(op, &mut rng, &[2, 3], &[3]);
        let cb = f64_tensor(&b.values, &b.shape);
        let ca = f64_tensor(&a.values, &a.shape);
        gradcheck(&format!("{name} rhs"), &[a], |x| x[0].binary(op, &cb));
        gradcheck(&format!("{name} lhs"), &[b], |x| ca.binary(op, &x[0]));
        // non-contiguous operands
        let name = format!("{} of transposes", op.name());
        let mut rng = Rng::new(&name);
        let [a, b] = binary_inputs(op, &mut rng, &[3, 2], &[3, 2]);
        gradcheck(&name, &[a, b], |x| x[0].t()?.binary(op, &x[1].t()?));
    }
}

#[test]
fn binary_ops_with_scalars_on_either_side() {
    use BinaryOp::*;
    let cases: &[(BinaryOp, Scalar)] = &[
        (Add, Scalar::Float(1.5)),
        (Add, Scalar::Int(2)),
        (Sub, Scalar::Float(0.75)),
        (Mul, Scalar::Float(-1.25)),
        (Mul, Scalar::Int(3)),
        (Div, Scalar::Float(1.75)),
        (Rem, Scalar::Float(0.7)),
        (Fmod, Scalar::Float(-0.7)),
        (Pow, Scalar::Float(2.5)),
        (Pow, Scalar::Int(3)),
        (Pow, Scalar::Int(0)),
        (Pow, Scalar::Float(-0.5)),
        (Maximum, Scalar::Float(0.1)),
        (Minimum, Scalar::Float(-0.2)),
    ];
    for &(op, s) in cases {
        for reversed in [false, true] {
            let name = format!("{} scalar {s:?} reversed {reversed}", op.name());
            let mut rng = Rng::new(&name);
            // a positive base for pow, a divisor away from 0 when the tensor divides
            let x = match (op, reversed) {
                (Pow, false) => uni(&mut rng, &[2, 3], 0.3, 2.0),
                (Pow, true) => uni(&mut rng, &[2, 3], -1.5, 1.5),
                (Div | Rem | Fmod, true) => sgn(&mut rng, &[2, 3], 0.4, 1.5),
                _ => uni(&mut rng, &[2, 3], -2.0, 2.0),
            };
            let s = if op == Pow && reversed && s.to_f64() <= 0.0 {
                Scalar::Float(1.7)
            } else {
                s
            };
            gradcheck(&name, &[x], |x| x[0].binary_scalar(op, s, reversed));
        }
    }
}

#[test]
fn where_and_clamp() {
    let mut rng = Rng::new("where");
    let cond_vals: Vec<f64> = rng.uniform(6, 0.0, 1.0);
    let cond = Tensor::from_host(
        &HostValues::Bool(cond_vals.iter().map(|&v| v < 0.5).collect()),
        &[2, 3],
        DType::Bool,
        Device::Cpu,
    )
    .unwrap();
    let (a, b) = (
        uni(&mut rng, &[2, 3], -1.0, 1.0),
        uni(&mut rng, &[2, 3], -1.0, 1.0),
    );
    gradcheck("where", &[a, b], |x| Tensor::where_cond(&cond, &x[0], &x[1]));
    let (a, b) = (uni(&mut rng, &[2, 1], -1.0, 1.0), uni(&mut rng, &[3], -1.0, 1.0));
    gradcheck("where broadcast", &[a, b], |x| {
        Tensor::where_cond(&cond, &x[0], &x[1])
    });
    let a = uni(&mut rng, &[], -1.0, 1.0);
    let zero = Tensor::scalar(Scalar::Float(0.0), DType::F64, Device::Cpu).unwrap();
    gradcheck("where 0-dim and a constant", &[a], |x| {
        Tensor::where_cond(&cond, &zero, &x[0])
    });
    for (lo, hi) in [(Some(-0.5), Some(0.7)), (Some(-0.3), None), (None, Some(0.4))] {
        let name = format!("clamp {lo:?} {hi:?}");
        let x = uni(&mut Rng::new(&name), &[3, 4], -1.5, 1.5);
        gradcheck(&name, &[x], |x| {
            x[0].clamp(lo.map(Scalar::Float), hi.map(Scalar::Float))
        });
    }
}

// ----------------------------------------------------------------- reductions

#[test]
fn reductions_over_dims() {
    let ops = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Prod,
        ReduceOp::Var { correction: 0 },
        ReduceOp::Var { correction: 1 },
        ReduceOp::Var { correction: 2 },
        ReduceOp::Std { correction: 0 },
        ReduceOp::Std { correction: 1 },
        ReduceOp::Max,
        ReduceOp::Min,
    ];
    let dim_sets: &[Option<&[i64]>] = &[None, Some(&[1]), Some(&[0, 2]), Some(&[-1]), Some(&[0, 1, 2])];
    for op in ops {
        let single = matches!(op, ReduceOp::Max | ReduceOp::Min);
        for dims in dim_sets {
            if single && dims.is_some_and(|d| d.len() != 1) {
                continue;
            }
            for keepdim in [false, true] {
                let name = format!("{op:?} {dims:?} keepdim {keepdim}");
                let mut rng = Rng::new(&name);
                // distinct values (no max ties), away from 0 for prod
                let x = sgn(&mut rng, &[2, 3, 4], 0.5, 1.5);
                gradcheck(&name, &[x], |x| x[0].reduce(op, *dims, keepdim));
            }
        }
        let name = format!("{op:?} of a transpose");
        let x = sgn(&mut Rng::new(&name), &[4, 3], 0.5, 1.5);
        gradcheck(&name, &[x], |x| x[0].t()?.reduce(op, Some(&[1]), false));
    }
    let x = uni(&mut Rng::new("sum 0-dim"), &[], -1.0, 1.0);
    gradcheck("sum of a 0-dim tensor", &[x], |x| x[0].sum());
}

#[test]
fn prod_with_zeros() {
    // prod is multilinear, so finite differences are exact at zeros too
    let x = input(
        vec![
            2.0, 0.0, 3.0, 0.5, // one zero
            0.0, 1.5, 0.0, 2.0, // two zeros
            1.5, -2.0, 0.5, 3.0, // none
        ],
        &[3, 4],
    );
    gradcheck("prod with zeros, dim 1", &[x], |x| {
        x[0].reduce(ReduceOp::Prod, Some(&[1]), false)
    });
    let x = input(vec![2.0, 0.0, 3.0, 0.5], &[4]);
    gradcheck("prod with one zero, whole tensor", &[x], |x| {
        x[0].reduce(ReduceOp::Prod, None, false)
    });
    // the values, not only their agreement: d/dx_i prod = product of the others
    let t = f64_tensor(&[2.0, 0.0, 3.0, 0.0, 5.0, 4.0], &[2, 3]);
    t.set_requires_grad(true).unwrap();
    t.reduce(ReduceOp::Prod, Some(&[1]), false)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_of(&t), vec![0.0, 6.0, 0.0, 20.0, 0.0, 0.0]);
}

// ------------------------------------------------------------------------- nn

#[test]
fn softmax_and_log_softmax() {
    for log in [false, true] {
        for dim in [0, 1, 2, -1] {
            let name = format!("softmax log {log} dim {dim}");
            let x = uni(&mut Rng::new(&name), &[2, 3, 4], -2.0, 2.0);
            gradcheck(&name, &[x], |x| {
                if log {
                    x[0].log_softmax(dim)
                } else {
                    x[0].softmax(dim)
                }
            });
        }
        let name = format!("softmax log {log} of a transpose");
        let x = uni(&mut Rng::new(&name), &[4, 3], -2.0, 2.0);
        gradcheck(&name, &[x], |x| {
            let t = x[0].t()?;
            if log {
                t.log_softmax(-1)
            } else {
                t.softmax(0)
            }
        });
    }
}

#[test]
fn layer_norm_with_and_without_affine() {
    let eps = 1e-5;
    for norm in [&[4usize][..], &[3, 4]] {
        for (with_w, with_b) in [(false, false), (true, false), (false, true), (true, true)] {
            let name = format!("layer_norm {norm:?} weight {with_w} bias {with_b}");
            let mut rng = Rng::new(&name);
            let mut inputs = vec![uni(&mut rng, &[2, 3, 4], -2.0, 2.0)];
            if with_w {
                inputs.push(uni(&mut rng, norm, 0.5, 1.5));
            }
            if with_b {
                inputs.push(uni(&mut rng, norm, -0.5, 0.5));
            }
            gradcheck(&name, &inputs, |x| {
                let w = with_w.then(|| &x[1]);
                let b = with_b.then(|| &x[if with_w { 2 } else { 1 }]);
                x[0].layer_norm(norm, w, b, eps)
            });
        }
    }
    let x = uni(&mut Rng::new("layer_norm transpose"), &[4, 3], -2.0, 2.0);
    gradcheck("layer_norm of a transpose", &[x], |x| {
        x[0].t()?.layer_norm(&[4], None, None, eps)
    });
}

// --------------------------------------------------------------------- linalg

#[test]
fn matmul_shapes() {
    let cases: &[(&[usize], &[usize])] = &[
        (&[4], &[4]),
        (&[4], &[4, 3]),
        (&[2, 4], &[4]),
        (&[2, 4], &[4, 3]),
        (&[2, 2, 4], &[4, 3]),
        (&[4], &[2, 4, 3]),
        (&[2, 3, 4], &[4]),
        (&[2, 1, 3, 4], &[3, 4, 2]),
        (&[1, 3, 4], &[2, 4, 2]),
    ];
    for (sa, sb) in cases {
        let name = format!("matmul {sa:?} {sb:?}");
        let mut rng = Rng::new(&name);
        let (a, b) = (uni(&mut rng, sa, -1.0, 1.0), uni(&mut rng, sb, -1.0, 1.0));
        gradcheck(&name, &[a, b], |x| x[0].matmul(&x[1]));
    }
    let mut rng = Rng::new("mm");
    let (a, b) = (
        uni(&mut rng, &[2, 3], -1.0, 1.0),
        uni(&mut rng, &[3, 4], -1.0, 1.0),
    );
    gradcheck("mm", &[a, b], |x| x[0].mm(&x[1]));
    let (a, b) = (
        uni(&mut rng, &[3, 2], -1.0, 1.0),
        uni(&mut rng, &[4, 3], -1.0, 1.0),
    );
    gradcheck("mm of transposes", &[a, b], |x| x[0].t()?.mm(&x[1].t()?));
    let (a, b) = (
        uni(&mut rng, &[2, 3, 4], -1.0, 1.0),
        uni(&mut rng, &[2, 4, 2], -1.0, 1.0),
    );
    gradcheck("bmm", &[a, b], |x| x[0].bmm(&x[1]));
    let (a, b) = (uni(&mut rng, &[5], -1.0, 1.0), uni(&mut rng, &[5], -1.0, 1.0));
    gradcheck("dot", &[a, b], |x| x[0].dot(&x[1]));
    let b = uni(&mut rng, &[4, 3], -1.0, 1.0);
    let ca = f64_tensor(&rng.uniform(8, -1.0, 1.0), &[2, 4]);
    gradcheck("matmul with a constant lhs", &[b], |x| ca.matmul(&x[0]));
}

// ---------------------------------------------------------------------- joins

#[test]
fn cat_and_stack() {
    for dim in [0i64, 1, -1] {
        let name = format!("cat dim {dim}");
        let mut rng = Rng::new(&name);
        let shape = |n: usize| -> Vec<usize> {
            let mut s = vec![2, 3, 2];
            let d = if dim < 0 { 2 } else { dim as usize };
            s[d] = n;
            s
        };
        let inputs = [
            uni(&mut rng, &shape(1), -1.0, 1.0),
            uni(&mut rng, &shape(2), -1.0, 1.0),
            uni(&mut rng, &shape(3), -1.0, 1.0),
        ];
        let c = f64_tensor(&rng.uniform(numel(&shape(2)), -1.0, 1.0), &shape(2));
        gradcheck(&name, &inputs, |x| {
            Tensor::cat(&[x[0].clone(), c.clone(), x[1].clone(), x[2].clone()], dim)
        });
    }
    for dim in [0i64, 1, 2, -1] {
        let name = format!("stack dim {dim}");
        let mut rng = Rng::new(&name);
        let inputs = [
            uni(&mut rng, &[2, 3], -1.0, 1.0),
            uni(&mut rng, &[2, 3], -1.0, 1.0),
        ];
        gradcheck(&name, &inputs, |x| {
            Tensor::stack(&[x[0].clone(), x[1].t()?.t()?, x[0].clone()], dim)
        });
    }
}

// ---------------------------------------------------------------------- views

#[test]
fn views() {
    type ViewFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], ViewFn)] = &[
        ("reshape", &[2, 3, 4], |x| x.reshape(&[4, -1])),
        ("reshape of a transpose (copies)", &[2, 3, 4], |x| {
            x.transpose(0, 2)?.reshape(&[-1])
        }),
        ("view", &[2, 3, 4], |x| x.view(&[6, 4])),
        ("flatten", &[2, 3, 4], |x| x.flatten(0, -1)),
        ("flatten 1..2 of a permute", &[2, 3, 4], |x| {
            x.permute(&[2, 0, 1])?.flatten(1, 2)
        }),
        ("t", &[3, 4], |x| x.t()),
        ("transpose", &[2, 3, 4], |x| x.transpose(0, 2)),
        ("permute", &[2, 3, 4], |x| x.permute(&[1, 2, 0])),
        ("T (all dims reversed)", &[2, 3, 4], |x| x.permute(&[2, 1, 0])),
        ("squeeze all", &[2, 1, 3, 1], |x| x.squeeze(None)),
        ("squeeze one", &[2, 1, 3, 1], |x| x.squeeze(Some(&[-1]))),
        ("unsqueeze", &[2, 3], |x| x.unsqueeze(1)),
        ("unsqueeze of a transpose", &[2, 3], |x| x.t()?.unsqueeze(-1)),
        ("expand", &[3, 1], |x| x.expand(&[2, -1, 4])),
        ("expand of a transpose", &[1, 3], |x| x.t()?.expand(&[3, 5])),
        ("broadcast_to", &[1, 4], |x| x.broadcast_to(&[3, 4])),
        ("narrow", &[4, 5], |x| x.narrow(1, 1, 3)),
        ("narrow negative start", &[4, 5], |x| x.narrow(0, -2, 2)),
        ("slice with step", &[6, 3], |x| x.slice(0, Some(1), Some(6), 2)),
        ("slice of a transpose", &[3, 6], |x| {
            x.t()?.slice(0, Some(-4), None, 3)
        }),
        ("select", &[3, 4], |x| x.select(0, -1)),
        ("select of a transpose", &[3, 4], |x| x.t()?.select(0, 2)),
        ("contiguous of a transpose", &[3, 4], |x| x.t()?.contiguous()),
        ("clone", &[3, 4], |x| x.clone_data()),
        ("views chained", &[2, 3, 4], |x| {
            x.permute(&[2, 0, 1])?
                .slice(0, Some(0), Some(4), 2)?
                .select(2, 1)?
                .unsqueeze(0)?
                .expand(&[3, -1, -1])
        }),
    ];
    for (name, shape, f) in cases {
        let x = uni(&mut Rng::new(name), shape, -1.0, 1.0);
        // multiply by the input, so that the gradient depends on the values
        gradcheck(name, &[x], |x| f(&x[0])?.exp());
    }
}

// ------------------------------------------------------------------ indexing

fn index(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Int(v.to_vec()), shape, DType::I64, Device::Cpu).unwrap()
}

#[test]
fn index_select_with_repeated_indices() {
    let idx = index(&[2, 0, 2, 2, 3], &[5]);
    // strided (every other element of a longer index) and i32
    let strided = index(&[1, 9, 1, 9, 0, 9], &[6])
        .slice(0, Some(0), None, 2)
        .unwrap();
    let small = index(&[1, 1, 0], &[3]).to_dtype(DType::I32).unwrap();
    type Case<'a> = (&'a str, &'a [usize], Box<dyn Fn(&Tensor) -> Result<Tensor> + 'a>);
    let cases: Vec<Case> = vec![
        (
            "index_select dim 0",
            &[4, 3],
            Box::new(|x: &Tensor| x.index_select(0, &idx)),
        ),
        (
            "index_select dim -1",
            &[3, 4],
            Box::new(|x: &Tensor| x.index_select(-1, &idx)),
        ),
        (
            "index_select dim 1 of 3",
            &[2, 4, 3],
            Box::new(|x: &Tensor| x.index_select(1, &idx)),
        ),
        (
            "index_select of a transpose",
            &[3, 2],
            Box::new(|x: &Tensor| x.t()?.index_select(1, &strided)),
        ),
        (
            "index_select with an i32 index",
            &[2, 3],
            Box::new(|x: &Tensor| x.index_select(0, &small)),
        ),
        (
            "index_select of a 0-dim",
            &[],
            Box::new(|x: &Tensor| x.index_select(0, &index(&[0], &[]))),
        ),
    ];
    for (name, shape, f) in &cases {
        let x = sgn(&mut Rng::new(name), shape, 0.2, 1.0);
        gradcheck(name, &[x], |x| f(&x[0])?.exp());
    }
}

#[test]
fn gather_with_repeated_indices() {
    let i0 = index(&[2, 0, 1, 2, 2, 2], &[2, 3]);
    let i1 = index(&[1, 1, 0, 1, 0, 0, 1, 1], &[4, 2]);
    // a transposed index: its elements are read through its strides
    let it = index(&[0, 2, 2, 1, 0, 0], &[2, 3]).t().unwrap();
    type Case<'a> = (&'a str, &'a [usize], Box<dyn Fn(&Tensor) -> Result<Tensor> + 'a>);
    let cases: Vec<Case> = vec![
        ("gather dim 0", &[3, 3], Box::new(|x: &Tensor| x.gather(0, &i0))),
        ("gather dim 1", &[4, 3], Box::new(|x: &Tensor| x.gather(1, &i1))),
        (
            "gather dim -1 of a transpose",
            &[3, 4],
            Box::new(|x: &Tensor| x.t()?.gather(-1, &i1)),
        ),
        (
            "gather with a transposed index",
            &[3, 2],
            Box::new(|x: &Tensor| x.gather(0, &it)),
        ),
        (
            "gather smaller than the input",
            &[5, 4],
            Box::new(|x: &Tensor| x.gather(1, &i1)),
        ),
    ];
    for (name, shape, f) in &cases {
        let x = sgn(&mut Rng::new(name), shape, 0.2, 1.0);
        gradcheck(name, &[x], |x| f(&x[0])?.exp());
    }
}

#[test]
fn index_add_and_scatter_add() {
    let idx = index(&[2, 0, 2], &[3]);
    let mut rng = Rng::new("index_add");
    let inputs = [
        uni(&mut rng, &[3, 4], -1.0, 1.0),
        uni(&mut rng, &[3, 4], -1.0, 1.0),
    ];
    gradcheck("index_add dim 0", &inputs, |x| {
        x[0].index_add(0, &idx, &x[1])?.exp()
    });
    let inputs = [
        uni(&mut rng, &[2, 4], -1.0, 1.0),
        uni(&mut rng, &[2, 3], -1.0, 1.0),
    ];
    gradcheck("index_add dim 1, src transposed", &inputs, |x| {
        x[0].index_add(1, &idx, &x[1].t()?.contiguous()?.t()?)?.exp()
    });
    let si = index(&[1, 1, 0, 1, 0, 0], &[2, 3]);
    let inputs = [
        uni(&mut rng, &[2, 3], -1.0, 1.0),
        uni(&mut rng, &[3, 4], -1.0, 1.0),
    ];
    gradcheck("scatter_add dim 0, src larger than the index", &inputs, |x| {
        x[0].scatter_add(0, &si, &x[1])?.exp()
    });
    let inputs = [
        uni(&mut rng, &[2, 2], -1.0, 1.0),
        uni(&mut rng, &[2, 3], -1.0, 1.0),
    ];
    gradcheck("scatter_add dim 1", &inputs, |x| {
        x[0].scatter_add(1, &si, &x[1])?.exp()
    });
}

#[test]
fn repeated_indices_accumulate_exactly() {
    // the embedding pattern: rows picked many times get the sum of their gradients
    let w = param(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let ids = index(&[2, 2, 0, 2], &[2, 2]);
    let rows = w.index_select(0, &ids.flatten(0, -1).unwrap()).unwrap();
    rows.reshape(&[2, 2, 2])
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_of(&w), vec![1.0, 1.0, 0.0, 0.0, 3.0, 3.0]);
    let x = param(&[1.0, 2.0, 3.0], &[3]);
    let g = x.gather(0, &index(&[1, 1, 1, 0], &[4])).unwrap();
    assert_eq!(g.grad_fn_name(), Some("gather"));
    g.mul_scalar(2.0).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 6.0, 0.0]);
    // through a script, with the stdlib embedding layer
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let r: rhai::Array = k
        .eval(
            r#"import "nn" as nn;
               let e = nn::embedding(4, 3);
               let y = nn::apply(e, tensor([[3, 1], [3, 3]]));
               y.sum().backward();
               [y.shape, e.weight.grad.sum(1).to_list(), y.grad_fn]"#,
        )
        .unwrap();
    assert_eq!(format!("{r:?}"), "[[2, 2, 3], [0.0, 3.0, 0.0, 9.0], \"reshape\"]");
}

#[test]
fn script_indexing_records_select_and_slice() {
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let g: rhai::Array = k
        .eval(
            "let x = tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]).requires_grad(true);
             let y = x[-1] * 2.0 + x[0..2].sum(0) * x[1..=2][0];
             if y.grad_fn != \"add\" || x[0].grad_fn != \"select\" || x[0..1].grad_fn != \"slice\" { throw \"not recorded\"; }
             y.sum().backward();
             x.grad.to_list()",
        )
        .unwrap();
    let g: Vec<Vec<f64>> = g
        .into_iter()
        .map(|r| {
            r.into_typed_array::<f64>()
                .unwrap_or_else(|_| panic!("not floats"))
        })
        .collect();
    // d/dx of 2 x[2] + (x[0] + x[1]) * x[1]
    assert_eq!(
        g,
        vec![
            vec![3.0, 4.0],
            vec![1.0 + 3.0 + 3.0, 2.0 + 4.0 + 4.0],
            vec![2.0, 2.0]
        ]
    );
}

// ---------------------------------------------------------------------- dtypes

#[test]
fn dtype_round_trips_carry_the_gradient() {
    // f64 -> f32 -> f64: the gradient is the weighting, rounded through f32
    let x = f64_tensor(&[0.5, -1.25, 2.0], &[3]);
    x.set_requires_grad(true).unwrap();
    let w = f64_tensor(&[0.1, 0.2, 0.3], &[3]);
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        x.zero_grad();
        let y = x.to_dtype(dtype).unwrap().to_dtype(DType::F64).unwrap();
        assert_eq!(y.grad_fn_name(), Some("to_dtype"));
        y.mul(&w).unwrap().sum().unwrap().backward().unwrap();
        let g = x.grad().unwrap();
        assert_eq!(g.dtype(), DType::F64);
        let rounded = values(&w.to_dtype(dtype).unwrap().to_dtype(DType::F64).unwrap());
        assert_eq!(values(&g), rounded, "{dtype:?}");
    }
    // an f32 leaf computed in f64 gets an f32 gradient
    let a = f32_tensor(&[1.0, 2.0], &[2]);
    a.set_requires_grad(true).unwrap();
    let b = f64_tensor(&[3.0, 4.0], &[2]);
    let y = a.mul(&b).unwrap();
    assert_eq!(y.dtype(), DType::F64);
    y.sum().unwrap().backward().unwrap();
    let g = a.grad().unwrap();
    assert_eq!(g.dtype(), DType::F32);
    assert_eq!(values(&g), vec![3.0, 4.0]);
    // to an integer dtype the graph ends
    let i = x.to_dtype(DType::I64).unwrap();
    assert!(!i.requires_grad());
    // gradcheck of a cast inside a larger f64 computation (f64 -> f64 is the same handle)
    let v = uni(&mut Rng::new("cast"), &[3], -1.0, 1.0);
    gradcheck("to_dtype f64 no-op and clone", &[v], |x| {
        x[0].to_dtype(DType::F64)?.clone_data()?.sin()
    });
}

/// The activations' backward ops (`relu_backward`, `gelu_backward`,
/// `gelu_tanh_backward`) differentiated again: double backward through
/// `g · f'(x)`; ReLU's is 0 in x, so it is checked in g with x fixed away
/// from its kink.
#[test]
fn activation_backward_ops_twice() {
    use BinaryOp::*;
    for op in [ReluBackward, GeluBackward, GeluTanhBackward] {
        let name = format!("{} twice", op.name());
        let mut rng = Rng::new(&name);
        let g = uni(&mut rng, &[2, 3], -2.0, 2.0);
        let x = sgn(&mut rng, &[2, 3], 0.2, 1.5);
        if op == ReluBackward {
            let cx = f64_tensor(&x.values, &x.shape);
            gradcheck(&name, &[g], |t| t[0].binary(op, &cx));
        } else {
            gradcheck(&name, &[g, x], |t| t[0].binary(op, &t[1]));
        }
    }
}
