//! The autograd script API: marking parameters (`t.requires_grad(true)`),
//! reading and setting gradients (`t.grad`, `t.zero_grad()`), leaving the
//! graph (`t.detach()`), running the backward pass (`loss.backward()`,
//! `y.backward(grad)`), inspecting the graph (`t.is_leaf`, `t.grad_fn`), and
//! grad mode (`no_grad(|| ...)`, `enable_grad(|| ...)`, `is_grad_enabled()`)
//! and mixed precision (`autocast("bf16", || ...)`).
//! Only argument conversion lives here; the semantics are in
//! [`crate::tensor::autograd`].

use super::convert::{ok, scalar, script_error, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::autocast::{autocast_dtype, AutocastGuard};
use crate::tensor::autograd::{self, GradModeGuard};
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, FnPtr, NativeCallContext};

/// Registers the autograd methods, properties and grad-mode functions.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Autograd);
    register_flags(&mut api);
    register_grads(&mut api);
    register_grad_mode(&mut api);
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
