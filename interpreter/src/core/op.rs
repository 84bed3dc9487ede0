//! The op vocabulary shared by the front-end and every backend. The
//! elementwise, binary and comparison ops are generated from the op table in
//! `kiln_kernels::ops` (one row per op: name, doc, dtype rule, formula), so
//! the enums here, their names, docs and dtype rules, the CPU maps, the PTX
//! entry points and the script registrations cannot disagree. Reductions are
//! declared here by hand (their kernels are two-pass and take parameters).

use super::DType;

/// The dtype a unary op computes in and returns for `dtype`, by its rule.
macro_rules! unary_rule {
    (float, $d:expr) => {
        Some($d.to_float())
    };
    (keep, $d:expr) => {
        if $d == DType::Bool {
            None
        } else {
            Some($d)
        }
    };
    (logical, $d:expr) => {
        Some(DType::Bool)
    };
}

/// How a unary op treats dtypes (the rule column of the op table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryRule {
    /// Computed in floating point: integer and bool inputs promote to f32.
    Float,
    /// Every numeric dtype computes in its own; bool is rejected.
    Keep,
    /// Any dtype in, bool out.
    Logical,
}

/// How a binary op treats dtypes (the rule column of the op table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryRule {
    /// Every dtype in its promoted dtype (bool where the row has a bool formula).
    Arith,
    /// Computed in floating point (true division).
    Float,
    /// Integers and bool only.
    Bitwise,
}

/// Where a unary op is defined and smooth (the domain column of the op
/// table), for the generated gradient and differential checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// Every real number.
    Any,
    /// Positive numbers (`log`, `sqrt`, ...).
    Positive,
    /// Away from zero, where the op has a kink or a pole (`abs`, `reciprocal`, ...).
    Nonzero,
    /// The open interval (-1, 1) (`asin`, `acos`, `atanh`).
    Unit,
    /// Above 1 (`acosh`).
    AboveOne,
}

/// A rule of the table as its enum variant (`float` of a unary row is
/// [`UnaryRule::Float`], of a binary row [`BinaryRule::Float`]).
macro_rules! rule {
    (unary float) => {
        UnaryRule::Float
    };
    (unary keep) => {
        UnaryRule::Keep
    };
    (unary logical) => {
        UnaryRule::Logical
    };
    (binary arith) => {
        BinaryRule::Arith
    };
    (binary float) => {
        BinaryRule::Float
    };
    (binary bitwise) => {
        BinaryRule::Bitwise
    };
    (domain any) => {
        Domain::Any
    };
    (domain positive) => {
        Domain::Positive
    };
    (domain nonzero) => {
        Domain::Nonzero
    };
    (domain unit) => {
        Domain::Unit
    };
    (domain above_one) => {
        Domain::AboveOne
    };
}

macro_rules! declare_unary {
    ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
        /// Elementwise ops of one operand (the unary rows of the op table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $( #[doc = $doc] $v, )*
        }

        impl UnaryOp {
            /// Every unary op, in table order.
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$v),*];

            /// The op's script name.
            pub fn name(self) -> &'static str {
                match self {
                    $( UnaryOp::$v => stringify!($n), )*
                }
            }

            /// The op's one-line doc.
            pub fn doc(self) -> &'static str {
                match self {
                    $( UnaryOp::$v => $doc, )*
                }
            }

            /// The op's dtype rule.
            pub fn rule(self) -> UnaryRule {
                match self {
                    $( UnaryOp::$v => rule!(unary $rule), )*
                }
            }

            /// Where the op is defined and smooth.
            pub fn domain(self) -> Domain {
                match self {
                    $( UnaryOp::$v => rule!(domain $dom), )*
                }
            }

            /// The dtype the op computes in and returns for an input of `dtype`, or
            /// `None` when the op does not apply to it (e.g. `neg` of a bool tensor).
            pub fn result_dtype(self, dtype: DType) -> Option<DType> {
                match self {
                    $( UnaryOp::$v => unary_rule!($rule, dtype), )*
                }
            }
        }
    };
}
kiln_kernels::unary_ops!(declare_unary);

/// Whether a binary op's row takes operands of `dtype`, by its rule.
macro_rules! binary_accepts {
    (float, $b:tt, $d:expr) => {
        $d.is_float()
    };
    (arith, (), $d:expr) => {
        $d != DType::Bool
    };
    (arith, $b:tt, $d:expr) => {
        true
    };
    (bitwise, (), $d:expr) => {
        $d.is_int()
    };
    (bitwise, $b:tt, $d:expr) => {
        !$d.is_float()
    };
}

macro_rules! declare_binary {
    ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
        /// Elementwise ops of two operands, after broadcasting and promotion
        /// (the binary rows of the op table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BinaryOp {
            $( #[doc = $doc] $v, )*
        }

        impl BinaryOp {
            /// Every binary op, in table order.
            pub const ALL: &'static [BinaryOp] = &[$(BinaryOp::$v),*];

            /// The op's script name.
            pub fn name(self) -> &'static str {
                match self {
                    $( BinaryOp::$v => stringify!($n), )*
                }
            }

            /// The op's one-line doc.
            pub fn doc(self) -> &'static str {
                match self {
                    $( BinaryOp::$v => $doc, )*
                }
            }

            /// The op's dtype rule.
            pub fn rule(self) -> BinaryRule {
                match self {
                    $( BinaryOp::$v => rule!(binary $rule), )*
                }
            }

            /// True when the op computes on operands of `dtype` (the dtype it
            /// computes in: see [`BinaryOp::compute_dtype`]).
            pub fn accepts(self, dtype: DType) -> bool {
                match self {
                    $( BinaryOp::$v => binary_accepts!($rule, $b, dtype), )*
                }
            }
        }
    };
}
kiln_kernels::binary_ops!(declare_binary);

impl BinaryOp {
    /// True for the bitwise ops, which reject float operands.
    pub fn is_bitwise(self) -> bool {
        self.rule() == BinaryRule::Bitwise
    }

    /// The dtype the op computes in, given the promoted operand dtype.
    pub fn compute_dtype(self, promoted: DType) -> DType {
        if self.rule() == BinaryRule::Float {
            promoted.to_float()
        } else {
            promoted
        }
    }
}

macro_rules! declare_cmp {
    ($($v:ident $n:ident $doc:literal $op:tt;)*) => {
        /// Comparisons; they compute in the promoted dtype and return bool
        /// (the comparison rows of the op table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum CmpOp {
            $( #[doc = $doc] $v, )*
        }

        impl CmpOp {
            /// Every comparison, in table order.
            pub const ALL: &'static [CmpOp] = &[$(CmpOp::$v),*];

            /// The op's script name.
            pub fn name(self) -> &'static str {
                match self {
                    $( CmpOp::$v => stringify!($n), )*
                }
            }

            /// The op's one-line doc.
            pub fn doc(self) -> &'static str {
                match self {
                    $( CmpOp::$v => $doc, )*
                }
            }

            /// Applies the comparison to two ordered values.
            #[inline(always)]
            pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
                match self {
                    $( CmpOp::$v => a $op b, )*
                }
            }
        }
    };
}
kiln_kernels::cmp_ops!(declare_cmp);

/// The result dtype of a reduction for an input of `dtype`, by its rule.
macro_rules! reduce_rule {
    (widen, $d:expr) => {
        if $d.is_float() {
            $d
        } else {
            DType::I64
        }
    };
    (keep, $d:expr) => {
        $d
    };
    (float, $d:expr) => {
        $d.to_float()
    };
    (index, $d:expr) => {
        DType::I64
    };
    (truth, $d:expr) => {
        DType::Bool
    };
}

/// A reduction's parameter as the kernels take it (0 when it has none).
macro_rules! reduce_param {
    () => {
        0
    };
    ($p:ident) => {
        $p
    };
}

macro_rules! declare_reduce {
    ($($v:ident $n:ident $code:literal $doc:literal $rule:ident ($($p:ident)?) $empty:ident;)*) => {
        /// Reductions over some dims (or all): the rows of the reduction table
        /// (`kiln_kernels::reduce_ops!`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ReduceOp {
            $(
                #[doc = $doc]
                $v $({
                    /// Bessel's correction: the divisor is `n - correction`.
                    $p: u32
                })?,
            )*
        }

        impl ReduceOp {
            /// Every reduction, in table order, with PyTorch's default parameters
            /// (correction 1).
            pub const ALL: &'static [ReduceOp] = &[$(ReduceOp::$v $({ $p: 1 })?),*];

            /// The op's script name.
            pub fn name(self) -> &'static str {
                match self {
                    $( ReduceOp::$v { .. } => stringify!($n), )*
                }
            }

            /// The op's one-line doc.
            pub fn doc(self) -> &'static str {
                match self {
                    $( ReduceOp::$v { .. } => $doc, )*
                }
            }

            /// The result dtype for an input of `dtype`.
            pub fn result_dtype(self, dtype: DType) -> DType {
                match self {
                    $( ReduceOp::$v { .. } => reduce_rule!($rule, dtype), )*
                }
            }

            /// True when an empty reduction has no defined result (max, min, argmax, argmin).
            pub fn needs_elements(self) -> bool {
                match self {
                    $( ReduceOp::$v { .. } => stringify!($empty) == "extreme", )*
                }
            }

            /// The code the kernels take and the op's parameter (0 when none).
            pub fn code(self) -> (kiln_kernels::reduce::ReduceCode, u32) {
                use kiln_kernels::reduce::ReduceCode;
                match self {
                    $( ReduceOp::$v $({ $p })? => (ReduceCode::$v, reduce_param!($($p)?)), )*
                }
            }
        }
    };
}
kiln_kernels::reduce_ops!(declare_reduce);

/// A scan along one dim (`cumsum` and its kin): each output element
/// combines the input elements up to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    /// Running sum.
    Cumsum,
    /// Running product.
    Cumprod,
    /// Running maximum, with the position it came from.
    Cummax,
    /// Running minimum, with the position it came from.
    Cummin,
    /// Running `log(sum(exp(x)))`.
    Logcumsumexp,
}

impl ScanOp {
    /// Every scan.
    pub const ALL: [ScanOp; 5] = [
        ScanOp::Cumsum,
        ScanOp::Cumprod,
        ScanOp::Cummax,
        ScanOp::Cummin,
        ScanOp::Logcumsumexp,
    ];

    /// The script name.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Cumsum => "cumsum",
            ScanOp::Cumprod => "cumprod",
            ScanOp::Cummax => "cummax",
            ScanOp::Cummin => "cummin",
            ScanOp::Logcumsumexp => "logcumsumexp",
        }
    }

    /// True for the scans that also give positions.
    pub fn with_indices(self) -> bool {
        matches!(self, ScanOp::Cummax | ScanOp::Cummin)
    }

    /// The dtypes the kernels compute in: floats in their own, and i64 for
    /// every scan but `logcumsumexp` (narrower integers and bool widen first).
    pub fn computes_in(self, d: DType) -> bool {
        d.is_float() || (d == DType::I64 && self != ScanOp::Logcumsumexp)
    }
}

/// The op tables of `docs/API.md` (Markdown), generated from the op table;
/// a test keeps the committed file current.
pub fn markdown_tables() -> String {
    let cell = |doc: &str| doc.replace('|', "\\|");
    let mut s = String::from("| unary op | dtypes | |\n| --- | --- | --- |\n");
    for &op in UnaryOp::ALL {
        let dtypes = match op.rule() {
            UnaryRule::Float => "float (integers and bool compute in f32)",
            UnaryRule::Keep => "every dtype but bool, in its own",
            UnaryRule::Logical => "any dtype; bool result",
        };
        s += &format!("| `{}` | {dtypes} | {} |\n", op.name(), cell(op.doc()));
    }
    s += "\n| binary op | dtypes | |\n| --- | --- | --- |\n";
    for &op in BinaryOp::ALL {
        let dtypes = match op.rule() {
            BinaryRule::Arith if op.accepts(DType::Bool) => "every dtype",
            BinaryRule::Arith => "every dtype but bool",
            BinaryRule::Float => "float (integers and bool compute in f32)",
            BinaryRule::Bitwise if op.accepts(DType::Bool) => "integers and bool",
            BinaryRule::Bitwise => "integers",
        };
        s += &format!("| `{}` | {dtypes} | {} |\n", op.name(), cell(op.doc()));
    }
    s += "\n| reduction | result dtype | |\n| --- | --- | --- |\n";
    for &op in ReduceOp::ALL {
        let dtype = match op.result_dtype(DType::I32) {
            DType::I64 if op.result_dtype(DType::F16) == DType::F16 => "the input's (integers and bool: i64)",
            DType::I64 => "i64",
            DType::I32 => "the input's",
            DType::Bool => "bool",
            _ => "float (integers and bool compute in f32)",
        };
        s += &format!("| `{}` | {dtype} | {} |\n", op.name(), cell(op.doc()));
    }
    s += "\n| comparison | dtypes | |\n| --- | --- | --- |\n";
    for &op in CmpOp::ALL {
        s += &format!("| `{}` | every dtype | {} |\n", op.name(), cell(op.doc()));
    }
    s
}
