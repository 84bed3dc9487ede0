//! Elementwise CPU kernels: unary maps, binary ops and comparisons over
//! broadcast layouts, `where`, casts and strided copies. All read their inputs
//! in place through their layouts; outputs are new contiguous vectors.

use super::element::{cast, with_storage, Element};
use super::{CpuStorage, PAR_THRESHOLD};
use crate::core::control::{Stop, CHECK_EVERY};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, UnaryOp, UnaryRule};
use crate::core::strided::Merged;
use crate::core::{DType, Layout};
use half::{bf16, f16};
use kiln_kernels::ops::{binary, unary};
use kiln_kernels::real::Real;
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

/// The type a float element computes in: f32 for f32, f16 and bf16; f64
/// for f64. The formulas themselves are the op table's
/// (`kiln_kernels::ops`), shared with the GPU kernels.
trait Compute: Real + Send + Sync {
    fn load<T: Element>(x: T) -> Self;
    fn store<T: Element>(self) -> T;
}

impl Compute for f32 {
    #[inline(always)]
    fn load<T: Element>(x: T) -> Self {
        x.to_f32()
    }
    #[inline(always)]
    fn store<T: Element>(self) -> T {
        T::from_f32(self)
    }
}

impl Compute for f64 {
    #[inline(always)]
    fn load<T: Element>(x: T) -> Self {
        x.to_f64()
    }
    #[inline(always)]
    fn store<T: Element>(self) -> T {
        T::from_f64(self)
    }
}

/// An op the front-end never sends here (its dtype rule excludes it);
/// returns an empty result rather than panic.
fn unreachable_op<T>() -> Vec<T> {
    debug_assert!(false, "front-end dispatched an op outside its dtype rule");
    Vec::new()
}

/// The unary maps, one match arm per row of the op table.
macro_rules! cpu_unary {
    ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
        fn unary_float<T: Element, C: Compute>(op: UnaryOp, v: &[T], l: &Layout) -> Vec<T> {
            match op {
                $( UnaryOp::$v => cpu_unary!(@float $rule $n, v, l, T, C), )*
            }
        }

        fn unary_int<T: Element>(op: UnaryOp, v: &[T], l: &Layout) -> Vec<T> {
            match op {
                $( UnaryOp::$v => cpu_unary!(@int $rule $n, v, l, T), )*
            }
        }
    };
    (@float logical $n:ident, $x:ident, $l:ident, $t:ident, $c:ident) => {
        unreachable_op()
    };
    (@float $rule:ident $n:ident, $x:ident, $l:ident, $t:ident, $c:ident) => {
        map1($x, $l, |x: $t| -> $t { unary::$n($c::load(x)).store() })
    };
    (@int keep $n:ident, $x:ident, $l:ident, $t:ident) => {
        map1($x, $l, |x: $t| -> $t { $t::from_i64(unary::int::$n(x.to_i64())) })
    };
    (@int $rule:ident $n:ident, $x:ident, $l:ident, $t:ident) => {
        unreachable_op()
    };
}
kiln_kernels::unary_ops!(cpu_unary);

/// The binary maps, one match arm per row of the op table.
macro_rules! cpu_binary {
    ($($v:ident $n:ident $doc:literal $rule:ident $f:tt $i:tt $b:tt;)*) => {
        fn binary_float<T: Element, C: Compute>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<T> {
            match op {
                $( BinaryOp::$v => cpu_binary!(@float $rule $n, a, la, b, lb, T, C), )*
            }
        }

        fn binary_int<T: Element>(op: BinaryOp, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<T> {
            match op {
                $( BinaryOp::$v => cpu_binary!(@int $rule $n, a, la, b, lb, T), )*
            }
        }

        fn binary_bool(op: BinaryOp, a: &[bool], la: &Layout, b: &[bool], lb: &Layout) -> Result<Vec<bool>> {
            Ok(match op {
                $( BinaryOp::$v => cpu_binary!(@bool $b $n, a, la, b, lb), )*
            })
        }
    };
    (@float bitwise $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident, $t:ident, $c:ident) => {
        unreachable_op()
    };
    (@float $rule:ident $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident, $t:ident, $c:ident) => {
        map2($a, $la, $b, $lb, |x: $t, y: $t| -> $t { binary::$n($c::load(x), $c::load(y)).store() })
    };
    (@int float $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident, $t:ident) => {
        unreachable_op()
    };
    (@int $rule:ident $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident, $t:ident) => {
        map2($a, $la, $b, $lb, |x: $t, y: $t| -> $t { $t::from_i64(binary::int::$n(x.to_i64(), y.to_i64())) })
    };
    (@bool () $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident) => {
        return Err(Error::UnsupportedDType {
            op: stringify!($n),
            dtype: DType::Bool,
            hint: " (convert with to_dtype(\"i64\") first)".into(),
        })
    };
    (@bool $f:tt $n:ident, $a:ident, $la:ident, $b:ident, $lb:ident) => {
        map2($a, $la, $b, $lb, |x: bool, y: bool| binary::boolean::$n(x as i64, y as i64) != 0)
    };
}
kiln_kernels::binary_ops!(cpu_binary);

/// A unary op on a tensor already of the op's result dtype (see
/// [`UnaryOp::result_dtype`]); `LogicalNot` accepts any dtype.
pub(crate) fn unary(op: UnaryOp, s: &CpuStorage, l: &Layout) -> Result<CpuStorage> {
    if op.rule() == UnaryRule::Logical {
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
