//! `cuda::graph(|| …)`: records the GPU work of a script block once and
//! returns a `Graph` that replays it with one launch (see
//! [`crate::tensor::graph`]).
//!
//! ```rhai
//! let x = zeros([256, 64], #{device: "cuda"});           // a static input
//! let g = cuda::graph(|| model(x).relu().sum());         // runs once, then records
//! let loss = g.replay(#{x: next_batch});                 // copies into x, replays
//! ```
//!
//! The block runs twice at capture: once eagerly (a warm-up whose effects
//! are real: allocations, cuBLAS/cuDNN workspaces and algorithm choices
//! happen there), then recorded. Its named inputs are the CUDA tensors the
//! closure captures, by their variable names, and those given in
//! `opts.inputs`.

use super::convert::{named_tensors, ok, script_error, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::graph::Graph;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, FnPtr, Map, NativeCallContext, INT};
use std::sync::Arc;

/// A recorded graph as scripts hold it, with what its block returned.
#[derive(Clone)]
pub struct ScriptGraph {
    graph: Arc<Graph>,
    value: Dynamic,
}

/// The CUDA tensors a closure captured, by variable name.
fn captured_tensors(ctx: &NativeCallContext, f: &FnPtr) -> Vec<(String, Tensor)> {
    let curry = f.curry();
    if curry.is_empty() {
        return vec![];
    }
    let names = ctx.iter_namespaces().find_map(|m| {
        m.iter_script_fn_info()
            .find(|(_, _, name, params, _)| *name == f.fn_name() && *params == curry.len())
            .map(|(.., def)| def.params.iter().map(|p| p.to_string()).collect::<Vec<_>>())
    });
    let Some(names) = names else {
        return vec![];
    };
    names
        .into_iter()
        .zip(curry)
        .filter_map(|(name, v)| v.clone().flatten().try_cast::<Tensor>().map(|t| (name, t)))
        .collect()
}

/// Warms up, records and returns the graph of `f`.
fn capture(rt: &Runtime, ctx: &NativeCallContext, f: &FnPtr, opts: &Map) -> RhaiResult<ScriptGraph> {
    const OP: &str = "cuda::graph";
    for key in opts.keys() {
        if !["inputs", "warmup"].contains(&key.as_str()) {
            return Err(script_error(format!(
                "{OP}: unknown option '{key}' (expected inputs, warmup)"
            )));
        }
    }
    let warmup = match opts.get("warmup") {
        Some(w) => w
            .as_bool()
            .map_err(|t| script_error(format!("{OP}: warmup must be true or false, got {t}")))?,
        None => true,
    };
    let mut inputs = captured_tensors(ctx, f);
    if let Some(extra) = opts.get("inputs") {
        let m = extra
            .clone()
            .try_cast::<Map>()
            .ok_or_else(|| script_error(format!("{OP}: inputs must be a map of name: tensor")))?;
        for (name, t) in named_tensors(OP, "input", &m)? {
            inputs.retain(|(n, _)| *n != name);
            inputs.push((name, t));
        }
    }
    let device = rt.device();
    // the device check comes before the warm-up runs anything
    ok(Graph::check_device(device))?;
    if warmup {
        let _ = f.call_within_context::<Dynamic>(ctx, ())?;
    }
    let recording = ok(Graph::record(device, inputs))?;
    // an error drops the recording, which abandons it and its memory
    let value = f.call_within_context::<Dynamic>(ctx, ())?;
    let graph = ok(recording.finish())?;
    Ok(ScriptGraph {
        graph: Arc::new(graph),
        value,
    })
}

/// Refills the named inputs and replays; what the block returned.
fn replay(g: &ScriptGraph, fresh: &Map) -> RhaiResult<Dynamic> {
    let fresh = named_tensors("replay", "value", fresh)?;
    ok(g.graph.replay(&fresh))?;
    Ok(g.value.clone())
}

/// `Graph(nodes: 12, inputs: [x, y])`.
fn describe(g: &ScriptGraph) -> String {
    format!(
        "Graph(nodes: {}, inputs: [{}])",
        g.graph.nodes(),
        g.graph.input_names().join(", ")
    )
}

/// Registers `cuda::graph`, `cuda::is_capturing` (into the `cuda` module's `api`).
pub fn register_cuda(api: &mut Api, rt: &Arc<Runtime>) {
    const GRAPH: &str = "runs f once, then records the GPU work it queues as a CUDA graph; returns a Graph whose replay() runs it again with one launch (opts #{inputs: #{name: tensor}, warmup: true})";
    let r = rt.clone();
    api.doc(GRAPH)
        .volatile("graph", ["f"], move |ctx: NativeCallContext, f: FnPtr| {
            capture(&r, &ctx, &f, &Map::new())
        });
    let r = rt.clone();
    api.doc(GRAPH).volatile(
        "graph",
        ["f", "opts"],
        move |ctx: NativeCallContext, f: FnPtr, m: Map| capture(&r, &ctx, &f, &m),
    );
    api.doc("true while this thread records a CUDA graph (cuda::graph's block at capture)")
        .volatile("is_capturing", [], crate::core::capture::is_capturing);
}

/// Registers the `Graph` type and its methods.
pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<ScriptGraph>("Graph");
    let mut api = Api::new(engine, Category::Cuda);
    api.doc("replays the graph; returns what the block returned (the same tensors, refreshed)")
        .volatile("replay", ["g"], |g: &mut ScriptGraph| replay(g, &Map::new()));
    api.doc("copies each tensor of the map into the graph's input of that name (same shape and dtype), then replays")
        .volatile("replay", ["g", "inputs"], |g: &mut ScriptGraph, m: Map| replay(g, &m));
    api.doc("the names of the graph's inputs")
        .get("inputs", ["g"], |g: &mut ScriptGraph| -> Array {
            g.graph.input_names().into_iter().map(Dynamic::from).collect()
        });
    api.doc("the number of nodes (kernels, copies, fills) the graph holds")
        .get("nodes", ["g"], |g: &mut ScriptGraph| g.graph.nodes() as INT);
    api.doc("what the block returned at capture (replay returns the same, refreshed)")
        .get("value", ["g"], |g: &mut ScriptGraph| g.value.clone());
    for name in ["to_string", "to_debug"] {
        api.doc("a summary of the graph")
            .func(name, ["g"], |g: &mut ScriptGraph| describe(g));
    }
}
