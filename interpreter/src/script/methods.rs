//! Tensor methods (each also callable as a function, `exp(t)` = `t.exp()`):
//! properties, views, math, reductions, nn ops, indexing (index_select,
//! gather, index_add, scatter_add), joins, dtype/device moves, in-place
//! writes, conversions back to Rhai values, and printing.

use super::convert::{
    ints, nested_to_tensor, ok, operand, scalar, scalar_to_dynamic, script_error, shape, shape_to_dynamic,
    tensor_list, tensor_to_nested, RhaiResult,
};
use super::Runtime;
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::{DType, Device};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, FLOAT, INT};
use std::sync::Arc;

/// Registers every Tensor method and property.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    register_properties(engine);
    register_views(engine);
    register_math(engine);
    register_reductions(engine);
    register_nn(engine);
    register_indexing(engine);
    register_conversions(engine);
    register_inplace(engine, rt);
}

fn register_properties(engine: &mut Engine) {
    engine.register_get("shape", |t: &mut Tensor| shape_to_dynamic(t.shape()));
    engine.register_get("dtype", |t: &mut Tensor| t.dtype().name().to_string());
    engine.register_get("device", |t: &mut Tensor| t.device().to_string());
    engine.register_get("ndim", |t: &mut Tensor| t.ndim() as INT);
    engine.register_get("numel", |t: &mut Tensor| t.numel() as INT);
    engine.register_get("T", |t: &mut Tensor| {
        ok(t.permute(&(0..t.ndim() as i64).rev().collect::<Vec<_>>()))
    });
    engine.register_fn("size", |t: &mut Tensor| shape_to_dynamic(t.shape()));
    engine.register_fn("size", |t: &mut Tensor, d: INT| -> RhaiResult<INT> {
        let d = ok(crate::core::shape::normalize_dim("size", d, t.shape()))?;
        Ok(t.shape()[d] as INT)
    });
    engine.register_fn("dim", |t: &mut Tensor| t.ndim() as INT);
    engine.register_fn("numel", |t: &mut Tensor| t.numel() as INT);
    engine.register_fn("len", |t: &mut Tensor| -> RhaiResult<INT> {
        t.shape()
            .first()
            .map(|&n| n as INT)
            .ok_or_else(|| script_error("len: a 0-dim tensor has no length"))
    });
    engine.register_fn("is_contiguous", |t: &mut Tensor| t.is_contiguous());
    engine.register_fn("shares_storage", |a: &mut Tensor, b: Tensor| a.shares_storage(&b));
}

fn register_views(engine: &mut Engine) {
    for name in ["reshape", "view"] {
        let f = move |t: &Tensor, s: Vec<i64>| {
            if name == "view" {
                ok(t.view(&s))
            } else {
                ok(t.reshape(&s))
            }
        };
        engine.register_fn(name, move |t: Tensor, s: Dynamic| {
            f(&t, ints(name, "a shape", &s)?)
        });
        engine.register_fn(name, move |t: Tensor, a: INT, b: INT| f(&t, vec![a, b]));
        engine.register_fn(name, move |t: Tensor, a: INT, b: INT, c: INT| {
            f(&t, vec![a, b, c])
        });
        engine.register_fn(name, move |t: Tensor, a: INT, b: INT, c: INT, d: INT| {
            f(&t, vec![a, b, c, d])
        });
    }
    engine.register_fn("permute", |t: Tensor, s: Dynamic| {
        ok(t.permute(&ints("permute", "dims", &s)?))
    });
    engine.register_fn("permute", |t: Tensor, a: INT, b: INT| ok(t.permute(&[a, b])));
    engine.register_fn("permute", |t: Tensor, a: INT, b: INT, c: INT| {
        ok(t.permute(&[a, b, c]))
    });
    engine.register_fn("permute", |t: Tensor, a: INT, b: INT, c: INT, d: INT| {
        ok(t.permute(&[a, b, c, d]))
    });
    engine.register_fn("flatten", |t: Tensor| ok(t.flatten(0, -1)));
    engine.register_fn("flatten", |t: Tensor, s: INT| ok(t.flatten(s, -1)));
    engine.register_fn("flatten", |t: Tensor, s: INT, e: INT| ok(t.flatten(s, e)));
    engine.register_fn("t", |t: Tensor| ok(t.t()));
    engine.register_fn("transpose", |t: Tensor, a: INT, b: INT| ok(t.transpose(a, b)));
    engine.register_fn("squeeze", |t: Tensor| ok(t.squeeze(None)));
    engine.register_fn("squeeze", |t: Tensor, d: Dynamic| {
        ok(t.squeeze(Some(&ints("squeeze", "dims", &d)?)))
    });
    engine.register_fn("unsqueeze", |t: Tensor, d: INT| ok(t.unsqueeze(d)));
    engine.register_fn("expand", |t: Tensor, s: Dynamic| {
        ok(t.expand(&ints("expand", "a shape", &s)?))
    });
    engine.register_fn("expand", |t: Tensor, a: INT, b: INT| ok(t.expand(&[a, b])));
    engine.register_fn("expand", |t: Tensor, a: INT, b: INT, c: INT| {
        ok(t.expand(&[a, b, c]))
    });
    engine.register_fn("expand_as", |t: Tensor, o: Tensor| ok(t.broadcast_to(o.shape())));
    engine.register_fn("broadcast_to", |t: Tensor, s: Dynamic| {
        ok(t.broadcast_to(&shape("broadcast_to", &s)?))
    });
    engine.register_fn(
        "narrow",
        |t: Tensor, d: INT, s: INT, l: INT| ok(t.narrow(d, s, l)),
    );
    engine.register_fn("slice", |t: Tensor, d: INT, s: INT, e: INT| {
        ok(t.slice(d, Some(s), Some(e), 1))
    });
    engine.register_fn("slice", |t: Tensor, d: INT, s: INT, e: INT, st: INT| {
        ok(t.slice(d, Some(s), Some(e), st))
    });
    engine.register_fn("select", |t: Tensor, d: INT, i: INT| ok(t.select(d, i)));
    engine.register_fn("contiguous", |t: Tensor| ok(t.contiguous()));
    engine.register_fn("clone", |t: Tensor| ok(t.clone_data()));
    engine.register_fn("cat", |l: Array, d: INT| {
        ok(Tensor::cat(&tensor_list("cat", &l)?, d))
    });
    engine.register_fn("cat", |l: Array| ok(Tensor::cat(&tensor_list("cat", &l)?, 0)));
    engine.register_fn("stack", |l: Array, d: INT| {
        ok(Tensor::stack(&tensor_list("stack", &l)?, d))
    });
    engine.register_fn("stack", |l: Array| {
        ok(Tensor::stack(&tensor_list("stack", &l)?, 0))
    });
}

fn register_math(engine: &mut Engine) {
    for &op in UnaryOp::ALL {
        engine.register_fn(op.name(), move |t: Tensor| ok(t.unary(op)));
    }
    for &op in BinaryOp::ALL {
        let name = op.name();
        engine.register_fn(name, move |a: Tensor, b: Dynamic| -> RhaiResult<Tensor> {
            match b.clone().try_cast::<Tensor>() {
                Some(b) => ok(a.binary(op, &b)),
                None => ok(a.binary_scalar(op, scalar(name, &b)?, false)),
            }
        });
    }
    for (name, op) in [
        ("logical_and", BinaryOp::BitAnd),
        ("logical_or", BinaryOp::BitOr),
        ("logical_xor", BinaryOp::BitXor),
    ] {
        engine.register_fn(name, move |a: Tensor, b: Tensor| -> RhaiResult<Tensor> {
            let (a, b) = (ok(a.to_dtype(DType::Bool))?, ok(b.to_dtype(DType::Bool))?);
            ok(a.binary(op, &b))
        });
    }
    engine.register_fn("max", |a: Tensor, b: Tensor| ok(a.maximum(&b)));
    engine.register_fn("min", |a: Tensor, b: Tensor| ok(a.minimum(&b)));
    for &op in CmpOp::ALL {
        let name = op.name();
        engine.register_fn(name, move |a: Tensor, b: Dynamic| -> RhaiResult<Tensor> {
            match b.clone().try_cast::<Tensor>() {
                Some(b) => ok(a.compare(op, &b)),
                None => ok(a.compare_scalar(op, scalar(name, &b)?, false)),
            }
        });
    }
    let bound = |name: &str, d: &Dynamic| -> RhaiResult<Option<crate::tensor::Scalar>> {
        if d.is_unit() {
            Ok(None)
        } else {
            scalar(name, d).map(Some)
        }
    };
    engine.register_fn("clamp", move |t: Tensor, lo: Dynamic, hi: Dynamic| {
        ok(t.clamp(bound("clamp", &lo)?, bound("clamp", &hi)?))
    });
    engine.register_fn("clamp_min", |t: Tensor, lo: Dynamic| {
        ok(t.clamp(Some(scalar("clamp_min", &lo)?), None))
    });
    engine.register_fn("clamp_max", |t: Tensor, hi: Dynamic| {
        ok(t.clamp(None, Some(scalar("clamp_max", &hi)?)))
    });
    engine.register_fn(
        "where",
        move |c: Tensor, a: Dynamic, b: Dynamic| -> RhaiResult<Tensor> {
            let ta = a.clone().try_cast::<Tensor>();
            let tb = b.clone().try_cast::<Tensor>();
            let dev = c.device();
            let a = operand("where", &a, tb.as_ref(), dev)?;
            let b = operand("where", &b, ta.as_ref().or(Some(&a)), dev)?;
            ok(Tensor::where_cond(&c, &a, &b))
        },
    );
    engine.register_fn("matmul", |a: Tensor, b: Tensor| ok(a.matmul(&b)));
    engine.register_fn("mm", |a: Tensor, b: Tensor| ok(a.mm(&b)));
    engine.register_fn("bmm", |a: Tensor, b: Tensor| ok(a.bmm(&b)));
    engine.register_fn("dot", |a: Tensor, b: Tensor| ok(a.dot(&b)));
}

/// The dims argument of a reduction: an int or an array of ints.
fn dims(op: &str, d: &Dynamic) -> RhaiResult<Vec<i64>> {
    ints(op, "dims", d)
}

fn register_reductions(engine: &mut Engine) {
    let all = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Mean,
        ReduceOp::Var { correction: 1 },
        ReduceOp::Std { correction: 1 },
        ReduceOp::All,
        ReduceOp::Any,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
    ];
    for op in all {
        register_reduction(engine, op, op.name());
    }
    // `var` is a reserved word in Rhai: scripts call `variance` (also as `t.variance()`).
    register_reduction(engine, ReduceOp::Var { correction: 1 }, "variance");
    register_corrected(engine);
}

/// One reduction under `name`: whole tensor, `(dims)` and `(dims, keepdim)`.
fn register_reduction(engine: &mut Engine, op: ReduceOp, name: &'static str) {
    {
        engine.register_fn(name, move |t: Tensor| ok(t.reduce(op, None, false)));
        let single = matches!(
            op,
            ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin
        );
        if single {
            engine.register_fn(name, move |t: Tensor, d: INT| ok(t.reduce(op, Some(&[d]), false)));
            engine.register_fn(name, move |t: Tensor, d: INT, k: bool| {
                ok(t.reduce(op, Some(&[d]), k))
            });
        } else {
            engine.register_fn(name, move |t: Tensor, d: Dynamic| {
                ok(t.reduce(op, Some(&dims(name, &d)?), false))
            });
            engine.register_fn(name, move |t: Tensor, d: Dynamic, k: bool| {
                ok(t.reduce(op, Some(&dims(name, &d)?), k))
            });
        }
    }
}

/// `var`/`variance`/`std` with an explicit correction (0 = population statistics).
fn register_corrected(engine: &mut Engine) {
    for name in ["var", "variance", "std"] {
        engine.register_fn(
            name,
            move |t: Tensor, d: Dynamic, k: bool, c: INT| -> RhaiResult<Tensor> {
                let correction =
                    u32::try_from(c).map_err(|_| script_error(format!("{name}: correction must be >= 0")))?;
                let op = if name != "std" {
                    ReduceOp::Var { correction }
                } else {
                    ReduceOp::Std { correction }
                };
                let ds = if d.is_unit() { None } else { Some(dims(name, &d)?) };
                ok(t.reduce(op, ds.as_deref(), k))
            },
        );
    }
}

fn register_nn(engine: &mut Engine) {
    engine.register_fn("softmax", |t: Tensor, d: INT| ok(t.softmax(d)));
    engine.register_fn("log_softmax", |t: Tensor, d: INT| ok(t.log_softmax(d)));
    let opt = |name: &str, d: &Dynamic| -> RhaiResult<Option<Tensor>> {
        if d.is_unit() {
            return Ok(None);
        }
        d.clone()
            .try_cast::<Tensor>()
            .map(Some)
            .ok_or_else(|| script_error(format!("{name}: weight and bias must be tensors or ()")))
    };
    const EPS: f64 = 1e-5;
    engine.register_fn("layer_norm", move |t: Tensor, s: Dynamic| {
        ok(t.layer_norm(&shape("layer_norm", &s)?, None, None, EPS))
    });
    engine.register_fn(
        "layer_norm",
        move |t: Tensor, s: Dynamic, w: Dynamic, b: Dynamic| {
            let (w, b) = (opt("layer_norm", &w)?, opt("layer_norm", &b)?);
            ok(t.layer_norm(&shape("layer_norm", &s)?, w.as_ref(), b.as_ref(), EPS))
        },
    );
    engine.register_fn(
        "layer_norm",
        move |t: Tensor, s: Dynamic, w: Dynamic, b: Dynamic, eps: FLOAT| {
            let (w, b) = (opt("layer_norm", &w)?, opt("layer_norm", &b)?);
            ok(t.layer_norm(&shape("layer_norm", &s)?, w.as_ref(), b.as_ref(), eps))
        },
    );
}

/// An index argument: an integer tensor, an int, or a (nested) array of ints,
/// made on `x`'s device (an empty array is an empty i64 index).
fn index_arg(op: &str, x: &Tensor, d: &Dynamic) -> RhaiResult<Tensor> {
    if let Some(t) = d.clone().try_cast::<Tensor>() {
        return Ok(t);
    }
    if d.is_int() || d.is_array() {
        let t = nested_to_tensor(d, None, x.device())?;
        return if t.numel() == 0 {
            ok(t.to_dtype(DType::I64))
        } else {
            Ok(t)
        };
    }
    Err(script_error(format!(
        "{op}: the index must be an integer tensor or an array of ints, got {}",
        d.type_name()
    )))
}

fn register_indexing(engine: &mut Engine) {
    engine.register_fn("index_select", |t: Tensor, d: INT, i: Dynamic| {
        ok(t.index_select(d, &index_arg("index_select", &t, &i)?))
    });
    engine.register_fn("gather", |t: Tensor, d: INT, i: Dynamic| {
        ok(t.gather(d, &index_arg("gather", &t, &i)?))
    });
    engine.register_fn("index_add", |t: Tensor, d: INT, i: Dynamic, s: Tensor| {
        ok(t.index_add(d, &index_arg("index_add", &t, &i)?, &s))
    });
    engine.register_fn("scatter_add", |t: Tensor, d: INT, i: Dynamic, s: Tensor| {
        ok(t.scatter_add(d, &index_arg("scatter_add", &t, &i)?, &s))
    });
}

fn register_conversions(engine: &mut Engine) {
    engine.register_fn("item", |t: &mut Tensor| ok(t.item()).map(scalar_to_dynamic));
    engine.register_fn("to_list", |t: &mut Tensor| tensor_to_nested(t));
    engine.register_fn("tolist", |t: &mut Tensor| tensor_to_nested(t));
    engine.register_fn("to_string", |t: &mut Tensor| t.to_string());
    engine.register_fn("to_debug", |t: &mut Tensor| t.to_string());
    engine.register_fn("to_dtype", |t: Tensor, s: &str| {
        ok(t.to_dtype(ok(DType::parse(s))?))
    });
    engine.register_fn("to", |t: Tensor, s: &str| -> RhaiResult<Tensor> {
        match (DType::parse(s), Device::parse(s)) {
            (Ok(d), _) => ok(t.to_dtype(d)),
            (_, Ok(dev)) => ok(t.to_device(dev)),
            _ => Err(script_error(format!(
                "to: '{s}' is neither a dtype (f32, f64, f16, bf16, i64, i32, u8, bool) nor a device (cpu, cuda)"
            ))),
        }
    });
    engine.register_fn("to", |t: Tensor, other: Tensor| -> RhaiResult<Tensor> {
        ok(t.to_device(other.device())
            .and_then(|x| x.to_dtype(other.dtype())))
    });
    engine.register_fn("cpu", |t: Tensor| ok(t.to_device(Device::Cpu)));
    engine.register_fn("cuda", |t: Tensor| ok(t.to_device(Device::Cuda(0))));
    for (name, dtype) in [
        ("float", DType::F32),
        ("double", DType::F64),
        ("half", DType::F16),
        ("bfloat16", DType::BF16),
        ("long", DType::I64),
        ("int", DType::I32),
    ] {
        engine.register_fn(name, move |t: Tensor| ok(t.to_dtype(dtype)));
    }
}

fn register_inplace(engine: &mut Engine, rt: &Arc<Runtime>) {
    for (name, op) in [
        ("add_", BinaryOp::Add),
        ("sub_", BinaryOp::Sub),
        ("mul_", BinaryOp::Mul),
        ("div_", BinaryOp::Div),
    ] {
        engine.register_fn(name, move |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
            match v.clone().try_cast::<Tensor>() {
                Some(b) => ok(t.binary_(op, &b))?,
                None => ok(t.binary_scalar_(op, scalar(name, &v)?))?,
            }
            Ok(t.clone())
        });
    }
    let r = rt.clone();
    engine.register_fn("copy_", move |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
        ok(t.copy_(&operand("copy_", &v, Some(t), r.device())?))?;
        Ok(t.clone())
    });
    engine.register_fn("fill_", |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
        ok(t.fill_(scalar("fill_", &v)?))?;
        Ok(t.clone())
    });
    engine.register_fn("zero_", |t: &mut Tensor| -> RhaiResult<Tensor> {
        ok(t.fill_(crate::tensor::Scalar::Int(0)))?;
        Ok(t.clone())
    });
}
