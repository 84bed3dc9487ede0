//! The convolutional family (`tensor/cnn`) on both backends, for every
//! float dtype and the layouts an image batch comes in (contiguous NCHW,
//! channels-last as a permuted view, a sliced batch, an expanded batch):
//! convolutions and their transposes, pooling (with indices), batch, group
//! and instance norm, interpolation, pixel shuffle, unfold/fold, and the
//! gradients of convolution (input and weight), pooling (windows of ties included)
//! and batch norm (input, weight and bias). Weights are `sin(k·i)`,
//! made on each side from the same formula.

use super::*;
use kiln::tensor::cnn::conv::{ConvOptions, ConvPadding, ConvTransposeOptions};
use kiln::tensor::cnn::norm::RunningStats;
use kiln::tensor::cnn::pool::PoolOptions;
use kiln::tensor::cnn::resample::InterpolateOptions;

/// `sin(k·i)` of `shape`, in `like`'s dtype on its device.
fn param(shape: &[usize], k: f64, like: &Tensor) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    Tensor::arange(
        Scalar::Float(0.0),
        Scalar::Float(n as f64),
        Scalar::Float(1.0),
        Some(DType::F64),
        like.device(),
    )?
    .mul_scalar(k)?
    .sin()?
    .reshape(&shape.iter().map(|&s| s as i64).collect::<Vec<_>>())?
    .to_dtype(like.dtype())
}

/// Image batches `[4, 6, 9, 10]` in four layouts.
fn image_layouts() -> Vec<(&'static str, Vec<usize>, View)> {
    vec![
        ("contiguous", vec![4, 6, 9, 10], |t| Ok(t.clone())),
        ("channels_last", vec![4, 9, 10, 6], |t| t.permute(&[0, 3, 1, 2])),
        ("sliced", vec![8, 6, 9, 10], |t| t.slice(0, Some(1), None, 2)),
        ("expanded", vec![1, 6, 9, 10], |t| t.expand(&[4, 6, 9, 10])),
    ]
}

fn conv(stride: &[i64], padding: ConvPadding, dilation: &[i64], groups: i64, mode: &str) -> ConvOptions {
    ConvOptions {
        stride: stride.to_vec(),
        padding,
        dilation: dilation.to_vec(),
        groups,
        padding_mode: mode.into(),
    }
}

fn pool(kernel: i64, stride: i64, padding: i64, ceil_mode: bool) -> PoolOptions {
    PoolOptions {
        kernel: vec![kernel],
        stride: vec![stride],
        padding: vec![padding],
        dilation: vec![1],
        ceil_mode,
    }
}

fn resize(size: &[i64], mode: &str, align_corners: Option<bool>) -> InterpolateOptions {
    InterpolateOptions {
        size: Some(size.to_vec()),
        mode: mode.into(),
        align_corners,
        ..Default::default()
    }
}

/// The input gradient of `sum(f(x)²)`.
fn input_grad(x: &Tensor, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let x = x.detach();
    x.set_requires_grad(true)?;
    f(&x)?.to_dtype(DType::F64)?.pow_scalar(2.0)?.sum()?.backward()?;
    x.grad()
        .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
}

impl Checker {
    /// Each convolutional op on both backends from the same input.
    pub(super) fn cnn(&mut self) {
        type Op = (&'static str, fn(&Tensor) -> Result<Tensor>);
        let ops: Vec<Op> = vec![
            ("conv2d 3x3 padded with bias", |x| {
                let o = conv(&[1], ConvPadding::Explicit(vec![1]), &[1], 1, "zeros");
                x.conv(&param(&[8, 6, 3, 3], 0.7, x)?, Some(&param(&[8], 1.1, x)?), 2, &o)
            }),
            ("conv2d strided dilated grouped", |x| {
                let o = conv(&[2, 1], ConvPadding::Explicit(vec![1, 2]), &[2, 1], 2, "zeros");
                x.conv(&param(&[4, 3, 3, 2], 0.3, x)?, None, 2, &o)
            }),
            ("conv2d depthwise same reflect", |x| {
                let o = conv(&[1], ConvPadding::Same, &[1], 6, "reflect");
                x.conv(&param(&[6, 1, 3, 3], 0.9, x)?, None, 2, &o)
            }),
            ("conv2d 1x1 stride 2", |x| {
                let o = conv(&[2], ConvPadding::Valid, &[1], 1, "zeros");
                x.conv(&param(&[5, 6, 1, 1], 0.4, x)?, None, 2, &o)
            }),
            ("conv1d circular", |x| {
                let o = conv(&[1], ConvPadding::Explicit(vec![2]), &[1], 1, "circular");
                x.flatten(2, 3)?.conv(&param(&[3, 6, 5], 0.2, x)?, None, 1, &o)
            }),
            ("conv3d", |x| {
                let o = conv(&[1, 2, 1], ConvPadding::Explicit(vec![0, 1, 1]), &[1], 1, "zeros");
                x.reshape(&[4, 3, 2, 9, 10])?
                    .conv(&param(&[2, 3, 2, 3, 3], 0.6, x)?, None, 3, &o)
            }),
            ("conv_transpose2d", |x| {
                let o = ConvTransposeOptions {
                    stride: vec![2],
                    padding: vec![1],
                    output_padding: vec![1],
                    groups: 2,
                    dilation: vec![1],
                };
                x.conv_transpose(&param(&[6, 2, 3, 3], 0.5, x)?, Some(&param(&[4], 0.8, x)?), 2, &o)
            }),
            ("max_pool2d ceil", |x| {
                Ok(x.max_pool(2, &pool(3, 2, 1, true), false)?.0)
            }),
            ("max_pool2d indices", |x| {
                x.max_pool(2, &pool(3, 2, 1, false), true)?
                    .1
                    .ok_or_else(|| kiln::Error::invalid("check", "no indices"))
            }),
            ("avg_pool2d without pad count", |x| {
                x.avg_pool(2, &pool(3, 2, 1, true), false, None)
            }),
            ("adaptive_avg_pool2d", |x| {
                x.adaptive_avg_pool(2, &[Some(4), Some(3)])
            }),
            ("adaptive_max_pool2d", |x| {
                Ok(x.adaptive_max_pool(2, &[Some(4), Some(3)], false)?.0)
            }),
            ("batch_norm training", |x| {
                let (m, v) = (param(&[6], 0.0, x)?, param(&[6], 0.0, x)?.add_scalar(1.0)?);
                let stats = RunningStats {
                    mean: Some(&m),
                    var: Some(&v),
                };
                let y = x.batch_norm(
                    stats,
                    Some(&param(&[6], 1.0, x)?),
                    Some(&param(&[6], 2.0, x)?),
                    true,
                    0.1,
                    1e-5,
                )?;
                // the running statistics' update is part of the result
                Tensor::cat(&[y.flatten(0, -1)?, m, v], 0)
            }),
            ("batch_norm eval", |x| {
                let (m, v) = (param(&[6], 0.5, x)?, param(&[6], 0.7, x)?.abs()?.add_scalar(0.5)?);
                x.batch_norm(
                    RunningStats {
                        mean: Some(&m),
                        var: Some(&v),
                    },
                    None,
                    None,
                    false,
                    0.1,
                    1e-5,
                )
            }),
            ("group_norm", |x| {
                x.group_norm(3, Some(&param(&[6], 1.0, x)?), Some(&param(&[6], 2.0, x)?), 1e-5)
            }),
            ("instance_norm", |x| {
                x.instance_norm(
                    RunningStats {
                        mean: None,
                        var: None,
                    },
                    None,
                    None,
                    true,
                    0.1,
                    1e-5,
                )
            }),
            ("interpolate bilinear", |x| {
                x.interpolate(&resize(&[13, 7], "bilinear", None))
            }),
            ("interpolate bicubic align_corners", |x| {
                x.interpolate(&resize(&[5, 14], "bicubic", Some(true)))
            }),
            ("interpolate nearest", |x| {
                x.interpolate(&resize(&[13, 7], "nearest", None))
            }),
            ("pixel_shuffle", |x| {
                x.pixel_shuffle(1)?.narrow(1, 0, 4)?.pixel_shuffle(2)
            }),
            ("unfold", |x| x.im2col(&[3, 2], &[1, 2], &[1], &[2, 1])),
            ("fold of unfold", |x| {
                x.im2col(&[3, 3], &[1], &[1], &[1])?
                    .col2im(&[9, 10], &[3, 3], &[1], &[1], &[1])
            }),
            ("grid_sample bilinear reflection", |x| {
                let grid = param(&[4, 5, 7, 2], 0.37, x)?.mul_scalar(1.2)?;
                x.grid_sample(&grid, "bilinear", "reflection", false)
            }),
            ("grid_sample bicubic border", |x| {
                let grid = param(&[4, 5, 7, 2], 0.29, x)?.mul_scalar(1.15)?;
                x.grid_sample(&grid, "bicubic", "border", false)
            }),
            ("grid_sample nearest zeros", |x| {
                let grid = param(&[4, 5, 7, 2], 0.61, x)?.mul_scalar(1.1)?;
                x.grid_sample(&grid, "nearest", "zeros", true)
            }),
            ("affine_grid", |x| {
                param(&[4, 2, 3], 0.9, x)?.affine_grid(&[4, 6, 9, 10], false)
            }),
            ("lp_pool2d", |x| {
                x.abs()?.add_scalar(0.25)?.lp_pool(2, 2.0, &pool(2, 2, 0, false))
            }),
            ("max_unpool2d", |x| {
                let o = pool(2, 2, 0, false);
                let (v, i) = x.max_pool(2, &o, true)?;
                v.max_unpool(
                    2,
                    &i.ok_or_else(|| kiln::Error::invalid("check", "no indices"))?,
                    &o,
                    None,
                )
            }),
            ("local_response_norm", |x| {
                x.local_response_norm(3, 1e-2, 0.75, 1.0)
            }),
            ("conv2d input grad", |x| {
                input_grad(x, |x| {
                    let o = conv(&[2], ConvPadding::Explicit(vec![1]), &[1], 2, "zeros");
                    x.conv(&param(&[4, 3, 3, 3], 0.3, x)?, None, 2, &o)
                })
            }),
            ("max_pool2d input grad", |x| {
                input_grad(x, |x| Ok(x.max_pool(2, &pool(3, 2, 1, false), false)?.0))
            }),
            ("max_pool2d floor", |x| {
                Ok(x.max_pool(2, &pool(3, 2, 1, false), false)?.0)
            }),
            ("max_pool2d grad with ties", |x| {
                // every window is a tie: the gradient goes to its first element
                let t = x.mul_scalar(0.0)?.add_scalar(1.0)?.detach();
                t.set_requires_grad(true)?;
                t.max_pool(2, &pool(2, 2, 0, false), false)?.0.sum()?.backward()?;
                t.grad()
                    .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
            }),
            ("max_pool2d padded grad with ties", |x| {
                let t = x.mul_scalar(0.0)?.add_scalar(-1.0)?.detach();
                t.set_requires_grad(true)?;
                t.max_pool(2, &pool(3, 2, 1, false), false)?.0.sum()?.backward()?;
                t.grad()
                    .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
            }),
            ("avg_pool2d counting padding", |x| {
                x.avg_pool(2, &pool(3, 2, 1, false), true, None)
            }),
            ("avg_pool2d input grad", |x| {
                input_grad(x, |x| x.avg_pool(2, &pool(3, 2, 1, false), false, None))
            }),
            ("conv2d weight grad", |x| {
                let w = param(&[4, 6, 3, 3], 0.3, x)?.detach();
                w.set_requires_grad(true)?;
                let o = conv(&[1], ConvPadding::Explicit(vec![1]), &[1], 1, "zeros");
                x.conv(&w, None, 2, &o)?
                    .to_dtype(DType::F64)?
                    .pow_scalar(2.0)?
                    .sum()?
                    .backward()?;
                w.grad()
                    .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
            }),
            ("batch_norm training grads", |x| {
                let x = x.detach();
                x.set_requires_grad(true)?;
                let (w, b) = (param(&[6], 1.0, &x)?.detach(), param(&[6], 2.0, &x)?.detach());
                w.set_requires_grad(true)?;
                b.set_requires_grad(true)?;
                let stats = RunningStats {
                    mean: None,
                    var: None,
                };
                let y = x.batch_norm(stats, Some(&w), Some(&b), true, 0.1, 1e-5)?;
                // weighted so that the input gradient is not zero
                let k = param(y.shape(), 0.7, &y)?;
                y.mul(&k)?.to_dtype(DType::F64)?.sum()?.backward()?;
                let grads = [x.grad(), w.grad(), b.grad()];
                let grads: Vec<Tensor> = grads
                    .into_iter()
                    .map(|g| {
                        g.ok_or_else(|| kiln::Error::invalid("check", "no gradient"))?
                            .flatten(0, -1)
                    })
                    .collect::<Result<_>>()?;
                Tensor::cat(&grads, 0)
            }),
            ("conv_transpose1d", |x| {
                let o = ConvTransposeOptions {
                    stride: vec![2],
                    padding: vec![1],
                    ..Default::default()
                };
                x.flatten(2, 3)?
                    .conv_transpose(&param(&[6, 2, 3], 0.5, x)?, None, 1, &o)
            }),
            ("conv_transpose3d", |x| {
                let o = ConvTransposeOptions {
                    stride: vec![1, 2, 2],
                    ..Default::default()
                };
                x.reshape(&[4, 3, 2, 9, 10])?
                    .conv_transpose(&param(&[3, 2, 2, 2, 2], 0.4, x)?, None, 3, &o)
            }),
            ("max_pool1d", |x| {
                Ok(x.flatten(2, 3)?.max_pool(1, &pool(3, 2, 1, false), false)?.0)
            }),
            ("max_pool2d dilated", |x| {
                let mut o = pool(2, 1, 1, false);
                o.dilation = vec![2];
                Ok(x.max_pool(2, &o, false)?.0)
            }),
            ("max_pool3d", |x| {
                Ok(x.reshape(&[4, 3, 2, 9, 10])?
                    .max_pool(3, &pool(2, 2, 0, false), false)?
                    .0)
            }),
            ("avg_pool1d", |x| {
                x.flatten(2, 3)?.avg_pool(1, &pool(4, 3, 2, false), true, None)
            }),
            ("avg_pool3d", |x| {
                x.reshape(&[4, 3, 2, 9, 10])?
                    .avg_pool(3, &pool(2, 1, 1, false), false, None)
            }),
            ("adaptive_avg_pool1d", |x| {
                x.flatten(2, 3)?.adaptive_avg_pool(1, &[Some(7)])
            }),
            ("adaptive_avg_pool3d", |x| {
                x.reshape(&[4, 3, 2, 9, 10])?
                    .adaptive_avg_pool(3, &[Some(1), Some(4), None])
            }),
            ("adaptive_max_pool1d", |x| {
                Ok(x.flatten(2, 3)?.adaptive_max_pool(1, &[Some(7)], false)?.0)
            }),
            ("adaptive_max_pool3d", |x| {
                Ok(x.reshape(&[4, 3, 2, 9, 10])?
                    .adaptive_max_pool(3, &[Some(2), Some(4), Some(3)], false)?
                    .0)
            }),
            ("interpolate linear", |x| {
                x.flatten(2, 3)?
                    .interpolate(&resize(&[37], "linear", Some(false)))
            }),
            ("interpolate trilinear", |x| {
                x.reshape(&[4, 3, 2, 9, 10])?
                    .interpolate(&resize(&[3, 5, 12], "trilinear", Some(true)))
            }),
            ("interpolate area", |x| {
                x.interpolate(&resize(&[4, 3], "area", None))
            }),
            ("interpolate nearest-exact", |x| {
                x.interpolate(&resize(&[13, 7], "nearest-exact", None))
            }),
            ("pixel_unshuffle", |x| x.narrow(2, 0, 8)?.pixel_unshuffle(2)),
            ("channel_shuffle", |x| x.channel_shuffle(3)),
            ("batch_norm training 2-D and 3-D", |x| {
                let flat = x.flatten(2, 3)?;
                let stats = || RunningStats {
                    mean: None,
                    var: None,
                };
                let w = param(&[6], 1.3, x)?;
                let a = flat.batch_norm(stats(), Some(&w), None, true, 0.1, 1e-5)?;
                // positions as the batch (an expanded batch has no variance across samples)
                let rows = x.permute(&[0, 2, 3, 1])?.reshape(&[-1, 6])?;
                let b = rows.batch_norm(stats(), None, Some(&w), true, 0.1, 1e-5)?;
                Tensor::cat(&[a.flatten(0, -1)?, b.flatten(0, -1)?], 0)
            }),
            ("conv_transpose2d input grad", |x| {
                input_grad(x, |x| {
                    let o = ConvTransposeOptions {
                        stride: vec![2],
                        ..Default::default()
                    };
                    x.conv_transpose(&param(&[6, 3, 2, 2], 0.5, x)?, None, 2, &o)
                })
            }),
        ];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (layout, shape, view) in image_layouts() {
                let x = match input(&mut self.gen, &shape, dtype, false).and_then(|t| view(&t)) {
                    Ok(x) => x,
                    Err(e) => {
                        self.record("cnn input", dtype, layout, Err(e));
                        continue;
                    }
                };
                for (name, op) in &ops {
                    let r = self.both(&x, op);
                    // sums of up to 54 products: a few ulps of the dtype per
                    // term; a weight gradient sums over every position of
                    // the batch (360 products), in cuDNN's order
                    let scale = if name.ends_with("weight grad") {
                        100.0
                    } else {
                        20.0
                    };
                    self.record_scaled(name, dtype, layout, r, scale);
                }
            }
        }
    }
}
