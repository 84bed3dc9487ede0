//! Operators on tensors: `+ - * / % **`, the bitwise `& | ^ << >>` and unary `-` with tensors and
//! numbers on either side, `@` (matmul), the comparisons (which return bool
//! tensors; all combinations are registered, since Rhai answers `false` for a
//! missing overload), `+= -= *= /= %= **= &= |= ^= <<= >>=` (in place, as in PyTorch), and indexing
//! with ints, negative ints and ranges, for reading and for writing.

use super::convert::{ok, operand, script_error, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::op::{BinaryOp, CmpOp, UnaryOp};
use crate::tensor::{Scalar, Tensor};
use rhai::{Dynamic, Engine, FLOAT, INT};
use std::ops::{Range, RangeInclusive};
use std::sync::Arc;

/// Precedence of `@`: the same as `*`, as in Python.
const MATMUL_PRECEDENCE: u8 = 180;

/// Registers the operators and indexers.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    // Registering `@` only fails if the symbol is taken, which it is not in Rhai 1.27;
    // without it, `matmul(a, b)` still works.
    let _ = engine.register_custom_operator("@", MATMUL_PRECEDENCE);
    let mut api = Api::new(engine, Category::Operators);
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
        ("<<", BinaryOp::BitShiftLeft),
        (">>", BinaryOp::BitShiftRight),
    ] {
        let doc = op.doc();
        api.doc(doc)
            .func(name, ["a", "b"], move |a: Tensor, b: Tensor| ok(a.binary(op, &b)));
        api.doc(doc).func(name, ["a", "b"], move |a: Tensor, b: INT| {
            ok(a.binary_scalar(op, Scalar::Int(b), false))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: Tensor, b: FLOAT| {
            ok(a.binary_scalar(op, Scalar::Float(b), false))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: INT, b: Tensor| {
            ok(b.binary_scalar(op, Scalar::Int(a), true))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: FLOAT, b: Tensor| {
            ok(b.binary_scalar(op, Scalar::Float(a), true))
        });
    }
    const IN_PLACE: &str = "in place, as in PyTorch: a's elements become a op b (every alias of a sees it)";
    for (name, op) in [
        ("+=", BinaryOp::Add),
        ("-=", BinaryOp::Sub),
        ("*=", BinaryOp::Mul),
        ("/=", BinaryOp::Div),
        ("%=", BinaryOp::Rem),
        ("**=", BinaryOp::Pow),
        ("&=", BinaryOp::BitAnd),
        ("|=", BinaryOp::BitOr),
        ("^=", BinaryOp::BitXor),
        ("<<=", BinaryOp::BitShiftLeft),
        (">>=", BinaryOp::BitShiftRight),
    ] {
        api.doc(IN_PLACE)
            .func(name, ["a", "b"], move |a: &mut Tensor, b: Tensor| {
                ok(a.binary_(op, &b))
            });
        api.doc(IN_PLACE)
            .func(name, ["a", "b"], move |a: &mut Tensor, b: INT| {
                ok(a.binary_scalar_(op, Scalar::Int(b)))
            });
        api.doc(IN_PLACE)
            .func(name, ["a", "b"], move |a: &mut Tensor, b: FLOAT| {
                ok(a.binary_scalar_(op, Scalar::Float(b)))
            });
    }
    api.doc(UnaryOp::Neg.doc())
        .func("-", ["a"], |a: Tensor| ok(a.neg()));
    api.doc("the tensor itself").func("+", ["a"], |a: Tensor| a);

    for (name, op) in [
        ("==", CmpOp::Eq),
        ("!=", CmpOp::Ne),
        ("<", CmpOp::Lt),
        ("<=", CmpOp::Le),
        (">", CmpOp::Gt),
        (">=", CmpOp::Ge),
    ] {
        let doc = op.doc();
        api.doc(doc).func(
            name,
            ["a", "b"],
            move |a: Tensor, b: Tensor| ok(a.compare(op, &b)),
        );
        api.doc(doc).func(name, ["a", "b"], move |a: Tensor, b: INT| {
            ok(a.compare_scalar(op, Scalar::Int(b), false))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: Tensor, b: FLOAT| {
            ok(a.compare_scalar(op, Scalar::Float(b), false))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: Tensor, b: bool| {
            ok(a.compare_scalar(op, Scalar::Bool(b), false))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: INT, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Int(a), true))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: FLOAT, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Float(a), true))
        });
        api.doc(doc).func(name, ["a", "b"], move |a: bool, b: Tensor| {
            ok(b.compare_scalar(op, Scalar::Bool(a), true))
        });
    }

    api.doc("matrix product with batch broadcasting (as matmul)")
        .func("@", ["a", "b"], |a: Tensor, b: Tensor| ok(a.matmul(&b)));

    register_indexers(&mut api, rt);
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

fn register_indexers(api: &mut Api, rt: &Arc<Runtime>) {
    api.doc("t[i]: index i of the first dim (negative counts from the end), a view")
        .index_get(["t", "i"], |t: &mut Tensor, i: INT| ok(t.select(0, i)));
    const SLICE: &str = "t[a..b], t[a..=b]: a slice of the first dim, a view";
    api.doc(SLICE)
        .index_get(["t", "range"], |t: &mut Tensor, r: Range<INT>| {
            first_dim(t, "slice")?;
            range_slice(t, r.start, r.end)
        });
    api.doc(SLICE)
        .index_get(["t", "range"], |t: &mut Tensor, r: RangeInclusive<INT>| {
            first_dim(t, "slice")?;
            range_slice(t, *r.start(), inclusive_end(t, *r.end()))
        });
    let r = rt.clone();
    api.doc("t[i] = x: writes x (a tensor or a number, broadcast) into index i of the first dim")
        .index_set(
            ["t", "i", "x"],
            move |t: &mut Tensor, i: INT, v: Dynamic| -> RhaiResult<()> {
                let dst = ok(t.select(0, i))?;
                assign(&dst, &v, t, "index assignment", &r)
            },
        );
    const SLICE_SET: &str =
        "t[a..b] = x: writes x (a tensor or a number, broadcast) into a slice of the first dim";
    let r = rt.clone();
    api.doc(SLICE_SET).index_set(
        ["t", "range", "x"],
        move |t: &mut Tensor, x: Range<INT>, v: Dynamic| -> RhaiResult<()> {
            first_dim(t, "slice assignment")?;
            let dst = range_slice(t, x.start, x.end)?;
            assign(&dst, &v, t, "slice assignment", &r)
        },
    );
    let r = rt.clone();
    api.doc(SLICE_SET).index_set(
        ["t", "range", "x"],
        move |t: &mut Tensor, x: RangeInclusive<INT>, v: Dynamic| -> RhaiResult<()> {
            first_dim(t, "slice assignment")?;
            let dst = range_slice(t, *x.start(), inclusive_end(t, *x.end()))?;
            assign(&dst, &v, t, "slice assignment", &r)
        },
    );
}
