//! Per-element functions whose exact formula matters (GELU, erf, sigmoid,
//! SiLU). One definition, used by the CPU backend and the GPU kernels alike.

/// The error function, single precision.
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    libm::erff(x)
}

/// The error function, double precision.
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// Exact GELU, `x * Φ(x) = 0.5 x (1 + erf(x / √2))`, as PyTorch's default.
#[inline]
pub fn gelu_f32(x: f32) -> f32 {
    0.5 * x * (1.0 + erf_f32(x * core::f32::consts::FRAC_1_SQRT_2))
}

/// Exact GELU in double precision.
#[inline]
pub fn gelu_f64(x: f64) -> f64 {
    0.5 * x * (1.0 + erf_f64(x * core::f64::consts::FRAC_1_SQRT_2))
}

/// The logistic function `1 / (1 + e^-x)`.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-x))
}

/// The logistic function in double precision.
#[inline]
pub fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + libm::exp(-x))
}

/// SiLU (swish), `x * sigmoid(x)`.
#[inline]
pub fn silu_f32(x: f32) -> f32 {
    x * sigmoid_f32(x)
}

/// SiLU in double precision.
#[inline]
pub fn silu_f64(x: f64) -> f64 {
    x * sigmoid_f64(x)
}
