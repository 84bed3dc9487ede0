//! The primitive per-element functions whose exact formula or instruction
//! matters (correctly rounded `sqrt`, the GPU's fast `exp`, `erf`, `pow`).
//! One definition, used by the CPU backend and the GPU kernels alike; the
//! op table's formulas ([`crate::ops`]) are written over them through
//! [`crate::real::Real`].

/// Square root, correctly rounded (`sqrt.rn` on the GPU).
#[inline(always)]
pub fn sqrt_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe { core::arch::asm!("sqrt.rn.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sqrtf(x)
    }
}

/// Square root in double precision, correctly rounded.
#[inline(always)]
pub fn sqrt_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: a pure arithmetic instruction.
        unsafe { core::arch::asm!("sqrt.rn.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::sqrt(x)
    }
}

/// `e^x` in single precision: libm on the host; on the GPU the hardware
/// `ex2.approx` on `x·log2(e)` (a few ulp; flushes subnormal results to 0).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y = x * core::f32::consts::LOG2_E;
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {r}, {y};", r = out(reg32) r, y = in(reg32) y, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::expf(x)
    }
}

/// The error function, single precision: libm on the host; on the GPU
/// Abramowitz–Stegun 7.1.26 (absolute error below 1.5e-7) over the fast exp
/// and the hardware reciprocal.
#[inline]
pub fn erf_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let a = if x < 0.0 { -x } else { x };
        if a < 0.5 {
            // Maclaurin series: exact at 0 and odd, as erf is
            let x2 = x * x;
            let p = 1.128_379_2
                + x2 * (-0.376_126_4
                    + x2 * (0.112_837_92
                        + x2 * (-0.026_866_17 + x2 * (0.005_223_977 - x2 * 0.000_854_830_4))));
            return x * p;
        }
        if a > 4.0 {
            // erf(4) rounds to 1 in f32
            return if x < 0.0 { -1.0 } else { 1.0 };
        }
        // 1 / d through the hardware reciprocal and one Newton step (within an
        // ulp or two: far below the formula's own error, at a fraction of the
        // instructions of an IEEE division)
        let d = 1.0 + 0.327_591_1 * a;
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe { core::arch::asm!("rcp.approx.ftz.f32 {r}, {d};", r = out(reg32) r, d = in(reg32) d) };
        let t = r * (2.0 - d * r);
        let poly =
            ((((1.061_405_4 * t - 1.453_152_1) * t + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6) * t;
        let y = 1.0 - poly * exp_f32(-a * a);
        if x < 0.0 {
            -y
        } else {
            y
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::erff(x)
    }
}

/// The error function, double precision.
#[inline]
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// `x ** y` through `exp(y ln|x|)` in double precision, with IEEE's special
/// cases (negative bases need integer exponents). Exact enough for f32 and
/// within ~1e-13 relative for f64.
#[inline]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    if y == 0.0 || x == 1.0 {
        return 1.0;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let y_int = libm::floor(y) == y;
    if x == 0.0 {
        return if y > 0.0 { 0.0 } else { f64::INFINITY };
    }
    let mag = libm::exp(y * libm::log(libm::fabs(x)));
    if x < 0.0 {
        if !y_int {
            return f64::NAN;
        }
        let odd = libm::fmod(libm::fabs(y), 2.0) == 1.0;
        return if odd { -mag } else { mag };
    }
    mag
}

/// `x ** y` in single precision (computed in double, rounded once).
#[inline]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    pow_f64(x as f64, y as f64) as f32
}

/// `2^x` in single precision: libm on the host; on the GPU the hardware
/// `ex2.approx` (a few ulp; flushes subnormal results to 0), as `exp`.
#[inline(always)]
pub fn exp2_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            core::arch::asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::exp2f(x)
    }
}

/// `log2(x)` in single precision: libm on the host; on the GPU the
/// hardware `lg2.approx` (about 2^-22 relative error).
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure arithmetic instruction.
        unsafe {
            core::arch::asm!("lg2.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::log2f(x)
    }
}

/// `2^x` in double precision: libm on the host; on the GPU
/// [`exp2_split_f64`] (libm's table-based `exp2` is not available to the
/// kernels).
#[inline(always)]
pub fn exp2_f64(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        exp2_split_f64(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        libm::exp2(x)
    }
}

/// `2^x` as `2^n · e^(f ln 2)` with `n` the nearest whole number to `x` and
/// `|f| <= 1/2`: exact at whole `x` (what `frexp` and `ldexp` need), within
/// an ulp or two elsewhere, subnormal results rounded once.
#[inline(always)]
pub fn exp2_split_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < -1100.0 {
        return 0.0;
    }
    if x > 1024.0 {
        return f64::INFINITY;
    }
    let n = libm::floor(x + 0.5);
    let p = libm::exp((x - n) * core::f64::consts::LN_2);
    // 2^n in two factors, each a normal number, so that n = 1024 and
    // subnormal results work
    let n = n as i32;
    let half = n / 2;
    let power = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    p * power(half) * power(n - half)
}

#[cfg(test)]
mod tests {
    use super::exp2_split_f64;

    #[test]
    fn exp2_split_is_exact_at_whole_numbers() {
        for n in -1074..=1023 {
            assert_eq!(exp2_split_f64(n as f64), libm::exp2(n as f64), "2^{n}");
        }
        assert_eq!(exp2_split_f64(1024.0), f64::INFINITY);
        assert_eq!(exp2_split_f64(-1075.0), 0.0);
        assert_eq!(exp2_split_f64(f64::NEG_INFINITY), 0.0);
        assert!(exp2_split_f64(f64::NAN).is_nan());
    }

    #[test]
    fn exp2_split_is_within_two_ulp() {
        let mut x = -1070.0f64;
        while x < 1023.0 {
            let (got, want) = (exp2_split_f64(x), libm::exp2(x));
            assert!(
                (got - want).abs() <= 2.0 * f64::EPSILON * want,
                "2^{x}: {got} against {want}"
            );
            x += 0.618_033_988_749_894_8;
        }
    }
}
