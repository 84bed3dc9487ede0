//! The script side of the pointwise compositions (`tensor/pointwise.rs`):
//! argument conversion only. Numbers stand for tensors where PyTorch takes
//! either; PyTorch's keyword arguments come in an options map
//! (`addmm(x, a, b, #{beta: 0.5, alpha: 2.0})`, `isclose(a, b, #{rtol: 1e-3})`).

use super::convert::{ints, number, ok, operand, script_error, tensor_list, RhaiResult};
use super::registry::{Api, Category};
use crate::core::op::{BinaryOp, UnaryOp};
use crate::core::Scalar;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, INT};

/// `d` as a tensor next to `like` (numbers take its dtype and device).
fn tensor_arg(op: &str, d: &Dynamic, like: &Tensor) -> RhaiResult<Tensor> {
    let t = operand(op, d, Some(like), like.device())?;
    ok(t.to_device(like.device()))
}

/// The number options `keys` of `m` (with their defaults); others are errors.
fn numbers<const N: usize>(op: &str, m: &Map, keys: [(&str, f64); N]) -> RhaiResult<[f64; N]> {
    if let Some(other) = m.keys().find(|k| !keys.iter().any(|(n, _)| n == k)) {
        let names: Vec<&str> = keys.iter().map(|(n, _)| *n).collect();
        return Err(script_error(format!(
            "{op}: unknown option '{other}' (expected {})",
            names.join(", ")
        )));
    }
    let mut out = [0.0; N];
    for (slot, (key, default)) in out.iter_mut().zip(keys) {
        *slot = m.get(key).map_or(Ok(default), |v| number(op, key, v))?;
    }
    Ok(out)
}

/// Registers the pointwise compositions.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Math);
    let api = &mut api;
    type Binary = fn(&Tensor, &Tensor) -> crate::Result<Tensor>;
    let binaries: [(&str, &'static str, Binary); 6] = [
        (
            "atan2",
            "the angle of the point (other, t) in (-π, π]",
            Tensor::atan2,
        ),
        ("arctan2", "= atan2", Tensor::atan2),
        ("hypot", "sqrt(t² + other²) without overflow", Tensor::hypot),
        ("copysign", "|t| with the sign of other", Tensor::copysign),
        ("xlogy", "t * ln(other), 0 where t is 0", Tensor::xlogy),
        ("float_power", "t ** exponent in f64", Tensor::float_power),
    ];
    for (name, doc, f) in binaries {
        api.doc(doc)
            .func(name, ["t", "other"], move |t: Tensor, o: Dynamic| {
                ok(f(&t, &tensor_arg(name, &o, &t)?))
            });
    }
    api.doc("ψ⁽ⁿ⁾(x), the n-th derivative of digamma (torch.polygamma(n, x); also x.polygamma(n))")
        .func("polygamma", ["n", "x"], |n: INT, x: Tensor| {
            ok(x.binary_scalar(BinaryOp::Polygamma, Scalar::Int(n), false))
        });
    api.doc("rounds toward zero (= trunc)")
        .func("fix", ["t"], |t: Tensor| ok(t.unary(UnaryOp::Trunc)));
    api.doc("t / other as floats (= div)")
        .func("true_divide", ["t", "other"], |t: Tensor, o: Dynamic| {
            ok(t.div(&tensor_arg("true_divide", &o, &t)?))
        });
    type Test = fn(&Tensor) -> crate::Result<Tensor>;
    let tests: [(&str, &'static str, Test); 6] = [
        ("isnan", "true where NaN", Tensor::isnan),
        ("isinf", "true where +inf or -inf", Tensor::isinf),
        ("isposinf", "true where +inf", Tensor::isposinf),
        ("isneginf", "true where -inf", Tensor::isneginf),
        (
            "isfinite",
            "true where neither NaN nor infinite",
            Tensor::isfinite,
        ),
        (
            "signbit",
            "true where the sign bit is set (negative, -0.0, -inf)",
            Tensor::signbit,
        ),
    ];
    for (name, doc, f) in tests {
        api.doc(doc).func(name, ["t"], move |t: Tensor| ok(f(&t)));
    }
    const LOGIT: &str = "ln(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given";
    api.doc(LOGIT).func("logit", ["t"], |t: Tensor| ok(t.logit(None)));
    api.doc(LOGIT)
        .func("logit", ["t", "eps"], |t: Tensor, e: Dynamic| {
            ok(t.logit(Some(number("logit", "eps", &e)?)))
        });
    api.doc("t + weight * (end - t); weight a number or a tensor")
        .func(
            "lerp",
            ["t", "end", "weight"],
            |t: Tensor, e: Dynamic, w: Dynamic| {
                ok(t.lerp(&tensor_arg("lerp", &e, &t)?, &tensor_arg("lerp", &w, &t)?))
            },
        );
    for (name, doc, div) in [
        (
            "addcmul",
            "t + value * t1 * t2 (value 1 by default; also #{value})",
            false,
        ),
        (
            "addcdiv",
            "t + value * t1 / t2 (value 1 by default; also #{value})",
            true,
        ),
    ] {
        let f = move |t: &Tensor, a: &Dynamic, b: &Dynamic, value: f64| -> RhaiResult<Tensor> {
            let (a, b) = (tensor_arg(name, a, t)?, tensor_arg(name, b, t)?);
            ok(if div {
                t.addcdiv(&a, &b, value)
            } else {
                t.addcmul(&a, &b, value)
            })
        };
        api.doc(doc).func(
            name,
            ["t", "t1", "t2"],
            move |t: Tensor, a: Dynamic, b: Dynamic| f(&t, &a, &b, 1.0),
        );
        api.doc(doc).func(
            name,
            ["t", "t1", "t2", "value"],
            move |t: Tensor, a: Dynamic, b: Dynamic, v: Dynamic| {
                let value = match v.clone().try_cast::<Map>() {
                    Some(m) => numbers(name, &m, [("value", 1.0)])?[0],
                    None => number(name, "value", &v)?,
                };
                f(&t, &a, &b, value)
            },
        );
    }
    const NAN_TO_NUM: &str =
        "NaN, +inf, -inf replaced (0 and the dtype's extremes by default); opts #{nan, posinf, neginf}";
    api.doc(NAN_TO_NUM)
        .func("nan_to_num", ["t"], |t: Tensor| ok(t.nan_to_num(0.0, None, None)));
    api.doc(NAN_TO_NUM)
        .func("nan_to_num", ["t", "nan"], |t: Tensor, n: Dynamic| {
            match n.clone().try_cast::<Map>() {
                Some(m) => {
                    if let Some(other) = m
                        .keys()
                        .find(|k| !["nan", "posinf", "neginf"].contains(&k.as_str()))
                    {
                        return Err(script_error(format!(
                            "nan_to_num: unknown option '{other}' (expected nan, posinf, neginf)"
                        )));
                    }
                    let get = |k: &str| m.get(k).map(|v| number("nan_to_num", k, v)).transpose();
                    ok(t.nan_to_num(get("nan")?.unwrap_or(0.0), get("posinf")?, get("neginf")?))
                }
                None => ok(t.nan_to_num(number("nan_to_num", "nan", &n)?, None, None)),
            }
        });
    const ISCLOSE: &str =
        "|t - other| <= atol + rtol |other| (rtol 1e-5, atol 1e-8); opts #{rtol, atol, equal_nan}";
    fn close_opts(op: &str, m: &Map) -> RhaiResult<(f64, f64, bool)> {
        let mut nums = m.clone();
        let equal_nan = match nums.remove("equal_nan") {
            Some(v) => v
                .as_bool()
                .map_err(|ty| script_error(format!("{op}: option 'equal_nan' must be a bool, got {ty}")))?,
            None => false,
        };
        let [rtol, atol] = numbers(op, &nums, [("rtol", 1e-5), ("atol", 1e-8)])?;
        Ok((rtol, atol, equal_nan))
    }
    api.doc(ISCLOSE)
        .func("isclose", ["t", "other"], |t: Tensor, o: Dynamic| {
            ok(t.isclose(&tensor_arg("isclose", &o, &t)?, 1e-5, 1e-8, false))
        });
    api.doc(ISCLOSE).func(
        "isclose",
        ["t", "other", "opts"],
        |t: Tensor, o: Dynamic, m: Map| {
            let (rtol, atol, equal_nan) = close_opts("isclose", &m)?;
            ok(t.isclose(&tensor_arg("isclose", &o, &t)?, rtol, atol, equal_nan))
        },
    );
    const ALLCLOSE: &str = "true when every element is close (see isclose); opts #{rtol, atol, equal_nan}";
    api.doc(ALLCLOSE)
        .func("allclose", ["t", "other"], |t: Tensor, o: Dynamic| {
            ok(t.allclose(&tensor_arg("allclose", &o, &t)?, 1e-5, 1e-8, false))
        });
    api.doc(ALLCLOSE).func(
        "allclose",
        ["t", "other", "opts"],
        |t: Tensor, o: Dynamic, m: Map| {
            let (rtol, atol, equal_nan) = close_opts("allclose", &m)?;
            ok(t.allclose(&tensor_arg("allclose", &o, &t)?, rtol, atol, equal_nan))
        },
    );
    api.doc("true when both have the same shape and values").func(
        "equal",
        ["t", "other"],
        |t: Tensor, o: Tensor| ok(t.equal(&o)),
    );
    register_products(api);
}

fn register_products(api: &mut Api) {
    type Product = fn(&Tensor, &Tensor, &Tensor, f64, f64) -> crate::Result<Tensor>;
    let products: [(&str, &'static str, Product); 4] = [
        (
            "addmm",
            "beta * t + alpha * (m1 @ m2) (1, 1 by default; also #{beta, alpha})",
            Tensor::addmm,
        ),
        (
            "addmv",
            "beta * t + alpha * (mat @ vec) (also #{beta, alpha})",
            Tensor::addmv,
        ),
        (
            "addbmm",
            "beta * t + alpha * sum over the batch of b1[i] @ b2[i] (also #{beta, alpha})",
            Tensor::addbmm,
        ),
        (
            "baddbmm",
            "beta * t + alpha * (b1 @ b2), batched (also #{beta, alpha})",
            Tensor::baddbmm,
        ),
    ];
    for (name, doc, f) in products {
        api.doc(doc)
            .func(name, ["t", "a", "b"], move |t: Tensor, a: Tensor, b: Tensor| {
                ok(f(&t, &a, &b, 1.0, 1.0))
            });
        api.doc(doc).func(
            name,
            ["t", "a", "b", "opts"],
            move |t: Tensor, a: Tensor, b: Tensor, m: Map| {
                let [beta, alpha] = numbers(name, &m, [("beta", 1.0), ("alpha", 1.0)])?;
                ok(f(&t, &a, &b, beta, alpha))
            },
        );
    }
    const EINSUM: &str = "sum of products over the labels the equation leaves out (\"ij,jk->ik\", \"bii->bi\", \"...ij,...jk\"); operands listed or in an array";
    api.doc(EINSUM)
        .func("einsum", ["equation", "operands"], |eq: &str, ts: Array| {
            ok(Tensor::einsum(eq, &tensor_list("einsum", &ts)?))
        });
    api.doc(EINSUM)
        .func("einsum", ["equation", "a"], |eq: &str, a: Tensor| {
            ok(Tensor::einsum(eq, &[a]))
        });
    api.doc(EINSUM).func(
        "einsum",
        ["equation", "a", "b"],
        |eq: &str, a: Tensor, b: Tensor| ok(Tensor::einsum(eq, &[a, b])),
    );
    api.doc(EINSUM).func(
        "einsum",
        ["equation", "a", "b", "c"],
        |eq: &str, a: Tensor, b: Tensor, c: Tensor| ok(Tensor::einsum(eq, &[a, b, c])),
    );
    api.doc(EINSUM).func(
        "einsum",
        ["equation", "a", "b", "c", "d"],
        |eq: &str, a: Tensor, b: Tensor, c: Tensor, d: Tensor| ok(Tensor::einsum(eq, &[a, b, c, d])),
    );
    const TENSORDOT: &str = "contracts the last n dims of a with the first n of b (n 2), or dims [[dims_a], [dims_b]]; also #{dims}";
    api.doc(TENSORDOT)
        .func("tensordot", ["a", "b"], |a: Tensor, b: Tensor| {
            ok(a.tensordot_n(&b, 2))
        });
    api.doc(TENSORDOT).func(
        "tensordot",
        ["a", "b", "dims"],
        |a: Tensor, b: Tensor, d: Dynamic| -> RhaiResult<Tensor> {
            let d = match d.clone().try_cast::<Map>() {
                Some(m) => m
                    .get("dims")
                    .cloned()
                    .ok_or_else(|| script_error("tensordot: the options map needs 'dims'"))?,
                None => d,
            };
            if let Ok(n) = d.as_int() {
                return ok(a.tensordot_n(&b, n));
            }
            let pair = d
                .clone()
                .try_cast::<Array>()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| {
                    script_error("tensordot: dims must be an int or [[dims of a], [dims of b]]")
                })?;
            let da = ints("tensordot", "dims of a", &pair[0])?;
            let db = ints("tensordot", "dims of b", &pair[1])?;
            ok(a.tensordot(&b, &da, &db))
        },
    );
    api.doc("sum over the last dims of a and b (a scalar multiplies)")
        .func("inner", ["a", "b"], |a: Tensor, b: Tensor| ok(a.inner(&b)));
    api.doc("the Kronecker product")
        .func("kron", ["a", "b"], |a: Tensor, b: Tensor| ok(a.kron(&b)));
    const CROSS: &str =
        "cross product of 3-vectors along dim (the first dim of size 3 by default; also #{dim})";
    api.doc(CROSS)
        .func("cross", ["a", "b"], |a: Tensor, b: Tensor| ok(a.cross(&b, None)));
    api.doc(CROSS).func(
        "cross",
        ["a", "b", "dim"],
        |a: Tensor, b: Tensor, d: Dynamic| -> RhaiResult<Tensor> {
            let dim =
                match d.clone().try_cast::<Map>() {
                    Some(m) => m.get("dim").map(|v| v.as_int()).transpose().map_err(|ty| {
                        script_error(format!("cross: option 'dim' must be an int, got {ty}"))
                    })?,
                    None => Some(
                        d.as_int()
                            .map_err(|ty| script_error(format!("cross: dim must be an int, got {ty}")))?,
                    ),
                };
            ok(a.cross(&b, dim))
        },
    );
    for name in ["outer", "ger"] {
        api.doc("the outer product of two vectors")
            .func(name, ["t", "other"], |t: Tensor, o: Tensor| ok(t.outer(&o)));
    }
}
