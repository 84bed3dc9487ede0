//! Resampling of the spatial dims: `interpolate` (nearest, nearest-exact,
//! linear/bilinear/trilinear, bicubic, area) with PyTorch's source-index
//! rules, `pixel_shuffle`/`pixel_unshuffle`, and channel dropout
//! (`dropout1d/2d/3d`). Interpolation is separable: each spatial dim is one
//! product with a `[in, out]` weight matrix (or an index gather for the
//! nearest modes), so gradients come from matmul and `index_select`.

use super::{check_float, per_dim};
use crate::core::error::{Error, Result};
use crate::core::op::CmpOp;
use crate::tensor::{Generator, Scalar, Tensor};

/// How `interpolate` picks output sizes and source positions.
#[derive(Clone, Debug, Default)]
pub struct InterpolateOptions {
    /// Output spatial sizes (one for all dims, or one per dim).
    pub size: Option<Vec<i64>>,
    /// Multipliers of the input sizes, when `size` is not given.
    pub scale_factor: Option<Vec<f64>>,
    /// "nearest", "nearest-exact", "linear", "bilinear", "bicubic",
    /// "trilinear" or "area".
    pub mode: String,
    /// Corner pixels' centres aligned (linear modes only).
    pub align_corners: Option<bool>,
    /// Source positions from the output size rather than `scale_factor`.
    pub recompute_scale_factor: bool,
}

/// The cubic convolution weights (A = -0.75) of the four taps around `t`.
fn cubic_weights(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

impl Tensor {
    /// `F.interpolate(input, size, scale_factor, mode, align_corners, ...)`
    /// over the dims after `[N, C]`.
    pub fn interpolate(&self, o: &InterpolateOptions) -> Result<Tensor> {
        const OP: &str = "interpolate";
        let n = self.ndim().saturating_sub(2);
        if !(1..=3).contains(&n) {
            return Err(Error::shape(
                OP,
                format!(
                    "expects a 3-D, 4-D or 5-D input [N, C, *spatial], got shape {:?}",
                    self.shape()
                ),
            ));
        }
        check_float(OP, self)?;
        let expected = match o.mode.as_str() {
            "nearest" | "nearest-exact" | "area" => None,
            "linear" => Some(1),
            "bilinear" | "bicubic" => Some(2),
            "trilinear" => Some(3),
            other => {
                return Err(Error::invalid(
                    OP,
                    format!("unknown mode \"{other}\" (expected nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area)"),
                ))
            }
        };
        if expected.is_some_and(|e| e != n) {
            return Err(Error::shape(
                OP,
                format!(
                    "mode \"{}\" needs {} spatial dims, got input of shape {:?}",
                    o.mode,
                    expected.unwrap_or(0),
                    self.shape()
                ),
            ));
        }
        if expected.is_none() && o.align_corners.is_some() {
            return Err(Error::invalid(
                OP,
                "align_corners can only be set with the interpolating modes: linear, bilinear, bicubic or trilinear",
            ));
        }
        let spatial: Vec<i64> = self.shape()[2..].iter().map(|&v| v as i64).collect();
        let (out, scales): (Vec<i64>, Vec<Option<f64>>) = match (&o.size, &o.scale_factor) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    OP,
                    "only one of size or scale_factor may be given",
                ))
            }
            (None, None) => return Err(Error::invalid(OP, "either size or scale_factor must be given")),
            (Some(s), None) => (per_dim(OP, "size", s, n)?, vec![None; n]),
            (None, Some(f)) => {
                let f = match f.len() {
                    1 => vec![f[0]; n],
                    len if len == n => f.clone(),
                    _ => {
                        return Err(Error::invalid(
                            OP,
                            format!("scale_factor must be one number or {n}, got {f:?}"),
                        ))
                    }
                };
                if f.iter().any(|&v| v.is_nan() || v <= 0.0 || !v.is_finite()) {
                    return Err(Error::invalid(
                        OP,
                        format!("scale_factor must be positive, got {f:?}"),
                    ));
                }
                let out = (0..n)
                    .map(|i| (spatial[i] as f64 * f[i]).floor() as i64)
                    .collect();
                let scales = if o.recompute_scale_factor {
                    vec![None; n]
                } else {
                    f.into_iter().map(Some).collect()
                };
                (out, scales)
            }
        };
        if out.iter().any(|&v| v < 1) || spatial.contains(&0) {
            return Err(Error::shape(
                OP,
                format!(
                    "output size {out:?} from input of shape {:?}: every size must be positive",
                    self.shape()
                ),
            ));
        }
        if o.mode == "area" {
            let sizes: Vec<Option<i64>> = out.iter().map(|&v| Some(v)).collect();
            return self.adaptive_avg_pool(n, &sizes);
        }
        let align = o.align_corners.unwrap_or(false);
        let mut y = self.clone();
        for i in 0..n {
            let (size, len) = (spatial[i], out[i]);
            let d = (2 + i) as i64;
            if o.mode.starts_with("nearest") {
                let exact = o.mode == "nearest-exact";
                // PyTorch computes these positions in f32
                let scale = scales[i].map_or(size as f32 / len as f32, |f| (1.0 / f) as f32);
                let idx: Vec<i64> = (0..len)
                    .map(|j| {
                        let src = if !exact && len == size {
                            j
                        } else if !exact && len == 2 * size {
                            j >> 1
                        } else {
                            let at = if exact {
                                (j as f32 + 0.5) * scale
                            } else {
                                j as f32 * scale
                            };
                            at.floor() as i64
                        };
                        src.min(size - 1)
                    })
                    .collect();
                y = y.index_select(d, &Tensor::from_vec(idx, &[len as usize], self.device())?)?;
                continue;
            }
            let scale = if align {
                if len > 1 {
                    (size - 1) as f64 / (len - 1) as f64
                } else {
                    0.0
                }
            } else {
                scales[i].map_or(size as f64 / len as f64, |f| 1.0 / f)
            };
            let cubic = o.mode == "bicubic";
            let mut m = vec![0.0f64; (size * len) as usize];
            let mut put = |src: i64, dst: i64, w: f64| m[(src.clamp(0, size - 1) * len + dst) as usize] += w;
            for j in 0..len {
                let src = if align {
                    scale * j as f64
                } else {
                    let s = scale * (j as f64 + 0.5) - 0.5;
                    if cubic {
                        s
                    } else {
                        s.max(0.0)
                    }
                };
                if cubic {
                    let i0 = src.floor();
                    for (k, w) in cubic_weights(src - i0).into_iter().enumerate() {
                        put(i0 as i64 - 1 + k as i64, j, w);
                    }
                } else {
                    let i0 = src.floor() as i64;
                    let lambda = src - i0 as f64;
                    let i1 = if i0 < size - 1 { i0 + 1 } else { i0 };
                    put(i0, j, 1.0 - lambda);
                    put(i1, j, lambda);
                }
            }
            let mat =
                Tensor::from_vec(m, &[size as usize, len as usize], self.device())?.to_dtype(self.dtype())?;
            y = y.transpose(d, -1)?.matmul(&mat)?.transpose(d, -1)?;
        }
        y.contiguous()
    }

    /// `F.pixel_shuffle`: `[*, C·r², H, W]` to `[*, C, H·r, W·r]`.
    pub fn pixel_shuffle(&self, r: i64) -> Result<Tensor> {
        const OP: &str = "pixel_shuffle";
        let nd = self.ndim();
        if nd < 3 || r < 1 || self.shape()[nd - 3] as i64 % (r * r) != 0 {
            return Err(Error::shape(
                OP,
                format!("input of shape {:?} needs at least 3 dims and channels divisible by upscale_factor² ({r}²)", self.shape()),
            ));
        }
        let lead: Vec<i64> = self.shape()[..nd - 3].iter().map(|&v| v as i64).collect();
        let [c, h, w] = [0, 1, 2].map(|i| self.shape()[nd - 3 + i] as i64);
        let mut shape = lead.clone();
        shape.extend([c / (r * r), r, r, h, w]);
        let b = lead.len() as i64;
        let mut perm: Vec<i64> = (0..b).collect();
        perm.extend([b, b + 3, b + 1, b + 4, b + 2]);
        let mut out = lead;
        out.extend([c / (r * r), h * r, w * r]);
        self.reshape(&shape)?.permute(&perm)?.reshape(&out)
    }

    /// `F.pixel_unshuffle`: `[*, C, H·r, W·r]` to `[*, C·r², H, W]`.
    pub fn pixel_unshuffle(&self, r: i64) -> Result<Tensor> {
        const OP: &str = "pixel_unshuffle";
        let nd = self.ndim();
        if nd < 3 || r < 1 || self.shape()[nd - 2] as i64 % r != 0 || self.shape()[nd - 1] as i64 % r != 0 {
            return Err(Error::shape(
                OP,
                format!("input of shape {:?} needs at least 3 dims and height and width divisible by downscale_factor {r}", self.shape()),
            ));
        }
        let lead: Vec<i64> = self.shape()[..nd - 3].iter().map(|&v| v as i64).collect();
        let [c, h, w] = [0, 1, 2].map(|i| self.shape()[nd - 3 + i] as i64);
        let mut shape = lead.clone();
        shape.extend([c, h / r, r, w / r, r]);
        let b = lead.len() as i64;
        let mut perm: Vec<i64> = (0..b).collect();
        perm.extend([b, b + 2, b + 4, b + 1, b + 3]);
        let mut out = lead;
        out.extend([c * r * r, h / r, w / r]);
        self.reshape(&shape)?.permute(&perm)?.reshape(&out)
    }

    /// `F.dropout{n}d`: whole channels zeroed with probability `p` (the rest
    /// scaled by `1 / (1 - p)`) while training; input `[N, C, *S]` or
    /// `[C, *S]` with `n` spatial dims.
    pub fn channel_dropout(&self, n: usize, p: f64, training: bool, gen: &mut Generator) -> Result<Tensor> {
        let op = ["dropout1d", "dropout2d", "dropout3d"][n.clamp(1, 3) - 1];
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                op,
                format!("probability must be in [0, 1], got {p}"),
            ));
        }
        if self.ndim() != n + 1 && self.ndim() != n + 2 {
            return Err(Error::shape(
                op,
                format!(
                    "expects a {}-D or {}-D input, got shape {:?}",
                    n + 1,
                    n + 2,
                    self.shape()
                ),
            ));
        }
        let x = self.to_float()?;
        if !training || p == 0.0 {
            return Ok(x);
        }
        let lead = x.ndim() - n;
        let mut shape = x.shape()[..lead].to_vec();
        shape.extend(std::iter::repeat_n(1, n));
        if p == 1.0 {
            return x.mul_scalar(0.0);
        }
        let keep = Tensor::rand(&shape, Some(x.dtype()), x.device(), gen)?
            .compare_scalar(CmpOp::Ge, Scalar::Float(p), false)?
            .to_dtype(x.dtype())?
            .mul_scalar(1.0 / (1.0 - p))?;
        x.mul(&keep)
    }
}

impl Tensor {
    /// `F.channel_shuffle(input, groups)`: `[N, C, *]` with its channels
    /// regrouped (`[N, g, C/g, *]` transposed to `[N, C/g, g, *]`).
    pub fn channel_shuffle(&self, groups: i64) -> Result<Tensor> {
        const OP: &str = "channel_shuffle";
        if self.ndim() < 3 || groups < 1 || self.shape()[1] as i64 % groups != 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "input of shape {:?} needs at least 3 dims and channels divisible by groups={groups}",
                    self.shape()
                ),
            ));
        }
        let shape: Vec<i64> = self.shape().iter().map(|&v| v as i64).collect();
        let mut split = vec![shape[0], groups, shape[1] / groups];
        split.extend(&shape[2..]);
        self.reshape(&split)?.transpose(1, 2)?.reshape(&shape)
    }
}
