//! Unary, binary and comparison ops over every dtype and input layout, casts
//! and copies, and copies between devices.

use super::*;

impl Checker {
    pub(super) fn unary(&mut self) {
        // every row of the op table, for every dtype it computes in
        for dtype in DType::ALL {
            for &op in UnaryOp::ALL {
                if op.result_dtype(dtype) != Some(dtype) && op.rule() != UnaryRule::Logical {
                    continue;
                }
                // positive inputs where the op needs them (and for reciprocal,
                // whose values near zero would only test the tolerance)
                let positive = op.domain() == Domain::Positive || op == UnaryOp::Reciprocal;
                for (name, shape, view) in layouts() {
                    let r = input(&mut self.gen, &shape, dtype, positive).and_then(|x| {
                        // inputs inside the op's domain
                        let x = match op.domain() {
                            Domain::Unit => x.to_dtype(DType::F64)?.tanh()?.to_dtype(dtype)?,
                            Domain::AboveOne => {
                                x.to_dtype(DType::F64)?.abs()?.add_scalar(1.25)?.to_dtype(dtype)?
                            }
                            _ => x,
                        };
                        let v = view(&x)?;
                        let c = v.unary(op)?;
                        let g = view(&x.to_device(gpu())?)?.unary(op)?;
                        Ok((c, g))
                    });
                    self.record(op.name(), dtype, name, r);
                }
            }
        }
    }

    pub(super) fn binary(&mut self) {
        use BinaryOp::*;
        // every row of the binary table, for every dtype it computes in
        for dtype in DType::ALL {
            for &op in BinaryOp::ALL {
                if !op.accepts(dtype) {
                    continue;
                }
                let positive = matches!(op, Rem | Fmod | FloorDivide | Pow | Polygamma)
                    || (dtype == DType::U8 && op == Sub);
                // whole-number exponents of integer powers, and polygamma's order
                let small_ints = (op == Pow && !dtype.is_float()) || op == Polygamma;
                for (name, shape, view) in layouts() {
                    let r = (|| {
                        let a = input(&mut self.gen, &shape, dtype, positive || small_ints)?;
                        let b = if small_ints {
                            Tensor::randint(0, 4, &shape, Some(DType::I64), Device::Cpu, &mut self.gen)?
                                .to_dtype(dtype)?
                        } else {
                            input(&mut self.gen, &shape, dtype, positive)?
                        };
                        let (va, vb) = (view(&a)?, view(&b)?);
                        let c = va.binary(op, &vb)?;
                        let (ga, gb) = (a.to_device(gpu())?, b.to_device(gpu())?);
                        let g = view(&ga)?.binary(op, &view(&gb)?)?;
                        Ok((c, g))
                    })();
                    self.record(op.name(), dtype, name, r);
                }
                // broadcasting a column against a row
                let r = (|| {
                    let a = input(&mut self.gen, &[37, 1], dtype, positive)?;
                    let b = input(&mut self.gen, &[65], dtype, positive)?;
                    let c = a.binary(op, &b)?;
                    let g = a.to_device(gpu())?.binary(op, &b.to_device(gpu())?)?;
                    Ok((c, g))
                })();
                self.record(op.name(), dtype, "broadcast", r);
                // with a host scalar on either side
                let scalar = match dtype {
                    d if d.is_float() => Scalar::Float(1.75),
                    DType::Bool => Scalar::Bool(true),
                    _ => Scalar::Int(3),
                };
                for rev in [false, true] {
                    let r = (|| {
                        let a = input(&mut self.gen, &[65, 37], dtype, positive || op == Pow)?.t()?;
                        let c = a.binary_scalar(op, scalar, rev)?;
                        let g = a.to_device(gpu())?.binary_scalar(op, scalar, rev)?;
                        Ok((c, g))
                    })();
                    self.record(op.name(), dtype, if rev { "scalar-first" } else { "scalar" }, r);
                }
            }
            for &op in CmpOp::ALL {
                let r = (|| {
                    let a = input(&mut self.gen, &[37, 1], dtype, false)?;
                    let b = input(&mut self.gen, &[65], dtype, false)?;
                    let c = a.compare(op, &b)?;
                    let g = a.to_device(gpu())?.compare(op, &b.to_device(gpu())?)?;
                    Ok((c, g))
                })();
                self.record(op.name(), dtype, "broadcast", r);
                let r = (|| {
                    let a = input(&mut self.gen, &[37, 65], dtype, false)?;
                    let s = if dtype.is_float() {
                        Scalar::Float(0.5)
                    } else {
                        Scalar::Int(1)
                    };
                    let c = a.compare_scalar(op, s, true)?;
                    let g = a.to_device(gpu())?.compare_scalar(op, s, true)?;
                    Ok((c, g))
                })();
                self.record(op.name(), dtype, "scalar-first", r);
            }
            let r = (|| {
                let c0 = input(&mut self.gen, &[37, 65], DType::Bool, false)?;
                let a = input(&mut self.gen, &[65, 37], dtype, false)?.t()?;
                let b = input(&mut self.gen, &[65], dtype, false)?;
                let c = Tensor::where_cond(&c0, &a, &b)?;
                let d = gpu();
                let g = Tensor::where_cond(&c0.to_device(d)?, &a.to_device(d)?, &b.to_device(d)?)?;
                Ok((c, g))
            })();
            self.record("where", dtype, "transposed+broadcast", r);
        }
    }

    pub(super) fn casts_and_copies(&mut self) {
        for src in DType::ALL {
            for dst in DType::ALL {
                for (name, shape, view) in layouts() {
                    let r = input(&mut self.gen, &shape, src, false).and_then(|x| {
                        let x = x
                            .mul_scalar(if src.is_float() { 8.0 } else { 1.0 })?
                            .to_dtype(src)?;
                        self.both(&x, |t| view(t)?.to_dtype(dst))
                    });
                    self.record(&format!("cast->{dst}"), src, name, r);
                }
            }
            // casts must agree bit for bit: report the first element that does not
            for dst in [DType::BF16, DType::F16] {
                if !src.is_float() || src == dst {
                    continue;
                }
                for (name, shape, view) in layouts() {
                    let r = (|| {
                        let x = input(&mut self.gen, &shape, src, false)?
                            .mul_scalar(8.0)?
                            .to_dtype(src)?;
                        let v = view(&x)?;
                        let c = v.to_dtype(dst)?;
                        let g = view(&x.to_device(gpu())?)?.to_dtype(dst)?;
                        let (hx, hc, hg) = (
                            values(&v.to_host()?),
                            values(&c.to_host()?),
                            values(&g.to_host()?),
                        );
                        if let Some(i) =
                            (0..hc.len()).find(|&i| hc[i] != hg[i] && !(hc[i].is_nan() && hg[i].is_nan()))
                        {
                            return Err(kiln::Error::invalid(
                                "cast",
                                format!(
                                    "element {i}: input {:e} ({:#x}) -> cpu {:e}, gpu {:e}",
                                    hx[i],
                                    (hx[i] as f32).to_bits(),
                                    hc[i],
                                    hg[i]
                                ),
                            ));
                        }
                        Ok((c.clone(), c))
                    })();
                    self.record(&format!("exact cast->{dst}"), src, name, r);
                }
            }
            // in-place write through a strided view, and cat/stack on top of it
            let r = (|| {
                let base = input(&mut self.gen, &[37, 65], src, false)?;
                let patch = input(&mut self.gen, &[19, 37], src, false)?;
                self.both(&base, |b| {
                    let b = b.clone_data()?;
                    let p = patch.to_device(b.device())?;
                    b.slice(1, Some(3), Some(60), 3)?.copy_(&p.t()?)?;
                    Tensor::cat(&[b.clone(), b.t()?.contiguous()?.t()?], 0)
                })
            })();
            self.record("copy_/cat", src, "sliced", r);
            self.cross_device_copies(src);
            let make = |d: Device| -> Result<Tensor> {
                let (a, b, s) = (Scalar::Int(0), Scalar::Int(7), Scalar::Int(1));
                let row = Tensor::arange(a, b, s, Some(src), d)?;
                Tensor::full(&[45, 7], Scalar::Int(1), Some(src), d)?.maximum(&row)
            };
            let r = make(Device::Cpu).and_then(|c| Ok((c, make(gpu())?)));
            self.record("full+arange", src, "broadcast", r);
        }
    }

    /// `copy_` across devices, both ways: into whole and sliced destinations,
    /// from every checked layout, small (through the driver) and large
    /// (through the pinned staging buffers, several chunks).
    pub(super) fn cross_device_copies(&mut self, dtype: DType) {
        let gpu = gpu();
        let mut cases: Vec<(&'static str, Vec<usize>, View)> = layouts();
        cases.push(("large", vec![5000, 1700], |t| Ok(t.clone())));
        for (name, shape, view) in cases {
            // (destination on `to`, written in place)
            let copy = |x: &Tensor, to: Device, sliced: bool| -> Result<Tensor> {
                let v = view(x)?;
                let dst = Tensor::full(&[v.shape()[0], v.shape()[1] + 4], Scalar::Int(3), Some(dtype), to)?;
                let target = if sliced {
                    dst.narrow(1, 2, v.shape()[1] as i64)?
                } else {
                    dst.narrow(1, 0, v.shape()[1] as i64)?.contiguous()?
                };
                target.copy_(&v)?;
                Ok(if sliced { dst } else { target })
            };
            for sliced in [false, true] {
                let label = if sliced {
                    format!("{name}, into a slice")
                } else {
                    name.to_string()
                };
                let r = input(&mut self.gen, &shape, dtype, false).and_then(|x| {
                    let c = copy(&x, Device::Cpu, sliced)?;
                    let down = copy(&x.to_device(gpu)?, Device::Cpu, sliced)?;
                    let up = copy(&x, gpu, sliced)?;
                    let (c1, d1) = (c.to_host()?, down.to_host()?);
                    if c1 != d1 {
                        return Err(kiln::Error::invalid(
                            "copy_",
                            "host.copy_(device) differs from the CPU copy",
                        ));
                    }
                    Ok((c, up))
                });
                self.record("copy_ across devices", dtype, &label, r);
            }
        }
    }
}
