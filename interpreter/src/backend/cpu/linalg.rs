//! CPU matrix multiplication: batched GEMM over broadcast batch dims. f32 and
//! f64 go to `matrixmultiply` (which takes arbitrary row/column strides, so
//! transposed and sliced operands are read in place); f16/bf16 are widened to
//! f32 first; integer matmul is a plain i64 loop (no BLAS offers it).

use super::element::{with_storage, Element};
use super::elementwise::cast_to;
use super::CpuStorage;
use crate::error::{Error, Result};
use crate::tensor::strided::offsets;
use crate::tensor::{DType, Layout};
use rayon::prelude::*;

/// The shape of one batched product: `batch` dims, then `[m, k] x [k, n]`.
pub struct MatmulDims {
    /// broadcast batch dims
    pub batch: Vec<usize>,
    /// rows of the output
    pub m: usize,
    /// the contracted size
    pub k: usize,
    /// columns of the output
    pub n: usize,
}

struct Operand<'a> {
    bases: Vec<usize>,
    rs: isize,
    cs: isize,
    _l: &'a Layout,
}

fn operand(l: &Layout) -> Operand<'_> {
    let nd = l.ndim();
    let bases = offsets(&l.shape()[..nd - 2], &l.strides()[..nd - 2], l.offset());
    Operand {
        bases,
        rs: l.strides()[nd - 2] as isize,
        cs: l.strides()[nd - 1] as isize,
        _l: l,
    }
}

/// `lhs @ rhs` where `la` is `batch + [m, k]` and `lb` is `batch + [k, n]`
/// (batch dims already broadcast); returns a contiguous `batch + [m, n]`.
pub(crate) fn matmul(
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
    d: &MatmulDims,
) -> Result<CpuStorage> {
    let dtype = a.dtype();
    match dtype {
        DType::F16 | DType::BF16 => {
            let (a32, b32) = (cast_to(a, la, DType::F32), cast_to(b, lb, DType::F32));
            let (ca, cb) = (Layout::contiguous(la.shape()), Layout::contiguous(lb.shape()));
            let out = matmul(&a32, &ca, &b32, &cb, d)?;
            Ok(cast_to(&out, &Layout::contiguous(&out_shape(d)), dtype))
        }
        DType::Bool => Err(Error::dtype("matmul", dtype)),
        _ => Ok(with_storage!(a, x: T => {
            let y = T::slice(b).ok_or_else(|| Error::invalid("matmul", "internal dtype mismatch"))?;
            T::into_storage(gemm_batched(x, la, y, lb, d))
        })),
    }
}

fn out_shape(d: &MatmulDims) -> Vec<usize> {
    let mut s = d.batch.clone();
    s.extend([d.m, d.n]);
    s
}

fn gemm_batched<T: Element>(x: &[T], la: &Layout, y: &[T], lb: &Layout, d: &MatmulDims) -> Vec<T> {
    let (oa, ob) = (operand(la), operand(lb));
    let mn = d.m * d.n;
    let mut out = vec![T::default(); oa.bases.len() * mn];
    if mn == 0 {
        return out;
    }
    out.par_chunks_mut(mn).enumerate().for_each(|(i, c)| {
        gemm(x, oa.bases[i], oa.rs, oa.cs, y, ob.bases[i], ob.rs, ob.cs, c, d);
    });
    out
}

#[allow(clippy::too_many_arguments)]
fn gemm<T: Element>(
    x: &[T],
    xo: usize,
    xr: isize,
    xc: isize,
    y: &[T],
    yo: usize,
    yr: isize,
    yc: isize,
    c: &mut [T],
    d: &MatmulDims,
) {
    let (m, k, n) = (d.m, d.k, d.n);
    if k == 0 {
        return; // c is already zero
    }
    // SAFETY (both arms): the layouts were checked by the front-end, so every
    // element (xo + i*xr + p*xc) and (yo + p*yr + j*yc) lies inside its slice, and
    // `c` is a dense m×n row-major buffer.
    if let (Some(xs), Some(ys), Some(cs)) = (typed::<T, f32>(x), typed::<T, f32>(y), typed_mut::<T, f32>(c)) {
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                xs.as_ptr().add(xo),
                xr,
                xc,
                ys.as_ptr().add(yo),
                yr,
                yc,
                0.0,
                cs.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    } else if let (Some(xs), Some(ys), Some(cs)) =
        (typed::<T, f64>(x), typed::<T, f64>(y), typed_mut::<T, f64>(c))
    {
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                1.0,
                xs.as_ptr().add(xo),
                xr,
                xc,
                ys.as_ptr().add(yo),
                yr,
                yc,
                0.0,
                cs.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    } else {
        let at =
            |base: usize, i: usize, r: isize, j: usize, cst: isize| base + i * r as usize + j * cst as usize;
        for i in 0..m {
            let row = &mut c[i * n..(i + 1) * n];
            let mut acc = vec![0i64; n];
            for p in 0..k {
                let a = x[at(xo, i, xr, p, xc)].to_i64();
                for (j, s) in acc.iter_mut().enumerate() {
                    *s = s.wrapping_add(a.wrapping_mul(y[at(yo, p, yr, j, yc)].to_i64()));
                }
            }
            for (o, s) in row.iter_mut().zip(acc) {
                *o = T::from_i64(s);
            }
        }
    }
}

/// `x` as a slice of `U` when `T` is `U` (checked through their dtypes).
fn typed<T: Element, U: Element>(x: &[T]) -> Option<&[U]> {
    (T::DTYPE == U::DTYPE).then(|| {
        // SAFETY: equal dtypes mean T and U are the same type, so the cast is the identity.
        unsafe { std::slice::from_raw_parts(x.as_ptr() as *const U, x.len()) }
    })
}

/// Mutable form of [`typed`].
fn typed_mut<T: Element, U: Element>(x: &mut [T]) -> Option<&mut [U]> {
    (T::DTYPE == U::DTYPE).then(|| {
        // SAFETY: as in `typed`.
        unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut U, x.len()) }
    })
}
