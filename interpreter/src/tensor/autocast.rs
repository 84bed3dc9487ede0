//! Automatic mixed precision, as `torch.autocast` on CUDA: while a
//! thread's autocast dtype is set (f16 or bf16), matrix products, linear
//! layers, convolutions and attention run in that dtype from f32 operands,
//! and the ops of PyTorch's CUDA float32 list run in f32 from f16/bf16
//! operands: softmax and log-softmax, the norms, the losses, `exp`, `log`
//! and their kin ([`widens_unary`]), `pow`, `sum`, `prod`, `cumsum`,
//! `cumprod`, `softplus`, `softmin`, `normalize`, `cdist`,
//! `cosine_similarity`. Every other op runs in its inputs' dtype, f64 is
//! never touched, and the casts are recorded, so f32 parameters get f32
//! gradients. Backward passes run with autocast off (their dtypes follow
//! the forward's).

use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::{ReduceOp, UnaryOp};
use crate::core::DType;
use std::cell::Cell;

thread_local! {
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The autocast dtype of this thread, `None` when autocast is off.
pub fn autocast_dtype() -> Option<DType> {
    AUTOCAST.with(|a| a.get())
}

/// Autocast set to a dtype (or off) until dropped; the previous state comes
/// back then, also on an early return or an error.
pub struct AutocastGuard {
    prev: Option<DType>,
}

impl AutocastGuard {
    /// Sets this thread's autocast dtype: f16 or bf16, or `None` for off.
    pub fn new(dtype: Option<DType>) -> Result<AutocastGuard> {
        if let Some(d) = dtype {
            if !matches!(d, DType::F16 | DType::BF16) {
                return Err(Error::invalid(
                    "autocast",
                    format!("the autocast dtype must be f16 or bf16, got {d}"),
                ));
            }
        }
        Ok(AutocastGuard {
            prev: AUTOCAST.with(|a| a.replace(dtype)),
        })
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|a| a.set(self.prev));
    }
}

/// `t` in the autocast dtype when autocast is on and `t` is a float tensor
/// other than f64 (the operands of ops that run in low precision, as
/// PyTorch casts them); `t` itself otherwise.
pub fn lower(t: &Tensor) -> Result<Tensor> {
    match autocast_dtype() {
        Some(d) if matches!(t.dtype(), DType::F32 | DType::F16 | DType::BF16) && t.dtype() != d => {
            t.to_dtype(d)
        }
        _ => Ok(t.clone()),
    }
}

/// `t` in f32 when autocast is on and `t` is f16 or bf16 (the operands of
/// ops that need f32's range and precision); `t` itself otherwise.
pub fn widen(t: &Tensor) -> Result<Tensor> {
    match autocast_dtype() {
        Some(_) if matches!(t.dtype(), DType::F16 | DType::BF16) => t.to_dtype(DType::F32),
        _ => Ok(t.clone()),
    }
}

/// True while autocast is on (ops check before casting anything).
pub fn enabled() -> bool {
    autocast_dtype().is_some()
}

/// True when autocast is on and `t` is f16 or bf16: an op of the f32 list
/// widens it ([`widen`]) before running.
pub fn widens(t: &Tensor) -> bool {
    enabled() && matches!(t.dtype(), DType::F16 | DType::BF16)
}

/// The elementwise ops of PyTorch's CUDA autocast float32 list.
pub fn widens_unary(op: UnaryOp) -> bool {
    use UnaryOp::*;
    matches!(
        op,
        Exp | Expm1
            | Log
            | Log2
            | Log10
            | Log1p
            | Reciprocal
            | Rsqrt
            | Acos
            | Asin
            | Cosh
            | Sinh
            | Tan
            | Erfinv
    )
}

/// The reductions of that list (`sum`, `prod`).
pub fn widens_reduce(op: ReduceOp) -> bool {
    matches!(op, ReduceOp::Sum | ReduceOp::Prod)
}
