//! [`Builder`]: how an [`Interpreter`] is set up (default device, sandbox
//! [`Limits`], stdlib modules, file access), and how kiln is put on a Rhai
//! engine the host already has ([`Builder::register`]).

use super::Interpreter;
use crate::core::error::Result;
use crate::core::{Device, MemoryBudget};
use crate::script::{register_api, stdlib, Runtime};
use rhai::Engine;
use std::sync::Arc;

/// The call depth an interpreter allows when [`Limits::max_call_depth`] is unset.
pub const DEFAULT_CALL_DEPTH: usize = 256;

/// Sandbox limits for the scripts an engine runs; `None` leaves a limit off
/// (the call depth then is [`DEFAULT_CALL_DEPTH`]). Each limit, when hit,
/// stops the script with [`ErrorKind::Limit`](crate::ErrorKind::Limit)
/// naming it and its value; the engine stays usable.
///
/// ```
/// let limits = kiln::Limits {
///     max_operations: Some(1_000_000),
///     max_memory: Some(64 << 20),
///     ..kiln::Limits::default()
/// };
/// let kiln = kiln::Interpreter::builder().limits(limits).build()?;
/// assert_eq!(kiln.limits().max_memory, Some(64 << 20));
/// # Ok::<(), kiln::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Rhai operations per run (each expression, statement, call or loop
    /// iteration counts one); `Some(0)` is no limit, as in Rhai.
    pub max_operations: Option<u64>,
    /// Nested function calls (script functions and recursion).
    pub max_call_depth: Option<usize>,
    /// Bytes of one string; `Some(0)` is no limit.
    pub max_string_size: Option<usize>,
    /// Items of one array; `Some(0)` is no limit.
    pub max_array_size: Option<usize>,
    /// Entries of one object map; `Some(0)` is no limit.
    pub max_map_size: Option<usize>,
    /// Bytes of tensor storage that the engine's scripts may hold at once,
    /// on any device ([`crate::core::memory`]).
    pub max_memory: Option<usize>,
    /// Wall-clock time of one run. Checked between Rhai operations and every
    /// few milliseconds inside long native ops (a sum over a huge expanded
    /// view, a long matmul), which then stop with
    /// [`Limit::Duration`](crate::Limit::Duration); on a GPU no new work is
    /// queued past it (work already queued finishes).
    pub max_duration: Option<std::time::Duration>,
}

impl Limits {
    /// A starting point for untrusted scripts: 50 million operations, 64
    /// nested calls, strings of 1 MiB, arrays of 1 million items, maps of
    /// 100 000 entries, 1 GiB of tensors, 60 seconds per run.
    pub fn sandbox() -> Limits {
        Limits {
            max_operations: Some(50_000_000),
            max_call_depth: Some(64),
            max_string_size: Some(1 << 20),
            max_array_size: Some(1_000_000),
            max_map_size: Some(100_000),
            max_memory: Some(1 << 30),
            max_duration: Some(std::time::Duration::from_secs(60)),
        }
    }

    /// Sets Rhai's limits on `engine` (the memory budget and the time limit
    /// live in the runtime); those left `None` are not touched. The engine
    /// also checks the runtime's control between operations, so that an
    /// interrupt or the time limit stops Rhai code as well as native ops.
    fn apply(&self, engine: &mut Engine, runtime: &Arc<Runtime>) {
        let control = runtime.control().clone();
        let limit = self
            .max_duration
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        engine.on_progress(move |_| {
            if control.is_interrupted() {
                Some(rhai::Dynamic::from("interrupted"))
            } else if control.out_of_time() {
                Some(rhai::Dynamic::from(crate::Limit::Duration(limit.unwrap_or(0))))
            } else {
                None
            }
        });
        if let Some(n) = self.max_operations {
            engine.set_max_operations(n);
        }
        if let Some(n) = self.max_call_depth {
            engine.set_max_call_levels(n);
        }
        if let Some(n) = self.max_string_size {
            engine.set_max_string_size(n);
        }
        if let Some(n) = self.max_array_size {
            engine.set_max_array_size(n);
        }
        if let Some(n) = self.max_map_size {
            engine.set_max_map_size(n);
        }
    }
}

/// Sets up an [`Interpreter`]: default device, limits, stdlib modules and
/// file access. File access is off unless [`Builder::allow_files`] turns it on.
///
/// ```
/// use kiln::{Device, Interpreter};
/// let mut kiln = Interpreter::builder()
///     .device(Device::Cpu)
///     .max_operations(100_000)
///     .stdlib(["nn"])
///     .build()?;
/// let v: i64 = kiln.eval("arange(5).sum().item()").unwrap();
/// assert_eq!(v, 10);
/// let e = kiln.run("loop {}", "spin.rhai").unwrap_err();
/// assert_eq!(e.limit(), Some(kiln::Limit::Operations(100_000)));
/// assert!(kiln.run("load_npy(\"x.npy\")", "io.rhai").is_err());   // files are off
/// # Ok::<(), kiln::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    device: Option<Device>,
    limits: Limits,
    stdlib: Option<Vec<String>>,
    allow_files: bool,
}

impl Builder {
    /// The defaults: device `cuda` when a GPU is usable, else `cpu`; no
    /// limits; every stdlib module; no file access.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Creates tensors on `device` by default (checked by [`Builder::build`]).
    pub fn device(mut self, device: Device) -> Builder {
        self.device = Some(device);
        self
    }

    /// Sets all limits at once.
    pub fn limits(mut self, limits: Limits) -> Builder {
        self.limits = limits;
        self
    }

    /// Sets [`Limits::max_operations`].
    pub fn max_operations(mut self, n: u64) -> Builder {
        self.limits.max_operations = Some(n);
        self
    }

    /// Sets [`Limits::max_call_depth`].
    pub fn max_call_depth(mut self, n: usize) -> Builder {
        self.limits.max_call_depth = Some(n);
        self
    }

    /// Sets [`Limits::max_string_size`].
    pub fn max_string_size(mut self, n: usize) -> Builder {
        self.limits.max_string_size = Some(n);
        self
    }

    /// Sets [`Limits::max_array_size`].
    pub fn max_array_size(mut self, n: usize) -> Builder {
        self.limits.max_array_size = Some(n);
        self
    }

    /// Sets [`Limits::max_map_size`].
    pub fn max_map_size(mut self, n: usize) -> Builder {
        self.limits.max_map_size = Some(n);
        self
    }

    /// Sets [`Limits::max_duration`].
    pub fn max_duration(mut self, limit: std::time::Duration) -> Builder {
        self.limits.max_duration = Some(limit);
        self
    }

    /// Sets [`Limits::max_memory`], in bytes.
    pub fn max_memory(mut self, bytes: usize) -> Builder {
        self.limits.max_memory = Some(bytes);
        self
    }

    /// Serves only these stdlib modules to `import` (names from
    /// [`STDLIB_MODULES`](crate::script::STDLIB_MODULES); others fail the build).
    pub fn stdlib<I, S>(mut self, modules: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stdlib = Some(modules.into_iter().map(Into::into).collect());
        self
    }

    /// Serves no stdlib module.
    pub fn no_stdlib(self) -> Builder {
        self.stdlib(Vec::<String>::new())
    }

    /// Lets scripts read and write files (`load_*`, `save_*`, `import` of
    /// `.rhai` files) or not (the default); [`Interpreter::set_allow_files`]
    /// changes it later.
    pub fn allow_files(mut self, allowed: bool) -> Builder {
        self.allow_files = allowed;
        self
    }

    /// Whether scripts may read and write files.
    pub(crate) fn files_allowed(&self) -> bool {
        self.allow_files
    }

    fn runtime(&self) -> Result<Arc<Runtime>> {
        if let Some(names) = &self.stdlib {
            stdlib::check_names(names)?;
        }
        let budget = self.limits.max_memory.map(|n| Arc::new(MemoryBudget::new(n)));
        let runtime = Runtime::new(budget, self.allow_files).with_max_duration(self.limits.max_duration);
        if let Some(d) = self.device {
            runtime.set_device(d)?;
        }
        Ok(Arc::new(runtime))
    }

    /// The interpreter; fails when the device is unusable or a stdlib module
    /// name is unknown.
    pub fn build(self) -> Result<Interpreter> {
        let runtime = self.runtime()?;
        let mut engine = Engine::new();
        engine.set_max_call_levels(DEFAULT_CALL_DEPTH);
        engine.set_max_expr_depths(256, 128);
        // Rhai's own print and debug panic when stdout or stderr is closed;
        // a host's process must not abort over its script's output
        engine.on_print(|s| {
            use std::io::Write;
            let _ = writeln!(std::io::stdout().lock(), "{s}");
        });
        engine.on_debug(|s, source, pos| {
            use std::io::Write;
            let _ = writeln!(std::io::stdout().lock(), "{}", super::debug_line(s, source, pos));
        });
        register_api(&mut engine, &runtime);
        stdlib::install(&mut engine, &runtime, self.stdlib.as_deref());
        self.limits.apply(&mut engine, &runtime);
        Ok(Interpreter::from_parts(engine, runtime, self.limits))
    }

    /// Puts kiln on an engine the host already has, with this builder's
    /// settings, and returns the [`Runtime`] its functions share.
    ///
    /// It registers the whole script API, turns Rhai's optimizer off (it
    /// would turn `x = x + y` into an in-place `x += y`), sets the limits
    /// that are set (the memory budget applies while the host holds
    /// [`Runtime::enter`]'s scope around its `eval` calls), and, unless
    /// [`Builder::no_stdlib`], replaces the engine's module resolver with
    /// one serving the stdlib modules and gated `.rhai` files. File access
    /// is off unless [`Builder::allow_files`] turned it on.
    ///
    /// Hold [`Runtime::enter`]'s scope around the engine's `eval` calls: it
    /// also applies this engine's grad mode and TF32 setting to the thread
    /// and keeps what the scripts changed of them out of the thread's.
    /// `debug` and `print` follow the engine's own `on_debug` and
    /// `on_print`; progress bars draw on stderr unless
    /// [`Runtime::set_progress_output`] gives them a callback.
    ///
    /// ```
    /// let mut engine = rhai::Engine::new();
    /// let runtime = kiln::Builder::new().device(kiln::Device::Cpu).register(&mut engine)?;
    /// let _run = runtime.enter();
    /// let v: f64 = engine.eval("(ones([2, 2]) @ ones([2, 2])).sum().item()").unwrap();
    /// assert_eq!(v, 8.0);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn register(&self, engine: &mut Engine) -> Result<Arc<Runtime>> {
        let runtime = self.runtime()?;
        register_api(engine, &runtime);
        if self.stdlib.as_ref().is_none_or(|n| !n.is_empty()) {
            stdlib::install(engine, &runtime, self.stdlib.as_deref());
        }
        self.limits.apply(engine, &runtime);
        Ok(runtime)
    }
}
