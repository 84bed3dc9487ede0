//! The `dist::` module: the process group of `kiln launch`
//! ([`crate::dist`]): `rank()`, `world_size()`, and the collectives
//! `all_reduce(t, op)` and `broadcast(t, root)` (in place, returning `t`),
//! `all_gather(t)` (a new tensor `[world_size, ...t.shape]`) and
//! `barrier()`. Outside `kiln launch` a process is rank 0 of 1 and every
//! collective is the identity. Only argument conversion happens here.

use super::convert::{ok, script_error, RhaiResult};
use crate::dist::{global, ProcessGroup, ReduceOp};
use crate::tensor::Tensor;
use rhai::{Engine, FuncRegistration, Module, INT};

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

fn all_reduce(t: Tensor, op: &str) -> RhaiResult<Tensor> {
    let op = reduce_op(op)?;
    ok(group()?.all_reduce(&t, op))?;
    Ok(t)
}

fn dist_module() -> Module {
    let mut m = Module::new();
    let reg = |name: &str| FuncRegistration::new(name.to_string()).with_volatility(true);
    reg("rank").set_into_module(&mut m, || -> RhaiResult<INT> { Ok(group()?.rank() as INT) });
    reg("world_size").set_into_module(&mut m, || -> RhaiResult<INT> { Ok(group()?.world_size() as INT) });
    reg("is_distributed").set_into_module(&mut m, || -> RhaiResult<bool> { Ok(group()?.world_size() > 1) });
    reg("all_reduce").set_into_module(&mut m, |t: Tensor, op: &str| all_reduce(t, op));
    reg("all_reduce").set_into_module(&mut m, |t: Tensor| all_reduce(t, "sum"));
    reg("broadcast").set_into_module(&mut m, |t: Tensor, root: INT| -> RhaiResult<Tensor> {
        let root = usize::try_from(root)
            .map_err(|_| script_error(format!("broadcast: root must be a rank (0 or more), got {root}")))?;
        ok(group()?.broadcast(&t, root))?;
        Ok(t)
    });
    reg("all_gather").set_into_module(&mut m, |t: Tensor| -> RhaiResult<Tensor> {
        ok(group()?.all_gather(&t))
    });
    reg("barrier").set_into_module(&mut m, || -> RhaiResult<()> { ok(group()?.barrier()) });
    m
}
