//! Tensor methods (each also callable as a function, `exp(t)` = `t.exp()`):
//! properties, views, math, reductions, nn ops, indexing (index_select,
//! gather, index_add, scatter_add), joins, dtype/device moves, in-place
//! writes, conversions back to Rhai values, and printing.

use super::convert::{
    ints, nested_to_tensor, ok, operand, scalar, scalar_to_dynamic, script_error, shape, shape_to_dynamic,
    tensor_list, tensor_to_nested, RhaiResult,
};
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::core::{DType, Device};
use crate::tensor::cnn::memory_format::MemoryFormat;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, FLOAT, INT};
use std::sync::Arc;

/// Registers every Tensor method and property.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Properties);
    register_properties(&mut api);
    register_views(api.category(Category::Views));
    register_math(api.category(Category::Math));
    register_reductions(api.category(Category::Reductions));
    register_nn(api.category(Category::Nn));
    register_indexing(api.category(Category::Indexing));
    register_conversions(api.category(Category::Conversions));
    register_inplace(api.category(Category::Conversions), rt);
}

fn register_properties(api: &mut Api) {
    api.doc("the shape, as an array of ints")
        .get("shape", ["t"], |t: &mut Tensor| shape_to_dynamic(t.shape()));
    api.doc("the dtype's name (\"f32\", \"i64\", ...)")
        .get("dtype", ["t"], |t: &mut Tensor| t.dtype().name().to_string());
    api.doc("the device (\"cpu\", \"cuda:0\")")
        .get("device", ["t"], |t: &mut Tensor| t.device().to_string());
    api.doc("the number of dims")
        .get("ndim", ["t"], |t: &mut Tensor| t.ndim() as INT);
    api.doc("the number of elements")
        .get("numel", ["t"], |t: &mut Tensor| t.numel() as INT);
    api.doc("all dims reversed (a view)")
        .get("T", ["t"], |t: &mut Tensor| {
            ok(t.permute(&(0..t.ndim() as i64).rev().collect::<Vec<_>>()))
        });
    api.doc("the last two dims swapped (a view)")
        .get("mT", ["t"], |t: &mut Tensor| ok(t.mt()));
    api.doc("the last two dims swapped (a view; the conjugate transpose of a real tensor)")
        .get("mH", ["t"], |t: &mut Tensor| ok(t.mt()));
    api.doc("the shape, as an array of ints")
        .func("size", ["t"], |t: &mut Tensor| shape_to_dynamic(t.shape()));
    api.doc("the size of dim d")
        .func("size", ["t", "d"], |t: &mut Tensor, d: INT| -> RhaiResult<INT> {
            let d = ok(crate::core::shape::normalize_dim("size", d, t.shape()))?;
            Ok(t.shape()[d] as INT)
        });
    api.doc("the strides in elements, as an array of ints (one per dim)")
        .func("stride", ["t"], |t: &mut Tensor| {
            shape_to_dynamic(t.layout().strides())
        });
    api.doc("the stride of dim d in elements").func(
        "stride",
        ["t", "d"],
        |t: &mut Tensor, d: INT| -> RhaiResult<INT> {
            let d = ok(crate::core::shape::normalize_dim("stride", d, t.shape()))?;
            Ok(t.layout().strides()[d] as INT)
        },
    );
    api.doc("the number of dims")
        .func("dim", ["t"], |t: &mut Tensor| t.ndim() as INT);
    api.doc("the number of elements")
        .func("numel", ["t"], |t: &mut Tensor| t.numel() as INT);
    api.doc("the size of the first dim")
        .func("len", ["t"], |t: &mut Tensor| -> RhaiResult<INT> {
            t.shape()
                .first()
                .map(|&n| n as INT)
                .ok_or_else(|| script_error("len: a 0-dim tensor has no length"))
        });
    api.doc("true when the elements are dense in row-major order")
        .func("is_contiguous", ["t"], |t: &mut Tensor| t.is_contiguous());
    api.doc("true when the elements are dense in that memory format's order")
        .func(
            "is_contiguous",
            ["t", "memory_format"],
            |t: &mut Tensor, f: &str| {
                ok(MemoryFormat::parse("is_contiguous", f).map(|f| t.is_contiguous_format(f)))
            },
        );
    api.doc("true when a and b are views of the same memory").func(
        "shares_storage",
        ["a", "b"],
        |a: &mut Tensor, b: Tensor| a.shares_storage(&b),
    );
}

fn register_views(api: &mut Api) {
    for (name, doc) in [
        (
            "reshape",
            "the same elements in a new shape (one dim may be -1); a view when possible",
        ),
        (
            "view",
            "the same elements in a new shape (one dim may be -1), always a view",
        ),
    ] {
        let f = move |t: &Tensor, s: Vec<i64>| {
            if name == "view" {
                ok(t.view(&s))
            } else {
                ok(t.reshape(&s))
            }
        };
        api.doc(doc)
            .func(name, ["t", "shape"], move |t: Tensor, s: Dynamic| {
                f(&t, ints(name, "a shape", &s)?)
            });
        api.doc(doc)
            .func(name, ["t", "d0", "d1"], move |t: Tensor, a: INT, b: INT| {
                f(&t, vec![a, b])
            });
        api.doc(doc).func(
            name,
            ["t", "d0", "d1", "d2"],
            move |t: Tensor, a: INT, b: INT, c: INT| f(&t, vec![a, b, c]),
        );
        api.doc(doc).func(
            name,
            ["t", "d0", "d1", "d2", "d3"],
            move |t: Tensor, a: INT, b: INT, c: INT, d: INT| f(&t, vec![a, b, c, d]),
        );
    }
    const PERMUTE: &str = "the dims in a new order (a view)";
    api.doc(PERMUTE)
        .func("permute", ["t", "dims"], |t: Tensor, s: Dynamic| {
            ok(t.permute(&ints("permute", "dims", &s)?))
        });
    api.doc(PERMUTE)
        .func("permute", ["t", "d0", "d1"], |t: Tensor, a: INT, b: INT| {
            ok(t.permute(&[a, b]))
        });
    api.doc(PERMUTE).func(
        "permute",
        ["t", "d0", "d1", "d2"],
        |t: Tensor, a: INT, b: INT, c: INT| ok(t.permute(&[a, b, c])),
    );
    api.doc(PERMUTE).func(
        "permute",
        ["t", "d0", "d1", "d2", "d3"],
        |t: Tensor, a: INT, b: INT, c: INT, d: INT| ok(t.permute(&[a, b, c, d])),
    );
    const FLATTEN: &str = "dims start..=end (all by default) merged into one";
    api.doc(FLATTEN)
        .func("flatten", ["t"], |t: Tensor| ok(t.flatten(0, -1)));
    api.doc(FLATTEN).func(
        "flatten",
        ["t", "start"],
        |t: Tensor, s: INT| ok(t.flatten(s, -1)),
    );
    api.doc(FLATTEN)
        .func("flatten", ["t", "start", "end"], |t: Tensor, s: INT, e: INT| {
            ok(t.flatten(s, e))
        });
    api.doc("the transpose of a matrix (a view; 0-d and 1-d unchanged)")
        .func("t", ["t"], |t: Tensor| ok(t.t()));
    api.doc("dims d0 and d1 swapped (a view)").func(
        "transpose",
        ["t", "d0", "d1"],
        |t: Tensor, a: INT, b: INT| ok(t.transpose(a, b)),
    );
    const SQUEEZE: &str = "dims of size 1 removed (all, or those in dims)";
    api.doc(SQUEEZE)
        .func("squeeze", ["t"], |t: Tensor| ok(t.squeeze(None)));
    api.doc(SQUEEZE)
        .func("squeeze", ["t", "dims"], |t: Tensor, d: Dynamic| {
            ok(t.squeeze(Some(&ints("squeeze", "dims", &d)?)))
        });
    api.doc("a dim of size 1 inserted at d")
        .func("unsqueeze", ["t", "d"], |t: Tensor, d: INT| ok(t.unsqueeze(d)));
    const EXPAND: &str = "size-1 dims broadcast to a larger shape, without a copy (-1 keeps a dim)";
    api.doc(EXPAND)
        .func("expand", ["t", "shape"], |t: Tensor, s: Dynamic| {
            ok(t.expand(&ints("expand", "a shape", &s)?))
        });
    api.doc(EXPAND)
        .func("expand", ["t", "d0", "d1"], |t: Tensor, a: INT, b: INT| {
            ok(t.expand(&[a, b]))
        });
    api.doc(EXPAND).func(
        "expand",
        ["t", "d0", "d1", "d2"],
        |t: Tensor, a: INT, b: INT, c: INT| ok(t.expand(&[a, b, c])),
    );
    api.doc("t broadcast to other's shape (a view)").func(
        "expand_as",
        ["t", "other"],
        |t: Tensor, o: Tensor| ok(t.broadcast_to(o.shape())),
    );
    api.doc("t broadcast to shape (a view)")
        .func("broadcast_to", ["t", "shape"], |t: Tensor, s: Dynamic| {
            ok(t.broadcast_to(&shape("broadcast_to", &s)?))
        });
    api.doc("length elements of dim d from start (a view)").func(
        "narrow",
        ["t", "d", "start", "length"],
        |t: Tensor, d: INT, s: INT, l: INT| ok(t.narrow(d, s, l)),
    );
    const SLICE: &str = "elements start..end (step 1 by default) of dim d (a view)";
    api.doc(SLICE).func(
        "slice",
        ["t", "d", "start", "end"],
        |t: Tensor, d: INT, s: INT, e: INT| ok(t.slice(d, Some(s), Some(e), 1)),
    );
    api.doc(SLICE).func(
        "slice",
        ["t", "d", "start", "end", "step"],
        |t: Tensor, d: INT, s: INT, e: INT, st: INT| ok(t.slice(d, Some(s), Some(e), st)),
    );
    api.doc("index i of dim d, that dim removed (a view)").func(
        "select",
        ["t", "d", "i"],
        |t: Tensor, d: INT, i: INT| ok(t.select(d, i)),
    );
    api.doc("t itself when dense, else a dense copy")
        .func("contiguous", ["t"], |t: Tensor| ok(t.contiguous()));
    api.doc("t in a memory format: \"contiguous_format\", \"channels_last\" (4-D, NHWC in memory) or \"channels_last_3d\"")
        .func("contiguous", ["t", "memory_format"], |t: Tensor, f: &str| {
            ok(MemoryFormat::parse("contiguous", f).and_then(|f| t.contiguous_format(f)))
        });
    api.doc("a copy with its own memory (stays in the autograd graph)")
        .func("clone", ["t"], |t: Tensor| ok(t.clone_data()));
    const CAT: &str = "tensors joined along an existing dim (0 by default)";
    api.doc(CAT).func("cat", ["tensors", "dim"], |l: Array, d: INT| {
        ok(Tensor::cat(&tensor_list("cat", &l)?, d))
    });
    api.doc(CAT).func("cat", ["tensors"], |l: Array| {
        ok(Tensor::cat(&tensor_list("cat", &l)?, 0))
    });
    const STACK: &str = "tensors of one shape joined along a new dim (0 by default)";
    api.doc(STACK)
        .func("stack", ["tensors", "dim"], |l: Array, d: INT| {
            ok(Tensor::stack(&tensor_list("stack", &l)?, d))
        });
    api.doc(STACK).func("stack", ["tensors"], |l: Array| {
        ok(Tensor::stack(&tensor_list("stack", &l)?, 0))
    });
}

/// `name(a, b)` for a binary op row: `b` a tensor (broadcast) or a number.
pub(super) fn register_binary(api: &mut Api, name: &'static str, op: BinaryOp) {
    api.doc(op.doc()).func(
        name,
        ["a", "b"],
        move |a: Tensor, b: Dynamic| -> RhaiResult<Tensor> {
            match b.clone().try_cast::<Tensor>() {
                Some(b) => ok(a.binary(op, &b)),
                None => ok(a.binary_scalar(op, scalar(name, &b)?, false)),
            }
        },
    );
}

/// `name(a, b)` for a comparison: `b` a tensor (broadcast) or a number.
pub(super) fn register_compare(api: &mut Api, name: &'static str, op: CmpOp) {
    api.doc(op.doc()).func(
        name,
        ["a", "b"],
        move |a: Tensor, b: Dynamic| -> RhaiResult<Tensor> {
            match b.clone().try_cast::<Tensor>() {
                Some(b) => ok(a.compare(op, &b)),
                None => ok(a.compare_scalar(op, scalar(name, &b)?, false)),
            }
        },
    );
}

fn register_math(api: &mut Api) {
    for &op in UnaryOp::ALL {
        api.doc(op.doc())
            .func(op.name(), ["t"], move |t: Tensor| ok(t.unary(op)));
    }
    use BinaryOp::{BitAnd, BitOr, BitXor, Maximum, Minimum};
    for &op in BinaryOp::ALL {
        register_binary(api, op.name(), op);
    }
    for (name, op, doc) in [
        (
            "logical_and",
            BitAnd,
            "a and b, elementwise, on their truth values (bool result)",
        ),
        (
            "logical_or",
            BitOr,
            "a or b, elementwise, on their truth values (bool result)",
        ),
        (
            "logical_xor",
            BitXor,
            "a xor b, elementwise, on their truth values (bool result)",
        ),
    ] {
        api.doc(doc).func(
            name,
            ["a", "b"],
            move |a: Tensor, b: Tensor| -> RhaiResult<Tensor> {
                let (a, b) = (ok(a.to_dtype(DType::Bool))?, ok(b.to_dtype(DType::Bool))?);
                ok(a.binary(op, &b))
            },
        );
    }
    api.doc(Maximum.doc())
        .func("max", ["a", "b"], |a: Tensor, b: Tensor| ok(a.maximum(&b)));
    api.doc(Minimum.doc())
        .func("min", ["a", "b"], |a: Tensor, b: Tensor| ok(a.minimum(&b)));
    for &op in CmpOp::ALL {
        register_compare(api, op.name(), op);
    }
    let bound = |name: &str, d: &Dynamic| -> RhaiResult<Option<crate::tensor::Scalar>> {
        if d.is_unit() {
            Ok(None)
        } else {
            scalar(name, d).map(Some)
        }
    };
    // clip: PyTorch's other name
    for name in ["clamp", "clip"] {
        api.doc("values limited to [lo, hi]: numbers or tensors (broadcast); () leaves a side open")
            .func(
                name,
                ["t", "lo", "hi"],
                move |t: Tensor, lo: Dynamic, hi: Dynamic| {
                    let (tl, th) = (lo.clone().try_cast::<Tensor>(), hi.clone().try_cast::<Tensor>());
                    if tl.is_some() || th.is_some() {
                        let as_tensor = |d: &Dynamic, t: Option<Tensor>| -> RhaiResult<Option<Tensor>> {
                            match t {
                                Some(t) => Ok(Some(t)),
                                None if d.is_unit() => Ok(None),
                                None => Ok(Some(operand("clamp", d, None, crate::core::Device::Cpu)?)),
                            }
                        };
                        let (l, h) = (as_tensor(&lo, tl)?, as_tensor(&hi, th)?);
                        let dev = |x: Option<Tensor>| -> RhaiResult<Option<Tensor>> {
                            x.map(|x| ok(x.to_device(t.device()))).transpose()
                        };
                        return ok(t.clamp_tensor(dev(l)?.as_ref(), dev(h)?.as_ref()));
                    }
                    ok(t.clamp(bound("clamp", &lo)?, bound("clamp", &hi)?))
                },
            );
    }
    api.doc("values limited to lo or more")
        .func("clamp_min", ["t", "lo"], |t: Tensor, lo: Dynamic| {
            ok(t.clamp(Some(scalar("clamp_min", &lo)?), None))
        });
    api.doc("values limited to hi or less")
        .func("clamp_max", ["t", "hi"], |t: Tensor, hi: Dynamic| {
            ok(t.clamp(None, Some(scalar("clamp_max", &hi)?)))
        });
    api.doc("a where cond is true, else b (tensors or numbers, broadcast)")
        .func(
            "where",
            ["cond", "a", "b"],
            move |c: Tensor, a: Dynamic, b: Dynamic| -> RhaiResult<Tensor> {
                let ta = a.clone().try_cast::<Tensor>();
                let tb = b.clone().try_cast::<Tensor>();
                let dev = c.device();
                let a = operand("where", &a, tb.as_ref(), dev)?;
                let b = operand("where", &b, ta.as_ref().or(Some(&a)), dev)?;
                ok(Tensor::where_cond(&c, &a, &b))
            },
        );
    api.doc("matrix product with batch broadcasting (as a @ b)").func(
        "matmul",
        ["a", "b"],
        |a: Tensor, b: Tensor| ok(a.matmul(&b)),
    );
    api.doc("product of two matrices")
        .func("mm", ["a", "b"], |a: Tensor, b: Tensor| ok(a.mm(&b)));
    api.doc("batched product of [B, n, k] and [B, k, m]")
        .func("bmm", ["a", "b"], |a: Tensor, b: Tensor| ok(a.bmm(&b)));
    api.doc("dot product of two vectors")
        .func("dot", ["a", "b"], |a: Tensor, b: Tensor| ok(a.dot(&b)));
}

/// The dims argument of a reduction: an int or an array of ints.
fn dims(op: &str, d: &Dynamic) -> RhaiResult<Vec<i64>> {
    ints(op, "dims", d)
}

fn register_reductions(api: &mut Api) {
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
        register_reduction(api, op, op.name());
    }
    // `var` is a reserved word in Rhai: scripts call `variance` (also as `t.variance()`).
    register_reduction(api, ReduceOp::Var { correction: 1 }, "variance");
    register_corrected(api);
}

/// One reduction under `name`: whole tensor, `(dims)` and `(dims, keepdim)`.
fn register_reduction(api: &mut Api, op: ReduceOp, name: &'static str) {
    let doc = op.doc();
    api.doc(doc)
        .func(name, ["t"], move |t: Tensor| ok(t.reduce(op, None, false)));
    let single = matches!(
        op,
        ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin
    );
    if matches!(op, ReduceOp::Max | ReduceOp::Min) {
        // as torch.max(t, dim): the values and their indices
        let index_op = if op == ReduceOp::Max {
            ReduceOp::ArgMax
        } else {
            ReduceOp::ArgMin
        };
        let both = move |t: &Tensor, d: INT, k: bool| -> RhaiResult<Array> {
            let values = ok(t.reduce(op, Some(&[d]), k))?;
            let indices = ok(t.reduce(index_op, Some(&[d]), k))?;
            Ok(vec![Dynamic::from(values), Dynamic::from(indices)])
        };
        let doc = if op == ReduceOp::Max {
            "over dim: [values, indices] of the maxima (keepdim keeps dim as size 1), as torch.max(t, dim)"
        } else {
            "over dim: [values, indices] of the minima (keepdim keeps dim as size 1), as torch.min(t, dim)"
        };
        api.doc(doc)
            .func(name, ["t", "dim"], move |t: Tensor, d: INT| both(&t, d, false));
        api.doc(doc).func(
            name,
            ["t", "dim", "keepdim"],
            move |t: Tensor, d: INT, k: bool| both(&t, d, k),
        );
    } else if single {
        api.doc(doc).func(name, ["t", "dim"], move |t: Tensor, d: INT| {
            ok(t.reduce(op, Some(&[d]), false))
        });
        api.doc(doc).func(
            name,
            ["t", "dim", "keepdim"],
            move |t: Tensor, d: INT, k: bool| ok(t.reduce(op, Some(&[d]), k)),
        );
    } else {
        api.doc(doc)
            .func(name, ["t", "dims"], move |t: Tensor, d: Dynamic| {
                ok(t.reduce(op, Some(&dims(name, &d)?), false))
            });
        api.doc(doc).func(
            name,
            ["t", "dims", "keepdim"],
            move |t: Tensor, d: Dynamic, k: bool| ok(t.reduce(op, Some(&dims(name, &d)?), k)),
        );
    }
}

/// `var`/`variance`/`std` with an explicit correction (0 = population statistics).
fn register_corrected(api: &mut Api) {
    for (name, doc) in [
        (
            "var",
            "variance over dims (() for all) with the divisor n - correction",
        ),
        (
            "variance",
            "variance over dims (() for all) with the divisor n - correction",
        ),
        (
            "std",
            "standard deviation over dims (() for all) with the divisor n - correction",
        ),
    ] {
        api.doc(doc).func(
            name,
            ["t", "dims", "keepdim", "correction"],
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

fn register_nn(api: &mut Api) {
    api.doc("softmax along dim: exp(x) normalized to sum 1").func(
        "softmax",
        ["t", "dim"],
        |t: Tensor, d: INT| ok(t.softmax(d)),
    );
    api.doc("log of softmax along dim, computed stably").func(
        "log_softmax",
        ["t", "dim"],
        |t: Tensor, d: INT| ok(t.log_softmax(d)),
    );
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
    const LAYER_NORM: &str =
        "normalization over the last dims (normalized_shape), then weight and bias (eps 1e-5)";
    api.doc(LAYER_NORM).func(
        "layer_norm",
        ["t", "normalized_shape"],
        move |t: Tensor, s: Dynamic| ok(t.layer_norm(&shape("layer_norm", &s)?, None, None, EPS)),
    );
    api.doc(LAYER_NORM).func(
        "layer_norm",
        ["t", "normalized_shape", "weight", "bias"],
        move |t: Tensor, s: Dynamic, w: Dynamic, b: Dynamic| {
            let (w, b) = (opt("layer_norm", &w)?, opt("layer_norm", &b)?);
            ok(t.layer_norm(&shape("layer_norm", &s)?, w.as_ref(), b.as_ref(), EPS))
        },
    );
    api.doc(LAYER_NORM).func(
        "layer_norm",
        ["t", "normalized_shape", "weight", "bias", "eps"],
        move |t: Tensor, s: Dynamic, w: Dynamic, b: Dynamic, eps: FLOAT| {
            let (w, b) = (opt("layer_norm", &w)?, opt("layer_norm", &b)?);
            ok(t.layer_norm(&shape("layer_norm", &s)?, w.as_ref(), b.as_ref(), eps))
        },
    );
}

/// An index argument: an integer tensor, an int, or a (nested) array of ints,
/// made on `x`'s device (an empty array is an empty i64 index).
pub(super) fn index_arg(op: &str, x: &Tensor, d: &Dynamic) -> RhaiResult<Tensor> {
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

fn register_indexing(api: &mut Api) {
    api.doc("the entries of dim d at index (ints or an integer tensor)")
        .func(
            "index_select",
            ["t", "d", "index"],
            |t: Tensor, d: INT, i: Dynamic| ok(t.index_select(d, &index_arg("index_select", &t, &i)?)),
        );
    api.doc("out[..i..] = t[..index[..i..]..] along dim d").func(
        "gather",
        ["t", "d", "index"],
        |t: Tensor, d: INT, i: Dynamic| ok(t.gather(d, &index_arg("gather", &t, &i)?)),
    );
    api.doc("a copy of t with source added at index along dim d")
        .func(
            "index_add",
            ["t", "d", "index", "source"],
            |t: Tensor, d: INT, i: Dynamic, s: Tensor| {
                ok(t.index_add(d, &index_arg("index_add", &t, &i)?, &s))
            },
        );
    api.doc("a copy of t with src added where index points along dim d")
        .func(
            "scatter_add",
            ["t", "d", "index", "src"],
            |t: Tensor, d: INT, i: Dynamic, s: Tensor| {
                ok(t.scatter_add(d, &index_arg("scatter_add", &t, &i)?, &s))
            },
        );
}

fn register_conversions(api: &mut Api) {
    api.doc("the value of a one-element tensor as a number or bool")
        .func("item", ["t"], |t: &mut Tensor| {
            ok(t.item()).map(scalar_to_dynamic)
        });
    api.doc("the values as nested arrays")
        .func("to_list", ["t"], |t: &mut Tensor| tensor_to_nested(t));
    api.doc("the values as nested arrays (as to_list)")
        .func("tolist", ["t"], |t: &mut Tensor| tensor_to_nested(t));
    api.doc("the text print shows")
        .func("to_string", ["t"], |t: &mut Tensor| t.to_string());
    api.doc("the text print shows")
        .func("to_debug", ["t"], |t: &mut Tensor| t.to_string());
    api.doc("a copy converted to dtype (\"f32\", \"bf16\", \"i64\", ...)")
        .func("to_dtype", ["t", "dtype"], |t: Tensor, s: &str| {
            ok(t.to_dtype(ok(DType::parse(s))?))
        });
    api.doc("t converted to a dtype or moved to a device (\"cpu\", \"cuda\")").func("to", ["t", "dtype_or_device"], |t: Tensor, s: &str| -> RhaiResult<Tensor> {
        match (DType::parse(s), Device::parse(s)) {
            (Ok(d), _) => ok(t.to_dtype(d)),
            (_, Ok(dev)) => ok(t.to_device(dev)),
            _ => Err(script_error(format!(
                "to: '{s}' is neither a dtype (f32, f64, f16, bf16, i64, i32, u8, bool) nor a device (cpu, cuda)"
            ))),
        }
    });
    api.doc("t moved and converted by a map of device, dtype and memory_format")
        .func(
            "to",
            ["t", "opts"],
            |t: Tensor, m: rhai::Map| -> RhaiResult<Tensor> {
                let mut t = t;
                for (k, v) in m {
                    let s = v
                        .clone()
                        .into_string()
                        .map_err(|ty| script_error(format!("to: option '{k}' must be a string, got {ty}")))?;
                    t = match k.as_str() {
                        "device" => ok(Device::parse(&s).and_then(|d| t.to_device(d)))?,
                        "dtype" => ok(DType::parse(&s).and_then(|d| t.to_dtype(d)))?,
                        "memory_format" => {
                            ok(MemoryFormat::parse("to", &s).and_then(|f| t.contiguous_format(f)))?
                        }
                        other => {
                            return Err(script_error(format!(
                                "to: unknown option '{other}' (expected device, dtype, memory_format)"
                            )))
                        }
                    };
                }
                Ok(t)
            },
        );
    api.doc("t on other's device with other's dtype").func(
        "to",
        ["t", "other"],
        |t: Tensor, other: Tensor| -> RhaiResult<Tensor> {
            ok(t.to_device(other.device())
                .and_then(|x| x.to_dtype(other.dtype())))
        },
    );
    api.doc("t on the CPU (itself when already there)")
        .func("cpu", ["t"], |t: Tensor| ok(t.to_device(Device::Cpu)));
    api.doc("t on the GPU (itself when already there)")
        .func("cuda", ["t"], |t: Tensor| ok(t.to_device(Device::Cuda(0))));
    for (name, dtype, doc) in [
        ("float", DType::F32, "t converted to f32"),
        ("double", DType::F64, "t converted to f64"),
        ("half", DType::F16, "t converted to f16"),
        ("bfloat16", DType::BF16, "t converted to bf16"),
        ("long", DType::I64, "t converted to i64"),
        ("int", DType::I32, "t converted to i32"),
    ] {
        api.doc(doc)
            .func(name, ["t"], move |t: Tensor| ok(t.to_dtype(dtype)));
    }
}

fn register_inplace(api: &mut Api, rt: &Arc<Runtime>) {
    for (name, op, doc) in [
        (
            "add_",
            BinaryOp::Add,
            "in place: t += v (a tensor or a number); returns t",
        ),
        (
            "sub_",
            BinaryOp::Sub,
            "in place: t -= v (a tensor or a number); returns t",
        ),
        (
            "mul_",
            BinaryOp::Mul,
            "in place: t *= v (a tensor or a number); returns t",
        ),
        (
            "div_",
            BinaryOp::Div,
            "in place: t /= v (a tensor or a number); returns t",
        ),
    ] {
        api.doc(doc).func(
            name,
            ["t", "v"],
            move |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
                match v.clone().try_cast::<Tensor>() {
                    Some(b) => ok(t.binary_(op, &b))?,
                    None => ok(t.binary_scalar_(op, scalar(name, &v)?))?,
                }
                Ok(t.clone())
            },
        );
    }
    let r = rt.clone();
    api.doc("in place: t's elements set from v (broadcast); returns t")
        .func(
            "copy_",
            ["t", "v"],
            move |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
                ok(t.copy_(&operand("copy_", &v, Some(t), r.device())?))?;
                Ok(t.clone())
            },
        );
    api.doc("in place: every element set to v; returns t").func(
        "fill_",
        ["t", "v"],
        |t: &mut Tensor, v: Dynamic| -> RhaiResult<Tensor> {
            ok(t.fill_(scalar("fill_", &v)?))?;
            Ok(t.clone())
        },
    );
    api.doc("in place: every element set to 0; returns t").func(
        "zero_",
        ["t"],
        |t: &mut Tensor| -> RhaiResult<Tensor> {
            ok(t.fill_(crate::tensor::Scalar::Int(0)))?;
            Ok(t.clone())
        },
    );
}
