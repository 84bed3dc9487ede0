//! Operators on tensors: `+ - * / % **` and unary `-` with tensors and
//! numbers on either side, `@` (matmul), the comparisons (which return bool
//! tensors; all combinations are registered, since Rhai answers `false` for a
//! missing overload), `+= -= *= /=` (in place, as in PyTorch), and indexing
//! with ints, negative ints and ranges, for reading and for writing.

use super::convert::{ok, operand, script_error, RhaiResult};
use super::Runtime;
use crate::core::op::{BinaryOp, CmpOp};
use crate::core::Scalar;
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, FLOAT, INT};
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

/// Precedence of `@`: the same as `*`, as in Python.
const MATMUL_PRECEDENCE: u8 = 180;

/// Registers the operators and indexers.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    for (name, op) in [
        ("+", BinaryOp::Add),
        ("-", BinaryOp::Sub),
        ("*", BinaryOp::Mul),
        ("/", BinaryOp::Div),
        ("%", BinaryOp::Rem),
        ("**", BinaryOp::Pow),
        ("&", BinaryOp::BitAnd),
        ("|", BinaryOp::BitOr),
        ("^", BinaryOp::BitXor),
    ] {
        engine.register_fn(name, move |a: Tensor, b: Tensor| ok(a.binary(op, &b)));
        engine.register_fn(name, move |a: Tensor, b: INT| {
            ok(a.binary_scalar(op, Scalar::Int(b), false))
        });
        engine.register_fn(name, move |a: Tensor, b: FLOAT| {
            ok(a.binary_scalar(op, Scalar::Float(b), false))
        });
        engine.register_fn(name, move |a: INT, b: Tensor| {
            ok(b.binary_scalar(op, Scalar::Int(a), true))
        });
        engine.register_fn(name, move |a: FLOAT, b: Tensor| {
            ok(b.binary_scalar(op, Scalar::Float(a), true))
        });
    }
    for (name, op) in [
        ("+=", BinaryOp::Add),
        ("-=", BinaryOp::Sub),
        ("*=", BinaryOp::Mul),
        ("/=", BinaryOp::Div),
        ("%=", BinaryOp::Rem),
        ("**=", BinaryOp::Pow),
    ] {
        engine.register_fn(name, move |a: &mut Tensor, b: Tensor| ok(a.binary_(op, &b)));
        engine.register_fn(name, move |a: &mut Tensor, b: INT| {
            ok(a.binary_scalar_(op, Scalar::Int(b)))
        });
        engine.register_fn(name, move |a: &mut Tensor, b: FLOAT| {
            ok(a.binary_scalar_(op, Scalar::Float(b)))
        });
    }
    engine.register_fn("-", |a: Tensor| ok(a.neg()));
    engine.register_fn("+", |a: Tensor| a);

    for (name, op) in [
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<", CmpOp::Lt),
        ("<=", CmpOp::Le),
        (">", CmpOp::Gt),
        (">=", CmpOp::Ge),
    ] {
        engine.register_fn(name, move |a: Tensor, b: Tensor| ok(a.compare(op, &b)));
        engine.register_fn(name, move |a: Tensor, b: INT| {
            ok(a.compare_scalar(op, Scalar::Int(b), false))
        });
        engine.register_fn(name, move |a: Tensor, b: FLOAT| {
            ok(a.compare_scalar(op, Scalar::Float(b), false))
        });
        engine.register_fn(name, move |a: Tensor, b: bool| {
            ok(a.compare_scalar(op, Scalar::Bool(b), false))
        });
        engine.register_fn(name, move |a: INT, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Int(a), true))
        });
        engine.register_fn(name, move |a: FLOAT, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Float(a), true))
        });
        engine.register_fn(name, move |a: bool, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Bool(a), true))
        });
    }

    // Registering `@` only fails if the symbol is taken, which it is not in Rhai 1.27;
    // without it, `matmul(a, b)` still works.
    let _ = engine.register_custom_operator("@", MATMUL_PRECEDENCE);
    engine.register_fn("@", |a: Tensor, b: Tensor| ok(a.matmul(&b)));

    register_indexers(engine, rt);
}

fn range_slice(t: &Tensor, start: INT, end: INT) -> RhaiResult<Tensor> {
    ok(t.slice(0, Some(start), Some(end), 1))
}

/// The exclusive end of `a..=end` over the first dim: `-1` is the last
/// element, and `i64::MAX` (which has no successor) the end of the dim.
fn inclusive_end(t: &Tensor, end: INT) -> INT {
    match end {
        -1 => t.shape()[0] as INT,
        e => e.saturating_add(1),
    }
}

fn first_dim(t: &Tensor, op: &str) -> RhaiResult<()> {
    if t.ndim() == 0 {
        return Err(script_error(format!("{op}: cannot index a 0-dim tensor")));
    }
    Ok(())
}

/// Rhai writes an indexed value back after a method call on it (`x[1].sum()`,
/// `x[0].shape`): the value is then the same view, or `()` when a by-value
/// method took it. Neither is a real assignment.
fn is_write_back(dst: &Tensor, v: &Dynamic) -> bool {
    if v.is_unit() {
        return true;
    }
    match v.clone().try_cast::<Tensor>() {
        Some(t) => t.shares_storage(dst) && t.layout() == dst.layout(),
        None => false,
    }
}

fn assign(dst: &Tensor, v: &Dynamic, like: &Tensor, op: &str, rt: &Runtime) -> RhaiResult<()> {
    if is_write_back(dst, v) {
        return Ok(());
    }
    ok(dst.copy_(&operand(op, v, Some(like), rt.device())?))
}

fn register_indexers(engine: &mut Engine, rt: &Arc<Runtime>) {
    engine.register_indexer_get(|t: &mut Tensor, i: INT| ok(t.select(0, i)));
    engine.register_indexer_get(|t: &mut Tensor, r: Range<INT>| {
        first_dim(t, "slice")?;
        range_slice(t, r.start, r.end)
    });
    engine.register_indexer_get(|t: &mut Tensor, r: RangeInclusive<INT>| {
        first_dim(t, "slice")?;
        range_slice(t, *r.start(), inclusive_end(t, *r.end()))
    });
    let r = rt.clone();
    engine.register_indexer_set(move |t: &mut Tensor, i: INT, v: Dynamic| -> RhaiResult<()> {
        let dst = ok(t.select(0, i))?;
        assign(&dst, &v, t, "index assignment", &r)
    });
    let r = rt.clone();
    engine.register_indexer_set(
        move |t: &mut Tensor, x: Range<INT>, v: Dynamic| -> RhaiResult<()> {
            first_dim(t, "slice assignment")?;
            let dst = range_slice(t, x.start, x.end)?;
            assign(&dst, &v, t, "slice assignment", &r)
        },
    );
    let r = rt.clone();
    engine.register_indexer_set(
        move |t: &mut Tensor, x: RangeInclusive<INT>, v: Dynamic| -> RhaiResult<()> {
            first_dim(t, "slice assignment")?;
            let dst = range_slice(t, *x.start(), inclusive_end(t, *x.end()))?;
            assign(&dst, &v, t, "slice assignment", &r)
        },
    );
}
