//! PyTorch's in-place forms (`x.relu_()`, `x.clamp_(0, 1)`,
//! `x.scatter_(1, idx, 1.0)`, `x.masked_fill_(m, 0)`): each calls its
//! out-of-place op with the same arguments and writes the result into the
//! tensor (cast to its dtype), returning it. Writes into tensors autograd
//! records are errors while recording, as for every in-place write here.

use super::convert::{ok, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, NativeCallContext};

/// `(in-place name, out-of-place name, most arguments after the tensor)`.
macro_rules! inplace_table {
    ($($n:ident $k:literal),* $(,)?) => {
        &[$((concat!(stringify!($n), "_"), stringify!($n), $k)),*]
    };
}

/// The ops with an in-place form, and their largest arity after the tensor.
const INPLACE: &[(&str, &str, usize)] = inplace_table!(
    abs 0, neg 0, exp 0, log 0, log2 0, log10 0, log1p 0, expm1 0, exp2 0, sqrt 0, rsqrt 0,
    sin 0, cos 0, tan 0, tanh 0, sinh 0, cosh 0, asin 0, acos 0, atan 0, asinh 0, acosh 0, atanh 0,
    sigmoid 0, relu 0, gelu 1, silu 0, mish 0, relu6 0, hardsigmoid 0, hardswish 0, selu 0,
    erf 0, erfinv 0, lgamma 0, digamma 0, floor 0, ceil 0, round 0, trunc 0, fix 0, frac 0,
    sign 0, square 0, reciprocal 0, deg2rad 0, rad2deg 0, sinc 0, logit 1, nan_to_num 1,
    pow 1, remainder 1, fmod 1, floor_divide 1, true_divide 1, atan2 1, hypot 1, copysign 1,
    xlogy 1, maximum 1, minimum 1, bitwise_and 1, bitwise_or 1, bitwise_xor 1, logical_not 0,
    clamp 2, clamp_min 1, clamp_max 1, lerp 2, addcmul 3, addcdiv 3, polygamma 1,
    hardtanh 2, leaky_relu 1, elu 1, celu 1, threshold 2, softplus 2,
    tril 1, triu 1, masked_fill 2, masked_scatter 2, index_fill 3, index_copy 3, index_add 3,
    index_put 3, scatter 4, scatter_add 3, scatter_reduce 5, index_reduce 5, cumsum 2, cumprod 2,
    absolute 0, negative 0, sgn 0, arccos 0, arcsin 0, arctan 0, arccosh 0, arcsinh 0, arctanh 0,
    clip 2, divide 1, multiply 1, subtract 1, addr 3, ldexp 1, mvlgamma 1, erfc 0, gcd 1, lcm 1,
    i0 0, bitwise_left_shift 1, bitwise_right_shift 1, igamma 1, igammac 1,
    addmm 3, baddbmm 3, addmv 3, addbmm 3,
);

/// The value of the out-of-place call as a tensor.
fn tensor_result(name: &str, d: Dynamic) -> RhaiResult<Tensor> {
    d.try_cast::<Tensor>().ok_or_else(|| {
        super::convert::script_error(format!("{name}: the out-of-place op did not return a tensor"))
    })
}

/// Runs `name(t, args...)` and writes its result into `t`.
fn apply(
    ctx: &NativeCallContext,
    inplace: &'static str,
    name: &str,
    t: Tensor,
    args: Vec<Dynamic>,
) -> RhaiResult<Tensor> {
    let mut all = vec![Dynamic::from(t.clone())];
    all.extend(args);
    let out = tensor_result(
        name,
        ctx.call_fn_raw(name, false, false, &mut all.iter_mut().collect::<Vec<_>>())?,
    )?;
    ok(t.assign_(inplace, &out))?;
    Ok(t)
}

/// Registers the in-place forms.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Conversions);
    let api = &mut api;
    const DOC: &str =
        "the in-place form of the op of the same name without `_`: writes its result into t and returns t";
    for &(inplace, name, most) in INPLACE {
        api.doc(DOC)
            .func(inplace, ["t"], move |ctx: NativeCallContext, t: Tensor| {
                apply(&ctx, inplace, name, t, vec![])
            });
        if most >= 1 {
            api.doc(DOC).func(
                inplace,
                ["t", "a"],
                move |ctx: NativeCallContext, t: Tensor, a: Dynamic| apply(&ctx, inplace, name, t, vec![a]),
            );
        }
        if most >= 2 {
            api.doc(DOC).func(
                inplace,
                ["t", "a", "b"],
                move |ctx: NativeCallContext, t: Tensor, a: Dynamic, b: Dynamic| {
                    apply(&ctx, inplace, name, t, vec![a, b])
                },
            );
        }
        if most >= 3 {
            api.doc(DOC).func(
                inplace,
                ["t", "a", "b", "c"],
                move |ctx: NativeCallContext, t: Tensor, a: Dynamic, b: Dynamic, c: Dynamic| {
                    apply(&ctx, inplace, name, t, vec![a, b, c])
                },
            );
        }
        if most >= 4 {
            api.doc(DOC).func(
                inplace,
                ["t", "a", "b", "c", "d"],
                move |ctx: NativeCallContext, t: Tensor, a: Dynamic, b: Dynamic, c: Dynamic, d: Dynamic| {
                    apply(&ctx, inplace, name, t, vec![a, b, c, d])
                },
            );
        }
        if most >= 5 {
            api.doc(DOC).func(
                inplace,
                ["t", "a", "b", "c", "d", "e"],
                move |ctx: NativeCallContext,
                      t: Tensor,
                      a: Dynamic,
                      b: Dynamic,
                      c: Dynamic,
                      d: Dynamic,
                      e: Dynamic| { apply(&ctx, inplace, name, t, vec![a, b, c, d, e]) },
            );
        }
    }
}
