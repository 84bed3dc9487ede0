//! Elementwise CPU kernels: unary maps, binary ops and comparisons over
//! broadcast layouts, `where`, casts and strided copies. All read their inputs
//! in place through their layouts; outputs are new contiguous vectors.

use super::element::{cast, with_storage, Element};
use super::{CpuStorage, PAR_THRESHOLD};
use crate::core::control::{Stop, CHECK_EVERY};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, UnaryOp};
use crate::core::strided::Merged;
use crate::core::{DType, Layout};
use half::{bf16, f16};
use rayon::prelude::*;

/// A new contiguous vector of `numel(shape)` elements, element `i` being
/// `f(offsets of logical element i in each input)`. Every layout has `shape`.
pub(crate) fn map_strided<const N: usize, D: Copy + Default + Send>(
    shape: &[usize],
    layouts: [&Layout; N],
    f: impl Fn([usize; N]) -> D + Sync,
) -> Vec<D> {
    let n = crate::core::shape::numel(shape);
    let mut out = vec![D::default(); n];
    if n == 0 {
        return out;
    }
    let merged = Merged::<N>::new(shape, std::array::from_fn(|k| layouts[k].strides()));
    let offsets: [usize; N] = std::array::from_fn(|k| layouts[k].offset());
    let row_len = merged.row_len();
    let steps = merged.row_strides();
    // Expanded inputs make long outputs cheap to ask for: the work is
    // counted against the run's stop check every piece, and once the run
    // must stop the rest is skipped (the caller's result is then discarded:
    // `Tensor::from_storage` refuses it).
    let stop = Stop::current();
    let fill = |chunk: &mut [D], first_row: usize| {
        let rows = chunk.len() / row_len;
        merged.for_each_row(offsets, first_row, first_row + rows, |row, base| {
            let dst = &mut chunk[(row - first_row) * row_len..(row - first_row + 1) * row_len];
            for (p, piece) in dst.chunks_mut(CHECK_EVERY).enumerate() {
                if stop.tick(piece.len()) {
                    return;
                }
                let j0 = p * CHECK_EVERY;
                for (j, d) in piece.iter_mut().enumerate() {
                    *d = f(std::array::from_fn(|k| base[k] + (j0 + j) * steps[k]));
                }
            }
        });
    };
    if n < PAR_THRESHOLD {
        fill(&mut out, 0);
    } else {
        let rows_per_chunk = (PAR_THRESHOLD / row_len).max(1);
        out.par_chunks_mut(rows_per_chunk * row_len)
            .enumerate()
            .for_each(|(c, chunk)| fill(chunk, c * rows_per_chunk));
    }
    out
}

/// `f` over one strided input.
pub(crate) fn map1<S: Element, D: Element>(src: &[S], l: &Layout, f: impl Fn(S) -> D + Sync) -> Vec<D> {
    if let Some((a, b)) = l.contiguous_range() {
        let s = &src[a..b];
        if s.len() < PAR_THRESHOLD {
            s.iter().map(|&x| f(x)).collect()
        } else {
            s.par_iter().with_min_len(4096).map(|&x| f(x)).collect()
        }
    } else {
        map_strided(l.shape(), [l], |[o]| f(src[o]))
    }
}

/// `f` over two strided inputs of one (broadcast) shape.
pub(crate) fn map2<A: Element, B: Element, D: Element>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    f: impl Fn(A, B) -> D + Sync,
) -> Vec<D> {
    if let (Some((a0, a1)), Some((b0, b1))) = (la.contiguous_range(), lb.contiguous_range()) {
        let (a, b) = (&a[a0..a1], &b[b0..b1]);
        if a.len() < PAR_THRESHOLD {
            a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
        } else {
            a.par_iter()
                .zip(b)
                .with_min_len(4096)
                .map(|(&x, &y)| f(x, y))
                .collect()
        }
    } else {
        map_strided(la.shape(), [la, lb], |[i, j]| f(a[i], b[j]))
    }
}

/// Arithmetic in the computation type of a float element (f32 for the
/// half types and f32, f64 for f64).
trait FloatMath: Copy + Send + Sync + PartialOrd {
    fn load<T: Element>(x: T) -> Self;
    fn store<T: Element>(self) -> T;
    fn abs(self) -> Self;
    fn neg(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sqrt(self) -> Self;
    fn rsqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn relu(self) -> Self;
    fn gelu(self) -> Self;
    fn silu(self) -> Self;
    fn erf(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn sign(self) -> Self;
    fn square(self) -> Self;
    fn recip(self) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn rem(self, o: Self) -> Self;
    fn pow(self, o: Self) -> Self;
    fn maximum(self, o: Self) -> Self;
    fn minimum(self, o: Self) -> Self;
}

macro_rules! impl_float_math {
    ($t:ident, $load:ident, $from:ident, $gelu:path, $sigmoid:path, $silu:path, $erf:path) => {
        impl FloatMath for $t {
            #[inline(always)]
            fn load<T: Element>(x: T) -> Self {
                x.$load()
            }
            #[inline(always)]
            fn store<T: Element>(self) -> T {
                T::$from(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn exp(self) -> Self {
                self.exp()
            }
            #[inline(always)]
            fn ln(self) -> Self {
                self.ln()
            }
            #[inline(always)]
            fn log2(self) -> Self {
                self.log2()
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                self.ln_1p()
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                self.exp_m1()
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                self.sqrt()
            }
            #[inline(always)]
            fn rsqrt(self) -> Self {
                1.0 / self.sqrt()
            }
            #[inline(always)]
            fn sin(self) -> Self {
                self.sin()
            }
            #[inline(always)]
            fn cos(self) -> Self {
                self.cos()
            }
            #[inline(always)]
            fn tan(self) -> Self {
                self.tan()
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                self.tanh()
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                $sigmoid(self)
            }
            #[inline(always)]
            fn relu(self) -> Self {
                if self > 0.0 || self.is_nan() {
                    self
                } else {
                    0.0
                }
            }
            #[inline(always)]
            fn gelu(self) -> Self {
                $gelu(self)
            }
            #[inline(always)]
            fn silu(self) -> Self {
                $silu(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                self.floor()
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                self.ceil()
            }
            #[inline(always)]
            fn round(self) -> Self {
                self.round_ties_even()
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    self
                }
            }
            #[inline(always)]
            fn square(self) -> Self {
                self * self
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn rem(self, o: Self) -> Self {
                let r = self % o;
                if r != 0.0 && ((r < 0.0) != (o < 0.0)) {
                    r + o
                } else {
                    r
                }
            }
            #[inline(always)]
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            #[inline(always)]
            fn maximum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    $t::NAN
                } else {
                    self.max(o)
                }
            }
            #[inline(always)]
            fn minimum(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    $t::NAN
                } else {
                    self.min(o)
                }
            }
        }
    };
}

use kiln_kernels::math as km;
impl_float_math!(
    f32,
    to_f32,
    from_f32,
    km::gelu_f32,
    km::sigmoid_f32,
    km::silu_f32,
    km::erf_f32
);
impl_float_math!(
    f64,
    to_f64,
    from_f64,
    km::gelu_f64,
    km::sigmoid_f64,
    km::silu_f64,
    km::erf_f64
);

fn unary_float<T: Element, C: FloatMath>(op: UnaryOp, v: &[T], l: &Layout) -> Vec<T> {
    macro_rules! go {
        ($f:expr) => {
            map1(v, l, |x: T| -> T { $f(C::load(x)).store() })
        };
    }
    use UnaryOp::*;
    match op {
        Abs => go!(C::abs),
        Neg => go!(C::neg),
        Exp => go!(C::exp),
        Log => go!(C::ln),
        Log2 => go!(C::log2),
        Log1p => go!(C::ln_1p),
        Expm1 => go!(C::exp_m1),
        Sqrt => go!(C::sqrt),
        Rsqrt => go!(C::rsqrt),
        Sin => go!(C::sin),
        Cos => go!(C::cos),
        Tan => go!(C::tan),
        Tanh => go!(C::tanh),
        Sigmoid => go!(C::sigmoid),
        Relu => go!(C::relu),
        Gelu => go!(C::gelu),
        Silu => go!(C::silu),
        Erf => go!(C::erf),
        Floor => go!(C::floor),
        Ceil => go!(C::ceil),
        Round => go!(C::round),
        Sign => go!(C::sign),
        Square => go!(C::square),
        Reciprocal => go!(C::recip),
        LogicalNot => unreachable_op(op),
    }
}

fn unary_int<T: Element>(op: UnaryOp, v: &[T], l: &Layout) -> Vec<T> {
    macro_rules! go {
        ($f:expr) => {
            map1(v, l, |x: T| -> T { T::from_i64($f(x.to_i64())) })
        };
    }
    use UnaryOp::*;
    match op {
        Abs => go!(|x: i64| x.wrapping_abs()),
        Neg => go!(|x: i64| x.wrapping_neg()),
        Relu => go!(|x: i64| x.max(0)),
        Sign => go!(|x: i64| x.signum()),
        Square => go!(|x: i64| x.wrapping_mul(x)),
        _ => go!(|x: i64| x),
    }
}

/// An op the front-end never sends here; returns an empty result rather than panic.
fn unreachable_op<T>(_op: UnaryOp) -> Vec<T> {
    debug_assert!(false, "front-end dispatched an unsupported op");
    Vec::new()
}

/// A unary op on a tensor already of the op's result dtype (see
/// [`UnaryOp::result_dtype`]); `LogicalNot` accepts any dtype.
pub(crate) fn unary(op: UnaryOp, s: &CpuStorage, l: &Layout) -> Result<CpuStorage> {
    if op == UnaryOp::LogicalNot {
        return Ok(with_storage!(s, v: T => CpuStorage::Bool(map1(v, l, |x: T| x == T::default()))));
    }
    Ok(match s {
        CpuStorage::F32(v) => CpuStorage::F32(unary_float::<f32, f32>(op, v, l)),
        CpuStorage::F64(v) => CpuStorage::F64(unary_float::<f64, f64>(op, v, l)),
        CpuStorage::F16(v) => CpuStorage::F16(unary_float::<f16, f32>(op, v, l)),
        CpuStorage::BF16(v) => CpuStorage::BF16(unary_float::<bf16, f32>(op, v, l)),
        CpuStorage::I64(v) => CpuStorage::I64(unary_int(op, v, l)),
        CpuStorage::I32(v) => CpuStorage::I32(unary_int(op, v, l)),
        CpuStorage::U8(v) => CpuStorage::U8(unary_int(op, v, l)),
        CpuStorage::Bool(_) => return Err(Error::dtype(op.name(), DType::Bool)),
    })
}

fn binary_float<T: Element, C: FloatMath>(
    op: BinaryOp,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
) -> Vec<T> {
    macro_rules! go {
        ($f:expr) => {
            map2(a, la, b, lb, |x: T, y: T| -> T {
                $f(C::load(x), C::load(y)).store()
            })
        };
    }
    match op {
        BinaryOp::Add => go!(C::add),
        BinaryOp::Sub => go!(C::sub),
        BinaryOp::Mul => go!(C::mul),
        BinaryOp::Div => go!(C::div),
        BinaryOp::Rem => go!(C::rem),
        BinaryOp::Pow => go!(C::pow),
        BinaryOp::Maximum => go!(C::maximum),
        BinaryOp::Minimum => go!(C::minimum),
        // rejected for floats by the front-end
        BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => vec![T::default(); la.numel()],
    }
}

fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        // Only reachable for base ±1 (the front-end rejects other negative powers).
        return match base {
            1 => 1,
            -1 if exp % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    base.wrapping_pow(exp.min(u32::MAX as i64) as u32)
}

fn int_rem(a: i64, b: i64) -> i64 {
    match a.checked_rem(b) {
        Some(r) if r != 0 && ((r < 0) != (b < 0)) => r + b,
        Some(r) => r,
        None => 0,
    }
}

fn binary_int<T: Element>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<T> {
    macro_rules! go {
        ($f:expr) => {
            map2(a, la, b, lb, |x: T, y: T| -> T {
                T::from_i64($f(x.to_i64(), y.to_i64()))
            })
        };
    }
    match op {
        BinaryOp::Add => go!(i64::wrapping_add),
        BinaryOp::Sub => go!(i64::wrapping_sub),
        BinaryOp::Mul => go!(i64::wrapping_mul),
        BinaryOp::Div => go!(|x: i64, y: i64| x.checked_div(y).unwrap_or(0)),
        BinaryOp::Rem => go!(int_rem),
        BinaryOp::Pow => go!(int_pow),
        BinaryOp::Maximum => go!(i64::max),
        BinaryOp::Minimum => go!(i64::min),
        BinaryOp::BitAnd => go!(|x: i64, y: i64| x & y),
        BinaryOp::BitOr => go!(|x: i64, y: i64| x | y),
        BinaryOp::BitXor => go!(|x: i64, y: i64| x ^ y),
    }
}

fn binary_bool(op: BinaryOp, a: &[bool], la: &Layout, b: &[bool], lb: &Layout) -> Result<Vec<bool>> {
    Ok(match op {
        BinaryOp::Add | BinaryOp::Maximum | BinaryOp::BitOr => map2(a, la, b, lb, |x, y| x | y),
        BinaryOp::Mul | BinaryOp::Minimum | BinaryOp::BitAnd => map2(a, la, b, lb, |x, y| x & y),
        BinaryOp::BitXor => map2(a, la, b, lb, |x, y| x ^ y),
        _ => {
            return Err(Error::UnsupportedDType {
                op: op.name(),
                dtype: DType::Bool,
                hint: " (convert with to_dtype(\"i64\") first)".into(),
            })
        }
    })
}

/// A binary op on two storages of one dtype, layouts broadcast to one shape.
pub(crate) fn binary(
    op: BinaryOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    use CpuStorage as S;
    Ok(match (a, b) {
        (S::F32(x), S::F32(y)) => S::F32(binary_float::<f32, f32>(op, x, la, y, lb)),
        (S::F64(x), S::F64(y)) => S::F64(binary_float::<f64, f64>(op, x, la, y, lb)),
        (S::F16(x), S::F16(y)) => S::F16(binary_float::<f16, f32>(op, x, la, y, lb)),
        (S::BF16(x), S::BF16(y)) => S::BF16(binary_float::<bf16, f32>(op, x, la, y, lb)),
        (S::I64(x), S::I64(y)) => S::I64(binary_int(op, x, la, y, lb)),
        (S::I32(x), S::I32(y)) => S::I32(binary_int(op, x, la, y, lb)),
        (S::U8(x), S::U8(y)) => S::U8(binary_int(op, x, la, y, lb)),
        (S::Bool(x), S::Bool(y)) => S::Bool(binary_bool(op, x, la, y, lb)?),
        _ => return Err(dtype_pair(op.name(), a, b)),
    })
}

fn dtype_pair(op: &'static str, a: &CpuStorage, b: &CpuStorage) -> Error {
    Error::invalid(
        op,
        format!("internal dtype mismatch {} vs {}", a.dtype(), b.dtype()),
    )
}

/// A comparison of two storages of one dtype; returns bool.
pub(crate) fn compare(
    op: CmpOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    with_storage!(a, x: T => {
        let y = T::slice(b).ok_or_else(|| dtype_pair(op.name(), a, b))?;
        Ok(CpuStorage::Bool(map2(x, la, y, lb, |p: T, q: T| op.apply(p, q))))
    })
}

/// `cond ? a : b` elementwise; `a` and `b` share a dtype, all layouts one shape.
pub(crate) fn where_cond(
    c: &CpuStorage,
    lc: &Layout,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let CpuStorage::Bool(cv) = c else {
        return Err(Error::dtype("where", c.dtype()));
    };
    with_storage!(a, x: T => {
        let y = T::slice(b).ok_or_else(|| dtype_pair("where", a, b))?;
        Ok(T::into_storage(map_strided(la.shape(), [lc, la, lb], |[i, j, k]| {
            if cv[i] { x[j] } else { y[k] }
        })))
    })
}

/// A contiguous copy of `l`'s elements converted to `dtype`.
pub(crate) fn cast_to(s: &CpuStorage, l: &Layout, dtype: DType) -> CpuStorage {
    with_storage!(s, v: S => {
        super::with_dtype!(dtype, D => D::into_storage(map1(v, l, |x: S| -> D { cast(x) })))
    })
}

/// Writes `src` (layout `ls`, same dtype, same shape) into `dst` at layout `ld`.
pub(crate) fn copy_into(dst: &mut CpuStorage, ld: &Layout, src: &CpuStorage, ls: &Layout) -> Result<()> {
    let src_dtype = src.dtype();
    let dst_dtype = dst.dtype();
    with_storage!(dst, d: T => {
        let s = T::slice(src).ok_or_else(|| Error::invalid(
            "copy",
            format!("internal dtype mismatch {src_dtype} vs {dst_dtype}"),
        ))?;
        let m = Merged::<2>::new(ld.shape(), [ld.strides(), ls.strides()]);
        if ld.numel() == 0 {
            return Ok(());
        }
        let [sd, ss] = m.row_strides();
        let n = m.row_len();
        m.for_each_row([ld.offset(), ls.offset()], 0, m.rows(), |_, [bd, bs]| {
            for j in 0..n {
                d[bd + j * sd] = s[bs + j * ss];
            }
        });
        Ok(())
    })
}
