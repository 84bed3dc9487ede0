//! Neural-network ops with their own kernels: softmax, log-softmax and layer
//! normalisation (integer inputs compute in f32).

use super::autograd::{self, functions, Saved};
use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::shape::normalize_dim;

impl Tensor {
    /// Softmax along `dim`.
    pub fn softmax(&self, dim: i64) -> Result<Tensor> {
        self.softmax_impl(dim, false)
    }

    /// Log-softmax along `dim`.
    pub fn log_softmax(&self, dim: i64) -> Result<Tensor> {
        self.softmax_impl(dim, true)
    }

    fn softmax_impl(&self, dim: i64, log: bool) -> Result<Tensor> {
        if super::autocast::enabled() {
            let x = super::autocast::widen(self)?;
            let _off = super::autocast::AutocastGuard::new(None)?;
            return x.softmax_impl(dim, log);
        }
        if !autograd::needs_grad(&[self]) {
            return self.softmax_forward(dim, log);
        }
        let y = autograd::forward(|| self.softmax_forward(dim, log))?;
        let name = if log { "log_softmax" } else { "softmax" };
        let ys = Saved::new(&y);
        Ok(autograd::record(name, &[self], y, move |g, _| {
            Ok(vec![Some(functions::softmax(ys.get(name)?, dim, log, g)?)])
        }))
    }

    fn softmax_forward(&self, dim: i64, log: bool) -> Result<Tensor> {
        let op = if log { "log_softmax" } else { "softmax" };
        if self.ndim() == 0 {
            return self.unsqueeze(0)?.softmax_forward(0, log)?.reshape(&[]);
        }
        let d = normalize_dim(op, dim, self.shape())?;
        let x = self.to_dtype(self.dtype().to_float())?;
        let out = x.storage().softmax(x.layout(), d, log)?;
        Tensor::from_storage(op, out, self.shape())
    }

    /// Layer normalisation over the trailing dims `normalized_shape`, with
    /// optional elementwise `weight` and `bias` of that shape.
    pub fn layer_norm(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        if super::autocast::enabled() {
            let widen = super::autocast::widen;
            let (x, w, b) = (
                widen(self)?,
                weight.map(widen).transpose()?,
                bias.map(widen).transpose()?,
            );
            let _off = super::autocast::AutocastGuard::new(None)?;
            return x.layer_norm(normalized_shape, w.as_ref(), b.as_ref(), eps);
        }
        let mut inputs = vec![self];
        inputs.extend(weight);
        inputs.extend(bias);
        if !autograd::needs_grad(&inputs) {
            return self.layer_norm_impl(normalized_shape, weight, bias, eps);
        }
        let y = autograd::forward(|| self.layer_norm_impl(normalized_shape, weight, bias, eps))?;
        let (x, w) = (Saved::new(self), weight.map(Saved::new));
        let bias_shape = bias.map(|b| b.shape().to_vec());
        let k = normalized_shape.len();
        Ok(autograd::record("layer_norm", &inputs, y, move |g, needs| {
            let w = w.as_ref().map(|w| w.get("layer_norm")).transpose()?;
            functions::layer_norm(x.get("layer_norm")?, k, w, bias_shape.as_deref(), eps, g, needs)
        }))
    }

    /// Layer norm's backward in one fused pass over the input (`self`) and
    /// the output's gradient `g`, over the trailing `k` dims: the input's
    /// gradient and, with `want_gxh`, `g · x̂` (summed over the leading dims
    /// it is the weight's gradient). In `g`'s dtype; not itself recorded.
    pub(crate) fn layer_norm_backward(
        &self,
        g: &Tensor,
        k: usize,
        weight: Option<&Tensor>,
        eps: f64,
        want_gxh: bool,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let dtype = g.dtype();
        let shape = self.shape();
        self.same_device("layer_norm", g)?;
        let x = self.to_dtype(dtype)?.dense()?;
        let g = g.dense()?;
        let w = weight.map(|w| w.to_dtype(dtype)?.contiguous()).transpose()?;
        let norm = crate::core::shape::numel(&shape[shape.len() - k..]);
        let (gx, gxh) = {
            let (xs, gs) = (x.storage(), g.storage());
            let ws = w.as_ref().map(|t| t.storage());
            xs.layer_norm_backward(&gs, ws.as_deref(), norm, eps, want_gxh)?
        };
        let gxh = gxh
            .map(|s| Tensor::from_storage("layer_norm", s, shape))
            .transpose()?;
        Ok((Tensor::from_storage("layer_norm", gx, shape)?, gxh))
    }

    pub(crate) fn layer_norm_impl(
        &self,
        normalized_shape: &[usize],
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        eps: f64,
    ) -> Result<Tensor> {
        let k = normalized_shape.len();
        let shape = self.shape();
        if k == 0 || k > shape.len() || shape[shape.len() - k..] != *normalized_shape {
            return Err(Error::shape(
                "layer_norm",
                format!("normalized_shape {normalized_shape:?} does not match the trailing dims of input shape {shape:?}"),
            ));
        }
        let dtype = self.dtype().to_float();
        let prep = |t: Option<&Tensor>, what: &str| -> Result<Option<Tensor>> {
            match t {
                None => Ok(None),
                Some(t) if t.shape() == normalized_shape => {
                    self.same_device("layer_norm", t)?;
                    Ok(Some(t.to_dtype(dtype)?.contiguous()?))
                }
                Some(t) => Err(Error::shape(
                    "layer_norm",
                    format!(
                        "{what} of shape {:?} does not match normalized_shape {normalized_shape:?}",
                        t.shape()
                    ),
                )),
            }
        };
        let (w, b) = (prep(weight, "weight")?, prep(bias, "bias")?);
        let x = self.to_dtype(dtype)?.dense()?;
        let norm = crate::core::shape::numel(normalized_shape);
        let out = {
            let xs = x.storage();
            let ws = w.as_ref().map(|t| t.storage());
            let bs = b.as_ref().map(|t| t.storage());
            xs.layer_norm(norm, ws.as_deref(), bs.as_deref(), eps)?
        };
        Tensor::from_storage("layer_norm", out, shape)
    }
}
