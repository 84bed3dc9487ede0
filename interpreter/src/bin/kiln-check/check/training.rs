//! Cross-entropy forward and backward and the fused optimizer steps.

use super::*;

impl Checker {
    /// Cross-entropy forward (every reduction, ignore_index, label smoothing)
    /// and backward, by a warp and by a block per row and past the register
    /// cache; fused SGD / Adam / AdamW steps over odd sizes (packed and tail
    /// paths) and an unaligned view, three steps each so the state is compared too.
    pub(super) fn training(&mut self) {
        use kiln::tensor::loss::{CrossEntropyOptions, Reduction};
        use kiln::tensor::optim::{AdamOptions, SgdOptions};
        let d = gpu();
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (n, c) in [(64usize, 10usize), (33, 1000), (5, 50000), (300, 37)] {
                for (rname, reduction, smoothing) in [
                    ("mean", Reduction::Mean, 0.0),
                    ("sum", Reduction::Sum, 0.0),
                    ("none", Reduction::None, 0.0),
                    ("mean smoothed", Reduction::Mean, 0.1),
                ] {
                    let o = CrossEntropyOptions {
                        reduction,
                        ignore_index: 1,
                        label_smoothing: smoothing,
                    };
                    let layout = format!("[{n}, {c}] {rname}");
                    let r: Result<((Tensor, Tensor), (Tensor, Tensor))> = (|| {
                        let x = input(&mut self.gen, &[n, c], dtype, false)?
                            .mul_scalar(2.0)?
                            .to_dtype(dtype)?;
                        let y =
                            Tensor::randint(0, c as i64, &[n], Some(DType::I64), Device::Cpu, &mut self.gen)?;
                        let run = |x: &Tensor, y: &Tensor| -> Result<(Tensor, Tensor)> {
                            let x = x.detach();
                            x.set_requires_grad(true)?;
                            let l = x.cross_entropy(y, &o)?;
                            let s = if reduction == Reduction::None {
                                l.sum()?
                            } else {
                                l.clone()
                            };
                            s.backward()?;
                            let g = x
                                .grad()
                                .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))?;
                            Ok((l.detach(), g))
                        };
                        let (lc, gc) = run(&x, &y)?;
                        let (lg, gg) = run(&x.to_device(d)?, &y.to_device(d)?)?;
                        Ok(((lc, lg), (gc, gg)))
                    })();
                    let (fwd, bwd) = match r {
                        Ok((f, b)) => (Ok(f), Ok(b)),
                        Err(e) => (Err(e.clone()), Err(e)),
                    };
                    self.record_scaled("cross_entropy", dtype, &layout, fwd, 10.0);
                    self.record_scaled("cross_entropy bwd", dtype, &layout, bwd, 10.0);
                }
            }
            let sizes: [(&str, usize, usize); 4] = [
                ("n=1", 1, 0),
                ("n=1023", 1023, 0),
                ("n=100003", 100_003, 0),
                ("n=4099 offset 1", 4099, 1),
            ];
            for (name, n, off) in sizes {
                // a dense slice `off` elements into its storage (unaligned: the element path)
                let dense = |t: Tensor| -> Result<Tensor> { t.narrow(0, off as i64, n as i64) };
                for kind in ["sgd", "sgd nesterov", "adam", "adamw"] {
                    let r: Result<((Tensor, Tensor), (Tensor, Tensor))> = (|| {
                        let p0 = input(&mut self.gen, &[n + off], dtype, false)?;
                        let gs: Vec<Tensor> = (0..3)
                            .map(|_| input(&mut self.gen, &[n + off], dtype, false))
                            .collect::<Result<_>>()?;
                        let run = |dev: Device| -> Result<(Tensor, Tensor)> {
                            let p = dense(p0.to_device(dev)?.clone_data()?)?;
                            let s1 = dense(Tensor::zeros(
                                &[n + off],
                                Some(kiln::tensor::optim::state_dtype(dtype)),
                                dev,
                            )?)?;
                            let s2 = dense(Tensor::zeros(
                                &[n + off],
                                Some(kiln::tensor::optim::state_dtype(dtype)),
                                dev,
                            )?)?;
                            for (i, g) in gs.iter().enumerate() {
                                let g = dense(g.to_device(dev)?)?;
                                match kind {
                                    "sgd" | "sgd nesterov" => {
                                        let nesterov = kind == "sgd nesterov";
                                        let o = SgdOptions {
                                            lr: 0.05,
                                            momentum: 0.9,
                                            dampening: if nesterov { 0.0 } else { 0.1 },
                                            weight_decay: 0.01,
                                            nesterov,
                                            init_buffer: i == 0,
                                        };
                                        p.sgd_step_(&g, Some(&s1), &o)?;
                                    }
                                    _ => {
                                        let o = AdamOptions {
                                            lr: 0.01,
                                            weight_decay: 0.05,
                                            decoupled: kind == "adamw",
                                            ..Default::default()
                                        };
                                        p.adam_step_(&g, &s1, &s2, i as i64 + 1, &o)?;
                                    }
                                }
                            }
                            let s = if kind.starts_with("sgd") { s1 } else { s2 };
                            Ok((p, s))
                        };
                        let ((pc, sc), (pg, sg)) = (run(Device::Cpu)?, run(d)?);
                        Ok(((pc, pg), (sc, sg)))
                    })();
                    let (param, state) = match r {
                        Ok((p, s)) => (Ok(p), Ok(s)),
                        Err(e) => (Err(e.clone()), Err(e)),
                    };
                    self.record_scaled(&format!("{kind} param"), dtype, name, param, 10.0);
                    self.record_scaled(&format!("{kind} state"), dtype, name, state, 10.0);
                }
            }
        }
    }

    /// The multi-tensor AdamW and SGD steps (`adam_multi_*`, `sgd_multi_*`) over 30 parameters of
    /// mixed sizes (two launches of up to 24; chunks of one block and
    /// several; one parameter an unaligned slice), three steps, against
    /// the CPU; with the step given as a number, and as a count tensor on
    /// the device that the kernels read (what a CUDA graph records).
    pub(super) fn training_multi(&mut self) {
        use kiln::tensor::optim::{
            adam_step_multi_, sgd_step_multi_, state_dtype, AdamOptions, SgdOptions, StepCount,
        };
        let d = gpu();
        let sizes: Vec<usize> = (0..30).map(|i| [1, 4095, 4097, 9000, 33][i % 5] + i).collect();
        for (kind, dtype) in [
            "adamw",
            "sgd nesterov",
            "adamw (device count)",
            "sgd nesterov (device count)",
        ]
        .into_iter()
        .flat_map(|k| [DType::F32, DType::F64, DType::F16, DType::BF16].map(|d| (k, d)))
        {
            let r: Result<Vec<(Tensor, Tensor)>> = (|| {
                let p0: Vec<Tensor> = sizes
                    .iter()
                    .map(|&n| input(&mut self.gen, &[n + 1], dtype, false))
                    .collect::<Result<_>>()?;
                let gs: Vec<Vec<Tensor>> = (0..3)
                    .map(|_| {
                        sizes
                            .iter()
                            .map(|&n| input(&mut self.gen, &[n + 1], dtype, false))
                            .collect()
                    })
                    .collect::<Result<_>>()?;
                // parameter 7 is an unaligned dense slice, the rest whole tensors
                let cut = |i: usize, t: Tensor| -> Result<Tensor> {
                    let n = sizes[i] as i64;
                    t.narrow(0, if i == 7 { 1 } else { 0 }, n)
                };
                let run = |dev: Device| -> Result<Vec<Tensor>> {
                    let ps: Vec<Tensor> = p0
                        .iter()
                        .enumerate()
                        .map(|(i, p)| cut(i, p.to_device(dev)?.clone_data()?))
                        .collect::<Result<_>>()?;
                    let state = || -> Result<Vec<Tensor>> {
                        sizes
                            .iter()
                            .map(|&n| Tensor::zeros(&[n], Some(state_dtype(dtype)), dev))
                            .collect()
                    };
                    let (m, v) = (state()?, state()?);
                    let o = AdamOptions {
                        lr: 0.01,
                        weight_decay: 0.05,
                        decoupled: true,
                        ..Default::default()
                    };
                    for (step, g) in gs.iter().enumerate() {
                        let g: Vec<Tensor> = g
                            .iter()
                            .enumerate()
                            .map(|(i, t)| cut(i, t.to_device(dev)?))
                            .collect::<Result<_>>()?;
                        let counted = kind.ends_with("(device count)");
                        let count = Tensor::full(&[1], Scalar::Int(step as i64 + 1), Some(DType::I64), dev)?;
                        if kind.starts_with("adamw") {
                            let at = if counted {
                                StepCount::Tensor(&count)
                            } else {
                                StepCount::Host(step as i64 + 1)
                            };
                            adam_step_multi_(&ps, &g, &m, &v, at, &o)?;
                        } else {
                            let s = SgdOptions {
                                lr: 0.05,
                                momentum: 0.9,
                                dampening: 0.0,
                                weight_decay: 0.01,
                                nesterov: true,
                                init_buffer: !counted && step == 0,
                            };
                            let bufs: Vec<Option<Tensor>> = v.iter().cloned().map(Some).collect();
                            sgd_step_multi_(&ps, &g, &bufs, &s, counted.then_some(&count))?;
                        }
                    }
                    Ok(ps.into_iter().chain(v).collect())
                };
                let (c, g) = (run(Device::Cpu)?, run(d)?);
                Ok(c.into_iter().zip(g).collect())
            })();
            // parameters (in their dtype) then second moments (in the state dtype), end to end
            let joined = |part: std::ops::Range<usize>| {
                r.as_ref().map_err(|e| e.clone()).and_then(|pairs| {
                    let (c, g): (Vec<Tensor>, Vec<Tensor>) = pairs[part].iter().cloned().unzip();
                    Ok((Tensor::cat(&c, 0)?, Tensor::cat(&g, 0)?))
                })
            };
            let n = sizes.len();
            self.record_scaled(
                &format!("{kind} multi-tensor params"),
                dtype,
                "30 tensors",
                joined(0..n),
                10.0,
            );
            self.record_scaled(
                &format!("{kind} multi-tensor states"),
                dtype,
                "30 tensors",
                joined(n..2 * n),
                10.0,
            );
            if kind == "adamw" {
                self.clip_multi(dtype, &sizes);
            }
        }
    }

    /// `clip_grad_norm_` over gradients of `sizes` (the fused passes on
    /// CUDA): the returned norm and the clipped gradients, against the CPU.
    fn clip_multi(&mut self, dtype: DType, sizes: &[usize]) {
        let d = gpu();
        for (name, norm_type, max_norm) in [("2-norm", 2.0, 5.0), ("inf-norm", f64::INFINITY, 0.5)] {
            let r: Result<((Tensor, Tensor), (Tensor, Tensor))> = (|| {
                let gs: Vec<Tensor> = sizes
                    .iter()
                    .map(|&n| input(&mut self.gen, &[n], dtype, false))
                    .collect::<Result<_>>()?;
                let run = |dev: Device| -> Result<(Tensor, Tensor)> {
                    let ps: Vec<Tensor> = gs
                        .iter()
                        .map(|g| {
                            let p = Tensor::zeros(g.shape(), Some(dtype), dev)?;
                            p.set_requires_grad(true)?;
                            p.set_grad(Some(g.to_device(dev)?.clone_data()?))?;
                            Ok(p)
                        })
                        .collect::<Result<_>>()?;
                    let total = kiln::tensor::sampling::clip_grad_norm_(&ps, max_norm, norm_type)?;
                    let grads: Vec<Tensor> = ps.iter().filter_map(|p| p.grad()).collect();
                    Ok((total.reshape(&[1])?, Tensor::cat(&grads, 0)?))
                };
                let ((tc, gc), (tg, gg)) = (run(Device::Cpu)?, run(d)?);
                Ok(((tc, tg), (gc, gg)))
            })();
            let (total, grads) = match r {
                Ok((t, g)) => (Ok(t), Ok(g)),
                Err(e) => (Err(e.clone()), Err(e)),
            };
            let layout = format!("{} tensors", sizes.len());
            self.record_scaled(
                &format!("clip_grad_norm_ {name} total"),
                dtype,
                &layout,
                total,
                10.0,
            );
            self.record_scaled(
                &format!("clip_grad_norm_ {name} grads"),
                dtype,
                &layout,
                grads,
                10.0,
            );
        }
    }
}
