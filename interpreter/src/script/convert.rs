//! Conversions between Rhai values and kiln's types: arrays to shapes and
//! dims, numbers to scalars, nested arrays to tensors and back, option maps to
//! dtype/device, and kiln errors to Rhai errors. No math lives here.

use crate::core::error::Error;
use crate::core::{DType, Device, HostValues, Scalar};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, EvalAltResult, Map, Position, INT};
use std::cell::RefCell;

/// The result type of every registered function (host functions too).
pub type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

/// How many typed errors a thread keeps for its scripts' error values (a
/// script that catches errors in a loop does not grow it).
const KEPT_ERRORS: usize = 64;

thread_local! {
    /// The typed kiln errors raised into scripts on this thread, newest last,
    /// each under the tag its Rhai error value carries.
    static RAISED: RefCell<(i32, Vec<(i32, Error)>)> = const { RefCell::new((0, Vec::new())) };
}

/// A script-visible runtime error with `msg`; Rhai attaches the call position.
pub fn script_error(msg: impl Into<String>) -> Box<EvalAltResult> {
    EvalAltResult::ErrorRuntime(Dynamic::from(msg.into()), Position::NONE).into()
}

/// A kiln error raised into a script. Scripts see its message as a string
/// (`catch (e)` gets the text); the string value carries a tag (Rhai's
/// `Dynamic::tag`) under which the typed error is kept on this thread, so
/// that the interpreter hands the host the typed error
/// ([`ErrorKind::Tensor`](crate::ErrorKind::Tensor)) when the script fails
/// with that value — rethrown, or raised inside a function or closure — with
/// no matching of message text.
pub fn kiln_error(e: Error) -> Box<EvalAltResult> {
    kiln_error_at(e, Position::NONE)
}

/// [`kiln_error`] at a known position.
pub(crate) fn kiln_error_at(e: Error, pos: Position) -> Box<EvalAltResult> {
    let mut value = Dynamic::from(e.to_string());
    let tag = RAISED
        .try_with(|r| {
            let (next, kept) = &mut *r.borrow_mut();
            // tags run 1, 2, ... (0 is an untagged value) and wrap past the
            // largest; only the newest KEPT_ERRORS are looked up
            *next = if *next == i32::MAX { 1 } else { *next + 1 };
            if kept.len() == KEPT_ERRORS {
                kept.remove(0);
            }
            kept.push((*next, e));
            *next
        })
        .unwrap_or(0);
    value.set_tag(tag);
    EvalAltResult::ErrorRuntime(value, pos).into()
}

/// The typed kiln error a script's error value stands for, when it is one
/// that [`kiln_error`] raised on this thread.
pub(crate) fn typed_error(value: &Dynamic) -> Option<Error> {
    let tag = value.tag();
    if tag == 0 {
        return None;
    }
    RAISED
        .try_with(|r| {
            let (_, kept) = &*r.borrow();
            kept.iter().rev().find(|(t, _)| *t == tag).map(|(_, e)| e.clone())
        })
        .ok()
        .flatten()
}

/// Forgets the typed errors raised on this thread.
pub(crate) fn clear_typed_error() {
    let _gone = RAISED.try_with(|r| r.borrow_mut().1.clear());
}

/// Lets host functions use `?` on kiln results (see [`kiln_error`]).
impl From<Error> for Box<EvalAltResult> {
    fn from(e: Error) -> Self {
        kiln_error(e)
    }
}

/// Converts a kiln result into a Rhai result.
pub fn ok<T>(r: crate::Result<T>) -> RhaiResult<T> {
    r.map_err(kiln_error)
}

/// A number or bool as a scalar.
pub fn scalar(op: &str, d: &Dynamic) -> RhaiResult<Scalar> {
    if let Ok(i) = d.as_int() {
        Ok(Scalar::Int(i))
    } else if let Ok(f) = d.as_float() {
        Ok(Scalar::Float(f))
    } else if let Ok(b) = d.as_bool() {
        Ok(Scalar::Bool(b))
    } else {
        Err(script_error(format!(
            "{op}: expected a number, got {}",
            d.type_name()
        )))
    }
}

/// A list of (possibly negative) ints: an array of ints or a single int.
pub fn ints(op: &str, what: &str, d: &Dynamic) -> RhaiResult<Vec<i64>> {
    if let Ok(i) = d.as_int() {
        return Ok(vec![i]);
    }
    let arr = d.clone().try_cast::<Array>().ok_or_else(|| {
        script_error(format!(
            "{op}: expected {what} as an array of ints, got {}",
            d.type_name()
        ))
    })?;
    arr.iter()
        .map(|x| {
            x.as_int()
                .map_err(|t| script_error(format!("{op}: {what} must hold ints, found {t}")))
        })
        .collect()
}

/// A shape: an array of non-negative ints (or one int).
pub fn shape(op: &str, d: &Dynamic) -> RhaiResult<Vec<usize>> {
    ints(op, "a shape", d)?
        .into_iter()
        .map(|x| {
            usize::try_from(x)
                .map_err(|_| script_error(format!("{op}: shape sizes must be non-negative, got {x}")))
        })
        .collect()
}

/// A shape from separate int arguments.
pub fn shape_of(op: &str, dims: &[INT]) -> RhaiResult<Vec<usize>> {
    shape(
        op,
        &Dynamic::from_array(dims.iter().map(|&d| Dynamic::from_int(d)).collect()),
    )
}

/// Creation options from a map: `#{dtype: "bf16", device: "cpu"}`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Opts {
    /// requested dtype
    pub dtype: Option<DType>,
    /// requested device
    pub device: Option<Device>,
    /// mark the new tensor as a parameter (`requires_grad`)
    pub requires_grad: bool,
}

impl Opts {
    /// Applies the options that act on a made tensor (`requires_grad`).
    pub fn finish(&self, t: RhaiResult<Tensor>) -> RhaiResult<Tensor> {
        let t = t?;
        if self.requires_grad {
            ok(t.set_requires_grad(true))?;
        }
        Ok(t)
    }
}

/// Parses an options map; unknown keys are an error.
pub fn opts(op: &str, m: &Map) -> RhaiResult<Opts> {
    let mut o = Opts::default();
    for (k, v) in m {
        let s = || {
            v.clone()
                .into_immutable_string()
                .map_err(|t| script_error(format!("{op}: option '{k}' must be a string, got {t}")))
        };
        match k.as_str() {
            "dtype" => o.dtype = Some(ok(DType::parse(&s()?))?),
            "device" => o.device = Some(ok(Device::parse(&s()?))?),
            "requires_grad" => {
                o.requires_grad = v.as_bool().map_err(|t| {
                    script_error(format!("{op}: option 'requires_grad' must be a bool, got {t}"))
                })?
            }
            other => {
                return Err(script_error(format!(
                    "{op}: unknown option '{other}' (expected dtype, device, requires_grad)"
                )))
            }
        }
    }
    Ok(o)
}

/// A tensor from a nested array of numbers/bools (or a single number).
pub fn nested_to_tensor(d: &Dynamic, dtype: Option<DType>, device: Device) -> RhaiResult<Tensor> {
    let mut shape = vec![];
    let mut probe = d.clone();
    while let Some(a) = probe.clone().try_cast::<Array>() {
        shape.push(a.len());
        match a.into_iter().next() {
            Some(first) => probe = first,
            None => break,
        }
    }
    let mut vals = Vec::new();
    collect(d, &shape, 0, &mut vals)?;
    let any_float = vals.iter().any(|s| matches!(s, Scalar::Float(_)));
    let all_bool = !vals.is_empty() && vals.iter().all(|s| matches!(s, Scalar::Bool(_)));
    let host = if any_float || vals.is_empty() {
        HostValues::Float(vals.iter().map(|s| s.to_f64()).collect())
    } else if all_bool {
        HostValues::Bool(vals.iter().map(|s| s.to_i64() != 0).collect())
    } else {
        HostValues::Int(vals.iter().map(|s| s.to_i64()).collect())
    };
    let default = match host {
        HostValues::Float(_) => DType::F32,
        HostValues::Bool(_) => DType::Bool,
        HostValues::Int(_) => DType::I64,
    };
    ok(Tensor::from_host(&host, &shape, dtype.unwrap_or(default), device))
}

fn collect(d: &Dynamic, shape: &[usize], depth: usize, out: &mut Vec<Scalar>) -> RhaiResult<()> {
    match d.clone().try_cast::<Array>() {
        Some(a) => {
            if depth >= shape.len() || a.len() != shape[depth] {
                let expected = match shape.get(depth) {
                    Some(n) => format!("an array of {n} items"),
                    None => "a number".to_string(),
                };
                return Err(script_error(format!(
                    "tensor: nested arrays are ragged (expected {expected} at depth {depth}, found an array of {})",
                    a.len()
                )));
            }
            a.iter().try_for_each(|x| collect(x, shape, depth + 1, out))
        }
        None if depth != shape.len() => Err(script_error(format!(
            "tensor: nested arrays are ragged (found a number at depth {depth}, expected an array of {})",
            shape[depth]
        ))),
        None => {
            if let Some(t) = d.clone().try_cast::<Tensor>() {
                out.push(ok(t.item())?);
                return Ok(());
            }
            out.push(scalar("tensor", d)?);
            Ok(())
        }
    }
}

/// A scalar as a Rhai value (ints as INT, floats as FLOAT, bools as bool).
pub fn scalar_to_dynamic(s: Scalar) -> Dynamic {
    match s {
        Scalar::Bool(b) => Dynamic::from_bool(b),
        Scalar::Int(i) => Dynamic::from_int(i),
        Scalar::Float(f) => Dynamic::from_float(f),
    }
}

/// A tensor's values as nested Rhai arrays (a 0-dim tensor gives a number).
pub fn tensor_to_nested(t: &Tensor) -> RhaiResult<Dynamic> {
    // every value and every nested array is a Rhai value (about 32 bytes
    // with its slot): checked before anything is built, since a shape like
    // [2^40, 0] has no elements but 2^40 arrays
    let mut values = 1usize;
    let mut arrays = 0usize;
    for &d in t.shape() {
        arrays = arrays.saturating_add(values);
        values = values.saturating_mul(d);
    }
    let bytes = values.saturating_add(arrays).saturating_mul(32);
    ok(crate::core::memory::check_bytes("to_list", bytes, true))?;
    let host = ok(t.to_host())?;
    let mut i = 0;
    Ok(build(&host, t.shape(), &mut i))
}

fn build(v: &HostValues, shape: &[usize], i: &mut usize) -> Dynamic {
    match shape.split_first() {
        None => {
            let d = v.get(*i).map_or(Dynamic::UNIT, scalar_to_dynamic);
            *i += 1;
            d
        }
        Some((&n, rest)) => Dynamic::from_array((0..n).map(|_| build(v, rest, i)).collect()),
    }
}

/// A shape as a Rhai array of ints.
pub fn shape_to_dynamic(shape: &[usize]) -> Dynamic {
    Dynamic::from_array(shape.iter().map(|&d| Dynamic::from_int(d as INT)).collect())
}

/// A tensor operand from a tensor or a number; numbers take the dtype they
/// would promote to next to `like`.
pub fn operand(op: &str, d: &Dynamic, like: Option<&Tensor>, device: Device) -> RhaiResult<Tensor> {
    if let Some(t) = d.clone().try_cast::<Tensor>() {
        return Ok(t);
    }
    let s = scalar(op, d)?;
    let dtype = like.map_or(s.default_dtype(), |t| s.promote_with(t.dtype()));
    ok(Tensor::scalar(s, dtype, like.map_or(device, |t| t.device())))
}

/// A list of tensors from a Rhai array.
pub fn tensor_list(op: &str, a: &Array) -> RhaiResult<Vec<Tensor>> {
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            x.clone().try_cast::<Tensor>().ok_or_else(|| {
                script_error(format!(
                    "{op}: item {i} of the list is a {}, not a Tensor",
                    x.type_name()
                ))
            })
        })
        .collect()
}

/// The `(name, tensor)` pairs of a map of tensors (`what` names an entry in
/// errors: "{op}: {what} '{name}' must be a Tensor, got ...").
pub fn named_tensors(op: &str, what: &str, m: &Map) -> RhaiResult<Vec<(String, Tensor)>> {
    m.iter()
        .map(|(k, v)| {
            v.clone()
                .try_cast::<Tensor>()
                .map(|t| (k.to_string(), t))
                .ok_or_else(|| {
                    script_error(format!(
                        "{op}: {what} '{k}' must be a Tensor, got {}",
                        v.type_name()
                    ))
                })
        })
        .collect()
}

/// Several tensors as a Rhai array (PyTorch's tuples of results).
pub fn tensor_array(ts: crate::Result<Vec<Tensor>>) -> RhaiResult<Array> {
    Ok(ok(ts)?.into_iter().map(Dynamic::from).collect())
}

/// A number (int or float) as f64; `what` names it in the error.
pub fn number(op: &str, what: &str, v: &Dynamic) -> RhaiResult<f64> {
    v.as_float()
        .or_else(|_| v.as_int().map(|i| i as rhai::FLOAT))
        .map_err(|ty| script_error(format!("{op}: {what} must be a number, got {ty}")))
}
