//! The script side of the loss functions (`tensor/loss/`): argument
//! conversion only. Each takes its tensors, then its options in PyTorch's
//! order (the deprecated `size_average`/`reduce` left out) or in a map:
//! `nll_loss(logp, y, #{weight: w, ignore_index: 0, reduction: "sum"})`.

use super::convert::ok;
use super::convert::{script_error, RhaiResult};
use super::kwargs::Kwargs;
use super::kwargs::{register as kw, Form};
use super::registry::{Api, Category};
use crate::tensor::loss::{CrossEntropyOptions, CtcOptions};
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, FnPtr, Map, NativeCallContext};

/// Registers the losses.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Training);
    let api = &mut api;
    register_regression(api);
    register_classification(api);
    register_margin(api);
    register_sequence(api);
    register_distance_losses(api);
}

fn register_regression(api: &mut Api) {
    kw(
        api,
        "mse_loss",
        "(input - target)²; option reduction (\"mean\", \"sum\", \"none\")",
        ["input", "target"],
        &["reduction"],
        Form::Plain,
        |[x, y], k| ok(x.mse_loss(&y, k.reduction()?)),
    );
    kw(
        api,
        "l1_loss",
        "|input - target|; option reduction",
        ["input", "target"],
        &["reduction"],
        Form::Plain,
        |[x, y], k| ok(x.l1_loss(&y, k.reduction()?)),
    );
    kw(
        api,
        "smooth_l1_loss",
        "0.5 d²/beta where |d| < beta, |d| - beta/2 elsewhere; options reduction, beta (1)",
        ["input", "target"],
        &["reduction", "beta"],
        Form::Plain,
        |[x, y], k| ok(x.smooth_l1_loss(&y, k.reduction()?, k.number("beta", 1.0)?)),
    );
    kw(
        api,
        "huber_loss",
        "0.5 d² where |d| <= delta, delta (|d| - delta/2) elsewhere; options reduction, delta (1)",
        ["input", "target"],
        &["reduction", "delta"],
        Form::Plain,
        |[x, y], k| ok(x.huber_loss(&y, k.reduction()?, k.number("delta", 1.0)?)),
    );
    kw(
        api,
        "poisson_nll_loss",
        "Poisson negative log-likelihood; options log_input (true), full (false), eps (1e-8), reduction",
        ["input", "target"],
        &["log_input", "full", "eps", "reduction"],
        Form::Plain,
        |[x, y], k| {
            ok(x.poisson_nll_loss(
                &y,
                k.flag("log_input", true)?,
                k.flag("full", false)?,
                k.number("eps", 1e-8)?,
                k.reduction()?,
            ))
        },
    );
    kw(
        api,
        "gaussian_nll_loss",
        "0.5 (log var + (input - target)² / var); options full (false), eps (1e-6), reduction",
        ["input", "target", "var"],
        &["full", "eps", "reduction"],
        Form::Plain,
        |[x, y, v], k| {
            ok(x.gaussian_nll_loss(
                &y,
                &v,
                k.flag("full", false)?,
                k.number("eps", 1e-6)?,
                k.reduction()?,
            ))
        },
    );
}

fn register_classification(api: &mut Api) {
    kw(
        api,
        "cross_entropy",
        "cross-entropy of logits [N, C, ...] (or [C]) against class indices or class probabilities; options weight, ignore_index (-100), reduction, label_smoothing (0)",
        ["logits", "target"],
        &["weight", "ignore_index", "reduction", "label_smoothing"],
        Form::Plain,
        |[x, y], k| {
            let o = CrossEntropyOptions {
                reduction: k.reduction()?,
                ignore_index: k.int("ignore_index", -100)?,
                label_smoothing: k.number("label_smoothing", 0.0)?,
            };
            ok(x.cross_entropy_with(&y, k.tensor("weight", &x)?.as_ref(), &o))
        },
    );
    kw(
        api,
        "nll_loss",
        "negative log-likelihood of log-probabilities [N, C, ...] at class indices; options weight, ignore_index (-100), reduction",
        ["input", "target"],
        &["weight", "ignore_index", "reduction"],
        Form::Plain,
        |[x, y], k| {
            ok(x.nll_loss(
                &y,
                k.tensor("weight", &x)?.as_ref(),
                k.int("ignore_index", -100)?,
                k.reduction()?,
            ))
        },
    );
    kw(
        api,
        "binary_cross_entropy",
        "-w (t log x + (1 - t) log(1 - x)) for probabilities x (logs clamped at -100); options weight, reduction",
        ["input", "target"],
        &["weight", "reduction"],
        Form::Plain,
        |[x, y], k| ok(x.binary_cross_entropy(&y, k.tensor("weight", &x)?.as_ref(), k.reduction()?)),
    );
    kw(
        api,
        "binary_cross_entropy_with_logits",
        "binary cross-entropy of logits, computed stably; options weight, reduction, pos_weight",
        ["input", "target"],
        &["weight", "reduction", "pos_weight"],
        Form::Plain,
        |[x, y], k| {
            ok(x.binary_cross_entropy_with_logits(
                &y,
                k.tensor("weight", &x)?.as_ref(),
                k.tensor("pos_weight", &x)?.as_ref(),
                k.reduction()?,
            ))
        },
    );
    kw(
        api,
        "kl_div",
        "KL divergence of log-probabilities input from target; options reduction (\"mean\", \"batchmean\", \"sum\", \"none\"), log_target (false)",
        ["input", "target"],
        &["reduction", "log_target"],
        Form::Plain,
        |[x, y], k| ok(x.kl_div(&y, &k.string("reduction", "mean")?, k.flag("log_target", false)?)),
    );
    kw(
        api,
        "multilabel_margin_loss",
        "multi-label hinge loss: each target row lists its classes, ended by -1; Σ max(0, 1 - (x[j] - x[i])) / C over listed j and unlisted i; option reduction",
        ["input", "target"],
        &["reduction"],
        Form::Plain,
        |[x, y], k| ok(x.multilabel_margin_loss(&y, k.reduction()?)),
    );
    kw(
        api,
        "soft_margin_loss",
        "log(1 + e^(-y x)) for targets ±1; option reduction",
        ["input", "target"],
        &["reduction"],
        Form::Plain,
        |[x, y], k| ok(x.soft_margin_loss(&y, k.reduction()?)),
    );
    kw(
        api,
        "multilabel_soft_margin_loss",
        "-(y log σ(x) + (1 - y) log σ(-x)) averaged over classes; options weight, reduction",
        ["input", "target"],
        &["weight", "reduction"],
        Form::Plain,
        |[x, y], k| ok(x.multilabel_soft_margin_loss(&y, k.tensor("weight", &x)?.as_ref(), k.reduction()?)),
    );
    kw(
        api,
        "multi_margin_loss",
        "multi-class hinge loss of scores [N, C] at labels; options p (1), margin (1), weight, reduction",
        ["input", "target"],
        &["p", "margin", "weight", "reduction"],
        Form::Plain,
        |[x, y], k| {
            ok(x.multi_margin_loss(
                &y,
                k.int("p", 1)?,
                k.number("margin", 1.0)?,
                k.tensor("weight", &x)?.as_ref(),
                k.reduction()?,
            ))
        },
    );
}

fn register_margin(api: &mut Api) {
    kw(
        api,
        "margin_ranking_loss",
        "max(0, -y (x1 - x2) + margin); options margin (0), reduction",
        ["x1", "x2", "target"],
        &["margin", "reduction"],
        Form::Plain,
        |[a, b, y], k| ok(a.margin_ranking_loss(&b, &y, k.number("margin", 0.0)?, k.reduction()?)),
    );
    kw(
        api,
        "hinge_embedding_loss",
        "x where y = 1, max(0, margin - x) where y = -1; options margin (1), reduction",
        ["input", "target"],
        &["margin", "reduction"],
        Form::Plain,
        |[x, y], k| ok(x.hinge_embedding_loss(&y, k.number("margin", 1.0)?, k.reduction()?)),
    );
    kw(
        api,
        "cosine_embedding_loss",
        "1 - cos(x1, x2) where y = 1, max(0, cos - margin) where y = -1; options margin (0), reduction",
        ["x1", "x2", "target"],
        &["margin", "reduction"],
        Form::Plain,
        |[a, b, y], k| ok(a.cosine_embedding_loss(&b, &y, k.number("margin", 0.0)?, k.reduction()?)),
    );
    kw(
        api,
        "triplet_margin_loss",
        "max(d(a, p) - d(a, n) + margin, 0); options margin (1), p (2), eps (1e-6), swap (false), reduction",
        ["anchor", "positive", "negative"],
        &["margin", "p", "eps", "swap", "reduction"],
        Form::Plain,
        |[a, p, n], k| {
            ok(a.triplet_margin_loss(
                &p,
                &n,
                k.number("margin", 1.0)?,
                k.number("p", 2.0)?,
                k.number("eps", 1e-6)?,
                k.flag("swap", false)?,
                k.reduction()?,
            ))
        },
    );
}

fn register_sequence(api: &mut Api) {
    kw(
        api,
        "ctc_loss",
        "connectionist temporal classification loss of log_probs [T, N, C] against targets [N, S] (or concatenated); options input_lengths, target_lengths (ints or tensors, required), blank (0), reduction (\"mean\" divides by the target lengths), zero_infinity (false)",
        ["log_probs", "targets"],
        &["input_lengths", "target_lengths", "blank", "reduction", "zero_infinity"],
        Form::WithOptions,
        |[lp, y], k| {
            let o = CtcOptions {
                blank: k.int("blank", 0)?,
                reduction: k.reduction()?,
                zero_infinity: k.flag("zero_infinity", false)?,
            };
            let inputs = k.required_int_values("input_lengths")?;
            let targets = k.required_int_values("target_lengths")?;
            ok(lp.ctc_loss(&y, &inputs, &targets, &o))
        },
    );
}

/// The options of `triplet_margin_with_distance_loss`, all keywords in PyTorch.
const TRIPLET_DISTANCE_OPTIONS: &[&str] = &["distance_function", "margin", "swap", "reduction"];

/// `triplet_margin_with_distance_loss(a, p, n[, #{distance_function, ...}])`:
/// the distance is a script function of two tensors, called here.
fn triplet_with_distance(
    ctx: &NativeCallContext,
    a: &Tensor,
    p: &Tensor,
    n: &Tensor,
    opts: Map,
) -> RhaiResult<Tensor> {
    const OP: &str = "triplet_margin_with_distance_loss";
    let args = if opts.is_empty() {
        vec![]
    } else {
        vec![Dynamic::from(opts)]
    };
    let k = Kwargs::parse(OP, TRIPLET_DISTANCE_OPTIONS, args)?;
    let function = match k.get("distance_function") {
        None => None,
        Some(f) => Some(f.clone().try_cast::<FnPtr>().ok_or_else(|| {
            script_error(format!(
                "{OP}: option 'distance_function' must be a function, got {}",
                f.type_name()
            ))
        })?),
    };
    let mut failure = None;
    let mut distance = |x: &Tensor, y: &Tensor| -> crate::core::error::Result<Tensor> {
        let Some(f) = &function else {
            return x.pairwise_distance(y, 2.0, 1e-6, false);
        };
        let d = f
            .call_within_context::<Dynamic>(ctx, (x.clone(), y.clone()))
            .map_err(|e| failure.insert(e).to_string())
            .and_then(|d| {
                d.try_cast::<Tensor>()
                    .ok_or_else(|| "the distance function must return a tensor".to_string())
            });
        d.map_err(|why| crate::core::error::Error::invalid(OP, why))
    };
    let loss = a.triplet_margin_with_distance_loss(
        p,
        n,
        &mut distance,
        k.number("margin", 1.0)?,
        k.flag("swap", false)?,
        k.reduction()?,
    );
    match (loss, failure) {
        // the script's own error, with its position, rather than a copy
        (Err(_), Some(e)) => Err(e),
        (r, _) => ok(r),
    }
}

fn register_distance_losses(api: &mut Api) {
    const DOC: &str = "max(d(a, p) - d(a, n) + margin, 0) with d = distance_function(x, y) (pairwise_distance by default); options distance_function, margin (1), swap (false), reduction";
    const OP: &str = "triplet_margin_with_distance_loss";
    api.doc(DOC).volatile(
        OP,
        ["anchor", "positive", "negative"],
        |ctx: NativeCallContext, a: Tensor, p: Tensor, n: Tensor| {
            triplet_with_distance(&ctx, &a, &p, &n, Map::new())
        },
    );
    api.doc(DOC).volatile(
        OP,
        ["anchor", "positive", "negative", "opts"],
        |ctx: NativeCallContext, a: Tensor, p: Tensor, n: Tensor, m: Map| {
            triplet_with_distance(&ctx, &a, &p, &n, m)
        },
    );
}
