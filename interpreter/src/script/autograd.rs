//! The autograd script API: marking parameters (`t.requires_grad(true)`),
//! reading and setting gradients (`t.grad`, `t.zero_grad()`), leaving the
//! graph (`t.detach()`), running the backward pass (`loss.backward()`,
//! `y.backward(grad)`), inspecting the graph (`t.is_leaf`, `t.grad_fn`), and
//! grad mode (`no_grad(|| ...)`, `enable_grad(|| ...)`, `is_grad_enabled()`).
//! Only argument conversion lives here; the semantics are in
//! [`crate::tensor::autograd`].

use super::convert::{ok, scalar, script_error, RhaiResult};
use super::creation::volatile;
use crate::tensor::autograd::{self, GradModeGuard};
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, FnPtr, NativeCallContext};

/// Registers the autograd methods, properties and grad-mode functions.
pub fn register(engine: &mut Engine) {
    register_flags(engine);
    register_grads(engine);
    register_grad_mode(engine);
}

fn register_flags(engine: &mut Engine) {
    for name in ["requires_grad", "requires_grad_"] {
        engine.register_fn(name, |t: Tensor, flag: bool| -> RhaiResult<Tensor> {
            ok(t.set_requires_grad(flag))?;
            Ok(t)
        });
    }
    engine.register_fn("requires_grad_", |t: Tensor| -> RhaiResult<Tensor> {
        ok(t.set_requires_grad(true))?;
        Ok(t)
    });
    engine.register_get("requires_grad", |t: &mut Tensor| t.requires_grad());
    engine.register_set("requires_grad", |t: &mut Tensor, flag: bool| -> RhaiResult<()> {
        ok(t.set_requires_grad(flag))
    });
    engine.register_get("is_leaf", |t: &mut Tensor| t.is_leaf());
    engine.register_get("grad_fn", |t: &mut Tensor| {
        t.grad_fn_name()
            .map_or(Dynamic::UNIT, |n| Dynamic::from(n.to_string()))
    });
    engine.register_fn("detach", |t: Tensor| t.detach());
}

fn register_grads(engine: &mut Engine) {
    engine.register_get("grad", |t: &mut Tensor| {
        t.grad().map_or(Dynamic::UNIT, Dynamic::from)
    });
    engine.register_set("grad", |t: &mut Tensor, g: Dynamic| -> RhaiResult<()> {
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
    });
    engine.register_fn("zero_grad", |t: &mut Tensor| t.zero_grad());
    engine.register_fn("backward", |t: Tensor| ok(t.backward()));
    engine.register_fn("backward", |t: Tensor, g: Dynamic| -> RhaiResult<()> {
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
    });
}

fn register_grad_mode(engine: &mut Engine) {
    volatile!(engine, "no_grad", |ctx: NativeCallContext,
                                  f: FnPtr|
     -> RhaiResult<Dynamic> {
        let _mode = GradModeGuard::new(false);
        f.call_within_context::<Dynamic>(&ctx, ())
    });
    volatile!(engine, "enable_grad", |ctx: NativeCallContext,
                                      f: FnPtr|
     -> RhaiResult<Dynamic> {
        let _mode = GradModeGuard::new(true);
        f.call_within_context::<Dynamic>(&ctx, ())
    });
    volatile!(engine, "is_grad_enabled", autograd::is_grad_enabled);
    volatile!(engine, "set_grad_enabled", |enabled: bool| {
        autograd::set_grad_enabled(enabled);
    });
}
