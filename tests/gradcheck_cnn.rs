//! Gradient checks of the convolutional family (`tensor/cnn`): each
//! backward against central finite differences in f64 on the CPU, for every
//! option family (stride, padding and its modes, dilation, groups, ceil
//! mode, adaptive windows, interpolation modes). Pooling inputs are random,
//! so window maxima are distinct and the functions smooth where probed.

mod common;

use common::*;
use kiln::tensor::cnn::conv::{ConvOptions, ConvPadding, ConvTransposeOptions};
use kiln::tensor::cnn::fractional::FractionalOutput;
use kiln::tensor::cnn::norm::RunningStats;
use kiln::tensor::cnn::pool::PoolOptions;
use kiln::tensor::cnn::resample::InterpolateOptions;
use kiln::tensor::random::Generator;
use kiln::{Device, Result, Tensor};

type OpFn = fn(&[Tensor]) -> Result<Tensor>;

fn run(cases: &[(&str, &[&[usize]], OpFn)]) {
    for (name, shapes, f) in cases {
        let mut rng = Rng::new(name);
        let inputs: Vec<Input> = shapes.iter().map(|s| uni(&mut rng, s, -1.0, 1.0)).collect();
        gradcheck(name, &inputs, f);
    }
}

fn conv_opts(stride: &[i64], padding: ConvPadding, dilation: &[i64], groups: i64, mode: &str) -> ConvOptions {
    ConvOptions {
        stride: stride.to_vec(),
        padding,
        dilation: dilation.to_vec(),
        groups,
        padding_mode: mode.into(),
    }
}

#[test]
fn convolutions() {
    run(&[
        ("conv2d with bias", &[&[2, 3, 5, 4], &[4, 3, 3, 2], &[4]], |x| {
            x[0].conv(&x[1], Some(&x[2]), 2, &ConvOptions::default())
        }),
        (
            "conv2d strided padded dilated",
            &[&[1, 2, 6, 7], &[3, 2, 2, 3]],
            |x| {
                let o = conv_opts(&[2, 1], ConvPadding::Explicit(vec![1, 2]), &[2, 1], 1, "zeros");
                x[0].conv(&x[1], None, 2, &o)
            },
        ),
        ("conv2d groups", &[&[2, 4, 4, 4], &[6, 2, 2, 2], &[6]], |x| {
            let o = conv_opts(&[1], ConvPadding::Explicit(vec![1]), &[1], 2, "zeros");
            x[0].conv(&x[1], Some(&x[2]), 2, &o)
        }),
        (
            "conv2d depthwise same reflect",
            &[&[1, 3, 5, 5], &[3, 1, 3, 3]],
            |x| {
                let o = conv_opts(&[1], ConvPadding::Same, &[1], 3, "reflect");
                x[0].conv(&x[1], None, 2, &o)
            },
        ),
        ("conv2d circular", &[&[1, 2, 4, 3], &[2, 2, 3, 2]], |x| {
            let o = conv_opts(&[1], ConvPadding::Explicit(vec![1]), &[1], 1, "circular");
            x[0].conv(&x[1], None, 2, &o)
        }),
        ("conv2d replicate unbatched", &[&[2, 4, 4], &[2, 2, 2, 2]], |x| {
            let o = conv_opts(&[2], ConvPadding::Explicit(vec![1]), &[1], 1, "replicate");
            x[0].conv(&x[1], None, 2, &o)
        }),
        ("conv1d", &[&[2, 2, 9], &[3, 2, 3], &[3]], |x| {
            let o = conv_opts(&[2], ConvPadding::Explicit(vec![1]), &[2], 1, "zeros");
            x[0].conv(&x[1], Some(&x[2]), 1, &o)
        }),
        ("conv3d", &[&[1, 2, 3, 4, 3], &[2, 2, 2, 2, 2]], |x| {
            let o = conv_opts(&[1, 2, 1], ConvPadding::Explicit(vec![0, 1, 1]), &[1], 1, "zeros");
            x[0].conv(&x[1], None, 3, &o)
        }),
        ("conv_transpose2d", &[&[2, 4, 3, 3], &[4, 2, 3, 2], &[4]], |x| {
            let o = ConvTransposeOptions {
                stride: vec![2, 1],
                padding: vec![1, 0],
                output_padding: vec![1, 0],
                groups: 2,
                dilation: vec![1, 2],
            };
            x[0].conv_transpose(&x[1], Some(&x[2]), 2, &o)
        }),
        ("conv_transpose1d", &[&[1, 2, 5], &[2, 3, 3]], |x| {
            let o = ConvTransposeOptions {
                stride: vec![3],
                padding: vec![1],
                ..Default::default()
            };
            x[0].conv_transpose(&x[1], None, 1, &o)
        }),
        ("conv_transpose3d", &[&[1, 2, 2, 3, 2], &[2, 1, 2, 2, 2]], |x| {
            let o = ConvTransposeOptions {
                stride: vec![2],
                ..Default::default()
            };
            x[0].conv_transpose(&x[1], None, 3, &o)
        }),
        ("unfold", &[&[2, 2, 4, 5]], |x| {
            x[0].im2col(&[2, 3], &[1, 2], &[1], &[2, 1])
        }),
        ("fold", &[&[1, 8, 6]], |x| {
            x[0].col2im(&[3, 4], &[2, 2], &[1], &[0, 1], &[1, 2])
        }),
    ]);
}

fn pool(kernel: &[i64], stride: &[i64], padding: &[i64], dilation: &[i64], ceil_mode: bool) -> PoolOptions {
    PoolOptions {
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
        ceil_mode,
    }
}

#[test]
fn pooling() {
    run(&[
        ("max_pool2d", &[&[2, 2, 5, 6]], |x| {
            Ok(x[0].max_pool(2, &pool(&[2], &[], &[0], &[1], false), false)?.0)
        }),
        ("max_pool2d padded ceil", &[&[1, 2, 6, 5]], |x| {
            Ok(x[0].max_pool(2, &pool(&[3], &[2], &[1], &[1], true), true)?.0)
        }),
        ("max_pool2d dilated overlapping", &[&[1, 1, 6, 6]], |x| {
            Ok(x[0]
                .max_pool(2, &pool(&[2, 3], &[1], &[0, 1], &[2, 1], false), false)?
                .0)
        }),
        ("max_pool1d", &[&[2, 3, 8]], |x| {
            Ok(x[0].max_pool(1, &pool(&[3], &[2], &[1], &[1], false), false)?.0)
        }),
        ("max_pool3d", &[&[1, 1, 4, 4, 4]], |x| {
            Ok(x[0].max_pool(3, &pool(&[2], &[], &[0], &[1], false), false)?.0)
        }),
        ("avg_pool2d", &[&[2, 2, 5, 6]], |x| {
            x[0].avg_pool(2, &pool(&[2], &[], &[0], &[1], false), true, None)
        }),
        (
            "avg_pool2d padded ceil without pad count",
            &[&[1, 2, 6, 5]],
            |x| x[0].avg_pool(2, &pool(&[3], &[2], &[1], &[1], true), false, None),
        ),
        ("avg_pool1d divisor_override", &[&[1, 2, 7]], |x| {
            x[0].avg_pool(1, &pool(&[3], &[2], &[1], &[1], false), true, Some(2))
        }),
        ("adaptive_avg_pool2d", &[&[2, 2, 5, 7]], |x| {
            x[0].adaptive_avg_pool(2, &[Some(3), Some(4)])
        }),
        ("adaptive_avg_pool1d", &[&[1, 2, 10]], |x| {
            x[0].adaptive_avg_pool(1, &[Some(4)])
        }),
        ("adaptive_max_pool2d", &[&[1, 2, 5, 7]], |x| {
            Ok(x[0].adaptive_max_pool(2, &[Some(3), None], true)?.0)
        }),
        ("adaptive_max_pool3d", &[&[1, 1, 3, 4, 5]], |x| {
            Ok(x[0].adaptive_max_pool(3, &[Some(2)], false)?.0)
        }),
        ("fractional_max_pool2d", &[&[2, 2, 7, 6]], |x| {
            let u = Tensor::from_vec(
                vec![0.1f64, 0.7, 0.45, 0.2, 0.9, 0.33, 0.6, 0.05],
                &[2, 2, 2],
                Device::Cpu,
            )?;
            let out = FractionalOutput::Size(vec![3, 4]);
            let mut g = Generator::new(0);
            Ok(x[0]
                .fractional_max_pool(2, &[2], &out, Some(&u), false, &mut g)?
                .0)
        }),
        ("fractional_max_pool3d", &[&[1, 2, 5, 4, 6]], |x| {
            let u = Tensor::from_vec(vec![0.3f64, 0.8, 0.15, 0.55, 0.25, 0.95], &[1, 2, 3], Device::Cpu)?;
            let out = FractionalOutput::Ratio(vec![0.5]);
            let mut g = Generator::new(0);
            Ok(x[0]
                .fractional_max_pool(3, &[2, 2, 3], &out, Some(&u), true, &mut g)?
                .0)
        }),
    ]);
}

#[test]
fn normalisation_and_resampling() {
    run(&[
        ("batch_norm training", &[&[4, 3, 2, 2], &[3], &[3]], |x| {
            let running = RunningStats {
                mean: None,
                var: None,
            };
            x[0].batch_norm(running, Some(&x[1]), Some(&x[2]), true, 0.1, 1e-5)
        }),
        ("batch_norm eval", &[&[3, 2, 4], &[2]], |x| {
            let (m, v) = (
                Tensor::zeros(&[2], Some(x[0].dtype()), x[0].device())?,
                Tensor::ones(&[2], Some(x[0].dtype()), x[0].device())?,
            );
            let running = RunningStats {
                mean: Some(&m.add_scalar(0.3)?),
                var: Some(&v.mul_scalar(2.0)?),
            };
            x[0].batch_norm(running, Some(&x[1]), None, false, 0.1, 1e-5)
        }),
        ("group_norm", &[&[2, 4, 3], &[4], &[4]], |x| {
            x[0].group_norm(2, Some(&x[1]), Some(&x[2]), 1e-5)
        }),
        ("instance_norm", &[&[2, 3, 5]], |x| {
            x[0].instance_norm(
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
        ("interpolate bilinear", &[&[1, 2, 3, 4]], |x| {
            x[0].interpolate(&InterpolateOptions {
                size: Some(vec![5, 7]),
                mode: "bilinear".into(),
                ..Default::default()
            })
        }),
        ("interpolate bicubic align_corners", &[&[1, 1, 4, 4]], |x| {
            x[0].interpolate(&InterpolateOptions {
                size: Some(vec![6, 3]),
                mode: "bicubic".into(),
                align_corners: Some(true),
                ..Default::default()
            })
        }),
        ("interpolate nearest", &[&[1, 2, 3, 3]], |x| {
            x[0].interpolate(&InterpolateOptions {
                scale_factor: Some(vec![2.0, 1.5]),
                mode: "nearest".into(),
                ..Default::default()
            })
        }),
        ("interpolate trilinear", &[&[1, 1, 2, 3, 2]], |x| {
            x[0].interpolate(&InterpolateOptions {
                size: Some(vec![3, 4, 3]),
                mode: "trilinear".into(),
                ..Default::default()
            })
        }),
        ("pixel_shuffle", &[&[1, 8, 2, 3]], |x| x[0].pixel_shuffle(2)),
        ("pixel_unshuffle", &[&[1, 2, 4, 6]], |x| x[0].pixel_unshuffle(2)),
    ]);
}

#[test]
fn spatial_transformers_and_the_rest() {
    run(&[
        (
            "grid_sample bilinear zeros",
            &[&[1, 2, 4, 5], &[1, 3, 2, 2]],
            |x| x[0].grid_sample(&x[1].mul_scalar(1.2)?, "bilinear", "zeros", false),
        ),
        (
            "grid_sample bilinear border align_corners",
            &[&[2, 1, 3, 4], &[2, 2, 3, 2]],
            |x| x[0].grid_sample(&x[1].mul_scalar(1.3)?, "bilinear", "border", true),
        ),
        (
            "grid_sample bicubic zeros",
            &[&[1, 2, 4, 5], &[1, 2, 3, 2]],
            |x| x[0].grid_sample(&x[1].mul_scalar(1.1)?, "bicubic", "zeros", false),
        ),
        (
            "grid_sample bicubic reflection align_corners",
            &[&[1, 1, 4, 4], &[1, 2, 2, 2]],
            |x| x[0].grid_sample(&x[1].mul_scalar(1.3)?, "bicubic", "reflection", true),
        ),
        (
            "grid_sample bilinear reflection",
            &[&[1, 2, 4, 3], &[1, 2, 2, 2]],
            |x| x[0].grid_sample(&x[1].mul_scalar(1.4)?, "bilinear", "reflection", false),
        ),
        ("grid_sample nearest", &[&[1, 2, 4, 4], &[1, 2, 3, 2]], |x| {
            x[0].grid_sample(&x[1].mul_scalar(0.9)?, "nearest", "zeros", false)
        }),
        ("affine_grid", &[&[2, 2, 3]], |x| {
            x[0].affine_grid(&[2, 1, 3, 4], false)
        }),
        ("affine_grid 3-D", &[&[1, 3, 4]], |x| {
            x[0].affine_grid(&[1, 1, 2, 3, 2], true)
        }),
        ("lp_pool2d", &[&[1, 2, 4, 4]], |x| {
            x[0].abs()?
                .add_scalar(0.2)?
                .lp_pool(2, 3.0, &pool(&[2], &[], &[0], &[1], false))
        }),
        ("max_unpool2d", &[&[1, 2, 4, 4]], |x| {
            let o = pool(&[2], &[], &[0], &[1], false);
            let (v, i) = x[0].max_pool(2, &o, true)?;
            v.max_unpool(2, &i.expect("indices"), &o, None)
        }),
        ("local_response_norm", &[&[2, 5, 3]], |x| {
            x[0].local_response_norm(3, 0.5, 0.75, 1.0)
        }),
        ("channel_shuffle", &[&[1, 6, 2]], |x| x[0].channel_shuffle(2)),
    ]);
}
