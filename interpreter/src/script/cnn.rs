//! The script side of the convolutional family (`tensor/cnn`): `conv1d/2d/3d`,
//! `conv_transpose1d/2d/3d`, pooling, `batch_norm`/`group_norm`/
//! `instance_norm`, `interpolate`, `pixel_shuffle`, `unfold`/`fold` and
//! channel dropout, with `torch.nn.functional`'s argument order; sizes are
//! an int or an array of ints, options positional or in a map.

use super::convert::{ok, script_error, RhaiResult};
use super::kwargs::{register as kw, Form, Kwargs};
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::cnn::conv::{ConvOptions, ConvPadding, ConvTransposeOptions};
use crate::tensor::cnn::fractional::FractionalOutput;
use crate::tensor::cnn::norm::RunningStats;
use crate::tensor::cnn::pool::PoolOptions;
use crate::tensor::cnn::resample::InterpolateOptions;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine};
use std::sync::Arc;

/// Registers the convolution, pooling, normalisation and resampling ops.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Cnn);
    let api = &mut api;
    for n in 1..=3 {
        register_conv(api, n);
        register_pool(api, n);
        register_dropout(api, rt, n);
    }
    register_fractional(api, rt, 2);
    register_fractional(api, rt, 3);
    register_norms(api);
    register_resampling(api);
    register_transformers(api);
}

/// `[values, indices]` when indices were asked for, else the values.
fn maybe_pair((values, indices): (Tensor, Option<Tensor>)) -> Dynamic {
    match indices {
        Some(i) => Dynamic::from(vec![Dynamic::from(values), Dynamic::from(i)] as Array),
        None => Dynamic::from(values),
    }
}

/// A convolution's `padding`: ints, "same" or "valid".
fn conv_padding(op: &str, k: &Kwargs) -> RhaiResult<ConvPadding> {
    match k.get("padding") {
        Some(v) if v.is_string() => match v.clone().into_string().unwrap_or_default().as_str() {
            "same" => Ok(ConvPadding::Same),
            "valid" => Ok(ConvPadding::Valid),
            other => Err(script_error(format!(
                "{op}: padding \"{other}\" is not one of \"same\", \"valid\" or ints"
            ))),
        },
        _ => Ok(ConvPadding::Explicit(k.ints("padding", &[0])?)),
    }
}

fn register_conv(api: &mut Api, n: usize) {
    const CONV: [&str; 3] = ["conv1d", "conv2d", "conv3d"];
    const CONV_T: [&str; 3] = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"];
    const CONV_DOC: [&str; 3] = [
        "F.conv1d: input [N, C, L] (or [C, L]), weight [O, C/groups, k]; options bias, stride (1), padding (int(s), \"same\", \"valid\"; 0), dilation (1), groups (1), padding_mode (\"zeros\", reflect, replicate, circular)",
        "F.conv2d: input [N, C, H, W] (or [C, H, W]), weight [O, C/groups, kh, kw]; options bias, stride (1), padding (int(s), \"same\", \"valid\"; 0), dilation (1), groups (1), padding_mode (\"zeros\", reflect, replicate, circular)",
        "F.conv3d: input [N, C, D, H, W] (or [C, D, H, W]), weight [O, C/groups, kd, kh, kw]; options bias, stride (1), padding (int(s), \"same\", \"valid\"; 0), dilation (1), groups (1), padding_mode (\"zeros\", reflect, replicate, circular)",
    ];
    const CONV_T_DOC: [&str; 3] = [
        "F.conv_transpose1d: input [N, C, L], weight [C, O/groups, k]; options bias, stride (1), padding (0), output_padding (0), groups (1), dilation (1)",
        "F.conv_transpose2d: input [N, C, H, W], weight [C, O/groups, kh, kw]; options bias, stride (1), padding (0), output_padding (0), groups (1), dilation (1)",
        "F.conv_transpose3d: input [N, C, D, H, W], weight [C, O/groups, kd, kh, kw]; options bias, stride (1), padding (0), output_padding (0), groups (1), dilation (1)",
    ];
    kw(
        api,
        CONV[n - 1],
        CONV_DOC[n - 1],
        ["input", "weight"],
        &["bias", "stride", "padding", "dilation", "groups", "padding_mode"],
        Form::Plain,
        move |[x, w], k| {
            let opts = ConvOptions {
                stride: k.ints("stride", &[1])?,
                padding: conv_padding(CONV[n - 1], &k)?,
                dilation: k.ints("dilation", &[1])?,
                groups: k.int("groups", 1)?,
                padding_mode: k.string("padding_mode", "zeros")?,
            };
            ok(x.conv(&w, k.tensor("bias", &x)?.as_ref(), n, &opts))
        },
    );
    kw(
        api,
        CONV_T[n - 1],
        CONV_T_DOC[n - 1],
        ["input", "weight"],
        &[
            "bias",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "dilation",
        ],
        Form::Plain,
        move |[x, w], k| {
            let opts = ConvTransposeOptions {
                stride: k.ints("stride", &[1])?,
                padding: k.ints("padding", &[0])?,
                output_padding: k.ints("output_padding", &[0])?,
                groups: k.int("groups", 1)?,
                dilation: k.ints("dilation", &[1])?,
            };
            ok(x.conv_transpose(&w, k.tensor("bias", &x)?.as_ref(), n, &opts))
        },
    );
}

/// Adaptive output sizes: ints, `()` keeping the input's size.
fn adaptive_sizes(k: &Kwargs) -> RhaiResult<Vec<Option<i64>>> {
    let Some(v) = k.get("output_size") else {
        return Err(script_error("adaptive pooling: option 'output_size' is required"));
    };
    let items: Array = match v.clone().try_cast::<Array>() {
        Some(a) => a,
        None => vec![v.clone()],
    };
    items
        .iter()
        .map(|d| {
            if d.is_unit() {
                Ok(None)
            } else {
                d.as_int().map(Some).map_err(|t| {
                    script_error(format!(
                        "adaptive pooling: output_size must hold ints or (), found {t}"
                    ))
                })
            }
        })
        .collect()
}

fn register_pool(api: &mut Api, n: usize) {
    const MAX: [&str; 3] = ["max_pool1d", "max_pool2d", "max_pool3d"];
    const MAX_IDX: [&str; 3] = [
        "max_pool1d_with_indices",
        "max_pool2d_with_indices",
        "max_pool3d_with_indices",
    ];
    const AVG: [&str; 3] = ["avg_pool1d", "avg_pool2d", "avg_pool3d"];
    const AAVG: [&str; 3] = [
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_avg_pool3d",
    ];
    const AMAX: [&str; 3] = [
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "adaptive_max_pool3d",
    ];
    let pool_opts = |k: &Kwargs, dilated: bool| -> RhaiResult<PoolOptions> {
        Ok(PoolOptions {
            kernel: k.required_ints("kernel_size")?,
            stride: k.ints("stride", &[])?,
            padding: k.ints("padding", &[0])?,
            dilation: if dilated {
                k.ints("dilation", &[1])?
            } else {
                vec![1]
            },
            ceil_mode: k.flag("ceil_mode", false)?,
        })
    };
    kw(
        api,
        MAX[n - 1],
        "the maximum of each window; kernel_size, then options stride (kernel_size), padding (0, at most half the kernel), dilation (1), ceil_mode (false), return_indices (false: [values, flat indices per plane] when true)",
        ["input"],
        &["kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"],
        Form::WithOptions,
        move |[x], k| -> RhaiResult<Dynamic> {
            let r = ok(x.max_pool(n, &pool_opts(&k, true)?, k.flag("return_indices", false)?))?;
            Ok(maybe_pair(r))
        },
    );
    kw(
        api,
        MAX_IDX[n - 1],
        "max pooling returning [values, flat indices per plane]; options as max_pool",
        ["input"],
        &["kernel_size", "stride", "padding", "dilation", "ceil_mode"],
        Form::WithOptions,
        move |[x], k| -> RhaiResult<Dynamic> {
            Ok(maybe_pair(ok(x.max_pool(n, &pool_opts(&k, true)?, true))?))
        },
    );
    kw(
        api,
        AVG[n - 1],
        "the mean of each window; kernel_size, then options stride (kernel_size), padding (0), ceil_mode (false), count_include_pad (true), divisor_override",
        ["input"],
        &["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"],
        Form::WithOptions,
        move |[x], k| {
            ok(x.avg_pool(
                n,
                &pool_opts(&k, false)?,
                k.flag("count_include_pad", true)?,
                k.opt_int("divisor_override")?,
            ))
        },
    );
    const LP: [&str; 3] = ["lp_pool1d", "lp_pool2d", "lp_pool3d"];
    const UNPOOL: [&str; 3] = ["max_unpool1d", "max_unpool2d", "max_unpool3d"];
    kw(
        api,
        LP[n - 1],
        "(Σ x^p)^(1/p) over each window: norm_type p, kernel_size, then options stride (kernel_size), ceil_mode",
        ["input"],
        &["norm_type", "kernel_size", "stride", "ceil_mode"],
        Form::WithOptions,
        move |[x], k| {
            let opts = PoolOptions {
                kernel: k.required_ints("kernel_size")?,
                stride: k.ints("stride", &[])?,
                padding: vec![0],
                dilation: vec![1],
                ceil_mode: k.flag("ceil_mode", false)?,
            };
            ok(x.lp_pool(n, k.required_number("norm_type")?, &opts))
        },
    );
    kw(
        api,
        UNPOOL[n - 1],
        "the values put back at the indices of max pooling (zeros elsewhere): indices, kernel_size, then options stride, padding, output_size",
        ["input", "indices"],
        &["kernel_size", "stride", "padding", "output_size"],
        Form::WithOptions,
        move |[x, i], k| {
            let opts = PoolOptions {
                kernel: k.required_ints("kernel_size")?,
                stride: k.ints("stride", &[])?,
                padding: k.ints("padding", &[0])?,
                dilation: vec![1],
                ceil_mode: false,
            };
            let size = if k.has("output_size") { Some(k.ints("output_size", &[])?) } else { None };
            ok(x.max_unpool(n, &i, &opts, size.as_deref()))
        },
    );
    kw(
        api,
        AAVG[n - 1],
        "the mean over adaptive windows [floor(i·S/O), ceil((i+1)·S/O)); output_size an int or ints (() keeps a dim)",
        ["input"],
        &["output_size"],
        Form::WithOptions,
        move |[x], k| ok(x.adaptive_avg_pool(n, &adaptive_sizes(&k)?)),
    );
    kw(
        api,
        AMAX[n - 1],
        "the maximum over adaptive windows; output_size, then option return_indices (false)",
        ["input"],
        &["output_size", "return_indices"],
        Form::WithOptions,
        move |[x], k| -> RhaiResult<Dynamic> {
            let r = ok(x.adaptive_max_pool(n, &adaptive_sizes(&k)?, k.flag("return_indices", false)?))?;
            Ok(maybe_pair(r))
        },
    );
}

/// `fractional_max_pool2d/3d`: random window places, so never evaluated
/// ahead of time.
fn register_fractional(api: &mut Api, rt: &Arc<Runtime>, n: usize) {
    const NAMES: [&str; 2] = ["fractional_max_pool2d", "fractional_max_pool3d"];
    let name = NAMES[n - 2];
    let r = rt.clone();
    kw(
        api,
        name,
        "the maximum over kernel_size windows at pseudo-random places (fractional max pooling); kernel_size, then output_size or output_ratio, return_indices (false), _random_samples ([N, C, dims] in [0, 1), drawn when not given)",
        ["input"],
        &["kernel_size", "output_size", "output_ratio", "return_indices", "_random_samples"],
        Form::Random,
        move |[x], k| -> RhaiResult<Dynamic> {
            let output = if k.has("output_size") {
                FractionalOutput::Size(k.required_ints("output_size")?)
            } else if let Some(r) = k.opt_numbers("output_ratio")? {
                FractionalOutput::Ratio(r)
            } else {
                return Err(script_error(format!("{name}: give output_size or output_ratio")));
            };
            let samples = k.tensor("_random_samples", &x)?;
            let kernel = k.required_ints("kernel_size")?;
            let indices = k.flag("return_indices", false)?;
            ok(r.with_rng(|g| x.fractional_max_pool(n, &kernel, &output, samples.as_ref(), indices, g))).map(maybe_pair)
        },
    );
}

fn register_dropout(api: &mut Api, rt: &Arc<Runtime>, n: usize) {
    const NAMES: [&str; 3] = ["dropout1d", "dropout2d", "dropout3d"];
    let r = rt.clone();
    kw(
        api,
        NAMES[n - 1],
        "zeroes whole channels with probability p (0.5) and scales the rest by 1/(1-p) while training (true)",
        ["input"],
        &["p", "training"],
        Form::Random,
        move |[x], k| {
            let (p, training) = (k.number("p", 0.5)?, k.flag("training", true)?);
            ok(r.with_rng(|g| x.channel_dropout(n, p, training, g)))
        },
    );
}

fn register_norms(api: &mut Api) {
    kw(
        api,
        "batch_norm",
        "F.batch_norm: normalises each channel of [N, C, *] by the batch statistics while training (updating running_mean/running_var in place by momentum), else by the running ones; options running_mean, running_var, weight, bias, training (false), momentum (0.1), eps (1e-5)",
        ["input"],
        &["running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"],
        Form::Plain,
        |[x], k| {
            let (rm, rv) = (k.tensor("running_mean", &x)?, k.tensor("running_var", &x)?);
            let running = RunningStats {
                mean: rm.as_ref(),
                var: rv.as_ref(),
            };
            ok(x.batch_norm(
                running,
                k.tensor("weight", &x)?.as_ref(),
                k.tensor("bias", &x)?.as_ref(),
                k.flag("training", false)?,
                k.number("momentum", 0.1)?,
                k.number("eps", 1e-5)?,
            ))
        },
    );
    kw(
        api,
        "group_norm",
        "F.group_norm: each of num_groups channel groups of [N, C, *] normalised; options weight, bias, eps (1e-5)",
        ["input"],
        &["num_groups", "weight", "bias", "eps"],
        Form::WithOptions,
        |[x], k| {
            ok(x.group_norm(
                k.int("num_groups", 0)?,
                k.tensor("weight", &x)?.as_ref(),
                k.tensor("bias", &x)?.as_ref(),
                k.number("eps", 1e-5)?,
            ))
        },
    );
    kw(
        api,
        "local_response_norm",
        "x / (k + alpha · mean of x² over size neighbouring channels)^beta; size, then options alpha (1e-4), beta (0.75), k (1)",
        ["input"],
        &["size", "alpha", "beta", "k"],
        Form::WithOptions,
        |[x], k| {
            ok(x.local_response_norm(
                k.int("size", 1)?,
                k.number("alpha", 1e-4)?,
                k.number("beta", 0.75)?,
                k.number("k", 1.0)?,
            ))
        },
    );
    kw(
        api,
        "instance_norm",
        "F.instance_norm: each channel of each sample normalised over its positions; options running_mean, running_var, weight, bias, use_input_stats (true), momentum (0.1), eps (1e-5)",
        ["input"],
        &["running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"],
        Form::Plain,
        |[x], k| {
            let (rm, rv) = (k.tensor("running_mean", &x)?, k.tensor("running_var", &x)?);
            let running = RunningStats {
                mean: rm.as_ref(),
                var: rv.as_ref(),
            };
            ok(x.instance_norm(
                running,
                k.tensor("weight", &x)?.as_ref(),
                k.tensor("bias", &x)?.as_ref(),
                k.flag("use_input_stats", true)?,
                k.number("momentum", 0.1)?,
                k.number("eps", 1e-5)?,
            ))
        },
    );
}

fn register_resampling(api: &mut Api) {
    kw(
        api,
        "interpolate",
        "F.interpolate over the dims after [N, C]: options size or scale_factor, mode (\"nearest\", nearest-exact, linear, bilinear, bicubic, trilinear, area), align_corners, recompute_scale_factor",
        ["input"],
        &["size", "scale_factor", "mode", "align_corners", "recompute_scale_factor", "antialias"],
        Form::WithOptions,
        |[x], k| {
            if k.flag("antialias", false)? {
                return Err(script_error("interpolate: antialias=true is not supported"));
            }
            let size = if k.has("size") { Some(k.ints("size", &[])?) } else { None };
            let align_corners = if k.has("align_corners") { Some(k.flag("align_corners", false)?) } else { None };
            let opts = InterpolateOptions {
                size,
                scale_factor: k.opt_numbers("scale_factor")?,
                mode: k.string("mode", "nearest")?,
                align_corners,
                recompute_scale_factor: k.flag("recompute_scale_factor", false)?,
            };
            ok(x.interpolate(&opts))
        },
    );
    for (name, mode, doc) in [
        ("upsample", "", "interpolate under its older name (same options)"),
        (
            "upsample_nearest",
            "nearest",
            "interpolate with mode \"nearest\"; options size, scale_factor",
        ),
        (
            "upsample_bilinear",
            "bilinear",
            "interpolate with mode \"bilinear\" and align_corners true; options size, scale_factor",
        ),
    ] {
        kw(
            api,
            name,
            doc,
            ["input"],
            &["size", "scale_factor", "mode", "align_corners"],
            Form::WithOptions,
            move |[x], k| {
                let size = if k.has("size") {
                    Some(k.ints("size", &[])?)
                } else {
                    None
                };
                let opts = InterpolateOptions {
                    size,
                    scale_factor: k.opt_numbers("scale_factor")?,
                    mode: if mode.is_empty() {
                        k.string("mode", "nearest")?
                    } else {
                        mode.to_string()
                    },
                    align_corners: if mode == "bilinear" {
                        Some(true)
                    } else if k.has("align_corners") {
                        Some(k.flag("align_corners", false)?)
                    } else {
                        None
                    },
                    recompute_scale_factor: false,
                };
                ok(x.interpolate(&opts))
            },
        );
    }
    kw(
        api,
        "channel_shuffle",
        "[N, C, *] with channels regrouped: [N, g, C/g, *] transposed to [N, C/g, g, *]",
        ["input"],
        &["groups"],
        Form::WithOptions,
        |[x], k| ok(x.channel_shuffle(k.int("groups", 1)?)),
    );
    kw(
        api,
        "pixel_shuffle",
        "[*, C·r², H, W] to [*, C, H·r, W·r] (upscale_factor r)",
        ["input"],
        &["upscale_factor"],
        Form::WithOptions,
        |[x], k| ok(x.pixel_shuffle(k.int("upscale_factor", 1)?)),
    );
    kw(
        api,
        "pixel_unshuffle",
        "[*, C, H·r, W·r] to [*, C·r², H, W] (downscale_factor r)",
        ["input"],
        &["downscale_factor"],
        Form::WithOptions,
        |[x], k| ok(x.pixel_unshuffle(k.int("downscale_factor", 1)?)),
    );
    // F.unfold: three positional ints after the tensor are Tensor.unfold(dim, size, step)
    kw(
        api,
        "unfold",
        "F.unfold (im2col): [N, C, H, W] to columns [N, C·kh·kw, L]; kernel_size, then options dilation (1), padding (0), stride (1) (three positional ints are Tensor.unfold(dim, size, step))",
        ["input"],
        &["kernel_size", "dilation", "padding", "stride"],
        Form::WithOptions,
        |[x], k| {
            ok(x.im2col(
                &k.required_ints("kernel_size")?,
                &k.ints("dilation", &[1])?,
                &k.ints("padding", &[0])?,
                &k.ints("stride", &[1])?,
            ))
        },
    );
    kw(
        api,
        "fold",
        "F.fold (col2im): columns [N, C·kh·kw, L] summed into [N, C, *output_size]; output_size, kernel_size, then options dilation (1), padding (0), stride (1)",
        ["input"],
        &["output_size", "kernel_size", "dilation", "padding", "stride"],
        Form::WithOptions,
        |[x], k| {
            ok(x.col2im(
                &k.required_ints("output_size")?,
                &k.required_ints("kernel_size")?,
                &k.ints("dilation", &[1])?,
                &k.ints("padding", &[0])?,
                &k.ints("stride", &[1])?,
            ))
        },
    );
}

fn register_transformers(api: &mut Api) {
    kw(
        api,
        "affine_grid",
        "F.affine_grid: theta [N, 2, 3] and size [N, C, H, W] give a sampling grid [N, H, W, 2] (3-D: theta [N, 3, 4], size [N, C, D, H, W]); option align_corners (false)",
        ["theta"],
        &["size", "align_corners"],
        Form::WithOptions,
        |[t], k| ok(t.affine_grid(&k.required_ints("size")?, k.flag("align_corners", false)?)),
    );
    kw(
        api,
        "grid_sample",
        "F.grid_sample: input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]); options mode (\"bilinear\", nearest, bicubic), padding_mode (\"zeros\", border, reflection), align_corners (false)",
        ["input", "grid"],
        &["mode", "padding_mode", "align_corners"],
        Form::Plain,
        |[x, g], k| {
            ok(x.grid_sample(
                &g,
                &k.string("mode", "bilinear")?,
                &k.string("padding_mode", "zeros")?,
                k.flag("align_corners", false)?,
            ))
        },
    );
}
