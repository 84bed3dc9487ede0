//! CPU matrix multiplication: batched GEMM over broadcast batch dims. f32 and
//! f64 go to `matrixmultiply` (which takes arbitrary row/column strides, so
//! transposed and sliced operands are read in place); f16/bf16 are widened to
//! f32 first; integer matmul is a plain i64 loop (no BLAS offers it).

use super::element::{with_storage, Element};
use super::elementwise::cast_to;
use super::CpuStorage;
use crate::core::control::Stop;
use crate::core::error::{Error, Result};
use crate::core::strided::offsets;
use crate::core::{DType, Layout};
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
        _ => {
            let stop = Stop::current();
            let out = with_storage!(a, x: T => {
                let y = T::slice(b).ok_or_else(|| Error::invalid("matmul", "internal dtype mismatch"))?;
                T::into_storage(gemm_batched(x, la, y, lb, d, &stop))
            });
            stop.finish("matmul")?;
            Ok(out)
        }
    }
}

fn out_shape(d: &MatmulDims) -> Vec<usize> {
    let mut s = d.batch.clone();
    s.extend([d.m, d.n]);
    s
}

/// Multiply-adds of one GEMM piece between two checks of the run's [`Stop`]:
/// long contractions are split along `k` (accumulating into the output).
const PIECE_WORK: usize = 1 << 28;

fn gemm_batched<T: Element>(
    x: &[T],
    la: &Layout,
    y: &[T],
    lb: &Layout,
    d: &MatmulDims,
    stop: &Stop,
) -> Vec<T> {
    let (oa, ob) = (operand(la), operand(lb));
    let mn = d.m * d.n;
    let mut out = vec![T::default(); oa.bases.len() * mn];
    if mn == 0 {
        return out;
    }
    // bounded in k too: a thin product (m, n small) costs per k far more than m·n
    let kc = (PIECE_WORK / mn).clamp(1024, 1 << 20);
    out.par_chunks_mut(mn).enumerate().for_each(|(i, c)| {
        let mut p0 = 0;
        while p0 < d.k {
            let p1 = d.k.min(p0.saturating_add(kc));
            if stop.tick(mn.saturating_mul(p1 - p0)) {
                return;
            }
            let piece = Piece { p0, p1 };
            gemm(
                x,
                oa.bases[i],
                oa.rs,
                oa.cs,
                y,
                ob.bases[i],
                ob.rs,
                ob.cs,
                c,
                d,
                piece,
            );
            p0 = p1;
        }
    });
    out
}

/// The contracted indices `p0..p1` of one GEMM piece; the first piece
/// overwrites the output, later ones add to it.
#[derive(Clone, Copy)]
struct Piece {
    p0: usize,
    p1: usize,
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
    piece: Piece,
) {
    let (m, n) = (d.m, d.n);
    let k = piece.p1 - piece.p0;
    if k == 0 {
        return; // c is already zero
    }
    let beta = if piece.p0 == 0 { 0.0 } else { 1.0 };
    // the piece starts `p0` columns into x and `p0` rows into y
    let (xo, yo) = (xo + piece.p0 * xc as usize, yo + piece.p0 * yr as usize);
    // SAFETY (both arms): every tensor's layout passed `Layout::check_fits`
    // when it was made, and `operand` / the batch bases walk only elements of
    // those layouts, so every element (xo + i*xr + p*xc) and (yo + p*yr + j*yc)
    // for i < m, p < k (within this piece), j < n lies inside its slice; `c`
    // is a dense m×n row-major buffer.
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
                beta as f32,
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
                beta,
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
            let mut acc: Vec<i64> = row
                .iter()
                .map(|v| if beta == 0.0 { 0 } else { v.to_i64() })
                .collect();
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
