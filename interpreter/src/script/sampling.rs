//! The script side of sampling and the gradient utilities
//! (`tensor/sampling.rs`): argument conversion only. Draws come from the
//! engine's seeded generator (registered volatile).

use super::convert::{ok, operand, script_error, tensor_list, RhaiResult};
use super::generator;
use super::kwargs::{register as kw, Form};
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::sampling;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, INT};
use std::sync::Arc;

/// Registers the sampling ops and the gradient utilities.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Creation);
    let api = &mut api;
    let r = rt.clone();
    kw(
        api,
        "bernoulli",
        "1 with probability p (each element of t), else 0",
        ["p"],
        &["generator"],
        Form::Random,
        move |[p], k| {
            ok(
                r.draw_with(generator::from_kwargs(&k, "bernoulli")?.as_ref(), |g| {
                    p.bernoulli(g)
                }),
            )
        },
    );
    let r = rt.clone();
    api.doc("normal samples with tensor (or number) means and stds, broadcast together")
        .volatile(
            "normal",
            ["mean", "std"],
            move |m: Dynamic, s: Dynamic| -> RhaiResult<Tensor> {
                let dev = r.device();
                let like = m
                    .clone()
                    .try_cast::<Tensor>()
                    .or_else(|| s.clone().try_cast::<Tensor>());
                let m = operand("normal", &m, like.as_ref(), dev)?;
                let s = operand("normal", &s, like.as_ref(), dev)?;
                ok(r.with_rng(|g| Tensor::normal(&m, &s, g)))
            },
        );
    let r = rt.clone();
    kw(
        api,
        "poisson",
        "Poisson samples with the rates in t (its float dtype); option generator",
        ["rates"],
        &["generator"],
        Form::Random,
        move |[t], k| ok(r.draw_with(generator::from_kwargs(&k, "poisson")?.as_ref(), |g| t.poisson(g))),
    );
    let r = rt.clone();
    kw(
        api,
        "multinomial",
        "num_samples category indices per row of non-negative weights [n] or [m, n] (i64); option replacement (false)",
        ["weights"],
        &["num_samples", "replacement", "generator"],
        Form::Random,
        move |[w], k| {
            let n = k
                .opt_int("num_samples")?
                .ok_or_else(|| script_error("multinomial: num_samples is required"))?;
            let replacement = k.flag("replacement", false)?;
            ok(r.draw_with(generator::from_kwargs(&k, "multinomial")?.as_ref(), |g| w.multinomial(n, replacement, g)))
        },
    );
    let r = rt.clone();
    kw(
        api,
        "randint_like",
        "integers in [low, high) of t's shape and dtype (low 0 when only high is given)",
        ["t"],
        &["low", "high", "generator"],
        Form::Random,
        move |[t], k| {
            let (lo, hi) = match (k.opt_int("low")?, k.opt_int("high")?) {
                (Some(h), None) => (0, h),
                (Some(l), Some(h)) => (l, h),
                _ => return Err(script_error("randint_like: high is required")),
            };
            ok(
                r.draw_with(generator::from_kwargs(&k, "randint_like")?.as_ref(), |g| {
                    t.randint_like(lo, hi, g)
                }),
            )
        },
    );
    let r = rt.clone();
    kw(
        api,
        "uniform_",
        "fills t in place with U(from, to) samples (0, 1), outside autograd; returns t",
        ["t"],
        &["from", "to", "generator"],
        Form::Random,
        move |[t], k| {
            let (a, b) = (k.number("from", 0.0)?, k.number("to", 1.0)?);
            ok(
                r.draw_with(generator::from_kwargs(&k, "uniform_")?.as_ref(), |g| {
                    t.uniform_(a, b, g)
                }),
            )
        },
    );
    let r = rt.clone();
    kw(
        api,
        "normal_",
        "fills t in place with N(mean, std²) samples (0, 1), outside autograd; returns t",
        ["t"],
        &["mean", "std", "generator"],
        Form::Random,
        move |[t], k| {
            let (m, s) = (k.number("mean", 0.0)?, k.number("std", 1.0)?);
            ok(r.draw_with(generator::from_kwargs(&k, "normal_")?.as_ref(), |g| {
                t.normal_(m, s, g)
            }))
        },
    );
    let r = rt.clone();
    kw(
        api,
        "exponential_",
        "fills t in place with exponential samples of rate lambd (1); returns t",
        ["t"],
        &["lambd", "generator"],
        Form::Random,
        move |[t], k| {
            let l = k.number("lambd", 1.0)?;
            ok(
                r.draw_with(generator::from_kwargs(&k, "exponential_")?.as_ref(), |g| {
                    t.exponential_(l, g)
                }),
            )
        },
    );
    let r = rt.clone();
    kw(
        api,
        "bernoulli_",
        "fills t in place with 1 (probability p, 0.5) or 0; returns t",
        ["t"],
        &["p", "generator"],
        Form::Random,
        move |[t], k| {
            let p = k.number("p", 0.5)?;
            ok(
                r.draw_with(generator::from_kwargs(&k, "bernoulli_")?.as_ref(), |g| {
                    t.bernoulli_(p, g)
                }),
            )
        },
    );
    register_fills(api, rt);
    api.category(Category::Training);
    const CLIP: &str = "scales the gradients of params in place to a joint norm of at most max_norm; returns the norm before (norm_type 2; \"inf\" too)";
    api.doc(CLIP).func(
        "clip_grad_norm_",
        ["params", "max_norm"],
        |p: Array, m: Dynamic| clip_norm(&p, &m, &Dynamic::from(2.0)),
    );
    api.doc(CLIP).func(
        "clip_grad_norm_",
        ["params", "max_norm", "norm_type"],
        |p: Array, m: Dynamic, t: Dynamic| clip_norm(&p, &m, &t),
    );
    api.doc("clamps every gradient of params to [-clip_value, clip_value] in place")
        .func(
            "clip_grad_value_",
            ["params", "clip_value"],
            |p: Array, c: Dynamic| {
                let c = super::convert::number("clip_grad_value_", "clip_value", &c)?;
                ok(sampling::clip_grad_value_(
                    &tensor_list("clip_grad_value_", &p)?,
                    c,
                ))
            },
        );
    api.doc("the parameters flattened and joined into one vector")
        .func("parameters_to_vector", ["params"], |p: Array| {
            ok(sampling::parameters_to_vector(&tensor_list(
                "parameters_to_vector",
                &p,
            )?))
        });
    api.doc("copies consecutive slices of vec into the parameters, in place")
        .func(
            "vector_to_parameters",
            ["vec", "params"],
            |v: Tensor, p: Array| {
                ok(sampling::vector_to_parameters(
                    &v,
                    &tensor_list("vector_to_parameters", &p)?,
                ))
            },
        );
}

fn clip_norm(p: &Array, max_norm: &Dynamic, norm_type: &Dynamic) -> RhaiResult<Tensor> {
    const OP: &str = "clip_grad_norm_";
    let m = super::convert::number(OP, "max_norm", max_norm)?;
    let t = match norm_type.clone().into_string() {
        Ok(s) if s == "inf" => f64::INFINITY,
        Ok(s) => {
            return Err(script_error(format!(
                "{OP}: norm_type must be a number or \"inf\", got \"{s}\""
            )))
        }
        Err(_) => super::convert::number(OP, "norm_type", norm_type)?,
    };
    ok(sampling::clip_grad_norm_(&tensor_list(OP, p)?, m, t))
}

/// The other in-place random fills: `geometric_`, `cauchy_`, `log_normal_`
/// and `random_`.
fn register_fills(api: &mut Api, rt: &Arc<Runtime>) {
    let r = rt.clone();
    kw(
        api,
        "geometric_",
        "fills t in place with geometric samples (trials up to the first success of probability p: 1, 2, ...); returns t",
        ["t"],
        &["p", "generator"],
        Form::Random,
        move |[t], k| {
            let p = k.required_number("p")?;
            ok(r.draw_with(generator::from_kwargs(&k, "geometric_")?.as_ref(), |g| t.geometric_(p, g)))
        },
    );
    let r = rt.clone();
    kw(
        api,
        "cauchy_",
        "fills t in place with Cauchy samples of location median (0) and scale sigma (1); returns t",
        ["t"],
        &["median", "sigma", "generator"],
        Form::Random,
        move |[t], k| {
            let (m, s) = (k.number("median", 0.0)?, k.number("sigma", 1.0)?);
            ok(r.draw_with(generator::from_kwargs(&k, "cauchy_")?.as_ref(), |g| {
                t.cauchy_(m, s, g)
            }))
        },
    );
    let r = rt.clone();
    kw(
        api,
        "log_normal_",
        "fills t in place with exp(N(mean, std²)) samples (mean 1, std 2, as PyTorch); returns t",
        ["t"],
        &["mean", "std", "generator"],
        Form::Random,
        move |[t], k| {
            let (m, s) = (k.number("mean", 1.0)?, k.number("std", 2.0)?);
            ok(
                r.draw_with(generator::from_kwargs(&k, "log_normal_")?.as_ref(), |g| {
                    t.log_normal_(m, s, g)
                }),
            )
        },
    );
    const RANDOM: &str = "fills t in place with integers uniform in [from, to) (from 0; to: 2^mantissa + 1 for floats, the type's maximum for integers); random_(t, to) alone gives [0, to); returns t";
    let r = rt.clone();
    kw(
        api,
        "random_",
        RANDOM,
        ["t"],
        &["from", "to", "generator"],
        Form::Random,
        move |[t], k| {
            let (from, to) = (k.int("from", 0)?, k.opt_int("to")?);
            ok(r.draw_with(generator::from_kwargs(&k, "random_")?.as_ref(), |g| {
                t.random_(from, to, g)
            }))
        },
    );
    // one number alone is the upper bound, as PyTorch's random_(to)
    let r = rt.clone();
    api.doc(RANDOM)
        .volatile("random_", ["t", "to"], move |t: Tensor, to: INT| {
            ok(r.with_rng(|g| t.random_(0, Some(to), g)))
        });
}
