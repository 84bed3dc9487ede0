//! The `dist::` module: the process group of `kiln launch`
//! ([`crate::dist`]): `rank()`, `world_size()`, and the collectives
//! `all_reduce(t, op)` and `broadcast(t, root)` (in place, returning `t`),
//! `all_gather(t)` (a new tensor `[world_size, ...t.shape]`) and
//! `barrier()`, `all_reduce_coalesced(list, op)` (one collective per bucket
//! of tensors), and `reducer(params[, #{bucket_mb: X}])`, a [`Reducer`]
//! that averages the gradients while backward runs (`red.wait()` after
//! `backward()`; `red.num_buckets`, `red.bucket_sizes`). Outside
//! `kiln launch` a process is rank 0 of 1 and every collective is the
//! identity. Only argument conversion happens here.

use super::convert::{ok, script_error, RhaiResult};
use super::registry::{Api, Category};
use crate::dist::reducer::DEFAULT_BUCKET_CAP_BYTES;
use crate::dist::{global, ProcessGroup, ReduceOp, Reducer};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, Module, NativeCallContext, INT};
use std::sync::Arc;

/// A script handle to a [`Reducer`] (clones share it; the reducer and its
/// hooks go when the last one does).
#[derive(Clone)]
pub struct ScriptReducer(pub Arc<Reducer>);

/// Registers the `dist` module and the `Reducer` type.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ScriptReducer>("Reducer");
    let module = dist_module(engine);
    engine.register_static_module("dist", module.into());
    let mut api = Api::new(engine, Category::Dist);
    api.doc("waits until the reducer's gradient all-reduces are done (after backward)")
        .volatile("wait", ["red"], |r: &mut ScriptReducer| -> RhaiResult<()> {
            ok(r.0.wait())
        });
    const BUCKETS: &str = "the number of gradient buckets of the reducer";
    const SIZES: &str = "the number of elements in each gradient bucket of the reducer, in launch order";
    api.doc(BUCKETS)
        .get("num_buckets", ["red"], |r: &mut ScriptReducer| {
            r.0.num_buckets() as INT
        });
    api.doc(BUCKETS)
        .func("num_buckets", ["red"], |r: &mut ScriptReducer| {
            r.0.num_buckets() as INT
        });
    api.doc(SIZES)
        .get("bucket_sizes", ["red"], |r: &mut ScriptReducer| sizes(&r.0));
    api.doc(SIZES)
        .func("bucket_sizes", ["red"], |r: &mut ScriptReducer| sizes(&r.0));
    api.doc("a short description of the reducer")
        .func("to_string", ["red"], |r: &mut ScriptReducer| describe(&r.0));
    api.doc("a short description of the reducer")
        .func("to_debug", ["red"], |r: &mut ScriptReducer| describe(&r.0));
}

fn sizes(r: &Reducer) -> Array {
    r.bucket_sizes()
        .iter()
        .map(|&n| Dynamic::from(n as INT))
        .collect()
}

fn describe(r: &Reducer) -> String {
    format!("Reducer({} buckets: {:?})", r.num_buckets(), r.bucket_sizes())
}

/// The tensors of a script array (`op` names the function in errors).
fn tensor_list(op: &str, list: &Array) -> RhaiResult<Vec<Tensor>> {
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.clone().try_cast::<Tensor>().ok_or_else(|| {
                script_error(format!(
                    "{op}: element {i} of the list is a {}, not a tensor",
                    v.type_name()
                ))
            })
        })
        .collect()
}

/// The bucket cap in bytes from the options `#{bucket_mb: X}` (MiB).
fn bucket_cap(opts: &Map) -> RhaiResult<usize> {
    let mut cap = DEFAULT_BUCKET_CAP_BYTES;
    for (k, v) in opts {
        match k.as_str() {
            "bucket_mb" => {
                let mb = v
                    .as_float()
                    .or_else(|_| v.as_int().map(|i| i as f64))
                    .ok()
                    .filter(|mb| mb.is_finite() && *mb > 0.0)
                    .ok_or_else(|| {
                        script_error(format!("reducer: bucket_mb must be a positive number, got {v}"))
                    })?;
                cap = ((mb * 1024.0 * 1024.0).round() as usize).max(1);
            }
            other => {
                return Err(script_error(format!(
                    "reducer: unknown option '{other}' (expected bucket_mb)"
                )))
            }
        }
    }
    Ok(cap)
}

fn reducer(ctx: &NativeCallContext, params: &Array, opts: &Map) -> RhaiResult<ScriptReducer> {
    at(
        ctx,
        (|| {
            let params = tensor_list("reducer", params)?;
            let cap = bucket_cap(opts)?;
            ok(Reducer::new(group()?, &params, cap)).map(|r| ScriptReducer(Arc::new(r)))
        })(),
    )
}

fn all_reduce_coalesced(ctx: &NativeCallContext, list: Array, op: &str) -> RhaiResult<Array> {
    at(
        ctx,
        (|| {
            let tensors = tensor_list("all_reduce_coalesced", &list)?;
            let op = reduce_op("all_reduce_coalesced", op)?;
            ok(group()?.all_reduce_coalesced(&tensors, op))
        })(),
    )?;
    Ok(list)
}

fn group() -> RhaiResult<&'static ProcessGroup> {
    ok(global())
}

fn reduce_op(name: &str, s: &str) -> RhaiResult<ReduceOp> {
    ReduceOp::parse(s).ok_or_else(|| {
        script_error(format!(
            "{name}: unknown op '{s}' (expected \"sum\", \"mean\", \"max\" or \"min\")"
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
    at(
        ctx,
        reduce_op("all_reduce", op).and_then(|op| ok(group()?.all_reduce(&t, op))),
    )?;
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

/// The `dist::` functions (`engine` gives the type names of their signatures).
fn dist_module(engine: &Engine) -> Module {
    let mut m = Module::new();
    let mut api = Api::module(&mut m, "dist", engine, Category::Dist);
    api.doc("this process's rank in the group (0 outside kiln launch)")
        .volatile("rank", [], |ctx: NativeCallContext| -> RhaiResult<INT> {
            at(&ctx, group().map(|g| g.rank() as INT))
        });
    api.doc("the number of processes in the group (1 outside kiln launch)")
        .volatile("world_size", [], |ctx: NativeCallContext| -> RhaiResult<INT> {
            at(&ctx, group().map(|g| g.world_size() as INT))
        });
    api.doc("true when the group has more than one process").volatile(
        "is_distributed",
        [],
        |ctx: NativeCallContext| -> RhaiResult<bool> { at(&ctx, group().map(|g| g.world_size() > 1)) },
    );
    const ALL_REDUCE: &str =
        "reduces t across all ranks in place (op: \"sum\" by default, \"mean\", \"max\", \"min\"); returns t";
    api.doc(ALL_REDUCE).volatile(
        "all_reduce",
        ["t", "op"],
        |ctx: NativeCallContext, t: Tensor, op: &str| all_reduce(&ctx, t, op),
    );
    api.doc(ALL_REDUCE)
        .volatile("all_reduce", ["t"], |ctx: NativeCallContext, t: Tensor| {
            all_reduce(&ctx, t, "sum")
        });
    api.doc("copies root's t into t on every rank, in place; returns t")
        .volatile(
            "broadcast",
            ["t", "root"],
            |ctx: NativeCallContext, t: Tensor, root: INT| broadcast(&ctx, t, root),
        );
    api.doc("every rank's t stacked: a new tensor [world_size, ...t.shape]")
        .volatile(
            "all_gather",
            ["t"],
            |ctx: NativeCallContext, t: Tensor| -> RhaiResult<Tensor> {
                at(&ctx, group().and_then(|g| ok(g.all_gather(&t))))
            },
        );
    const COALESCED: &str =
        "all_reduce of a list of tensors in place, one collective per bucket; returns the list";
    api.doc(COALESCED).volatile(
        "all_reduce_coalesced",
        ["tensors", "op"],
        |ctx: NativeCallContext, list: Array, op: &str| all_reduce_coalesced(&ctx, list, op),
    );
    api.doc(COALESCED).volatile(
        "all_reduce_coalesced",
        ["tensors"],
        |ctx: NativeCallContext, list: Array| all_reduce_coalesced(&ctx, list, "sum"),
    );
    const REDUCER: &str =
        "a Reducer that averages params' gradients across ranks while backward runs; opts #{bucket_mb}";
    api.doc(REDUCER)
        .volatile("reducer", ["params"], |ctx: NativeCallContext, params: Array| {
            reducer(&ctx, &params, &Map::new())
        });
    api.doc(REDUCER).volatile(
        "reducer",
        ["params", "opts"],
        |ctx: NativeCallContext, params: Array, opts: Map| reducer(&ctx, &params, &opts),
    );
    api.doc("waits until every rank reaches it").volatile(
        "barrier",
        [],
        |ctx: NativeCallContext| -> RhaiResult<()> { at(&ctx, group().and_then(|g| ok(g.barrier()))) },
    );
    drop(api);
    m
}
