//! Gradient checks: for every differentiable op, the gradient that
//! `backward` computes is compared with central finite differences in f64 on
//! the CPU. The loss is `(f(x) * w).sum()` with a random weighting `w`, so
//! every output element matters; inputs come from a fixed seed and are built
//! away from the points where an op is not differentiable (abs and relu at 0,
//! ties of max/min, clamp bounds). Then the behaviour of the graph itself:
//! accumulation, zero_grad, detach, no_grad, shared inputs, broadcasting,
//! non-scalar roots, in-place errors and ops that must not record.

use kiln::core::op::{BinaryOp, Domain, ReduceOp, UnaryOp, UnaryRule};
use kiln::tensor::autograd::{is_grad_enabled, no_grad};
use kiln::tensor::HostValues;
use kiln::{DType, Device, Interpreter, Result, Scalar, Tensor};

const EPS: f64 = 1e-6;
const TOL: f64 = 1e-5;

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn new(name: &str) -> Rng {
        let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
        for b in name.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
        }
        Rng(h)
    }

    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.next()).collect()
    }

    /// Magnitudes in `[lo, hi]` with random signs.
    fn signed(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let m = lo + (hi - lo) * self.next();
                if self.next() < 0.5 {
                    -m
                } else {
                    m
                }
            })
            .collect()
    }
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

fn f64_tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Float(v.to_vec()), shape, DType::F64, Device::Cpu).unwrap()
}

fn f32_tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Float(v.to_vec()), shape, DType::F32, Device::Cpu).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    match t.to_host().unwrap() {
        HostValues::Float(v) => v,
        other => panic!("not floats: {other:?}"),
    }
}

fn grad_of(t: &Tensor) -> Vec<f64> {
    values(&t.grad().expect("no gradient was accumulated"))
}

fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= TOL * (1.0 + w.abs()),
            "{what}: element {i}: got {g}, expected {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

/// One input of a check: its values and shape.
struct Input {
    values: Vec<f64>,
    shape: Vec<usize>,
}

fn input(values: Vec<f64>, shape: &[usize]) -> Input {
    assert_eq!(values.len(), numel(shape));
    Input {
        values,
        shape: shape.to_vec(),
    }
}

/// Inputs uniform in `[lo, hi]`.
fn uni(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Input {
    input(rng.uniform(numel(shape), lo, hi), shape)
}

/// Inputs with magnitudes in `[lo, hi]` and random signs.
fn sgn(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Input {
    input(rng.signed(numel(shape), lo, hi), shape)
}

/// Compares the gradients `backward` gives every input of `f` with central
/// finite differences of `(f(x) * w).sum()`.
fn gradcheck(name: &str, inputs: &[Input], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
    let mut rng = Rng::new(&format!("weights {name}"));
    let leaves: Vec<Tensor> = inputs
        .iter()
        .map(|i| {
            let t = f64_tensor(&i.values, &i.shape);
            t.set_requires_grad(true).unwrap();
            t
        })
        .collect();
    let y = f(&leaves).unwrap_or_else(|e| panic!("{name}: forward failed: {e}"));
    assert!(y.requires_grad(), "{name}: the output does not require grad");
    assert_eq!(y.dtype(), DType::F64, "{name}: check in f64");
    let w = f64_tensor(&rng.uniform(y.numel(), -1.0, 1.0), y.shape());
    y.mul(&w)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap_or_else(|e| panic!("{name}: backward failed: {e}"));
    let loss = |xs: &[Vec<f64>]| -> f64 {
        no_grad(|| {
            let ts: Vec<Tensor> = xs
                .iter()
                .zip(inputs)
                .map(|(v, i)| f64_tensor(v, &i.shape))
                .collect();
            f(&ts)
                .unwrap()
                .mul(&w)
                .unwrap()
                .sum()
                .unwrap()
                .item()
                .unwrap()
                .to_f64()
        })
    };
    let base: Vec<Vec<f64>> = inputs.iter().map(|i| i.values.clone()).collect();
    for (k, leaf) in leaves.iter().enumerate() {
        let analytic = match leaf.grad() {
            Some(g) => {
                assert_eq!(
                    g.shape(),
                    leaf.shape(),
                    "{name}: gradient {k} has the wrong shape"
                );
                assert_eq!(g.dtype(), DType::F64, "{name}: gradient {k} dtype");
                values(&g)
            }
            None => vec![0.0; leaf.numel()],
        };
        let mut numeric = Vec::with_capacity(leaf.numel());
        for j in 0..leaf.numel() {
            let mut xs = base.clone();
            xs[k][j] += EPS;
            let plus = loss(&xs);
            xs[k][j] -= 2.0 * EPS;
            let minus = loss(&xs);
            numeric.push((plus - minus) / (2.0 * EPS));
        }
        assert_close(&format!("{name}: input {k}"), &analytic, &numeric);
    }
}

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
        BinaryOp::Div | BinaryOp::Rem => [uni(rng, sa, -2.0, 2.0), sgn(rng, sb, 0.4, 1.5)],
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
    for op in [Add, Sub, Mul, Div, Rem, Pow, Maximum, Minimum] {
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
                (Div | Rem, true) => sgn(&mut rng, &[2, 3], 0.4, 1.5),
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

#[test]
fn rearranging_ops() {
    type OpFn = fn(&Tensor) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("flip", &[2, 3, 4], |x| x.flip(&[0, 2])),
        ("flip of a transpose", &[3, 4], |x| x.t()?.flip(&[1])),
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

// ------------------------------------------------------------ graph behaviour

fn param(v: &[f64], shape: &[usize]) -> Tensor {
    let t = f64_tensor(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}

#[test]
fn gradients_accumulate_until_zero_grad() {
    let x = param(&[1.0, 2.0], &[2]);
    x.mul_scalar(3.0).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![3.0, 3.0]);
    x.mul(&x).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![5.0, 7.0]);
    x.zero_grad();
    assert!(x.grad().is_none());
    x.sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![1.0, 1.0]);
}

#[test]
fn detach_stops_the_gradient() {
    let x = param(&[2.0, 3.0], &[2]);
    let d = x.detach();
    assert!(!d.requires_grad() && d.is_leaf() && d.shares_storage(&x));
    // y = x * detach(x): dy/dx = detach(x) only
    x.mul(&d).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 3.0]);
    let y = x.exp().unwrap().detach();
    assert!(!y.requires_grad());
    assert!(y.sum().unwrap().backward().is_err());
}

#[test]
fn no_grad_records_nothing_and_restores_the_mode() {
    let x = param(&[1.0, 2.0], &[2]);
    let y = no_grad(|| x.mul_scalar(2.0).unwrap());
    assert!(!y.requires_grad() && y.grad_fn_name().is_none());
    assert!(is_grad_enabled());
    let e = y.sum().unwrap().backward().unwrap_err().to_string();
    assert!(e.contains("does not require grad"), "{e}");
    // in a script, also when the closure fails
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let r: rhai::Array = k
        .eval(
            "let w = ones([2]).requires_grad(true);
             let a = no_grad(|| (w * 2).requires_grad);
             let inner = no_grad(|| enable_grad(|| (w * 2).requires_grad));
             let before = is_grad_enabled();
             try { no_grad(|| { let z = w * 2; throw \"boom\"; }); } catch (e) { }
             try { no_grad(|| w.reshape([5])); } catch (e) { }
             [a, inner, before, is_grad_enabled(), (w * 2).requires_grad]",
        )
        .unwrap();
    let r: Vec<bool> = r.into_iter().map(|v| v.as_bool().unwrap()).collect();
    assert_eq!(r, vec![false, true, true, true, true]);
    assert!(is_grad_enabled());
}

#[test]
fn a_leaf_used_twice_and_a_diamond() {
    let x = param(&[0.5, -1.0], &[2]);
    // y = x * x + x: dy/dx = 2x + 1
    x.mul(&x)
        .unwrap()
        .add(&x)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_of(&x), vec![2.0, -1.0]);
    // a = exp(x); y = 2a + sin(a): dy/dx = (2 + cos(a)) a
    let x = param(&[0.3, -0.7], &[2]);
    let a = x.exp().unwrap();
    let y = a.mul_scalar(2.0).unwrap().add(&a.sin().unwrap()).unwrap();
    y.sum().unwrap().backward().unwrap();
    let want: Vec<f64> = [0.3f64, -0.7]
        .iter()
        .map(|v| (2.0 + v.exp().cos()) * v.exp())
        .collect();
    assert_close("diamond", &grad_of(&x), &want);
}

#[test]
fn broadcast_gradients_are_reduced_to_the_input_shape() {
    let a = param(&[1.0, 2.0, 3.0], &[3, 1]);
    let b = param(&[10.0, 20.0, 30.0, 40.0], &[1, 4]);
    let c = param(&[5.0], &[]);
    a.mul(&b)
        .unwrap()
        .add(&c)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(a.grad().unwrap().shape(), &[3, 1]);
    assert_eq!(grad_of(&a), vec![100.0, 100.0, 100.0]);
    assert_eq!(b.grad().unwrap().shape(), &[1, 4]);
    assert_eq!(grad_of(&b), vec![6.0, 6.0, 6.0, 6.0]);
    assert_eq!(c.grad().unwrap().shape(), &[] as &[usize]);
    assert_eq!(grad_of(&c), vec![12.0]);
}

#[test]
fn backward_with_a_gradient_for_non_scalar_outputs() {
    let x = param(&[1.0, 2.0, 3.0], &[3]);
    let y = x.mul(&x).unwrap();
    let e = y.backward().unwrap_err().to_string();
    assert!(e.contains("one element"), "{e}");
    let bad = f64_tensor(&[1.0, 1.0], &[2]);
    assert!(y.backward_with(&bad).is_err());
    y.backward_with(&f64_tensor(&[1.0, 0.5, -1.0], &[3])).unwrap();
    assert_eq!(grad_of(&x), vec![2.0, 2.0, -6.0]);
    // a second backward through the freed graph is an error
    let e = y
        .backward_with(&f64_tensor(&[1.0, 1.0, 1.0], &[3]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("already used"), "{e}");
    // from a script, with a tensor or a number
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let g: rhai::Array = k
        .eval(
            "let x = tensor([1.0, 2.0]).requires_grad(true);
             (x * 3.0).backward(tensor([1.0, -1.0]));
             (x * x).backward(2.0);
             x.grad.to_list()",
        )
        .unwrap();
    let g: Vec<f64> = g.into_iter().map(|v| v.as_float().unwrap()).collect();
    assert_eq!(g, vec![3.0 + 4.0, -3.0 + 8.0]);
}

#[test]
fn in_place_errors() {
    let x = param(&[1.0, 2.0], &[2]);
    let one = f64_tensor(&[1.0, 1.0], &[2]);
    // a leaf that requires grad
    let e = x.binary_(BinaryOp::Add, &one).unwrap_err().to_string();
    assert!(e.contains("leaf"), "{e}");
    assert!(x.copy_(&one).is_err());
    // fine inside no_grad (the optimizer step)
    no_grad(|| x.binary_scalar_(BinaryOp::Sub, Scalar::Float(0.5))).unwrap();
    assert_eq!(values(&x), vec![0.5, 1.5]);
    // a tensor in the graph
    let y = x.mul_scalar(2.0).unwrap();
    let e = y
        .binary_scalar_(BinaryOp::Mul, Scalar::Int(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("part of an autograd graph"), "{e}");
    // a tensor that requires grad written into a plain one
    let plain = f64_tensor(&[0.0, 0.0], &[2]);
    let e = plain.copy_(&y).unwrap_err().to_string();
    assert!(e.contains("lose its gradient"), "{e}");
    assert!(plain.binary_(BinaryOp::Add, &y).is_err());
    // a saved tensor modified in place (under no_grad) makes backward fail
    let s = f64_tensor(&[3.0, 4.0], &[2]);
    let z = x.mul(&s).unwrap().sum().unwrap();
    s.binary_scalar_(BinaryOp::Add, Scalar::Float(1.0)).unwrap();
    let e = z.backward().unwrap_err().to_string();
    assert!(e.contains("modified in place"), "{e}");
    // from a script: the message carries the position
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let e = k
        .run("let w = ones([2]).requires_grad(true);\nw += 1;", "s.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(
        e.message.contains("leaf tensor that requires grad"),
        "{}",
        e.message
    );
}

#[test]
fn backward_of_a_tensor_without_grad_is_an_error() {
    let x = f64_tensor(&[1.0], &[1]);
    let e = x.backward().unwrap_err().to_string();
    assert!(e.contains("does not require grad"), "{e}");
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let e = k
        .run("let a = ones([1]);\n(a * 2).sum().backward();", "s.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("does not require grad"), "{}", e.message);
}

#[test]
fn integer_and_bool_results_do_not_record() {
    let x = param(&[1.0, -2.0, 3.0], &[3]);
    assert!(!x
        .compare_scalar(kiln::core::op::CmpOp::Gt, Scalar::Int(0), false)
        .unwrap()
        .requires_grad());
    assert!(!x.reduce(ReduceOp::ArgMax, None, false).unwrap().requires_grad());
    assert!(!x.reduce(ReduceOp::Any, None, false).unwrap().requires_grad());
    assert!(!x.to_dtype(DType::I32).unwrap().requires_grad());
    let i = Tensor::from_host(&HostValues::Int(vec![1, 2, 3]), &[3], DType::I64, Device::Cpu).unwrap();
    assert!(i.set_requires_grad(true).is_err());
    assert!(!i.add(&i).unwrap().requires_grad());
    assert!(!i.sum().unwrap().requires_grad());
    // an int operand next to a float parameter: only the parameter gets a gradient
    x.mul(&i).unwrap().sum().unwrap().backward().unwrap();
    assert_eq!(grad_of(&x), vec![1.0, 2.0, 3.0]);
}

#[test]
fn script_properties() {
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    let r: rhai::Array = k
        .eval(
            "let w = tensor([1.0, 2.0]);
             let a = [w.requires_grad, w.is_leaf, w.grad == ()];
             w.requires_grad(true);
             let y = (w * 2).sum();
             let b = [w.requires_grad, y.is_leaf, y.grad_fn, w.grad_fn == (), y.grad == ()];
             w.grad = ones([2]);
             let c = w.grad.to_list();
             w.grad = ();
             let d = w.grad == ();
             w.requires_grad = false;
             let e = [w.requires_grad, w.detach().requires_grad];
             let f = tensor([1.0], #{requires_grad: true}).requires_grad;
             [a, b, c, d, e, f]",
        )
        .unwrap();
    let s = format!("{r:?}");
    assert_eq!(
        s,
        "[[false, true, true], [true, false, \"sum\", true, true], [1.0, 1.0], true, [false, false], true]"
    );
    let mut k = Interpreter::with_device(Device::Cpu).unwrap();
    for (src, msg) in [
        ("let a = ones([2]); a.grad = 3;", "expected a tensor or ()"),
        (
            "let a = ones([2]).requires_grad(true); a.grad = ones([3]);",
            "does not fit",
        ),
        ("arange(3).requires_grad(true)", "only floating-point"),
        (
            "(ones([2]).requires_grad(true) * 2).requires_grad(false)",
            "only the flag of leaf",
        ),
    ] {
        let e = k.run(src, "s.rhai").unwrap_err();
        assert!(e.message.contains(msg), "{src}: {}", e.message);
    }
}
