//! The script side of `torch.nn.functional`'s activations, layer functions
//! and distances (`tensor/activation.rs`, `tensor/functional.rs`): argument
//! conversion only, options positionally or in a map (see `kwargs`).

use super::convert::{ok, script_error, RhaiResult};
use super::kwargs::{register as kw, Form};
use super::registry::{Api, Category};
use super::Runtime;
use crate::backend::Activation;
use crate::tensor::Tensor;
use rhai::Engine;
use std::sync::Arc;

/// Registers the activations, layer functions and distances.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Nn);
    let api = &mut api;
    register_activations(api, rt);
    register_layers(api, rt);
    register_distances(api);
    register_stochastic(api, rt);
}

fn register_activations(api: &mut Api, rt: &Arc<Runtime>) {
    kw(
        api,
        "softplus",
        "log(1 + e^(beta x)) / beta, x where beta x > threshold; options beta (1), threshold (20)",
        ["t"],
        &["beta", "threshold"],
        Form::Plain,
        |[t], k| ok(t.softplus(k.number("beta", 1.0)?, k.number("threshold", 20.0)?)),
    );
    kw(
        api,
        "hardtanh",
        "x clamped to [min_val, max_val] (-1, 1)",
        ["t"],
        &["min_val", "max_val"],
        Form::Plain,
        |[t], k| ok(t.hardtanh(k.number("min_val", -1.0)?, k.number("max_val", 1.0)?)),
    );
    kw(
        api,
        "leaky_relu",
        "x where positive, negative_slope * x elsewhere (0.01)",
        ["t"],
        &["negative_slope"],
        Form::Plain,
        |[t], k| ok(t.leaky_relu(k.number("negative_slope", 0.01)?)),
    );
    kw(
        api,
        "elu",
        "x where positive, alpha (e^x - 1) elsewhere (alpha 1)",
        ["t"],
        &["alpha"],
        Form::Plain,
        |[t], k| ok(t.elu(k.number("alpha", 1.0)?)),
    );
    kw(
        api,
        "celu",
        "max(0, x) + min(0, alpha (e^(x/alpha) - 1)) (alpha 1)",
        ["t"],
        &["alpha"],
        Form::Plain,
        |[t], k| ok(t.celu(k.number("alpha", 1.0)?)),
    );
    kw(
        api,
        "gelu",
        "GELU; option approximate: \"none\" (exact) or \"tanh\"",
        ["t"],
        &["approximate"],
        Form::WithOptions,
        |[t], k| ok(t.gelu_with(&k.string("approximate", "none")?)),
    );
    kw(
        api,
        "tanhshrink",
        "x - tanh(x)",
        ["t"],
        &[],
        Form::Plain,
        |[t], _| ok(t.tanhshrink()),
    );
    kw(
        api,
        "hardshrink",
        "x where |x| > lambd (0.5), 0 elsewhere",
        ["t"],
        &["lambd"],
        Form::Plain,
        |[t], k| ok(t.hardshrink(k.number("lambd", 0.5)?)),
    );
    kw(
        api,
        "softshrink",
        "x - lambd above lambd (0.5), x + lambd below -lambd, 0 between",
        ["t"],
        &["lambd"],
        Form::Plain,
        |[t], k| ok(t.softshrink(k.number("lambd", 0.5)?)),
    );
    kw(
        api,
        "threshold",
        "x where x > threshold, value elsewhere",
        ["t"],
        &["threshold", "value"],
        Form::WithOptions,
        |[t], k| ok(t.threshold(k.required_number("threshold")?, k.required_number("value")?)),
    );
    kw(
        api,
        "softmin",
        "softmax(-x) along dim",
        ["t"],
        &["dim"],
        Form::Plain,
        |[t], k| {
            let dim = k.opt_int("dim")?.unwrap_or(legacy_softmax_dim(&t));
            ok(t.softmin(dim))
        },
    );
    kw(
        api,
        "glu",
        "first half of dim (-1) times the sigmoid of the second half",
        ["t"],
        &["dim"],
        Form::Plain,
        |[t], k| ok(t.glu(k.int("dim", -1)?)),
    );
    kw(
        api,
        "prelu",
        "x where positive, weight * x elsewhere (weight: 1 or one per channel)",
        ["t", "weight"],
        &[],
        Form::Plain,
        |[t, w], _| ok(t.prelu(&w)),
    );
    let r = rt.clone();
    kw(
        api,
        "rrelu",
        "leaky ReLU with slope U(lower, upper) per element when training, (lower + upper) / 2 otherwise; options lower (1/8), upper (1/3), training (false)",
        ["t"],
        &["lower", "upper", "training"],
        Form::Random,
        move |[t], k| {
            let (lo, hi) = (k.number("lower", 1.0 / 8.0)?, k.number("upper", 1.0 / 3.0)?);
            if k.flag("training", false)? {
                ok(r.with_rng(|g| t.rrelu(lo, hi, Some(g))))
            } else {
                ok(t.rrelu(lo, hi, None))
            }
        },
    );
}

/// PyTorch's implicit softmax dim: 0 for 0-, 1- and 3-dim inputs, else 1.
fn legacy_softmax_dim(t: &Tensor) -> i64 {
    if matches!(t.ndim(), 0 | 1 | 3) {
        0
    } else {
        1
    }
}

fn register_layers(api: &mut Api, rt: &Arc<Runtime>) {
    kw(
        api,
        "linear",
        "x @ weight.T + bias (F.linear); options bias, activation (\"relu\" or \"gelu\" with approximate \"tanh\": applied in the same call, one cuBLASLt GEMM on CUDA; \"gelu\" exact: composed)",
        ["x", "weight"],
        &["bias", "activation", "approximate"],
        Form::Plain,
        |[x, w], k| {
            let (act, approx) = (k.string("activation", "none")?, k.string("approximate", "none")?);
            linear(&x, &w, k.tensor("bias", &x)?.as_ref(), &act, &approx)
        },
    );
    api.doc("x @ weight.T + bias (F.linear with a positional bias); opts #{activation: \"relu\"} or #{activation: \"gelu\", approximate: \"tanh\"} applies the activation in the same call")
        .func("linear", ["x", "weight", "bias", "opts"], |x: Tensor, w: Tensor, b: Tensor, m: rhai::Map| -> RhaiResult<Tensor> {
            let text = |key: &str| -> RhaiResult<String> {
                match m.get(key) {
                    Some(a) => Ok(a.clone().into_immutable_string().map_err(|t| script_error(format!("linear: {key} must be a string, got {t}")))?.to_string()),
                    None => Ok("none".into()),
                }
            };
            for key in m.keys() {
                if !matches!(key.as_str(), "activation" | "approximate") {
                    return Err(script_error(format!("linear: unknown option '{key}' (expected activation, approximate)")));
                }
            }
            linear(&x, &w, Some(&b), &text("activation")?, &text("approximate")?)
        });
    kw(
        api,
        "bilinear",
        "x1ᵀ A x2 + b per output (F.bilinear): weight [out, in1, in2]; option bias",
        ["x1", "x2", "weight"],
        &["bias"],
        Form::Plain,
        |[a, b, w], k| ok(a.bilinear(&b, &w, k.tensor("bias", &a)?.as_ref())),
    );
    kw(
        api,
        "embedding",
        "rows of weight [n, d] at the integer indices (F.embedding); option padding_idx (no gradient to that row)",
        ["indices", "weight"],
        &["padding_idx"],
        Form::Plain,
        |[i, w], k| ok(i.embedding(&w, k.opt_int("padding_idx")?)),
    );
    kw(
        api,
        "embedding_bag",
        "rows of weight at the indices combined per bag (F.embedding_bag): bags are the rows of 2-D indices or start at offsets; options offsets, mode (mean, sum, max), per_sample_weights (sum), include_last_offset, padding_idx",
        ["indices", "weight"],
        &["offsets", "max_norm", "norm_type", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights", "include_last_offset", "padding_idx"],
        Form::Plain,
        |[i, w], k| {
            if k.has("max_norm") {
                return Err(super::convert::script_error("embedding_bag: max_norm is not supported (renormalise the weight with renorm first)"));
            }
            let offsets = k.tensor("offsets", &i)?;
            let psw = k.tensor("per_sample_weights", &w)?;
            ok(i.embedding_bag(
                &w,
                offsets.as_ref(),
                &k.string("mode", "mean")?,
                psw.as_ref(),
                k.flag("include_last_offset", false)?,
                k.opt_int("padding_idx")?,
            ))
        },
    );
    let r = rt.clone();
    kw(
        api,
        "dropout",
        "zeroes elements with probability p (0.5) and scales the rest by 1/(1-p) while training (true)",
        ["t"],
        &["p", "training"],
        Form::Random,
        move |[t], k| {
            let (p, training) = (k.number("p", 0.5)?, k.flag("training", true)?);
            ok(r.with_rng(|g| t.dropout(p, training, g)))
        },
    );
}

/// `alpha_dropout`, `feature_alpha_dropout` and `gumbel_softmax`.
fn register_stochastic(api: &mut Api, rt: &Arc<Runtime>) {
    for (name, feature) in [("alpha_dropout", false), ("feature_alpha_dropout", true)] {
        let doc: &'static str = if feature {
            "alpha dropout of whole channels of [N, C, ...] (probability p, 0.5) while training (false, as F.feature_alpha_dropout)"
        } else {
            "sets elements to SELU's saturation with probability p (0.5), keeping zero mean and unit variance, while training (false, as F.alpha_dropout)"
        };
        let r = rt.clone();
        kw(
            api,
            name,
            doc,
            ["t"],
            &["p", "training"],
            Form::Random,
            move |[t], k| {
                let (p, training) = (k.number("p", 0.5)?, k.flag("training", false)?);
                ok(r.with_rng(|g| t.alpha_dropout(p, training, feature, g)))
            },
        );
    }
    let r = rt.clone();
    kw(
        api,
        "gumbel_softmax",
        "softmax((logits + Gumbel noise) / tau) along dim (-1); hard: the one-hot of its argmax with the soft sample's gradient; options tau (1), hard (false), dim",
        ["logits"],
        &["tau", "hard", "eps", "dim"],
        Form::Random,
        move |[t], k| {
            let (tau, hard, dim) = (k.number("tau", 1.0)?, k.flag("hard", false)?, k.int("dim", -1)?);
            ok(r.with_rng(|g| t.gumbel_softmax(tau, hard, dim, g)))
        },
    );
}

/// `linear` with its `activation` option ("none", "relu" or "gelu", the
/// latter exact or with `approximate` "tanh" as `F.gelu`).
fn linear(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    activation: &str,
    approximate: &str,
) -> RhaiResult<Tensor> {
    if activation != "gelu" && approximate != "none" {
        return Err(script_error(format!(
            "linear: approximate applies to activation \"gelu\" only (activation is \"{activation}\")"
        )));
    }
    match (activation, approximate) {
        ("none", _) => ok(x.linear(w, bias)),
        ("relu", _) => ok(x.linear_activation(w, bias, Activation::Relu)),
        ("gelu", "tanh") => ok(x.linear_activation(w, bias, Activation::GeluTanh)),
        ("gelu", "none") => ok(x.linear(w, bias).and_then(|y| y.gelu_with("none"))),
        ("gelu", other) => Err(script_error(format!(
            "linear: approximate must be \"none\" or \"tanh\", got \"{other}\""
        ))),
        (other, _) => Err(script_error(format!(
            "linear: unknown activation '{other}' (expected \"relu\", \"gelu\", or none)"
        ))),
    }
}

fn register_distances(api: &mut Api) {
    kw(
        api,
        "normalize",
        "x / max(‖x‖_p, eps) along dim; options p (2), dim (1), eps (1e-12)",
        ["t"],
        &["p", "dim", "eps"],
        Form::Plain,
        |[t], k| ok(t.normalize(k.number("p", 2.0)?, k.int("dim", 1)?, k.number("eps", 1e-12)?)),
    );
    kw(
        api,
        "cosine_similarity",
        "cosine of the angle along dim (1), each norm at least eps (1e-8); broadcasts",
        ["x1", "x2"],
        &["dim", "eps"],
        Form::Plain,
        |[a, b], k| ok(a.cosine_similarity(&b, k.int("dim", 1)?, k.number("eps", 1e-8)?)),
    );
    kw(
        api,
        "pairwise_distance",
        "‖x1 - x2 + eps‖_p over the last dim; options p (2), eps (1e-6), keepdim",
        ["x1", "x2"],
        &["p", "eps", "keepdim"],
        Form::Plain,
        |[a, b], k| {
            ok(a.pairwise_distance(
                &b,
                k.number("p", 2.0)?,
                k.number("eps", 1e-6)?,
                k.flag("keepdim", false)?,
            ))
        },
    );
    kw(
        api,
        "cdist",
        "p-norm distances between the rows of x1 [*, P, M] and x2 [*, R, M]: [*, P, R]; option p (2)",
        ["x1", "x2"],
        &["p"],
        Form::Plain,
        |[a, b], k| ok(a.cdist(&b, k.number("p", 2.0)?)),
    );
    kw(
        api,
        "pdist",
        "p-norm distances between the rows of x [N, M], each pair i < j once: N(N-1)/2 values; option p (2)",
        ["x"],
        &["p"],
        Form::Plain,
        |[x], k| ok(x.pdist(k.number("p", 2.0)?)),
    );
}
