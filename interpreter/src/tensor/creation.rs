//! Creating tensors: from host values, constant fills, ranges, identity
//! matrices and random draws (`randperm` included), plus the `*_like` forms.

use super::{DType, Device, Generator, HostValues, Scalar, Tensor};
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::shape::{check_alloc, check_alloc_on, numel};

impl Tensor {
    /// A tensor of `shape` from host values in row-major order, stored as `dtype`.
    pub fn from_host(values: &HostValues, shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        if values.len() != numel(shape) {
            return Err(Error::shape(
                "tensor",
                format!("{} values cannot fill shape {shape:?}", values.len()),
            ));
        }
        check_alloc("tensor", shape, dtype)?;
        if dtype.is_int() {
            for i in 0..values.len() {
                if let Some(v) = values.get(i) {
                    v.check_fits("tensor", dtype)?;
                }
            }
        }
        Tensor::from_storage("tensor", Storage::from_host(device, values, dtype)?, shape)
    }

    /// An f32 tensor of `shape` from a slice: [`Tensor::from_slice`] for `f32`.
    pub fn from_f32(values: &[f32], shape: &[usize], device: Device) -> Result<Tensor> {
        Tensor::from_slice(values, shape, device)
    }

    /// `shape` filled with `value`; the dtype defaults to the scalar's (f32, i64, bool).
    pub fn full(shape: &[usize], value: Scalar, dtype: Option<DType>, device: Device) -> Result<Tensor> {
        let dtype = dtype.unwrap_or(value.default_dtype());
        check_alloc_on("full", shape, dtype, device)?;
        value.check_fits("full", dtype)?;
        Tensor::from_storage("full", Storage::full(device, dtype, numel(shape), value)?, shape)
    }

    /// A 0-dim tensor holding `value` as `dtype`.
    pub fn scalar(value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::full(&[], value, Some(dtype), device)
    }

    /// Zeros of `shape` (f32 unless `dtype` says otherwise).
    pub fn zeros(shape: &[usize], dtype: Option<DType>, device: Device) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(0), Some(dtype.unwrap_or(DType::F32)), device)
    }

    /// Ones of `shape` (f32 unless `dtype` says otherwise).
    pub fn ones(shape: &[usize], dtype: Option<DType>, device: Device) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(1), Some(dtype.unwrap_or(DType::F32)), device)
    }

    /// A tensor whose values are unspecified (zeros on the CPU, uninitialised GPU memory).
    pub fn empty(shape: &[usize], dtype: Option<DType>, device: Device) -> Result<Tensor> {
        let dtype = dtype.unwrap_or(DType::F32);
        check_alloc_on("empty", shape, dtype, device)?;
        Tensor::from_storage("empty", Storage::uninit(device, dtype, numel(shape))?, shape)
    }

    /// Zeros with this tensor's shape, dtype and device.
    pub fn zeros_like(&self) -> Result<Tensor> {
        Tensor::zeros(self.shape(), Some(self.dtype()), self.device())
    }

    /// Ones with this tensor's shape, dtype and device.
    pub fn ones_like(&self) -> Result<Tensor> {
        Tensor::ones(self.shape(), Some(self.dtype()), self.device())
    }

    /// `value` with this tensor's shape, dtype and device.
    pub fn full_like(&self, value: Scalar) -> Result<Tensor> {
        Tensor::full(self.shape(), value, Some(self.dtype()), self.device())
    }

    /// `start, start+step, ...` below `end` (above, for a negative step). The dtype
    /// defaults to i64 when all three are integers, else f32.
    pub fn arange(
        start: Scalar,
        end: Scalar,
        step: Scalar,
        dtype: Option<DType>,
        device: Device,
    ) -> Result<Tensor> {
        let all_int = [start, end, step].iter().all(|s| !matches!(s, Scalar::Float(_)));
        let dtype = dtype.unwrap_or(if all_int { DType::I64 } else { DType::F32 });
        let (a, b, s) = (start.to_f64(), end.to_f64(), step.to_f64());
        if s == 0.0 || !s.is_finite() || !a.is_finite() || !b.is_finite() {
            return Err(Error::invalid(
                "arange",
                format!("step must be finite and non-zero, and bounds finite (start {a}, end {b}, step {s})"),
            ));
        }
        if (b - a) * s < 0.0 {
            return Err(Error::invalid(
                "arange",
                format!("upper bound {b} and lower bound {a} are inconsistent with step sign {s}"),
            ));
        }
        // the count in i128 (exact for any i64 bounds), or f64 for floats
        let n: i128 = if all_int {
            let (a, b, s) = (
                start.to_i64() as i128,
                end.to_i64() as i128,
                step.to_i64() as i128,
            );
            ((b - a) + s - s.signum()) / s
        } else {
            let n = ((b - a) / s).ceil();
            if !n.is_finite() || n >= 9.2e18 {
                i128::MAX
            } else {
                n as i128
            }
        };
        if n > i64::MAX as i128 {
            return Err(Error::invalid(
                "arange",
                format!(
                    "start {}, end {} and step {} make more than {} elements",
                    show(start),
                    show(end),
                    show(step),
                    i64::MAX
                ),
            ));
        }
        let n = n.max(0) as usize;
        if dtype.is_int() && n > 0 {
            // the first and last values must fit the dtype (exact for integer
            // arguments, whose last value may lie past i64)
            let last = if all_int {
                let v = start.to_i64() as i128 + (n as i128 - 1) * step.to_i64() as i128;
                i64::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int)
            } else {
                Scalar::Float(start.to_f64() + (n - 1) as f64 * step.to_f64())
            };
            for v in [start, last] {
                v.check_fits("arange", dtype)?;
            }
        }
        check_alloc_on("arange", &[n], dtype, device)?;
        Tensor::from_storage("arange", Storage::arange(device, dtype, start, step, n)?, &[n])
    }

    /// `n` evenly spaced values from `start` to `end` inclusive (f32 by default).
    pub fn linspace(start: f64, end: f64, n: i64, dtype: Option<DType>, device: Device) -> Result<Tensor> {
        if n < 0 {
            return Err(Error::invalid(
                "linspace",
                format!("number of steps must be non-negative, got {n}"),
            ));
        }
        let n = n as usize;
        check_alloc("linspace", &[n], dtype.unwrap_or(DType::F32))?;
        let step = if n > 1 {
            (end - start) / (n - 1) as f64
        } else {
            0.0
        };
        let v: Vec<f64> = (0..n)
            .map(|i| {
                if i < n / 2 || n == 1 {
                    start + i as f64 * step
                } else {
                    end - (n - 1 - i) as f64 * step
                }
            })
            .collect();
        Tensor::from_host(&HostValues::Float(v), &[n], dtype.unwrap_or(DType::F32), device)
    }

    /// The `n × m` identity matrix (f32 by default).
    pub fn eye(n: usize, m: usize, dtype: Option<DType>, device: Device) -> Result<Tensor> {
        check_alloc("eye", &[n, m], dtype.unwrap_or(DType::F32))?;
        let v: Vec<i64> = (0..n * m)
            .map(|i| (i / m.max(1) == i % m.max(1)) as i64)
            .collect();
        Tensor::from_host(&HostValues::Int(v), &[n, m], dtype.unwrap_or(DType::F32), device)
    }

    /// Uniform values in `[0, 1)` (f32 by default).
    pub fn rand(
        shape: &[usize],
        dtype: Option<DType>,
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        let dtype = float_dtype("rand", dtype)?;
        check_alloc_on("rand", shape, dtype, device)?;
        let (seed, stream) = gen.next_stream();
        let s = Storage::rand_uniform(device, dtype, numel(shape), seed, stream)?;
        Tensor::from_storage("rand", s, shape)
    }

    /// Uniform values in `[0, 1)` of `shape` taken through `view` from the
    /// draw `(seed, stream)`: pieces of a larger draw (attention's dropout).
    pub(crate) fn rand_view(
        shape: &[usize],
        dtype: DType,
        device: Device,
        draw: (u64, u64),
        view: kiln_kernels::params::RandView,
    ) -> Result<Tensor> {
        check_alloc_on("rand", shape, dtype, device)?;
        let s = Storage::rand_uniform_view(device, dtype, numel(shape), draw, view)?;
        Tensor::from_storage("rand", s, shape)
    }

    /// Standard normal values (f32 by default).
    pub fn randn(
        shape: &[usize],
        dtype: Option<DType>,
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        let dtype = float_dtype("randn", dtype)?;
        check_alloc_on("randn", shape, dtype, device)?;
        let (seed, stream) = gen.next_stream();
        let s = Storage::rand_normal(device, dtype, numel(shape), seed, stream)?;
        Tensor::from_storage("randn", s, shape)
    }

    /// Integers uniform in `[low, high)` (i64 by default).
    pub fn randint(
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: Option<DType>,
        device: Device,
        gen: &mut Generator,
    ) -> Result<Tensor> {
        if high <= low {
            return Err(Error::invalid(
                "randint",
                format!("expected low < high, got low={low}, high={high}"),
            ));
        }
        let (seed, stream) = gen.next_stream();
        let dtype = dtype.unwrap_or(DType::I64);
        check_alloc_on("randint", shape, dtype, device)?;
        let s = Storage::rand_int(device, dtype, numel(shape), low, high, seed, stream)?;
        Tensor::from_storage("randint", s, shape)
    }

    /// A random permutation of `0..n` (i64 by default; see
    /// [`super::random::permutation`]): identical on every device for one seed.
    pub fn randperm(n: i64, dtype: Option<DType>, device: Device, gen: &mut Generator) -> Result<Tensor> {
        let dtype = dtype.unwrap_or(DType::I64);
        // the largest n whose values 0..n all have an exact representation
        let limit: u64 = match dtype {
            DType::Bool => 2,
            DType::U8 => 1 << 8,
            DType::BF16 => (1 << 8) + 1,
            DType::F16 => (1 << 11) + 1,
            DType::F32 => (1 << 24) + 1,
            DType::I32 => 1 << 31,
            DType::F64 => (1 << 53) + 1,
            DType::I64 => u64::MAX,
        };
        if n < 0 {
            return Err(Error::invalid(
                "randperm",
                format!("n must be non-negative, got {n}"),
            ));
        }
        if n as u64 > limit {
            return Err(Error::UnsupportedDType {
                op: "randperm",
                dtype,
                hint: format!(" for n = {n} (its values cannot hold 0..{n} exactly; use i64)"),
            });
        }
        let n = n as usize;
        check_alloc("randperm", &[n], dtype)?;
        let (seed, stream) = gen.next_stream();
        let p = super::random::permutation(n, seed, stream);
        Tensor::from_host(&HostValues::Int(p), &[n], dtype, device)
    }
}

/// A scalar as a script wrote it (integers without a fraction).
fn show(v: Scalar) -> String {
    match v {
        Scalar::Float(f) => f.to_string(),
        other => other.to_i64().to_string(),
    }
}

fn float_dtype(op: &'static str, dtype: Option<DType>) -> Result<DType> {
    match dtype {
        None => Ok(DType::F32),
        Some(d) if d.is_float() => Ok(d),
        Some(d) => Err(Error::UnsupportedDType {
            op,
            dtype: d,
            hint: " (random floats need a float dtype; use randint for integers)".into(),
        }),
    }
}
