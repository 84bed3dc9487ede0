//! The optimizer steps against hand-computed PyTorch updates, single and
//! multi-tensor, on the CPU.

use super::*;
use crate::tensor::{Device, HostValues};

fn t(v: &[f64], dtype: DType) -> Tensor {
    Tensor::from_host(&HostValues::Float(v.to_vec()), &[v.len()], dtype, Device::Cpu).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    match t.to_host().unwrap() {
        HostValues::Float(v) => v,
        other => panic!("not floats: {other:?}"),
    }
}

const P0: [f64; 5] = [0.5, -1.25, 2.0, 0.0, -0.75];
const GRADS: [[f64; 5]; 3] = [
    [0.1, -0.2, 0.3, 1.5, -0.05],
    [-0.4, 0.25, 0.0, 0.7, 0.9],
    [0.33, -0.6, 0.12, -1.1, 0.2],
];

/// torch.optim.Adam / AdamW written out in f64, step by step.
fn adam_reference(o: &AdamOptions) -> Vec<f64> {
    let (b1, b2) = o.betas;
    let mut p = P0.to_vec();
    let (mut m, mut v) = (vec![0.0; 5], vec![0.0; 5]);
    for (s, g) in GRADS.iter().enumerate() {
        let step = (s + 1) as f64;
        for i in 0..5 {
            let mut gi = g[i];
            if o.decoupled {
                p[i] *= 1.0 - o.lr * o.weight_decay;
            } else {
                gi += o.weight_decay * p[i];
            }
            m[i] = b1 * m[i] + (1.0 - b1) * gi;
            v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
            let mhat = m[i] / (1.0 - b1.powf(step));
            let vhat = v[i] / (1.0 - b2.powf(step));
            p[i] -= o.lr * mhat / (vhat.sqrt() + o.eps);
        }
    }
    p
}

#[test]
fn adam_and_adamw_match_pytorch_formulas_over_three_steps() {
    for decoupled in [false, true] {
        let o = AdamOptions {
            lr: 0.01,
            betas: (0.8, 0.95),
            eps: 1e-6,
            weight_decay: 0.1,
            decoupled,
        };
        let want = adam_reference(&o);
        for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-6), (DType::BF16, 1e-2)] {
            let p = t(&P0, dtype);
            let (m, v) = (p.optimizer_state().unwrap(), p.optimizer_state().unwrap());
            for (s, g) in GRADS.iter().enumerate() {
                p.adam_step_(&t(g, dtype), &m, &v, s as i64 + 1, &o).unwrap();
            }
            for (a, b) in values(&p).iter().zip(&want) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1.0),
                    "{dtype} decoupled={decoupled}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn sgd_momentum_nesterov_and_decay_match_pytorch_formulas() {
    for nesterov in [false, true] {
        let o = SgdOptions {
            lr: 0.1,
            momentum: 0.9,
            dampening: if nesterov { 0.0 } else { 0.25 },
            weight_decay: 0.01,
            nesterov,
            init_buffer: false,
        };
        let mut p = P0.to_vec();
        let mut buf = [0.0; 5];
        for (s, g) in GRADS.iter().enumerate() {
            for i in 0..5 {
                let d = g[i] + o.weight_decay * p[i];
                buf[i] = if s == 0 {
                    d
                } else {
                    o.momentum * buf[i] + (1.0 - o.dampening) * d
                };
                let d = if nesterov { d + o.momentum * buf[i] } else { buf[i] };
                p[i] -= o.lr * d;
            }
        }
        for dtype in [DType::F64, DType::F32, DType::F16] {
            let param = t(&P0, dtype);
            let b = param.optimizer_state().unwrap();
            for (s, g) in GRADS.iter().enumerate() {
                let o = SgdOptions {
                    init_buffer: s == 0,
                    ..o
                };
                param.sgd_step_(&t(g, dtype), Some(&b), &o).unwrap();
            }
            let tol = if dtype == DType::F16 { 2e-3 } else { 1e-6 };
            for (a, w) in values(&param).iter().zip(&p) {
                assert!((a - w).abs() <= tol * w.abs().max(1.0), "{dtype}: {a} vs {w}");
            }
            assert_eq!(b.dtype(), state_dtype(dtype));
        }
    }
    // plain SGD needs no buffer
    let p = t(&P0, DType::F64);
    p.sgd_step_(
        &t(&GRADS[0], DType::F64),
        None,
        &SgdOptions {
            lr: 0.5,
            ..Default::default()
        },
    )
    .unwrap();
    let want: Vec<f64> = P0.iter().zip(&GRADS[0]).map(|(p, g)| p - 0.5 * g).collect();
    assert_eq!(values(&p), want);
}

#[test]
fn bad_operands_are_errors() {
    let p = t(&P0, DType::F32);
    let g = t(&GRADS[0], DType::F32);
    let (m, v) = (p.optimizer_state().unwrap(), p.optimizer_state().unwrap());
    let o = AdamOptions::default();
    let err = |r: Result<()>| r.unwrap_err().to_string();
    assert!(err(p.adam_step_(&g, &m, &m, 1, &o)).contains("share storage"));
    assert!(err(p.adam_step_(&p, &m, &v, 1, &o)).contains("share storage"));
    assert!(err(p.adam_step_(&g.narrow(0, 0, 4).unwrap(), &m, &v, 1, &o)).contains("has shape [4]"));
    assert!(err(p.adam_step_(&g.to_dtype(DType::F64).unwrap(), &m, &v, 1, &o)).contains("dtype f64"));
    assert!(err(p.adam_step_(&g, &m, &v, 0, &o)).contains("starts at 1"));
    let wide = Tensor::zeros(&[5, 2], None, Device::Cpu).unwrap();
    let strided = wide.select(1, 0).unwrap();
    assert!(err(strided.adam_step_(&g, &m, &v, 1, &o)).contains("neither contiguous nor channels last"));
    let bad = AdamOptions {
        betas: (1.0, 0.999),
        ..o
    };
    assert!(err(p.adam_step_(&g, &m, &v, 1, &bad)).contains("beta parameter at index 0"));
    let sgd = SgdOptions {
        momentum: 0.9,
        ..Default::default()
    };
    assert!(err(p.sgd_step_(&g, None, &sgd)).contains("needs a momentum buffer"));
    let nest = SgdOptions {
        nesterov: true,
        ..Default::default()
    };
    assert!(err(p.sgd_step_(&g, None, &nest)).contains("Nesterov"));
    assert!(err(t(&P0, DType::F64).sgd_step_(&g, None, &SgdOptions::default())).contains("dtype f32"));
}

#[test]
fn the_multi_tensor_step_equals_a_step_per_parameter() {
    let o = AdamOptions {
        lr: 0.01,
        weight_decay: 0.1,
        decoupled: true,
        ..Default::default()
    };
    let make = |dtype: DType, n: usize, k: f64| {
        let v: Vec<f64> = (0..n).map(|i| ((i as f64 + k) * 0.37).sin()).collect();
        t(&v, dtype)
    };
    let shapes = [
        (DType::F32, 5),
        (DType::BF16, 3),
        (DType::F32, 0),
        (DType::F64, 7),
    ];
    let run = |multi: bool| -> Vec<Vec<f64>> {
        let params: Vec<Tensor> = shapes.iter().map(|&(d, n)| make(d, n, 1.0)).collect();
        let (m, v): (Vec<Tensor>, Vec<Tensor>) = params
            .iter()
            .map(|p| (p.optimizer_state().unwrap(), p.optimizer_state().unwrap()))
            .unzip();
        for step in 1..=3 {
            let grads: Vec<Tensor> = shapes
                .iter()
                .map(|&(d, n)| make(d, n, step as f64 * 5.0))
                .collect();
            if multi {
                // the count as a tensor: read on the host for CPU parameters
                let count = Tensor::full(
                    &[1],
                    crate::core::Scalar::Int(step),
                    Some(DType::I64),
                    Device::Cpu,
                )
                .unwrap();
                adam_step_multi_(&params, &grads, &m, &v, StepCount::Tensor(&count), &o).unwrap();
            } else {
                for i in 0..params.len() {
                    params[i].adam_step_(&grads[i], &m[i], &v[i], step, &o).unwrap();
                }
            }
        }
        params.iter().chain(&m).chain(&v).map(values).collect()
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn multi_tensor_steps_check_every_operand_first() {
    let o = AdamOptions::default();
    let p = [t(&P0, DType::F32), t(&P0, DType::F32)];
    let g = [t(&P0, DType::F32), t(&P0[..4], DType::F32)];
    let s = |p: &Tensor| p.optimizer_state().unwrap();
    let (m, v) = ([s(&p[0]), s(&p[1])], [s(&p[0]), s(&p[1])]);
    let err = adam_step_multi_(&p, &g, &m, &v, StepCount::Host(1), &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("has shape [4]"), "{err}");
    // nothing was updated, not even the first parameter
    assert_eq!(values(&p[0]), P0.to_vec());
    let err = adam_step_multi_(&p, &g[..1], &m, &v, StepCount::Host(1), &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 parameters, 1 gradients"), "{err}");
    let shared = [p[0].clone(), p[0].clone()];
    let g2 = [t(&P0, DType::F32), t(&P0, DType::F32)];
    let err = adam_step_multi_(&shared, &g2, &m, &v, StepCount::Host(1), &o)
        .unwrap_err()
        .to_string();
    assert!(err.contains("share memory"), "{err}");
}

#[test]
fn the_multi_tensor_sgd_step_equals_a_step_per_parameter() {
    let make = |dtype: DType, n: usize, k: f64| {
        let v: Vec<f64> = (0..n).map(|i| ((i as f64 + k) * 0.61).cos()).collect();
        t(&v, dtype)
    };
    let shapes = [(DType::F32, 6), (DType::F16, 4), (DType::F32, 0), (DType::F64, 9)];
    for (momentum, nesterov) in [(0.0, false), (0.9, false), (0.8, true)] {
        let run = |multi: bool| -> Vec<Vec<f64>> {
            let params: Vec<Tensor> = shapes.iter().map(|&(d, n)| make(d, n, 2.0)).collect();
            let bufs: Vec<Option<Tensor>> = params
                .iter()
                .map(|p| Some(p.optimizer_state().unwrap()))
                .collect();
            for step in 0..3 {
                let o = SgdOptions {
                    lr: 0.05,
                    momentum,
                    dampening: 0.0,
                    weight_decay: 0.01,
                    nesterov,
                    init_buffer: step == 0,
                };
                let grads: Vec<Tensor> = shapes
                    .iter()
                    .map(|&(d, n)| make(d, n, step as f64 * 3.0))
                    .collect();
                if multi {
                    // the first step decided by a count tensor instead of init_buffer
                    let count = Tensor::full(
                        &[1],
                        crate::core::Scalar::Int(step + 1),
                        Some(DType::I64),
                        Device::Cpu,
                    )
                    .unwrap();
                    let o = SgdOptions {
                        init_buffer: false,
                        ..o
                    };
                    sgd_step_multi_(&params, &grads, &bufs, &o, Some(&count)).unwrap();
                } else {
                    for i in 0..params.len() {
                        params[i].sgd_step_(&grads[i], bufs[i].as_ref(), &o).unwrap();
                    }
                }
            }
            params.iter().chain(bufs.iter().flatten()).map(values).collect()
        };
        assert_eq!(run(true), run(false), "momentum {momentum}, nesterov {nesterov}");
    }
    // momentum without a buffer is an error before any update
    let p = [t(&P0, DType::F32)];
    let o = SgdOptions {
        momentum: 0.9,
        ..Default::default()
    };
    let err = sgd_step_multi_(&p, &[t(&P0, DType::F32)], &[None], &o, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("needs a momentum buffer"), "{err}");
    assert_eq!(values(&p[0]), P0.to_vec());
}
