//! The optimizer updates of one element (SGD with momentum, Adam, AdamW),
//! written as PyTorch's `torch.optim` single-tensor code computes them. One
//! definition, used by the CPU backend's loops and by the GPU kernels, so the
//! two agree by construction. Computed in f32 (f64 for f64 parameters); the
//! hyperparameters are converted to that type once per launch.

use crate::math;
use crate::params::{AdamParams, SgdParams, ADAM_DECOUPLED, ADAM_WEIGHT_DECAY};
use crate::params::{SGD_INIT_BUFFER, SGD_MOMENTUM, SGD_NESTEROV, SGD_WEIGHT_DECAY};
use core::ops::{Add, Div, Mul, Sub};

/// The compute type of an update: f32 or f64.
pub trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// From an f64 hyperparameter (one rounding).
    fn of(v: f64) -> Self;
    /// Correctly rounded square root.
    fn sqrt(self) -> Self;
    /// `|self| < 0.5`.
    fn below_half(self) -> bool;
}

impl Real for f32 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt_f32(self)
    }
    #[inline(always)]
    fn below_half(self) -> bool {
        self < 0.5 && self > -0.5
    }
}

impl Real for f64 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        math::sqrt_f64(self)
    }
    #[inline(always)]
    fn below_half(self) -> bool {
        self < 0.5 && self > -0.5
    }
}

/// `a + w (b - a)` as PyTorch's `lerp` computes it (from the far end when `w >= 0.5`).
#[inline(always)]
fn lerp<R: Real>(a: R, b: R, w: R, one: R) -> R {
    if w.below_half() {
        a + w * (b - a)
    } else {
        b - (b - a) * (one - w)
    }
}

/// SGD hyperparameters in the compute type.
#[derive(Clone, Copy, Debug)]
pub struct Sgd<R> {
    lr: R,
    momentum: R,
    one_minus_dampening: R,
    weight_decay: R,
    flags: u32,
}

impl<R: Real> Sgd<R> {
    /// Converts the launch's hyperparameters.
    #[inline(always)]
    pub fn new(h: &SgdParams) -> Self {
        Sgd {
            lr: R::of(h.lr),
            momentum: R::of(h.momentum),
            one_minus_dampening: R::of(1.0 - h.dampening),
            weight_decay: R::of(h.weight_decay),
            flags: h.flags,
        }
    }

    /// True when the step reads and writes a momentum buffer.
    #[inline(always)]
    pub fn uses_buffer(&self) -> bool {
        self.flags & SGD_MOMENTUM != 0
    }

    /// The new parameter and momentum buffer from parameter `p`, gradient `g`
    /// and buffer `buf` (ignored without momentum or on the first step).
    #[inline(always)]
    pub fn step(&self, p: R, g: R, buf: R) -> (R, R) {
        let mut d = g;
        if self.flags & SGD_WEIGHT_DECAY != 0 {
            d = d + self.weight_decay * p;
        }
        let mut b = buf;
        if self.flags & SGD_MOMENTUM != 0 {
            b = if self.flags & SGD_INIT_BUFFER != 0 {
                d
            } else {
                b * self.momentum + self.one_minus_dampening * d
            };
            d = if self.flags & SGD_NESTEROV != 0 {
                d + self.momentum * b
            } else {
                b
            };
        }
        (p - self.lr * d, b)
    }
}

/// Adam / AdamW hyperparameters in the compute type.
#[derive(Clone, Copy, Debug)]
pub struct Adam<R> {
    one: R,
    w1: R,
    beta2: R,
    one_minus_beta2: R,
    eps: R,
    weight_decay: R,
    decay: R,
    step_size: R,
    bc2_sqrt: R,
    flags: u32,
}

impl<R: Real> Adam<R> {
    /// Converts the launch's hyperparameters.
    #[inline(always)]
    pub fn new(h: &AdamParams) -> Self {
        Adam {
            one: R::of(1.0),
            w1: R::of(h.one_minus_beta1),
            beta2: R::of(h.beta2),
            one_minus_beta2: R::of(h.one_minus_beta2),
            eps: R::of(h.eps),
            weight_decay: R::of(h.weight_decay),
            decay: R::of(h.decay),
            step_size: R::of(h.step_size),
            bc2_sqrt: R::of(h.bias_correction2_sqrt),
            flags: h.flags,
        }
    }

    /// The new parameter, first and second moment from parameter `p`,
    /// gradient `g` and moments `m`, `v`.
    #[inline(always)]
    pub fn step(&self, p: R, g: R, m: R, v: R) -> (R, R, R) {
        let (mut p, mut g) = (p, g);
        if self.flags & ADAM_DECOUPLED != 0 {
            p = p * self.decay;
        } else if self.flags & ADAM_WEIGHT_DECAY != 0 {
            g = g + self.weight_decay * p;
        }
        let m = lerp(m, g, self.w1, self.one);
        let v = v * self.beta2 + self.one_minus_beta2 * g * g;
        let denom = v.sqrt() / self.bc2_sqrt + self.eps;
        (p - self.step_size * (m / denom), m, v)
    }
}
