//! PyTorch's keyword arguments in scripts. After its tensors, an op takes
//! its options in PyTorch's order, positionally, as one options map, or as
//! positional ones followed by a map: `softplus(x, 2.0)`,
//! `softplus(x, #{beta: 2.0, threshold: 10})`,
//! `mse_loss(a, b, #{reduction: "sum"})`. [`register`] puts every arity of
//! such an op on the engine; [`Kwargs`] reads the options by name, with
//! their defaults, and rejects unknown names and wrong types with one clear
//! error naming the op.

use super::convert::{number, operand, script_error, RhaiResult};
use super::registry::Api;
use crate::tensor::loss::Reduction;
use crate::tensor::Tensor;
use rhai::{Dynamic, Map};
use std::sync::Arc;

/// The options of one call, by name.
pub struct Kwargs {
    op: &'static str,
    names: &'static [&'static str],
    values: Vec<Option<Dynamic>>,
}

impl Kwargs {
    /// Reads `args` (positional values in the order of `names`, the last
    /// one possibly a map of named values) for `op`.
    pub fn parse(
        op: &'static str,
        names: &'static [&'static str],
        mut args: Vec<Dynamic>,
    ) -> RhaiResult<Kwargs> {
        let map = match args.last() {
            Some(last) if last.is_map() => args.pop().and_then(|d| d.try_cast::<Map>()),
            _ => None,
        };
        if args.len() > names.len() {
            return Err(script_error(format!(
                "{op}: takes at most {} options after its tensors ({}), got {}",
                names.len(),
                names.join(", "),
                args.len()
            )));
        }
        let mut values: Vec<Option<Dynamic>> = vec![None; names.len()];
        for (slot, v) in values.iter_mut().zip(args) {
            *slot = Some(v);
        }
        for (key, v) in map.into_iter().flatten() {
            let Some(i) = names.iter().position(|n| *n == key.as_str()) else {
                return Err(script_error(format!(
                    "{op}: unknown option '{key}' (expected {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            };
            if values[i].is_some() {
                return Err(script_error(format!("{op}: option '{key}' given twice")));
            }
            values[i] = Some(v);
        }
        Ok(Kwargs { op, names, values })
    }

    /// The value given for `key` (`()` counts as not given).
    pub fn get(&self, key: &str) -> Option<&Dynamic> {
        let i = self.names.iter().position(|n| *n == key);
        debug_assert!(i.is_some(), "{}: '{key}' is not one of its options", self.op);
        i.and_then(|i| self.values[i].as_ref()).filter(|d| !d.is_unit())
    }

    /// True when `key` was given (and is not `()`).
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A number option.
    pub fn number(&self, key: &str, default: f64) -> RhaiResult<f64> {
        self.get(key).map_or(Ok(default), |v| number(self.op, key, v))
    }

    /// A number option without a default: an error when absent.
    pub fn required_number(&self, key: &str) -> RhaiResult<f64> {
        match self.get(key) {
            Some(v) => number(self.op, key, v),
            None => Err(script_error(format!("{}: option '{key}' is required", self.op))),
        }
    }

    /// An optional number option.
    pub fn opt_number(&self, key: &str) -> RhaiResult<Option<f64>> {
        self.get(key).map(|v| number(self.op, key, v)).transpose()
    }

    /// An integer option.
    pub fn int(&self, key: &str, default: i64) -> RhaiResult<i64> {
        self.get(key).map_or(Ok(default), |v| {
            v.as_int()
                .map_err(|ty| script_error(format!("{}: option '{key}' must be an int, got {ty}", self.op)))
        })
    }

    /// An optional integer option.
    pub fn opt_int(&self, key: &str) -> RhaiResult<Option<i64>> {
        self.get(key).map(|_| self.int(key, 0)).transpose()
    }

    /// An int-or-ints option (`3` or `[3, 5]`), as PyTorch's size tuples.
    pub fn ints(&self, key: &str, default: &[i64]) -> RhaiResult<Vec<i64>> {
        self.get(key)
            .map_or(Ok(default.to_vec()), |v| super::convert::ints(self.op, key, v))
    }

    /// An int-or-ints option without a default: an error when absent.
    pub fn required_ints(&self, key: &str) -> RhaiResult<Vec<i64>> {
        match self.get(key) {
            Some(v) => super::convert::ints(self.op, key, v),
            None => Err(script_error(format!("{}: option '{key}' is required", self.op))),
        }
    }

    /// A required int-or-ints option that may also be an integer tensor of
    /// at most one dimension (PyTorch's lengths: `[3, 5]` or a tensor).
    pub fn required_int_values(&self, key: &str) -> RhaiResult<Vec<i64>> {
        let Some(v) = self.get(key) else {
            return Err(script_error(format!("{}: option '{key}' is required", self.op)));
        };
        match v.clone().try_cast::<Tensor>() {
            Some(t) if t.dtype().is_int() && t.ndim() <= 1 => super::convert::ok(t.to_vec_as::<i64>()),
            Some(t) => Err(script_error(format!(
                "{}: option '{key}' must be an integer tensor of at most one dimension, got {} {:?}",
                self.op,
                t.dtype(),
                t.shape()
            ))),
            None => super::convert::ints(self.op, key, v),
        }
    }

    /// A number-or-numbers option (`2.0` or `[2.0, 1.5]`), absent as `None`.
    pub fn opt_numbers(&self, key: &str) -> RhaiResult<Option<Vec<f64>>> {
        let Some(v) = self.get(key) else { return Ok(None) };
        match v.clone().try_cast::<rhai::Array>() {
            Some(a) => a
                .iter()
                .map(|x| number(self.op, key, x))
                .collect::<RhaiResult<Vec<_>>>()
                .map(Some),
            None => number(self.op, key, v).map(|x| Some(vec![x])),
        }
    }

    /// A bool option.
    pub fn flag(&self, key: &str, default: bool) -> RhaiResult<bool> {
        self.get(key).map_or(Ok(default), |v| {
            v.as_bool()
                .map_err(|ty| script_error(format!("{}: option '{key}' must be a bool, got {ty}", self.op)))
        })
    }

    /// A string option.
    pub fn string(&self, key: &str, default: &str) -> RhaiResult<String> {
        self.get(key).map_or(Ok(default.to_string()), |v| {
            v.clone()
                .into_string()
                .map_err(|ty| script_error(format!("{}: option '{key}' must be a string, got {ty}", self.op)))
        })
    }

    /// A tensor option (numbers become tensors next to `like`).
    pub fn tensor(&self, key: &str, like: &Tensor) -> RhaiResult<Option<Tensor>> {
        self.get(key)
            .map(|v| operand(self.op, v, Some(like), like.device()))
            .transpose()
    }

    /// The `reduction` option (`"mean"` by default).
    pub fn reduction(&self) -> RhaiResult<Reduction> {
        let s = self.string("reduction", "mean")?;
        super::convert::ok(Reduction::parse(self.op, &s))
    }
}

/// The body of an op taking `T` tensors and keyword options.
pub type Body<const T: usize, R> = Arc<dyn Fn([Tensor; T], Kwargs) -> RhaiResult<R> + Send + Sync>;

/// How an op registered by [`register`] may be called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// With any number of its options, none included.
    Plain,
    /// With at least one option (the bare call is registered elsewhere, or
    /// an option is required).
    WithOptions,
    /// As `Plain`, for an op that draws random numbers (never evaluated
    /// ahead of time).
    Random,
}

/// Registers `name(tensors..., options...)` for every count of positional
/// options `form` allows, up to all of `names` (a trailing map may replace
/// any of them), documented by `doc`.
pub fn register<const T: usize, R: Clone + Send + Sync + 'static>(
    api: &mut Api,
    name: &'static str,
    doc: &'static str,
    tensors: [&'static str; T],
    names: &'static [&'static str],
    form: Form,
    f: impl Fn([Tensor; T], Kwargs) -> RhaiResult<R> + Send + Sync + 'static,
) where
    Arities: RegisterArities<T>,
{
    let f: Body<T, R> = Arc::new(f);
    let from = usize::from(form == Form::WithOptions);
    let volatile = form == Form::Random;
    // one more arity for a trailing map after all positional options
    for extra in from..=(names.len() + 1).min(MAX_EXTRA) {
        if extra > names.len() && names.is_empty() {
            continue;
        }
        Arities::register(api, name, doc, tensors, names, extra, volatile, f.clone());
    }
}

/// The most values after the tensors an op takes.
const MAX_EXTRA: usize = 6;

/// Registers one arity of an op with `T` tensors.
pub struct Arities;

/// Implemented for the tensor counts ops take.
pub trait RegisterArities<const T: usize> {
    /// Registers `name` with `T` tensors and `extra` values after them.
    #[allow(clippy::too_many_arguments)]
    fn register<R: Clone + Send + Sync + 'static>(
        api: &mut Api,
        name: &'static str,
        doc: &'static str,
        tensors: [&'static str; T],
        names: &'static [&'static str],
        extra: usize,
        volatile: bool,
        f: Body<T, R>,
    );
}

/// The parameter name of value `i` after the tensors.
fn param(names: &'static [&'static str], i: usize) -> &'static str {
    names.get(i).copied().unwrap_or("opts")
}

/// Registers one arity: the tensors `$x` and the values `$a` (option `$i`).
macro_rules! one_arity {
    ($api:ident, $name:ident, $doc:ident, $tensors:ident, $names:ident, $volatile:ident, $f:ident,
     [$($x:ident $xi:literal),*], [$($a:ident $i:literal),*]) => {{
        let d = $api.doc($doc);
        let params = [$($tensors[$xi],)* $(param($names, $i)),*];
        let call = move |$($x: Tensor,)* $($a: Dynamic),*| {
            $f([$($x),*], Kwargs::parse($name, $names, vec![$($a),*])?)
        };
        if $volatile {
            d.volatile($name, params, call)
        } else {
            d.func($name, params, call)
        }
    }};
}

macro_rules! arities {
    ($t:literal [$($x:ident $xi:literal),*]) => {
        impl RegisterArities<$t> for Arities {
            fn register<R: Clone + Send + Sync + 'static>(
                api: &mut Api,
                name: &'static str,
                doc: &'static str,
                tensors: [&'static str; $t],
                names: &'static [&'static str],
                extra: usize,
                volatile: bool,
                f: Body<$t, R>,
            ) {
                match extra {
                    0 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], []),
                    1 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0]),
                    2 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0, b 1]),
                    3 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0, b 1, c 2]),
                    4 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0, b 1, c 2, d 3]),
                    5 => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0, b 1, c 2, d 3, e 4]),
                    _ => one_arity!(api, name, doc, tensors, names, volatile, f, [$($x $xi),*], [a 0, b 1, c 2, d 3, e 4, g 5]),
                }
            }
        }
    };
}

arities!(1 [x 0]);
arities!(2 [x 0, y 1]);
arities!(3 [x 0, y 1, z 2]);
