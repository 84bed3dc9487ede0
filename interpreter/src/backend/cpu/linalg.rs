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
    if let (Some(xs), Some(ys), Some(cs)) = (f32_slice(x), f32_slice(y), f32_slice_mut(c)) {
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
    } else if let (Some(xs), Some(ys), Some(cs)) = (f64_slice(x), f64_slice(y), f64_slice_mut(c)) {
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

fn f32_slice<T: Element>(x: &[T]) -> Option<&[f32]> {
    (T::DTYPE == DType::F32).then(|| {
        // SAFETY: T is f32 (checked through its DTYPE), so the cast is the identity.
        unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f32, x.len()) }
    })
}

fn f32_slice_mut<T: Element>(x: &mut [T]) -> Option<&mut [f32]> {
    (T::DTYPE == DType::F32).then(|| {
        // SAFETY: as in `f32_slice`.
        unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut f32, x.len()) }
    })
}

fn f64_slice<T: Element>(x: &[T]) -> Option<&[f64]> {
    (T::DTYPE == DType::F64).then(|| {
        // SAFETY: T is f64 (checked through its DTYPE), so the cast is the identity.
        unsafe { std::slice::from_raw_parts(x.as_ptr() as *const f64, x.len()) }
    })
}

fn f64_slice_mut<T: Element>(x: &mut [T]) -> Option<&mut [f64]> {
    (T::DTYPE == DType::F64).then(|| {
        // SAFETY: as in `f64_slice`.
        unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr() as *mut f64, x.len()) }
    })
}
