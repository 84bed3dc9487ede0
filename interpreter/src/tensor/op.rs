//! The op vocabulary shared by the front-end and every backend: each
//! elementwise, comparison and reduction op is declared once here, with its
//! script name and the dtype rules the front-end applies before dispatching.

use super::DType;

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `|x|`
    Abs,
    /// `-x`
    Neg,
    /// `e^x`
    Exp,
    /// natural log
    Log,
    /// base-2 log
    Log2,
    /// `ln(1 + x)`
    Log1p,
    /// `e^x - 1`
    Expm1,
    /// square root
    Sqrt,
    /// `1 / sqrt(x)`
    Rsqrt,
    /// sine
    Sin,
    /// cosine
    Cos,
    /// tangent
    Tan,
    /// hyperbolic tangent
    Tanh,
    /// logistic sigmoid
    Sigmoid,
    /// `max(x, 0)`
    Relu,
    /// exact GELU
    Gelu,
    /// `x * sigmoid(x)`
    Silu,
    /// error function
    Erf,
    /// round down
    Floor,
    /// round up
    Ceil,
    /// round half to even
    Round,
    /// -1, 0 or 1
    Sign,
    /// `x * x`
    Square,
    /// `1 / x`
    Reciprocal,
    /// logical not (bool result)
    LogicalNot,
}

impl UnaryOp {
    /// The op's script name.
    pub fn name(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "abs",
            Neg => "neg",
            Exp => "exp",
            Log => "log",
            Log2 => "log2",
            Log1p => "log1p",
            Expm1 => "expm1",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Relu => "relu",
            Gelu => "gelu",
            Silu => "silu",
            Erf => "erf",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Sign => "sign",
            Square => "square",
            Reciprocal => "reciprocal",
            LogicalNot => "logical_not",
        }
    }

    /// The op's one-line doc, as the script API shows it.
    pub fn doc(self) -> &'static str {
        use UnaryOp::*;
        match self {
            Abs => "absolute value |x|, elementwise",
            Neg => "negation -x, elementwise",
            Exp => "exponential e^x, elementwise",
            Log => "natural logarithm, elementwise",
            Log2 => "base-2 logarithm, elementwise",
            Log1p => "ln(1 + x), elementwise (accurate near 0)",
            Expm1 => "e^x - 1, elementwise (accurate near 0)",
            Sqrt => "square root, elementwise",
            Rsqrt => "reciprocal square root 1 / sqrt(x), elementwise",
            Sin => "sine, elementwise",
            Cos => "cosine, elementwise",
            Tan => "tangent, elementwise",
            Tanh => "hyperbolic tangent, elementwise",
            Sigmoid => "logistic sigmoid 1 / (1 + e^-x), elementwise",
            Relu => "rectified linear unit max(x, 0), elementwise",
            Gelu => "exact GELU x * Phi(x), elementwise",
            Silu => "SiLU (swish) x * sigmoid(x), elementwise",
            Erf => "error function, elementwise",
            Floor => "round down, elementwise",
            Ceil => "round up, elementwise",
            Round => "round half to even, elementwise",
            Sign => "sign: -1, 0 or 1, elementwise",
            Square => "x * x, elementwise",
            Reciprocal => "1 / x, elementwise",
            LogicalNot => "logical not, elementwise (bool result)",
        }
    }

    /// The dtype the op computes in and returns for an input of `dtype`, or
    /// `None` when the op does not apply to it (e.g. `neg` of a bool tensor).
    pub fn result_dtype(self, dtype: DType) -> Option<DType> {
        use UnaryOp::*;
        match self {
            LogicalNot => Some(DType::Bool),
            Abs | Neg | Relu | Sign | Square | Floor | Ceil | Round if dtype == DType::Bool => None,
            Abs | Neg | Relu | Sign | Square | Floor | Ceil | Round => Some(dtype),
            _ => Some(dtype.to_float()),
        }
    }
}

/// Elementwise ops of two operands (after broadcasting and promotion).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// true division `a / b`
    Div,
    /// remainder with the sign of the divisor (Python's `%`)
    Rem,
    /// `a ** b`
    Pow,
    /// elementwise maximum (NaN propagates)
    Maximum,
    /// elementwise minimum (NaN propagates)
    Minimum,
    /// bitwise and (logical for bool); integer and bool dtypes only
    BitAnd,
    /// bitwise or (logical for bool)
    BitOr,
    /// bitwise xor (logical for bool)
    BitXor,
}

impl BinaryOp {
    /// The op's script name.
    pub fn name(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            Rem => "remainder",
            Pow => "pow",
            Maximum => "maximum",
            Minimum => "minimum",
            BitAnd => "bitwise_and",
            BitOr => "bitwise_or",
            BitXor => "bitwise_xor",
        }
    }

    /// The op's one-line doc, as the script API shows it.
    pub fn doc(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Add => "a + b, elementwise with broadcasting",
            Sub => "a - b, elementwise with broadcasting",
            Mul => "a * b, elementwise with broadcasting",
            Div => "true division a / b, elementwise with broadcasting (float result)",
            Rem => "remainder with the sign of the divisor (Python's %), elementwise",
            Pow => "a ** b, elementwise with broadcasting",
            Maximum => "elementwise maximum of a and b (NaN propagates)",
            Minimum => "elementwise minimum of a and b (NaN propagates)",
            BitAnd => "bitwise and (logical for bool), integer and bool dtypes only",
            BitOr => "bitwise or (logical for bool), integer and bool dtypes only",
            BitXor => "bitwise xor (logical for bool), integer and bool dtypes only",
        }
    }

    /// True for the bitwise ops, which reject float operands.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor)
    }

    /// The dtype the op computes in, given the promoted operand dtype.
    pub fn compute_dtype(self, promoted: DType) -> DType {
        match self {
            BinaryOp::Div => promoted.to_float(),
            _ => promoted,
        }
    }
}

/// Comparisons; they compute in the promoted dtype and return bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The op's script name.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }

    /// The op's one-line doc, as the script API shows it.
    pub fn doc(self) -> &'static str {
        match self {
            CmpOp::Eq => "a == b, elementwise with broadcasting (bool tensor)",
            CmpOp::Ne => "a != b, elementwise with broadcasting (bool tensor)",
            CmpOp::Lt => "a < b, elementwise with broadcasting (bool tensor)",
            CmpOp::Le => "a <= b, elementwise with broadcasting (bool tensor)",
            CmpOp::Gt => "a > b, elementwise with broadcasting (bool tensor)",
            CmpOp::Ge => "a >= b, elementwise with broadcasting (bool tensor)",
        }
    }

    /// Applies the comparison to two ordered values.
    #[inline(always)]
    pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

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

    /// The op's one-line doc, as the script API shows it.
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
