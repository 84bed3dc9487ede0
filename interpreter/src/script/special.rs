//! The `special::` module (`torch.special`) and the global special
//! functions `mvlgamma`, `ldexp`, `frexp` and `xlog1py`: argument
//! conversion only (the compositions are in `tensor/special.rs`; the rest
//! are op-table rows and nn functions under their `torch.special` names).

use super::convert::{ok, operand, tensor_array, RhaiResult};
use super::kwargs::{register as kw, Form};
use super::registry::{Api, Category};
use crate::core::op::{BinaryOp, UnaryOp};
use crate::core::Scalar;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Module, INT};

/// `b` as a tensor next to `a` (numbers take `a`'s dtype and device).
fn other(op: &str, a: &Tensor, b: &Dynamic) -> RhaiResult<Tensor> {
    let t = operand(op, b, Some(a), a.device())?;
    ok(t.to_device(a.device()))
}

/// Registers the module and the global forms.
pub fn register(engine: &mut Engine) {
    let mut module = Module::new();
    {
        let mut api = Api::module(&mut module, "special", engine, Category::Math);
        special_only(&mut api);
        shared(&mut api);
    }
    engine.register_static_module("special", module.into());
    let mut api = Api::new(engine, Category::Math);
    shared(&mut api);
    api.doc("x · 2^e in the promoted float dtype (torch.ldexp)").func(
        "ldexp",
        ["x", "e"],
        |x: Tensor, e: Dynamic| ok(x.ldexp(&other("ldexp", &x, &e)?)),
    );
    api.doc(
        "[mantissa, exponent]: x = mantissa · 2^exponent, |mantissa| in [0.5, 1), exponent i32 (torch.frexp)",
    )
    .func("frexp", ["x"], |x: Tensor| -> RhaiResult<Array> {
        let (m, e) = ok(x.frexp())?;
        tensor_array(Ok(vec![m, e]))
    });
}

/// The functions of both `special::` and the global scope.
fn shared(api: &mut Api) {
    api.doc("x · ln(1 + y), 0 where x is 0 (torch.special.xlog1py)")
        .func("xlog1py", ["x", "y"], |x: Tensor, y: Dynamic| {
            ok(x.xlog1py(&other("xlog1py", &x, &y)?))
        });
    api.doc("the multivariate log-gamma of dimension p: Σ_{i<p} lgamma(x - i/2) + p(p-1)/4 ln π (elements > (p-1)/2)")
        .func("mvlgamma", ["x", "p"], |x: Tensor, p: INT| ok(x.mvlgamma(p)));
}

/// The `torch.special` names that have no global form of that name.
fn special_only(api: &mut Api) {
    api.doc("the multivariate log-gamma of dimension p (= mvlgamma)")
        .func("multigammaln", ["x", "p"], |x: Tensor, p: INT| ok(x.mvlgamma(p)));
    api.doc("the entropy term -x ln x (0 at 0, -inf below 0)")
        .func("entr", ["x"], |x: Tensor| ok(x.entr()));
    api.doc("the standard normal distribution function Φ(x)")
        .func("ndtr", ["x"], |x: Tensor| ok(x.ndtr()));
    api.doc("the inverse of ndtr: the standard normal quantile of p")
        .func("ndtri", ["p"], |x: Tensor| ok(x.ndtri()));
    api.doc("ln Φ(x), through erfc")
        .func("log_ndtr", ["x"], |x: Tensor| ok(x.log_ndtr()));
    for (name, op) in [
        ("expit", UnaryOp::Sigmoid),
        ("erf", UnaryOp::Erf),
        ("erfc", UnaryOp::Erfc),
        ("erfinv", UnaryOp::Erfinv),
        ("expm1", UnaryOp::Expm1),
        ("exp2", UnaryOp::Exp2),
        ("log1p", UnaryOp::Log1p),
        ("gammaln", UnaryOp::Lgamma),
        ("digamma", UnaryOp::Digamma),
        ("psi", UnaryOp::Digamma),
        ("sinc", UnaryOp::Sinc),
        ("round", UnaryOp::Round),
        ("i0", UnaryOp::I0),
        ("i0e", UnaryOp::I0e),
        ("i1", UnaryOp::I1),
        ("i1e", UnaryOp::I1e),
    ] {
        api.doc(op.doc())
            .func(name, ["x"], move |x: Tensor| ok(x.unary(op)));
    }
    api.doc("ln(p / (1 - p))")
        .func("logit", ["p"], |x: Tensor| ok(x.logit(None)));
    api.doc("ln(p / (1 - p)), p clamped to [eps, 1 - eps]").func(
        "logit",
        ["p", "eps"],
        |x: Tensor, e: Dynamic| ok(x.logit(Some(super::convert::number("logit", "eps", &e)?))),
    );
    for (name, op) in [("gammainc", BinaryOp::Igamma), ("gammaincc", BinaryOp::Igammac)] {
        api.doc(op.doc())
            .func(name, ["a", "x"], move |a: Tensor, x: Dynamic| {
                ok(a.binary(op, &other(name, &a, &x)?))
            });
    }
    api.doc("x · ln(y), 0 where x is 0")
        .func("xlogy", ["x", "y"], |x: Tensor, y: Dynamic| {
            ok(x.xlogy(&other("xlogy", &x, &y)?))
        });
    api.doc("the n-th derivative of the digamma function at x").func(
        "polygamma",
        ["n", "x"],
        |n: INT, x: Tensor| ok(x.binary_scalar(BinaryOp::Polygamma, Scalar::Int(n), false)),
    );
    kw(
        api,
        "softmax",
        "softmax along dim",
        ["x"],
        &["dim"],
        Form::WithOptions,
        |[x], k| ok(x.softmax(k.int("dim", -1)?)),
    );
    kw(
        api,
        "log_softmax",
        "log-softmax along dim",
        ["x"],
        &["dim"],
        Form::WithOptions,
        |[x], k| ok(x.log_softmax(k.int("dim", -1)?)),
    );
    kw(
        api,
        "logsumexp",
        "ln Σ e^x over dim (an int or ints); option keepdim",
        ["x"],
        &["dim", "keepdim"],
        Form::WithOptions,
        |[x], k| ok(x.logsumexp(&k.ints("dim", &[])?, k.flag("keepdim", false)?)),
    );
}
