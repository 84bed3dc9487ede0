//! The op table: every elementwise op of one or two operands and every
//! comparison is declared once here, with its name, its one-line doc, its
//! dtype rule and its per-element formula. Everything else is generated from
//! these rows by the macros that read them:
//!
//! - here: the scalar functions ([`unary`], [`binary`]) the CPU backend and
//!   the GPU kernels both call, so the two agree by construction;
//! - in `kernels/elementwise.rs`: the PTX entry points of every row and dtype;
//! - on the host (crate `kiln`): the op enums with `ALL`, names, docs and
//!   dtype rules (`core::op`), the CPU maps, the CUDA kernel names, the Rhai
//!   registrations, the differential checks and the API tables of the docs.
//!
//! A unary row reads `Variant name "doc" rule domain (float formula)
//! (integer formula);`.
//! Float formulas are written over [`Real`](crate::real::Real) (f32 for f32,
//! f16 and bf16; f64 for f64), integer formulas over `i64` (wrapping, as
//! PyTorch's integer arithmetic). Adding a unary op is one row here plus its
//! backward rule in the host's autograd.

/// Calls `$m!` with the unary op table.
///
/// A row reads `Variant name "doc" rule domain (float formula) (integer
/// formula);`. Rules: `float` — computed in floating point (integer and bool
/// inputs promote to f32, as PyTorch's `torch.exp(int_tensor)` does); `keep`
/// — every numeric dtype computes in its own (bool is rejected); `logical` —
/// any dtype in, bool out (its kernels are written by hand). The domain says
/// where the op is defined and smooth, for the generated checks: `any`,
/// `positive`, `nonzero` (a kink or pole at zero), `unit` (the open interval
/// (-1, 1)) or `above_one`.
#[macro_export]
macro_rules! unary_ops {
    ($m:ident) => {
        $m! {
            Abs abs "Absolute value, `|x|`." keep nonzero (|x| x.abs()) (|x| x.wrapping_abs());
            Neg neg "Negation, `-x`." keep any (|x| -x) (|x| x.wrapping_neg());
            Exp exp "Exponential, `e^x` (on the GPU, f32 uses the hardware `ex2.approx`: within a few ulp)." float any (|x| x.exp()) ();
            Log log "Natural logarithm." float positive (|x| x.ln()) ();
            Log2 log2 "Base-2 logarithm." float positive (|x| x.log2()) ();
            Log1p log1p "`ln(1 + x)`, accurate near zero." float positive (|x| x.ln_1p()) ();
            Expm1 expm1 "`e^x - 1`, accurate near zero." float any (|x| x.exp_m1()) ();
            Sqrt sqrt "Square root (correctly rounded)." float positive (|x| x.sqrt()) ();
            Rsqrt rsqrt "Reciprocal square root, `1 / sqrt(x)`." float positive (|x| R::ONE / x.sqrt()) ();
            Sin sin "Sine (radians)." float any (|x| x.sin()) ();
            Cos cos "Cosine (radians)." float any (|x| x.cos()) ();
            Tan tan "Tangent (radians)." float any (|x| x.tan()) ();
            Tanh tanh "Hyperbolic tangent." float any (|x| x.tanh()) ();
            Sigmoid sigmoid "Logistic sigmoid, `1 / (1 + e^-x)`." float any (|x| R::ONE / (R::ONE + (-x).exp())) ();
            Relu relu "Rectified linear unit, `max(x, 0)` (NaN stays NaN)." keep nonzero
                (|x| if x > R::ZERO || x.is_nan() { x } else { R::ZERO })
                (|x| if x > 0 { x } else { 0 });
            Gelu gelu "Exact GELU, `x * Φ(x) = 0.5 x (1 + erf(x / √2))` (PyTorch's default)." float any
                (|x| R::of(0.5) * x * (R::ONE + (x * R::of(core::f64::consts::FRAC_1_SQRT_2)).erf())) ();
            GeluTanh gelu_tanh "GELU with the tanh approximation, `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))` (`F.gelu(x, approximate=\"tanh\")`)." float any
                (|x| $crate::ops::gelu_tanh(x)) ();
            Silu silu "SiLU (swish), `x * sigmoid(x)`." float any (|x| x * (R::ONE / (R::ONE + (-x).exp()))) ();
            Erf erf "The error function." float any (|x| x.erf()) ();
            Erfc erfc "The complementary error function `1 - erf(x)`, accurate where erf is near 1." float any (|x| x.erfc()) ();
            Floor floor "Rounds down to an integer (integers unchanged)." keep any (|x| x.floor()) (|x| x);
            Ceil ceil "Rounds up to an integer (integers unchanged)." keep any (|x| x.ceil()) (|x| x);
            Round round "Rounds half to even (integers unchanged)." keep any (|x| x.rint()) (|x| x);
            Sign sign "-1, 0 or 1 by the sign of x (NaN and ±0 stay as they are)." keep nonzero
                (|x| if x > R::ZERO { R::ONE } else if x < R::ZERO { -R::ONE } else { x })
                (|x| x.signum());
            Square square "`x * x`." keep any (|x| x * x) (|x| x.wrapping_mul(x));
            Reciprocal reciprocal "Reciprocal, `1 / x`." float nonzero (|x| R::ONE / x) ();
            Trunc trunc "Rounds toward zero (integers unchanged)." keep any (|x| x.trunc()) (|x| x);
            Frac frac "Fractional part, `x - trunc(x)` (sign of x)." float any (|x| x - x.trunc()) ();
            Log10 log10 "Base-10 logarithm." float positive (|x| x.log10()) ();
            Exp2 exp2 "`2^x` (on the GPU, f32 uses the hardware `ex2.approx`)." float any (|x| x.exp2()) ();
            Atan atan "Inverse tangent (radians)." float any (|x| x.atan()) ();
            Sinh sinh "Hyperbolic sine." float any (|x| x.sinh()) ();
            Cosh cosh "Hyperbolic cosine." float any (|x| x.cosh()) ();
            Asinh asinh "Inverse hyperbolic sine." float any
                (|x| {
                    let a = x.abs();
                    let r = if a > R::of(1e15) {
                        a.ln() + R::of(core::f64::consts::LN_2)
                    } else {
                        (a + a * a / (R::ONE + (R::ONE + a * a).sqrt())).ln_1p()
                    };
                    if x < R::ZERO { -r } else { r }
                }) ();
            Asin asin "Inverse sine (radians), as `2 atan(x / (1 + sqrt(1 - x²)))`; NaN outside [-1, 1]." float unit
                (|x| R::of(2.0) * (x / (R::ONE + (R::ONE - x * x).sqrt())).atan()) ();
            Acos acos "Inverse cosine (radians), as `2 atan(sqrt((1 - x) / (1 + x)))`; NaN outside [-1, 1]." float unit
                (|x| R::of(2.0) * ((R::ONE - x) / (R::ONE + x)).sqrt().atan()) ();
            Atanh atanh "Inverse hyperbolic tangent, `ln((1 + x) / (1 - x)) / 2`; NaN outside [-1, 1]." float unit
                (|x| R::of(0.5) * (R::of(2.0) * x / (R::ONE - x)).ln_1p()) ();
            Acosh acosh "Inverse hyperbolic cosine; NaN below 1." float above_one
                (|x| if x > R::of(1e15) {
                    x.ln() + R::of(core::f64::consts::LN_2)
                } else {
                    let t = x - R::ONE;
                    (t + (t * (x + R::ONE)).sqrt()).ln_1p()
                }) ();
            Deg2rad deg2rad "Degrees to radians, `x * π / 180`." float any
                (|x| x * R::of(core::f64::consts::PI / 180.0)) ();
            Rad2deg rad2deg "Radians to degrees, `x * 180 / π`." float any
                (|x| x * R::of(180.0 / core::f64::consts::PI)) ();
            Sinc sinc "Normalized sinc, `sin(πx) / (πx)` (1 at 0)." float any
                (|x| if x == R::ZERO { R::ONE } else {
                    let y = x * R::of(core::f64::consts::PI);
                    y.sin() / y
                }) ();
            Softsign softsign "`x / (1 + |x|)` (`F.softsign`)." float any (|x| x / (R::ONE + x.abs())) ();
            Logsigmoid logsigmoid "`log(sigmoid(x))`, computed stably as `min(x, 0) - log1p(e^-|x|)` (`F.logsigmoid`)." float any
                (|x| (if x < R::ZERO { x } else { R::ZERO }) - (-x.abs()).exp().ln_1p()) ();
            Mish mish "`x * tanh(softplus(x))` (`F.mish`)." float any
                (|x| if x > R::of(20.0) { x } else { x * x.exp().ln_1p().tanh() }) ();
            Relu6 relu6 "`min(max(x, 0), 6)` (`F.relu6`)." float nonzero
                (|x| if x.is_nan() { x } else if x <= R::ZERO { R::ZERO } else if x >= R::of(6.0) { R::of(6.0) } else { x }) ();
            Hardsigmoid hardsigmoid "`relu6(x + 3) / 6` (`F.hardsigmoid`)." float any
                (|x| if x <= R::of(-3.0) { R::ZERO } else if x >= R::of(3.0) { R::ONE } else { x / R::of(6.0) + R::of(0.5) }) ();
            Hardswish hardswish "`x * relu6(x + 3) / 6` (`F.hardswish`)." float any
                (|x| if x <= R::of(-3.0) { R::ZERO } else if x >= R::of(3.0) { x } else { x * (x + R::of(3.0)) / R::of(6.0) }) ();
            Selu selu "Scaled ELU with PyTorch's constants, `scale * (max(0, x) + min(0, alpha * (e^x - 1)))` (`F.selu`)." float nonzero
                (|x| R::of($crate::ops::SELU_SCALE) * if x > R::ZERO { x } else { R::of($crate::ops::SELU_ALPHA) * x.exp_m1() }) ();
            Lgamma lgamma "`ln |Γ(x)|` (+inf at the poles 0, -1, -2, ...)." float positive (|x| x.lgamma()) ();
            Digamma digamma "The digamma function `ψ(x) = d/dx ln Γ(x)` (-inf at 0, NaN at negative integers)." float positive
                (|x| x.digamma()) ();
            I0 i0 "The modified Bessel function of the first kind of order 0, `I₀(x)` (`torch.i0`; +inf beyond about ±89 in f32)." float any (|x| x.i0()) ();
            I0e i0e "The exponentially scaled modified Bessel function `e^-|x| I₀(x)` (`torch.special.i0e`)." float any (|x| x.i0e()) ();
            I1 i1 "The modified Bessel function of the first kind of order 1, `I₁(x)` (`torch.special.i1`)." float any (|x| x.i1()) ();
            I1e i1e "The exponentially scaled modified Bessel function `e^-|x| I₁(x)` (`torch.special.i1e`)." float any (|x| x.i1e()) ();
            Erfinv erfinv "The inverse error function on [-1, 1] (±inf at ±1, NaN outside)." float unit (|x| x.erfinv()) ();
            LogicalNot logical_not "Logical not: true where x is zero (any dtype; bool result)." logical any () ();
        }
    };
}

/// Calls `$m!` with the binary op table.
///
/// A row reads `Variant name "doc" rule (float formula) (integer formula)
/// (bool formula);` where the bool formula works on 0/1 as i64. Rules:
/// `arith` — every dtype in its promoted dtype (bool where a bool formula is
/// given); `float` — computed in floating point (true division: integer
/// operands promote to f32); `bitwise` — integers and bool only.
#[macro_export]
macro_rules! binary_ops {
    ($m:ident) => {
        $m! {
            Add add "Elementwise sum `a + b` (logical or for bool)." arith
                (|a, b| a + b) (|a, b| a.wrapping_add(b)) (|a, b| a | b);
            Sub sub "Elementwise difference `a - b`." arith (|a, b| a - b) (|a, b| a.wrapping_sub(b)) ();
            Mul mul "Elementwise product `a * b` (logical and for bool)." arith
                (|a, b| a * b) (|a, b| a.wrapping_mul(b)) (|a, b| a & b);
            Div div "True division `a / b` (integers divide as floats)." float (|a, b| a / b) () ();
            Rem remainder "Remainder with the sign of the divisor, Python's `%` (an integer `x % 0` is an error on the CPU)." arith
                (|a, b| {
                    let r = a.fmod(b);
                    if r != R::ZERO && ((r < R::ZERO) != (b < R::ZERO)) { r + b } else { r }
                })
                (|a, b| $crate::ops::int_rem(a, b)) ();
            Fmod fmod "Remainder with the sign of the dividend, C's `fmod` (an integer `x % 0` is an error on the CPU)." arith
                (|a, b| a.fmod(b)) (|a, b| a.checked_rem(b).unwrap_or(0)) ();
            FloorDivide floor_divide "`floor(a / b)`, Python's `//` (an integer division by 0 is an error on the CPU)." arith
                (|a, b| $crate::ops::floor_divide(a, b)) (|a, b| $crate::ops::int_floor_divide(a, b)) ();
            Polygamma polygamma "`x.polygamma(n)`: the n-th derivative of the digamma function at x (n a whole number; `polygamma(n, x)` as torch.polygamma)." float
                (|x, n| x.polygamma(n)) () ();
            Pow pow "`a ** b` (negative integer powers of integers other than ±1 are an error)." arith
                (|a, b| a.pow(b)) (|a, b| $crate::ops::int_pow(a, b)) ();
            Igamma igamma "The regularized lower incomplete gamma function `P(a, x)` of a (`input`) and x (`torch.igamma`, `torch.special.gammainc`); differentiable in x only." float
                (|a, x| a.gammainc(x)) () ();
            Igammac igammac "The regularized upper incomplete gamma function `Q(a, x) = 1 - P(a, x)` (`torch.igammac`, `torch.special.gammaincc`); differentiable in x only." float
                (|a, x| a.gammaincc(x)) () ();
            ReluBackward relu_backward "The gradient through ReLU for the output's gradient g and the input (or output) x: 0 where `x <= 0`, else g (`torch.ops.aten.threshold_backward(g, x, 0)`)." float
                (|g, x| if x <= R::ZERO { R::ZERO } else { g }) () ();
            GeluBackward gelu_backward "The gradient through exact GELU: `g * (Φ(x) + x φ(x))` for the output's gradient g and the input x (`torch.ops.aten.gelu_backward`)." float
                (|g, x| g * $crate::ops::gelu_grad(x)) () ();
            GeluTanhBackward gelu_tanh_backward "The gradient through the tanh GELU for the output's gradient g and the input x (`torch.ops.aten.gelu_backward(g, x, approximate=\"tanh\")`)." float
                (|g, x| g * $crate::ops::gelu_tanh_grad(x)) () ();
            Maximum maximum "Elementwise maximum; NaN propagates (logical or for bool)." arith
                (|a, b| if a.is_nan() || b.is_nan() { R::NAN } else if a > b { a } else { b })
                (|a, b| if a > b { a } else { b }) (|a, b| a | b);
            Minimum minimum "Elementwise minimum; NaN propagates (logical and for bool)." arith
                (|a, b| if a.is_nan() || b.is_nan() { R::NAN } else if a < b { a } else { b })
                (|a, b| if a < b { a } else { b }) (|a, b| a & b);
            Gcd gcd "Greatest common divisor of integers, non-negative (`gcd(0, 0) = 0`); integers only." bitwise
                () (|a, b| $crate::ops::int_gcd(a, b)) (|a, b| a | b);
            Lcm lcm "Least common multiple of integers, non-negative (0 when either is 0); integers only." bitwise
                () (|a, b| $crate::ops::int_lcm(a, b)) (|a, b| a & b);
            BitAnd bitwise_and "Bitwise and (logical for bool); integers and bool only." bitwise
                () (|a, b| a & b) (|a, b| a & b);
            BitOr bitwise_or "Bitwise or (logical for bool); integers and bool only." bitwise
                () (|a, b| a | b) (|a, b| a | b);
            BitXor bitwise_xor "Bitwise exclusive or (logical for bool); integers and bool only." bitwise
                () (|a, b| a ^ b) (|a, b| a ^ b);
            BitShiftLeft bitwise_left_shift "`a << b`: a shifted left by b bits, 0 when b is negative or at least the width." bitwise
                () (|a, b| $crate::ops::int_shift_left(a, b)) ();
            BitShiftRight bitwise_right_shift "`a >> b`: a shifted right by b bits, keeping the sign (a's sign fill when b is negative or at least the width)." bitwise
                () (|a, b| $crate::ops::int_shift_right(a, b)) ();
        }
    };
}

/// Calls `$m!` with the comparison table: `Variant name "doc" operator;`.
/// Comparisons compute in the promoted dtype (floats as f64, integers as
/// i64) and return bool; NaN compares unequal to everything.
#[macro_export]
macro_rules! cmp_ops {
    ($m:ident) => {
        $m! {
            Eq eq "Elementwise `a == b` (bool result)." ==;
            Ne ne "Elementwise `a != b` (bool result)." !=;
            Lt lt "Elementwise `a < b` (bool result)." <;
            Le le "Elementwise `a <= b` (bool result)." <=;
            Gt gt "Elementwise `a > b` (bool result)." >;
            Ge ge "Elementwise `a >= b` (bool result)." >=;
        }
    };
}

/// SELU's scale (Klambauer et al.; PyTorch's constant).
pub const SELU_SCALE: f64 = 1.050_700_987_355_480_5;
/// SELU's alpha (Klambauer et al.; PyTorch's constant).
pub const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;

/// The exported name of a kernel: its parts joined by `_`
/// (`kernel_name!(unary, exp, f32)` is `"unary_exp_f32"`). The PTX side
/// exports every kernel under this name and the host looks it up by the same
/// macro, so the two cannot drift apart.
#[macro_export]
macro_rules! kernel_name {
    ($first:ident $(, $rest:ident)*) => {
        concat!(stringify!($first) $(, "_", stringify!($rest))*)
    };
}

/// `√(2/π)`, the scale inside the tanh GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh GELU.
const GELU_TANH_CUBIC: f64 = 0.044_715;
/// `1/√(2π)`, the standard normal density at 0.
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// `(1 + tanh(u)) / 2 = sigmoid(2u)` at the tanh GELU's `u`: one
/// exponential (the GPU's fast `ex2`) instead of a `tanh`, exact at ±∞.
#[inline(always)]
fn gelu_tanh_gate<R: crate::real::Real>(x: R) -> R {
    let u = R::of(SQRT_2_OVER_PI) * (x + R::of(GELU_TANH_CUBIC) * x * x * x);
    R::ONE / (R::ONE + (-(u + u)).exp())
}

/// GELU with the tanh approximation (PyTorch's `approximate="tanh"`):
/// `0.5 x (1 + tanh(u)) = x sigmoid(2u)`.
#[inline(always)]
pub fn gelu_tanh<R: crate::real::Real>(x: R) -> R {
    x * gelu_tanh_gate(x)
}

/// The derivative of exact GELU, `Φ(x) + x φ(x)`.
#[inline(always)]
pub fn gelu_grad<R: crate::real::Real>(x: R) -> R {
    let cdf = R::of(0.5) * (R::ONE + (x * R::of(core::f64::consts::FRAC_1_SQRT_2)).erf());
    let pdf = R::of(FRAC_1_SQRT_2PI) * (R::of(-0.5) * x * x).exp();
    cdf + x * pdf
}

/// The derivative of the tanh GELU: `(1 + t) / 2 + x (1 - t²) u' / 2` with
/// `t = tanh(u)`, `u = √(2/π) (x + 0.044715 x³)`; with `s = (1 + t) / 2`
/// that is `s + 2 x s (1 - s) u'`.
#[inline(always)]
pub fn gelu_tanh_grad<R: crate::real::Real>(x: R) -> R {
    let s = gelu_tanh_gate(x);
    let du = R::of(SQRT_2_OVER_PI) * (R::ONE + R::of(3.0 * GELU_TANH_CUBIC) * x * x);
    s + R::of(2.0) * x * s * (R::ONE - s) * du
}

/// `floor(a / b)` in floating point, as PyTorch computes it: from the
/// truncated remainder, so that `a == b * (a // b) + a % b` holds as
/// closely as rounding allows.
#[inline(always)]
pub fn floor_divide<R: crate::real::Real>(a: R, b: R) -> R {
    if b == R::ZERO {
        return a / b;
    }
    let m = a.fmod(b);
    let mut d = (a - m) / b;
    if m != R::ZERO && ((b < R::ZERO) != (m < R::ZERO)) {
        d = d - R::ONE;
    }
    if d == R::ZERO {
        // a zero with the sign of the quotient
        return (a / b) * R::ZERO;
    }
    let f = d.floor();
    if d - f > R::of(0.5) {
        f + R::ONE
    } else {
        f
    }
}

/// `floor(a / b)` on integers (0 for a zero divisor; the CPU front-end
/// reports that as an error first).
#[inline(always)]
pub fn int_floor_divide(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// Remainder with the sign of the divisor on integers (`x % 0` gives 0 here;
/// the CPU front-end reports it as an error first).
#[inline(always)]
pub fn int_rem(a: i64, b: i64) -> i64 {
    match a.checked_rem(b) {
        Some(r) if r != 0 && ((r < 0) != (b < 0)) => r + b,
        Some(r) => r,
        None => 0,
    }
}

/// The greatest common divisor of |a| and |b| (Euclid's algorithm).
#[inline(always)]
pub fn int_gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        let r = a % b;
        a = b;
        b = r;
    }
    a as i64
}

/// `a << b` as PyTorch's kernels shift: 0 for a negative `b` or one at
/// least the width. Over i64; narrower dtypes keep the low bits, which are
/// then PyTorch's (their own width's shifts are 0 from there too).
#[inline(always)]
pub fn int_shift_left(a: i64, b: i64) -> i64 {
    if (0..64).contains(&b) {
        ((a as u64) << b) as i64
    } else {
        0
    }
}

/// `a >> b`, arithmetic: the sign fill `a >> 63` for a negative `b` or
/// one at least the width (over i64, which narrower dtypes share).
#[inline(always)]
pub fn int_shift_right(a: i64, b: i64) -> i64 {
    if (0..64).contains(&b) {
        a >> b
    } else {
        a >> 63
    }
}

/// The least common multiple `|a / gcd(a, b) · b|` (0 when either is 0).
#[inline(always)]
pub fn int_lcm(a: i64, b: i64) -> i64 {
    let g = int_gcd(a, b);
    if g == 0 {
        0
    } else {
        (a / g).wrapping_mul(b).wrapping_abs()
    }
}

/// Integer power, wrapping; negative exponents give the exact result for
/// bases ±1 and 0 otherwise (the front-end rejects those first).
#[inline(always)]
pub fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 if exp % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut r, mut b, mut e) = (1i64, base, exp as u64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    r
}

/// The unary formulas as functions: `unary::exp::<f32>`, and in
/// [`unary::int`] the integer ones (`unary::int::abs`).
pub mod unary {
    #[allow(unused_imports)]
    use crate::real::Real;

    macro_rules! float_fns {
        ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
            $( float_fn!($n $doc $rule $f); )*
        };
    }
    macro_rules! float_fn {
        ($n:ident $doc:literal $rule:ident (|$x:ident| $e:expr)) => {
            #[doc = $doc]
            #[inline(always)]
            pub fn $n<R: Real>($x: R) -> R {
                $e
            }
        };
        ($n:ident $doc:literal logical ()) => {};
    }
    crate::unary_ops!(float_fns);

    /// The integer formulas of the `keep` rows, over i64.
    pub mod int {
        macro_rules! int_fns {
            ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
                $( int_fn!($n $doc $rule $i); )*
            };
        }
        macro_rules! int_fn {
            ($n:ident $doc:literal keep (|$x:ident| $e:expr)) => {
                #[doc = $doc]
                #[inline(always)]
                pub fn $n($x: i64) -> i64 {
                    $e
                }
            };
            ($n:ident $doc:literal float ()) => {};
            ($n:ident $doc:literal logical ()) => {};
        }
        crate::unary_ops!(int_fns);
    }
}

/// The binary formulas as functions: `binary::add::<f32>`, the integer ones
/// in [`binary::int`] and the bool ones (on 0/1) in [`binary::boolean`].
pub mod binary {
    #[allow(unused_imports)]
    use crate::real::Real;

    macro_rules! float_fns {
        ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
            $( float_fn!($n $doc $rule $f); )*
        };
    }
    macro_rules! float_fn {
        ($n:ident $doc:literal $rule:ident (|$a:ident, $b:ident| $e:expr)) => {
            #[doc = $doc]
            #[inline(always)]
            pub fn $n<R: Real>($a: R, $b: R) -> R {
                $e
            }
        };
        ($n:ident $doc:literal bitwise ()) => {};
    }
    crate::binary_ops!(float_fns);

    /// The integer formulas, over i64.
    pub mod int {
        macro_rules! int_fns {
            ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
                $( int_fn!($n $doc $rule $i); )*
            };
        }
        macro_rules! int_fn {
            ($n:ident $doc:literal $rule:ident (|$a:ident, $b:ident| $e:expr)) => {
                #[doc = $doc]
                #[inline(always)]
                pub fn $n($a: i64, $b: i64) -> i64 {
                    $e
                }
            };
            ($n:ident $doc:literal float ()) => {};
        }
        crate::binary_ops!(int_fns);
    }

    /// The bool formulas, over 0/1 as i64.
    pub mod boolean {
        macro_rules! bool_fns {
            ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
                $( bool_fn!($n $doc $b); )*
            };
        }
        macro_rules! bool_fn {
            ($n:ident $doc:literal (|$a:ident, $b:ident| $e:expr)) => {
                #[doc = $doc]
                #[inline(always)]
                pub fn $n($a: i64, $b: i64) -> i64 {
                    (($e) != 0) as i64
                }
            };
            ($n:ident $doc:literal ()) => {};
        }
        crate::binary_ops!(bool_fns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_follow_pytorch() {
        assert_eq!(unary::relu(-2.0f32), 0.0);
        assert!(unary::relu(f32::NAN).is_nan());
        assert_eq!(unary::sign(-0.0f64).to_bits(), (-0.0f64).to_bits());
        assert_eq!(unary::int::abs(i64::MIN), i64::MIN);
        assert_eq!(unary::round(2.5f32), 2.0);
        assert_eq!(binary::remainder(-7.0f64, 3.0), 2.0);
        assert_eq!(binary::int::remainder(-7, 3), 2);
        assert_eq!(binary::int::remainder(7, 0), 0);
        assert_eq!(binary::int::pow(-1, -3), -1);
        assert_eq!(binary::int::pow(2, 10), 1024);
        assert!(binary::maximum(1.0f32, f32::NAN).is_nan());
        assert_eq!(binary::boolean::add(1, 1), 1);
        assert_eq!(binary::boolean::mul(1, 0), 0);
        assert!((binary::pow(-2.0f64, 3.0) + 8.0).abs() < 1e-12);
    }

    #[test]
    fn kernel_names_join_their_parts() {
        assert_eq!(kernel_name!(unary, exp, f32), "unary_exp_f32");
        assert_eq!(kernel_name!(where, bf16), "where_bf16");
    }
}
