//! Element types as the kernels see them: every dtype converts through f32
//! (or f64 for f64) for float math and through i64 for integer math.
//! f16 and bf16 travel as raw bits ([`F16`], [`BF16`]).

use crate::half;

/// IEEE half stored as bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct F16(pub u16);

/// bfloat16 stored as bits.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BF16(pub u16);

/// Conversions every kernel element type supports.
pub trait Elem: Copy {
    /// True for the float types.
    const FLOAT: bool;
    /// To f32 (f64 rounds once; ints convert).
    fn to_f32(self) -> f32;
    /// From f32 with one rounding (ints truncate toward zero).
    fn from_f32(v: f32) -> Self;
    /// To f64.
    fn to_f64(self) -> f64;
    /// From f64 with one rounding (ints truncate toward zero).
    fn from_f64(v: f64) -> Self;
    /// To i64 (floats truncate toward zero).
    fn to_i64(self) -> i64;
    /// From i64 (wrapping for narrower ints).
    fn from_i64(v: i64) -> Self;
}

macro_rules! int_elem {
    ($t:ty) => {
        impl Elem for $t {
            const FLOAT: bool = false;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                v as i64 as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as i64 as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_elem!(u8);
int_elem!(i32);
int_elem!(i64);

impl Elem for bool {
    const FLOAT: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

impl Elem for f32 {
    const FLOAT: bool = true;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as f32
    }
}

impl Elem for f64 {
    const FLOAT: bool = true;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as f64
    }
}

macro_rules! half_elem {
    ($t:ident, $to:path, $from:path) => {
        impl Elem for $t {
            const FLOAT: bool = true;
            #[inline(always)]
            fn to_f32(self) -> f32 {
                $to(self.0)
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                $t($from(v))
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                $to(self.0) as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                // f64 -> f32 -> half can round twice; the kernels only use it for
                // values that are exact in f32 (arange/linspace steps are f32-rounded).
                $t($from(v as f32))
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                $to(self.0) as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                $t($from(v as f32))
            }
        }
    };
}
half_elem!(F16, half::f16_to_f32, half::f32_to_f16);
half_elem!(BF16, half::bf16_to_f32, half::f32_to_bf16);
