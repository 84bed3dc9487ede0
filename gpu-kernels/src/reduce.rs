//! Reduction states shared by the host and the kernels: one [`RState`] layout
//! for every op (so partial results of a split lane can be stored and merged),
//! with `push` (one element), `merge` (two partial states, order-free) and
//! `finish` (the result as f64 or i64).

/// Calls `$m!` with the reduction table: one row per reduction,
/// `Variant name code "doc" rule params;`. `code` is the number the kernels
/// receive ([`ReduceCode`]); rules give the result dtype: `widen` (floats keep
/// their dtype, integers and bool sum to i64), `keep` (the input's dtype),
/// `float` (integers compute in f32), `index` (i64 positions), `truth`
/// (bool). `params` is `()` or `(correction)`: Bessel's correction of the
/// moments, the divisor being `n - correction`. `extreme` marks the ops with
/// no value for an empty input. The state machine every row runs
/// ([`RState`]: `init`, `push`, `merge`, `finish`) is shared by the CPU and
/// the GPU.
#[macro_export]
macro_rules! reduce_ops {
    ($m:ident) => {
        $m! {
            Sum sum 0 "Sum of all elements, or over dims (keepdim keeps them as size 1)." widen () total;
            Prod prod 1 "Product of all elements, or over dims (keepdim keeps them as size 1)." widen () total;
            Mean mean 2 "Mean of all elements, or over dims (keepdim keeps them as size 1)." float () total;
            Var var 3 "Variance (correction 1 by default), of all elements or over dims." float (correction) total;
            Std std 4 "Standard deviation (correction 1 by default), of all elements or over dims." float (correction) total;
            Max max 5 "Maximum of all elements, or over dim (keepdim keeps it as size 1); NaN propagates." keep () extreme;
            Min min 6 "Minimum of all elements, or over dim (keepdim keeps it as size 1); NaN propagates." keep () extreme;
            ArgMax argmax 7 "Index of the first maximum, overall (flat) or along dim." index () extreme;
            ArgMin argmin 8 "Index of the first minimum, overall (flat) or along dim." index () extreme;
            All all 9 "True when every element is non-zero, overall or over dims." truth () total;
            Any any 10 "True when some element is non-zero, overall or over dims." truth () total;
        }
    };
}

macro_rules! declare_codes {
    ($($v:ident $n:ident $code:literal $doc:literal $rule:ident $params:tt $empty:ident;)*) => {
        /// Which reduction; passed to the kernels as a number (the rows of
        /// [`reduce_ops!`](crate::reduce_ops)).
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ReduceCode {
            $( #[doc = $doc] $v = $code, )*
        }

        impl ReduceCode {
            /// The code from its number (unknown numbers read as `Sum`).
            #[inline(always)]
            pub fn from_u32(v: u32) -> Self {
                match v {
                    $( $code => ReduceCode::$v, )*
                    _ => ReduceCode::Sum,
                }
            }
        }
    };
}
reduce_ops!(declare_codes);

/// A partial reduction. Fields by op: sums and products in `a` (floats) or
/// `i` (integers); moments as (`a` = n, `b` = mean, `c` = M2); extremes as
/// value `a` (floats) or `i` (integers) with index `idx` (-1 = none yet);
/// all/any as `a` ∈ {0, 1}.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RState {
    /// float accumulator / count / value
    pub a: f64,
    /// mean
    pub b: f64,
    /// M2
    pub c: f64,
    /// integer accumulator / value
    pub i: i64,
    /// index of the extreme (-1 = none)
    pub idx: i64,
}

#[inline(always)]
fn is_nan(x: f64) -> bool {
    x.is_nan()
}

/// True when (x, ix) should replace (y, iy) as the extreme (`max` or min);
/// NaN wins, ties go to the lower index.
#[inline(always)]
fn better(max: bool, x: f64, ix: i64, y: f64, iy: i64) -> bool {
    if ix < 0 {
        return false;
    }
    if iy < 0 {
        return true;
    }
    match (is_nan(x), is_nan(y)) {
        (true, true) => ix < iy,
        (true, false) => true,
        (false, true) => false,
        _ if x == y => ix < iy,
        _ => (x > y) == max,
    }
}

impl RState {
    /// The empty state of `op`.
    #[inline(always)]
    pub fn init(op: ReduceCode) -> Self {
        use ReduceCode::*;
        let mut s = RState {
            idx: -1,
            ..Default::default()
        };
        match op {
            Prod => {
                s.a = 1.0;
                s.i = 1;
            }
            All => s.a = 1.0,
            Max => s.i = i64::MIN,
            Min => s.i = i64::MAX,
            _ => {}
        }
        s
    }

    /// Adds element `x` (as f64 and as i64) at lane position `j`.
    #[inline(always)]
    pub fn push(&mut self, op: ReduceCode, float: bool, x: f64, xi: i64, j: i64) {
        use ReduceCode::*;
        match op {
            Sum => {
                self.a += x;
                self.i = self.i.wrapping_add(xi);
            }
            Prod => {
                self.a *= x;
                self.i = self.i.wrapping_mul(xi);
            }
            Mean | Var | Std => {
                self.a += 1.0;
                let d = x - self.b;
                self.b += d / self.a;
                self.c += d * (x - self.b);
            }
            Max | Min | ArgMax | ArgMin => {
                let max = matches!(op, Max | ArgMax);
                if float || matches!(op, ArgMax | ArgMin) {
                    if better(max, x, j, self.a, self.idx) {
                        self.a = x;
                        self.idx = j;
                    }
                } else if (max && xi > self.i) || (!max && xi < self.i) {
                    self.i = xi;
                }
            }
            All => self.a = (self.a != 0.0 && x != 0.0) as u8 as f64,
            Any => self.a = (self.a != 0.0 || x != 0.0) as u8 as f64,
        }
    }

    /// Merges two partial states of disjoint parts of a lane.
    #[inline(always)]
    pub fn merge(self, op: ReduceCode, float: bool, o: RState) -> RState {
        use ReduceCode::*;
        let mut s = self;
        match op {
            Sum => {
                s.a += o.a;
                s.i = s.i.wrapping_add(o.i);
            }
            Prod => {
                s.a *= o.a;
                s.i = s.i.wrapping_mul(o.i);
            }
            Mean | Var | Std => {
                if o.a == 0.0 {
                    return s;
                }
                if s.a == 0.0 {
                    return o;
                }
                let n = s.a + o.a;
                let d = o.b - s.b;
                s = RState {
                    a: n,
                    b: s.b + d * o.a / n,
                    c: s.c + o.c + d * d * s.a * o.a / n,
                    ..s
                };
            }
            Max | Min | ArgMax | ArgMin => {
                let max = matches!(op, Max | ArgMax);
                if float || matches!(op, ArgMax | ArgMin) {
                    if better(max, o.a, o.idx, s.a, s.idx) {
                        s.a = o.a;
                        s.idx = o.idx;
                    }
                } else if (max && o.i > s.i) || (!max && o.i < s.i) {
                    s.i = o.i;
                }
            }
            All => s.a = (s.a != 0.0 && o.a != 0.0) as u8 as f64,
            Any => s.a = (s.a != 0.0 || o.a != 0.0) as u8 as f64,
        }
        s
    }

    /// The result: `(float value, integer value)`; the caller stores the one
    /// its output dtype wants.
    #[inline(always)]
    pub fn finish(self, op: ReduceCode, float: bool, correction: u32) -> (f64, i64) {
        use ReduceCode::*;
        match op {
            Sum | Prod if float => (self.a, self.a as i64),
            Sum | Prod => (self.i as f64, self.i),
            Mean => (if self.a == 0.0 { f64::NAN } else { self.b }, 0),
            Var | Std => {
                let d = self.a - correction as f64;
                let v = self.c / if d > 0.0 { d } else { 0.0 };
                (
                    if matches!(op, Std) {
                        crate::math::sqrt_f64(v)
                    } else {
                        v
                    },
                    0,
                )
            }
            Max | Min if float => (self.a, self.a as i64),
            Max | Min => (self.i as f64, self.i),
            ArgMax | ArgMin => (self.idx as f64, if self.idx < 0 { 0 } else { self.idx }),
            All | Any => (self.a, self.a as i64),
        }
    }
}
