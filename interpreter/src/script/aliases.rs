//! PyTorch's other spellings of kiln functions (its NumPy-style aliases:
//! `absolute`, `arccos`, `divide`, `greater`, `concat`, `clip`, ...), the
//! small `Tensor` conveniences (`type_as`, `new_zeros`, `nelement`,
//! `ravel`, `bool()`, `type()`, `apply_`, `fill_diagonal_`, `put`, `sum_to_size`, the in-place
//! view changes `t_`/`transpose_`/`squeeze_`/`unsqueeze_`/`detach_`, ...),
//! and the script side of `tensor/combine.rs` (`logaddexp`, `fmax`,
//! `heaviside`, `isin`), `rot90`, `hsplit`, `vsplit`, `dsplit`,
//! `broadcast_tensors`, `broadcast_shapes`, the calculus of
//! `tensor/integrate.rs` (trapezoid rule, `gradient`), `mv`, `vdot`, `dist`
//! and `addr`. Argument conversion only.

use super::convert::{
    ints, nested_to_tensor, number, ok, operand, scalar, script_error, shape, tensor_array, tensor_list,
    RhaiResult,
};
use super::methods::{register_binary, register_compare};
use super::registry::{Api, Category};
use crate::core::op::{BinaryOp, CmpOp, UnaryOp};
use crate::core::HostValues;
use crate::core::{DType, Scalar};
use crate::tensor::integrate::Spacing;
use crate::tensor::rearrange::Sections;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, FnPtr, Map, NativeCallContext, INT};

/// `d` as a tensor next to `like` (numbers take its dtype and device).
fn tensor_arg(op: &str, d: &Dynamic, like: &Tensor) -> RhaiResult<Tensor> {
    let t = operand(op, d, Some(like), like.device())?;
    ok(t.to_device(like.device()))
}

/// `t.apply_(f)`: `f` of every element, written back in place.
fn apply_elementwise(ctx: NativeCallContext, t: &mut Tensor, f: FnPtr) -> RhaiResult<Tensor> {
    const OP: &str = "apply_";
    if t.device().is_cuda() {
        return Err(script_error(format!(
            "{OP}: only works on CPU tensors (as torch.Tensor.apply_), got one on {}",
            t.device()
        )));
    }
    let call = |x: Dynamic| f.call_within_context::<Dynamic>(&ctx, (x,));
    let out = match ok(t.to_host())? {
        HostValues::Bool(v) => HostValues::Bool(
            v.into_iter()
                .map(|x| {
                    let r = call(Dynamic::from_bool(x))?;
                    r.as_bool()
                        .or_else(|_| number(OP, "f's result", &r).map(|n| n != 0.0))
                })
                .collect::<RhaiResult<_>>()?,
        ),
        HostValues::Int(v) => HostValues::Int(
            v.into_iter()
                .map(|x| {
                    let r = call(Dynamic::from_int(x))?;
                    r.as_int()
                        .or_else(|_| number(OP, "f's result", &r).map(|n| n as i64))
                })
                .collect::<RhaiResult<_>>()?,
        ),
        HostValues::Float(v) => HostValues::Float(
            v.into_iter()
                .map(|x| number(OP, "f's result", &call(Dynamic::from_float(x))?))
                .collect::<RhaiResult<_>>()?,
        ),
    };
    let new = ok(Tensor::from_host(&out, t.shape(), t.dtype(), t.device()))?;
    ok(t.assign_(OP, &new))?;
    Ok(t.clone())
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
    const SPLIT_SIZES: &str = "views along dim (0 by default) of the sizes given, which must sum to its size";
    api.doc(SPLIT_SIZES).func(
        "split_with_sizes",
        ["t", "split_sizes"],
        |t: Tensor, s: Dynamic| {
            tensor_array(t.split_with_sizes(&ints("split_with_sizes", "split_sizes", &s)?, 0))
        },
    );
    api.doc(SPLIT_SIZES).func(
        "split_with_sizes",
        ["t", "split_sizes", "dim"],
        |t: Tensor, s: Dynamic, d: INT| {
            tensor_array(t.split_with_sizes(&ints("split_with_sizes", "split_sizes", &s)?, d))
        },
    );
    const AS_STRIDED: &str = "the view of t's storage of shape size with stride (elements) from storage_offset (t's own by default); it must stay inside the storage";
    api.doc(AS_STRIDED).func(
        "as_strided",
        ["t", "size", "stride"],
        |t: Tensor, size: Dynamic, stride: Dynamic| {
            ok(t.as_strided(
                &ints("as_strided", "size", &size)?,
                &ints("as_strided", "stride", &stride)?,
                None,
            ))
        },
    );
    api.doc(AS_STRIDED).func(
        "as_strided",
        ["t", "size", "stride", "storage_offset"],
        |t: Tensor, size: Dynamic, stride: Dynamic, offset: INT| {
            ok(t.as_strided(
                &ints("as_strided", "size", &size)?,
                &ints("as_strided", "stride", &stride)?,
                Some(offset),
            ))
        },
    );
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

/// `torch.gradient`'s `spacing`: a number, numbers (one per dim) or 1-D
/// sample-point tensors (one per dim).
enum GradientSpacing {
    Steps(Vec<f64>),
    Points(Vec<Tensor>),
}

fn gradient_spacing(d: &Dynamic) -> RhaiResult<GradientSpacing> {
    const OP: &str = "gradient";
    if let Some(t) = d.clone().try_cast::<Tensor>() {
        return Ok(GradientSpacing::Points(vec![t]));
    }
    match d.clone().try_cast::<Array>() {
        Some(a) if a.iter().all(|x| x.is::<Tensor>()) && !a.is_empty() => {
            Ok(GradientSpacing::Points(tensor_list(OP, &a)?))
        }
        Some(a) => Ok(GradientSpacing::Steps(
            a.iter()
                .map(|x| number(OP, "spacing", x))
                .collect::<RhaiResult<_>>()?,
        )),
        None => Ok(GradientSpacing::Steps(vec![number(OP, "spacing", d)?])),
    }
}

fn register_gradient(api: &mut Api) {
    super::kwargs::register(
        api,
        "gradient",
        "finite-difference derivative estimates along dim (all dims by default), one tensor per dim: central inside, one-sided at the edges; options spacing (1: a number, one per dim, or 1-D sample points per dim), dim, edge_order (1 or 2)",
        ["t"],
        &["spacing", "dim", "edge_order"],
        super::kwargs::Form::Plain,
        |[t], k| {
            let spacing = match k.get("spacing") {
                Some(s) => gradient_spacing(s)?,
                None => GradientSpacing::Steps(vec![1.0]),
            };
            let dims = k.get("dim").map(|d| ints("gradient", "dim", d)).transpose()?;
            let edge = k.int("edge_order", 1)?;
            let spacing: Vec<Spacing<'_>> = match &spacing {
                GradientSpacing::Steps(s) => s.iter().map(|&h| Spacing::Step(h)).collect(),
                GradientSpacing::Points(p) => p.iter().map(Spacing::Points).collect(),
            };
            tensor_array(t.gradient(&spacing, dims.as_deref(), edge))
        },
    );
}

fn register_trapezoid(api: &mut Api) {
    register_gradient(api);
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
        register_binary(api, name, op);
    }
    for (name, op) in [
        ("greater", CmpOp::Gt),
        ("greater_equal", CmpOp::Ge),
        ("less", CmpOp::Lt),
        ("less_equal", CmpOp::Le),
        ("not_equal", CmpOp::Ne),
    ] {
        register_compare(api, name, op);
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

/// The in-place view changes (`t_`, `transpose_`, `squeeze_`,
/// `unsqueeze_`, `detach_`: the variable becomes the new view), and
/// `fill_diagonal_`, `put`/`put_`, `sum_to_size`, `storage_offset`,
/// `is_nonzero`, `is_same_size`, `isreal`, `is_complex`.
fn register_view_changes(api: &mut Api) {
    api.doc("in place: t becomes its transpose (2-D or less); returns it")
        .func("t_", ["t"], |t: &mut Tensor| -> RhaiResult<Tensor> {
            *t = ok(t.t())?;
            Ok(t.clone())
        });
    api.doc("in place: t becomes t.transpose(d0, d1); returns it")
        .func(
            "transpose_",
            ["t", "d0", "d1"],
            |t: &mut Tensor, a: INT, b: INT| -> RhaiResult<Tensor> {
                *t = ok(t.transpose(a, b))?;
                Ok(t.clone())
            },
        );
    api.doc("in place: t loses its dims of size 1; returns it").func(
        "squeeze_",
        ["t"],
        |t: &mut Tensor| -> RhaiResult<Tensor> {
            *t = ok(t.squeeze(None))?;
            Ok(t.clone())
        },
    );
    api.doc("in place: t loses dim d if its size is 1; returns it")
        .func(
            "squeeze_",
            ["t", "d"],
            |t: &mut Tensor, d: INT| -> RhaiResult<Tensor> {
                *t = ok(t.squeeze(Some(&[d])))?;
                Ok(t.clone())
            },
        );
    api.doc("in place: t gains a dim of size 1 at d; returns it")
        .func(
            "unsqueeze_",
            ["t", "d"],
            |t: &mut Tensor, d: INT| -> RhaiResult<Tensor> {
                *t = ok(t.unsqueeze(d))?;
                Ok(t.clone())
            },
        );
    api.doc("in place: t leaves the autograd graph (its variable becomes the detached tensor); returns it")
        .func("detach_", ["t"], |t: &mut Tensor| -> Tensor {
            *t = t.detach();
            t.clone()
        });
    let fill = |t: &mut Tensor, v: &Dynamic, wrap: bool| -> RhaiResult<Tensor> {
        let out = ok(t.fill_diagonal(scalar("fill_diagonal_", v)?, wrap))?;
        ok(t.assign_("fill_diagonal_", &out))?;
        Ok(t.clone())
    };
    api.doc("in place: value on the main diagonal (a matrix, or all dims equal); returns t")
        .func(
            "fill_diagonal_",
            ["t", "value"],
            move |t: &mut Tensor, v: Dynamic| fill(t, &v, false),
        );
    api.doc("in place: value on the main diagonal; wrap: a tall matrix's diagonal starts again every cols + 1 rows")
        .func(
            "fill_diagonal_",
            ["t", "value", "wrap"],
            move |t: &mut Tensor, v: Dynamic, w: bool| fill(t, &v, w),
        );
    for (name, accumulate) in [("put", false), ("put_", false)] {
        let doc =
            "source's values at the flat positions index (negative from the end); options accumulate (false)";
        let f = move |t: &mut Tensor, i: Tensor, s: Dynamic, acc: bool| -> RhaiResult<Tensor> {
            let s = tensor_arg(name, &s, t)?;
            let out = ok(t.put(&i, &s, acc))?;
            if name == "put_" {
                ok(t.assign_("put_", &out))?;
                return Ok(t.clone());
            }
            Ok(out)
        };
        api.doc(doc).func(
            name,
            ["t", "index", "source"],
            move |t: &mut Tensor, i: Tensor, s: Dynamic| f(t, i, s, accumulate),
        );
        api.doc(doc).func(
            name,
            ["t", "index", "source", "accumulate"],
            move |t: &mut Tensor, i: Tensor, s: Dynamic, a: Dynamic| -> RhaiResult<Tensor> {
                let a = match a.clone().try_cast::<Map>() {
                    Some(m) => match m.get("accumulate") {
                        Some(v) if m.len() == 1 => v.as_bool().map_err(|ty| {
                            script_error(format!("{name}: option 'accumulate' must be a bool, got {ty}"))
                        })?,
                        _ => return Err(script_error(format!("{name}: options are #{{accumulate}}"))),
                    },
                    None => a
                        .as_bool()
                        .map_err(|ty| script_error(format!("{name}: accumulate must be a bool, got {ty}")))?,
                };
                f(t, i, s, a)
            },
        );
    }
    api.doc("t summed down to size, which must broadcast to t's shape (Tensor.sum_to_size)")
        .func("sum_to_size", ["t", "size"], |t: Tensor, s: Dynamic| {
            ok(t.sum_to_size(&shape("sum_to_size", &s)?))
        });
    api.doc("the offset of t's first element in its storage, in elements")
        .func("storage_offset", ["t"], |t: &mut Tensor| {
            t.layout().offset() as INT
        });
    api.doc("true when t (one element) is not zero; an error for other sizes")
        .func("is_nonzero", ["t"], |t: Tensor| -> RhaiResult<bool> {
            if t.numel() != 1 {
                return Err(script_error(format!(
                    "is_nonzero: expects a tensor with one element, got shape {:?}",
                    t.shape()
                )));
            }
            Ok(ok(t.item())?.to_f64() != 0.0)
        });
    api.doc("true when t and other have the same shape").func(
        "is_same_size",
        ["t", "other"],
        |t: &mut Tensor, o: Tensor| t.shape() == o.shape(),
    );
    api.doc("true for every element (real tensors have no imaginary part): a bool tensor of t's shape")
        .func("isreal", ["t"], |t: Tensor| {
            ok(Tensor::ones(t.shape(), Some(DType::Bool), t.device()))
        });
    api.doc("false: kiln's tensors are real")
        .func("is_complex", ["t"], |_t: &mut Tensor| false);
}

fn register_conveniences(api: &mut Api) {
    register_view_changes(api);
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
    api.doc("bytes per element (the property Tensor.itemsize)")
        .get("itemsize", ["t"], |t: &mut Tensor| {
            t.dtype().size_in_bytes() as INT
        });
    api.doc("bytes of t's elements, numel · itemsize (the property Tensor.nbytes)")
        .get("nbytes", ["t"], |t: &mut Tensor| {
            (t.numel() * t.dtype().size_in_bytes()) as INT
        });
    api.doc(
        "PyTorch's type name of t: \"torch.FloatTensor\", \"torch.cuda.LongTensor\", ... (torch.Tensor.type)",
    )
    .func("type", ["t"], |t: &mut Tensor| {
        let place = if t.device().is_cuda() { "cuda." } else { "" };
        format!("torch.{place}{}", t.dtype().legacy_type_name())
    });
    api.doc("t converted to a dtype (\"f64\", \"torch.float64\") or a type name (\"torch.DoubleTensor\" on the CPU, \"torch.cuda.DoubleTensor\" on CUDA)")
        .func("type", ["t", "dtype"], |t: Tensor, name: &str| -> RhaiResult<Tensor> {
            let legacy = |rest: &str| crate::core::DType::from_legacy_type_name(rest);
            if let Some(rest) = name.strip_prefix("torch.cuda.") {
                if let Some(d) = legacy(rest) {
                    let cuda = crate::core::Device::parse("cuda").map_err(|e| script_error(format!("type: {e}")))?;
                    return ok(t.to_dtype(d)?.to_device(cuda));
                }
            } else if let Some(d) = name.strip_prefix("torch.").and_then(legacy) {
                return ok(t.to_dtype(d)?.to_device(crate::core::Device::Cpu));
            }
            ok(t.to_dtype(ok(DType::parse(name))?))
        });
    api.doc("in place: every element replaced by f(element), f called from the script once per element (CPU tensors only, as torch.Tensor.apply_; slow); returns t")
        .volatile("apply_", ["t", "f"], apply_elementwise);
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
    api.doc("matrix × vector: a [n, m] @ v [m] (torch.mv)")
        .func("mv", ["a", "v"], |a: Tensor, v: Tensor| ok(a.mv(&v)));
    api.doc("the inner product of two vectors (torch.vdot; = dot for real tensors)")
        .func("vdot", ["a", "b"], |a: Tensor, b: Tensor| ok(a.vdot(&b)));
    api.doc("the 2-norm of a - b (torch.dist)")
        .func("dist", ["a", "b"], |a: Tensor, b: Tensor| ok(a.dist(&b, 2.0)));
    api.doc("the p-norm of a - b (torch.dist)").func(
        "dist",
        ["a", "b", "p"],
        |a: Tensor, b: Tensor, p: Dynamic| -> RhaiResult<Tensor> { ok(a.dist(&b, number("dist", "p", &p)?)) },
    );
    api.doc("t + outer(v1, v2) (torch.addr)").func(
        "addr",
        ["t", "v1", "v2"],
        |t: Tensor, a: Tensor, b: Tensor| ok(t.addr(&a, &b, 1.0, 1.0)),
    );
    api.doc("beta·t + alpha·outer(v1, v2); options beta, alpha (1)")
        .func(
            "addr",
            ["t", "v1", "v2", "opts"],
            |t: Tensor, a: Tensor, b: Tensor, m: Map| -> RhaiResult<Tensor> {
                let (mut beta, mut alpha) = (1.0, 1.0);
                for (k, v) in &m {
                    match k.as_str() {
                        "beta" => beta = number("addr", "beta", v)?,
                        "alpha" => alpha = number("addr", "alpha", v)?,
                        other => {
                            return Err(script_error(format!(
                                "addr: unknown option '{other}' (expected beta, alpha)"
                            )))
                        }
                    }
                }
                ok(t.addr(&a, &b, beta, alpha))
            },
        );
}
