//! The order the sorts use, defined once for the GPU kernels and the CPU
//! backend: an order-preserving u64 image of each value (NaN above +inf, -0
//! equal to +0), compared as unsigned integers.

/// The key of a float (f32, f16 and bf16 widen to f64 exactly).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn float_key(v: f64) -> u64 {
    let v = if v != v {
        f64::NAN
    } else if v == 0.0 {
        0.0
    } else {
        v
    };
    let b = v.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The key of an integer or bool (as i64).
#[inline(always)]
pub fn int_key(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_order() {
        let xs = [
            f64::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        let k = xs.map(float_key);
        assert!(k[0] < k[1] && k[1] < k[2] && k[3] < k[4] && k[4] < k[5] && k[5] < k[6] && k[6] < k[7]);
        assert_eq!(k[2], k[3]);
        assert_eq!(k[7], k[8]);
        assert!(int_key(-3) < int_key(0) && int_key(0) < int_key(i64::MAX));
    }
}
