//! The `dist::` module: the process group of `kiln launch`
//! ([`crate::dist`]): `rank()`, `world_size()`, and the collectives
//! `all_reduce(t, op)` and `broadcast(t, root)` (in place, returning `t`),
//! `all_gather(t)` (a new tensor `[world_size, ...t.shape]`) and
//! `barrier()`. Outside `kiln launch` a process is rank 0 of 1 and every
//! collective is the identity. Only argument conversion happens here.

use super::convert::{ok, script_error, RhaiResult};
use crate::dist::{global, ProcessGroup, ReduceOp};
use crate::tensor::Tensor;
use rhai::{Engine, FuncRegistration, Module, NativeCallContext, INT};

/// Registers the `dist` module.
pub fn register(engine: &mut Engine) {
    engine.register_static_module("dist", dist_module().into());
}

fn group() -> RhaiResult<&'static ProcessGroup> {
    ok(global())
}

fn reduce_op(s: &str) -> RhaiResult<ReduceOp> {
    ReduceOp::parse(s).ok_or_else(|| {
        script_error(format!(
            "all_reduce: unknown op '{s}' (expected \"sum\", \"mean\", \"max\" or \"min\")"
        ))
    })
}

/// `r` with the error placed at the call (errors of module functions carry
/// no position otherwise).
fn at<T>(ctx: &NativeCallContext, r: RhaiResult<T>) -> RhaiResult<T> {
    r.map_err(|mut e| {
        if e.position().is_none() {
            e.set_position(ctx.call_position());
        }
        e
    })
}

fn all_reduce(ctx: &NativeCallContext, t: Tensor, op: &str) -> RhaiResult<Tensor> {
    at(ctx, reduce_op(op).and_then(|op| ok(group()?.all_reduce(&t, op))))?;
    Ok(t)
}

fn broadcast(ctx: &NativeCallContext, t: Tensor, root: INT) -> RhaiResult<Tensor> {
    at(
        ctx,
        usize::try_from(root)
            .map_err(|_| script_error(format!("broadcast: root must be a rank (0 or more), got {root}")))
            .and_then(|root| ok(group()?.broadcast(&t, root))),
    )?;
    Ok(t)
}

fn dist_module() -> Module {
    let mut m = Module::new();
    let reg = |name: &str| FuncRegistration::new(name.to_string()).with_volatility(true);
    reg("rank").set_into_module(&mut m, |ctx: NativeCallContext| -> RhaiResult<INT> {
        at(&ctx, group().map(|g| g.rank() as INT))
    });
    reg("world_size").set_into_module(&mut m, |ctx: NativeCallContext| -> RhaiResult<INT> {
        at(&ctx, group().map(|g| g.world_size() as INT))
    });
    reg("is_distributed").set_into_module(&mut m, |ctx: NativeCallContext| -> RhaiResult<bool> {
        at(&ctx, group().map(|g| g.world_size() > 1))
    });
    reg("all_reduce").set_into_module(&mut m, |ctx: NativeCallContext, t: Tensor, op: &str| {
        all_reduce(&ctx, t, op)
    });
    reg("all_reduce").set_into_module(&mut m, |ctx: NativeCallContext, t: Tensor| {
        all_reduce(&ctx, t, "sum")
    });
    reg("broadcast").set_into_module(&mut m, |ctx: NativeCallContext, t: Tensor, root: INT| {
        broadcast(&ctx, t, root)
    });
    reg("all_gather").set_into_module(
        &mut m,
        |ctx: NativeCallContext, t: Tensor| -> RhaiResult<Tensor> {
            at(&ctx, group().and_then(|g| ok(g.all_gather(&t))))
        },
    );
    reg("barrier").set_into_module(&mut m, |ctx: NativeCallContext| -> RhaiResult<()> {
        at(&ctx, group().and_then(|g| ok(g.barrier())))
    });
    m
}
