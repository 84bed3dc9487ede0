//! `torch.linalg.matrix_exp`: the exponential of square matrices (batched)
//! by scaling and squaring. The largest 1-norm among the matrices (read back
//! once) picks `s` so that `A / 2^s` has norm at most 1/2; its Taylor series
//! to degree 18 (Horner's scheme, one matmul a degree) is then accurate to
//! f64's precision, and squaring it `s` times gives `e^A`. Matmuls only,
//! so it runs on every backend (cuBLAS on the GPU) and differentiates
//! through them.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;

/// The Taylor degree: 0.5^19 / 19! is far below f64's epsilon.
const DEGREE: u32 = 18;

impl Tensor {
    /// `e^A` of each square matrix of `self` (`[*, n, n]`, float).
    pub fn matrix_exp(&self) -> Result<Tensor> {
        const OP: &str = "matrix_exp";
        let nd = self.ndim();
        if nd < 2 || self.shape()[nd - 1] != self.shape()[nd - 2] {
            return Err(Error::shape(
                OP,
                format!(
                    "expects square matrices (at least 2 dims), got shape {:?}",
                    self.shape()
                ),
            ));
        }
        if !self.dtype().is_float() {
            return Err(Error::invalid(
                OP,
                format!("expects a float tensor, got {}", self.dtype()),
            ));
        }
        let n = self.shape()[nd - 1];
        let mut eye_shape = vec![1usize; nd - 2];
        eye_shape.extend([n, n]);
        let eye = Tensor::eye(n, n, Some(self.dtype()), self.device())?
            .reshape(&eye_shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
        if self.numel() == 0 {
            return self.clone_data();
        }
        // the largest 1-norm (column sums of |A|), in f64
        let norm = self
            .detach()
            .to_dtype(DType::F64)?
            .abs()?
            .reduce(ReduceOp::Sum, Some(&[-2]), false)?
            .reduce(ReduceOp::Max, None, false)?
            .item()?
            .to_f64();
        if !norm.is_finite() {
            // NaN or inf in: NaN out, as the series would give
            return self.mul_scalar(f64::NAN);
        }
        let s = if norm > 0.5 {
            (norm / 0.5).log2().ceil() as i32
        } else {
            0
        };
        let a = self.mul_scalar(0.5f64.powi(s))?;
        // Σ a^k / k! by Horner: I + a/1 (I + a/2 (I + ... (I + a/DEGREE)))
        let mut e = eye.expand(&self.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())?;
        for k in (1..=DEGREE).rev() {
            e = eye.add(&a.matmul(&e)?.div_scalar(k as f64)?)?;
        }
        for _ in 0..s {
            e = e.matmul(&e)?;
        }
        Ok(e)
    }
}
