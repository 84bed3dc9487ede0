//! The autograd script API: marking parameters (`t.requires_grad(true)`),
//! reading and setting gradients (`t.grad`, `t.zero_grad()`, `t.retain_grad()`), leaving the
//! graph (`t.detach()`), running the backward pass (`loss.backward()`,
//! `y.backward(grad)`), inspecting the graph (`t.is_leaf`, `t.grad_fn`), and
//! gradients without `.grad` (`autograd::grad(outputs, inputs)`), grad
//! mode (`no_grad(|| ...)`, `enable_grad(|| ...)`, `is_grad_enabled()`)
//! and mixed precision (`autocast("bf16", || ...)`).
//! Only argument conversion lives here; the semantics are in
//! [`crate::tensor::autograd`].

use super::convert::{ok, scalar, script_error, tensor_list, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::autocast::{autocast_dtype, AutocastGuard};
use crate::tensor::autograd::{self, GradModeGuard};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, FnPtr, Map, Module, NativeCallContext};

/// Registers the autograd methods, properties and grad-mode functions, and
/// the `autograd::` module.
pub fn register(engine: &mut Engine) {
    let mut module = Module::new();
    {
        let mut api = Api::module(&mut module, "autograd", engine, Category::Autograd);
        register_module(&mut api);
    }
    engine.register_static_module("autograd", module.into());
    let mut api = Api::new(engine, Category::Autograd);
    register_flags(&mut api);
    register_grads(&mut api);
    register_grad_mode(&mut api);
}

/// One tensor or an array of tensors (`op`'s `what`) as a list.
fn tensors(op: &str, what: &str, d: &Dynamic) -> RhaiResult<Vec<Tensor>> {
    if let Some(t) = d.clone().try_cast::<Tensor>() {
        return Ok(vec![t]);
    }
    match d.clone().try_cast::<Array>() {
        Some(a) => tensor_list(op, &a),
        None => Err(script_error(format!(
            "{op}: {what} must be a tensor or an array of tensors, got {}",
            d.type_name()
        ))),
    }
}

/// The starting gradients of `n` outputs: `()` (all implicit), one tensor,
/// or an array of tensors and `()`.
fn start_grads(op: &str, d: &Dynamic, n: usize) -> RhaiResult<Vec<Option<Tensor>>> {
    if d.is_unit() {
        return Ok(vec![None; n]);
    }
    if let Some(t) = d.clone().try_cast::<Tensor>() {
        return Ok(vec![Some(t)]);
    }
    let a = d.clone().try_cast::<Array>().ok_or_else(|| {
        script_error(format!(
            "{op}: the gradients must be (), a tensor, or an array of tensors and (), got {}",
            d.type_name()
        ))
    })?;
    a.iter()
        .map(|g| {
            if g.is_unit() {
                Ok(None)
            } else {
                g.clone().try_cast::<Tensor>().map(Some).ok_or_else(|| {
                    script_error(format!(
                        "{op}: the gradients hold a {}, not a tensor",
                        g.type_name()
                    ))
                })
            }
        })
        .collect()
}

/// `autograd::grad(outputs, inputs[, grad_outputs][, opts])`.
fn autograd_grad(
    outputs: &Dynamic,
    inputs: &Dynamic,
    grad_outputs: &Dynamic,
    opts: &Map,
) -> RhaiResult<Array> {
    const OP: &str = "autograd::grad";
    let outputs = tensors(OP, "outputs", outputs)?;
    let inputs = tensors(OP, "inputs", inputs)?;
    let grad_outputs = start_grads(OP, grad_outputs, outputs.len())?;
    let mut allow_unused = false;
    let mut materialize = false;
    for (key, v) in opts {
        let flag = v
            .as_bool()
            .map_err(|t| script_error(format!("{OP}: option '{key}' must be a bool, got {t}")))?;
        match key.as_str() {
            "allow_unused" => allow_unused = flag,
            "materialize_grads" => materialize = flag,
            "retain_graph" | "create_graph" if flag => {
                return Err(script_error(format!(
                    "{OP}: {key}: true is not supported (the backward pass frees the graph and is not itself recorded); run the forward again for another pass"
                )))
            }
            "retain_graph" | "create_graph" => {}
            other => {
                return Err(script_error(format!(
                    "{OP}: unknown option '{other}' (expected allow_unused, materialize_grads, retain_graph, create_graph)"
                )))
            }
        }
    }
    let grads = ok(autograd::grad(&outputs, &grad_outputs, &inputs))?;
    let mut out = Array::with_capacity(grads.len());
    for (i, (g, x)) in grads.into_iter().zip(&inputs).enumerate() {
        out.push(match g {
            Some(g) => Dynamic::from(g),
            None if materialize => Dynamic::from(ok(x.zeros_like())?),
            None if allow_unused => Dynamic::UNIT,
            None => {
                return Err(script_error(format!(
                    "{OP}: input {i} (shape {:?}) was not used in the graph of the outputs; pass #{{allow_unused: true}} to get () for it",
                    x.shape()
                )))
            }
        });
    }
    Ok(out)
}

fn register_module(api: &mut Api) {
    const BACKWARD: &str = "backpropagates from every tensor of outputs (a tensor or array) in one pass, each with its gradient in grads (ones for one-element outputs), accumulating into the leaves' .grad (torch.autograd.backward)";
    api.doc(BACKWARD).func("backward", ["tensors"], |o: Dynamic| {
        let outputs = tensors("autograd::backward", "tensors", &o)?;
        ok(autograd::backward(&outputs, &vec![None; outputs.len()]))
    });
    api.doc(BACKWARD).func(
        "backward",
        ["tensors", "grad_tensors"],
        |o: Dynamic, g: Dynamic| {
            let outputs = tensors("autograd::backward", "tensors", &o)?;
            let grads = start_grads("autograd::backward", &g, outputs.len())?;
            ok(autograd::backward(&outputs, &grads))
        },
    );
    const GRAD: &str = "the gradients of outputs (a tensor or array) with respect to inputs (torch.autograd.grad), as an array; no tensor's .grad changes. grad_outputs weight the outputs (ones for one-element outputs); opts #{allow_unused, materialize_grads}";
    api.doc(GRAD)
        .func("grad", ["outputs", "inputs"], |o: Dynamic, i: Dynamic| {
            autograd_grad(&o, &i, &Dynamic::UNIT, &Map::new())
        });
    api.doc(GRAD).func(
        "grad",
        ["outputs", "inputs", "grad_outputs"],
        |o: Dynamic, i: Dynamic, g: Dynamic| match g.clone().try_cast::<Map>() {
            Some(m) => autograd_grad(&o, &i, &Dynamic::UNIT, &m),
            None => autograd_grad(&o, &i, &g, &Map::new()),
        },
    );
    api.doc(GRAD).func(
        "grad",
        ["outputs", "inputs", "grad_outputs", "opts"],
        |o: Dynamic, i: Dynamic, g: Dynamic, m: Map| autograd_grad(&o, &i, &g, &m),
    );
}

fn register_flags(api: &mut Api) {
    const FLAG: &str = "marks t as a parameter whose gradient backward computes (or not); returns t";
    for name in ["requires_grad", "requires_grad_"] {
        api.doc(FLAG).func(
            name,
            ["t", "flag"],
            |t: Tensor, flag: bool| -> RhaiResult<Tensor> {
                ok(t.set_requires_grad(flag))?;
                Ok(t)
            },
        );
    }
    api.doc("marks t as a parameter whose gradient backward computes; returns t")
        .func("requires_grad_", ["t"], |t: Tensor| -> RhaiResult<Tensor> {
            ok(t.set_requires_grad(true))?;
            Ok(t)
        });
    api.doc("whether backward computes t's gradient")
        .get("requires_grad", ["t"], |t: &mut Tensor| t.requires_grad());
    api.doc("marks t as a parameter whose gradient backward computes (or not)")
        .set(
            "requires_grad",
            ["t", "flag"],
            |t: &mut Tensor, flag: bool| -> RhaiResult<()> { ok(t.set_requires_grad(flag)) },
        );
    api.doc("true for a tensor not computed by a recorded op (a parameter or data)")
        .get("is_leaf", ["t"], |t: &mut Tensor| t.is_leaf());
    api.doc("the name of the op that computed t in the graph, or ()")
        .get("grad_fn", ["t"], |t: &mut Tensor| {
            t.grad_fn_name()
                .map_or(Dynamic::UNIT, |n| Dynamic::from(n.to_string()))
        });
    api.doc("t outside the autograd graph (shares its memory)")
        .func("detach", ["t"], |t: Tensor| t.detach());
    api.doc("keeps this non-leaf tensor's gradient in t.grad after backward (accumulating, as a leaf's)")
        .func("retain_grad", ["t"], |t: &mut Tensor| ok(t.retain_grad()));
    api.doc("true for a non-leaf tensor whose gradient retain_grad() keeps")
        .get("retains_grad", ["t"], |t: &mut Tensor| t.retains_grad());
}

fn register_grads(api: &mut Api) {
    api.doc("the gradient backward accumulated into t, or ()")
        .get("grad", ["t"], |t: &mut Tensor| {
            t.grad().map_or(Dynamic::UNIT, Dynamic::from)
        });
    api.doc("sets t's gradient to a tensor, or clears it with ()")
        .set(
            "grad",
            ["t", "g"],
            |t: &mut Tensor, g: Dynamic| -> RhaiResult<()> {
                if g.is_unit() {
                    return ok(t.set_grad(None));
                }
                let g = g.clone().try_cast::<Tensor>().ok_or_else(|| {
                    script_error(format!(
                        "grad: expected a tensor or () as the gradient, got {}",
                        g.type_name()
                    ))
                })?;
                ok(t.set_grad(Some(g)))
            },
        );
    api.doc("clears t's gradient")
        .func("zero_grad", ["t"], |t: &mut Tensor| t.zero_grad());
    const BACKWARD: &str =
        "accumulates the gradients of t into every leaf that requires grad (grad: d(out)/dt, 1 by default)";
    api.doc(BACKWARD)
        .func("backward", ["t"], |t: Tensor| ok(t.backward()));
    api.doc(BACKWARD).func(
        "backward",
        ["t", "grad"],
        |t: Tensor, g: Dynamic| -> RhaiResult<()> {
            let g = match g.clone().try_cast::<Tensor>() {
                Some(g) => g,
                None => ok(Tensor::full(
                    t.shape(),
                    scalar("backward", &g)?,
                    Some(t.dtype()),
                    t.device(),
                ))?,
            };
            ok(t.backward_with(&g))
        },
    );
}

fn register_grad_mode(api: &mut Api) {
    api.doc("calls f with gradient recording off; returns its value")
        .volatile(
            "no_grad",
            ["f"],
            |ctx: NativeCallContext, f: FnPtr| -> RhaiResult<Dynamic> {
                let _mode = GradModeGuard::new(false);
                f.call_within_context::<Dynamic>(&ctx, ())
            },
        );
    api.doc("calls f with gradient recording on; returns its value")
        .volatile(
            "enable_grad",
            ["f"],
            |ctx: NativeCallContext, f: FnPtr| -> RhaiResult<Dynamic> {
                let _mode = GradModeGuard::new(true);
                f.call_within_context::<Dynamic>(&ctx, ())
            },
        );
    api.doc("calls f with automatic mixed precision in dtype (\"bf16\" or \"f16\"; false: off): matmuls, linear layers, convolutions and attention run in that dtype from f32 operands, softmax, norms and cross-entropy in f32 (torch.autocast); returns f's value")
        .volatile(
            "autocast",
            ["dtype", "f"],
            |ctx: NativeCallContext, dtype: Dynamic, f: FnPtr| -> RhaiResult<Dynamic> {
                let d = if dtype.as_bool() == Ok(false) {
                    None
                } else {
                    let name = dtype.into_immutable_string().map_err(|t| {
                        script_error(format!("autocast: the dtype must be \"bf16\", \"f16\" or false, got {t}"))
                    })?;
                    Some(ok(crate::core::DType::parse(&name))?)
                };
                let _guard = ok(AutocastGuard::new(d))?;
                f.call_within_context::<Dynamic>(&ctx, ())
            },
        );
    api.doc("the autocast dtype in effect (\"bf16\", \"f16\"), or () when autocast is off")
        .volatile("autocast_dtype", [], || -> Dynamic {
            autocast_dtype().map_or(Dynamic::UNIT, |d| d.to_string().into())
        });
    api.doc("whether ops record the autograd graph now").volatile(
        "is_grad_enabled",
        [],
        autograd::is_grad_enabled,
    );
    api.doc("turns gradient recording on or off").volatile(
        "set_grad_enabled",
        ["enabled"],
        |enabled: bool| {
            autograd::set_grad_enabled(enabled);
        },
    );
}
