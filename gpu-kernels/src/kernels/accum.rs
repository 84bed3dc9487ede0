//! Float accumulation: each float element type names the type it is summed
//! in ([`FloatElem::Acc`]: f32 for f32, f16 and bf16, as PyTorch does; f64
//! for f64) and [`Acc`] gives the arithmetic the row and reduction kernels
//! need, plus the three reductions they share ([`Combine`]).

use crate::device::Shuffle;
use crate::elem::{Elem, BF16, F16};
use crate::math;
use core::ops::{Add, Div, Mul, Sub};

/// An accumulator type: f32 or f64.
pub trait Acc:
    Shuffle + PartialOrd + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// 0
    const ZERO: Self;
    /// 1
    const ONE: Self;
    /// -inf
    const NEG_INF: Self;
    /// +inf
    const INF: Self;
    /// NaN
    const NAN: Self;
    /// From a count.
    fn from_u32(n: u32) -> Self;
    /// From an f64 parameter (eps).
    fn of_f64(v: f64) -> Self;
    /// `e^self` (the fast f32 exp of [`math::exp_f32`] for f32).
    fn exp(self) -> Self;
    /// `ln(self)`.
    fn ln(self) -> Self;
    /// `sqrt(self)`.
    fn sqrt(self) -> Self;
}

impl Acc for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NEG_INF: Self = f32::NEG_INFINITY;
    const INF: Self = f32::INFINITY;
    const NAN: Self = f32::NAN;
    #[inline(always)]
    fn from_u32(n: u32) -> Self {
        n as f32
    }
    #[inline(always)]
    fn of_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn exp(self) -> Self {
        math::exp_f32(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        libm::logf(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt_f32(self)
    }
}

impl Acc for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const NEG_INF: Self = f64::NEG_INFINITY;
    const INF: Self = f64::INFINITY;
    const NAN: Self = f64::NAN;
    #[inline(always)]
    fn from_u32(n: u32) -> Self {
        n as f64
    }
    #[inline(always)]
    fn of_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn exp(self) -> Self {
        libm::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        libm::log(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt_f64(self)
    }
}

/// A float element and its accumulator.
pub trait FloatElem: Elem {
    /// The type sums of this element are kept in.
    type Acc: Acc;
    /// Widens to the accumulator.
    fn acc(self) -> Self::Acc;
    /// Rounds an accumulator back to the element type.
    fn from_acc(a: Self::Acc) -> Self;
}

impl FloatElem for f32 {
    type Acc = f32;
    #[inline(always)]
    fn acc(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_acc(a: f32) -> Self {
        a
    }
}

impl FloatElem for f64 {
    type Acc = f64;
    #[inline(always)]
    fn acc(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_acc(a: f64) -> Self {
        a
    }
}

impl FloatElem for F16 {
    type Acc = f32;
    #[inline(always)]
    fn acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> Self {
        F16::from_f32(a)
    }
}

impl FloatElem for BF16 {
    type Acc = f32;
    #[inline(always)]
    fn acc(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn from_acc(a: f32) -> Self {
        BF16::from_f32(a)
    }
}

/// The value-only reductions of the dense kernels, by the numbers of
/// [`crate::reduce::ReduceCode`]: 0 sum, 2 mean, 5 max, 6 min.
pub struct Combine<const OP: u32>;

impl<const OP: u32> Combine<OP> {
    /// The identity element.
    #[inline(always)]
    pub fn identity<A: Acc>() -> A {
        match OP {
            5 => A::NEG_INF,
            6 => A::INF,
            _ => A::ZERO,
        }
    }

    /// Two partial results combined (max and min propagate NaN).
    #[inline(always)]
    pub fn apply<A: Acc>(a: A, b: A) -> A {
        match OP {
            5 => max_nan(a, b),
            6 => min_nan(a, b),
            _ => a + b,
        }
    }

    /// The result over `count` elements (mean divides).
    #[inline(always)]
    pub fn finish<A: Acc>(a: A, count: u32) -> A {
        if OP == 2 {
            a / A::from_u32(count)
        } else {
            a
        }
    }
}

/// The larger of two values; NaN when either is NaN.
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn max_nan<A: Acc>(a: A, b: A) -> A {
    if a != a || a > b {
        a
    } else {
        b
    }
}

/// The smaller of two values; NaN when either is NaN.
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn min_nan<A: Acc>(a: A, b: A) -> A {
    if a != a || a < b {
        a
    } else {
        b
    }
}
