//! Fractional max pooling (`F.fractional_max_pool2d/3d`, Graham 2014): each
//! plane's windows start at pseudo-random places drawn from one uniform
//! sample per spatial dim, `⌊(i + u)·α⌋ - ⌊u·α⌋` with
//! `α = (size - kernel) / (out - 1)` and the last window against the end,
//! computed in the input's precision (f32 for f32 and half inputs) as
//! PyTorch does, so that given samples reproduce its windows exactly. The
//! windows are separable: one dim at a time, each window's elements along
//! it are gathered and reduced by argmax, so every device and the gradient
//! (to the chosen element) come from gathers and maxima over small index
//! tables.

use super::{batched, check_float, per_dim_min};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, ReduceOp};
use crate::core::{DType, Scalar};
use crate::tensor::random::Generator;
use crate::tensor::Tensor;

const NAMES: [&str; 2] = ["fractional_max_pool2d", "fractional_max_pool3d"];

/// How the output size of [`Tensor::fractional_max_pool`] is given.
#[derive(Clone, Debug, PartialEq)]
pub enum FractionalOutput {
    /// The output's spatial size: one int or one per dim.
    Size(Vec<i64>),
    /// The output's size as a fraction of the input's: one or one per dim
    /// (`⌊size · ratio⌋`).
    Ratio(Vec<f64>),
}

/// The window starts of one dim for sample `u`, as PyTorch's
/// `generate_intervals` (in `f32` unless `wide`).
fn starts(u: f64, size: i64, out: i64, kernel: i64, wide: bool) -> Vec<i64> {
    let mut s = vec![0i64; out.max(0) as usize];
    if out > 1 {
        if wide {
            let alpha = (size - kernel) as f64 / (out - 1) as f64;
            for (i, v) in s.iter_mut().enumerate().take(out as usize - 1) {
                *v = ((i as f64 + u) * alpha) as i64 - (u * alpha) as i64;
            }
        } else {
            let (u, alpha) = (u as f32, (size - kernel) as f32 / (out - 1) as f32);
            for (i, v) in s.iter_mut().enumerate().take(out as usize - 1) {
                *v = ((i as f32 + u) * alpha) as i64 - (u * alpha) as i64;
            }
        }
    }
    if out > 0 {
        s[out as usize - 1] = size - kernel;
    }
    s
}

/// Which sample of a plane drives spatial dim `d` of `n`: PyTorch reads the
/// 2-D samples as (width, height) and the 3-D ones as (time, height, width).
fn sample_of(d: usize, n: usize) -> usize {
    if n == 2 {
        1 - d
    } else {
        d
    }
}

impl Tensor {
    /// `F.fractional_max_pool{n}d(input, kernel_size, output_size |
    /// output_ratio, return_indices, _random_samples)` for `n` = 2 or 3:
    /// `samples` (`[N, C, n]` in `[0, 1)`) places the windows, drawn from
    /// `gen` when not given. Returns the pooled values and, with
    /// `indices`, each maximum's flat position in its input plane.
    pub fn fractional_max_pool(
        &self,
        n: usize,
        kernel: &[i64],
        output: &FractionalOutput,
        samples: Option<&Tensor>,
        indices: bool,
        gen: &mut Generator,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let op = *NAMES
            .get(n.wrapping_sub(2))
            .ok_or_else(|| Error::invalid(NAMES[0], format!("{n} spatial dims (2 or 3 are supported)")))?;
        let (x, unbatched) = batched(op, self, n)?;
        check_float(op, &x)?;
        let kernel = per_dim_min(op, "kernel_size", kernel, n, 1)?;
        let spatial: Vec<i64> = x.shape()[2..].iter().map(|&s| s as i64).collect();
        let out: Vec<i64> = match output {
            FractionalOutput::Size(s) => per_dim_min(op, "output_size", s, n, 0)?,
            FractionalOutput::Ratio(r) => {
                let r = match r.len() {
                    1 => vec![r[0]; n],
                    len if len == n => r.clone(),
                    _ => {
                        return Err(Error::invalid(
                            op,
                            format!("output_ratio must be one or {n} numbers, got {r:?}"),
                        ))
                    }
                };
                if r.iter().any(|&v| !(v > 0.0 && v <= 1.0)) {
                    return Err(Error::invalid(
                        op,
                        format!("output_ratio must be in (0, 1], got {r:?}"),
                    ));
                }
                (0..n).map(|i| (spatial[i] as f64 * r[i]) as i64).collect()
            }
        };
        for i in 0..n {
            if out[i] + kernel[i] - 1 > spatial[i] {
                return Err(Error::shape(
                    op,
                    format!(
                        "kernel {kernel:?} and output size {out:?} need an input of at least {:?} spatially, got shape {:?}",
                        (0..n).map(|j| out[j] + kernel[j] - 1).collect::<Vec<_>>(),
                        x.shape()
                    ),
                ));
            }
        }
        let (batch, planes) = (x.shape()[0], x.shape()[1]);
        let u = match samples {
            Some(s) => {
                if s.shape() != [batch, planes, n] || !s.dtype().is_float() {
                    return Err(Error::shape(
                        op,
                        format!(
                            "_random_samples must be floats of shape [{batch}, {planes}, {n}], got {} {:?}",
                            s.dtype(),
                            s.shape()
                        ),
                    ));
                }
                s.to_vec_as::<f64>()?
            }
            None => {
                Tensor::rand(&[batch, planes, n], Some(x.dtype()), x.device(), gen)?.to_vec_as::<f64>()?
            }
        };
        let wide = x.dtype() == DType::F64;

        // one dim at a time, last first: gather each window's elements along
        // the dim, keep their maximum (the first, as PyTorch's scan in
        // row-major order keeps it) and where it was
        let mut y = x.clone();
        let mut at: Option<Tensor> = None;
        for d in (0..n).rev() {
            let mut places = Vec::with_capacity(batch * planes * (out[d] * kernel[d]) as usize);
            for p in 0..batch * planes {
                let s = starts(u[p * n + sample_of(d, n)], spatial[d], out[d], kernel[d], wide);
                for &start in &s {
                    places.extend(start..start + kernel[d]);
                }
            }
            let dim = 2 + d;
            let mut shape = vec![1usize; y.ndim()];
            shape[0] = batch;
            shape[1] = planes;
            shape[dim] = (out[d] * kernel[d]) as usize;
            let mut full: Vec<i64> = y.shape().iter().map(|&v| v as i64).collect();
            full[dim] = out[d] * kernel[d];
            let places = Tensor::from_vec(places, &shape, x.device())?.expand(&full)?;
            // [.., out·k, ..] -> [.., out, k, ..], the maximum over k
            let mut split = full.clone();
            split.splice(dim..=dim, [out[d], kernel[d]]);
            let k_dim = dim as i64 + 1;
            let windows = y.gather(dim as i64, &places)?.reshape(&split)?;
            let best = windows.reduce(ReduceOp::ArgMax, Some(&[k_dim]), true)?;
            y = windows.gather(k_dim, &best)?.squeeze(Some(&[k_dim]))?;
            if indices {
                let chosen = places
                    .reshape(&split)?
                    .gather(k_dim, &best)?
                    .squeeze(Some(&[k_dim]))?;
                let inner: i64 = spatial[d + 1..].iter().product();
                let here = chosen.binary_scalar(BinaryOp::Mul, Scalar::Int(inner), false)?;
                at = Some(match at {
                    None => here,
                    // the later dims' positions, at the places this dim chose
                    Some(later) => later.gather(dim as i64, &chosen)?.add(&here)?,
                });
            }
        }
        let values = y;
        let idx = match at {
            Some(at) => Some(if unbatched { at.squeeze(Some(&[0]))? } else { at }),
            None => None,
        };
        let values = if unbatched {
            values.squeeze(Some(&[0]))?
        } else {
            values
        };
        Ok((values, idx))
    }
}

#[cfg(test)]
mod tests {
    use super::starts;

    #[test]
    fn windows_start_as_pytorchs_intervals() {
        // α = (10 - 3) / (4 - 1) = 7/3; u = 0.5: ⌊(i + .5)·α⌋ - ⌊.5·α⌋
        assert_eq!(starts(0.5, 10, 4, 3, true), vec![0, 2, 4, 7]);
        assert_eq!(starts(0.5, 10, 4, 3, false), vec![0, 2, 4, 7]);
        assert_eq!(starts(0.0, 5, 1, 2, true), vec![3]);
        assert_eq!(starts(0.9, 6, 0, 2, true), Vec::<i64>::new());
    }
}
