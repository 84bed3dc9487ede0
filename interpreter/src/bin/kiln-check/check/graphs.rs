//! The `graphs` group: `cuda::graph` replays against eager runs, through
//! scripts as a user writes them. Each case returns `[eager, replayed]`
//! (eager on the CPU where the recorded block has a CPU twin, else eager
//! on the GPU); the memory and error cases return a tensor of booleans
//! that must all hold. With `--cpu-only` only the CPU engine's clear error
//! is checked (a graph records GPU work).

use super::*;
use kiln::Interpreter;

/// Elementwise chain, refreshed input three times.
const CHAIN: &str = r#"
let x = randn([1000, 37]);
let g = cuda::graph(|| ((x * 2.0 + 1.0).tanh() * x - x.sigmoid()).sum(1));
let eager = [];
let replayed = [];
for i in 0..3 {
    let xi = randn([1000, 37]);
    replayed.push(g.replay(#{x: xi}).clone());
    let c = xi.cpu();
    eager.push(((c * 2.0 + 1.0).tanh() * c - c.sigmoid()).sum(1));
}
[stack(eager, 0), stack(replayed, 0).cpu()]
"#;

/// Matmul, bias and activation; the block's value is returned refreshed.
const MATMUL: &str = r#"
let x = randn([256, 64]);
let w = randn([64, 96]);
let b = randn([96]);
let g = cuda::graph(|| (x @ w + b).relu() @ w.t());
let eager = [];
let replayed = [];
for i in 0..3 {
    let xi = randn([256, 64]);
    let r = g.replay(#{x: xi});
    if !r.shares_storage(g.value) { throw "replay returned other tensors than the block's"; }
    replayed.push(r.clone());
    eager.push(((xi @ w + b).relu() @ w.t()));
}
[stack(eager, 0).cpu(), stack(replayed, 0).cpu()]
"#;

/// Ten steps of an MLP with Adam, eager and as one warm-up plus nine
/// replays of the recorded step; the parameters afterwards.
const TRAINING: &str = r#"
import "nn" as nn;
import "optim" as optim;
seed(3);
let batches = [];
for i in 0..10 { batches.push([randn([64, 20]), randint(0, 5, [64])]); }
let run = |graphed| {
    seed(11);
    let model = nn::mlp([20, 32, 32, 5], "relu");
    let opt = OPTIMIZER;
    let x = batches[0][0].clone();
    let y = batches[0][1].clone();
    let step = || {
        optim::zero_grad(opt);
        let loss = nn::cross_entropy(nn::apply(model, x), y);
        loss.backward();
        optim::step(opt);
        loss
    };
    if graphed {
        let g = cuda::graph(step);
        for i in 1..10 { g.replay(#{x: batches[i][0], y: batches[i][1]}); }
    } else {
        for i in 0..10 { x.copy_(batches[i][0]); y.copy_(batches[i][1]); step.call(); }
    }
    let flat = [];
    for p in nn::parameters(model) { flat.push(p.detach().reshape([-1])); }
    if optim::steps(opt) != 10 { throw `the optimizer counted ${optim::steps(opt)} steps`; }
    cat(flat, 0).cpu()
};
[run.call(false), run.call(true)]
"#;

/// Random ops draw fresh numbers on every replay, the ones eager runs draw
/// (the warm-up is the first run), and follow a reseed between replays.
const RANDOM: &str = r#"
let run = |graphed| {
    seed(21);
    let x = randn([512, 300]);
    let block = || (dropout(x, #{p: 0.3}) + rand([512, 300]) * randn([300]) + randint(0, 7, [300])).sum(0);
    let outs = [];
    if graphed {
        let g = cuda::graph(block);
        outs.push(g.replay().clone());
        outs.push(g.replay().clone());
        seed(99);
        outs.push(g.replay().clone());
    } else {
        block.call();
        outs.push(block.call());
        outs.push(block.call());
        seed(99);
        outs.push(block.call());
    }
    stack(outs, 0).cpu()
};
[run.call(false), run.call(true)]
"#;

/// Memory comes back when a graph and its value are dropped; a read-back
/// inside the block is refused with the function's name.
const MEMORY_AND_ERRORS: &str = r#"
let x = randn([4096, 256]);
let y = x * 2.0;
cuda::synchronize();
let before = cuda::memory_allocated();
let g = cuda::graph(|| ((x + 1.0) * y).sum(0));
let r = g.replay();
let during = cuda::memory_allocated();
g = ();
r = ();
let after = cuda::memory_allocated();
let refused = false;
try {
    cuda::graph(|| (x * 3.0).sum().item());
} catch (e) {
    let text = `${e}`;
    refused = text.contains("item: reads GPU values back to the host") && text.contains("inside a cuda::graph capture");
}
let still_works = ((x * 3.0).sum() - (x.cpu() * 3.0).sum().cuda()).abs().item() < 1.0;
tensor([during > before, after == before, refused, still_works])
"#;

impl Checker {
    /// The `graphs` group (see the module doc).
    pub(super) fn graphs(&mut self) {
        if gpu() == Device::Cpu {
            let r = Interpreter::builder()
                .device(Device::Cpu)
                .build()
                .map_err(|e| e.to_string())
                .and_then(|mut k| match k.run("cuda::graph(|| 1)", "graphs") {
                    Ok(_) => Err("cuda::graph ran on a CPU engine".to_string()),
                    Err(e) if e.to_string().contains("records GPU work") => Ok(()),
                    Err(e) => Err(format!("unclear error: {e}")),
                });
            self.push_check("graph on a CPU engine is an error", r);
            return;
        }
        for (name, src) in [
            ("graph: elementwise chain, refreshed input", CHAIN.to_string()),
            ("graph: matmul + bias + relu", MATMUL.to_string()),
            (
                "graph: random ops, fresh draws per replay, reseed",
                RANDOM.to_string(),
            ),
            (
                "graph: 10 Adam steps, eager vs replayed",
                TRAINING.replace("OPTIMIZER", "optim::adam(nn::parameters(model), #{lr: 0.01})"),
            ),
            (
                "graph: 10 SGD momentum steps, eager vs replayed",
                TRAINING.replace(
                    "OPTIMIZER",
                    "optim::sgd(nn::parameters(model), #{lr: 0.05, momentum: 0.9})",
                ),
            ),
        ] {
            let r = pair(&src);
            self.record_scaled(name, DType::F32, "contiguous", r, 10.0);
        }
        let r = run(MEMORY_AND_ERRORS).and_then(|v| {
            let t = v.try_cast::<Tensor>().ok_or("not a tensor")?;
            let flags = t.to_host().map_err(|e| e.to_string())?;
            let names = [
                "memory held while alive",
                "memory back after drop",
                "item refused",
                "eager after a refusal",
            ];
            let failed: Vec<&str> = (0..names.len())
                .filter(|&i| flags.get(i).map(|s| s.to_f64()) != Some(1.0))
                .map(|i| names[i])
                .collect();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(format!("failed: {}", failed.join(", ")))
            }
        });
        self.push_check("graph: memory returns, read-back refused", r);
    }

    /// A case that passes when `r` is `Ok`.
    fn push_check(&mut self, op: &str, r: std::result::Result<(), String>) {
        self.cases.push(Case {
            op: op.to_string(),
            dtype: "-".into(),
            layout: "-".into(),
            worst: if r.is_ok() { 0.0 } else { f64::INFINITY },
            error: r.err(),
        });
    }
}

/// Runs `src` on a fresh CUDA engine.
fn run(src: &str) -> std::result::Result<rhai::Dynamic, String> {
    let mut k = Interpreter::builder()
        .device(gpu())
        .build()
        .map_err(|e| e.to_string())?;
    k.run(src, "graphs").map_err(|e| e.to_string())
}

/// The `[eager, replayed]` pair a case script returns.
fn pair(src: &str) -> Result<(Tensor, Tensor)> {
    let v = run(src).map_err(|e| kiln::Error::invalid("cuda::graph", e))?;
    let a = v
        .try_cast::<rhai::Array>()
        .ok_or_else(|| kiln::Error::invalid("cuda::graph", "the case returned no array"))?;
    let t = |i: usize| {
        a.get(i)
            .and_then(|d| d.clone().try_cast::<Tensor>())
            .ok_or_else(|| kiln::Error::invalid("cuda::graph", "the case returned no tensors"))
    };
    Ok((t(0)?, t(1)?))
}
