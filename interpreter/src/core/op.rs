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

/// Reductions over some dims (or all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// sum (ints and bool sum to i64)
    Sum,
    /// product (ints and bool to i64)
    Prod,
    /// arithmetic mean (ints to f32)
    Mean,
    /// maximum (NaN propagates)
    Max,
    /// minimum (NaN propagates)
    Min,
    /// index of the first maximum (i64)
    ArgMax,
    /// index of the first minimum (i64)
    ArgMin,
    /// variance with `correction` (PyTorch's default 1)
    Var {
        /// Bessel's correction: the divisor is `n - correction`.
        correction: u32,
    },
    /// standard deviation with `correction`
    Std {
        /// Bessel's correction: the divisor is `n - correction`.
        correction: u32,
    },
    /// true when every element is non-zero (bool)
    All,
    /// true when some element is non-zero (bool)
    Any,
}

impl ReduceOp {
    /// The op's script name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::ArgMax => "argmax",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::Var { .. } => "var",
            ReduceOp::Std { .. } => "std",
            ReduceOp::All => "all",
            ReduceOp::Any => "any",
        }
    }

    /// The op's one-line doc.
    pub fn doc(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum of all elements, or over dims (keepdim keeps them as size 1)",
            ReduceOp::Prod => "product of all elements, or over dims (keepdim keeps them as size 1)",
            ReduceOp::Mean => "mean of all elements, or over dims (keepdim keeps them as size 1)",
            ReduceOp::Max => "maximum of all elements, or over dim (keepdim keeps it as size 1)",
            ReduceOp::Min => "minimum of all elements, or over dim (keepdim keeps it as size 1)",
            ReduceOp::ArgMax => "index of the first maximum, overall (flat) or along dim",
            ReduceOp::ArgMin => "index of the first minimum, overall (flat) or along dim",
            ReduceOp::Var { .. } => "variance (correction 1), of all elements or over dims",
            ReduceOp::Std { .. } => "standard deviation (correction 1), of all elements or over dims",
            ReduceOp::All => "true when every element is non-zero, overall or over dims",
            ReduceOp::Any => "true when some element is non-zero, overall or over dims",
        }
    }

    /// The result dtype for an input of `dtype`.
    pub fn result_dtype(self, dtype: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Prod if !dtype.is_float() => DType::I64,
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Max | ReduceOp::Min => dtype,
            ReduceOp::Mean | ReduceOp::Var { .. } | ReduceOp::Std { .. } => dtype.to_float(),
            ReduceOp::ArgMax | ReduceOp::ArgMin => DType::I64,
            ReduceOp::All | ReduceOp::Any => DType::Bool,
        }
    }

    /// True when an empty reduction has no defined result (max, min, argmax, argmin).
    pub fn needs_elements(self) -> bool {
        matches!(
            self,
            ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin
        )
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
            BinaryRule::Bitwise => "integers and bool",
        };
        s += &format!("| `{}` | {dtypes} | {} |\n", op.name(), cell(op.doc()));
    }
    s += "\n| comparison | dtypes | |\n| --- | --- | --- |\n";
    for &op in CmpOp::ALL {
        s += &format!("| `{}` | every dtype | {} |\n", op.name(), cell(op.doc()));
    }
    s
}
