//! The gradient-check harness the autograd test files share: a seeded
//! generator, f64 inputs, and [`gradcheck`], which compares `backward`'s
//! gradients with central finite differences of `(f(x) * w).sum()`.
#![allow(dead_code)]

use kiln::tensor::autograd::no_grad;
use kiln::tensor::HostValues;
use kiln::{DType, Device, Result, Tensor};

pub const EPS: f64 = 1e-6;
pub const TOL: f64 = 1e-5;

/// A small deterministic generator (splitmix64).
pub struct Rng(u64);

impl Rng {
    pub fn new(name: &str) -> Rng {
        let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
        for b in name.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
        }
        Rng(h)
    }

    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn uniform(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.next()).collect()
    }

    /// Magnitudes in `[lo, hi]` with random signs.
    pub fn signed(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
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

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

pub fn f64_tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Float(v.to_vec()), shape, DType::F64, Device::Cpu).unwrap()
}

pub fn f32_tensor(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_host(&HostValues::Float(v.to_vec()), shape, DType::F32, Device::Cpu).unwrap()
}

pub fn values(t: &Tensor) -> Vec<f64> {
    match t.to_host().unwrap() {
        HostValues::Float(v) => v,
        other => panic!("not floats: {other:?}"),
    }
}

pub fn grad_of(t: &Tensor) -> Vec<f64> {
    values(&t.grad().expect("no gradient was accumulated"))
}

pub fn assert_close(what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= TOL * (1.0 + w.abs()),
            "{what}: element {i}: got {g}, expected {w}\n got {got:?}\nwant {want:?}"
        );
    }
}

/// One input of a check: its values and shape.
pub struct Input {
    pub values: Vec<f64>,
    pub shape: Vec<usize>,
}

pub fn input(values: Vec<f64>, shape: &[usize]) -> Input {
    assert_eq!(values.len(), numel(shape));
    Input {
        values,
        shape: shape.to_vec(),
    }
}

/// Inputs uniform in `[lo, hi]`.
pub fn uni(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Input {
    input(rng.uniform(numel(shape), lo, hi), shape)
}

/// Inputs with magnitudes in `[lo, hi]` and random signs.
pub fn sgn(rng: &mut Rng, shape: &[usize], lo: f64, hi: f64) -> Input {
    input(rng.signed(numel(shape), lo, hi), shape)
}

/// Compares the gradients `backward` gives every input of `f` with central
/// finite differences of `(f(x) * w).sum()`.
pub fn gradcheck(name: &str, inputs: &[Input], f: impl Fn(&[Tensor]) -> Result<Tensor>) {
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

/// A leaf that requires grad.
pub fn param(v: &[f64], shape: &[usize]) -> Tensor {
    let t = f64_tensor(v, shape);
    t.set_requires_grad(true).unwrap();
    t
}
