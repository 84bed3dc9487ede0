//! How the script API is registered: [`Api`] puts each function on a Rhai
//! engine (or a static module such as `cuda::`) together with its one-line
//! doc and its parameter names, in Rhai's own function metadata (what
//! `Engine::gen_fn_metadata_to_json` and `Engine::gen_fn_signatures` read), and
//! the [`catalog`] lists every kiln function by [`Category`] with its doc and
//! signature, for the REPL's `:help`.
//!
//! ```ignore
//! let mut api = Api::new(engine, Category::Nn);
//! api.doc("softmax along dim: exp(x) normalized to sum 1")
//!     .func("softmax", ["t", "dim"], |t: Tensor, d: INT| ok(t.softmax(d)));
//! ```
//!
//! The parameter types shown come from the closure itself, so they cannot
//! drift from it, and the number of names must match its arity (a compile
//! error otherwise). The metadata is written once, when an engine is built:
//! nothing here is on the call path. The catalog is filled once per process,
//! by registering the API on a scratch engine while recording.

use rhai::{
    Dynamic, Engine, EvalAltResult, FuncRegistration, Module, NativeCallContext, Position, RhaiFunc,
    RhaiNativeFunc, Shared,
};
use std::any::{type_name, TypeId};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

/// The groups the script API is listed in (`:help`), in listing order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// `tensor`, `zeros`, `arange`, `rand`, ...
    Creation,
    /// `.shape`, `.dtype`, `size`, `numel`, ...
    Properties,
    /// `+ - * / % ** @`, comparisons, `+=`, indexing.
    Operators,
    /// `reshape`, `transpose`, `narrow`, `cat`, ...
    Views,
    /// `index_select`, `gather`, `index_add`, `scatter_add`.
    Indexing,
    /// Elementwise math: `exp`, `relu`, `pow`, `clamp`, `where`, matmul.
    Math,
    /// `sum`, `mean`, `max`, `argmax`, `var`, ...
    Reductions,
    /// `inv`, `solve`, `svd`, `eigh`, ... and the `linalg::` module.
    Linalg,
    /// `softmax`, `log_softmax`, `layer_norm`.
    Nn,
    /// Convolution, pooling, batch/group norm, `interpolate`.
    Cnn,
    /// `cross_entropy` and the fused optimizer steps.
    Training,
    /// `requires_grad`, `backward`, `no_grad`, ...
    Autograd,
    /// `item`, `to_list`, dtype and device moves, in-place writes.
    Conversions,
    /// `seed`, default device, `time`, `args`.
    Runtime,
    /// The `cuda::` module.
    Cuda,
    /// The `dist::` module and the gradient `Reducer`.
    Dist,
    /// CSV, `.npy` and safetensors files.
    Io,
    /// The `progress(n)` bar.
    Progress,
}

impl Category {
    /// Every category, in listing order.
    pub const ALL: [Category; 18] = [
        Category::Creation,
        Category::Properties,
        Category::Operators,
        Category::Views,
        Category::Indexing,
        Category::Math,
        Category::Reductions,
        Category::Linalg,
        Category::Nn,
        Category::Cnn,
        Category::Training,
        Category::Autograd,
        Category::Conversions,
        Category::Runtime,
        Category::Cuda,
        Category::Dist,
        Category::Io,
        Category::Progress,
    ];

    /// The category's name as `:help` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Category::Creation => "creation",
            Category::Properties => "properties",
            Category::Operators => "operators",
            Category::Views => "views",
            Category::Indexing => "indexing",
            Category::Math => "math",
            Category::Reductions => "reductions",
            Category::Linalg => "linalg",
            Category::Nn => "nn",
            Category::Cnn => "cnn",
            Category::Training => "training",
            Category::Autograd => "autograd",
            Category::Conversions => "conversions",
            Category::Runtime => "runtime",
            Category::Cuda => "cuda",
            Category::Dist => "dist",
            Category::Io => "io",
            Category::Progress => "progress",
        }
    }
}

/// One registered function (one overload) in the [`catalog`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its group.
    pub category: Category,
    /// The name Rhai knows it by: `zeros`, `cuda::synchronize`, `+`,
    /// `get$shape` (a property), `index$get$` (an indexer).
    pub name: String,
    /// Its one-line doc.
    pub doc: &'static str,
    /// Its signature, e.g. `softmax(t: Tensor, dim: i64) -> Tensor`.
    pub signature: String,
}

impl Entry {
    /// The name as a script writes it: `.shape` for a property, `t[i]` and
    /// `t[i] = x` for the indexers, else the name itself.
    pub fn display_name(&self) -> String {
        display_name(&self.name)
    }
}

/// A Rhai function name as a script writes it (see [`Entry::display_name`]).
pub fn display_name(name: &str) -> String {
    if name == INDEX_GET {
        "t[i]".to_string()
    } else if name == INDEX_SET {
        "t[i] = x".to_string()
    } else if let Some(p) = name.strip_prefix(GET).or_else(|| name.strip_prefix(SET)) {
        format!(".{p}")
    } else {
        name.to_string()
    }
}

/// Rhai's names for property getters and setters (`get$name`, `set$name`)
/// and indexers.
const GET: &str = "get$";
const SET: &str = "set$";
const INDEX_GET: &str = "index$get$";
const INDEX_SET: &str = "index$set$";

thread_local! {
    /// Where [`Api`] records its registrations while [`catalog`] is filled.
    static RECORDING: RefCell<Option<Vec<Entry>>> = const { RefCell::new(None) };
}

static CATALOG: OnceLock<Vec<Entry>> = OnceLock::new();

thread_local! {
    /// The module that collects the engine-level functions while
    /// [`collect`] runs: one global module for all of them.
    static PENDING: RefCell<Option<Module>> = const { RefCell::new(None) };
}

/// Runs `register`, which makes [`Api`]s on `engine`, and installs the
/// functions they registered as one global module of `engine` (a global
/// module takes functions as Rust closures wrapped for the profiler, which
/// the engine's own namespace does not).
pub fn collect(engine: &mut Engine, register: impl FnOnce(&mut Engine)) {
    let outer = PENDING.with(|p| p.borrow_mut().replace(Module::new()));
    register(engine);
    let module = PENDING.with(|p| std::mem::replace(&mut *p.borrow_mut(), outer));
    if let Some(module) = module {
        engine.register_global_module(module.into());
    }
}

/// A native function's call signature, as Rhai stores it.
type Native = dyn Fn(Option<NativeCallContext>, &mut [&mut Dynamic]) -> Result<Dynamic, Box<EvalAltResult>>
    + Send
    + Sync;

/// `inner` as a call that is a profiler span named `name` while a profile
/// records on the calling thread, its errors placed as `place` says.
fn span_around(inner: Shared<Native>, name: Arc<str>, place: Place) -> Shared<Native> {
    Shared::new(move |ctx: Option<NativeCallContext>, args: &mut [&mut Dynamic]| {
        let _span = crate::profiler::span(|| name.clone());
        crate::core::capture::note_call(&name);
        let Place::Fill { inner_context } = place else {
            return inner(ctx, args);
        };
        let pos = ctx.as_ref().map_or(Position::NONE, |c| c.call_position());
        inner(if inner_context { ctx } else { None }, args).map_err(|mut e| {
            if e.position().is_none() {
                e.set_position(pos);
            }
            e
        })
    })
}

/// Whether a wrapped function's errors get the call's script position from
/// the wrapper. Rhai fills it in for functions called unqualified, not for
/// module functions (`cuda::graph(...)`): those take a call context to know
/// it, and pass it on when the function itself takes one.
#[derive(Clone, Copy)]
enum Place {
    /// Rhai fills the position in.
    Rhai,
    /// The wrapper does.
    Fill { inner_context: bool },
}

/// `func` with every call a profiler span named `name` (and, in a module,
/// its errors placed at the call).
fn profiled(func: RhaiFunc, name: Arc<str>, in_module: bool) -> RhaiFunc {
    let place = |has_context: bool| {
        if in_module {
            Place::Fill {
                inner_context: has_context,
            }
        } else {
            Place::Rhai
        }
    };
    match func {
        RhaiFunc::Pure {
            func,
            has_context,
            is_pure,
            is_volatile,
        } => RhaiFunc::Pure {
            func: span_around(func, name, place(has_context)),
            has_context: has_context || in_module,
            is_pure,
            is_volatile,
        },
        RhaiFunc::Method {
            func,
            has_context,
            is_pure,
            is_volatile,
        } => RhaiFunc::Method {
            func: span_around(func, name, place(has_context)),
            has_context: has_context || in_module,
            is_pure,
            is_volatile,
        },
        other => other,
    }
}

/// Every function of the kiln script API, in registration order (one entry
/// per overload), with its category, doc and signature. Filled on first use
/// by registering the API on a scratch engine.
pub fn catalog() -> &'static [Entry] {
    CATALOG.get_or_init(|| {
        RECORDING.with(|r| *r.borrow_mut() = Some(Vec::new()));
        let mut engine = Engine::new_raw();
        super::register_api(&mut engine, &Arc::new(super::Runtime::default()));
        RECORDING.with(|r| r.borrow_mut().take()).unwrap_or_default()
    })
}

/// Where an [`Api`] registers.
enum Target<'a> {
    Engine(&'a mut Engine),
    Module {
        module: &'a mut Module,
        /// The module's name (`cuda`), for the catalog.
        name: &'static str,
        /// The engine whose type names the signatures use.
        types: &'a Engine,
    },
}

/// Registers documented functions of one [`Category`] on an engine or a
/// static module.
pub struct Api<'a> {
    target: Target<'a>,
    category: Category,
    record: bool,
    /// Engine-level functions registered outside [`collect`].
    own: Option<Module>,
}

impl Drop for Api<'_> {
    fn drop(&mut self) {
        if let (Target::Engine(engine), Some(module)) = (&mut self.target, self.own.take()) {
            engine.register_global_module(module.into());
        }
    }
}

impl<'a> Api<'a> {
    /// Registers on `engine`, under `category`.
    pub fn new(engine: &'a mut Engine, category: Category) -> Api<'a> {
        Api::with_target(Target::Engine(engine), category)
    }

    /// Registers into the static module `module`, which the engine `types`
    /// will serve as `name::`, under `category`.
    pub fn module(
        module: &'a mut Module,
        name: &'static str,
        types: &'a Engine,
        category: Category,
    ) -> Api<'a> {
        Api::with_target(Target::Module { module, name, types }, category)
    }

    fn with_target(target: Target<'a>, category: Category) -> Api<'a> {
        let record = RECORDING.with(|r| r.borrow().is_some());
        // outside `collect`, engine-level functions go into a module of
        // this Api's own, installed when it is dropped
        let own =
            (matches!(target, Target::Engine(_)) && PENDING.with(|p| p.borrow().is_none())).then(Module::new);
        Api {
            target,
            category,
            record,
            own,
        }
    }

    /// Registers the next functions under `category`.
    pub fn category(&mut self, category: Category) -> &mut Self {
        self.category = category;
        self
    }

    /// Starts a registration documented by `doc`, one line:
    /// `api.doc("...").func(name, params, f)`.
    pub fn doc<'b>(&'b mut self, doc: &'static str) -> Doc<'b, 'a> {
        Doc { api: self, doc }
    }

    fn register<A: 'static, const N: usize, const X: bool, R, const F: bool, FUNC>(
        &mut self,
        name: &str,
        doc: &'static str,
        params: [&'static str; N],
        volatile: bool,
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, N, X, R, F> + Send + Sync + 'static,
    {
        let types = match &self.target {
            Target::Engine(e) => &**e,
            Target::Module { types, .. } => *types,
        };
        let mut info: Vec<String> = params
            .iter()
            .zip(FUNC::param_names())
            .map(|(p, ty)| format!("{p}: {}", script_type(types, ty)))
            .collect();
        let returns = (TypeId::of::<R>() != TypeId::of::<()>())
            .then(|| script_type(types, type_name::<R>()).into_owned());
        let qualified = match &self.target {
            Target::Engine(_) => name.to_string(),
            Target::Module { name: m, .. } => format!("{m}::{name}"),
        };
        if self.record {
            let arrow = returns.as_ref().map_or(String::new(), |r| format!(" -> {r}"));
            let signature = format!("{qualified}({}){arrow}", info.join(", "));
            RECORDING.with(|r| {
                if let Some(list) = r.borrow_mut().as_mut() {
                    list.push(Entry {
                        category: self.category,
                        name: qualified.clone(),
                        doc,
                        signature,
                    });
                }
            });
        }
        // Rhai takes the return type as the last item of the parameter list.
        info.extend(returns);
        let reg = FuncRegistration::new(name)
            .with_comments([format!("/// {doc}")])
            .with_params_info(info);
        // Rhai's default: pure (callable on constants) but for setters
        let is_pure = !((N == 3 && name == INDEX_SET) || (N == 2 && name.starts_with(SET)));
        let in_module = matches!(self.target, Target::Module { .. });
        let func = profiled(
            f.into_rhai_function(is_pure, volatile),
            qualified.into(),
            in_module,
        );
        let types = FUNC::param_types();
        match (&mut self.target, self.own.as_mut()) {
            (Target::Engine(_), Some(own)) => {
                reg.in_global_namespace().set_into_module_raw(own, types, func);
            }
            (Target::Engine(_), None) => PENDING.with(|p| {
                if let Some(m) = p.borrow_mut().as_mut() {
                    reg.in_global_namespace().set_into_module_raw(m, types, func);
                }
            }),
            (Target::Module { module, .. }, _) => {
                reg.set_into_module_raw(module, types, func);
            }
        }
    }
}

/// A registration with its doc, waiting for its name, parameter names
/// and function ([`Api::doc`]).
#[must_use = "a doc registers nothing until .func(), .volatile(), .get(), ... is called"]
pub struct Doc<'b, 'a> {
    api: &'b mut Api<'a>,
    doc: &'static str,
}

impl Doc<'_, '_> {
    /// Registers `f` as the script function `name`, with one name per
    /// parameter (a `NativeCallContext` is not one).
    pub fn func<A: 'static, const N: usize, const X: bool, R, const F: bool, FUNC>(
        self,
        name: &str,
        params: [&'static str; N],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, N, X, R, F> + Send + Sync + 'static,
    {
        self.api.register(name, self.doc, params, false, f);
    }

    /// As [`Doc::func`], for a function with effects (random draws, devices,
    /// clocks, files): registered as volatile, never evaluated ahead of time.
    pub fn volatile<A: 'static, const N: usize, const X: bool, R, const F: bool, FUNC>(
        self,
        name: &str,
        params: [&'static str; N],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, N, X, R, F> + Send + Sync + 'static,
    {
        self.api.register(name, self.doc, params, true, f);
    }

    /// Registers the getter of property `name` (`t.name`).
    pub fn get<A: 'static, const X: bool, R, const F: bool, FUNC>(
        self,
        name: &str,
        params: [&'static str; 1],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, 1, X, R, F> + Send + Sync + 'static,
    {
        self.api
            .register(&format!("{GET}{name}"), self.doc, params, false, f);
    }

    /// Registers the setter of property `name` (`t.name = v`).
    pub fn set<A: 'static, const X: bool, R, const F: bool, FUNC>(
        self,
        name: &str,
        params: [&'static str; 2],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, 2, X, R, F> + Send + Sync + 'static,
    {
        self.api
            .register(&format!("{SET}{name}"), self.doc, params, false, f);
    }

    /// Registers an indexer getter (`t[i]`).
    pub fn index_get<A: 'static, const X: bool, R, const F: bool, FUNC>(
        self,
        params: [&'static str; 2],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, 2, X, R, F> + Send + Sync + 'static,
    {
        self.api.register(INDEX_GET, self.doc, params, false, f);
    }

    /// Registers an indexer setter (`t[i] = v`).
    pub fn index_set<A: 'static, const X: bool, R, const F: bool, FUNC>(
        self,
        params: [&'static str; 3],
        f: FUNC,
    ) where
        R: Clone + Send + Sync + 'static,
        FUNC: RhaiNativeFunc<A, 3, X, R, F> + Send + Sync + 'static,
    {
        self.api.register(INDEX_SET, self.doc, params, false, f);
    }
}

/// A Rust type name as scripts know it: the name a type was registered
/// under (`Tensor`), Rhai's short names (`string`, `array`, `map`, `Fn`),
/// else the last segment of its path (`Dynamic`).
fn script_type<'e>(engine: &'e Engine, rust: &'e str) -> Cow<'e, str> {
    let short = |ty: &'e str| -> &'e str {
        let mapped = engine.map_type_name(ty);
        if mapped.contains('<') {
            mapped
        } else {
            mapped.rsplit("::").next().unwrap_or(mapped)
        }
    };
    match rust.strip_prefix("&mut ") {
        Some(inner) => Cow::Owned(format!("&mut {}", short(inner))),
        None => Cow::Borrowed(short(rust)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The functions in the metadata of an engine with kiln's API and no
    /// Rhai standard library, with `module::` names for static modules.
    fn metadata() -> Vec<(String, Value)> {
        let mut engine = Engine::new_raw();
        let _runtime = crate::register(&mut engine);
        let json: Value = serde_json::from_str(&engine.gen_fn_metadata_to_json(true).unwrap()).unwrap();
        let mut out = Vec::new();
        for f in json["functions"].as_array().into_iter().flatten() {
            out.push((f["name"].as_str().unwrap().to_string(), f.clone()));
        }
        for (m, module) in json["modules"].as_object().into_iter().flatten() {
            for f in module["functions"].as_array().into_iter().flatten() {
                out.push((format!("{m}::{}", f["name"].as_str().unwrap()), f.clone()));
            }
        }
        out
    }

    #[test]
    fn every_function_has_a_doc_and_named_parameters() {
        let functions = metadata();
        assert!(functions.len() > 150, "{}", functions.len());
        for (name, f) in &functions {
            let docs = f["docComments"].as_array().cloned().unwrap_or_default();
            let doc = docs.first().and_then(Value::as_str).unwrap_or("");
            assert!(
                doc.trim_start_matches('/').trim().len() > 3,
                "{name} has no doc: {f}"
            );
            let n = f["numParams"].as_u64().unwrap() as usize;
            let params = f["params"].as_array().cloned().unwrap_or_default();
            assert_eq!(params.len(), n, "{name}: {f}");
            for p in &params {
                let named = p["name"].as_str().is_some_and(|s| !s.is_empty());
                assert!(named && p["type"].is_string(), "{name}: unnamed parameter in {f}");
            }
        }
        // the catalog holds the same functions, each in a category
        let catalog = catalog();
        assert_eq!(catalog.len(), functions.len());
        for (name, _) in &functions {
            assert!(
                catalog.iter().any(|e| &e.name == name),
                "{name} is not in the catalog"
            );
        }
    }

    #[test]
    fn signatures_use_script_names_and_types() {
        let find = |sig: &str| catalog().iter().find(|e| e.signature == sig);
        let softmax = find("softmax(t: Tensor, dim: i64) -> Tensor").expect("softmax");
        assert_eq!(softmax.category, Category::Nn);
        assert!(find("cuda::synchronize()").is_some());
        let shape = catalog().iter().find(|e| e.name == "get$shape").unwrap();
        assert_eq!(shape.signature, "get$shape(t: &mut Tensor) -> Dynamic");
        let exp = catalog().iter().find(|e| e.name == "exp").unwrap();
        assert_eq!(exp.doc, crate::core::op::UnaryOp::Exp.doc());
        assert_eq!(display_name("get$shape"), ".shape");
        assert_eq!(display_name("index$set$"), "t[i] = x");
        // every category has functions
        for c in Category::ALL {
            assert!(catalog().iter().any(|e| e.category == c), "{}", c.name());
        }
    }
}
