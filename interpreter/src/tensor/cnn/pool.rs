//! Pooling over 1 to 3 spatial dims: `max_pool`, `avg_pool` (PyTorch's output
//! sizes, `ceil_mode`, padding, `count_include_pad`, `divisor_override`,
//! `return_indices` as flat positions in each input plane) and the adaptive
//! forms, whose windows `[floor(o·S/O), ceil((o+1)·S/O))` vary in size:
//! adaptive averages are products with averaging matrices per dim, adaptive
//! maxima gather windows padded to the longest one. Gradients flow through
//! the window view (max routes to the first maximum of each window). On
//! CUDA, max and average pooling whose geometry cuDNN expresses (no
//! dilation, floor-mode sizes, no indices) are one cuDNN call each way.

use super::windows::Windows;
use super::{batched, check_float, op_name, pad_spatial, per_dim_min};
use crate::backend::pool::{PoolMode, PoolSpec};
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::tensor::{autograd, Tensor};

const MAX: [&str; 3] = ["max_pool1d", "max_pool2d", "max_pool3d"];
const AVG: [&str; 3] = ["avg_pool1d", "avg_pool2d", "avg_pool3d"];
const ADAPTIVE_AVG: [&str; 3] = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
];
const ADAPTIVE_MAX: [&str; 3] = [
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
];

/// The options of `max_pool` and `avg_pool` (an empty `stride` means the
/// kernel size, PyTorch's default).
#[derive(Clone, Debug)]
pub struct PoolOptions {
    /// Window size per spatial dim (one value for all).
    pub kernel: Vec<i64>,
    /// Step between windows; empty for the kernel size.
    pub stride: Vec<i64>,
    /// Implicit padding on both sides (at most half the kernel).
    pub padding: Vec<i64>,
    /// Spacing of the taps (max pooling only).
    pub dilation: Vec<i64>,
    /// Output sizes rounded up: a last, partial window is kept when it
    /// starts inside the input or its left padding.
    pub ceil_mode: bool,
}

/// One dim of a pooling geometry.
struct Geometry {
    w: Windows,
    pad: Vec<i64>,
    out: Vec<i64>,
}

/// PyTorch's pooling output size for one dim.
fn pooled_size(size: i64, k: i64, pad: i64, dilation: i64, stride: i64, ceil: bool) -> i64 {
    let span = size + 2 * pad - dilation * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut out = span.div_euclid(stride) + 1;
    if ceil && (out - 1) * stride >= size + pad {
        out -= 1;
    }
    out
}

fn geometry(op: &'static str, x: &Tensor, n: usize, o: &PoolOptions) -> Result<Geometry> {
    let kernel = per_dim_min(op, "kernel_size", &o.kernel, n, 1)?;
    let stride = if o.stride.is_empty() {
        kernel.clone()
    } else {
        per_dim_min(op, "stride", &o.stride, n, 1)?
    };
    let dilation = per_dim_min(op, "dilation", &o.dilation, n, 1)?;
    let pad = per_dim_min(op, "padding", &o.padding, n, 0)?;
    let spatial = &x.shape()[2..];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if pad[i] * 2 > kernel[i] {
            return Err(Error::invalid(
                op,
                format!(
                    "padding {:?} must be at most half of kernel_size {kernel:?}",
                    o.padding
                ),
            ));
        }
        let size = pooled_size(
            spatial[i] as i64,
            kernel[i],
            pad[i],
            dilation[i],
            stride[i],
            o.ceil_mode,
        );
        if size < 1 {
            return Err(Error::shape(
                op,
                format!(
                    "input of shape {:?} is too small for kernel_size {kernel:?} (dilation {dilation:?}, padding {pad:?}): output size {size}",
                    x.shape()
                ),
            ));
        }
        out.push(size);
    }
    Ok(Geometry {
        w: Windows {
            kernel,
            dilation,
            stride,
        },
        pad,
        out,
    })
}

/// The input padded with `value` so that exactly the output's windows fit.
fn padded_input(x: &Tensor, g: &Geometry, value: f64) -> Result<Tensor> {
    let spatial = &x.shape()[2..];
    let after: Vec<i64> = (0..g.out.len())
        .map(|i| {
            (g.out[i] - 1) * g.w.stride[i] + g.w.dilation[i] * (g.w.kernel[i] - 1) + 1
                - spatial[i] as i64
                - g.pad[i]
        })
        .collect();
    pad_spatial(x, &g.pad, &after, "constant", value)
}

/// Row-major strides of a shape, as i64.
fn inner_sizes(shape: &[usize]) -> Vec<i64> {
    let mut inner = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        inner[i] = inner[i + 1] * shape[i + 1] as i64;
    }
    inner
}

/// Every output position's candidates, flattened (`[*O, K]` of positions in
/// the input plane), applied to the argmax `best [N, C, *O, 1]`.
fn plane_indices(best: &Tensor, table: Vec<i64>, out: &[i64], candidates: usize) -> Result<Tensor> {
    let mut shape: Vec<usize> = out.iter().map(|&v| v as usize).collect();
    shape.push(candidates);
    let t = Tensor::from_vec(table, &shape, best.device())?;
    let mut full: Vec<i64> = best.shape()[..2].iter().map(|&v| v as i64).collect();
    full.extend(shape.iter().map(|&v| v as i64));
    t.expand(&full)?.gather(-1, best)?.squeeze(Some(&[-1]))
}

/// Values and argmax positions of the last dim of `flat` (first maximum;
/// NaN wins, as in PyTorch's pooling).
fn max_last(flat: &Tensor) -> Result<(Tensor, Tensor)> {
    let best = flat.reduce(ReduceOp::ArgMax, Some(&[-1]), true)?;
    let values = flat.gather(-1, &best)?.squeeze(Some(&[-1]))?;
    Ok((values, best))
}

/// The pooling through cuDNN, when `x` is on CUDA and cuDNN expresses the
/// geometry (no dilation, floor-mode output sizes); `None` otherwise.
fn library_pool(op: &'static str, x: &Tensor, g: &Geometry, mode: PoolMode) -> Result<Option<Tensor>> {
    if !x.device().is_cuda() || !super::cudnn::enabled() || g.w.dilation.iter().any(|&d| d != 1) {
        return Ok(None);
    }
    let spatial = &x.shape()[2..];
    let floor_sized = (0..g.out.len()).all(|i| {
        pooled_size(
            spatial[i] as i64,
            g.w.kernel[i],
            g.pad[i],
            1,
            g.w.stride[i],
            false,
        ) == g.out[i]
    });
    if !floor_sized {
        return Ok(None);
    }
    let to_usize = |v: &[i64]| v.iter().map(|&v| v as usize).collect::<Vec<_>>();
    let spec = PoolSpec {
        mode,
        window: to_usize(&g.w.kernel),
        padding: to_usize(&g.pad),
        stride: to_usize(&g.w.stride),
    };
    super::cudnn::pool(op, x, &spec, &to_usize(&g.out)).map(Some)
}

fn unbatch(t: Tensor, unbatched: bool) -> Result<Tensor> {
    if unbatched {
        t.squeeze(Some(&[0]))
    } else {
        Ok(t)
    }
}

impl Tensor {
    /// `F.max_pool{n}d`: the maximum of each window, and with `indices` the
    /// flat position of that maximum in its input plane (i64).
    pub fn max_pool(&self, n: usize, o: &PoolOptions, indices: bool) -> Result<(Tensor, Option<Tensor>)> {
        let op = op_name(&MAX, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        check_float(op, &x)?;
        let g = geometry(op, &x, n, o)?;
        if !indices {
            if let Some(y) = library_pool(op, &x, &g, PoolMode::Max)? {
                return Ok((unbatch(y, unbatched)?, None));
            }
        }
        let win = padded_input(&x, &g, f64::NEG_INFINITY)?.spatial_windows(op, &g.w)?;
        let last: Vec<i64> = (0..n).map(|i| -1 - i as i64).collect();
        if !indices && !autograd::needs_grad(&[self]) {
            let values = win.reduce(ReduceOp::Max, Some(&last), false)?;
            return Ok((unbatch(values, unbatched)?, None));
        }
        let mut shape: Vec<i64> = win.shape()[..2 + n].iter().map(|&v| v as i64).collect();
        shape.push(g.w.volume());
        let (values, best) = max_last(&win.reshape(&shape)?)?;
        let idx = if indices {
            let inner = inner_sizes(&x.shape()[2..]);
            let k_inner = inner_sizes(&g.w.kernel.iter().map(|&k| k as usize).collect::<Vec<_>>());
            let positions: i64 = g.out.iter().product();
            let mut table = Vec::with_capacity((positions * g.w.volume()) as usize);
            for p in 0..positions {
                let base: i64 = (0..n)
                    .map(|i| ((p / out_inner(&g.out, i)) % g.out[i] * g.w.stride[i] - g.pad[i]) * inner[i])
                    .sum();
                for k in 0..g.w.volume() {
                    let off: i64 = (0..n)
                        .map(|i| (k / k_inner[i]) % g.w.kernel[i] * g.w.dilation[i] * inner[i])
                        .sum();
                    table.push(base + off);
                }
            }
            Some(unbatch(
                plane_indices(&best, table, &g.out, g.w.volume() as usize)?,
                unbatched,
            )?)
        } else {
            None
        };
        Ok((unbatch(values, unbatched)?, idx))
    }

    /// `F.avg_pool{n}d`: the mean of each window; padding counts towards the
    /// divisor when `count_include_pad` (ceil mode's overhang never does), or
    /// `divisor_override` replaces it.
    pub fn avg_pool(
        &self,
        n: usize,
        o: &PoolOptions,
        count_include_pad: bool,
        divisor_override: Option<i64>,
    ) -> Result<Tensor> {
        let op = op_name(&AVG, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        check_float(op, &x)?;
        let mut opts = o.clone();
        opts.dilation = vec![1];
        let g = geometry(op, &x, n, &opts)?;
        if divisor_override.is_none() {
            let mode = if count_include_pad {
                PoolMode::AvgIncludePad
            } else {
                PoolMode::AvgExcludePad
            };
            if let Some(y) = library_pool(op, &x, &g, mode)? {
                return unbatch(y, unbatched);
            }
        }
        let win = padded_input(&x, &g, 0.0)?.spatial_windows(op, &g.w)?;
        let last: Vec<i64> = (0..n).map(|i| -1 - i as i64).collect();
        let sums = win.reduce(ReduceOp::Sum, Some(&last), false)?;
        let out = match divisor_override {
            Some(0) => return Err(Error::invalid(op, "divisor_override must not be zero")),
            Some(d) => sums.div_scalar(d as f64)?,
            None => {
                let spatial = &x.shape()[2..];
                let per_dim: Vec<Vec<f64>> = (0..n)
                    .map(|i| {
                        let (k, s, p, size) = (g.w.kernel[i], g.w.stride[i], g.pad[i], spatial[i] as i64);
                        (0..g.out[i])
                            .map(|o| {
                                let start = o * s - p;
                                let end = (start + k).min(size + p);
                                let counted = if count_include_pad {
                                    end - start
                                } else {
                                    end.min(size) - start.max(0)
                                };
                                counted as f64
                            })
                            .collect()
                    })
                    .collect();
                let positions: i64 = g.out.iter().product();
                let divisor: Vec<f64> = (0..positions)
                    .map(|p| {
                        (0..n)
                            .map(|i| per_dim[i][((p / out_inner(&g.out, i)) % g.out[i]) as usize])
                            .product()
                    })
                    .collect();
                let shape: Vec<usize> = g.out.iter().map(|&v| v as usize).collect();
                let d = Tensor::from_vec(divisor, &shape, x.device())?.to_dtype(x.dtype())?;
                sums.div(&d)?
            }
        };
        unbatch(out, unbatched)
    }

    /// `F.adaptive_avg_pool{n}d`: the mean over windows
    /// `[floor(o·S/O), ceil((o+1)·S/O))`; a `None` size keeps the input's.
    pub fn adaptive_avg_pool(&self, n: usize, output_size: &[Option<i64>]) -> Result<Tensor> {
        let op = op_name(&ADAPTIVE_AVG, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        check_float(op, &x)?;
        let out = adaptive_sizes(op, &x, n, output_size)?;
        let mut y = x.clone();
        for (i, &o) in out.iter().enumerate() {
            let size = x.shape()[2 + i] as i64;
            if o == size {
                continue;
            }
            let mut m = vec![0.0f64; (size * o) as usize];
            for r in 0..o {
                let (start, end) = adaptive_window(r, size, o);
                for c in start..end {
                    m[(c * o + r) as usize] = 1.0 / (end - start) as f64;
                }
            }
            // [.., S] @ [S, O] along spatial dim i
            let mat = Tensor::from_vec(m, &[size as usize, o as usize], x.device())?.to_dtype(x.dtype())?;
            let d = (2 + i) as i64;
            y = y.transpose(d, -1)?.matmul(&mat)?.transpose(d, -1)?;
        }
        unbatch(y.contiguous()?, unbatched)
    }

    /// `F.adaptive_max_pool{n}d`: the maximum over the adaptive windows, and
    /// with `indices` its flat position in the input plane.
    pub fn adaptive_max_pool(
        &self,
        n: usize,
        output_size: &[Option<i64>],
        indices: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let op = op_name(&ADAPTIVE_MAX, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        check_float(op, &x)?;
        let out = adaptive_sizes(op, &x, n, output_size)?;
        let spatial: Vec<i64> = x.shape()[2..].iter().map(|&v| v as i64).collect();
        // per dim: [O, L] input positions, short windows repeating their last
        let tables: Vec<(usize, Vec<i64>)> = (0..n)
            .map(|i| {
                let longest = (0..out[i])
                    .map(|r| adaptive_window(r, spatial[i], out[i]))
                    .map(|(a, b)| b - a)
                    .max()
                    .unwrap_or(1);
                let mut t = Vec::with_capacity((out[i] * longest) as usize);
                for r in 0..out[i] {
                    let (start, end) = adaptive_window(r, spatial[i], out[i]);
                    t.extend((0..longest).map(|l| (start + l).min(end - 1)));
                }
                (longest as usize, t)
            })
            .collect();
        let mut y = x.clone();
        for (i, (longest, t)) in tables.iter().enumerate() {
            let idx = Tensor::from_vec(t.clone(), &[t.len()], x.device())?;
            let d = 2 + 2 * i;
            y = y.index_select(d as i64, &idx)?;
            let mut shape: Vec<i64> = y.shape().iter().map(|&v| v as i64).collect();
            shape.splice(d..=d, [out[i], *longest as i64]);
            y = y.reshape(&shape)?;
        }
        // [N, C, O0, L0, O1, L1, ..] -> [N, C, *O, L0·L1·..]
        let mut perm = vec![0i64, 1];
        perm.extend((0..n).map(|i| (2 + 2 * i) as i64));
        perm.extend((0..n).map(|i| (3 + 2 * i) as i64));
        let candidates: usize = tables.iter().map(|(l, _)| l).product();
        let mut shape: Vec<i64> = x.shape()[..2].iter().map(|&v| v as i64).collect();
        shape.extend(&out);
        shape.push(candidates as i64);
        let (values, best) = max_last(&y.permute(&perm)?.reshape(&shape)?)?;
        let idx = if indices {
            let inner = inner_sizes(&x.shape()[2..]);
            let l_sizes: Vec<usize> = tables.iter().map(|(l, _)| *l).collect();
            let l_inner = inner_sizes(&l_sizes);
            let positions: i64 = out.iter().product();
            let mut table = Vec::with_capacity(positions as usize * candidates);
            for p in 0..positions {
                for c in 0..candidates as i64 {
                    table.push(
                        (0..n)
                            .map(|i| {
                                let (r, l) = (
                                    (p / out_inner(&out, i)) % out[i],
                                    (c / l_inner[i]) % l_sizes[i] as i64,
                                );
                                tables[i].1[(r * l_sizes[i] as i64 + l) as usize] * inner[i]
                            })
                            .sum(),
                    );
                }
            }
            Some(unbatch(
                plane_indices(&best, table, &out, candidates)?,
                unbatched,
            )?)
        } else {
            None
        };
        Ok((unbatch(values, unbatched)?, idx))
    }
}

/// The product of the output sizes after dim `i`.
fn out_inner(out: &[i64], i: usize) -> i64 {
    out[i + 1..].iter().product()
}

/// The adaptive window `[start, end)` of output `o` of `out` over `size`.
fn adaptive_window(o: i64, size: i64, out: i64) -> (i64, i64) {
    let start = (o * size) / out;
    let end = ((o + 1) * size + out - 1) / out;
    (start, end)
}

/// The adaptive output sizes, `None` keeping the input's size.
fn adaptive_sizes(op: &'static str, x: &Tensor, n: usize, output_size: &[Option<i64>]) -> Result<Vec<i64>> {
    let sizes = match output_size.len() {
        1 => vec![output_size[0]; n],
        len if len == n => output_size.to_vec(),
        _ => {
            return Err(Error::invalid(
                op,
                format!(
                    "output_size must be one int or {n} ints, got {}",
                    output_size.len()
                ),
            ))
        }
    };
    let spatial = &x.shape()[2..];
    let out: Vec<i64> = (0..n).map(|i| sizes[i].unwrap_or(spatial[i] as i64)).collect();
    if out.iter().any(|&o| o < 0) || (0..n).any(|i| spatial[i] == 0 && out[i] > 0) {
        return Err(Error::shape(
            op,
            format!(
                "output_size {out:?} does not fit an input of shape {:?}",
                x.shape()
            ),
        ));
    }
    Ok(out)
}

impl Tensor {
    /// `F.lp_pool{n}d(input, norm_type, kernel_size, stride, ceil_mode)`:
    /// `(Σ x^p)^(1/p)` over each window (PyTorch's formula through the mean).
    pub fn lp_pool(&self, n: usize, p: f64, o: &PoolOptions) -> Result<Tensor> {
        let op = ["lp_pool1d", "lp_pool2d", "lp_pool3d"][n.clamp(1, 3) - 1];
        if p == 0.0 || !p.is_finite() {
            return Err(Error::invalid(
                op,
                format!("norm_type must be a nonzero finite number, got {p}"),
            ));
        }
        let opts = PoolOptions {
            padding: vec![0],
            ..o.clone()
        };
        let mean = self.pow_scalar(p)?.avg_pool(n, &opts, true, None)?;
        let volume: i64 = per_dim_min(op, "kernel_size", &o.kernel, n, 1)?.iter().product();
        mean.sign()?
            .mul(&mean.abs()?.relu()?)?
            .mul_scalar(volume as f64)?
            .pow_scalar(1.0 / p)
    }

    /// `F.max_unpool{n}d(input, indices, kernel_size, stride, padding,
    /// output_size)`: each value put back at its flat index in a zero plane
    /// of the output size (`(in - 1)·stride - 2·padding + kernel` unless
    /// given).
    pub fn max_unpool(
        &self,
        n: usize,
        indices: &Tensor,
        o: &PoolOptions,
        output_size: Option<&[i64]>,
    ) -> Result<Tensor> {
        let op = op_name(&["max_unpool1d", "max_unpool2d", "max_unpool3d"], n)?;
        let (x, unbatched) = batched(op, self, n)?;
        let idx = if unbatched {
            indices.unsqueeze(0)?
        } else {
            indices.clone()
        };
        if idx.shape() != x.shape() || idx.dtype() != crate::tensor::DType::I64 {
            return Err(Error::shape(
                op,
                format!(
                    "indices ({} {:?}) must be i64 of the input's shape {:?}",
                    indices.dtype(),
                    indices.shape(),
                    self.shape()
                ),
            ));
        }
        let kernel = per_dim_min(op, "kernel_size", &o.kernel, n, 1)?;
        let stride = if o.stride.is_empty() {
            kernel.clone()
        } else {
            per_dim_min(op, "stride", &o.stride, n, 1)?
        };
        let pad = per_dim_min(op, "padding", &o.padding, n, 0)?;
        let spatial: Vec<i64> = x.shape()[2..].iter().map(|&v| v as i64).collect();
        let out: Vec<i64> = match output_size {
            Some(s) => {
                let s = if s.len() == n + 2 || s.len() == n + 1 {
                    &s[s.len() - n..]
                } else {
                    s
                };
                per_dim_min(op, "output_size", s, n, 1)?
            }
            None => (0..n)
                .map(|i| (spatial[i] - 1) * stride[i] - 2 * pad[i] + kernel[i])
                .collect(),
        };
        if out.iter().any(|&v| v < 1) {
            return Err(Error::shape(
                op,
                format!("output size {out:?} from input of shape {:?}", self.shape()),
            ));
        }
        let (nb, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
        let plane: i64 = out.iter().product();
        let zeros = Tensor::zeros(
            &[nb as usize, c as usize, plane as usize],
            Some(x.dtype()),
            x.device(),
        )?;
        let y = zeros.scatter(2, &idx.reshape(&[nb, c, -1])?, &x.reshape(&[nb, c, -1])?, None)?;
        let mut shape = vec![nb, c];
        shape.extend(&out);
        unbatch(y.reshape(&shape)?, unbatched)
    }
}
