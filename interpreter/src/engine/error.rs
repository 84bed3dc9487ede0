//! [`ScriptError`]: why a script failed ([`ErrorKind`], with the typed
//! [`Error`] of a failed tensor op or the [`Limit`] that stopped it), its
//! message, and where in which source it happened.

use crate::core::error::Error;
use rhai::{Engine, EvalAltResult, ParseError, Position};
use std::fmt;

/// A sandbox limit, with the value it was set to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// At most this many Rhai operations per run.
    Operations(u64),
    /// At most this many nested function calls.
    CallDepth(usize),
    /// Strings of at most this many bytes.
    StringSize(usize),
    /// Arrays of at most this many items.
    ArraySize(usize),
    /// Object maps of at most this many entries.
    MapSize(usize),
    /// At most this many bytes of live tensor storage per engine.
    Memory(usize),
    /// At most this many variables in scope.
    Variables(usize),
    /// At most this many modules imported per run.
    Modules(usize),
    /// At most this many milliseconds of wall-clock time per run.
    Duration(u64),
}

impl Limit {
    /// The limit's name, as [`Limits`](crate::Limits) spells it (`"max_operations"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Limit::Operations(_) => "max_operations",
            Limit::CallDepth(_) => "max_call_depth",
            Limit::StringSize(_) => "max_string_size",
            Limit::ArraySize(_) => "max_array_size",
            Limit::MapSize(_) => "max_map_size",
            Limit::Memory(_) => "max_memory",
            Limit::Variables(_) => "max_variables",
            Limit::Modules(_) => "max_modules",
            Limit::Duration(_) => "max_duration",
        }
    }

    /// The value the limit was set to.
    pub fn value(self) -> u64 {
        match self {
            Limit::Operations(n) | Limit::Duration(n) => n,
            Limit::CallDepth(n)
            | Limit::StringSize(n)
            | Limit::ArraySize(n)
            | Limit::MapSize(n)
            | Limit::Memory(n)
            | Limit::Variables(n)
            | Limit::Modules(n) => n as u64,
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Limit::Operations(n) => format!("the script ran more than {n} operations"),
            Limit::CallDepth(n) => format!("more than {n} nested function calls"),
            Limit::StringSize(n) => format!("a string longer than {n} bytes"),
            Limit::ArraySize(n) => format!("an array of more than {n} items"),
            Limit::MapSize(n) => format!("a map of more than {n} entries"),
            Limit::Memory(n) => format!("more than {n} bytes of tensors"),
            Limit::Variables(n) => format!("more than {n} variables"),
            Limit::Modules(n) => format!("more than {n} modules imported"),
            Limit::Duration(n) => format!("the run took more than {n} ms"),
        };
        write!(f, "limit {} = {} exceeded: {what}", self.name(), self.value())
    }
}

/// Why a script failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The source does not parse.
    Syntax,
    /// A tensor op, a conversion or a file access failed (a script may catch
    /// these; this one was not caught). Boxed to keep results small.
    Tensor(Box<Error>),
    /// A sandbox limit stopped the script (scripts cannot catch these, except
    /// [`Limit::Memory`], which is a tensor op's error like out of memory).
    Limit(Limit),
    /// Any other failure at run time: a `throw`, an unknown variable or
    /// function, arguments of the wrong types.
    Runtime,
    /// The run was stopped by the host: [`InterruptHandle::interrupt`](crate::InterruptHandle::interrupt),
    /// Ctrl-C in the REPL, or an `on_progress` callback of its own.
    Terminated,
    /// The script's value is not of the type the host asked for.
    ResultType,
    /// The script file cannot be read.
    Io,
}

/// A script failure: what kind, the message, and where in which source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptError {
    /// Why it failed.
    pub kind: ErrorKind,
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
    /// An error of `kind` with no position.
    pub(crate) fn new(kind: ErrorKind, message: String, source: Option<&str>) -> Self {
        ScriptError {
            kind,
            message,
            source: source.map(str::to_string),
            line: None,
            column: None,
        }
    }

    fn at(mut self, pos: Position) -> Self {
        self.line = pos.line();
        self.column = pos.position();
        self
    }

    /// A compile error.
    pub(crate) fn from_parse(e: &ParseError, source: Option<&str>) -> Self {
        ScriptError::new(ErrorKind::Syntax, e.err_type().to_string(), source).at(e.position())
    }

    /// A run-time error; `engine` tells the limits' values.
    pub(crate) fn from_eval(err: EvalAltResult, source: Option<&str>, engine: &Engine) -> Self {
        let kind = classify(root(&err), engine);
        let mut err = err;
        let pos = err.take_position();
        let message = match (&kind, &err) {
            (ErrorKind::Limit(l), _) if !matches!(l, Limit::Memory(_)) => l.to_string(),
            (_, EvalAltResult::ErrorRuntime(v, _)) if v.is_string() => v.to_string(),
            _ => err.to_string(),
        };
        ScriptError::new(kind, message, source).at(pos)
    }

    /// The limit that stopped the script, if one did.
    pub fn limit(&self) -> Option<Limit> {
        match self.kind {
            ErrorKind::Limit(l) => Some(l),
            _ => None,
        }
    }

    /// The typed error of the tensor op that failed, if one did.
    pub fn tensor_error(&self) -> Option<&Error> {
        match &self.kind {
            ErrorKind::Tensor(e) => Some(&**e),
            _ => None,
        }
    }
}

/// The innermost cause of an error raised inside function calls or modules.
fn root(err: &EvalAltResult) -> &EvalAltResult {
    match err {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _) | EvalAltResult::ErrorInModule(_, inner, _) => {
            root(inner)
        }
        e => e,
    }
}

fn classify(err: &EvalAltResult, engine: &Engine) -> ErrorKind {
    use EvalAltResult as E;
    match err {
        E::ErrorTooManyOperations(_) => ErrorKind::Limit(Limit::Operations(engine.max_operations())),
        E::ErrorStackOverflow(_) => ErrorKind::Limit(Limit::CallDepth(engine.max_call_levels())),
        E::ErrorTooManyVariables(_) => ErrorKind::Limit(Limit::Variables(engine.max_variables())),
        E::ErrorTooManyModules(_) => ErrorKind::Limit(Limit::Modules(engine.max_modules())),
        E::ErrorDataTooLarge(what, _) => ErrorKind::Limit(if what.contains("string") {
            Limit::StringSize(engine.max_string_size())
        } else if what.contains("map") {
            Limit::MapSize(engine.max_map_size())
        } else {
            Limit::ArraySize(engine.max_array_size())
        }),
        E::ErrorTerminated(token, _) => match token.clone().try_cast::<Limit>() {
            Some(l) => ErrorKind::Limit(l),
            None => ErrorKind::Terminated,
        },
        E::ErrorMismatchOutputType(..) => ErrorKind::ResultType,
        E::ErrorParsing(..) => ErrorKind::Syntax,
        E::ErrorRuntime(v, _) => match crate::script::convert::typed_error(v) {
            Some(Error::MemoryLimit { limit, .. }) => ErrorKind::Limit(Limit::Memory(limit)),
            Some(Error::Terminated { .. }) => ErrorKind::Terminated,
            Some(e) => ErrorKind::Tensor(Box::new(e)),
            None => ErrorKind::Runtime,
        },
        _ => ErrorKind::Runtime,
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
