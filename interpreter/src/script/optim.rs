//! The fused optimizer steps `sgd_step_`, `adam_step_`, their multi-tensor
//! forms `sgd_step_multi_` and `adam_step_multi_`, and
//! `optimizer_state(p)`, with their options maps converted to the front-end's
//! option structs. No math lives here (see `crate::tensor::optim`).

use super::convert::{ok, script_error, tensor_list, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::optim::{adam_step_multi_, sgd_step_multi_, AdamOptions, SgdOptions, StepCount};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, INT};

/// Registers the optimizer-step functions.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Training);
    api.doc("zeros of p's shape in the optimizer-state dtype, on its device (a moment buffer)")
        .func("optimizer_state", ["p"], |p: Tensor| ok(p.optimizer_state()));
    api.doc("one fused SGD step on p in place (buf: momentum buffer or ()); opts #{lr, momentum, dampening, weight_decay, nesterov, init_buffer}").func("sgd_step_", ["p", "grad", "buf", "opts"], |p: Tensor, g: Tensor, buf: Dynamic, m: Map| -> RhaiResult<Tensor> {
            let buf = if buf.is_unit() {
                None
            } else {
                Some(buf.clone().try_cast::<Tensor>().ok_or_else(|| {
                    script_error(format!(
                        "sgd_step_: the momentum buffer must be a Tensor or (), got {}",
                        buf.type_name()
                    ))
                })?)
            };
            ok(p.sgd_step_(&g, buf.as_ref(), &sgd_options(&m)?))?;
            Ok(p)
        },
    );
    api.doc("one fused Adam/AdamW step on p in place (m, v: moment buffers); opts #{lr, betas, eps, weight_decay, decoupled}").func("adam_step_", ["p", "grad", "m", "v", "step", "opts"], |p: Tensor, g: Tensor, mo: Tensor, vo: Tensor, step: INT, m: Map| -> RhaiResult<Tensor> {
            ok(p.adam_step_(&g, &mo, &vo, step, &adam_options(&m)?))?;
            Ok(p)
        },
    );
    api.doc("one fused Adam/AdamW step over arrays of parameters, gradients and moments (one launch per 24 CUDA parameters, as fused=True); grads: an array (a () entry skips its parameter) or () for each parameter's own .grad; step: a number, or a one-element integer tensor on the parameters' device that the kernels read (capturable); opts as adam_step_").func("adam_step_multi_", ["params", "grads", "m", "v", "step", "opts"], |p: Array, g: Dynamic, mo: Array, vo: Array, step: Dynamic, m: Map| -> RhaiResult<()> {
            const OP: &str = "adam_step_multi_";
            let p = tensor_list(OP, &p)?;
            let (mo, vo) = (tensor_list(OP, &mo)?, tensor_list(OP, &vo)?);
            let count = step.clone().try_cast::<Tensor>();
            let step = match (&count, step.as_int()) {
                (Some(t), _) => StepCount::Tensor(t),
                (None, Ok(n)) => StepCount::Host(n),
                (None, Err(t)) => {
                    return Err(script_error(format!("{OP}: step must be an integer or a one-element integer tensor, got {t}")))
                }
            };
            if mo.len() != p.len() || vo.len() != p.len() {
                return Err(script_error(format!(
                    "{OP}: {} parameters but {} first and {} second moments",
                    p.len(),
                    mo.len(),
                    vo.len()
                )));
            }
            let g = gradients(OP, &p, &g)?;
            let keep = |i: &usize| g[*i].is_some();
            let pick = |ts: &[Tensor]| -> Vec<Tensor> { (0..p.len()).filter(keep).map(|i| ts[i].clone()).collect() };
            let grads: Vec<Tensor> = g.iter().flatten().cloned().collect();
            ok(adam_step_multi_(&pick(&p), &grads, &pick(&mo), &pick(&vo), step, &adam_options(&m)?))
        },
    );
    api.doc("one fused SGD step over arrays of parameters, gradients and momentum buffers (Tensor or () each; one launch per 24 CUDA parameters); grads: an array (a () entry skips its parameter) or () for each parameter's own .grad; opts as sgd_step_, and step: a one-element integer tensor (the step count, read by the kernels: the first step initialises the buffers, capturable) in place of init_buffer").func("sgd_step_multi_", ["params", "grads", "bufs", "opts"], |p: Array, g: Dynamic, b: Array, m: Map| -> RhaiResult<()> {
            const OP: &str = "sgd_step_multi_";
            let p = tensor_list(OP, &p)?;
            let bufs = optional_tensors(OP, "buffer", &b)?;
            if bufs.len() != p.len() {
                return Err(script_error(format!(
                    "{OP}: {} parameters but {} momentum buffers",
                    p.len(),
                    bufs.len()
                )));
            }
            let mut m = m;
            let count = match m.remove("step") {
                None => None,
                Some(d) => Some(d.clone().try_cast::<Tensor>().ok_or_else(|| {
                    script_error(format!("{OP}: option 'step' must be a one-element integer tensor, got {}", d.type_name()))
                })?),
            };
            let g = gradients(OP, &p, &g)?;
            let kept: Vec<usize> = (0..p.len()).filter(|&i| g[i].is_some()).collect();
            let params: Vec<Tensor> = kept.iter().map(|&i| p[i].clone()).collect();
            let bufs: Vec<Option<Tensor>> = kept.iter().map(|&i| bufs[i].clone()).collect();
            let grads: Vec<Tensor> = g.into_iter().flatten().collect();
            ok(sgd_step_multi_(&params, &grads, &bufs, &sgd_options(&m)?, count.as_ref()))
        },
    );
}

/// The gradient of each parameter of a multi-tensor step: from `grads`, an
/// array as long as `params` of tensors or () (no gradient: the parameter
/// is skipped, as PyTorch's optimizers skip a `None` grad), or () for each
/// parameter's own `.grad`.
fn gradients(op: &str, params: &[Tensor], grads: &Dynamic) -> RhaiResult<Vec<Option<Tensor>>> {
    if grads.is_unit() {
        return Ok(params.iter().map(|p| p.grad()).collect());
    }
    let Some(a) = grads.read_lock::<Array>() else {
        return Err(script_error(format!(
            "{op}: grads must be an array of tensors or (), got {}",
            grads.type_name()
        )));
    };
    if a.len() != params.len() {
        return Err(script_error(format!(
            "{op}: {} parameters but {} gradients",
            params.len(),
            a.len()
        )));
    }
    optional_tensors(op, "gradient", &a)
}

/// Each entry of `a` as a tensor, or `None` for a `()` entry.
fn optional_tensors(op: &str, what: &str, a: &Array) -> RhaiResult<Vec<Option<Tensor>>> {
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            if x.is_unit() {
                Ok(None)
            } else {
                x.clone().try_cast::<Tensor>().map(Some).ok_or_else(|| {
                    script_error(format!(
                        "{op}: {what} {i} must be a Tensor or (), got {}",
                        x.type_name()
                    ))
                })
            }
        })
        .collect()
}

fn number(op: &str, key: &str, v: &Dynamic) -> RhaiResult<f64> {
    if let Ok(f) = v.as_float() {
        Ok(f)
    } else if let Ok(i) = v.as_int() {
        Ok(i as f64)
    } else {
        Err(script_error(format!(
            "{op}: option '{key}' must be a number, got {}",
            v.type_name()
        )))
    }
}

fn flag(op: &str, key: &str, v: &Dynamic) -> RhaiResult<bool> {
    v.as_bool()
        .map_err(|t| script_error(format!("{op}: option '{key}' must be true or false, got {t}")))
}

fn unknown(op: &str, key: &str, expected: &str) -> Box<rhai::EvalAltResult> {
    script_error(format!("{op}: unknown option '{key}' (expected {expected})"))
}

fn sgd_options(m: &Map) -> RhaiResult<SgdOptions> {
    const OP: &str = "sgd_step_";
    let mut o = SgdOptions::default();
    for (k, v) in m {
        match k.as_str() {
            "lr" => o.lr = number(OP, k, v)?,
            "momentum" => o.momentum = number(OP, k, v)?,
            "dampening" => o.dampening = number(OP, k, v)?,
            "weight_decay" => o.weight_decay = number(OP, k, v)?,
            "nesterov" => o.nesterov = flag(OP, k, v)?,
            "init_buffer" => o.init_buffer = flag(OP, k, v)?,
            other => {
                return Err(unknown(
                    OP,
                    other,
                    "lr, momentum, dampening, weight_decay, nesterov, init_buffer",
                ))
            }
        }
    }
    Ok(o)
}

fn adam_options(m: &Map) -> RhaiResult<AdamOptions> {
    const OP: &str = "adam_step_";
    let mut o = AdamOptions::default();
    for (k, v) in m {
        match k.as_str() {
            "lr" => o.lr = number(OP, k, v)?,
            "betas" => {
                let a = v
                    .clone()
                    .try_cast::<Array>()
                    .filter(|a| a.len() == 2)
                    .ok_or_else(|| {
                        script_error(format!("{OP}: option 'betas' must be an array of two numbers"))
                    })?;
                o.betas = (number(OP, "betas", &a[0])?, number(OP, "betas", &a[1])?);
            }
            "eps" => o.eps = number(OP, k, v)?,
            "weight_decay" => o.weight_decay = number(OP, k, v)?,
            "decoupled" => o.decoupled = flag(OP, k, v)?,
            other => return Err(unknown(OP, other, "lr, betas, eps, weight_decay, decoupled")),
        }
    }
    Ok(o)
}
