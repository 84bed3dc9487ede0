//! Normalisation over the batch and channels of `[N, C, *]` inputs:
//! `batch_norm` (batch statistics while training, with the running
//! statistics updated in place by `momentum`; the running ones otherwise),
//! `group_norm` and `instance_norm` (through the fused `layer_norm` over
//! each group or instance), each with an optional per-channel affine.
//! Half-precision inputs are normalised in f32, as PyTorch does. On CUDA,
//! batch norm while training is one cuDNN call each way (`cudnn.rs`).

use crate::core::error::{Error, Result};
use crate::core::op::ReduceOp;
use crate::tensor::autograd::no_grad;
use crate::tensor::{DType, Tensor};

/// Running statistics a normalisation reads or updates.
pub struct RunningStats<'a> {
    /// Per-channel mean `[C]`.
    pub mean: Option<&'a Tensor>,
    /// Per-channel variance `[C]` (unbiased when updated).
    pub var: Option<&'a Tensor>,
}

/// The shape `[1, C, 1, ..]` a per-channel tensor broadcasts as.
fn channel_view(t: &Tensor, ndim: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    shape[1] = -1;
    t.reshape(&shape)
}

fn check_channels(op: &'static str, x: &Tensor, what: &str, t: Option<&Tensor>) -> Result<()> {
    let Some(t) = t else { return Ok(()) };
    x.same_device(op, t)?;
    if t.shape() != [x.shape()[1]] {
        return Err(Error::shape(
            op,
            format!(
                "{what} of shape {:?} must be [{}] (input {:?})",
                t.shape(),
                x.shape()[1],
                x.shape()
            ),
        ));
    }
    Ok(())
}

/// The input, running statistics and affine parameters of a normalisation.
fn check_stats(
    op: &'static str,
    x: &Tensor,
    running: &RunningStats<'_>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<()> {
    check_input(op, x)?;
    for (what, t) in [
        ("running_mean", running.mean),
        ("running_var", running.var),
        ("weight", weight),
        ("bias", bias),
    ] {
        check_channels(op, x, what, t)?;
    }
    Ok(())
}

fn check_input(op: &'static str, x: &Tensor) -> Result<()> {
    if x.ndim() < 2 || !x.dtype().is_float() {
        return Err(Error::shape(
            op,
            format!(
                "expects a floating-point input of at least 2 dims [N, C, *], got {} of shape {:?}",
                x.dtype(),
                x.shape()
            ),
        ));
    }
    Ok(())
}

/// The dtype statistics are computed in.
fn compute_dtype(x: &Tensor) -> DType {
    match x.dtype() {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    }
}

/// `y · weight + bias` per channel.
fn affine(y: Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<Tensor> {
    let nd = y.ndim();
    let y = match weight {
        Some(w) => y.mul(&channel_view(&w.to_dtype(y.dtype())?, nd)?)?,
        None => y,
    };
    match bias {
        Some(b) => y.add(&channel_view(&b.to_dtype(y.dtype())?, nd)?),
        None => Ok(y),
    }
}

/// `running = (1 - momentum) · running + momentum · value`, in place, outside autograd.
fn update_running(running: &Tensor, value: &Tensor, momentum: f64) -> Result<()> {
    no_grad(|| {
        let v = value.detach().to_dtype(running.dtype())?;
        running.copy_(
            &running
                .mul_scalar(1.0 - momentum)?
                .add(&v.mul_scalar(momentum)?)?,
        )
    })
}

impl Tensor {
    /// `F.batch_norm(input, running_mean, running_var, weight, bias,
    /// training, momentum, eps)`.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_norm(
        &self,
        running: RunningStats<'_>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        const OP: &str = "batch_norm";
        check_stats(OP, self, &running, weight, bias)?;
        let count = self.numel() / self.shape()[1].max(1);
        if training && count <= 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "expected more than 1 value per channel when training, got input of shape {:?}",
                    self.shape()
                ),
            ));
        }
        if training && self.device().is_cuda() {
            if let Some(y) = super::cudnn::batch_norm_train(self, &running, weight, bias, momentum, eps)? {
                return Ok(y);
            }
        }
        let x = self.to_dtype(compute_dtype(self))?;
        let nd = x.ndim() as i64;
        let dims: Vec<i64> = std::iter::once(0).chain(2..nd).collect();
        let y = if training {
            let mean = x.reduce(ReduceOp::Mean, Some(&dims), true)?;
            let var = x.reduce(ReduceOp::Var { correction: 0 }, Some(&dims), true)?;
            if let Some(rm) = running.mean {
                update_running(rm, &mean.flatten(0, -1)?, momentum)?;
            }
            if let Some(rv) = running.var {
                let unbiased = var
                    .flatten(0, -1)?
                    .mul_scalar(count as f64 / (count - 1) as f64)?;
                update_running(rv, &unbiased, momentum)?;
            }
            x.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?
        } else {
            let (Some(rm), Some(rv)) = (running.mean, running.var) else {
                return Err(Error::invalid(
                    OP,
                    "running_mean and running_var are needed when not training",
                ));
            };
            let (rm, rv) = (rm.to_dtype(x.dtype())?, rv.to_dtype(x.dtype())?);
            let (rm, rv) = (channel_view(&rm, x.ndim())?, channel_view(&rv, x.ndim())?);
            x.sub(&rm)?.mul(&rv.add_scalar(eps)?.rsqrt()?)?
        };
        affine(y, weight, bias)?.to_dtype(self.dtype())
    }

    /// `F.group_norm(input, num_groups, weight, bias, eps)`: each group of
    /// `C / num_groups` channels normalised over its channels and positions.
    pub fn group_norm(
        &self,
        groups: i64,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        const OP: &str = "group_norm";
        check_input(OP, self)?;
        let c = self.shape()[1] as i64;
        if groups < 1 || c % groups != 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "{c} channels (input {:?}) are not divisible into {groups} groups",
                    self.shape()
                ),
            ));
        }
        check_channels(OP, self, "weight", weight)?;
        check_channels(OP, self, "bias", bias)?;
        let y = normalize_rows(self, &[self.shape()[0] as i64, groups, -1], eps)?;
        affine(y, weight, bias)?.to_dtype(self.dtype())
    }

    /// `F.instance_norm(input, running_mean, running_var, weight, bias,
    /// use_input_stats, momentum, eps)`: each channel of each sample
    /// normalised over its positions.
    #[allow(clippy::too_many_arguments)]
    pub fn instance_norm(
        &self,
        running: RunningStats<'_>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        use_input_stats: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        const OP: &str = "instance_norm";
        check_stats(OP, self, &running, weight, bias)?;
        if !use_input_stats {
            return self.batch_norm(running, weight, bias, false, momentum, eps);
        }
        let (nb, c) = (self.shape()[0] as i64, self.shape()[1] as i64);
        let positions = self.numel() / (nb * c).max(1) as usize;
        if positions <= 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "expected more than 1 spatial element when training, got input of shape {:?}",
                    self.shape()
                ),
            ));
        }
        if running.mean.is_some() || running.var.is_some() {
            let rows = self
                .to_dtype(compute_dtype(self))?
                .detach()
                .reshape(&[nb, c, -1])?;
            if let Some(rm) = running.mean {
                let mean = rows.reduce(ReduceOp::Mean, Some(&[2]), false)?.reduce(
                    ReduceOp::Mean,
                    Some(&[0]),
                    false,
                )?;
                update_running(rm, &mean, momentum)?;
            }
            if let Some(rv) = running.var {
                let var = rows.reduce(ReduceOp::Var { correction: 1 }, Some(&[2]), false)?;
                update_running(rv, &var.reduce(ReduceOp::Mean, Some(&[0]), false)?, momentum)?;
            }
        }
        let y = normalize_rows(self, &[nb, c, -1], eps)?;
        affine(y, weight, bias)?.to_dtype(self.dtype())
    }
}

/// `x` viewed as `rows` (last dim the normalised one), normalised by the
/// fused layer norm, back in `x`'s shape and the compute dtype.
fn normalize_rows(x: &Tensor, rows: &[i64], eps: f64) -> Result<Tensor> {
    let r = x.to_dtype(compute_dtype(x))?.reshape(rows)?;
    let last = *r.shape().last().unwrap_or(&0);
    let y = r.layer_norm(&[last], None, None, eps)?;
    let shape: Vec<i64> = x.shape().iter().map(|&v| v as i64).collect();
    y.reshape(&shape)
}

impl Tensor {
    /// `F.local_response_norm(input, size, alpha, beta, k)`: each value
    /// divided by `(k + alpha · mean of x² over size neighbouring
    /// channels)^beta` (zero padding counted, as PyTorch).
    pub fn local_response_norm(&self, size: i64, alpha: f64, beta: f64, k: f64) -> Result<Tensor> {
        const OP: &str = "local_response_norm";
        check_input(OP, self)?;
        if self.ndim() < 3 || size < 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "expects an input of at least 3 dims and size >= 1, got shape {:?} and size {size}",
                    self.shape()
                ),
            ));
        }
        let (nb, c) = (self.shape()[0] as i64, self.shape()[1] as i64);
        let sq = self.mul(self)?.reshape(&[nb, 1, c, -1])?;
        let padded = sq.pad(&[0, 0, size / 2, (size - 1) / 2], "constant", 0.0)?;
        let opts = super::pool::PoolOptions {
            kernel: vec![size, 1],
            stride: vec![1],
            padding: vec![0],
            dilation: vec![1],
            ceil_mode: false,
        };
        let shape: Vec<i64> = self.shape().iter().map(|&v| v as i64).collect();
        let div = padded.avg_pool(2, &opts, true, None)?.reshape(&shape)?;
        self.div(&div.mul_scalar(alpha)?.add_scalar(k)?.pow_scalar(beta)?)
    }
}
