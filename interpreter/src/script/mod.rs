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
//! `progress(n)` bar).
//!
//! The engine runs with Rhai's optimizer off: it rewrites `x = x + y` into
//! `x += y`, and `+=` on a tensor writes in place (as in PyTorch), which would
//! change every alias of `x`. Functions with effects (random draws, devices,
//! clocks) are registered as volatile all the same, for embedders who turn the
//! optimizer back on.

pub mod autograd;
pub mod convert;
pub mod creation;
pub mod dist;
pub mod files;
pub mod methods;
pub mod operators;
pub mod optim;
pub mod progress;
pub mod runtime_api;
pub(crate) mod stdlib;

pub use stdlib::MODULE_NAMES as STDLIB_MODULES;

use crate::backend::cuda::{CudaRuntime, EngineStream, StreamScope};
use crate::io::FileAccess;
use crate::tensor::control::{ControlScope, RunControl};
use crate::tensor::{BudgetScope, Device, Generator, MemoryBudget, Tensor};
use rhai::{Engine, OptimizationLevel};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// Per-engine state the script API reads: default device, random generator,
/// the script's command-line arguments, the file-access gate and the memory
/// budget.
#[derive(Debug, Default)]
pub struct Runtime {
    device: RwLock<Option<Device>>,
    rng: Mutex<Generator>,
    args: RwLock<Vec<String>>,
    files: FileAccess,
    budget: Option<Arc<MemoryBudget>>,
    stream: OnceLock<Option<EngineStream>>,
    control: Arc<RunControl>,
}

/// What [`Runtime::enter`] sets up on a thread while a script runs there;
/// dropping it undoes that.
#[derive(Debug)]
#[must_use = "the runtime applies only while the scope is alive"]
pub struct RunScope {
    _control: ControlScope,
    _budget: Option<BudgetScope>,
    _stream: Option<StreamScope>,
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

    /// The gate every script file access passes (allowed by default).
    pub fn files(&self) -> &FileAccess {
        &self.files
    }

    /// What stops this engine's runs: the interrupt flag and the time limit
    /// (see [`crate::tensor::control`]).
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
    /// [`crate::tensor::memory`]) and whose file access starts as `files`.
    pub fn new(budget: Option<Arc<MemoryBudget>>, files: bool) -> Runtime {
        Runtime {
            budget,
            files: FileAccess::new(files),
            ..Runtime::default()
        }
    }

    /// Prepares this thread to run a script of this runtime: starts the
    /// run's control (clears the interrupt flag, starts the time limit),
    /// enters its memory budget, makes its own CUDA stream (created on first use, when a
    /// GPU is usable) the thread's current stream, and forgets earlier typed
    /// errors. The
    /// [`Interpreter`](crate::Interpreter) does this around every run; a host
    /// that runs kiln scripts on its own engine ([`crate::register`]) holds
    /// the returned scope around its `eval` calls for the budget to apply.
    pub fn enter(&self) -> RunScope {
        convert::clear_typed_error();
        let stream = match CudaRuntime::get() {
            Ok(rt) if CudaRuntime::engine_streams_enabled() => {
                self.stream.get_or_init(|| rt.engine_stream().ok()).as_ref()
            }
            _ => None,
        };
        RunScope {
            _control: self.control.enter(),
            _budget: self.budget.as_ref().map(|b| b.enter()),
            _stream: stream.map(EngineStream::enter),
        }
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
    creation::register(engine, runtime);
    operators::register(engine, runtime);
    methods::register(engine, runtime);
    autograd::register(engine);
    runtime_api::register(engine, runtime);
    dist::register(engine);
    files::register(engine, runtime);
    progress::register(engine);
    optim::register(engine);
}
