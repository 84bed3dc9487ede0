//! PyTorch's other spellings of kiln functions (its NumPy-style aliases:
//! `absolute`, `arccos`, `divide`, `greater`, `concat`, `clip`, ...), the
//! small `Tensor` conveniences (`type_as`, `new_zeros`, `nelement`,
//! `ravel`, `bool()`, ...), and the script side of `tensor/combine.rs`
//! (`logaddexp`, `fmax`, `heaviside`, `isin`), `rot90`, `hsplit`,
//! `vsplit`, `dsplit`, `broadcast_tensors`, `broadcast_shapes`, the
//! trapezoid rule (`tensor/integrate.rs`), `mv`, `vdot`, `dist` and `addr`.
//! Argument conversion only.

use super::convert::{
    ints, nested_to_tensor, number, ok, operand, scalar, script_error, shape, tensor_array, tensor_list,
    RhaiResult,
};
use super::registry::{Api, Category};
use crate::core::op::{BinaryOp, CmpOp, UnaryOp};
use crate::core::{DType, Scalar};
use crate::tensor::integrate::Spacing;
use crate::tensor::rearrange::Sections;
use crate::tensor::statistics::NormOrd;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, INT};

/// `d` as a tensor next to `like` (numbers take its dtype and device).
fn tensor_arg(op: &str, d: &Dynamic, like: &Tensor) -> RhaiResult<Tensor> {
    let t = operand(op, d, Some(like), like.device())?;
    ok(t.to_device(like.device()))
}

/// Registers the aliases and conveniences.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Math);
    register_math_aliases(&mut api);
    api.category(Category::Properties);
    register_conveniences(&mut api);
    api.category(Category::Math);
    register_compositions(&mut api);
    api.category(Category::Views);
    register_splits_and_broadcasts(&mut api);
    api.category(Category::Math);
    register_trapezoid(&mut api);
}

fn register_splits_and_broadcasts(api: &mut Api) {
    type Split = fn(&Tensor, Sections<'_>) -> crate::Result<Vec<Tensor>>;
    let splits: [(&str, &'static str, Split); 3] = [
        (
            "hsplit",
            "tensor_split along dim 1 (0 for 1-D): a number of equal sections or indices",
            Tensor::hsplit,
        ),
        (
            "vsplit",
            "tensor_split along dim 0 (at least 2 dims): a number of equal sections or indices",
            Tensor::vsplit,
        ),
        (
            "dsplit",
            "tensor_split along dim 2 (at least 3 dims): a number of equal sections or indices",
            Tensor::dsplit,
        ),
    ];
    for (name, doc, f) in splits {
        api.doc(doc).func(
            name,
            ["t", "sections"],
            move |t: Tensor, s: Dynamic| -> RhaiResult<Array> {
                match s.as_int() {
                    Ok(n) => tensor_array(f(&t, Sections::Count(n))),
                    Err(_) => tensor_array(f(&t, Sections::At(&ints(name, "indices", &s)?))),
                }
            },
        );
    }
    api.doc("the tensors as views broadcast to their common shape")
        .func("broadcast_tensors", ["tensors"], |l: Array| {
            tensor_array(Tensor::broadcast_tensors(&tensor_list("broadcast_tensors", &l)?))
        });
    let shapes = |l: &[Dynamic]| -> RhaiResult<Array> {
        let shapes = l
            .iter()
            .map(|s| shape("broadcast_shapes", s))
            .collect::<RhaiResult<Vec<_>>>()?;
        let refs: Vec<&[usize]> = shapes.iter().map(|s| s.as_slice()).collect();
        let out = ok(crate::tensor::view::broadcast_all("broadcast_shapes", &refs))?;
        Ok(out.into_iter().map(|d| Dynamic::from(d as INT)).collect())
    };
    api.doc("the shape the given shapes broadcast to").func(
        "broadcast_shapes",
        ["a", "b"],
        move |a: Dynamic, b: Dynamic| shapes(&[a, b]),
    );
    api.doc("the shape the given shapes broadcast to").func(
        "broadcast_shapes",
        ["a", "b", "c"],
        move |a: Dynamic, b: Dynamic, c: Dynamic| shapes(&[a, b, c]),
    );
}

/// The spacing of `trapezoid`'s options map (`x` or `dx`) and its dim.
fn spacing_of<'a>(op: &str, m: &'a Map, x: &'a mut Option<Tensor>) -> RhaiResult<(f64, i64)> {
    let (mut dx, mut dim) = (1.0, -1);
    for (k, v) in m {
        match k.as_str() {
            "x" => {
                *x = Some(v.clone().try_cast::<Tensor>().ok_or_else(|| {
                    script_error(format!(
                        "{op}: option 'x' must be a Tensor, got {}",
                        v.type_name()
                    ))
                })?)
            }
            "dx" => dx = number(op, "dx", v)?,
            "dim" => {
                dim = v
                    .as_int()
                    .map_err(|t| script_error(format!("{op}: option 'dim' must be an int, got {t}")))?
            }
            other => {
                return Err(script_error(format!(
                    "{op}: unknown option '{other}' (expected x, dx, dim)"
                )))
            }
        }
    }
    if x.is_some() && m.contains_key("dx") {
        return Err(script_error(format!("{op}: give x or dx, not both")));
    }
    Ok((dx, dim))
}

fn register_trapezoid(api: &mut Api) {
    type Rule = fn(&Tensor, Spacing<'_>, i64) -> crate::Result<Tensor>;
    let rules: [(&str, &'static str, Rule); 3] = [
        ("trapezoid", "the integral of y along dim (-1) by the trapezoid rule; options x (sample points) or dx (1), dim", Tensor::trapezoid),
        ("trapz", "= trapezoid", Tensor::trapezoid),
        ("cumulative_trapezoid", "the running trapezoid-rule integral of y along dim (-1): n - 1 values; options x or dx, dim", Tensor::cumulative_trapezoid),
    ];
    for (name, doc, f) in rules {
        api.doc(doc)
            .func(name, ["y"], move |y: Tensor| ok(f(&y, Spacing::Step(1.0), -1)));
        api.doc(doc).func(name, ["y", "x"], move |y: Tensor, x: Tensor| {
            ok(f(&y, Spacing::Points(&x), -1))
        });
        api.doc(doc).func(
            name,
            ["y", "opts"],
            move |y: Tensor, m: Map| -> RhaiResult<Tensor> {
                let mut x = None;
                let (dx, dim) = spacing_of(name, &m, &mut x)?;
                let spacing = match &x {
                    Some(x) => Spacing::Points(x),
                    None => Spacing::Step(dx),
                };
                ok(f(&y, spacing, dim))
            },
        );
    }
}

fn register_math_aliases(api: &mut Api) {
    use UnaryOp::*;
    for (name, op) in [
        ("absolute", Abs),
        ("negative", Neg),
        ("arccos", Acos),
        ("arccosh", Acosh),
        ("arcsin", Asin),
        ("arcsinh", Asinh),
        ("arctan", Atan),
        ("arctanh", Atanh),
        ("sgn", Sign),
    ] {
        api.doc(op.doc())
            .func(name, ["t"], move |t: Tensor| ok(t.unary(op)));
    }
    api.doc("t itself (torch.positive)")
        .func("positive", ["t"], |t: Tensor| t);
    for (name, op) in [
        ("divide", BinaryOp::Div),
        ("multiply", BinaryOp::Mul),
        ("subtract", BinaryOp::Sub),
    ] {
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
    for (name, op) in [
        ("greater", CmpOp::Gt),
        ("greater_equal", CmpOp::Ge),
        ("less", CmpOp::Lt),
        ("less_equal", CmpOp::Le),
        ("not_equal", CmpOp::Ne),
    ] {
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
    api.doc("the bitwise complement of integers, logical not of bools (torch.bitwise_not, ~x)")
        .func("bitwise_not", ["t"], |t: Tensor| -> RhaiResult<Tensor> {
            match t.dtype() {
                DType::Bool => ok(t.unary(UnaryOp::LogicalNot)),
                // xor with all bits set
                DType::U8 => ok(t.binary_scalar(BinaryOp::BitXor, Scalar::Int(0xff), false)),
                d if d.is_int() => ok(t.binary_scalar(BinaryOp::BitXor, Scalar::Int(-1), false)),
                d => Err(script_error(format!(
                    "bitwise_not: integers and bool only, got {d}"
                ))),
            }
        });
    const CAT: &str = "tensors joined along dim (0 by default; = cat)";
    for name in ["concat", "concatenate"] {
        api.doc(CAT)
            .func(name, ["tensors", "dim"], move |l: Array, d: INT| {
                ok(Tensor::cat(&tensor_list(name, &l)?, d))
            });
        api.doc(CAT).func(name, ["tensors"], move |l: Array| {
            ok(Tensor::cat(&tensor_list(name, &l)?, 0))
        });
    }
}

fn register_conveniences(api: &mut Api) {
    api.doc("the elements in one dimension, a view when possible (torch.ravel)")
        .func("ravel", ["t"], |t: Tensor| ok(t.reshape(&[-1])));
    api.doc("the number of elements (= numel)")
        .func("nelement", ["t"], |t: &mut Tensor| t.numel() as INT);
    api.doc("the number of dims (= ndim)")
        .func("ndimension", ["t"], |t: &mut Tensor| t.ndim() as INT);
    api.doc("true for a floating-point dtype")
        .func("is_floating_point", ["t"], |t: &mut Tensor| t.dtype().is_float());
    api.doc("bytes per element")
        .func("element_size", ["t"], |t: &mut Tensor| {
            t.dtype().size_in_bytes() as INT
        });
    api.doc("t in other's dtype (torch.Tensor.type_as)").func(
        "type_as",
        ["t", "other"],
        |t: Tensor, o: Tensor| ok(t.to_dtype(o.dtype())),
    );
    for (name, dtype, doc) in [
        ("bool", DType::Bool, "t converted to bool"),
        ("byte", DType::U8, "t converted to u8"),
    ] {
        api.doc(doc)
            .func(name, ["t"], move |t: Tensor| ok(t.to_dtype(dtype)));
    }
    api.doc("t.transpose(-2, -1) (the adjoint of real matrices)")
        .func("adjoint", ["t"], |t: Tensor| ok(t.transpose(-2, -1)));
    api.doc("a copy of t.narrow(dim, start, length)").func(
        "narrow_copy",
        ["t", "dim", "start", "length"],
        |t: Tensor, d: INT, s: INT, n: INT| ok(t.narrow(d, s, n).and_then(|v| v.clone_data())),
    );
    // new_*: t's dtype and device
    type Make = fn(&[usize], Option<DType>, crate::core::Device) -> crate::Result<Tensor>;
    let makers: [(&str, &'static str, Make); 3] = [
        (
            "new_zeros",
            "zeros of shape in t's dtype, on t's device",
            Tensor::zeros,
        ),
        (
            "new_ones",
            "ones of shape in t's dtype, on t's device",
            Tensor::ones,
        ),
        (
            "new_empty",
            "a tensor of shape in t's dtype on t's device (kiln fills it with zeros)",
            Tensor::zeros,
        ),
    ];
    for (name, doc, make) in makers {
        api.doc(doc)
            .func(name, ["t", "shape"], move |t: Tensor, s: Dynamic| {
                ok(make(&shape(name, &s)?, Some(t.dtype()), t.device()))
            });
    }
    api.doc("value everywhere in a tensor of shape, in t's dtype on t's device")
        .func(
            "new_full",
            ["t", "shape", "value"],
            |t: Tensor, s: Dynamic, v: Dynamic| {
                ok(Tensor::full(
                    &shape("new_full", &s)?,
                    scalar("new_full", &v)?,
                    Some(t.dtype()),
                    t.device(),
                ))
            },
        );
    api.doc("data (nested arrays or a number) as a tensor in t's dtype on t's device")
        .func("new_tensor", ["t", "data"], |t: Tensor, d: Dynamic| {
            nested_to_tensor(&d, Some(t.dtype()), t.device())
        });
}

fn register_compositions(api: &mut Api) {
    type Binary = fn(&Tensor, &Tensor) -> crate::Result<Tensor>;
    let binaries: [(&str, &'static str, Binary); 5] = [
        (
            "logaddexp",
            "log(exp(t) + exp(other)) without overflow",
            Tensor::logaddexp,
        ),
        (
            "logaddexp2",
            "log2(2^t + 2^other) without overflow",
            Tensor::logaddexp2,
        ),
        ("fmax", "the larger of each pair, ignoring a NaN", Tensor::fmax),
        ("fmin", "the smaller of each pair, ignoring a NaN", Tensor::fmin),
        (
            "heaviside",
            "0 below zero, 1 above, values at zero",
            Tensor::heaviside,
        ),
    ];
    for (name, doc, f) in binaries {
        api.doc(doc)
            .func(name, ["t", "other"], move |t: Tensor, o: Dynamic| {
                ok(f(&t, &tensor_arg(name, &o, &t)?))
            });
    }
    api.doc("true where an element of t is among test's elements (torch.isin)")
        .func("isin", ["t", "test"], |t: Tensor, o: Dynamic| {
            ok(t.isin(&tensor_arg("isin", &o, &t)?, false))
        });
    api.doc("isin with options #{invert}").func(
        "isin",
        ["t", "test", "opts"],
        |t: Tensor, o: Dynamic, m: Map| -> RhaiResult<Tensor> {
            let mut invert = false;
            for (k, v) in &m {
                match k.as_str() {
                    "invert" => {
                        invert = v.as_bool().map_err(|t| {
                            script_error(format!("isin: option 'invert' must be true or false, got {t}"))
                        })?
                    }
                    other => {
                        return Err(script_error(format!(
                            "isin: unknown option '{other}' (expected invert)"
                        )))
                    }
                }
            }
            ok(t.isin(&tensor_arg("isin", &o, &t)?, invert))
        },
    );
    api.doc("t turned by 90° once in the plane of dims 0 and 1")
        .func("rot90", ["t"], |t: Tensor| ok(t.rot90(1, &[0, 1])));
    api.doc("t turned by 90° k times in the plane of dims 0 and 1")
        .func("rot90", ["t", "k"], |t: Tensor, k: INT| ok(t.rot90(k, &[0, 1])));
    api.doc("t turned by 90° k times in the plane of dims [d0, d1], from d0 towards d1")
        .func("rot90", ["t", "k", "dims"], |t: Tensor, k: INT, d: Dynamic| {
            ok(t.rot90(k, &super::convert::ints("rot90", "dims", &d)?))
        });
    api.doc("matrix × vector: a [n, m] @ v [m] (torch.mv)").func(
        "mv",
        ["a", "v"],
        |a: Tensor, v: Tensor| -> RhaiResult<Tensor> {
            if a.ndim() != 2 || v.ndim() != 1 {
                return Err(script_error(format!(
                    "mv: expects a matrix and a vector, got shapes {:?} and {:?}",
                    a.shape(),
                    v.shape()
                )));
            }
            ok(a.matmul(&v))
        },
    );
    api.doc("the dot product of two vectors (real: = dot)").func(
        "vdot",
        ["a", "b"],
        |a: Tensor, b: Tensor| ok(a.dot(&b)),
    );
    api.doc("the 2-norm of a - b (torch.dist)")
        .func("dist", ["a", "b"], |a: Tensor, b: Tensor| {
            ok(a.sub(&b).and_then(|d| d.norm(NormOrd::P(2.0), &[], false)))
        });
    api.doc("the p-norm of a - b (torch.dist)").func(
        "dist",
        ["a", "b", "p"],
        |a: Tensor, b: Tensor, p: Dynamic| -> RhaiResult<Tensor> {
            let p = super::convert::number("dist", "p", &p)?;
            ok(a.sub(&b).and_then(|d| d.norm(NormOrd::P(p), &[], false)))
        },
    );
    api.doc("t + outer(v1, v2) (torch.addr)").func(
        "addr",
        ["t", "v1", "v2"],
        |t: Tensor, a: Tensor, b: Tensor| ok(a.outer(&b).and_then(|o| t.add(&o))),
    );
    api.doc("beta·t + alpha·outer(v1, v2); options beta, alpha (1)")
        .func(
            "addr",
            ["t", "v1", "v2", "opts"],
            |t: Tensor, a: Tensor, b: Tensor, m: Map| -> RhaiResult<Tensor> {
                let (mut beta, mut alpha) = (1.0, 1.0);
                for (k, v) in &m {
                    match k.as_str() {
                        "beta" => beta = super::convert::number("addr", "beta", v)?,
                        "alpha" => alpha = super::convert::number("addr", "alpha", v)?,
                        other => {
                            return Err(script_error(format!(
                                "addr: unknown option '{other}' (expected beta, alpha)"
                            )))
                        }
                    }
                }
                let o = ok(a.outer(&b).and_then(|o| o.mul_scalar(alpha)))?;
                // beta 0 ignores t (NaN in it too), as PyTorch's addr
                let base = if beta == 0.0 {
                    ok(t.zeros_like())?
                } else {
                    ok(t.mul_scalar(beta))?
                };
                ok(base.add(&o))
            },
        );
}
