//! The embedding API: the [`Interpreter`] that runs scripts, its
//! [`Builder`] and sandbox [`Limits`], the typed [`ScriptError`], and
//! [`register`] for hosts that bring their own Rhai engine.
//!
//! An interpreter owns a Rhai engine with the whole kiln API, a scope that
//! persists between runs (variables, and the functions scripts define), and
//! its [`Runtime`] (default device, random generator, file gate, memory
//! budget). It is `Send + Sync`; several interpreters run on several threads
//! at once, each with its own state.

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
pub struct InterruptHandle(Arc<crate::tensor::control::RunControl>);

impl InterruptHandle {
    /// Asks the run in progress to stop.
    pub fn interrupt(&self) {
        self.0.interrupt();
    }
}

use crate::error::Error;
use crate::script::Runtime;
use crate::tensor::{Device, MemoryBudget};
use rhai::{Dynamic, Engine, FuncArgs, RhaiNativeFunc, Scope, AST};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// Puts kiln on an engine the host already has, with [`Builder::new`]'s
/// settings but files allowed (as the host's own engine would read them)
/// and the default device; see [`Builder::register`] for what it changes on
/// the engine and to configure it.
///
/// ```
/// let mut engine = rhai::Engine::new();
/// let _runtime = kiln::register(&mut engine);
/// let n: i64 = engine.eval("zeros([3, 4]).numel").unwrap();
/// assert_eq!(n, 12);
/// ```
pub fn register(engine: &mut Engine) -> Arc<Runtime> {
    let runtime = Arc::new(Runtime::new(None, true));
    crate::script::register_api(engine, &runtime);
    crate::script::stdlib::install(engine, &runtime, None);
    runtime
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
        match b.build() {
            Ok(i) => i,
            // without a device or module names to check, building cannot
            // fail; keep a bare engine rather than panic if it ever does
            Err(_) => Interpreter::from_parts(Engine::new(), Arc::new(Runtime::default()), Limits::default()),
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

    /// Sends the output of `print` to `f` instead of stdout.
    pub fn on_print(&mut self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.engine.on_print(f);
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
        let r = self.engine.call_fn::<T>(&mut self.scope, &self.functions, name, args);
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
