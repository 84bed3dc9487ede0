//! [`Real`]: the float arithmetic the op table's formulas are written in,
//! implemented for f32 and f64. The formulas are one source for both
//! backends; the primitives are each platform's: on the host (the `std`
//! feature, which the CPU backend builds with) the platform's math library
//! through std, as the CPU backend has always computed; in the kernels the
//! `libm` crate, except where [`math`](crate::math) picks a hardware
//! instruction (`exp` and `exp2` of f32 are `ex2.approx`, `sqrt` is
//! `sqrt.rn`). The two agree to an ulp or two; the GPU's fast f32 `exp` is
//! the one documented larger difference.

use crate::math;
use crate::special;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// A float the op table computes in: f32 (also for f16 and bf16) or f64.
pub trait Real:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// 0
    const ZERO: Self;
    /// 1
    const ONE: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// `c` rounded to this type.
    fn of(c: f64) -> Self;
    /// True for NaN.
    fn is_nan(self) -> bool;
    /// `|x|`
    fn abs(self) -> Self;
    /// `e^x`
    fn exp(self) -> Self;
    /// `e^x - 1`
    fn exp_m1(self) -> Self;
    /// natural log
    fn ln(self) -> Self;
    /// `ln(1 + x)`
    fn ln_1p(self) -> Self;
    /// base-2 log
    fn log2(self) -> Self;
    /// square root, correctly rounded
    fn sqrt(self) -> Self;
    /// sine
    fn sin(self) -> Self;
    /// cosine
    fn cos(self) -> Self;
    /// tangent
    fn tan(self) -> Self;
    /// hyperbolic tangent
    fn tanh(self) -> Self;
    /// hyperbolic sine
    fn sinh(self) -> Self;
    /// hyperbolic cosine
    fn cosh(self) -> Self;
    /// inverse tangent
    fn atan(self) -> Self;
    /// `2^x`
    fn exp2(self) -> Self;
    /// base-10 log
    fn log10(self) -> Self;
    /// round toward zero
    fn trunc(self) -> Self;
    /// the error function
    fn erf(self) -> Self;
    /// round down
    fn floor(self) -> Self;
    /// round up
    fn ceil(self) -> Self;
    /// round half to even
    fn rint(self) -> Self;
    /// the remainder of truncated division (C's `fmod`)
    fn fmod(self, d: Self) -> Self;
    /// `self ** e` with IEEE's special cases
    fn pow(self, e: Self) -> Self;
    /// `ln |Γ(x)|`
    fn lgamma(self) -> Self;
    /// the digamma function `ψ(x)`
    fn digamma(self) -> Self;
    /// `ψ⁽ⁿ⁾(x)` for a whole number `n`
    fn polygamma(self, n: Self) -> Self;
    /// the inverse error function
    fn erfinv(self) -> Self;
    /// the complementary error function `1 - erf(x)`
    fn erfc(self) -> Self;
    /// the modified Bessel function `I₀(x)`
    fn i0(self) -> Self;
    /// `e^-|x| I₀(x)`
    fn i0e(self) -> Self;
    /// the modified Bessel function `I₁(x)`
    fn i1(self) -> Self;
    /// `e^-|x| I₁(x)`
    fn i1e(self) -> Self;
    /// the regularized lower incomplete gamma function `P(self, x)`
    fn gammainc(self, x: Self) -> Self;
    /// the regularized upper incomplete gamma function `Q(self, x)`
    fn gammaincc(self, x: Self) -> Self;
}

macro_rules! real {
    ($t:ident, $abs:expr, $exp:expr, $expm1:expr, $ln:expr, $ln1p:expr, $log2:expr, $sqrt:expr,
     $sin:expr, $cos:expr, $tan:expr, $tanh:expr, $erf:expr, $floor:expr, $ceil:expr, $rint:expr,
     $fmod:expr, $pow:expr, $sinh:expr, $cosh:expr, $atan:expr, $exp2:expr, $log10:expr,
     $trunc:expr) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = $t::NAN;
            #[inline(always)]
            fn of(c: f64) -> Self {
                c as $t
            }
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn is_nan(self) -> bool {
                self != self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                ($abs)(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                ($exp)(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                ($expm1)(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                ($ln)(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                ($ln1p)(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                ($log2)(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                ($sqrt)(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                ($sin)(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                ($cos)(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                ($tan)(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                ($tanh)(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                ($erf)(self)
            }
            #[inline(always)]
            fn sinh(self) -> Self {
                ($sinh)(self)
            }
            #[inline(always)]
            fn cosh(self) -> Self {
                ($cosh)(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                ($atan)(self)
            }
            #[inline(always)]
            fn exp2(self) -> Self {
                ($exp2)(self)
            }
            #[inline(always)]
            fn log10(self) -> Self {
                ($log10)(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                ($trunc)(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                ($floor)(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                ($ceil)(self)
            }
            #[inline(always)]
            fn rint(self) -> Self {
                ($rint)(self)
            }
            #[inline(always)]
            fn fmod(self, d: Self) -> Self {
                ($fmod)(self, d)
            }
            #[inline(always)]
            fn pow(self, e: Self) -> Self {
                ($pow)(self, e)
            }
            // the special functions compute in f64 and round once
            #[inline]
            fn lgamma(self) -> Self {
                special::lgamma(self as f64) as $t
            }
            #[inline]
            fn digamma(self) -> Self {
                special::digamma(self as f64) as $t
            }
            #[inline]
            fn polygamma(self, n: Self) -> Self {
                special::polygamma(n as f64, self as f64) as $t
            }
            #[inline]
            fn erfinv(self) -> Self {
                special::erfinv(self as f64) as $t
            }
            #[inline]
            fn erfc(self) -> Self {
                libm::erfc(self as f64) as $t
            }
            #[inline]
            fn i0(self) -> Self {
                special::bessel_i0(self as f64) as $t
            }
            #[inline]
            fn i0e(self) -> Self {
                special::bessel_i0e(self as f64) as $t
            }
            #[inline]
            fn i1(self) -> Self {
                special::bessel_i1(self as f64) as $t
            }
            #[inline]
            fn i1e(self) -> Self {
                special::bessel_i1e(self as f64) as $t
            }
            #[inline]
            fn gammainc(self, x: Self) -> Self {
                special::gammainc(self as f64, x as f64) as $t
            }
            #[inline]
            fn gammaincc(self, x: Self) -> Self {
                special::gammaincc(self as f64, x as f64) as $t
            }
        }
    };
}

#[cfg(not(feature = "std"))]
real!(
    f32,
    libm::fabsf,
    math::exp_f32,
    libm::expm1f,
    libm::logf,
    libm::log1pf,
    libm::log2f,
    math::sqrt_f32,
    libm::sinf,
    libm::cosf,
    libm::tanf,
    libm::tanhf,
    math::erf_f32,
    libm::floorf,
    libm::ceilf,
    libm::rintf,
    libm::fmodf,
    math::pow_f32,
    libm::sinhf,
    libm::coshf,
    libm::atanf,
    math::exp2_f32,
    libm::log10f,
    libm::truncf
);
#[cfg(not(feature = "std"))]
real!(
    f64,
    libm::fabs,
    libm::exp,
    libm::expm1,
    libm::log,
    libm::log1p,
    libm::log2,
    math::sqrt_f64,
    libm::sin,
    libm::cos,
    libm::tan,
    libm::tanh,
    math::erf_f64,
    libm::floor,
    libm::ceil,
    libm::rint,
    libm::fmod,
    math::pow_f64,
    libm::sinh,
    libm::cosh,
    libm::atan,
    math::exp2_f64,
    libm::log10,
    libm::trunc
);

// On the host (the `std` feature), the platform's math library through std,
// as the CPU backend has always computed; erf has no std version.
#[cfg(feature = "std")]
real!(
    f32,
    f32::abs,
    f32::exp,
    f32::exp_m1,
    f32::ln,
    f32::ln_1p,
    f32::log2,
    f32::sqrt,
    f32::sin,
    f32::cos,
    f32::tan,
    f32::tanh,
    math::erf_f32,
    f32::floor,
    f32::ceil,
    f32::round_ties_even,
    |a: f32, b: f32| a % b,
    f32::powf,
    f32::sinh,
    f32::cosh,
    f32::atan,
    f32::exp2,
    f32::log10,
    f32::trunc
);
#[cfg(feature = "std")]
real!(
    f64,
    f64::abs,
    f64::exp,
    f64::exp_m1,
    f64::ln,
    f64::ln_1p,
    f64::log2,
    f64::sqrt,
    f64::sin,
    f64::cos,
    f64::tan,
    f64::tanh,
    math::erf_f64,
    f64::floor,
    f64::ceil,
    f64::round_ties_even,
    |a: f64, b: f64| a % b,
    f64::powf,
    f64::sinh,
    f64::cosh,
    f64::atan,
    f64::exp2,
    f64::log10,
    f64::trunc
);
