//! Window functions for spectral analysis (`torch.hann_window`,
//! `hamming_window`, `blackman_window`, `bartlett_window`,
//! `kaiser_window`): one-dimensional tensors computed in f64 on the host and
//! rounded once to the requested dtype. A periodic window of length N is
//! the symmetric window of length N + 1 without its last value, as in
//! PyTorch; lengths 0 and 1 give `[]` and `[1]`.

use super::{DType, Device, HostValues, Tensor};
use crate::core::error::{Error, Result};
use crate::core::shape::check_alloc;
use std::f64::consts::PI;

/// The shape of a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Window {
    /// `0.5 - 0.5 cos(2πn / (M - 1))`.
    Hann,
    /// `alpha - beta cos(2πn / (M - 1))` (PyTorch's defaults 0.54 and 0.46).
    Hamming {
        /// The constant term.
        alpha: f64,
        /// The cosine's weight.
        beta: f64,
    },
    /// `0.42 - 0.5 cos(2πn / (M - 1)) + 0.08 cos(4πn / (M - 1))`.
    Blackman,
    /// The triangle `1 - |2n / (M - 1) - 1|`.
    Bartlett,
    /// `I₀(beta √(1 - (2n / (M - 1) - 1)²)) / I₀(beta)` (PyTorch's default beta 12).
    Kaiser {
        /// The shape: 0 is rectangular, larger is narrower.
        beta: f64,
    },
}

impl Window {
    /// The op's script name.
    pub fn name(self) -> &'static str {
        match self {
            Window::Hann => "hann_window",
            Window::Hamming { .. } => "hamming_window",
            Window::Blackman => "blackman_window",
            Window::Bartlett => "bartlett_window",
            Window::Kaiser { .. } => "kaiser_window",
        }
    }

    /// The window's value at `n` of a symmetric window of `m > 1` points.
    fn at(self, n: f64, m: f64) -> f64 {
        let phase = 2.0 * PI * n / (m - 1.0);
        match self {
            Window::Hann => 0.5 - 0.5 * phase.cos(),
            Window::Hamming { alpha, beta } => alpha - beta * phase.cos(),
            Window::Blackman => 0.42 - 0.5 * phase.cos() + 0.08 * (2.0 * phase).cos(),
            Window::Bartlett => 1.0 - (2.0 * n / (m - 1.0) - 1.0).abs(),
            Window::Kaiser { beta } => {
                let r = 2.0 * n / (m - 1.0) - 1.0;
                let arg = beta * (1.0 - r * r).max(0.0).sqrt();
                kiln_kernels::special::bessel_i0(arg) / kiln_kernels::special::bessel_i0(beta)
            }
        }
    }
}

impl Tensor {
    /// The window `kind` of `length` points (`periodic`: for spectral
    /// analysis, as PyTorch's default), in `dtype` (f32 by default), which
    /// must be a float dtype.
    pub fn window(
        kind: Window,
        length: i64,
        periodic: bool,
        dtype: Option<DType>,
        device: Device,
    ) -> Result<Tensor> {
        let op = kind.name();
        let dtype = dtype.unwrap_or(DType::F32);
        if !dtype.is_float() {
            return Err(Error::invalid(
                op,
                format!("expected a floating point dtype, got {}", dtype.name()),
            ));
        }
        if length < 0 {
            return Err(Error::invalid(
                op,
                format!("window_length must be non-negative, got {length}"),
            ));
        }
        let n = length as usize;
        check_alloc(op, &[n], dtype)?;
        let values: Vec<f64> = match n {
            0 => Vec::new(),
            1 => vec![1.0],
            _ => {
                let m = if periodic { n + 1 } else { n } as f64;
                (0..n).map(|i| kind.at(i as f64, m)).collect()
            }
        };
        Tensor::from_host(&HostValues::Float(values), &[n], dtype, device)
    }
}
