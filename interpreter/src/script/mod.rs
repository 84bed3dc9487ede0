//! The Rhai script API and the [`Interpreter`] that runs scripts.
//!
//! Each submodule registers one group of the API and only converts
//! arguments; all tensor semantics live in [`crate::tensor`]:
//! [`creation`] (tensor, zeros, rand, ...), [`operators`] (`+ - * / % **`,
//! `@`, comparisons, `+=`, indexing), [`methods`] (views, math, reductions,
//! properties, printing), [`autograd`] (`requires_grad`, `grad`, `backward`,
//! `detach`, `no_grad`), [`optim`] (cross_entropy and the fused optimizer
//! steps), [`runtime_api`] (`seed`, devices, `time`, `args`, the `cuda::`
//! namespace), [`files`] (CSV, `.npy`, safetensors), [`progress`] (the
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
pub mod files;
pub mod methods;
pub mod operators;
pub mod optim;
pub mod progress;
pub mod runtime_api;
mod stdlib;

use crate::error::Error;
use crate::io::FileAccess;
use crate::tensor::{Device, Generator, Tensor};
use rhai::{Dynamic, Engine, EvalAltResult, OptimizationLevel, Position, Scope, AST};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

/// Per-interpreter state the script API reads: default device, random
/// generator, the script's command-line arguments and the file-access gate.
#[derive(Debug, Default)]
pub struct Runtime {
    device: RwLock<Option<Device>>,
    rng: Mutex<Generator>,
    args: RwLock<Vec<String>>,
    files: FileAccess,
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

    /// The gate every script file access passes (allowed by default).
    pub fn files(&self) -> &FileAccess {
        &self.files
    }
}

/// A script failure: the message and where in which source it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The message, without position.
    pub message: String,
    /// The source name (a file path, `<eval>`, `<repl>`).
    pub source: Option<String>,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
}

impl ScriptError {
    fn new(message: String, source: Option<&str>, pos: Position) -> Self {
        ScriptError {
            message,
            source: source.map(str::to_string),
            line: pos.line(),
            column: pos.position(),
        }
    }

    fn from_eval(err: EvalAltResult, source: Option<&str>) -> Self {
        let mut err = err;
        let pos = err.take_position();
        let message = match &err {
            EvalAltResult::ErrorRuntime(v, _) if v.is_string() => v.to_string(),
            _ => err.to_string(),
        };
        ScriptError::new(message, source, pos)
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.source {
            write!(f, "{s}:")?;
        }
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{l}:{c}: ")?,
            (Some(l), None) => write!(f, "{l}: ")?,
            _ if self.source.is_some() => f.write_str(" ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScriptError {}

/// A Rhai engine with the whole kiln API, a persistent scope (variables and
/// functions survive between [`Interpreter::run`] calls) and its [`Runtime`].
pub struct Interpreter {
    engine: Engine,
    scope: Scope<'static>,
    functions: AST,
    runtime: Arc<Runtime>,
}

impl Default for Interpreter {
    fn default() -> Self {
        Interpreter::new()
    }
}

impl Interpreter {
    /// An interpreter whose default device is `cuda` when a GPU is usable, else `cpu`.
    pub fn new() -> Self {
        let runtime = Arc::new(Runtime::default());
        let mut engine = Engine::new();
        engine.set_optimization_level(OptimizationLevel::None);
        engine.set_max_call_levels(256);
        engine.set_max_expr_depths(256, 128);
        engine.register_type_with_name::<Tensor>("Tensor");
        creation::register(&mut engine, &runtime);
        operators::register(&mut engine, &runtime);
        methods::register(&mut engine, &runtime);
        autograd::register(&mut engine);
        runtime_api::register(&mut engine, &runtime);
        files::register(&mut engine, &runtime);
        progress::register(&mut engine);
        optim::register(&mut engine);
        stdlib::install(&mut engine);
        Interpreter {
            engine,
            scope: Scope::new(),
            functions: AST::empty(),
            runtime,
        }
    }

    /// An interpreter creating tensors on `device` (fails when it is unusable).
    pub fn with_device(device: Device) -> Result<Self, Error> {
        let i = Interpreter::new();
        i.runtime.set_device(device)?;
        Ok(i)
    }

    /// The Rhai engine, to register more functions or types.
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The Rhai engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The variables scripts see; push values here to pass them in.
    pub fn scope_mut(&mut self) -> &mut Scope<'static> {
        &mut self.scope
    }

    /// The runtime state (device, random generator, arguments).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Sets the script's arguments (`args()` and the `ARGS` constant).
    pub fn set_args(&mut self, args: Vec<String>) {
        if let Ok(mut a) = self.runtime.args.write() {
            *a = args.clone();
        }
        let arr: rhai::Array = args.into_iter().map(Dynamic::from).collect();
        self.scope.set_or_push("ARGS", arr);
    }

    /// Allows or forbids scripts to read and write files (allowed by default);
    /// when forbidden, `load_*`/`save_*` fail with a clear error.
    pub fn set_allow_files(&mut self, allowed: bool) {
        self.runtime.files.set_allowed(allowed);
    }

    /// Sends the output of `print` to `f` instead of stdout.
    pub fn on_print(&mut self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.engine.on_print(f);
    }

    /// Runs `source` (named `name` in error messages) and returns its value.
    pub fn run(&mut self, source: &str, name: &str) -> Result<Dynamic, ScriptError> {
        let mut ast = self
            .engine
            .compile_with_scope(&self.scope, source)
            .map_err(|e| ScriptError::new(e.err_type().to_string(), Some(name), e.position()))?;
        ast.set_source(name);
        let ast = self.functions.merge(&ast);
        let r = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut self.scope, &ast)
            .map_err(|e| ScriptError::from_eval(*e, Some(name)));
        self.functions = ast.clone_functions_only();
        r
    }

    /// Runs a script file.
    pub fn run_file(&mut self, path: &Path) -> Result<Dynamic, ScriptError> {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(path).map_err(|e| ScriptError {
            message: format!("cannot read script: {e}"),
            source: Some(name.clone()),
            line: None,
            column: None,
        })?;
        self.run(&source, &name)
    }

    /// Evaluates an expression and converts its value to `T`.
    pub fn eval<T: Clone + Send + Sync + 'static>(&mut self, source: &str) -> Result<T, ScriptError> {
        let v = self.run(source, "<eval>")?;
        let type_name = v.type_name();
        v.try_cast::<T>().ok_or_else(|| ScriptError {
            message: format!(
                "expected a {} result, got {type_name}",
                std::any::type_name::<T>()
            ),
            source: Some("<eval>".into()),
            line: None,
            column: None,
        })
    }
}
