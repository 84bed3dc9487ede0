//! The embedding API: the [`Interpreter`] that runs scripts, its
//! [`Builder`] and sandbox [`Limits`], the typed [`ScriptError`], and
//! [`register`] for hosts that bring their own Rhai engine.
//!
//! An interpreter owns a Rhai engine with the whole kiln API, a scope that
//! persists between runs (variables, and the functions scripts define), and
//! its [`Runtime`] (default device, random generator, file gate, memory
//! budget, grad mode, TF32 setting, output callbacks). It is `Send + Sync`;
//! several interpreters run on several threads at once, each with its own
//! state, and several on one thread do not see each other's grad mode or
//! TF32 setting: every entry point ([`Interpreter::run`], `run_ast`, `eval`,
//! `call_fn`, and [`Runtime::enter`] for hosts with their own engine)
//! applies the engine's own and restores the thread's on the way out.

mod builder;
mod error;

pub use builder::{Builder, Limits, DEFAULT_CALL_DEPTH};
pub use error::{ErrorKind, Limit, ScriptError};

/// Stops an [`Interpreter`]'s run in progress from another thread (or a
/// signal handler): Rhai code stops at its next operation and a native op
/// within milliseconds, with [`ErrorKind::Terminated`]; the interpreter stays
/// usable and the next run starts afresh. Cheap to clone.
///
/// ```
/// let mut kiln = kiln::Interpreter::builder().device(kiln::Device::Cpu).build()?;
/// let stop = kiln.interrupt_handle();
/// let t = std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_millis(50));
///     stop.interrupt();
/// });
/// let e = kiln.run("loop { }", "spin.rhai").unwrap_err();
/// assert_eq!(e.kind, kiln::ErrorKind::Terminated);
/// t.join().unwrap();
/// assert_eq!(kiln.eval::<i64>("1 + 1").unwrap(), 2);
/// # Ok::<(), kiln::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct InterruptHandle(Arc<crate::core::control::RunControl>);

impl InterruptHandle {
    /// Asks the run in progress to stop.
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}

use crate::core::error::Error;
use crate::core::{Device, MemoryBudget};
use crate::script::{OutputFn, Runtime};
use rhai::{Dynamic, Engine, FuncArgs, Position, RhaiNativeFunc, Scope, AST};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// Puts kiln on an engine the host already has, with [`Builder::new`]'s
/// settings: the default device, no limits, every stdlib module, and file
/// access off (as for [`Interpreter::builder`]; `Builder::new().allow_files(true)`
/// or [`Runtime::files`] turns it on). See [`Builder::register`] for what it
/// changes on the engine and to configure it.
///
/// ```
/// let mut engine = rhai::Engine::new();
/// let runtime = kiln::register(&mut engine);
/// let _run = runtime.enter();
/// let n: i64 = engine.eval("zeros([3, 4]).numel").unwrap();
/// assert_eq!(n, 12);
/// assert!(engine.eval::<rhai::Dynamic>("load_npy(\"x.npy\")").is_err());   // files are off
/// ```
pub fn register(engine: &mut Engine) -> Arc<Runtime> {
    match Builder::new().register(engine) {
        Ok(runtime) => runtime,
        // without a device or module names to check, this cannot fail;
        // register with a default runtime rather than panic if it ever does
        Err(_) => {
            let runtime = Arc::new(Runtime::new(None, false));
            crate::script::register_api(engine, &runtime);
            crate::script::stdlib::install(engine, &runtime, None);
            runtime
        }
    }
}

/// A Rhai engine with the whole kiln API, a persistent scope (variables and
/// functions survive between runs) and its [`Runtime`].
///
/// ```
/// use kiln::{Device, Interpreter, Tensor};
/// let mut kiln = Interpreter::builder().device(Device::Cpu).build()?;
/// kiln.set_var("x", Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2], Device::Cpu)?);
/// let y: Tensor = kiln.eval("x @ x.t()").unwrap();
/// assert_eq!(y.to_vec::<f32>()?, [5.0, 11.0, 11.0, 25.0]);
/// # Ok::<(), kiln::Error>(())
/// ```
pub struct Interpreter {
    engine: Engine,
    scope: Scope<'static>,
    functions: AST,
    runtime: Arc<Runtime>,
    limits: Limits,
}

impl Default for Interpreter {
    fn default() -> Self {
        Interpreter::new()
    }
}

impl std::fmt::Debug for Interpreter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter")
            .field("device", &self.runtime.device())
            .field("limits", &self.limits)
            .field("variables", &self.scope.len())
            .finish_non_exhaustive()
    }
}

impl Interpreter {
    /// The interpreter the `kiln` command uses: default device (`cuda` when
    /// a GPU is usable, else `cpu`), every stdlib module, files allowed, no
    /// limits. [`Interpreter::builder`] sets it up otherwise.
    pub fn new() -> Self {
        Interpreter::assemble(Builder::new().allow_files(true))
    }

    fn assemble(b: Builder) -> Self {
        let files = b.files_allowed();
        match b.build() {
            Ok(i) => i,
            // without a device or module names to check, building cannot
            // fail; keep a bare engine rather than panic if it ever does
            Err(_) => Interpreter::from_parts(
                Engine::new(),
                Arc::new(Runtime::new(None, files)),
                Limits::default(),
            ),
        }
    }

    /// A [`Builder`] with its defaults.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// [`Interpreter::new`] creating tensors on `device` (fails when it is unusable).
    pub fn with_device(device: Device) -> Result<Self, Error> {
        Builder::new().allow_files(true).device(device).build()
    }

    pub(crate) fn from_parts(engine: Engine, runtime: Arc<Runtime>, limits: Limits) -> Self {
        Interpreter {
            engine,
            scope: Scope::new(),
            functions: AST::empty(),
            runtime,
            limits,
        }
    }

    /// The Rhai engine, to register more functions or types, or set options.
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The Rhai engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The variables scripts see.
    pub fn scope(&self) -> &Scope<'static> {
        &self.scope
    }

    /// The variables scripts see; push values here to pass them in.
    pub fn scope_mut(&mut self) -> &mut Scope<'static> {
        &mut self.scope
    }

    /// Sets variable `name` for the next scripts (a new one, or a
    /// replacement for one of that name).
    pub fn set_var<T: Clone + Send + Sync + 'static>(&mut self, name: &str, value: T) -> &mut Self {
        self.scope.set_or_push(name.to_string(), value);
        self
    }

    /// The value of variable `name` when it exists and is a `T`.
    pub fn get_var<T: Clone + Send + Sync + 'static>(&self, name: &str) -> Option<T> {
        self.scope.get_value::<T>(name)
    }

    /// Registers a host function that scripts call by `name`; it may take
    /// and return [`Tensor`](crate::Tensor)s (and any other Rhai value), and
    /// return `Result<T, Box<rhai::EvalAltResult>>` to fail: kiln's
    /// [`Error`] converts into that with `?`, and the script then fails with
    /// [`ErrorKind::Tensor`].
    ///
    /// ```
    /// use kiln::{Interpreter, Tensor};
    /// let mut kiln = Interpreter::new();
    /// kiln.register_fn("scale", |t: Tensor, k: f64| -> kiln::RhaiResult<Tensor> {
    ///     Ok(t.mul_scalar(k)?)
    /// });
    /// let v: f64 = kiln.eval("scale(ones([4]), 2.5).sum().item()").unwrap();
    /// assert_eq!(v, 10.0);
    /// ```
    pub fn register_fn<
        A: 'static,
        const N: usize,
        const X: bool,
        R: Clone + Send + Sync + 'static,
        const F: bool,
    >(
        &mut self,
        name: &str,
        func: impl RhaiNativeFunc<A, N, X, R, F> + Send + Sync + 'static,
    ) -> &mut Self {
        self.engine.register_fn(name, func);
        self
    }

    /// The runtime state (device, random generator, arguments, file gate, memory budget).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// A handle that stops this interpreter's run in progress from another thread.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle(self.runtime.control().clone())
    }

    /// The limits this interpreter was built with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The memory budget of this interpreter's scripts, when
    /// [`Limits::max_memory`] is set: its limit and the bytes in use.
    pub fn memory_budget(&self) -> Option<&Arc<MemoryBudget>> {
        self.runtime.memory_budget()
    }

    /// Sets the script's arguments (`args()` and the `ARGS` constant).
    pub fn set_args(&mut self, args: Vec<String>) {
        self.runtime.set_args(args.clone());
        let arr: rhai::Array = args.into_iter().map(Dynamic::from).collect();
        self.scope.set_or_push("ARGS", arr);
    }

    /// Allows or forbids scripts to read and write files; when forbidden,
    /// `load_*`/`save_*` and `import` of `.rhai` files fail with a clear error.
    pub fn set_allow_files(&mut self, allowed: bool) {
        self.runtime.files().set_allowed(allowed);
    }

    /// Sends the output of `print`, of `debug` (as `source @ line:col | text`)
    /// and of `progress(n)` bars (as plain lines, unless
    /// [`Interpreter::on_progress_output`] sends them elsewhere) to `f`
    /// instead of stdout and stderr.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let mut kiln = kiln::Interpreter::builder().device(kiln::Device::Cpu).build()?;
    /// let out = Arc::new(Mutex::new(Vec::<String>::new()));
    /// let o = out.clone();
    /// kiln.on_print(move |s| o.lock().unwrap().push(s.to_string()));
    /// kiln.run("print(1 + 1); debug(\"hi\"); progress(3).inc(3);", "out.rhai").unwrap();
    /// let out = out.lock().unwrap();
    /// assert_eq!(out[0], "2");
    /// assert_eq!(out[1], "out.rhai @ 1:15 | \"hi\"");
    /// assert!(out[2].starts_with("3/3 (100%)"), "{}", out[2]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn on_print(&mut self, f: impl Fn(&str) + Send + Sync + 'static) {
        let f: OutputFn = Arc::new(f);
        let print = f.clone();
        self.engine.on_print(move |s| print(s));
        let debug = f.clone();
        self.engine
            .on_debug(move |s, source, pos| debug(&debug_line(s, source, pos)));
        self.runtime.set_print_output(Some(f));
    }

    /// Sends the lines of `progress(n)` bars to `f`, one line a call (the
    /// plain lines, never a live bar), instead of the print callback or
    /// stderr.
    pub fn on_progress_output(&mut self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.runtime.set_progress_output(Some(Arc::new(f)));
    }

    /// Compiles `source` (named `name` in error messages) once, to run it
    /// many times with [`Interpreter::run_ast`] or [`Interpreter::eval_ast`].
    ///
    /// ```
    /// use kiln::{Device, Interpreter, Tensor};
    /// let mut kiln = Interpreter::new();
    /// let step = kiln.compile("x = x * 2; x.sum().item()", "step.rhai").unwrap();
    /// kiln.set_var("x", Tensor::from_slice(&[1i64, 2], &[2], Device::Cpu)?);
    /// for want in [6, 12, 24] {
    ///     assert_eq!(kiln.eval_ast::<i64>(&step).unwrap(), want);
    /// }
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn compile(&self, source: &str, name: &str) -> Result<AST, ScriptError> {
        let mut ast = self
            .engine
            .compile_with_scope(&self.scope, source)
            .map_err(|e| ScriptError::from_parse(&e, Some(name)))?;
        ast.set_source(name);
        Ok(ast)
    }

    /// Runs `source` (named `name` in error messages) and returns its value.
    pub fn run(&mut self, source: &str, name: &str) -> Result<Dynamic, ScriptError> {
        let ast = self.compile(source, name)?;
        self.run_ast(&ast)
    }

    /// Runs a compiled script and returns its value; the functions it
    /// defines stay for later runs.
    pub fn run_ast(&mut self, ast: &AST) -> Result<Dynamic, ScriptError> {
        let _run = self.runtime.enter();
        let name = ast.source().map(str::to_string);
        let ast = if self.functions.iter_functions().next().is_some() {
            Cow::Owned(self.functions.merge(ast))
        } else {
            Cow::Borrowed(ast)
        };
        let r = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut self.scope, &ast)
            .map_err(|e| self.stopped(ScriptError::from_eval(*e, name.as_deref(), &self.engine)));
        self.functions = ast.clone_functions_only();
        r
    }

    /// Runs a script file (read by the host: the file gate is for scripts).
    pub fn run_file(&mut self, path: &Path) -> Result<Dynamic, ScriptError> {
        let name = path.display().to_string();
        let source = std::fs::read_to_string(path)
            .map_err(|e| ScriptError::new(ErrorKind::Io, format!("cannot read script: {e}"), Some(&name)))?;
        self.run(&source, &name)
    }

    /// Evaluates `source` and converts its value to `T`.
    pub fn eval<T: Clone + Send + Sync + 'static>(&mut self, source: &str) -> Result<T, ScriptError> {
        let v = self.run(source, "<eval>")?;
        cast(v, Some("<eval>"))
    }

    /// Runs a compiled script and converts its value to `T`.
    pub fn eval_ast<T: Clone + Send + Sync + 'static>(&mut self, ast: &AST) -> Result<T, ScriptError> {
        let v = self.run_ast(ast)?;
        cast(v, ast.source())
    }

    /// Calls the script function `name`, defined by an earlier run, with
    /// `args` (a tuple, or `()`), and converts its value to `T`.
    ///
    /// ```
    /// use kiln::{Interpreter, Tensor};
    /// let mut kiln = Interpreter::new();
    /// kiln.run("fn norm2(t) { (t * t).sum().item() }", "lib.rhai").unwrap();
    /// let t = Tensor::from_slice(&[3.0f32, 4.0], &[2], kiln::Device::Cpu)?;
    /// assert_eq!(kiln.call_fn::<f64>("norm2", (t,)).unwrap(), 25.0);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn call_fn<T: Clone + Send + Sync + 'static>(
        &mut self,
        name: &str,
        args: impl FuncArgs,
    ) -> Result<T, ScriptError> {
        let _run = self.runtime.enter();
        let r = self
            .engine
            .call_fn::<T>(&mut self.scope, &self.functions, name, args);
        r.map_err(|e| self.stopped(ScriptError::from_eval(*e, Some(name), &self.engine)))
    }

    /// A native op stopped by the time limit is that limit's error.
    fn stopped(&self, mut e: ScriptError) -> ScriptError {
        let control = self.runtime.control();
        if e.kind == ErrorKind::Terminated && !control.is_interrupted() && control.out_of_time() {
            if let Some(d) = self.limits.max_duration {
                let l = Limit::Duration(u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                e.message = l.to_string();
                e.kind = ErrorKind::Limit(l);
            }
        }
        e
    }
}

/// A `debug` line as Rhai writes it by default.
fn debug_line(text: &str, source: Option<&str>, pos: Position) -> String {
    let at = match (pos.line(), pos.position()) {
        (Some(l), Some(c)) => Some(format!("{l}:{c}")),
        (Some(l), None) => Some(l.to_string()),
        _ => None,
    };
    match (source, at) {
        (Some(s), Some(at)) => format!("{s} @ {at} | {text}"),
        (Some(s), None) => format!("{s} | {text}"),
        (None, Some(at)) => format!("{at} | {text}"),
        (None, None) => text.to_string(),
    }
}

fn cast<T: Clone + Send + Sync + 'static>(v: Dynamic, source: Option<&str>) -> Result<T, ScriptError> {
    let type_name = v.type_name();
    v.try_cast::<T>().ok_or_else(|| {
        ScriptError::new(
            ErrorKind::ResultType,
            format!(
                "expected a {} result, got {type_name}",
                std::any::type_name::<T>()
            ),
            source,
        )
    })
}
