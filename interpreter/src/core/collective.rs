//! The reductions of the collectives (`all_reduce`): shared by the process
//! group of `dist` and the NCCL calls of the CUDA backend.

/// The reduction of an `all_reduce`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Elementwise sum (logical or for bool).
    Sum,
    /// Sum divided by the world size (floating-point dtypes only).
    Mean,
    /// Elementwise maximum (NaN wins; logical or for bool).
    Max,
    /// Elementwise minimum (NaN wins; logical and for bool).
    Min,
}

impl ReduceOp {
    /// Parses `"sum"`, `"mean"` (also `"avg"`), `"max"`, `"min"`.
    pub fn parse(s: &str) -> Option<ReduceOp> {
        Some(match s {
            "sum" => ReduceOp::Sum,
            "mean" | "avg" => ReduceOp::Mean,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            _ => return None,
        })
    }

    /// The op's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}
