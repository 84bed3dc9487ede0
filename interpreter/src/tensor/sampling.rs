//! Sampling from the seeded Philox generator, beyond `rand`/`randn`:
//! `bernoulli`, `normal` with tensor mean and std, `multinomial` (with or
//! without replacement, on the device), `randint_like`, and the in-place
//! fills `uniform_`, `normal_`, `exponential_` and `bernoulli_` (which, as
//! `torch.nn.init` does, write outside the autograd graph). Every draw
//! takes the generator's next stream, so a seed gives the same numbers on
//! every device. Also the gradient utilities of `torch.nn.utils`
//! (`clip_grad_norm_`, `clip_grad_value_`, `parameters_to_vector`,
//! `vector_to_parameters`).

use super::autograd::no_grad;
use super::{DType, Generator, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp};
use crate::core::Scalar;

impl Tensor {
    /// Uniform numbers in `[0, 1)` of this tensor's shape, in its float dtype.
    fn uniform_like(&self, gen: &mut Generator) -> Result<Tensor> {
        Tensor::rand(self.shape(), Some(self.dtype().to_float()), self.device(), gen)
    }

    /// Uniform `[0, 1)` draws of this tensor's shape, in f64.
    fn uniform_like_f64(&self, gen: &mut Generator) -> Result<Tensor> {
        Tensor::rand(self.shape(), Some(DType::F64), self.device(), gen)
    }

    /// Standard normal draws of this tensor's shape, in f64.
    fn randn_like_f64(&self, gen: &mut Generator) -> Result<Tensor> {
        Tensor::randn(self.shape(), Some(DType::F64), self.device(), gen)
    }

    /// The logical negation of a bool tensor.
    fn negated(&self) -> Result<Tensor> {
        self.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)
    }

    /// 1 with probability `p` (each element of this tensor), else 0, in
    /// this tensor's float dtype (`torch.bernoulli(p)`).
    pub fn bernoulli(&self, gen: &mut Generator) -> Result<Tensor> {
        let p = self.to_float()?;
        p.uniform_like(gen)?.compare(CmpOp::Lt, &p)?.to_dtype(p.dtype())
    }

    /// Poisson samples with the rates in this tensor (`torch.poisson`), in
    /// its float dtype. Rates below 10 by inverting the cumulative
    /// distribution (summed over its first 48 terms, past which the mass is
    /// below 1e-15); larger ones by Hörmann's transformed rejection (PTRS),
    /// in 16 rounds of fresh uniforms with no sync (each round accepts
    /// over 90 %; what is left after 16, with probability below 1e-16 an
    /// element, takes the rounded normal approximation). Both branches are
    /// elementwise work on uniform draws, so a seed gives the same samples
    /// on every device. A negative rate gives NaN; no gradient flows.
    pub fn poisson(&self, gen: &mut Generator) -> Result<Tensor> {
        let out_dtype = self.dtype().to_float();
        let lam = self.detach().to_dtype(DType::F64)?;
        let f = |v: f64| lam.constant(v);
        // small rates: count the k with F(k) < u
        let u = lam.uniform_like(gen)?;
        let mut p = lam.neg()?.exp()?;
        let mut cdf = p.clone();
        let mut small = cdf.compare(CmpOp::Lt, &u)?.to_dtype(DType::F64)?;
        for k in 1..48 {
            p = p.mul(&lam)?.div_scalar(k as f64)?;
            cdf = cdf.add(&p)?;
            small = small.add(&cdf.compare(CmpOp::Lt, &u)?.to_dtype(DType::F64)?)?;
        }
        // large rates: PTRS (the rate clamped to 10 where it is smaller, so the
        // constants stay finite; those elements take the small branch)
        let big = lam.maximum_scalar(10.0)?;
        let slam = big.sqrt()?;
        let loglam = big.log()?;
        let b = slam.mul_scalar(2.53)?.add_scalar(0.931)?;
        let a = b.mul_scalar(0.02483)?.add_scalar(-0.059)?;
        let inv_alpha = b
            .sub_scalar(3.4)?
            .reciprocal()?
            .mul_scalar(1.1328)?
            .add_scalar(1.1239)?;
        let vr = b
            .sub_scalar(2.0)?
            .reciprocal()?
            .mul_scalar(-3.6224)?
            .add_scalar(0.9277)?;
        let mut large = big.floor()?;
        // nothing accepted yet (NaN rates count as done: they stay NaN)
        let mut done = lam.compare(CmpOp::Ne, &lam)?;
        for _ in 0..16 {
            let uu = lam.uniform_like(gen)?.sub_scalar(0.5)?;
            let v = lam.uniform_like(gen)?;
            let us = uu.abs()?.neg()?.add_scalar(0.5)?;
            let k = a
                .mul_scalar(2.0)?
                .div(&us)?
                .add(&b)?
                .mul(&uu)?
                .add(&big)?
                .add_scalar(0.43)?
                .floor()?;
            let quick = us
                .compare_scalar(CmpOp::Ge, Scalar::Float(0.07), false)?
                .binary(BinaryOp::BitAnd, &v.compare(CmpOp::Le, &vr)?)?;
            let lhs = v
                .log()?
                .add(&inv_alpha.log()?)?
                .sub(&a.div(&us.mul(&us)?)?.add(&b)?.log()?)?;
            let rhs = big
                .neg()?
                .add(&k.mul(&loglam)?)?
                .sub(&k.add_scalar(1.0)?.lgamma()?)?;
            let reject = k.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?.binary(
                BinaryOp::BitOr,
                &us.compare_scalar(CmpOp::Lt, Scalar::Float(0.013), false)?
                    .binary(BinaryOp::BitAnd, &v.compare(CmpOp::Gt, &us)?)?,
            )?;
            let slow = reject
                .negated()?
                .binary(BinaryOp::BitAnd, &lhs.compare(CmpOp::Le, &rhs)?)?;
            let accept = quick.binary(BinaryOp::BitOr, &slow)?;
            let take = accept.binary(BinaryOp::BitAnd, &done.negated()?)?;
            large = Tensor::where_cond(&take, &k, &large)?;
            done = done.binary(BinaryOp::BitOr, &accept)?;
        }
        // the rounded normal approximation for whatever was never accepted
        let approx = lam
            .randn_like_f64(gen)?
            .mul(&slam)?
            .add(&big)?
            .round()?
            .maximum_scalar(0.0)?;
        let large = Tensor::where_cond(&done, &large, &approx)?;
        let out = Tensor::where_cond(
            &lam.compare_scalar(CmpOp::Lt, Scalar::Float(10.0), false)?,
            &small,
            &large,
        )?;
        let out = Tensor::where_cond(
            &lam.compare_scalar(CmpOp::Lt, Scalar::Float(0.0), false)?,
            &f(f64::NAN)?,
            &out,
        )?;
        out.to_dtype(out_dtype)
    }

    /// Normal samples with means `mean` and standard deviations `std`
    /// (broadcast together), `torch.normal(mean, std)`.
    pub fn normal(mean: &Tensor, std: &Tensor, gen: &mut Generator) -> Result<Tensor> {
        let (m, s) = super::pointwise::floats(mean, std)?;
        let shape = crate::core::shape::broadcast_shapes("normal", m.shape(), s.shape())?;
        let z = Tensor::randn(&shape, Some(m.dtype()), m.device(), gen)?;
        z.mul(&s)?.add(&m)
    }

    /// `num_samples` category indices per row of the non-negative weights
    /// `self` (`[n]` or `[m, n]`), i64: with replacement by inverting the
    /// cumulative distribution, without by the Gumbel top-k trick.
    pub fn multinomial(&self, num_samples: i64, replacement: bool, gen: &mut Generator) -> Result<Tensor> {
        const OP: &str = "multinomial";
        if !matches!(self.ndim(), 1 | 2) || !self.dtype().is_float() {
            return Err(Error::shape(
                OP,
                format!(
                    "expected float weights of shape [n] or [m, n], got {:?} {}",
                    self.shape(),
                    self.dtype().name()
                ),
            ));
        }
        let n = self.shape()[self.ndim() - 1];
        if num_samples <= 0 || (!replacement && num_samples as usize > n) {
            return Err(Error::invalid(
                OP,
                format!(
                    "cannot draw {num_samples} samples {} from {n} categories",
                    if replacement {
                        "with replacement"
                    } else {
                        "without replacement"
                    }
                ),
            ));
        }
        let w = if self.ndim() == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let w = w.to_dtype(DType::F64)?.detach();
        let rows = w.shape()[0];
        let out = if replacement {
            let cdf = w.cumsum(1, None)?;
            let total = cdf.narrow(1, n as i64 - 1, 1)?;
            let u = Tensor::rand(&[rows, num_samples as usize], Some(DType::F64), w.device(), gen)?
                .mul(&total)?;
            // the first category whose cumulative weight exceeds u (a binary search)
            cdf.searchsorted(&u, true)?.minimum_scalar(n as i64 - 1)?
        } else {
            // argmax of log w - log(-log u) is a draw; its top k a draw without replacement
            let u = Tensor::rand(w.shape(), Some(DType::F64), w.device(), gen)?;
            let gumbel = u.maximum_scalar(1e-300)?.log()?.neg()?.log()?.neg()?;
            let keys = w.log()?.add(&gumbel)?;
            if num_samples == 1 {
                // one draw: the argmax, a reduction instead of a selection
                keys.reduce(ReduceOp::ArgMax, Some(&[1]), true)?
            } else {
                keys.topk(num_samples, 1, true)?.swap_remove(1)
            }
        };
        if self.ndim() == 1 {
            out.squeeze(Some(&[0]))
        } else {
            Ok(out)
        }
    }

    /// Integers uniform in `[low, high)` of this tensor's shape and dtype
    /// (i64 for float tensors unless asked).
    pub fn randint_like(&self, low: i64, high: i64, gen: &mut Generator) -> Result<Tensor> {
        Tensor::randint(low, high, self.shape(), Some(self.dtype()), self.device(), gen)
    }

    /// Fills this tensor in place with `U(low, high)` samples; returns it.
    pub fn uniform_(&self, low: f64, high: f64, gen: &mut Generator) -> Result<Tensor> {
        let r = self.uniform_like(gen)?.mul_scalar(high - low)?.add_scalar(low)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with `N(mean, std²)` samples; returns it.
    pub fn normal_(&self, mean: f64, std: f64, gen: &mut Generator) -> Result<Tensor> {
        let r = Tensor::randn(self.shape(), Some(self.dtype().to_float()), self.device(), gen)?
            .mul_scalar(std)?
            .add_scalar(mean)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with exponential samples of rate `lambd`.
    pub fn exponential_(&self, lambd: f64, gen: &mut Generator) -> Result<Tensor> {
        if lambd <= 0.0 {
            return Err(Error::invalid(
                "exponential_",
                format!("lambd must be positive, got {lambd}"),
            ));
        }
        // -ln(1 - u) / λ, u in [0, 1)
        let r = self
            .uniform_like(gen)?
            .neg()?
            .add_scalar(1.0)?
            .log()?
            .neg()?
            .div_scalar(lambd)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with geometric samples: the number of
    /// Bernoulli(`p`) trials up to the first success (1, 2, ...).
    pub fn geometric_(&self, p: f64, gen: &mut Generator) -> Result<Tensor> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::invalid(
                "geometric_",
                format!("p must be in (0, 1), got {p}"),
            ));
        }
        // ceil(ln(1 - u) / ln(1 - p)), at least 1
        let r = self
            .uniform_like_f64(gen)?
            .neg()?
            .log1p()?
            .div_scalar((-p).ln_1p())?
            .ceil()?
            .maximum_scalar(1.0)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with Cauchy samples of location `median`
    /// and scale `sigma`.
    pub fn cauchy_(&self, median: f64, sigma: f64, gen: &mut Generator) -> Result<Tensor> {
        if sigma <= 0.0 {
            return Err(Error::invalid(
                "cauchy_",
                format!("sigma must be positive, got {sigma}"),
            ));
        }
        // median + sigma tan(π (u - 1/2))
        let r = self
            .uniform_like_f64(gen)?
            .sub_scalar(0.5)?
            .mul_scalar(std::f64::consts::PI)?
            .tan()?
            .mul_scalar(sigma)?
            .add_scalar(median)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with `exp(N(mean, std²))` samples.
    pub fn log_normal_(&self, mean: f64, std: f64, gen: &mut Generator) -> Result<Tensor> {
        if std <= 0.0 {
            return Err(Error::invalid(
                "log_normal_",
                format!("std must be positive, got {std}"),
            ));
        }
        let r = self
            .randn_like_f64(gen)?
            .mul_scalar(std)?
            .add_scalar(mean)?
            .exp()?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with integers uniform in `[low, high)`
    /// (`torch.Tensor.random_`); `high` `None`: up to 2^mantissa inclusive
    /// for floats (2^24 for f32, 2^53 for f64, 2^11 for f16, 2^8 for bf16),
    /// as PyTorch, and up to the type's maximum for integers.
    pub fn random_(&self, low: i64, high: Option<i64>, gen: &mut Generator) -> Result<Tensor> {
        let high = match high {
            Some(h) => h,
            None => match self.dtype() {
                DType::F64 => (1 << 53) + 1,
                DType::F32 => (1 << 24) + 1,
                DType::F16 => (1 << 11) + 1,
                DType::BF16 => (1 << 8) + 1,
                DType::Bool => 2,
                DType::U8 => 256,
                DType::I32 => i32::MAX as i64 + 1,
                _ => i64::MAX,
            },
        };
        if low >= high {
            return Err(Error::invalid(
                "random_",
                format!("expects from < to, got from {low} and to {high}"),
            ));
        }
        let r = Tensor::randint(low, high, self.shape(), Some(DType::I64), self.device(), gen)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }

    /// Fills this tensor in place with 1 (probability `p`) or 0.
    pub fn bernoulli_(&self, p: f64, gen: &mut Generator) -> Result<Tensor> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(
                "bernoulli_",
                format!("p must be in [0, 1], got {p}"),
            ));
        }
        let r = self
            .uniform_like(gen)?
            .compare_scalar(CmpOp::Lt, Scalar::Float(p), false)?;
        no_grad(|| self.copy_(&r))?;
        Ok(self.clone())
    }
}

/// `torch.nn.utils.clip_grad_norm_`: scales the gradients of `params` in
/// place so that their joint `norm_type`-norm is at most `max_norm`;
/// returns that norm as it was before (a 0-dim f32 tensor; parameters
/// without a gradient are skipped).
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Tensor> {
    let grads: Vec<Tensor> = params.iter().filter_map(|p| p.grad()).collect();
    if grads.is_empty() {
        let device = params.first().map_or(crate::core::Device::Cpu, |p| p.device());
        return Tensor::zeros(&[], Some(DType::F32), device);
    }
    let fused = super::multi_tensor::applies(&grads, norm_type);
    let total = if fused {
        no_grad(|| super::multi_tensor::grad_norm(&grads, norm_type))?
    } else {
        // f64 gradients keep their precision (as PyTorch's norms do); the
        // others accumulate in f32
        let norms = grads
            .iter()
            .map(|g| {
                let wide = if g.dtype() == DType::F64 {
                    DType::F64
                } else {
                    DType::F32
                };
                g.to_dtype(wide)?
                    .vector_norm(norm_type, &[], false)?
                    .reshape(&[1])
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&norms, 0)?.vector_norm(norm_type, &[], false)?
    };
    let coef = total
        .add_scalar(1e-6)?
        .binary_scalar(crate::core::op::BinaryOp::Div, Scalar::Float(max_norm), true)?
        .minimum_scalar(1.0)?;
    if fused {
        no_grad(|| super::multi_tensor::scale(&grads, &coef))?;
        return Ok(total);
    }
    no_grad(|| -> Result<()> {
        for g in &grads {
            g.binary_(crate::core::op::BinaryOp::Mul, &coef.to_dtype(g.dtype())?)?;
        }
        Ok(())
    })?;
    Ok(total)
}

/// `torch.nn.utils.clip_grad_value_`: clamps every gradient of `params` to
/// `[-clip_value, clip_value]` in place.
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    no_grad(|| -> Result<()> {
        for g in params.iter().filter_map(|p| p.grad()) {
            let c = g.clamp(Some(Scalar::Float(-clip_value)), Some(Scalar::Float(clip_value)))?;
            g.copy_(&c)?;
        }
        Ok(())
    })
}

/// `torch.nn.utils.parameters_to_vector`: the parameters flattened and
/// joined (differentiable).
pub fn parameters_to_vector(params: &[Tensor]) -> Result<Tensor> {
    let flat = params
        .iter()
        .map(|p| p.reshape(&[-1]))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat, 0)
}

/// `torch.nn.utils.vector_to_parameters`: copies consecutive slices of
/// `vec` into the parameters, in place.
pub fn vector_to_parameters(vec: &Tensor, params: &[Tensor]) -> Result<()> {
    let total: usize = params.iter().map(|p| p.numel()).sum();
    if vec.ndim() != 1 || vec.numel() != total {
        return Err(Error::shape(
            "vector_to_parameters",
            format!(
                "vec of shape {:?} must be 1-D with {total} elements (the parameters' total)",
                vec.shape()
            ),
        ));
    }
    no_grad(|| -> Result<()> {
        let mut at = 0;
        for p in params {
            let n = p.numel() as i64;
            let shape: Vec<i64> = p.shape().iter().map(|&d| d as i64).collect();
            p.copy_(&vec.narrow(0, at, n)?.reshape(&shape)?)?;
            at += n;
        }
        Ok(())
    })
}
