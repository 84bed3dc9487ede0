//! Index ops (`index_select`, `gather`, `index_add`, `scatter_add`) and their
//! backward, and `randperm`.

use super::*;

impl Checker {
    /// `index_select`, `gather`, `index_add` and `scatter_add` for every dtype
    /// they support, through the usual input layouts, with contiguous, strided
    /// and i32 indices full of repeats (and a transposed index for gather and
    /// scatter_add); the backward of index_select and gather (repeated indices
    /// accumulate with atomics on CUDA), also for an embedding-sized table with
    /// heavy contention; `randperm` seeded alike on both devices.
    pub(super) fn indexing(&mut self) {
        use kiln::core::index::scatter_dtype;
        let dev = gpu();
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
                            .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))?;
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
