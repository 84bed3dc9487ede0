//! Reductions, softmax / layer norm, random numbers and matmul.

use super::*;

impl Checker {
    pub(super) fn reductions(&mut self) {
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Prod,
            ReduceOp::Mean,
            ReduceOp::Var { correction: 1 },
            ReduceOp::Std { correction: 0 },
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::ArgMax,
            ReduceOp::ArgMin,
            ReduceOp::All,
            ReduceOp::Any,
        ];
        let dims: [(&str, Option<&[i64]>, bool); 5] = [
            ("all", None, false),
            ("dim0", Some(&[0]), false),
            ("dim1 keepdim", Some(&[1]), true),
            ("dim-1", Some(&[-1]), false),
            ("dims[0,1]", Some(&[0, 1]), false),
        ];
        for dtype in DType::ALL {
            for op in ops {
                let single = matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin);
                for (lname, shape, view) in layouts() {
                    for (dname, ds, keep) in dims {
                        if single && ds.is_some_and(|d| d.len() > 1) {
                            continue;
                        }
                        let r = input(&mut self.gen, &shape, dtype, op == ReduceOp::Prod).and_then(|x| {
                            let x = if op == ReduceOp::Prod && dtype.is_float() {
                                x.sqrt()?.sqrt()?
                            } else {
                                x
                            };
                            self.both(&x, |t| view(t)?.reduce(op, ds, keep))
                        });
                        self.record_scaled(op.name(), dtype, &format!("{lname} {dname}"), r, 10.0);
                    }
                }
            }
            // short lanes, many outputs (one thread per output): the last
            // dim of a dense matrix, and a strided pair of dims of a view
            for op in ops {
                for (what, shape) in [
                    ("5000 short rows", vec![5000usize, 7]),
                    ("strided short lanes", vec![3, 4000, 2]),
                ] {
                    let r = input(&mut self.gen, &shape, dtype, false).and_then(|x| {
                        self.both(&x, |t| {
                            if shape.len() == 2 {
                                t.reduce(op, Some(&[-1]), false)
                            } else if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
                                t.permute(&[1, 2, 0])?.reduce(op, Some(&[2]), false)
                            } else {
                                t.permute(&[1, 2, 0])?.reduce(op, Some(&[1, 2]), false)
                            }
                        })
                    });
                    self.record_scaled(op.name(), dtype, what, r, 10.0);
                }
            }
            // a long lane split across many warps
            for op in [
                ReduceOp::Sum,
                ReduceOp::Max,
                ReduceOp::ArgMin,
                ReduceOp::Var { correction: 1 },
            ] {
                let r = input(&mut self.gen, &[1 << 20], dtype, false)
                    .and_then(|x| self.both(&x, |t| t.reduce(op, None, false)));
                self.record_scaled(op.name(), dtype, "2^20 elements", r, 100.0);
            }
        }
    }

    pub(super) fn nn(&mut self) {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for log in [false, true] {
                let name = if log { "log_softmax" } else { "softmax" };
                for (lname, shape, view) in layouts() {
                    for dim in [-1i64, 0] {
                        let r = input(&mut self.gen, &shape, dtype, false).and_then(|x| {
                            self.both(&x, |t| {
                                if log {
                                    view(t)?.log_softmax(dim)
                                } else {
                                    view(t)?.softmax(dim)
                                }
                            })
                        });
                        self.record(name, dtype, &format!("{lname} dim{dim}"), r);
                    }
                }
                let r = input(&mut self.gen, &[64, 3000], dtype, false)
                    .and_then(|x| self.both(&x, |t| t.mul_scalar(4.0)?.softmax(-1)));
                self.record(name, dtype, "rows of 3000", r);
            }
            for affine in [false, true] {
                let r = (|| {
                    let x = input(&mut self.gen, &[9, 37, 65], dtype, false)?.permute(&[1, 0, 2])?;
                    let w = input(&mut self.gen, &[65], dtype, false)?;
                    let b = input(&mut self.gen, &[65], dtype, false)?;
                    self.both(&x, |t| {
                        let d = t.device();
                        let (w, b) = (w.to_device(d)?, b.to_device(d)?);
                        if affine {
                            t.layer_norm(&[65], Some(&w), Some(&b), 1e-5)
                        } else {
                            t.layer_norm(&[9, 65], None, None, 1e-5)
                        }
                    })
                })();
                let what = if affine {
                    "permuted, affine"
                } else {
                    "permuted, 2 dims"
                };
                self.record_scaled("layer_norm", dtype, what, r, 10.0);
            }
            // the fused backward: a warp per row, a block per row, past the
            // block's register cache; the weight's and bias's column sums
            for (norm, rows) in [(65usize, 37usize), (1500, 9), (9000, 3)] {
                for affine in [false, true] {
                    let r = (|| {
                        let x = input(&mut self.gen, &[rows, norm], dtype, false)?;
                        let w = input(&mut self.gen, &[norm], dtype, false)?;
                        let b = input(&mut self.gen, &[norm], dtype, false)?;
                        let g = input(&mut self.gen, &[rows, norm], dtype, false)?;
                        let run = |dev: Device| -> Result<Tensor> {
                            // fresh handles: to_device on the CPU is the same tensor
                            let x = x.to_device(dev)?.detach();
                            x.set_requires_grad(true)?;
                            let (w, b) = (w.to_device(dev)?.detach(), b.to_device(dev)?.detach());
                            w.set_requires_grad(true)?;
                            b.set_requires_grad(true)?;
                            let y = if affine {
                                x.layer_norm(&[norm], Some(&w), Some(&b), 1e-5)?
                            } else {
                                x.layer_norm(&[norm], None, None, 1e-5)?
                            };
                            y.backward_with(&g.to_device(dev)?)?;
                            let grad = |t: &Tensor| {
                                t.grad()
                                    .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
                            };
                            if affine {
                                Tensor::cat(&[grad(&x)?.reshape(&[-1])?, grad(&w)?, grad(&b)?], 0)
                            } else {
                                grad(&x)
                            }
                        };
                        Ok((run(Device::Cpu)?, run(gpu())?))
                    })();
                    let what = format!("backward [{rows}, {norm}]{}", if affine { " affine" } else { "" });
                    self.record_scaled("layer_norm", dtype, &what, r, 10.0);
                }
            }
        }
    }

    pub(super) fn random(&mut self) {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for normal in [false, true] {
                let r = (|| {
                    let mut g1 = Generator::new(1234);
                    let mut g2 = Generator::new(1234);
                    let shape = [1000, 37];
                    let (c, g) = if normal {
                        (
                            Tensor::randn(&shape, Some(dtype), Device::Cpu, &mut g1)?,
                            Tensor::randn(&shape, Some(dtype), gpu(), &mut g2)?,
                        )
                    } else {
                        (
                            Tensor::rand(&shape, Some(dtype), Device::Cpu, &mut g1)?,
                            Tensor::rand(&shape, Some(dtype), gpu(), &mut g2)?,
                        )
                    };
                    Ok((c, g))
                })();
                self.record(if normal { "randn" } else { "rand" }, dtype, "seeded", r);
            }
        }
        // dropout's fused kernel: the same elements kept as on the CPU, and
        // its gradient the same dropout of the output's gradient
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (what, shape) in [
                ("n=1", vec![1usize]),
                ("n=4099", vec![4099]),
                ("n=100003", vec![100_003]),
                ("[5, 3, 7, 9] channels last", vec![5, 7, 9, 3]),
            ] {
                let r = (|| {
                    let x = input(&mut self.gen, &shape, dtype, false)?;
                    let run = |dev: Device| -> Result<Tensor> {
                        let mut x = x.to_device(dev)?.detach();
                        if shape.len() == 4 {
                            // a dense [N, H, W, C] seen as [N, C, H, W]: channels last
                            x = x.permute(&[0, 3, 1, 2])?;
                        }
                        x.set_requires_grad(true)?;
                        let y = x.dropout(0.3, true, &mut Generator::new(77))?;
                        y.mul(&x)?.sum()?.backward()?;
                        let g = x
                            .grad()
                            .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))?;
                        Tensor::cat(&[y.detach().reshape(&[-1])?, g.reshape(&[-1])?], 0)
                    };
                    Ok((run(Device::Cpu)?, run(gpu())?))
                })();
                self.record("dropout", dtype, &format!("seeded, {what}, with gradient"), r);
            }
        }
        for dtype in [DType::I64, DType::I32, DType::U8] {
            let r = (|| {
                let (mut g1, mut g2) = (Generator::new(99), Generator::new(99));
                Ok((
                    Tensor::randint(-3, 100, &[999], Some(dtype), Device::Cpu, &mut g1)?,
                    Tensor::randint(-3, 100, &[999], Some(dtype), gpu(), &mut g2)?,
                ))
            })();
            self.record("randint", dtype, "seeded", r);
        }
        // the composed samplers: the same Philox draws through the same
        // elementwise steps give the same samples on both sides
        type Draw = (&'static str, fn(&Tensor, &mut Generator) -> Result<Tensor>);
        let draws: [Draw; 5] = [
            ("multinomial with replacement", |w, g| w.multinomial(40, true, g)),
            ("multinomial without replacement", |w, g| {
                w.multinomial(7, false, g)
            }),
            ("multinomial one draw", |w, g| w.multinomial(1, false, g)),
            ("poisson small rates", |w, g| w.mul_scalar(8.0)?.poisson(g)),
            ("poisson large rates", |w, g| {
                w.mul_scalar(300.0)?.add_scalar(10.0)?.poisson(g)
            }),
        ];
        for dtype in [DType::F32, DType::F64] {
            for (name, draw) in draws {
                let r = (|| {
                    let w = Tensor::rand(&[64, 500], Some(dtype), Device::Cpu, &mut Generator::new(3))?;
                    let (mut g1, mut g2) = (Generator::new(77), Generator::new(77));
                    Ok((draw(&w, &mut g1)?, draw(&w.to_device(gpu())?, &mut g2)?))
                })();
                self.record(name, dtype, "seeded", r);
            }
        }
    }

    pub(super) fn matmul(&mut self) {
        for dtype in [
            DType::F32,
            DType::F64,
            DType::F16,
            DType::BF16,
            DType::I64,
            DType::I32,
            DType::U8,
        ] {
            let cases: Vec<MatmulCase> = vec![
                (
                    "contiguous",
                    vec![67, 45],
                    vec![45, 33],
                    |t| Ok(t.clone()),
                    |t| Ok(t.clone()),
                ),
                ("a.t()", vec![45, 67], vec![45, 33], |t| t.t(), |t| Ok(t.clone())),
                ("b.t()", vec![67, 45], vec![33, 45], |t| Ok(t.clone()), |t| t.t()),
                ("both.t()", vec![45, 67], vec![33, 45], |t| t.t(), |t| t.t()),
                (
                    "batched",
                    vec![3, 67, 45],
                    vec![45, 33],
                    |t| Ok(t.clone()),
                    |t| Ok(t.clone()),
                ),
                (
                    "broadcast batch",
                    vec![2, 1, 17, 45],
                    vec![3, 45, 9],
                    |t| Ok(t.clone()),
                    |t| Ok(t.clone()),
                ),
                (
                    "sliced",
                    vec![67, 90],
                    vec![45, 33],
                    |t| t.slice(1, Some(0), None, 2),
                    |t| Ok(t.clone()),
                ),
                (
                    "vector",
                    vec![67, 45],
                    vec![45],
                    |t| Ok(t.clone()),
                    |t| Ok(t.clone()),
                ),
                // heads split off [B, L, H, D] projections: batch offsets in
                // a grid (per-head strided batches), more heads than batch
                // entries and fewer
                (
                    "heads of [2, 17, 7, 45]",
                    vec![2, 17, 7, 45],
                    vec![2, 13, 7, 45],
                    |t| t.transpose(1, 2),
                    |t| t.transpose(1, 2)?.transpose(-2, -1),
                ),
                (
                    "heads of [9, 17, 3, 45]",
                    vec![9, 17, 3, 45],
                    vec![9, 45, 3, 13],
                    |t| t.transpose(1, 2),
                    |t| t.transpose(1, 2),
                ),
            ];
            for (name, sa, sb, va, vb) in cases {
                let r = (|| {
                    let a = input(&mut self.gen, &sa, dtype, false)?;
                    let b = input(&mut self.gen, &sb, dtype, false)?;
                    let c = va(&a)?.matmul(&vb(&b)?)?;
                    let d = gpu();
                    let g = va(&a.to_device(d)?)?.matmul(&vb(&b.to_device(d)?)?)?;
                    Ok((c, g))
                })();
                // a 45-term dot product of N(0, 4) values rounds more than one op
                self.record_scaled("matmul", dtype, name, r, 30.0);
            }
        }
    }

    /// `addmm` and `linear` with a bias row: one cuBLASLt call with the bias
    /// in its epilogue on CUDA (f32, f16, bf16; f64 composes), against the
    /// CPU's product and sum; `linear`'s gradients for input, weight and
    /// bias, plain and with a fused ReLU or tanh GELU (33 outputs: the GELU
    /// composes; 40: its backward reads the epilogue's pre-activation); a
    /// bias that starts one element into its storage.
    pub(super) fn matmul_bias(&mut self) {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            let r = (|| {
                let (a, b) = (
                    input(&mut self.gen, &[67, 45], dtype, false)?,
                    input(&mut self.gen, &[45, 33], dtype, false)?,
                );
                let bias = input(&mut self.gen, &[34], dtype, false)?;
                let run = |d: Device| -> Result<Tensor> {
                    let bias = bias.to_device(d)?.narrow(0, 1, 33)?;
                    bias.addmm(&a.to_device(d)?, &b.to_device(d)?, 1.0, 1.0)
                };
                Ok((run(Device::Cpu)?, run(gpu())?))
            })();
            self.record_scaled("addmm (bias epilogue)", dtype, "bias offset 1", r, 30.0);
            use kiln::backend::Activation;
            for (act, out) in [
                (Activation::Identity, 33),
                (Activation::Relu, 33),
                (Activation::GeluTanh, 33),
                (Activation::GeluTanh, 40),
            ] {
                let grads = (|| {
                    let x = input(&mut self.gen, &[67, 45], dtype, false)?;
                    let w = input(&mut self.gen, &[out, 45], dtype, false)?;
                    let bias = input(&mut self.gen, &[out], dtype, false)?;
                    let up = input(&mut self.gen, &[67, out], dtype, false)?;
                    let run = |d: Device| -> Result<Vec<Tensor>> {
                        let ts: Vec<Tensor> = [&x, &w, &bias]
                            .iter()
                            .map(|t| t.to_device(d).map(|t| t.detach()))
                            .collect::<Result<_>>()?;
                        for t in &ts {
                            t.set_requires_grad(true)?;
                        }
                        let y = ts[0].linear_activation(&ts[1], Some(&ts[2]), act)?;
                        y.mul(&up.to_device(d)?)?
                            .to_dtype(DType::F32)?
                            .sum()?
                            .backward()?;
                        let mut out = vec![y.detach()];
                        for t in &ts {
                            out.push(
                                t.grad()
                                    .ok_or_else(|| kiln::Error::invalid("linear", "no gradient"))?,
                            );
                        }
                        Ok(out)
                    };
                    Ok((run(Device::Cpu)?, run(gpu())?))
                })();
                let name = match act {
                    Activation::Identity => "linear",
                    Activation::Relu => "linear + relu",
                    Activation::GeluTanh => "linear + gelu tanh",
                };
                for (i, part) in ["(bias epilogue)", "grad input", "grad weight", "grad bias"]
                    .iter()
                    .enumerate()
                {
                    let r = grads
                        .as_ref()
                        .map_err(|e: &kiln::Error| e.clone())
                        .map(|(c, g)| (c[i].clone(), g[i].clone()));
                    self.record_scaled(
                        &format!("{name} {part}"),
                        dtype,
                        &format!("x [67, 45], w [{out}, 45]"),
                        r,
                        60.0,
                    );
                }
            }
        }
    }
}
