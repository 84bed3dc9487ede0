//! IEEE half and bfloat16 conversions on raw bits, so that the kernels and
//! the host round identically (round to nearest, ties to even; NaN stays
//! NaN). The host converts in plain Rust; on the GPU the f16 conversions are
//! the hardware's `cvt` (the same rounding, one instruction where the
//! integer routine takes dozens and halves the bandwidth of every f16
//! kernel).

/// f16 bits to f32 (exact).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a pure conversion instruction.
        unsafe {
            core::arch::asm!("cvt.f32.f16 {r}, {h};", r = out(reg32) r, h = in(reg16) h, options(pure, nomem, nostack));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f16_to_f32_bits(h)
    }
}

/// f32 to f16 bits, rounding to nearest even.
#[inline(always)]
pub fn f32_to_f16(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u16;
        // SAFETY: a pure conversion instruction.
        unsafe {
            core::arch::asm!("cvt.rn.f16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack));
        }
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32_to_f16_bits(x)
    }
}

/// [`f16_to_f32`] on the integer unit.
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
#[inline(always)]
fn f16_to_f32_bits(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            // subnormal: normalise
            let mut e = 127 - 15 + 1;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
        }
    } else if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// [`f32_to_f16`] on the integer unit.
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
#[inline(always)]
fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 | (man >> 13) as u16 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && (r & 1) == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && (r & 1) == 1) {
        r += 1;
    }
    sign | r as u16
}

/// bf16 bits to f32 (exact).
#[inline(always)]
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// f32 to bf16 bits, rounding to nearest even.
#[inline(always)]
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) as u16) | 0x40;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(round) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_matches_the_half_crate() {
        for h in 0..=u16::MAX {
            let ours = f16_to_f32(h);
            let theirs = ::half::f16::from_bits(h).to_f32();
            assert!(
                ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                "{h:#x}"
            );
        }
        let mut x = 1.0e-9f32;
        while x < 1.0e6 {
            for v in [x, -x, x * 1.000_01, x * 0.999_97] {
                let ours = f32_to_f16(v);
                let theirs = ::half::f16::from_f32(v).to_bits();
                assert_eq!(ours, theirs, "{v}");
            }
            x *= 1.013;
        }
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
    }

    #[test]
    fn bf16_matches_the_half_crate() {
        let mut x = 1.0e-30f32;
        while x < 1.0e30 {
            for v in [x, -x, x * 1.000_1] {
                assert_eq!(f32_to_bf16(v), ::half::bf16::from_f32(v).to_bits(), "{v}");
                let b = f32_to_bf16(v);
                assert_eq!(bf16_to_f32(b), ::half::bf16::from_bits(b).to_f32());
            }
            x *= 1.07;
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }
}

#[cfg(test)]
mod tie_tests {
    use super::*;

    #[test]
    fn bf16_ties_and_f64_path() {
        let mut state = 0x1234_5678_9abc_def0u64;
        for _ in 0..2_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bits = (state as u32 & 0xffff_0000) | 0x8000; // exact ties
            let x = f32::from_bits(bits);
            if x.is_nan() {
                continue;
            }
            assert_eq!(f32_to_bf16(x), ::half::bf16::from_f32(x).to_bits(), "{x:e}");
            assert_eq!(
                f32_to_bf16(x),
                ::half::bf16::from_f64(x as f64).to_bits(),
                "f64 path {x:e}"
            );
        }
    }
}
