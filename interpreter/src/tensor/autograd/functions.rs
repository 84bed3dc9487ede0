//! The backward formulas, one function per op family, written with the same
//! tensor ops as forward (they run with grad mode off, on the tensors'
//! device). Each takes the saved values and the output gradient `g` and
//! returns the gradients of the inputs in their shapes; the engine converts
//! them to the inputs' dtypes. The ops record themselves (and save what these
//! need) in their own front-end files.

use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, UnaryOp};
use crate::tensor::{Scalar, Tensor};

/// `g` summed over the dims that broadcasting added or stretched, so that it
/// has `shape` (the shape of the input that was broadcast).
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let gs = g.shape();
    if gs.len() < shape.len() {
        return Err(Error::shape(
            "backward",
            format!("cannot reduce a gradient of shape {gs:?} to shape {shape:?}"),
        ));
    }
    let lead = gs.len() - shape.len();
    let dims: Vec<i64> = (0..gs.len())
        .filter(|&d| d < lead || (shape[d - lead] == 1 && gs[d] != 1))
        .map(|d| d as i64)
        .collect();
    let target: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    if dims.is_empty() {
        return g.reshape(&target);
    }
    g.reduce(ReduceOp::Sum, Some(&dims), true)?.reshape(&target)
}

/// A 0-dim zero in `like`'s dtype and device (broadcast where needed).
fn zero(like: &Tensor) -> Result<Tensor> {
    Tensor::scalar(Scalar::Int(0), like.dtype(), like.device())
}

/// The error of a backward that needs the incomplete gamma's gradient in `a`.
fn no_gradient_in_a(op: BinaryOp) -> Error {
    Error::invalid(
        op.name(),
        "the derivative with respect to a (the first operand) is not implemented, as in PyTorch; detach it",
    )
}

/// `∂P(a, x)/∂x = x^(a-1) e^-x / Γ(a)`, negated for `Q` (`Igammac`).
fn gamma_density(a: &Tensor, x: &Tensor, op: BinaryOp) -> Result<Tensor> {
    let log = x
        .log()?
        .mul(&a.sub_scalar(1.0)?)?
        .sub(x)?
        .sub(&a.unary(UnaryOp::Lgamma)?)?;
    let d = log.exp()?;
    if op == BinaryOp::Igammac {
        d.neg()
    } else {
        Ok(d)
    }
}

/// `d`, with `value` where `x` is zero (a derivative's removable singularity).
fn at_zero_is(x: &Tensor, d: &Tensor, value: f64) -> Result<Tensor> {
    let at_zero = x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
    let fill = Tensor::full(&[], Scalar::Float(value), Some(d.dtype()), d.device())?;
    Tensor::where_cond(&at_zero, &fill, d)
}

/// 1 where `lo < x < hi`, else 0, in `like`'s dtype.
fn between(x: &Tensor, lo: f64, hi: f64, like: &Tensor) -> Result<Tensor> {
    let above = mask(x.compare_scalar(CmpOp::Gt, Scalar::Float(lo), false)?, like)?;
    let below = mask(x.compare_scalar(CmpOp::Lt, Scalar::Float(hi), false)?, like)?;
    above.mul(&below)
}

/// A comparison mask as numbers in `like`'s dtype.
fn mask(m: Tensor, like: &Tensor) -> Result<Tensor> {
    m.to_dtype(like.dtype())
}

/// The second derivative of GELU at `x` (exact for `GeluBackward`, the
/// tanh form for `GeluTanhBackward`), for double backward.
fn gelu_second_derivative(op: BinaryOp, x: &Tensor) -> Result<Tensor> {
    use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI, PI};
    let x2 = x.square()?;
    if op == BinaryOp::GeluBackward {
        // φ(x) (2 - x²)
        let pdf = x2
            .mul_scalar(-0.5)?
            .exp()?
            .mul_scalar(0.5 * FRAC_2_SQRT_PI * FRAC_1_SQRT_2)?;
        return pdf.mul(&x2.neg()?.add_scalar(2.0)?);
    }
    // (1 - t²) (u' - x t u'² + 3 k c x²), t = tanh(u), u = k (x + c x³)
    let (k, c) = ((2.0 / PI).sqrt(), 0.044715);
    let t = x.add(&x2.mul(x)?.mul_scalar(c)?)?.mul_scalar(k)?.tanh()?;
    let du = x2.mul_scalar(3.0 * c)?.add_scalar(1.0)?.mul_scalar(k)?;
    let inner = du
        .sub(&x.mul(&t)?.mul(&du.square()?)?)?
        .add(&x2.mul_scalar(3.0 * k * c)?)?;
    t.square()?
        .binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?
        .mul(&inner)
}

/// Gradient of `y = op(x)`.
pub fn unary(op: UnaryOp, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    use UnaryOp::*;
    let x = &x.to_dtype(y.dtype())?;
    let gx = match op {
        Abs => g.mul(&x.sign()?)?,
        Neg => g.neg()?,
        Exp => g.mul(y)?,
        Log => g.div(x)?,
        Log2 => g.div(&x.mul_scalar(std::f64::consts::LN_2)?)?,
        Log1p => g.div(&x.add_scalar(1.0)?)?,
        Expm1 => g.mul(&y.add_scalar(1.0)?)?,
        Sqrt => g.div(&y.mul_scalar(2.0)?)?,
        // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
        Rsqrt => g.mul(&y.pow_scalar(3.0)?.mul_scalar(-0.5)?)?,
        Sin => g.mul(&x.cos()?)?,
        Cos => g.mul(&x.sin()?.neg()?)?,
        Tan => g.mul(&y.square()?.add_scalar(1.0)?)?,
        Tanh => g.mul(
            &y.square()?
                .binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?,
        )?,
        Sigmoid => g.mul(&y.mul(&y.binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?)?)?,
        // one kernel, as PyTorch's threshold_backward
        Relu => g.binary(BinaryOp::ReluBackward, x)?,
        // one kernel each, as PyTorch's gelu_backward
        Gelu => g.binary(BinaryOp::GeluBackward, x)?,
        GeluTanh => g.binary(BinaryOp::GeluTanhBackward, x)?,
        Silu => {
            // s (1 + x (1 - s))
            let s = x.sigmoid()?;
            let one_minus = s.binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?;
            g.mul(&s.mul(&x.mul(&one_minus)?.add_scalar(1.0)?)?)?
        }
        Erf => g.mul(
            &x.square()?
                .neg()?
                .exp()?
                .mul_scalar(std::f64::consts::FRAC_2_SQRT_PI)?,
        )?,
        Erfc => g.mul(
            &x.square()?
                .neg()?
                .exp()?
                .mul_scalar(-std::f64::consts::FRAC_2_SQRT_PI)?,
        )?,
        Square => g.mul(&x.mul_scalar(2.0)?)?,
        Reciprocal => g.mul(&y.square()?.neg()?)?,
        // piecewise constant: zero gradient, as in PyTorch
        Floor | Ceil | Round | Sign | Trunc => g.zeros_like()?,
        Frac => g.clone(),
        Log10 => g.div(&x.mul_scalar(std::f64::consts::LN_10)?)?,
        Exp2 => g.mul(&y.mul_scalar(std::f64::consts::LN_2)?)?,
        Atan => g.div(&x.square()?.add_scalar(1.0)?)?,
        Sinh => g.mul(&x.cosh()?)?,
        Cosh => g.mul(&x.sinh()?)?,
        Asinh => g.mul(&x.square()?.add_scalar(1.0)?.rsqrt()?)?,
        // 1 / sqrt(1 - x²), -1 / sqrt(1 - x²), 1 / (1 - x²), 1 / sqrt(x² - 1)
        Asin => g.mul(&x.square()?.neg()?.add_scalar(1.0)?.rsqrt()?)?,
        Acos => g.mul(&x.square()?.neg()?.add_scalar(1.0)?.rsqrt()?)?.neg()?,
        Atanh => g.div(&x.square()?.neg()?.add_scalar(1.0)?)?,
        Acosh => g.mul(&x.square()?.sub_scalar(1.0)?.rsqrt()?)?,
        Deg2rad => g.mul_scalar(std::f64::consts::PI / 180.0)?,
        Rad2deg => g.mul_scalar(180.0 / std::f64::consts::PI)?,
        // (cos(πx) - sinc(x)) / x, and 0 at x = 0
        Sinc => {
            let d = x
                .mul_scalar(std::f64::consts::PI)?
                .cos()?
                .sub(&x.unary(UnaryOp::Sinc)?)?
                .div(x)?;
            g.mul(&at_zero_is(x, &d, 0.0)?)?
        }
        Lgamma => g.mul(&x.unary(UnaryOp::Digamma)?)?,
        Digamma => g.mul(&x.binary_scalar(BinaryOp::Polygamma, Scalar::Int(1), false)?)?,
        I0 => g.mul(&x.unary(UnaryOp::I1)?)?,
        // i1e(x) - sgn(x) i0e(x)
        I0e => g.mul(&x.unary(UnaryOp::I1e)?.sub(&x.sign()?.mul(y)?)?)?,
        // i0(x) - i1(x) / x, and 1/2 at 0
        I1 => {
            let d = x.unary(UnaryOp::I0)?.sub(&y.div(x)?)?;
            g.mul(&at_zero_is(x, &d, 0.5)?)?
        }
        // i0e(x) - i1e(x) (sgn(x) + 1 / x), and 1/2 at 0
        I1e => {
            let d = x
                .unary(UnaryOp::I0e)?
                .sub(&y.mul(&x.sign()?.add(&x.reciprocal()?)?)?)?;
            g.mul(&at_zero_is(x, &d, 0.5)?)?
        }
        // √π/2 e^(y²)
        Erfinv => g.mul(&y.square()?.exp()?.mul_scalar(std::f64::consts::PI.sqrt() / 2.0)?)?,
        // 1 / (1 + |x|)^2
        Softsign => g.div(&x.abs()?.add_scalar(1.0)?.square()?)?,
        // 1 - sigmoid(x) = sigmoid(-x)
        Logsigmoid => g.mul(&x.neg()?.sigmoid()?)?,
        Mish => {
            // tanh(sp) + x sech²(sp) sigmoid(x), sp = softplus(x)
            let t = x.exp()?.log1p()?.tanh()?;
            let sech2 = t
                .square()?
                .binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?;
            g.mul(&t.add(&x.mul(&sech2)?.mul(&x.sigmoid()?)?)?)?
        }
        Relu6 => g.mul(&between(x, 0.0, 6.0, g)?)?,
        Hardsigmoid => g.mul(&between(x, -3.0, 3.0, g)?.mul_scalar(1.0 / 6.0)?)?,
        Hardswish => {
            // (2x + 3) / 6 on (-3, 3), 1 above
            let mid = x.mul_scalar(2.0)?.add_scalar(3.0)?.mul_scalar(1.0 / 6.0)?;
            let above = mask(x.compare_scalar(CmpOp::Gt, Scalar::Float(3.0), false)?, g)?;
            g.mul(&mid.mul(&between(x, -3.0, 3.0, g)?)?.add(&above)?)?
        }
        Selu => {
            // scale above 0, scale * alpha * e^x below
            use kiln_kernels::ops::{SELU_ALPHA, SELU_SCALE};
            let pos = mask(x.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?, g)?;
            let neg = pos.binary_scalar(BinaryOp::Sub, Scalar::Float(1.0), true)?;
            let slope = pos
                .mul_scalar(SELU_SCALE)?
                .add(&neg.mul(&x.exp()?.mul_scalar(SELU_SCALE * SELU_ALPHA)?)?)?;
            g.mul(&slope)?
        }
        LogicalNot => return Ok(None),
    };
    Ok(Some(gx))
}

/// `(a > b) + (a == b) / 2`: the share of a maximum's gradient that goes to `a`
/// (`Lt` for a minimum). Ties split evenly, as in PyTorch.
fn extremum_share(cmp: CmpOp, a: &Tensor, b: &Tensor, like: &Tensor) -> Result<Tensor> {
    let win = mask(a.compare(cmp, b)?, like)?;
    let tie = mask(a.compare(CmpOp::Eq, b)?, like)?;
    win.add(&tie.mul_scalar(0.5)?)
}

/// Gradients of `y = a op b` (broadcast), reduced to each operand's shape.
pub fn binary(
    op: BinaryOp,
    a: &Tensor,
    b: &Tensor,
    y: &Tensor,
    g: &Tensor,
    needs: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    use BinaryOp::*;
    let (a, b) = (&a.to_dtype(y.dtype())?, &b.to_dtype(y.dtype())?);
    let (ga, gb) = match op {
        Add => (Some(g.clone()), Some(g.clone())),
        Sub => (Some(g.clone()), Some(g.neg()?)),
        Mul => (
            needs[0].then(|| g.mul(b)).transpose()?,
            needs[1].then(|| g.mul(a)).transpose()?,
        ),
        Div => (
            needs[0].then(|| g.div(b)).transpose()?,
            needs[1].then(|| g.mul(y)?.div(b)?.neg()).transpose()?,
        ),
        Pow => {
            let ga = needs[0]
                .then(|| -> Result<Tensor> {
                    let d = g.mul(b)?.mul(&a.pow(&b.sub_scalar(1.0)?)?)?;
                    Tensor::where_cond(
                        &b.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?,
                        &zero(g)?,
                        &d,
                    )
                })
                .transpose()?;
            let gb = needs[1]
                .then(|| -> Result<Tensor> {
                    let d = g.mul(y)?.mul(&a.log()?)?;
                    let at_zero = a
                        .compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?
                        .binary(BitAnd, &b.compare_scalar(CmpOp::Ge, Scalar::Int(0), false)?)?;
                    Tensor::where_cond(&at_zero, &zero(g)?, &d)
                })
                .transpose()?;
            (ga, gb)
        }
        Rem => (
            Some(g.clone()),
            needs[1].then(|| g.mul(&a.div(b)?.floor()?)?.neg()).transpose()?,
        ),
        Fmod => (
            Some(g.clone()),
            needs[1].then(|| g.mul(&a.div(b)?.trunc()?)?.neg()).transpose()?,
        ),
        // piecewise constant in both: zero, as PyTorch
        FloorDivide => (Some(g.zeros_like()?), Some(g.zeros_like()?)),
        // d/dx ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁺¹⁾(x); n is a whole number, not differentiable
        Polygamma => (
            needs[0]
                .then(|| g.mul(&a.binary(Polygamma, &b.add_scalar(1.0)?)?))
                .transpose()?,
            None,
        ),
        Maximum | Minimum => {
            let cmp = if op == Maximum { CmpOp::Gt } else { CmpOp::Lt };
            (
                needs[0]
                    .then(|| g.mul(&extremum_share(cmp, a, b, g)?))
                    .transpose()?,
                needs[1]
                    .then(|| g.mul(&extremum_share(cmp, b, a, g)?))
                    .transpose()?,
            )
        }
        // d/dx P(a, x) = x^(a-1) e^-x / Γ(a) = -d/dx Q(a, x); none in a, as PyTorch
        Igamma | Igammac => {
            if needs[0] {
                return Err(no_gradient_in_a(op));
            }
            (
                None,
                needs[1].then(|| g.mul(&gamma_density(a, b, op)?)).transpose()?,
            )
        }
        // g · [x > 0]: its gradients are [x > 0] and 0 (almost everywhere)
        ReluBackward => (needs[0].then(|| g.binary(op, b)).transpose()?, None),
        // g · f'(x): its gradients are f'(x) and g · f''(x)
        GeluBackward | GeluTanhBackward => (
            needs[0].then(|| g.binary(op, b)).transpose()?,
            needs[1]
                .then(|| g.mul(a)?.mul(&gelu_second_derivative(op, b)?))
                .transpose()?,
        ),
        BitAnd | BitOr | BitXor | Gcd | Lcm | BitShiftLeft | BitShiftRight => (None, None),
    };
    let ga = match ga {
        Some(t) if needs[0] => Some(sum_to(&t, a.shape())?),
        _ => None,
    };
    let gb = match gb {
        Some(t) if needs[1] => Some(sum_to(&t, b.shape())?),
        _ => None,
    };
    Ok(vec![ga, gb])
}

/// Gradient of `y = x op s` (or `s op x` when `reversed`) for a host scalar `s`.
pub fn binary_scalar(
    op: BinaryOp,
    x: &Tensor,
    s: Scalar,
    reversed: bool,
    y: &Tensor,
    g: &Tensor,
) -> Result<Option<Tensor>> {
    use BinaryOp::*;
    let x = &x.to_dtype(y.dtype())?;
    let gx = match (op, reversed) {
        (Add, _) => g.clone(),
        (Sub, false) => g.clone(),
        (Sub, true) => g.neg()?,
        (Mul, _) => g.mul_scalar(s)?,
        (Div, false) => g.div_scalar(s)?,
        // d/dx s/x = -s/x^2 = -y/x
        (Div, true) => g.mul(y)?.div(x)?.neg()?,
        (Pow, false) if s.to_f64() == 0.0 => g.zeros_like()?,
        (Pow, false) => g.mul(&x.pow_scalar(s.to_f64() - 1.0)?.mul_scalar(s)?)?,
        (Pow, true) if s.to_f64() == 0.0 => g.zeros_like()?,
        (Pow, true) => g.mul(y)?.mul_scalar(s.to_f64().ln())?,
        (Rem, false) => g.clone(),
        (Rem, true) => g.mul(&x.binary_scalar(Div, s, true)?.floor()?)?.neg()?,
        (Fmod, false) => g.clone(),
        (Fmod, true) => g.mul(&x.binary_scalar(Div, s, true)?.trunc()?)?.neg()?,
        (FloorDivide, _) => g.zeros_like()?,
        (Polygamma, false) => {
            g.mul(&x.binary_scalar(Polygamma, Scalar::Float(s.to_f64() + 1.0), false)?)?
        }
        (Polygamma, true) => return Ok(None),
        (Igamma | Igammac, false) => return Err(no_gradient_in_a(op)),
        (Igamma | Igammac, true) => {
            let a = Tensor::full(&[], s, Some(x.dtype()), x.device())?;
            g.mul(&gamma_density(&a, x, op)?)?
        }
        (Maximum | Minimum, _) => {
            let cmp = if op == Maximum { CmpOp::Gt } else { CmpOp::Lt };
            let win = mask(x.compare_scalar(cmp, s, false)?, g)?;
            let tie = mask(x.compare_scalar(CmpOp::Eq, s, false)?, g)?;
            g.mul(&win.add(&tie.mul_scalar(0.5)?)?)?
        }
        // g · f'(s) for an input s, and s · f'(x) for a gradient s
        (ReluBackward, false) => g.mul_scalar(if s.to_f64() > 0.0 { 1.0 } else { 0.0 })?,
        (ReluBackward, true) => return Ok(None),
        (GeluBackward, false) => g.mul_scalar(kiln_kernels::ops::gelu_grad(s.to_f64()))?,
        (GeluTanhBackward, false) => g.mul_scalar(kiln_kernels::ops::gelu_tanh_grad(s.to_f64()))?,
        (GeluBackward | GeluTanhBackward, true) => g.mul(&gelu_second_derivative(op, x)?.mul_scalar(s)?)?,
        (BitAnd | BitOr | BitXor | Gcd | Lcm | BitShiftLeft | BitShiftRight, _) => return Ok(None),
    };
    Ok(Some(gx))
}

/// Gradient of `clamp(x, min, max)`: `g` where `min <= x <= max`, else 0.
pub fn clamp(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, g: &Tensor) -> Result<Tensor> {
    let x = &x.to_dtype(g.dtype())?;
    let mut keep: Option<Tensor> = None;
    for (bound, cmp) in [(min, CmpOp::Ge), (max, CmpOp::Le)] {
        if let Some(b) = bound {
            let m = x.compare_scalar(cmp, b, false)?;
            keep = Some(match keep {
                None => m,
                Some(k) => k.binary(BinaryOp::BitAnd, &m)?,
            });
        }
    }
    match keep {
        Some(k) => g.mul(&mask(k, g)?),
        None => Ok(g.clone()),
    }
}

/// Gradients of `where(cond, a, b)` for `a` and `b` (the condition has none).
pub fn where_cond(
    cond: &Tensor,
    a_shape: &[usize],
    b_shape: &[usize],
    g: &Tensor,
    needs: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    let z = zero(g)?;
    let ga = needs[1]
        .then(|| sum_to(&Tensor::where_cond(cond, g, &z)?, a_shape))
        .transpose()?;
    let gb = needs[2]
        .then(|| sum_to(&Tensor::where_cond(cond, &z, g)?, b_shape))
        .transpose()?;
    Ok(vec![None, ga, gb])
}

/// Gradient of a reduction. `keep` is the result with the reduced dims kept
/// as size 1 and `g` the output gradient reshaped to `keep`'s shape.
pub fn reduce(op: ReduceOp, x: &Tensor, keep: &Tensor, g: &Tensor) -> Result<Option<Tensor>> {
    let shape = x.shape();
    let x = &x.to_dtype(keep.dtype())?;
    let n = if keep.numel() == 0 {
        1.0
    } else {
        (x.numel() / keep.numel()) as f64
    };
    let gx = match op {
        ReduceOp::Sum => g.broadcast_to(shape)?,
        ReduceOp::Mean => g.div_scalar(n)?.broadcast_to(shape)?,
        ReduceOp::Max | ReduceOp::Min => {
            // the gradient goes to the arg positions; ties share it evenly
            let hit = mask(x.compare(CmpOp::Eq, keep)?, g)?;
            let count = sum_to(&hit, keep.shape())?;
            hit.mul(&g.div(&count)?)?
        }
        ReduceOp::Var { correction } => {
            let mean = sum_to(x, keep.shape())?.div_scalar(n)?;
            let scale = 2.0 / (n - correction as f64);
            x.sub(&mean)?.mul(g)?.mul_scalar(scale)?
        }
        ReduceOp::Std { correction } => {
            let mean = sum_to(x, keep.shape())?.div_scalar(n)?;
            let denom = keep.mul_scalar(n - correction as f64)?;
            x.sub(&mean)?.mul(&g.div(&denom)?)?
        }
        ReduceOp::Prod => g.mul(&prod_of_others(x, keep)?)?,
        ReduceOp::ArgMax | ReduceOp::ArgMin | ReduceOp::All | ReduceOp::Any => return Ok(None),
    };
    Ok(Some(gx))
}

/// For each element of `x`, the product of the other elements of its lane of
/// the reduction whose kept-dims result is `keep`. Computed without dividing
/// by zero, as PyTorch does: with no zero in a lane it is `prod / x`; with one
/// zero, that zero gets the product of the rest and the others 0; with more,
/// all are 0.
fn prod_of_others(x: &Tensor, keep: &Tensor) -> Result<Tensor> {
    let dims: Vec<i64> = (0..x.ndim())
        .filter(|&d| keep.shape()[d] == 1)
        .map(|d| d as i64)
        .collect();
    let is_zero = x.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?;
    let zeros = sum_to(&mask(is_zero.clone(), x)?, keep.shape())?;
    let one = Tensor::scalar(Scalar::Int(1), x.dtype(), x.device())?;
    let safe = Tensor::where_cond(&is_zero, &one, x)?;
    let nonzero_prod = safe.reduce(ReduceOp::Prod, Some(&dims), true)?;
    let no_zero = mask(zeros.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?, x)?;
    let one_zero = mask(zeros.compare_scalar(CmpOp::Eq, Scalar::Int(1), false)?, x)?;
    Tensor::where_cond(
        &is_zero,
        &nonzero_prod.mul(&one_zero)?,
        &nonzero_prod.div(&safe)?.mul(&no_zero)?,
    )
}

/// Gradient of `softmax(x, dim)` (`log`: of `log_softmax`) from its output `y`.
pub fn softmax(y: &Tensor, dim: i64, log: bool, g: &Tensor) -> Result<Tensor> {
    let g = &g.to_dtype(y.dtype())?;
    if log {
        // g - softmax(x) * sum(g)
        let s = g.reduce(ReduceOp::Sum, Some(&[dim]), true)?;
        g.sub(&y.exp()?.mul(&s)?)
    } else {
        // y * (g - sum(g * y))
        let s = g.mul(y)?.reduce(ReduceOp::Sum, Some(&[dim]), true)?;
        y.mul(&g.sub(&s)?)
    }
}

/// Gradients of `layer_norm(x, normalized_shape, weight, bias, eps)` for x,
/// weight and bias (as `needs` asks): the input's and the weight's terms in
/// one fused pass over x and g, then the column sums of the weight's terms
/// and of g.
pub fn layer_norm(
    x: &Tensor,
    k: usize,
    weight: Option<&Tensor>,
    bias_shape: Option<&[usize]>,
    eps: f64,
    g: &Tensor,
    needs: &[bool],
) -> Result<Vec<Option<Tensor>>> {
    let want_gw = weight.is_some() && needs.get(1) == Some(&true);
    let (gx, gxh) = x.layer_norm_backward(g, k, weight, eps, want_gw)?;
    let mut out = vec![needs[0].then_some(gx)];
    if let Some(w) = weight {
        out.push(gxh.map(|t| sum_to(&t, w.shape())).transpose()?);
    }
    if let Some(bs) = bias_shape {
        let i = out.len();
        out.push(needs[i].then(|| sum_to(g, bs)).transpose()?);
    }
    Ok(out)
}

/// Gradients of `a @ b` for operands of at least 2 dims (batch dims broadcast).
pub fn matmul(a: &Tensor, b: &Tensor, g: &Tensor, needs: &[bool]) -> Result<Vec<Option<Tensor>>> {
    let ga = needs[0]
        .then(|| sum_to(&g.matmul(&b.transpose(-2, -1)?)?, a.shape()))
        .transpose()?;
    let gb = needs[1]
        .then(|| sum_to(&a.transpose(-2, -1)?.matmul(g)?, b.shape()))
        .transpose()?;
    Ok(vec![ga, gb])
}

/// Gradients of `cat(tensors, dim)`: the slices of `g` each input filled.
pub fn cat(sizes: &[usize], dim: i64, g: &Tensor, needs: &[bool]) -> Result<Vec<Option<Tensor>>> {
    let mut at = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for (&len, &need) in sizes.iter().zip(needs) {
        out.push(need.then(|| g.narrow(dim, at as i64, len as i64)).transpose()?);
        at += len;
    }
    Ok(out)
}

/// Gradient of a strided view (narrow, slice, select): zeros of the input's
/// shape with `g` written where the view reads.
pub fn view_scatter(
    shape: &[usize],
    g: &Tensor,
    view: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let z = Tensor::zeros(shape, Some(g.dtype()), g.device())?;
    view(&z)?.copy_(g)?;
    Ok(z)
}
