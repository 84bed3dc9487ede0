//! The CPU-vs-CUDA differential check: every op the CUDA backend runs, for
//! every dtype it supports, through contiguous, transposed, broadcast, sliced
//! and expanded inputs, computed on both backends from the same random inputs
//! and compared within per-dtype tolerances. Also checks that op chains are
//! queued asynchronously. Run by the `kiln-check` binary on a GPU machine.

use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::{DType, Device, HostValues, Scalar};
use crate::tensor::{Generator, Tensor};
use crate::Result;

/// One compared case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The op.
    pub op: String,
    /// The dtype computed in.
    pub dtype: String,
    /// The input layout.
    pub layout: String,
    /// Largest difference relative to the tolerance (pass when <= 1).
    pub worst: f64,
    /// Failure message, if any.
    pub error: Option<String>,
}

impl Case {
    /// True when within tolerance.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.worst <= 1.0
    }
}

/// Absolute and relative tolerance for comparing results of `dtype`.
pub fn tolerance(dtype: DType) -> (f64, f64) {
    match dtype {
        DType::F64 => (1e-10, 1e-10),
        DType::F32 => (1e-5, 2e-5),
        DType::F16 => (2e-3, 2e-3),
        DType::BF16 => (2e-2, 1.6e-2),
        _ => (0.0, 0.0),
    }
}

fn values(v: &HostValues) -> Vec<f64> {
    match v {
        HostValues::Bool(b) => b.iter().map(|&x| x as u8 as f64).collect(),
        HostValues::Int(i) => i.iter().map(|&x| x as f64).collect(),
        HostValues::Float(f) => f.clone(),
    }
}

/// Worst |a-b| / (scale·atol + rtol |a|) over all elements (NaN = NaN, inf = inf).
fn worst(cpu: &Tensor, gpu: &Tensor, dtype: DType, scale: f64) -> Result<f64> {
    if cpu.shape() != gpu.shape() || cpu.dtype() != gpu.dtype() {
        return Ok(f64::INFINITY);
    }
    let (a, b) = (values(&cpu.to_host()?), values(&gpu.to_host()?));
    // results are compared at the precision of the result's dtype
    let (atol, rtol) = tolerance(if cpu.dtype().is_float() {
        cpu.dtype()
    } else {
        dtype
    });
    let mut w: f64 = 0.0;
    for (x, y) in a.iter().zip(&b) {
        let same = (x.is_nan() && y.is_nan()) || x == y;
        if same {
            continue;
        }
        let d = (x - y).abs() / (scale * atol + rtol * x.abs());
        w = w.max(if d.is_nan() { f64::INFINITY } else { d });
    }
    Ok(w)
}

struct Checker {
    cases: Vec<Case>,
    gen: Generator,
}

/// An input of `shape` for `dtype`: normal floats, small ints, random bools.
fn input(gen: &mut Generator, shape: &[usize], dtype: DType, positive: bool) -> Result<Tensor> {
    let t = match dtype {
        d if d.is_float() => {
            let t = Tensor::randn(shape, Some(DType::F64), Device::Cpu, gen)?;
            if positive {
                t.abs()?.add_scalar(0.25)?.to_dtype(d)?
            } else {
                t.mul_scalar(2.0)?.to_dtype(d)?
            }
        }
        DType::Bool => Tensor::randint(0, 2, shape, Some(DType::Bool), Device::Cpu, gen)?,
        DType::U8 => Tensor::randint(positive as i64, 16, shape, Some(DType::U8), Device::Cpu, gen)?,
        d => Tensor::randint(
            if positive { 1 } else { -20 },
            20,
            shape,
            Some(d),
            Device::Cpu,
            gen,
        )?,
    };
    Ok(t)
}

/// The layouts each input is checked through: (name, base shape, view).
/// A view applied to a checked input.
type View = fn(&Tensor) -> Result<Tensor>;

/// A matmul case: name, shapes of A and B, and the views applied to them.
type MatmulCase = (&'static str, Vec<usize>, Vec<usize>, View, View);

fn layouts() -> Vec<(&'static str, Vec<usize>, View)> {
    vec![
        ("contiguous", vec![37, 65], |t| Ok(t.clone())),
        ("transposed", vec![65, 37], |t| t.t()),
        ("sliced", vec![37, 130], |t| t.slice(1, Some(1), None, 2)),
        ("expanded", vec![1, 65], |t| t.expand(&[37, 65])),
        ("permuted3d", vec![5, 65, 37], |t| {
            t.permute(&[2, 1, 0])?.select(2, 3)
        }),
    ]
}

impl Checker {
    fn record(&mut self, op: &str, dtype: DType, layout: &str, r: Result<(Tensor, Tensor)>) {
        self.record_scaled(op, dtype, layout, r, 1.0)
    }

    /// `scale` widens the absolute tolerance (sums of many terms round more).
    fn record_scaled(
        &mut self,
        op: &str,
        dtype: DType,
        layout: &str,
        r: Result<(Tensor, Tensor)>,
        scale: f64,
    ) {
        let (w, error) = match r.and_then(|(c, g)| worst(&c, &g, dtype, scale)) {
            Ok(w) => (w, None),
            Err(e) => (f64::INFINITY, Some(e.to_string())),
        };
        self.cases.push(Case {
            op: op.to_string(),
            dtype: dtype.name().to_string(),
            layout: layout.to_string(),
            worst: w,
            error,
        });
    }

    fn both(&mut self, x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<(Tensor, Tensor)> {
        let c = f(x)?;
        let g = f(&x.to_device(Device::Cuda(0))?)?;
        Ok((c, g))
    }

    fn unary(&mut self) {
        use UnaryOp::*;
        let ops = [
            Abs, Neg, Exp, Log, Log2, Log1p, Expm1, Sqrt, Rsqrt, Sin, Cos, Tan, Tanh, Sigmoid, Relu, Gelu,
            Silu, Erf, Floor, Ceil, Round, Sign, Square, Reciprocal, LogicalNot,
        ];
        for dtype in DType::ALL {
            for op in ops {
                if op.result_dtype(dtype) != Some(dtype) && op != LogicalNot {
                    continue;
                }
                let positive = matches!(op, Log | Log2 | Log1p | Sqrt | Rsqrt | Reciprocal);
                for (name, shape, view) in layouts() {
                    let r = input(&mut self.gen, &shape, dtype, positive).and_then(|x| {
                        let v = view(&x)?;
                        let c = v.unary(op)?;
                        let g = view(&x.to_device(Device::Cuda(0))?)?.unary(op)?;
                        Ok((c, g))
                    });
                    self.record(op.name(), dtype, name, r);
                }
            }
        }
    }

    fn binary(&mut self) {
        use BinaryOp::*;
        for dtype in DType::ALL {
            for op in [
                Add, Sub, Mul, Div, Rem, Pow, Maximum, Minimum, BitAnd, BitOr, BitXor,
            ] {
                let skip = (dtype == DType::Bool && matches!(op, Sub | Rem | Pow | Div))
                    || (dtype.is_float() && op.is_bitwise())
                    || (!dtype.is_float() && op == Div);
                if skip {
                    continue;
                }
                let positive = matches!(op, Rem | Pow) || (dtype == DType::U8 && op == Sub);
                for (name, shape, view) in layouts() {
                    let r = (|| {
                        let a = input(
                            &mut self.gen,
                            &shape,
                            dtype,
                            positive || (op == Pow && !dtype.is_float()),
                        )?;
                        let b = if op == Pow && !dtype.is_float() {
                            Tensor::randint(0, 4, &shape, Some(dtype), Device::Cpu, &mut self.gen)?
                        } else {
                            input(&mut self.gen, &shape, dtype, positive)?
                        };
                        let (va, vb) = (view(&a)?, view(&b)?);
                        let c = va.binary(op, &vb)?;
                        let (ga, gb) = (a.to_device(Device::Cuda(0))?, b.to_device(Device::Cuda(0))?);
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
                    let g = a
                        .to_device(Device::Cuda(0))?
                        .binary(op, &b.to_device(Device::Cuda(0))?)?;
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
                        let g = a.to_device(Device::Cuda(0))?.binary_scalar(op, scalar, rev)?;
                        Ok((c, g))
                    })();
                    self.record(op.name(), dtype, if rev { "scalar-first" } else { "scalar" }, r);
                }
            }
            for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
                let r = (|| {
                    let a = input(&mut self.gen, &[37, 1], dtype, false)?;
                    let b = input(&mut self.gen, &[65], dtype, false)?;
                    let c = a.compare(op, &b)?;
                    let g = a
                        .to_device(Device::Cuda(0))?
                        .compare(op, &b.to_device(Device::Cuda(0))?)?;
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
                    let g = a.to_device(Device::Cuda(0))?.compare_scalar(op, s, true)?;
                    Ok((c, g))
                })();
                self.record(op.name(), dtype, "scalar-first", r);
            }
            let r = (|| {
                let c0 = input(&mut self.gen, &[37, 65], DType::Bool, false)?;
                let a = input(&mut self.gen, &[65, 37], dtype, false)?.t()?;
                let b = input(&mut self.gen, &[65], dtype, false)?;
                let c = Tensor::where_cond(&c0, &a, &b)?;
                let d = Device::Cuda(0);
                let g = Tensor::where_cond(&c0.to_device(d)?, &a.to_device(d)?, &b.to_device(d)?)?;
                Ok((c, g))
            })();
            self.record("where", dtype, "transposed+broadcast", r);
        }
    }

    fn casts_and_copies(&mut self) {
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
                        let g = view(&x.to_device(Device::Cuda(0))?)?.to_dtype(dst)?;
                        let (hx, hc, hg) = (
                            values(&v.to_host()?),
                            values(&c.to_host()?),
                            values(&g.to_host()?),
                        );
                        if let Some(i) =
                            (0..hc.len()).find(|&i| hc[i] != hg[i] && !(hc[i].is_nan() && hg[i].is_nan()))
                        {
                            return Err(crate::Error::invalid(
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
            let r = make(Device::Cpu).and_then(|c| Ok((c, make(Device::Cuda(0))?)));
            self.record("full+arange", src, "broadcast", r);
        }
    }

    /// `copy_` across devices, both ways: into whole and sliced destinations,
    /// from every checked layout, small (through the driver) and large
    /// (through the pinned staging buffers, several chunks).
    fn cross_device_copies(&mut self, dtype: DType) {
        let gpu = Device::Cuda(0);
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
                        return Err(crate::Error::invalid(
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

    fn reductions(&mut self) {
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

    fn nn(&mut self) {
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
        }
    }

    fn random(&mut self) {
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for normal in [false, true] {
                let r = (|| {
                    let mut g1 = Generator::new(1234);
                    let mut g2 = Generator::new(1234);
                    let shape = [1000, 37];
                    let (c, g) = if normal {
                        (
                            Tensor::randn(&shape, Some(dtype), Device::Cpu, &mut g1)?,
                            Tensor::randn(&shape, Some(dtype), Device::Cuda(0), &mut g2)?,
                        )
                    } else {
                        (
                            Tensor::rand(&shape, Some(dtype), Device::Cpu, &mut g1)?,
                            Tensor::rand(&shape, Some(dtype), Device::Cuda(0), &mut g2)?,
                        )
                    };
                    Ok((c, g))
                })();
                self.record(if normal { "randn" } else { "rand" }, dtype, "seeded", r);
            }
        }
        for dtype in [DType::I64, DType::I32, DType::U8] {
            let r = (|| {
                let (mut g1, mut g2) = (Generator::new(99), Generator::new(99));
                Ok((
                    Tensor::randint(-3, 100, &[999], Some(dtype), Device::Cpu, &mut g1)?,
                    Tensor::randint(-3, 100, &[999], Some(dtype), Device::Cuda(0), &mut g2)?,
                ))
            })();
            self.record("randint", dtype, "seeded", r);
        }
    }

    fn matmul(&mut self) {
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
            ];
            for (name, sa, sb, va, vb) in cases {
                let r = (|| {
                    let a = input(&mut self.gen, &sa, dtype, false)?;
                    let b = input(&mut self.gen, &sb, dtype, false)?;
                    let c = va(&a)?.matmul(&vb(&b)?)?;
                    let d = Device::Cuda(0);
                    let g = va(&a.to_device(d)?)?.matmul(&vb(&b.to_device(d)?)?)?;
                    Ok((c, g))
                })();
                // a 45-term dot product of N(0, 4) values rounds more than one op
                self.record_scaled("matmul", dtype, name, r, 30.0);
            }
        }
    }
}

impl Checker {
    /// The CUDA backend's dense kernels at the shapes that pick each of their
    /// branches: row reductions split into chunks or not, packed or not (odd
    /// lengths, unaligned offsets), column reductions over a middle axis with
    /// and without chunks; softmax and layer norm by a warp, by a block, and
    /// past the register cache; tiled transposes (2-D, batched 3-D, into a
    /// view); row-broadcast binaries on either side.
    fn dense_paths(&mut self) {
        type Case = (&'static str, Vec<usize>, fn(&Tensor) -> Result<Tensor>);
        let reductions: Vec<Case> = vec![
            ("[5, 20000] dim1", vec![5, 20000], |t| {
                t.reduce(ReduceOp::Sum, Some(&[1]), false)
            }),
            ("[5, 20001] dim1 max", vec![5, 20001], |t| {
                t.reduce(ReduceOp::Max, Some(&[1]), false)
            }),
            ("[3, 4097] offset 1 mean", vec![3, 4097], |t| {
                t.flatten(0, -1)?.narrow(0, 1, 12288)?.view(&[3, 4096])?.reduce(
                    ReduceOp::Mean,
                    Some(&[1]),
                    true,
                )
            }),
            ("[3000, 130] dim0", vec![3000, 130], |t| {
                t.reduce(ReduceOp::Sum, Some(&[0]), false)
            }),
            ("[3000, 130] dim0 min", vec![3000, 130], |t| {
                t.reduce(ReduceOp::Min, Some(&[0]), false)
            }),
            ("[7, 300, 5] dim1", vec![7, 300, 5], |t| {
                t.reduce(ReduceOp::Mean, Some(&[1]), false)
            }),
            ("[4, 6, 50, 9] dims[1,2]", vec![4, 6, 50, 9], |t| {
                t.reduce(ReduceOp::Sum, Some(&[1, 2]), true)
            }),
            ("[700, 600] dim0", vec![700, 600], |t| {
                t.reduce(ReduceOp::Max, Some(&[0]), false)
            }),
            ("[2^21] all", vec![1 << 21], |t| {
                t.reduce(ReduceOp::Sum, None, false)
            }),
        ];
        let rows: Vec<Case> = vec![
            ("softmax rows of 100", vec![77, 100], |t| t.softmax(-1)),
            ("softmax rows of 1000", vec![33, 1000], |t| t.softmax(-1)),
            ("log_softmax rows of 5000", vec![9, 5000], |t| t.log_softmax(-1)),
            ("softmax rows of 20000", vec![3, 20000], |t| t.softmax(-1)),
            ("layer_norm rows of 1000", vec![33, 1000], |t| {
                t.layer_norm(&[1000], None, None, 1e-5)
            }),
            ("layer_norm rows of 20000", vec![3, 20000], |t| {
                t.layer_norm(&[20000], None, None, 1e-5)
            }),
        ];
        let copies: Vec<Case> = vec![
            ("transpose [300, 500]", vec![300, 500], |t| t.t()?.contiguous()),
            ("permute(0,2,1) [6, 70, 45]", vec![6, 70, 45], |t| {
                t.permute(&[0, 2, 1])?.contiguous()
            }),
            ("copy_ transposed into dense", vec![40, 90], |t| {
                let y = t.t()?.clone_data()?;
                y.copy_(&t.t()?)?;
                Ok(y)
            }),
            ("row broadcast M + v", vec![300, 64], |t| t.add(&t.select(0, 3)?)),
            ("row broadcast v * M", vec![300, 64], |t| t.select(0, 5)?.mul(t)),
        ];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (name, shape, f) in &reductions {
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record_scaled("dense reduce", dtype, name, r, 100.0);
            }
            for (name, shape, f) in &rows {
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record_scaled(name.split(' ').next().unwrap_or(name), dtype, name, r, 10.0);
            }
        }
        for dtype in DType::ALL {
            for (name, shape, f) in &copies {
                if name.starts_with("row") && !dtype.is_float() {
                    continue;
                }
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record("dense copy", dtype, name, r);
            }
        }
    }
}

impl Checker {
    /// Cross-entropy forward (every reduction, ignore_index, label smoothing)
    /// and backward, by a warp and by a block per row and past the register
    /// cache; fused SGD / Adam / AdamW steps over odd sizes (packed and tail
    /// paths) and an unaligned view, three steps each so the state is compared too.
    fn training(&mut self) {
        use crate::tensor::loss::{CrossEntropyOptions, Reduction};
        use crate::tensor::optim::{AdamOptions, SgdOptions};
        let d = Device::Cuda(0);
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
                                .ok_or_else(|| crate::Error::invalid("check", "no gradient"))?;
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
                                Some(crate::tensor::optim::state_dtype(dtype)),
                                dev,
                            )?)?;
                            let s2 = dense(Tensor::zeros(
                                &[n + off],
                                Some(crate::tensor::optim::state_dtype(dtype)),
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
}

impl Checker {
    /// `index_select`, `gather`, `index_add` and `scatter_add` for every dtype
    /// they support, through the usual input layouts, with contiguous, strided
    /// and i32 indices full of repeats (and a transposed index for gather and
    /// scatter_add); the backward of index_select and gather (repeated indices
    /// accumulate with atomics on CUDA), also for an embedding-sized table with
    /// heavy contention; `randperm` seeded alike on both devices.
    fn indexing(&mut self) {
        use crate::core::index::scatter_dtype;
        let dev = Device::Cuda(0);
        // an index of `n` values in `0..size` (many repeats), in one of three forms
        fn index(gen: &mut Generator, kind: &str, size: usize, n: usize) -> Result<Tensor> {
            let hi = size as i64;
            match kind {
                "strided idx" => {
                    Tensor::randint(0, hi, &[2 * n], None, Device::Cpu, gen)?.slice(0, Some(1), None, 2)
                }
                "i32 idx" => Tensor::randint(0, hi, &[n], Some(DType::I32), Device::Cpu, gen),
                _ => Tensor::randint(0, hi, &[n], None, Device::Cpu, gen),
            }
        }
        let kinds = ["idx", "strided idx", "i32 idx"];
        for dtype in DType::ALL {
            let sums = scatter_dtype(dtype).is_some();
            for (lname, shape, view) in layouts() {
                for dim in [0usize, 1] {
                    let size = [37, 65][dim];
                    for kind in kinds {
                        let what = format!("{lname} dim{dim} {kind}");
                        let r = (|| {
                            let x = input(&mut self.gen, &shape, dtype, false)?;
                            let i = index(&mut self.gen, kind, size, 50)?;
                            let c = view(&x)?.index_select(dim as i64, &i)?;
                            let g = view(&x.to_device(dev)?)?.index_select(dim as i64, &i.to_device(dev)?)?;
                            Ok((c, g))
                        })();
                        self.record("index_select", dtype, &what, r);
                        if !sums {
                            continue;
                        }
                        // 50 slices of src added into `size` slices of the viewed input
                        let r = (|| {
                            let x = input(&mut self.gen, &shape, dtype, false)?;
                            let i = index(&mut self.gen, kind, size, 50)?;
                            let src_shape = if dim == 0 { [50, 65] } else { [37, 50] };
                            let src = input(&mut self.gen, &src_shape, dtype, false)?;
                            let c = view(&x)?.index_add(dim as i64, &i, &src)?;
                            let g = view(&x.to_device(dev)?)?.index_add(
                                dim as i64,
                                &i.to_device(dev)?,
                                &src.to_device(dev)?,
                            )?;
                            Ok((c, g))
                        })();
                        self.record_scaled("index_add", dtype, &what, r, 10.0);
                    }
                    // gather with an index of [30, 65] (dim 0) or [37, 40] (dim 1), dense or transposed
                    for transposed in [false, true] {
                        let ishape = if dim == 0 { [30, 65] } else { [37, 40] };
                        let what = format!(
                            "{lname} dim{dim} {}",
                            if transposed { "transposed idx" } else { "idx" }
                        );
                        let make = |gen: &mut Generator| -> Result<Tensor> {
                            if transposed {
                                Tensor::randint(
                                    0,
                                    size as i64,
                                    &[ishape[1], ishape[0]],
                                    None,
                                    Device::Cpu,
                                    gen,
                                )?
                                .t()
                            } else {
                                Tensor::randint(0, size as i64, &ishape, None, Device::Cpu, gen)
                            }
                        };
                        let r = (|| {
                            let x = input(&mut self.gen, &shape, dtype, false)?;
                            let i = make(&mut self.gen)?;
                            let c = view(&x)?.gather(dim as i64, &i)?;
                            let g = view(&x.to_device(dev)?)?.gather(dim as i64, &i.to_device(dev)?)?;
                            Ok((c, g))
                        })();
                        self.record("gather", dtype, &what, r);
                        if !sums {
                            continue;
                        }
                        // src larger than the index, read through a transposed view
                        let r = (|| {
                            let x = input(&mut self.gen, &shape, dtype, false)?;
                            let i = make(&mut self.gen)?;
                            let src = input(&mut self.gen, &[70, 45], dtype, false)?.t()?;
                            let c = view(&x)?.scatter_add(dim as i64, &i, &src)?;
                            let g = view(&x.to_device(dev)?)?.scatter_add(
                                dim as i64,
                                &i.to_device(dev)?,
                                &src.to_device(dev)?,
                            )?;
                            Ok((c, g))
                        })();
                        self.record_scaled("scatter_add", dtype, &what, r, 10.0);
                    }
                }
            }
        }
        // gradients: x.grad of (op(x) * w).sum(), repeated indices accumulating
        type Grad = (
            &'static str,
            Vec<usize>,
            fn(&mut Generator) -> Result<Tensor>,
            fn(&Tensor, &Tensor) -> Result<Tensor>,
        );
        let grads: Vec<Grad> = vec![
            (
                "index_select dim0",
                vec![37, 65],
                |g| Tensor::randint(0, 37, &[200], None, Device::Cpu, g),
                |x, i| x.index_select(0, i),
            ),
            (
                "index_select dim1",
                vec![37, 65],
                |g| Tensor::randint(0, 65, &[90], None, Device::Cpu, g),
                |x, i| x.t()?.index_select(0, i),
            ),
            (
                "gather dim0",
                vec![37, 65],
                |g| Tensor::randint(0, 37, &[100, 65], None, Device::Cpu, g),
                |x, i| x.gather(0, i),
            ),
            (
                "gather dim-1 transposed",
                vec![37, 65],
                |g| Tensor::randint(0, 65, &[50, 37], None, Device::Cpu, g)?.t(),
                |x, i| x.gather(-1, i),
            ),
            (
                "embedding [1000, 64] 8192 ids in 0..50",
                vec![1000, 64],
                |g| Tensor::randint(0, 50, &[8192], None, Device::Cpu, g),
                |x, i| x.index_select(0, i),
            ),
        ];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (what, shape, make, f) in &grads {
                let r = (|| {
                    let x = input(&mut self.gen, shape, dtype, false)?;
                    let i = make(&mut self.gen)?;
                    let run = |d: Device, w: Option<&Tensor>| -> Result<(Tensor, Tensor)> {
                        // a fresh leaf each run (to_device of a CPU tensor to the CPU is the tensor itself)
                        let x = x.to_device(d)?.detach();
                        x.set_requires_grad(true)?;
                        let y = f(&x, &i.to_device(d)?)?;
                        let w = match w {
                            Some(w) => w.to_device(d)?,
                            None => y.ones_like()?,
                        };
                        y.mul(&w)?.sum()?.backward()?;
                        let g = x
                            .grad()
                            .ok_or_else(|| crate::Error::invalid("check", "no gradient"))?;
                        Ok((y.detach(), g))
                    };
                    let (y, _) = run(Device::Cpu, None)?;
                    let w = input(&mut self.gen, y.shape(), dtype, false)?;
                    let (_, c) = run(Device::Cpu, Some(&w))?;
                    let (_, g) = run(dev, Some(&w))?;
                    Ok((c, g))
                })();
                self.record_scaled("index bwd", dtype, what, r, 100.0);
            }
        }
        for dtype in [DType::I64, DType::I32, DType::F32] {
            for n in [1i64, 10, 1000, 100_003] {
                let r = (|| {
                    let (mut g1, mut g2) = (Generator::new(77), Generator::new(77));
                    Ok((
                        Tensor::randperm(n, Some(dtype), Device::Cpu, &mut g1)?,
                        Tensor::randperm(n, Some(dtype), dev, &mut g2)?,
                    ))
                })();
                self.record("randperm", dtype, &format!("seeded n={n}"), r);
            }
        }
    }
}

/// Engines on several threads at once, each on its own stream: four
/// interpreters run the same training-like script (matmul, softmax,
/// reductions, backward) on CUDA concurrently, then a tensor made by one
/// engine is used by another on a different thread (the stream handoff).
/// Every result must match the same script on the CPU.
pub fn engines_on_threads() -> std::result::Result<String, String> {
    use crate::Interpreter;
    const SCRIPT: &str = "
        seed(SEED);
        let x = randn([512, 256]);
        let w = (randn([256, 64]) * 0.1).requires_grad(true);
        let total = 0.0;
        for i in 0..20 {
            let p = (x @ w).softmax(-1);
            let loss = (p * p).sum();
            loss.backward();
            total += loss.item();
            no_grad(|| { w -= w.grad * 0.01; });
            w.zero_grad();
        }
        [total, w.sum().item(), w.abs().max().item()]";
    let run = |device: Device, seed: i64| -> std::result::Result<Vec<f64>, String> {
        let mut k = Interpreter::builder()
            .device(device)
            .build()
            .map_err(|e| e.to_string())?;
        k.set_var("SEED", seed);
        let v: rhai::Array = k.eval(SCRIPT).map_err(|e| e.to_string())?;
        Ok(v.into_iter().map(|d| d.as_float().unwrap_or(f64::NAN)).collect())
    };
    let threads: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || run(Device::Cuda(0), i)))
        .collect();
    let mut worst = 0.0f64;
    for (i, h) in threads.into_iter().enumerate() {
        let gpu = h.join().map_err(|_| "a thread panicked".to_string())??;
        let cpu = run(Device::Cpu, i as i64)?;
        for (g, c) in gpu.iter().zip(&cpu) {
            let rel = (g - c).abs() / c.abs().max(1e-6);
            if rel.is_nan() || rel > 1e-3 {
                return Err(format!("engine {i}: cuda {gpu:?} vs cpu {cpu:?}"));
            }
            worst = worst.max(rel);
        }
    }
    // a tensor made by an engine on one thread, used by another engine on another
    let (tx, rx) = std::sync::mpsc::channel::<Tensor>();
    let maker = std::thread::spawn(move || -> std::result::Result<(), String> {
        let mut k = Interpreter::builder()
            .device(Device::Cuda(0))
            .build()
            .map_err(|e| e.to_string())?;
        let mut t: Tensor = k
            .eval("let a = ones([4096, 4096]); for i in 0..20 { a = a * 1.5 - 0.25; } a")
            .map_err(|e| e.to_string())?;
        // still queued on the maker's stream when handed over
        t = t.mul_scalar(2.0).map_err(|e| e.to_string())?;
        tx.send(t).map_err(|e| e.to_string())
    });
    let t = rx.recv().map_err(|e| e.to_string())?;
    maker.join().map_err(|_| "a thread panicked".to_string())??;
    let user = std::thread::spawn(move || -> std::result::Result<f64, String> {
        let mut k = Interpreter::builder()
            .device(Device::Cuda(0))
            .build()
            .map_err(|e| e.to_string())?;
        k.set_var("t", t);
        k.eval::<f64>("(t + 1.0).mean().item()")
            .map_err(|e| e.to_string())
    });
    let got = user.join().map_err(|_| "a thread panicked".to_string())??;
    let mut v = 1.0f64;
    for _ in 0..20 {
        v = v * 1.5 - 0.25;
    }
    let want = (v as f32 * 2.0) as f64 + 1.0;
    if (got - want).abs() > want.abs() * 1e-4 {
        return Err(format!("handoff between engines: got {got}, want {want}"));
    }
    let handoffs = crate::backend::cuda::CudaRuntime::get().map_or(0, |rt| rt.stream_handoffs());
    Ok(format!(
        "4 engines on 4 threads match the CPU (worst relative error {worst:.1e}); a tensor handed between engines on two threads reads {got}; {handoffs} stream handoffs in all"
    ))
}

impl Checker {
    /// The collectives through NCCL (`Transport::Nccl`, a group of one on
    /// this GPU) against the host path, for every dtype and op through
    /// every writable layout: the result in the view and the untouched
    /// elements around it (the whole base tensor) must match. A group of one
    /// checks the data path (dense ranges, copies of strided views written
    /// back, dtypes, the communicator's set-up and queueing), not arithmetic
    /// between ranks.
    fn collectives(&mut self) {
        use crate::dist::{Config, ProcessGroup, ReduceOp as Red, Transport};
        let dev = Device::Cuda(0);
        let group = |transport| {
            ProcessGroup::new(Config {
                transport,
                ..Config::default()
            })
        };
        let (host, nccl) = (group(Transport::Host), group(Transport::Nccl));
        for dtype in DType::ALL {
            for (lname, shape, view) in layouts() {
                let writable = lname != "expanded";
                let ops: &[(&str, Red)] = if dtype.is_float() {
                    &[
                        ("sum", Red::Sum),
                        ("mean", Red::Mean),
                        ("max", Red::Max),
                        ("min", Red::Min),
                    ]
                } else {
                    &[("sum", Red::Sum), ("max", Red::Max), ("min", Red::Min)]
                };
                for &(name, op) in ops.iter().filter(|_| writable) {
                    let r = (|| {
                        let x = input(&mut self.gen, &shape, dtype, false)?;
                        let xg = x.to_device(dev)?;
                        host.all_reduce(&view(&x)?, op)?;
                        nccl.all_reduce(&view(&xg)?, op)?;
                        Ok((x, xg))
                    })();
                    self.record(&format!("all_reduce {name}"), dtype, lname, r);
                }
                if writable {
                    let r = (|| {
                        let x = input(&mut self.gen, &shape, dtype, false)?;
                        let xg = x.to_device(dev)?;
                        host.broadcast(&view(&x)?, 0)?;
                        nccl.broadcast(&view(&xg)?, 0)?;
                        Ok((x, xg))
                    })();
                    self.record("broadcast", dtype, lname, r);
                }
                let r = (|| {
                    let x = input(&mut self.gen, &shape, dtype, false)?;
                    let c = host.all_gather(&view(&x)?)?;
                    let g = nccl.all_gather(&view(&x.to_device(dev)?)?)?;
                    if !g.device().is_cuda() || g.shape() != c.shape() {
                        return Err(crate::Error::invalid(
                            "all_gather",
                            format!("got {:?} on {}", g.shape(), g.device()),
                        ));
                    }
                    Ok((c, g))
                })();
                self.record("all_gather", dtype, lname, r);
            }
        }
    }
}

/// Checks that queued ops return before the GPU finishes them, and that
/// reading a value waits for them.
pub fn asynchrony() -> std::result::Result<String, String> {
    use crate::backend::cuda::CudaRuntime;
    let rt = CudaRuntime::get().map_err(|e| e.to_string())?;
    let mut x = Tensor::ones(&[1 << 24], None, Device::Cuda(0)).map_err(|e| e.to_string())?;
    rt.synchronize().map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    for _ in 0..200 {
        x = x
            .mul_scalar(1.0001)
            .and_then(|y| y.exp())
            .and_then(|y| y.log())
            .map_err(|e| e.to_string())?;
    }
    let enqueue = start.elapsed();
    let idle_after_chain = rt.is_idle().map_err(|e| e.to_string())?;
    let v = x.select(0, 0).and_then(|t| t.item()).map_err(|e| e.to_string())?;
    let total = start.elapsed();
    let idle_after_item = rt.is_idle().map_err(|e| e.to_string())?;
    let msg = format!(
        "600 ops on 2^24 elements: queued in {:.2} ms, finished after {:.2} ms; idle right after queueing: {idle_after_chain}; idle after item(): {idle_after_item}; value {v:?}",
        enqueue.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3
    );
    if !idle_after_chain && idle_after_item {
        Ok(msg)
    } else {
        Err(msg)
    }
}

/// What the driver compiled the row and reduction kernels to: registers and
/// spilled bytes a thread, and the most threads a block (one line each).
pub fn kernel_resources() -> std::result::Result<Vec<String>, String> {
    use crate::backend::cuda::kernels::DenseReduce;
    use crate::backend::cuda::{CudaRuntime, Kernel};
    let rt = CudaRuntime::get().map_err(|e| e.to_string())?;
    let mut lines = vec![];
    for d in [DType::F32, DType::BF16, DType::F64] {
        for k in [
            Kernel::LayerNorm(d),
            Kernel::SoftmaxRows(d),
            Kernel::ReduceLanes(DenseReduce::Sum, d),
            Kernel::ReduceCols(DenseReduce::Sum, d),
        ] {
            if let Some((regs, local, max)) = rt.kernels.resources(k) {
                lines.push(format!(
                    "{:<28} {regs:>4} registers, {local:>4} local bytes, {max:>5} threads max",
                    k.name()
                ));
            }
        }
    }
    Ok(lines)
}
/// The case groups, in the order [`run`] runs them.
pub const GROUPS: [&str; 11] = [
    "unary",
    "binary",
    "casts",
    "reductions",
    "nn",
    "random",
    "matmul",
    "dense",
    "training",
    "indexing",
    "collectives",
];

/// Runs every case; returns them in order.
pub fn run() -> Vec<Case> {
    run_groups(&GROUPS)
}

/// Runs the cases of the named groups (see [`GROUPS`]); unknown names run nothing.
pub fn run_groups(groups: &[&str]) -> Vec<Case> {
    let mut c = Checker {
        cases: vec![],
        gen: Generator::new(2024),
    };
    for g in GROUPS.iter().filter(|g| groups.contains(g)) {
        match *g {
            "unary" => c.unary(),
            "binary" => c.binary(),
            "casts" => c.casts_and_copies(),
            "reductions" => c.reductions(),
            "nn" => c.nn(),
            "random" => c.random(),
            "matmul" => c.matmul(),
            "dense" => c.dense_paths(),
            "indexing" => c.indexing(),
            "collectives" => c.collectives(),
            _ => c.training(),
        }
    }
    c.cases
}
