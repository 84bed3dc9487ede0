//! The Rhai script API, the per-engine [`Runtime`] it reads, and
//! [`register_api`], which puts it on a Rhai engine. The
//! [`Interpreter`](crate::Interpreter) that runs scripts lives in
//! [`crate::engine`].
//!
//! Each submodule registers one group of the API and only converts
//! arguments; all tensor semantics live in [`crate::tensor`]:
//! [`creation`] (tensor, zeros, rand, ...), [`operators`] (`+ - * / % **`,
//! `@`, comparisons, `+=`, indexing), [`methods`] (views, math, reductions,
//! properties, printing), [`autograd`] (`requires_grad`, `grad`, `backward`,
//! `detach`, `no_grad`), [`optim`] (cross_entropy and the fused optimizer
//! steps), [`runtime_api`] (`seed`, devices, `time`, `args`, the `cuda::`
//! namespace), [`dist`] (the `dist::` process group and collectives), [`files`] (CSV, `.npy`, safetensors), [`progress`] (the
//! `progress(n)` bar). Each registers through [`registry::Api`], which
//! records every function's category, one-line doc and parameter names in
//! Rhai's metadata; [`registry::catalog`] lists them for `:help`.
//!
//! The [`Runtime`] holds what belongs to one engine: besides its device,
//! generator, file gate and memory budget, its grad mode and TF32 setting
//! (applied to the thread while its scripts run, [`scope`]) and the host's
//! output callbacks ([`output`]).
//!
//! The engine runs with Rhai's optimizer off: it rewrites `x = x + y` into
//! `x += y`, and `+=` on a tensor writes in place (as in PyTorch), which would
//! change every alias of `x`. Functions with effects (random draws, devices,
//! clocks) are registered as volatile all the same, for embedders who turn the
//! optimizer back on.

pub mod aliases;
pub mod attention;
pub mod autograd;
pub mod cnn;
pub mod convert;
pub mod creation;
pub mod dist;
pub mod files;
pub mod functional;
pub mod generator;
pub mod graph;
pub mod inplace;
pub mod kwargs;
pub mod linalg;
pub mod losses;
pub mod methods;
pub mod operators;
pub mod optim;
pub mod order;
pub mod output;
pub mod pointwise;
pub mod profile;
pub mod progress;
pub mod rearrange;
pub mod registry;
pub mod runtime_api;
pub mod sampling;
pub mod scope;
pub mod select;
pub mod special;
pub mod statistics;
pub(crate) mod stdlib;
pub mod structure;

pub use output::OutputFn;
pub use scope::RunScope;
pub use stdlib::MODULE_NAMES as STDLIB_MODULES;

use crate::backend::cuda::LazyEngineStream;
use crate::core::control::RunControl;
use crate::core::{Device, MemoryBudget};
use crate::io::FileAccess;
use crate::tensor::{Generator, Tensor};
use output::Outputs;
use rhai::{Engine, OptimizationLevel};
use scope::Modes;
use std::sync::{Arc, RwLock};

/// Per-engine state the script API reads: default device, random generator,
/// the script's command-line arguments, the file-access gate, the memory
/// budget, grad mode and the TF32 setting, and the host's output callbacks.
#[derive(Debug)]
pub struct Runtime {
    device: RwLock<Option<Device>>,
    rng: crate::tensor::random::SharedGenerator,
    args: RwLock<Vec<String>>,
    files: FileAccess,
    budget: Option<Arc<MemoryBudget>>,
    stream: LazyEngineStream,
    control: Arc<RunControl>,
    modes: Arc<Modes>,
    outputs: Outputs,
}

impl Default for Runtime {
    /// No memory budget, file access off.
    fn default() -> Self {
        Runtime::new(None, false)
    }
}

impl Runtime {
    /// The device new tensors are created on: the one set, else `cuda` when a
    /// GPU is usable, else `cpu`.
    pub fn device(&self) -> Device {
        let set = self.device.read().map(|d| *d).unwrap_or(None);
        set.unwrap_or_else(|| {
            if crate::backend::cuda::CudaRuntime::is_available() {
                Device::Cuda(0)
            } else {
                Device::Cpu
            }
        })
    }

    /// Sets the default device after checking that it is usable.
    pub fn set_device(&self, device: Device) -> crate::Result<()> {
        crate::backend::check_device(device)?;
        if let Ok(mut d) = self.device.write() {
            *d = Some(device);
        }
        Ok(())
    }

    /// Runs `f` with the random generator.
    pub fn with_rng<R>(&self, f: impl FnOnce(&mut Generator) -> R) -> R {
        let mut g = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }

    /// The script's arguments.
    pub fn args(&self) -> Vec<String> {
        self.args.read().map(|a| a.clone()).unwrap_or_default()
    }

    /// Sets the script's arguments (`args()`).
    pub fn set_args(&self, args: Vec<String>) {
        if let Ok(mut a) = self.args.write() {
            *a = args;
        }
    }

    /// The gate every script file access passes (its starting state is
    /// [`Runtime::new`]'s `files`).
    pub fn files(&self) -> &FileAccess {
        &self.files
    }

    /// What stops this engine's runs: the interrupt flag and the time limit
    /// (see [`crate::core::control`]).
    pub fn control(&self) -> &Arc<RunControl> {
        &self.control
    }

    /// This runtime with a wall-clock limit on each run.
    pub fn with_max_duration(mut self, limit: Option<std::time::Duration>) -> Runtime {
        self.control = Arc::new(RunControl::new(limit));
        self
    }

    /// The memory budget of this engine's scripts, when it has one.
    pub fn memory_budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.budget.as_ref()
    }

    /// A runtime whose scripts' tensors are charged to `budget` (see
    /// [`crate::core::memory`]) and whose file access starts as `files`.
    pub fn new(budget: Option<Arc<MemoryBudget>>, files: bool) -> Runtime {
        Runtime {
            device: RwLock::new(None),
            rng: crate::tensor::random::shared(Generator::default()),
            args: RwLock::new(Vec::new()),
            files: FileAccess::new(files),
            budget,
            stream: LazyEngineStream::default(),
            control: Arc::default(),
            modes: Arc::new(Modes::default()),
            outputs: Outputs::default(),
        }
    }

    /// This engine's grad mode (on at first): the live one while one of its
    /// scripts runs on this thread, else the one its last run left.
    pub fn grad_enabled(&self) -> bool {
        self.modes.grad_enabled()
    }

    /// Sets this engine's grad mode (as `set_grad_enabled(b)` in its scripts).
    pub fn set_grad_enabled(&self, enabled: bool) {
        self.modes.set_grad_enabled(enabled);
    }

    /// Whether this engine's f32 matmuls may use TF32 tensor cores (off at
    /// first; `cuda::set_allow_tf32(b)` in its scripts).
    pub fn allow_tf32(&self) -> bool {
        self.modes.allow_tf32()
    }

    /// Lets this engine's f32 matmuls use TF32 tensor cores, or not.
    pub fn set_allow_tf32(&self, allow: bool) {
        self.modes.set_allow_tf32(allow);
    }

    /// Sends this engine's progress lines (`progress(n)`) to `f`, one line a
    /// call, instead of drawing them on stderr; `None` goes back to the
    /// print callback, if one is set, else stderr. Bars made before keep
    /// their output.
    pub fn set_progress_output(&self, f: Option<OutputFn>) {
        self.outputs.set_progress(f);
    }

    /// The host's `print` callback, which progress lines fall back to.
    pub(crate) fn set_print_output(&self, f: Option<OutputFn>) {
        self.outputs.set_print(f);
    }

    /// Where this engine's progress lines go.
    pub(crate) fn outputs(&self) -> &Outputs {
        &self.outputs
    }

    /// Prepares this thread to run a script of this runtime: starts the
    /// run's control (clears the interrupt flag, starts the time limit),
    /// enters its memory budget, makes its own CUDA stream (created when the run
    /// first queues GPU work; a run that never does creates no CUDA context)
    /// the thread's current stream, applies its grad mode and
    /// TF32 setting, and forgets earlier typed errors. Dropping the scope
    /// keeps the grad mode and TF32 setting the scripts left for this
    /// runtime's next run and restores the thread's own. The
    /// [`Interpreter`](crate::Interpreter) does this around every run; a host
    /// that runs kiln scripts on its own engine ([`crate::register`]) holds
    /// the returned scope around its `eval` calls, for the budget and the
    /// engine's modes to apply (and not leak into the thread).
    pub fn enter(&self) -> RunScope {
        convert::clear_typed_error();
        RunScope::enter(
            &self.modes,
            Some(self.control.enter()),
            self.budget.as_ref().map(|b| b.enter()),
            Some(self.stream.enter()),
        )
    }
}

/// Puts the kiln script API on `engine`: the `Tensor` type, creation
/// functions, operators, methods, autograd, runtime and file functions, the
/// `cuda::` and `dist::` modules (the stdlib modules are served by a module resolver that
/// the builder installs).
///
/// It also turns Rhai's optimizer off: the optimizer rewrites `x = x + y`
/// into `x += y`, and `+=` on a tensor writes in place (as in PyTorch),
/// which would change every alias of `x`.
pub fn register_api(engine: &mut Engine, runtime: &Arc<Runtime>) {
    engine.set_optimization_level(OptimizationLevel::None);
    engine.register_type_with_name::<Tensor>("Tensor");
    registry::collect(engine, |engine| register_functions(engine, runtime));
}

/// Every script function, registered through [`registry::Api`].
fn register_functions(engine: &mut Engine, runtime: &Arc<Runtime>) {
    creation::register(engine, runtime);
    operators::register(engine, runtime);
    methods::register(engine, runtime);
    rearrange::register(engine);
    structure::register(engine, runtime);
    pointwise::register(engine);
    statistics::register(engine);
    autograd::register(engine);
    runtime_api::register(engine, runtime);
    dist::register(engine);
    files::register(engine, runtime);
    progress::register(engine, runtime);
    optim::register(engine);
    functional::register(engine, runtime);
    attention::register(engine, runtime);
    cnn::register(engine, runtime);
    losses::register(engine);
    order::register(engine);
    linalg::register(engine);
    select::register(engine, runtime);
    generator::register(engine);
    sampling::register(engine, runtime);
    inplace::register(engine);
    profile::register(engine, runtime);
    graph::register(engine);
    aliases::register(engine);
    special::register(engine);
}
