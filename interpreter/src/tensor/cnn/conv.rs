//! Convolutions (`F.conv1d/2d/3d`) and transposed convolutions
//! (`F.conv_transpose1d/2d/3d`) for any number of spatial dims, as one
//! grouped GEMM per call over the sliding windows (im2col): the window view
//! is gathered into columns `[G, C/G·K, N·L]` and multiplied by the weights
//! `[G, O/G, C/G·K]`; a transposed convolution multiplies first and sums the
//! columns back into place (col2im). Gradients come from the parts (GEMM,
//! copy, windows). On CUDA both go through cuDNN instead (`cudnn.rs`)
//! unless it is switched off.

use super::windows::Windows;
use super::{batched, check_float, op_name, pad_spatial, per_dim_min, too_small};
use crate::backend::conv::ConvSpec;
use crate::core::error::{Error, Result};
use crate::tensor::Tensor;

/// How a convolution pads its input.
#[derive(Clone, Debug, PartialEq)]
pub enum ConvPadding {
    /// The same padding before and after, per spatial dim (one value for all).
    Explicit(Vec<i64>),
    /// Output as large as the input (stride 1 only; an odd total pads one
    /// more after, as PyTorch does).
    Same,
    /// No padding.
    Valid,
}

/// The options of `conv1d/2d/3d` after the bias.
#[derive(Clone, Debug)]
pub struct ConvOptions {
    /// Step between windows, per spatial dim (one value for all).
    pub stride: Vec<i64>,
    /// Padding of the input.
    pub padding: ConvPadding,
    /// Spacing of the kernel's taps.
    pub dilation: Vec<i64>,
    /// Channel groups (`groups == C` is depthwise).
    pub groups: i64,
    /// What the padding holds: "zeros", "reflect", "replicate" or "circular".
    pub padding_mode: String,
}

impl Default for ConvOptions {
    fn default() -> Self {
        ConvOptions {
            stride: vec![1],
            padding: ConvPadding::Explicit(vec![0]),
            dilation: vec![1],
            groups: 1,
            padding_mode: "zeros".into(),
        }
    }
}

/// The options of `conv_transpose1d/2d/3d` after the bias.
#[derive(Clone, Debug)]
pub struct ConvTransposeOptions {
    /// Step between the input's positions in the output.
    pub stride: Vec<i64>,
    /// `dilation · (kernel - 1) - padding` zeros are added on both sides of
    /// the (virtual) input, i.e. `padding` is cropped from the full output.
    pub padding: Vec<i64>,
    /// Extra size on one side of the output (below the stride or dilation).
    pub output_padding: Vec<i64>,
    /// Channel groups.
    pub groups: i64,
    /// Spacing of the kernel's taps.
    pub dilation: Vec<i64>,
}

impl Default for ConvTransposeOptions {
    fn default() -> Self {
        ConvTransposeOptions {
            stride: vec![1],
            padding: vec![0],
            output_padding: vec![0],
            groups: 1,
            dilation: vec![1],
        }
    }
}

const CONV: [&str; 3] = ["conv1d", "conv2d", "conv3d"];
const CONV_T: [&str; 3] = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"];

/// Checks the weight's rank, dtype and device against the input, and the
/// bias against `channels` outputs.
fn check_operands(
    op: &'static str,
    x: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    n: usize,
    channels: impl FnOnce(&[usize]) -> usize,
) -> Result<()> {
    check_float(op, x)?;
    if weight.ndim() != n + 2 {
        return Err(Error::shape(
            op,
            format!(
                "expects a {}-D weight, got shape {:?} (input {:?})",
                n + 2,
                weight.shape(),
                x.shape()
            ),
        ));
    }
    for (what, t) in [("weight", Some(weight)), ("bias", bias)] {
        let Some(t) = t else { continue };
        x.same_device(op, t)?;
        if t.dtype() != x.dtype() {
            return Err(Error::invalid(
                op,
                format!(
                    "input ({}) and {what} ({}) must have the same dtype",
                    x.dtype(),
                    t.dtype()
                ),
            ));
        }
    }
    let out = channels(weight.shape());
    if let Some(b) = bias {
        if b.shape() != [out] {
            return Err(Error::shape(
                op,
                format!(
                    "bias of shape {:?} must be [{out}] (weight {:?})",
                    b.shape(),
                    weight.shape()
                ),
            ));
        }
    }
    Ok(())
}

/// `y + bias` over the channel dim 1, or `y` made contiguous.
fn add_bias(y: Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    match bias {
        Some(b) => {
            let mut shape = vec![1i64; y.ndim()];
            shape[1] = -1;
            y.add(&b.reshape(&shape)?)
        }
        None => Ok(y),
    }
}

fn dims_i64(s: &[usize]) -> Vec<i64> {
    s.iter().map(|&v| v as i64).collect()
}

impl Tensor {
    /// `F.conv{n}d(input, weight, bias, ...)`: input `[N, C, *S]` (or
    /// `[C, *S]`), weight `[O, C/groups, *k]`, bias `[O]`.
    pub fn conv(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        n: usize,
        opts: &ConvOptions,
    ) -> Result<Tensor> {
        if crate::tensor::autocast::enabled() {
            let lower = crate::tensor::autocast::lower;
            let (x, w, b) = (lower(self)?, lower(weight)?, bias.map(lower).transpose()?);
            let _off = crate::tensor::autocast::AutocastGuard::new(None)?;
            return x.conv(&w, b.as_ref(), n, opts);
        }
        let op = op_name(&CONV, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        check_operands(op, &x, weight, bias, n, |w| w[0])?;
        let (nb, cin) = (x.shape()[0] as i64, x.shape()[1] as i64);
        let (cout, cg) = (weight.shape()[0] as i64, weight.shape()[1] as i64);
        let g = opts.groups;
        if g < 1 || cg * g != cin || cout % g != 0 {
            return Err(Error::shape(
                op,
                format!(
                    "input of shape {:?} with groups={g} does not fit weight of shape {:?}: need input channels = weight.shape[1]·groups and output channels divisible by groups",
                    self.shape(),
                    weight.shape()
                ),
            ));
        }
        let w = Windows {
            kernel: dims_i64(&weight.shape()[2..]),
            dilation: per_dim_min(op, "dilation", &opts.dilation, n, 1)?,
            stride: per_dim_min(op, "stride", &opts.stride, n, 1)?,
        };
        let (before, after) = match &opts.padding {
            ConvPadding::Explicit(p) => {
                let p = per_dim_min(op, "padding", p, n, 0)?;
                (p.clone(), p)
            }
            ConvPadding::Valid => (vec![0; n], vec![0; n]),
            ConvPadding::Same => {
                if w.stride.iter().any(|&s| s != 1) {
                    return Err(Error::invalid(
                        op,
                        format!(
                            "padding='same' is not supported for strided convolutions (stride {:?})",
                            w.stride
                        ),
                    ));
                }
                let total: Vec<i64> = (0..n).map(|i| w.dilation[i] * (w.kernel[i] - 1)).collect();
                let before: Vec<i64> = total.iter().map(|t| t / 2).collect();
                let after = (0..n).map(|i| total[i] - before[i]).collect();
                (before, after)
            }
        };
        let mode = match opts.padding_mode.as_str() {
            "zeros" => "constant",
            m @ ("reflect" | "replicate" | "circular") => m,
            other => {
                return Err(Error::invalid(
                    op,
                    format!(
                        "unknown padding_mode \"{other}\" (expected zeros, reflect, replicate or circular)"
                    ),
                ))
            }
        };
        if x.device().is_cuda() && super::cudnn::enabled() {
            // cuDNN pads symmetrically with zeros: anything else is padded first
            let symmetric = mode == "constant" && before == after;
            let xp = if symmetric {
                x.clone()
            } else {
                pad_spatial(&x, &before, &after, mode, 0.0)?
            };
            let pad = if symmetric { before.clone() } else { vec![0; n] };
            let spatial = &xp.shape()[2..];
            let out: Vec<usize> = (0..n)
                .map(|i| {
                    super::windows::positions(
                        spatial[i] as i64 + 2 * pad[i],
                        w.kernel[i],
                        w.dilation[i],
                        w.stride[i],
                    ) as usize
                })
                .collect();
            if out.contains(&0) {
                return Err(too_small(op, spatial, &w.kernel, &w.dilation, self.shape()));
            }
            let spec = ConvSpec {
                padding: pad.iter().map(|&p| p as usize).collect(),
                stride: w.stride.iter().map(|&v| v as usize).collect(),
                dilation: w.dilation.iter().map(|&v| v as usize).collect(),
                groups: g as usize,
            };
            let y = add_bias(super::cudnn::conv(op, &xp, weight, &spec, &out)?, bias)?;
            return if unbatched { y.squeeze(Some(&[0])) } else { Ok(y) };
        }
        let xp = pad_spatial(&x, &before, &after, mode, 0.0)?;
        let win = xp.spatial_windows(op, &w)?;
        let o = dims_i64(&win.shape()[2..2 + n]);
        let positions: i64 = o.iter().product();
        // [N, C, *O, *k] -> [C, *k, N, *O] -> [G, C/G·K, N·L]
        let mut perm = vec![1i64];
        perm.extend((0..n).map(|i| (2 + n + i) as i64));
        perm.push(0);
        perm.extend((0..n).map(|i| (2 + i) as i64));
        let cols = win
            .permute(&perm)?
            .reshape(&[g, cg * w.volume(), nb * positions])?;
        let wm = weight.reshape(&[g, cout / g, cg * w.volume()])?;
        let mut shape = vec![cout, nb];
        shape.extend(&o);
        let y = wm.matmul(&cols)?.reshape(&shape)?.transpose(0, 1)?;
        let y = add_bias(y, bias)?.contiguous()?;
        if unbatched {
            y.squeeze(Some(&[0]))
        } else {
            Ok(y)
        }
    }

    /// `F.conv_transpose{n}d(input, weight, bias, ...)`: input `[N, C, *S]`
    /// (or `[C, *S]`), weight `[C, O/groups, *k]`, bias `[O]`; the gradient
    /// of `conv{n}d` with respect to its input.
    pub fn conv_transpose(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        n: usize,
        opts: &ConvTransposeOptions,
    ) -> Result<Tensor> {
        if crate::tensor::autocast::enabled() {
            let lower = crate::tensor::autocast::lower;
            let (x, w, b) = (lower(self)?, lower(weight)?, bias.map(lower).transpose()?);
            let _off = crate::tensor::autocast::AutocastGuard::new(None)?;
            return x.conv_transpose(&w, b.as_ref(), n, opts);
        }
        let op = op_name(&CONV_T, n)?;
        let (x, unbatched) = batched(op, self, n)?;
        let g = opts.groups;
        check_operands(op, &x, weight, bias, n, |w| w[1] * g.max(1) as usize)?;
        let (nb, cin) = (x.shape()[0] as i64, x.shape()[1] as i64);
        let cg_out = weight.shape()[1] as i64;
        if g < 1 || weight.shape()[0] as i64 != cin || cin % g != 0 {
            return Err(Error::shape(
                op,
                format!(
                    "input of shape {:?} with groups={g} does not fit weight of shape {:?}: need input channels = weight.shape[0], divisible by groups",
                    self.shape(),
                    weight.shape()
                ),
            ));
        }
        let w = Windows {
            kernel: dims_i64(&weight.shape()[2..]),
            dilation: per_dim_min(op, "dilation", &opts.dilation, n, 1)?,
            stride: per_dim_min(op, "stride", &opts.stride, n, 1)?,
        };
        let pad = per_dim_min(op, "padding", &opts.padding, n, 0)?;
        let extra = per_dim_min(op, "output_padding", &opts.output_padding, n, 0)?;
        for i in 0..n {
            if extra[i] >= w.stride[i].max(w.dilation[i]) {
                return Err(Error::invalid(
                    op,
                    format!(
                        "output_padding {:?} must be smaller than either stride {:?} or dilation {:?}",
                        extra, w.stride, w.dilation
                    ),
                ));
            }
        }
        let s = dims_i64(&x.shape()[2..]);
        let full: Vec<i64> = (0..n)
            .map(|i| (s[i] - 1) * w.stride[i] + w.dilation[i] * (w.kernel[i] - 1) + 1)
            .collect();
        let out: Vec<i64> = (0..n).map(|i| full[i] - 2 * pad[i] + extra[i]).collect();
        if s.contains(&0) || out.iter().any(|&v| v < 1) {
            return Err(Error::shape(
                op,
                format!(
                    "input of shape {:?} gives an output size of {out:?} (weight {:?}, padding {pad:?}, stride {:?})",
                    self.shape(),
                    weight.shape(),
                    w.stride
                ),
            ));
        }
        if x.device().is_cuda() && super::cudnn::enabled() {
            let spec = ConvSpec {
                padding: pad.iter().map(|&p| p as usize).collect(),
                stride: w.stride.iter().map(|&v| v as usize).collect(),
                dilation: w.dilation.iter().map(|&v| v as usize).collect(),
                groups: g as usize,
            };
            let out: Vec<usize> = out.iter().map(|&v| v as usize).collect();
            let y = add_bias(super::cudnn::conv_transpose(op, &x, weight, &spec, &out)?, bias)?;
            return if unbatched { y.squeeze(Some(&[0])) } else { Ok(y) };
        }
        let cg_in = cin / g;
        let positions: i64 = s.iter().product();
        let xs = x.transpose(0, 1)?.reshape(&[g, cg_in, nb * positions])?;
        let wm = weight
            .reshape(&[g, cg_in, cg_out * w.volume()])?
            .transpose(1, 2)?;
        // [G, O/G·K, N·L] -> [O, *k, N, *S] -> [N, O, *S, *k]
        let mut shape = vec![g * cg_out];
        shape.extend(&w.kernel);
        shape.push(nb);
        shape.extend(&s);
        let mut perm = vec![(1 + n) as i64, 0];
        perm.extend((0..n).map(|i| (2 + n + i) as i64));
        perm.extend((0..n).map(|i| (1 + i) as i64));
        let cols = wm.matmul(&xs)?.reshape(&shape)?.permute(&perm)?;
        let full_us: Vec<usize> = full.iter().map(|&v| v as usize).collect();
        let y = cols.fold_windows(op, &full_us, &w)?;
        let crop: Vec<i64> = pad.iter().map(|p| -p).collect();
        let tail: Vec<i64> = (0..n).map(|i| extra[i] - pad[i]).collect();
        let y = pad_spatial(&y, &crop, &tail, "constant", 0.0)?;
        let y = add_bias(y, bias)?.contiguous()?;
        if unbatched {
            y.squeeze(Some(&[0]))
        } else {
            Ok(y)
        }
    }
}
