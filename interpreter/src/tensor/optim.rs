//! Fused optimizer steps, in place: SGD with momentum, Adam and AdamW with
//! PyTorch's formulas (`torch.optim.SGD`, `Adam`, `AdamW`, single-tensor
//! form; no amsgrad). Each step is one backend op per parameter (one kernel
//! launch on CUDA, one loop on the CPU), not a chain of elementwise ops.
//!
//! Parameters are f32, f64, f16 or bf16 and dense (contiguous or channels
//! last); the gradient has the parameter's shape, dtype and strides; optimizer state (momentum buffer,
//! moments) is kept in [`state_dtype`] (f32 for half parameters). Steps run
//! with grad mode off; every tensor written is bumped in version, so a saved
//! tensor of a pending backward notices the update.

use super::autograd;
use super::locks::{lock_ordered, Access};
use super::{DType, Device, Tensor};
use crate::backend::{AdamItem, SgdItem, Storage};
use crate::core::error::{Error, Result};
use kiln_kernels::params::{AdamParams, SgdParams};
use kiln_kernels::params::{SGD_INIT_BUFFER, SGD_MOMENTUM, SGD_NESTEROV, SGD_WEIGHT_DECAY};

/// True when `t`'s elements fill one run of its storage in a memory order
/// the steps take: contiguous, or channels last.
pub(super) fn dense(t: &Tensor) -> bool {
    t.is_contiguous() || super::elementwise::channels_last_perm(t).is_some()
}

/// The dtype of optimizer state for parameters of `param`: f64 for f64, else f32.
pub fn state_dtype(param: DType) -> DType {
    if param == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Hyperparameters of [`Tensor::sgd_step_`] (PyTorch's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor (0: plain SGD, no buffer).
    pub momentum: f64,
    /// Dampening of the momentum.
    pub dampening: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum (needs momentum and zero dampening).
    pub nesterov: bool,
    /// The first step: the buffer is set to the update instead of decayed into
    /// (PyTorch's `momentum_buffer is None`).
    pub init_buffer: bool,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            init_buffer: false,
        }
    }
}

/// Hyperparameters of [`Tensor::adam_step_`] (PyTorch's Adam defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate.
    pub lr: f64,
    /// Decay rates of the first and second moments.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f64,
    /// L2 penalty (Adam) or decoupled weight decay (AdamW).
    pub weight_decay: f64,
    /// AdamW: decay the parameter by `1 - lr * weight_decay` instead of adding
    /// `weight_decay * param` to the gradient.
    pub decoupled: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
        }
    }
}

fn check_hyper(op: &'static str, what: &str, v: f64, ok: bool) -> Result<()> {
    if ok && v.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(op, format!("invalid {what}: {v}")))
    }
}

/// Checks that `param` can be stepped with `grad` and state `states` (name,
/// tensor): dtypes, shapes, devices, density, and no storage shared.
fn check_operands(op: &'static str, param: &Tensor, grad: &Tensor, states: &[(&str, &Tensor)]) -> Result<()> {
    let dtype = param.dtype();
    if !dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op,
            dtype,
            hint: " (parameters must be floating point)".into(),
        });
    }
    if !param.is_leaf() {
        return Err(Error::invalid(
            op,
            "the parameter is the result of a recorded op (part of an autograd graph); step leaf tensors only",
        ));
    }
    if !dense(param) {
        return Err(Error::invalid(
            op,
            format!(
                "the parameter of shape {:?} is neither contiguous nor channels last; optimizer steps update dense tensors only (call contiguous() on the parameter before training)",
                param.shape()
            ),
        ));
    }
    // the step runs over memory: every operand in the parameter's order
    let same_order = |what: &str, t: &Tensor| -> Result<()> {
        if t.layout().strides() == param.layout().strides() && dense(t) {
            Ok(())
        } else {
            Err(Error::invalid(
                op,
                format!(
                    "the {what} has strides {:?} but the parameter {:?}; both must be dense in one memory order",
                    t.layout().strides(),
                    param.layout().strides()
                ),
            ))
        }
    };
    let mut all = vec![("parameter", param), ("gradient", grad)];
    all.extend(states.iter().copied());
    for &(what, t) in &all[1..] {
        if t.shape() != param.shape() {
            return Err(Error::shape(
                op,
                format!(
                    "the {what} has shape {:?} but the parameter has shape {:?}",
                    t.shape(),
                    param.shape()
                ),
            ));
        }
        param.same_device(op, t)?;
        let want = if what == "gradient" {
            dtype
        } else {
            state_dtype(dtype)
        };
        if t.dtype() != want {
            return Err(Error::invalid(
                op,
                format!(
                    "the {what} has dtype {} but a {dtype} parameter needs {want}",
                    t.dtype()
                ),
            ));
        }
        same_order(what, t)?;
        if what != "gradient" && t.requires_grad() {
            return Err(Error::invalid(op, format!("the {what} must not require grad")));
        }
    }
    for (i, &(a, ta)) in all.iter().enumerate() {
        for &(b, tb) in &all[i + 1..] {
            if ta.shares_storage(tb) {
                return Err(Error::invalid(
                    op,
                    format!("the {a} and the {b} share storage; each must be its own tensor"),
                ));
            }
        }
    }
    Ok(())
}

/// The checked hyperparameters of an SGD step.
fn sgd_params(op: &'static str, o: &SgdOptions) -> Result<SgdParams> {
    check_hyper(op, "learning rate", o.lr, o.lr >= 0.0)?;
    check_hyper(op, "momentum value", o.momentum, o.momentum >= 0.0)?;
    check_hyper(op, "dampening value", o.dampening, true)?;
    check_hyper(op, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
    if o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0) {
        return Err(Error::invalid(
            op,
            "Nesterov momentum requires a momentum and zero dampening",
        ));
    }
    let mut flags = 0;
    if o.weight_decay != 0.0 {
        flags |= SGD_WEIGHT_DECAY;
    }
    if o.momentum != 0.0 {
        flags |= SGD_MOMENTUM;
        if o.nesterov {
            flags |= SGD_NESTEROV;
        }
        if o.init_buffer {
            flags |= SGD_INIT_BUFFER;
        }
    }
    Ok(SgdParams {
        lr: o.lr,
        momentum: o.momentum,
        dampening: o.dampening,
        weight_decay: o.weight_decay,
        flags,
        step_at: 0,
    })
}

/// The momentum buffer an SGD step uses: `buf` with momentum (an error
/// without one), none without momentum.
fn sgd_buffer<'a>(op: &'static str, o: &SgdOptions, buf: Option<&'a Tensor>) -> Result<Option<&'a Tensor>> {
    if o.momentum == 0.0 {
        return Ok(None);
    }
    buf.map(Some).ok_or_else(|| {
        Error::invalid(
            op,
            format!(
                "momentum {} needs a momentum buffer (zeros in the state dtype: p.optimizer_state())",
                o.momentum
            ),
        )
    })
}

/// One SGD step in place over every parameter of `params`, with its
/// gradient and (with momentum) buffer at the same index: the same update
/// as [`Tensor::sgd_step_`] on each, in one launch per 24 CUDA parameters
/// of a dtype. Every operand is checked before anything is updated.
///
/// With a step `count` (a one-element i64 tensor on the parameters' device,
/// counted from 1) the first step is decided by its value instead of
/// `o.init_buffer`; on the GPU the kernels read it there, so a step
/// recorded in a CUDA graph stays right when replayed.
pub fn sgd_step_multi_(
    params: &[Tensor],
    grads: &[Tensor],
    bufs: &[Option<Tensor>],
    o: &SgdOptions,
    count: Option<&Tensor>,
) -> Result<()> {
    const OP: &str = "sgd_step_multi_";
    let n = params.len();
    if grads.len() != n || (o.momentum != 0.0 && bufs.len() != n) {
        return Err(Error::invalid(
            OP,
            format!(
                "needs one gradient (and with momentum one buffer) per parameter: {n} parameters, {} gradients, {} buffers",
                grads.len(),
                bufs.len()
            ),
        ));
    }
    let (o, count) = match count {
        None => (*o, None),
        Some(t) => match step_count(OP, params, StepCount::Tensor(t))? {
            Counted::Host(step) => (
                SgdOptions {
                    init_buffer: step == 1,
                    ..*o
                },
                None,
            ),
            Counted::Device(c) => (*o, Some(c)),
        },
    };
    let o = &o;
    let h = sgd_params(OP, o)?;
    let mut reqs = Vec::with_capacity(3 * n);
    let mut used = Vec::with_capacity(n);
    for i in 0..n {
        let buf = sgd_buffer(OP, o, bufs.get(i).and_then(|b| b.as_ref()))?;
        let states: Vec<(&str, &Tensor)> = buf.iter().map(|b| ("momentum buffer", *b)).collect();
        check_operands(OP, &params[i], &grads[i], &states)?;
        reqs.extend([(&params[i], Access::Write), (&grads[i], Access::Read)]);
        reqs.extend(buf.map(|b| (b, Access::Write)));
        used.push(buf);
    }
    autograd::no_grad(|| {
        let mut locks = lock_ordered(OP, &reqs)?;
        let mut rest = &mut locks[..];
        let mut items = Vec::with_capacity(n);
        for (i, buf) in used.iter().enumerate() {
            let take = if buf.is_some() { 3 } else { 2 };
            let (mine, tail) = rest.split_at_mut(take);
            rest = tail;
            let (pg, b) = mine.split_at_mut(2);
            let [p, g] = pg else {
                return Err(Error::invalid(OP, "internal: two locks per parameter expected"));
            };
            let buf = match (b.first_mut(), buf) {
                (Some(l), Some(t)) => Some((l.get_mut(OP)?, t.layout().offset())),
                _ => None,
            };
            items.push(SgdItem {
                p: (p.get_mut(OP)?, params[i].layout().offset()),
                g: (g.get(), grads[i].layout().offset()),
                buf,
                n: params[i].numel(),
            });
        }
        let storage = count.as_ref().map(|c| c.storage());
        let count = storage
            .as_deref()
            .zip(count.as_ref())
            .map(|(s, c)| (s, c.layout().offset()));
        Storage::sgd_step_multi(&mut items, &h, count)
    })
}

/// The step count of a multi-tensor step (counted from 1).
#[derive(Clone, Copy, Debug)]
pub enum StepCount<'a> {
    /// A number the host knows.
    Host(i64),
    /// A one-element integer tensor on the parameters' device: read on the
    /// host for CPU parameters, by the kernels on the GPU (so that a step
    /// recorded in a CUDA graph counts on when it is replayed).
    Tensor(&'a Tensor),
}

/// A step count resolved for the backend.
enum Counted {
    Host(i64),
    /// A one-element i64 tensor on the GPU.
    Device(Tensor),
}

/// Checks `step` against the parameters' device and resolves it.
fn step_count(op: &'static str, params: &[Tensor], step: StepCount<'_>) -> Result<Counted> {
    let t = match step {
        StepCount::Host(s) => return Ok(Counted::Host(s)),
        StepCount::Tensor(t) => t,
    };
    if t.numel() != 1 || !t.dtype().is_int() {
        return Err(Error::invalid(
            op,
            format!(
                "the step count must be a one-element integer tensor, got {:?} {}",
                t.shape(),
                t.dtype()
            ),
        ));
    }
    if let Some(p) = params.iter().find(|p| p.device() != t.device()) {
        return Err(Error::invalid(
            op,
            format!(
                "the step count is on {} and a parameter on {}",
                t.device(),
                p.device()
            ),
        ));
    }
    match t.device() {
        Device::Cpu => Ok(Counted::Host(t.item()?.to_i64())),
        _ => Ok(Counted::Device(if t.dtype() == DType::I64 {
            t.clone()
        } else {
            t.to_dtype(DType::I64)?
        })),
    }
}

/// The checked hyperparameters of Adam's `step`-th update.
fn adam_params(op: &'static str, o: &AdamOptions, step: i64) -> Result<AdamParams> {
    let (b1, b2) = o.betas;
    check_hyper(op, "learning rate", o.lr, o.lr >= 0.0)?;
    check_hyper(op, "epsilon value", o.eps, o.eps >= 0.0)?;
    check_hyper(op, "beta parameter at index 0", b1, (0.0..1.0).contains(&b1))?;
    check_hyper(op, "beta parameter at index 1", b2, (0.0..1.0).contains(&b2))?;
    check_hyper(op, "weight_decay value", o.weight_decay, o.weight_decay >= 0.0)?;
    if step < 1 {
        return Err(Error::invalid(
            op,
            format!("the step count starts at 1 (bias correction), got {step}"),
        ));
    }
    Ok(AdamParams::new(
        o.lr,
        o.betas,
        o.eps,
        o.weight_decay,
        step as u64,
        o.decoupled,
    ))
}

/// One Adam (or AdamW) step in place over every parameter of `params`,
/// with its gradient and moments at the same index: the same update as
/// [`Tensor::adam_step_`] on each, in one launch per 24 CUDA parameters of
/// a dtype (PyTorch's `fused=True`). Every operand is checked before
/// anything is updated.
pub fn adam_step_multi_(
    params: &[Tensor],
    grads: &[Tensor],
    m: &[Tensor],
    v: &[Tensor],
    step: StepCount<'_>,
    o: &AdamOptions,
) -> Result<()> {
    const OP: &str = "adam_step_multi_";
    let n = params.len();
    if grads.len() != n || m.len() != n || v.len() != n {
        return Err(Error::invalid(
            OP,
            format!(
                "needs one gradient and two moments per parameter: {n} parameters, {} gradients, {} and {} moments",
                grads.len(),
                m.len(),
                v.len()
            ),
        ));
    }
    let (h, count) = match step_count(OP, params, step)? {
        Counted::Host(step) => (adam_params(OP, o, step)?, None),
        // the hyperparameters are checked at step 1; the kernels take the count
        Counted::Device(c) => (adam_params(OP, o, 1)?, Some(c)),
    };
    let mut reqs = Vec::with_capacity(4 * n);
    for i in 0..n {
        check_operands(
            OP,
            &params[i],
            &grads[i],
            &[("first moment", &m[i]), ("second moment", &v[i])],
        )?;
        reqs.extend([
            (&params[i], Access::Write),
            (&grads[i], Access::Read),
            (&m[i], Access::Write),
            (&v[i], Access::Write),
        ]);
    }
    autograd::no_grad(|| {
        let mut locks = lock_ordered(OP, &reqs)?;
        let mut items = Vec::with_capacity(n);
        for (i, chunk) in locks.chunks_mut(4).enumerate() {
            let [p, g, ms, vs] = chunk else {
                return Err(Error::invalid(OP, "internal: four locks per parameter expected"));
            };
            items.push(AdamItem {
                p: (p.get_mut(OP)?, params[i].layout().offset()),
                g: (g.get(), grads[i].layout().offset()),
                m: (ms.get_mut(OP)?, m[i].layout().offset()),
                v: (vs.get_mut(OP)?, v[i].layout().offset()),
                n: params[i].numel(),
            });
        }
        let storage = count.as_ref().map(|c| c.storage());
        let count = storage
            .as_deref()
            .zip(count.as_ref())
            .map(|(s, c)| (s, c.layout().offset()));
        Storage::adam_step_multi(&mut items, &h, count)
    })
}

impl Tensor {
    /// Zeros in the optimizer-state dtype for this parameter, on its device.
    pub fn optimizer_state(&self) -> Result<Tensor> {
        let z = Tensor::zeros(self.shape(), Some(state_dtype(self.dtype())), self.device())?;
        // a channels-last parameter's state is channels last too
        match super::elementwise::channels_last_perm(self) {
            Some(p) => z.dense_in_order(&p.iter().map(|&d| d as usize).collect::<Vec<_>>()),
            None => Ok(z),
        }
    }

    /// One SGD step in place: `buf` is the momentum buffer (needed when
    /// `o.momentum != 0`, in [`state_dtype`]).
    pub fn sgd_step_(&self, grad: &Tensor, buf: Option<&Tensor>, o: &SgdOptions) -> Result<()> {
        const OP: &str = "sgd_step_";
        let h = sgd_params(OP, o)?;
        let buf = sgd_buffer(OP, o, buf)?;
        let states: Vec<(&str, &Tensor)> = buf.iter().map(|b| ("momentum buffer", *b)).collect();
        check_operands(OP, self, grad, &states)?;
        autograd::no_grad(|| {
            let n = self.numel();
            match buf {
                Some(b) => {
                    let reqs = [(self, Access::Write), (grad, Access::Read), (b, Access::Write)];
                    let mut locks = lock_ordered(OP, &reqs)?;
                    let [p, g, bs] = &mut locks[..] else {
                        return Err(Error::invalid(OP, "internal: three locks expected"));
                    };
                    let go = (g.get(), grad.layout().offset());
                    let buf = Some((bs.get_mut(OP)?, b.layout().offset()));
                    p.get_mut(OP)?.sgd_step(self.layout().offset(), go, buf, n, &h)
                }
                None => {
                    let mut locks = lock_ordered(OP, &[(self, Access::Write), (grad, Access::Read)])?;
                    let [p, g] = &mut locks[..] else {
                        return Err(Error::invalid(OP, "internal: two locks expected"));
                    };
                    let go = (g.get(), grad.layout().offset());
                    p.get_mut(OP)?.sgd_step(self.layout().offset(), go, None, n, &h)
                }
            }
        })
    }

    /// One Adam (or AdamW, `o.decoupled`) step in place, the `step`-th (from 1):
    /// `m` and `v` are the first and second moments, in [`state_dtype`].
    pub fn adam_step_(
        &self,
        grad: &Tensor,
        m: &Tensor,
        v: &Tensor,
        step: i64,
        o: &AdamOptions,
    ) -> Result<()> {
        const OP: &str = "adam_step_";
        let h = adam_params(OP, o, step)?;
        check_operands(OP, self, grad, &[("first moment", m), ("second moment", v)])?;
        autograd::no_grad(|| {
            let reqs = [
                (self, Access::Write),
                (grad, Access::Read),
                (m, Access::Write),
                (v, Access::Write),
            ];
            let mut locks = lock_ordered(OP, &reqs)?;
            let [p, g, ms, vs] = &mut locks[..] else {
                return Err(Error::invalid(OP, "internal: four locks expected"));
            };
            p.get_mut(OP)?.adam_step(
                self.layout().offset(),
                (g.get(), grad.layout().offset()),
                (ms.get_mut(OP)?, m.layout().offset()),
                (vs.get_mut(OP)?, v.layout().offset()),
                self.numel(),
                &h,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{Device, HostValues};

    fn t(v: &[f64], dtype: DType) -> Tensor {
        Tensor::from_host(&HostValues::Float(v.to_vec()), &[v.len()], dtype, Device::Cpu).unwrap()
    }

    fn values(t: &Tensor) -> Vec<f64> {
        match t.to_host().unwrap() {
            HostValues::Float(v) => v,
            other => panic!("not floats: {other:?}"),
        }
    }

    const P0: [f64; 5] = [0.5, -1.25, 2.0, 0.0, -0.75];
    const GRADS: [[f64; 5]; 3] = [
        [0.1, -0.2, 0.3, 1.5, -0.05],
        [-0.4, 0.25, 0.0, 0.7, 0.9],
        [0.33, -0.6, 0.12, -1.1, 0.2],
    ];

    /// torch.optim.Adam / AdamW written out in f64, step by step.
    fn adam_reference(o: &AdamOptions) -> Vec<f64> {
        let (b1, b2) = o.betas;
        let mut p = P0.to_vec();
        let (mut m, mut v) = (vec![0.0; 5], vec![0.0; 5]);
        for (s, g) in GRADS.iter().enumerate() {
            let step = (s + 1) as f64;
            for i in 0..5 {
                let mut gi = g[i];
                if o.decoupled {
                    p[i] *= 1.0 - o.lr * o.weight_decay;
                } else {
                    gi += o.weight_decay * p[i];
                }
                m[i] = b1 * m[i] + (1.0 - b1) * gi;
                v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                let mhat = m[i] / (1.0 - b1.powf(step));
                let vhat = v[i] / (1.0 - b2.powf(step));
                p[i] -= o.lr * mhat / (vhat.sqrt() + o.eps);
            }
        }
        p
    }

    #[test]
    fn adam_and_adamw_match_pytorch_formulas_over_three_steps() {
        for decoupled in [false, true] {
            let o = AdamOptions {
                lr: 0.01,
                betas: (0.8, 0.95),
                eps: 1e-6,
                weight_decay: 0.1,
                decoupled,
            };
            let want = adam_reference(&o);
            for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-6), (DType::BF16, 1e-2)] {
                let p = t(&P0, dtype);
                let (m, v) = (p.optimizer_state().unwrap(), p.optimizer_state().unwrap());
                for (s, g) in GRADS.iter().enumerate() {
                    p.adam_step_(&t(g, dtype), &m, &v, s as i64 + 1, &o).unwrap();
                }
                for (a, b) in values(&p).iter().zip(&want) {
                    assert!(
                        (a - b).abs() <= tol * b.abs().max(1.0),
                        "{dtype} decoupled={decoupled}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn sgd_momentum_nesterov_and_decay_match_pytorch_formulas() {
        for nesterov in [false, true] {
            let o = SgdOptions {
                lr: 0.1,
                momentum: 0.9,
                dampening: if nesterov { 0.0 } else { 0.25 },
                weight_decay: 0.01,
                nesterov,
                init_buffer: false,
            };
            let mut p = P0.to_vec();
            let mut buf = [0.0; 5];
            for (s, g) in GRADS.iter().enumerate() {
                for i in 0..5 {
                    let d = g[i] + o.weight_decay * p[i];
                    buf[i] = if s == 0 {
                        d
                    } else {
                        o.momentum * buf[i] + (1.0 - o.dampening) * d
                    };
                    let d = if nesterov { d + o.momentum * buf[i] } else { buf[i] };
                    p[i] -= o.lr * d;
                }
            }
            for dtype in [DType::F64, DType::F32, DType::F16] {
                let param = t(&P0, dtype);
                let b = param.optimizer_state().unwrap();
                for (s, g) in GRADS.iter().enumerate() {
                    let o = SgdOptions {
                        init_buffer: s == 0,
                        ..o
                    };
                    param.sgd_step_(&t(g, dtype), Some(&b), &o).unwrap();
                }
                let tol = if dtype == DType::F16 { 2e-3 } else { 1e-6 };
                for (a, w) in values(&param).iter().zip(&p) {
                    assert!((a - w).abs() <= tol * w.abs().max(1.0), "{dtype}: {a} vs {w}");
                }
                assert_eq!(b.dtype(), state_dtype(dtype));
            }
        }
        // plain SGD needs no buffer
        let p = t(&P0, DType::F64);
        p.sgd_step_(
            &t(&GRADS[0], DType::F64),
            None,
            &SgdOptions {
                lr: 0.5,
                ..Default::default()
            },
        )
        .unwrap();
        let want: Vec<f64> = P0.iter().zip(&GRADS[0]).map(|(p, g)| p - 0.5 * g).collect();
        assert_eq!(values(&p), want);
    }

    #[test]
    fn bad_operands_are_errors() {
        let p = t(&P0, DType::F32);
        let g = t(&GRADS[0], DType::F32);
        let (m, v) = (p.optimizer_state().unwrap(), p.optimizer_state().unwrap());
        let o = AdamOptions::default();
        let err = |r: Result<()>| r.unwrap_err().to_string();
        assert!(err(p.adam_step_(&g, &m, &m, 1, &o)).contains("share storage"));
        assert!(err(p.adam_step_(&p, &m, &v, 1, &o)).contains("share storage"));
        assert!(err(p.adam_step_(&g.narrow(0, 0, 4).unwrap(), &m, &v, 1, &o)).contains("has shape [4]"));
        assert!(err(p.adam_step_(&g.to_dtype(DType::F64).unwrap(), &m, &v, 1, &o)).contains("dtype f64"));
        assert!(err(p.adam_step_(&g, &m, &v, 0, &o)).contains("starts at 1"));
        let wide = Tensor::zeros(&[5, 2], None, Device::Cpu).unwrap();
        let strided = wide.select(1, 0).unwrap();
        assert!(err(strided.adam_step_(&g, &m, &v, 1, &o)).contains("neither contiguous nor channels last"));
        let bad = AdamOptions {
            betas: (1.0, 0.999),
            ..o
        };
        assert!(err(p.adam_step_(&g, &m, &v, 1, &bad)).contains("beta parameter at index 0"));
        let sgd = SgdOptions {
            momentum: 0.9,
            ..Default::default()
        };
        assert!(err(p.sgd_step_(&g, None, &sgd)).contains("needs a momentum buffer"));
        let nest = SgdOptions {
            nesterov: true,
            ..Default::default()
        };
        assert!(err(p.sgd_step_(&g, None, &nest)).contains("Nesterov"));
        assert!(err(t(&P0, DType::F64).sgd_step_(&g, None, &SgdOptions::default())).contains("dtype f32"));
    }

    #[test]
    fn the_multi_tensor_step_equals_a_step_per_parameter() {
        let o = AdamOptions {
            lr: 0.01,
            weight_decay: 0.1,
            decoupled: true,
            ..Default::default()
        };
        let make = |dtype: DType, n: usize, k: f64| {
            let v: Vec<f64> = (0..n).map(|i| ((i as f64 + k) * 0.37).sin()).collect();
            t(&v, dtype)
        };
        let shapes = [
            (DType::F32, 5),
            (DType::BF16, 3),
            (DType::F32, 0),
            (DType::F64, 7),
        ];
        let run = |multi: bool| -> Vec<Vec<f64>> {
            let params: Vec<Tensor> = shapes.iter().map(|&(d, n)| make(d, n, 1.0)).collect();
            let (m, v): (Vec<Tensor>, Vec<Tensor>) = params
                .iter()
                .map(|p| (p.optimizer_state().unwrap(), p.optimizer_state().unwrap()))
                .unzip();
            for step in 1..=3 {
                let grads: Vec<Tensor> = shapes
                    .iter()
                    .map(|&(d, n)| make(d, n, step as f64 * 5.0))
                    .collect();
                if multi {
                    // the count as a tensor: read on the host for CPU parameters
                    let count = Tensor::full(
                        &[1],
                        crate::core::Scalar::Int(step),
                        Some(DType::I64),
                        Device::Cpu,
                    )
                    .unwrap();
                    adam_step_multi_(&params, &grads, &m, &v, StepCount::Tensor(&count), &o).unwrap();
                } else {
                    for i in 0..params.len() {
                        params[i].adam_step_(&grads[i], &m[i], &v[i], step, &o).unwrap();
                    }
                }
            }
            params.iter().chain(&m).chain(&v).map(values).collect()
        };
        assert_eq!(run(true), run(false));
    }

    #[test]
    fn multi_tensor_steps_check_every_operand_first() {
        let o = AdamOptions::default();
        let p = [t(&P0, DType::F32), t(&P0, DType::F32)];
        let g = [t(&P0, DType::F32), t(&P0[..4], DType::F32)];
        let s = |p: &Tensor| p.optimizer_state().unwrap();
        let (m, v) = ([s(&p[0]), s(&p[1])], [s(&p[0]), s(&p[1])]);
        let err = adam_step_multi_(&p, &g, &m, &v, StepCount::Host(1), &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains("has shape [4]"), "{err}");
        // nothing was updated, not even the first parameter
        assert_eq!(values(&p[0]), P0.to_vec());
        let err = adam_step_multi_(&p, &g[..1], &m, &v, StepCount::Host(1), &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 parameters, 1 gradients"), "{err}");
        let shared = [p[0].clone(), p[0].clone()];
        let g2 = [t(&P0, DType::F32), t(&P0, DType::F32)];
        let err = adam_step_multi_(&shared, &g2, &m, &v, StepCount::Host(1), &o)
            .unwrap_err()
            .to_string();
        assert!(err.contains("share memory"), "{err}");
    }

    #[test]
    fn the_multi_tensor_sgd_step_equals_a_step_per_parameter() {
        let make = |dtype: DType, n: usize, k: f64| {
            let v: Vec<f64> = (0..n).map(|i| ((i as f64 + k) * 0.61).cos()).collect();
            t(&v, dtype)
        };
        let shapes = [(DType::F32, 6), (DType::F16, 4), (DType::F32, 0), (DType::F64, 9)];
        for (momentum, nesterov) in [(0.0, false), (0.9, false), (0.8, true)] {
            let run = |multi: bool| -> Vec<Vec<f64>> {
                let params: Vec<Tensor> = shapes.iter().map(|&(d, n)| make(d, n, 2.0)).collect();
                let bufs: Vec<Option<Tensor>> = params
                    .iter()
                    .map(|p| Some(p.optimizer_state().unwrap()))
                    .collect();
                for step in 0..3 {
                    let o = SgdOptions {
                        lr: 0.05,
                        momentum,
                        dampening: 0.0,
                        weight_decay: 0.01,
                        nesterov,
                        init_buffer: step == 0,
                    };
                    let grads: Vec<Tensor> = shapes
                        .iter()
                        .map(|&(d, n)| make(d, n, step as f64 * 3.0))
                        .collect();
                    if multi {
                        // the first step decided by a count tensor instead of init_buffer
                        let count = Tensor::full(
                            &[1],
                            crate::core::Scalar::Int(step + 1),
                            Some(DType::I64),
                            Device::Cpu,
                        )
                        .unwrap();
                        let o = SgdOptions {
                            init_buffer: false,
                            ..o
                        };
                        sgd_step_multi_(&params, &grads, &bufs, &o, Some(&count)).unwrap();
                    } else {
                        for i in 0..params.len() {
                            params[i].sgd_step_(&grads[i], bufs[i].as_ref(), &o).unwrap();
                        }
                    }
                }
                params.iter().chain(bufs.iter().flatten()).map(values).collect()
            };
            assert_eq!(run(true), run(false), "momentum {momentum}, nesterov {nesterov}");
        }
        // momentum without a buffer is an error before any update
        let p = [t(&P0, DType::F32)];
        let o = SgdOptions {
            momentum: 0.9,
            ..Default::default()
        };
        let err = sgd_step_multi_(&p, &[t(&P0, DType::F32)], &[None], &o, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs a momentum buffer"), "{err}");
        assert_eq!(values(&p[0]), P0.to_vec());
    }
}
