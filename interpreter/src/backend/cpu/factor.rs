//! Matrix factorizations and solves on the CPU through faer: LU with
//! partial pivoting, Cholesky, triangular solves, QR, SVD and the symmetric
//! eigendecomposition. Matrices are dense and column-major (LAPACK's layout,
//! see [`Mats`]); a batch is split across threads, one matrix per task.
//! Failures are reported as LAPACK does, in an i32 `info` per matrix
//! (0: fine; `k > 0`: the `k`-th pivot is zero or not positive; -1: the
//! iteration did not converge or the input is not finite), so the CPU and
//! the GPU answer alike.

use super::CpuStorage;
use crate::backend::factor::Mats;
use crate::core::error::{Error, Result};
use faer::linalg::triangular_solve as tri;
use faer::{MatMut, MatRef, Par, Side};
use rayon::prelude::*;

/// The float element types faer factors.
trait Real: Copy + Default {
    fn nan() -> Self;
    fn one() -> Self;
    fn finite(self) -> bool;
}

macro_rules! impl_real {
    ($($t:ty),*) => {$(
        impl Real for $t {
            fn nan() -> Self {
                <$t>::NAN
            }
            fn one() -> Self {
                1.0
            }
            fn finite(self) -> bool {
                self.is_finite()
            }
        }
    )*};
}
impl_real!(f32, f64);

fn unsupported(op: &'static str, s: &CpuStorage) -> Error {
    Error::UnsupportedDType {
        op,
        dtype: s.dtype(),
        hint: " (linear algebra takes f32 or f64)".into(),
    }
}

/// Runs `f` on the `$T`-typed slice of `$s` (f32 or f64).
macro_rules! real {
    ($op:expr, $s:expr, $v:ident : $T:ident => $body:expr) => {
        match $s {
            CpuStorage::F32($v) => {
                type $T = f32;
                $body
            }
            CpuStorage::F64($v) => {
                type $T = f64;
                $body
            }
            other => return Err(unsupported($op, other)),
        }
    };
}

/// The parallelism one matrix gets: all threads for a single matrix, one
/// per matrix for a batch.
fn par(batch: usize) -> Par {
    if batch > 1 {
        Par::Seq
    } else {
        Par::rayon(0)
    }
}

/// The row order of a factorization as LAPACK's `ipiv`: the 1-based row
/// swapped with row `i` at step `i` (`perm[i]` is the original row that
/// ends at position `i`).
fn swaps_of(perm: &[usize], k: usize) -> Vec<i32> {
    let m = perm.len();
    let mut at: Vec<usize> = (0..m).collect(); // at[pos] = original row there
    let mut pos: Vec<usize> = (0..m).collect(); // pos[row] = its position
    let mut ipiv = Vec::with_capacity(k);
    for (i, &row) in perm.iter().enumerate().take(k) {
        let j = pos[row];
        ipiv.push(j as i32 + 1);
        let other = at[i];
        at.swap(i, j);
        pos[row] = i;
        pos[other] = j;
    }
    ipiv
}

/// LU factorization with partial pivoting of each `rows × cols` matrix:
/// the packed factors (unit-lower `L` below the diagonal, `U` on and above),
/// the pivots (1-based, `min(rows, cols)` per matrix) and `info` (the first
/// zero diagonal of `U`, 1-based).
pub(crate) fn lu_factor(a: &CpuStorage, m: Mats) -> Result<(CpuStorage, CpuStorage, CpuStorage)> {
    let (r, c) = (m.rows, m.cols);
    let k = r.min(c);
    real!("lu_factor", a, v: T => {
        let mut lu = v.clone();
        let mut piv = vec![0i32; m.batch * k];
        let mut info = vec![0i32; m.batch];
        let p = par(m.batch);
        lu.par_chunks_mut((r * c).max(1))
            .zip(piv.par_chunks_mut(k.max(1)))
            .zip(info.par_iter_mut())
            .take(m.batch)
            .for_each(|((mat, piv), info)| {
                if r * c == 0 {
                    return;
                }
                let mut perm = vec![0usize; r];
                let mut perm_inv = vec![0usize; r];
                let a = MatMut::from_column_major_slice_mut(mat, r, c);
                let scratch = faer::linalg::lu::partial_pivoting::factor::lu_in_place_scratch::<usize, T>(
                    r,
                    c,
                    p,
                    Default::default(),
                );
                let mut mem = faer::dyn_stack::MemBuffer::new(scratch);
                let stack = faer::dyn_stack::MemStack::new(&mut mem);
                faer::linalg::lu::partial_pivoting::factor::lu_in_place(
                    a,
                    &mut perm,
                    &mut perm_inv,
                    p,
                    stack,
                    Default::default(),
                );
                piv[..k].copy_from_slice(&swaps_of(&perm, k));
                *info = (0..k)
                    .find(|&i| mat[i + i * r] == T::default())
                    .map_or(0, |i| i as i32 + 1);
            });
        Ok((T::wrap(lu), CpuStorage::I32(piv), CpuStorage::I32(info)))
    })
}

/// Wraps a typed vector back into a [`CpuStorage`].
trait Wrap: Sized {
    fn wrap(v: Vec<Self>) -> CpuStorage;
}

impl Wrap for f32 {
    fn wrap(v: Vec<f32>) -> CpuStorage {
        CpuStorage::F32(v)
    }
}

impl Wrap for f64 {
    fn wrap(v: Vec<f64>) -> CpuStorage {
        CpuStorage::F64(v)
    }
}

/// Solves `A X = B` (or `Aᵀ X = B`) for each matrix, `A` given by
/// [`lu_factor`]'s packed factors and pivots (`n × n`), `B` `n × nrhs`.
pub(crate) fn lu_solve(
    lu: &CpuStorage,
    piv: &CpuStorage,
    b: &CpuStorage,
    batch: usize,
    n: usize,
    nrhs: usize,
    transpose: bool,
) -> Result<CpuStorage> {
    let CpuStorage::I32(piv) = piv else {
        return Err(Error::invalid("lu_solve", "pivots must be int32"));
    };
    real!("lu_solve", lu, f: T => {
        if b.dtype() != lu.dtype() {
            return Err(unsupported("lu_solve", b));
        }
        let mut x: Vec<T> = typed::<T>(b).to_vec();
        x.par_chunks_mut((n * nrhs).max(1))
            .zip(f.par_chunks((n * n).max(1)).take(batch))
            .zip(piv.par_chunks(n.max(1)))
            .for_each(|((x, lu), piv)| {
                if n * nrhs == 0 {
                    return;
                }
                let lu = MatRef::from_column_major_slice(lu, n, n);
                let swap = |x: &mut [T], i: usize| {
                    let j = piv[i] as usize - 1;
                    if j != i {
                        for c in 0..nrhs {
                            x.swap(i + c * n, j + c * n);
                        }
                    }
                };
                if !transpose {
                    (0..n).for_each(|i| swap(x, i));
                    let mut xm = MatMut::from_column_major_slice_mut(x, n, nrhs);
                    tri::solve_unit_lower_triangular_in_place(lu, xm.as_mut(), Par::Seq);
                    tri::solve_upper_triangular_in_place(lu, xm, Par::Seq);
                } else {
                    {
                        let mut xm = MatMut::from_column_major_slice_mut(&mut *x, n, nrhs);
                        tri::solve_lower_triangular_in_place(lu.transpose(), xm.as_mut(), Par::Seq);
                        tri::solve_unit_upper_triangular_in_place(lu.transpose(), xm, Par::Seq);
                    }
                    (0..n).rev().for_each(|i| swap(x, i));
                }
            });
        Ok(T::wrap(x))
    })
}

/// The typed slice of a float storage known to hold `T`.
fn typed<T: 'static>(s: &CpuStorage) -> &[T] {
    let any: &dyn std::any::Any = match s {
        CpuStorage::F32(v) => v,
        CpuStorage::F64(v) => v,
        _ => &(),
    };
    any.downcast_ref::<Vec<T>>().map_or(&[], |v| v.as_slice())
}

/// The lower Cholesky factor of each symmetric `n × n` matrix (read from
/// its lower triangle; the upper one is left as it was) and `info`.
pub(crate) fn cholesky(a: &CpuStorage, batch: usize, n: usize) -> Result<(CpuStorage, CpuStorage)> {
    real!("cholesky", a, v: T => {
        let mut l = v.clone();
        let mut info = vec![0i32; batch];
        let p = par(batch);
        l.par_chunks_mut((n * n).max(1))
            .zip(info.par_iter_mut())
            .take(batch)
            .for_each(|(mat, info)| {
                if n == 0 {
                    return;
                }
                let a = MatMut::from_column_major_slice_mut(mat, n, n);
                let scratch = faer::linalg::cholesky::llt::factor::cholesky_in_place_scratch::<T>(
                    n,
                    p,
                    Default::default(),
                );
                let mut mem = faer::dyn_stack::MemBuffer::new(scratch);
                let stack = faer::dyn_stack::MemStack::new(&mut mem);
                if let Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) =
                    faer::linalg::cholesky::llt::factor::cholesky_in_place(
                        a,
                        Default::default(),
                        p,
                        stack,
                        Default::default(),
                    )
                {
                    *info = index as i32 + 1;
                }
            });
        Ok((T::wrap(l), CpuStorage::I32(info)))
    })
}

/// Solves `A X = B` for each triangular `n × n` `A` (its `upper` or lower
/// triangle; a unit diagonal when `unit`) and `n × nrhs` `B`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn triangular_solve(
    a: &CpuStorage,
    b: &CpuStorage,
    batch: usize,
    n: usize,
    nrhs: usize,
    upper: bool,
    unit: bool,
) -> Result<CpuStorage> {
    real!("solve_triangular", a, f: T => {
        if b.dtype() != a.dtype() {
            return Err(unsupported("solve_triangular", b));
        }
        let mut x: Vec<T> = typed::<T>(b).to_vec();
        let p = par(batch);
        x.par_chunks_mut((n * nrhs).max(1))
            .zip(f.par_chunks((n * n).max(1)))
            .take(batch)
            .for_each(|(x, a)| {
                if n * nrhs == 0 {
                    return;
                }
                let a = MatRef::from_column_major_slice(a, n, n);
                let xm = MatMut::from_column_major_slice_mut(x, n, nrhs);
                match (upper, unit) {
                    (false, false) => tri::solve_lower_triangular_in_place(a, xm, p),
                    (false, true) => tri::solve_unit_lower_triangular_in_place(a, xm, p),
                    (true, false) => tri::solve_upper_triangular_in_place(a, xm, p),
                    (true, true) => tri::solve_unit_upper_triangular_in_place(a, xm, p),
                }
            });
        Ok(T::wrap(x))
    })
}

/// Householder QR of each `rows × cols` matrix: `R` (`rows × cols`, upper
/// trapezoidal, zeros below) and `Q` (`rows × rows` when `complete`, else
/// `rows × min(rows, cols)`).
pub(crate) fn qr(a: &CpuStorage, m: Mats, complete: bool) -> Result<(CpuStorage, CpuStorage)> {
    let (r, c) = (m.rows, m.cols);
    let k = r.min(c);
    let qc = if complete { r } else { k };
    real!("qr", a, v: T => {
        let mut rr = vec![T::default(); m.batch * r * c];
        let mut q = vec![T::default(); m.batch * r * qc];
        if r * c == 0 {
            // Q of an empty matrix is the identity
            for b in 0..m.batch {
                (0..qc.min(r)).for_each(|i| q[b * r * qc + i + i * r] = T::one());
            }
            return Ok((T::wrap(rr), T::wrap(q)));
        }
        rr.par_chunks_mut((r * c).max(1))
            .zip(q.par_chunks_mut((r * qc).max(1)))
            .zip(v.par_chunks((r * c).max(1)))
            .take(m.batch)
            .for_each(|((rr, q), a)| {
                let f = MatRef::from_column_major_slice(a, r, c).qr();
                copy_into(rr, f.thin_R(), r);
                if complete {
                    copy_into(q, f.compute_Q().as_ref(), r);
                } else {
                    copy_into(q, f.compute_thin_Q().as_ref(), r);
                }
            });
        Ok((T::wrap(rr), T::wrap(q)))
    })
}

/// Writes `m` into a column-major slice with leading dimension `ld`.
fn copy_into<T: Copy>(out: &mut [T], m: MatRef<'_, T>, ld: usize) {
    for j in 0..m.ncols() {
        for i in 0..m.nrows() {
            out[i + j * ld] = m[(i, j)];
        }
    }
}

/// The singular values of each `rows × cols` matrix (descending) and, when
/// `vectors`, `U` (`rows × rows` when `full`, else `rows × k`) and `V`
/// (`cols × cols` or `cols × k`), and `info`.
pub(crate) fn svd(a: &CpuStorage, m: Mats, full: bool, vectors: bool) -> Result<SvdParts> {
    let (r, c) = (m.rows, m.cols);
    let k = r.min(c);
    let (uc, vc) = if full { (r, c) } else { (k, k) };
    let (uc, vc) = if vectors { (uc, vc) } else { (0, 0) };
    real!("svd", a, v: T => {
        let one = |a: &[T]| -> (Vec<T>, Vec<T>, Vec<T>, i32) {
            let mut s = vec![T::default(); k];
            let mut u = vec![T::default(); r * uc];
            let mut vv = vec![T::default(); c * vc];
            if r * c == 0 {
                (0..uc.min(r)).for_each(|i| u[i + i * r] = T::one());
                (0..vc.min(c)).for_each(|i| vv[i + i * c] = T::one());
                return (s, u, vv, 0);
            }
            if a.iter().any(|x| !x.finite()) {
                s.iter_mut().chain(u.iter_mut()).chain(vv.iter_mut()).for_each(|x| *x = T::nan());
                return (s, u, vv, -1);
            }
            let a = MatRef::from_column_major_slice(a, r, c);
            if !vectors {
                return match a.singular_values() {
                    Ok(sv) => (sv[..k].to_vec(), u, vv, 0),
                    Err(_) => (s, u, vv, -1),
                };
            }
            let f = if full { a.svd() } else { a.thin_svd() };
            match f {
                Ok(f) => {
                    for (i, x) in s.iter_mut().enumerate() {
                        *x = f.S()[i];
                    }
                    copy_into(&mut u, f.U(), r);
                    copy_into(&mut vv, f.V(), c);
                    (s, u, vv, 0)
                }
                Err(_) => (s, u, vv, -1),
            }
        };
        let parts: Vec<_> = (0..m.batch)
            .into_par_iter()
            .map(|b| one(&v[b * r * c..(b + 1) * r * c]))
            .collect();
        let mut out = SvdParts {
            s: T::wrap(parts.iter().flat_map(|p| p.0.iter().copied()).collect()),
            u: T::wrap(parts.iter().flat_map(|p| p.1.iter().copied()).collect()),
            v: T::wrap(parts.iter().flat_map(|p| p.2.iter().copied()).collect()),
            info: CpuStorage::I32(parts.iter().map(|p| p.3).collect()),
        };
        if m.batch == 0 {
            out.info = CpuStorage::I32(vec![]);
        }
        Ok(out)
    })
}

/// What [`svd`] returns: `s`, `u` and `v` (empty without vectors), `info`.
pub(crate) struct SvdParts {
    pub s: CpuStorage,
    pub u: CpuStorage,
    pub v: CpuStorage,
    pub info: CpuStorage,
}

/// The eigenvalues (ascending) of each symmetric `n × n` matrix, read from
/// its lower triangle, the eigenvectors as columns when `vectors` (else
/// empty), and `info`.
pub(crate) fn eigh(
    a: &CpuStorage,
    batch: usize,
    n: usize,
    vectors: bool,
) -> Result<(CpuStorage, CpuStorage, CpuStorage)> {
    let vn = if vectors { n } else { 0 };
    real!("eigh", a, v: T => {
        let one = |a: &[T]| -> (Vec<T>, Vec<T>, i32) {
            let mut w = vec![T::default(); n];
            let mut q = vec![T::default(); n * vn];
            if n == 0 {
                return (w, q, 0);
            }
            // only the lower triangle is read
            let lower_finite = (0..n).all(|j| (j..n).all(|i| a[i + j * n].finite()));
            if !lower_finite {
                w.iter_mut().chain(q.iter_mut()).for_each(|x| *x = T::nan());
                return (w, q, -1);
            }
            let a = MatRef::from_column_major_slice(a, n, n);
            if !vectors {
                return match a.self_adjoint_eigenvalues(Side::Lower) {
                    Ok(ev) => (ev, q, 0),
                    Err(_) => (w, q, -1),
                };
            }
            match a.self_adjoint_eigen(Side::Lower) {
                Ok(f) => {
                    for (i, x) in w.iter_mut().enumerate() {
                        *x = f.S()[i];
                    }
                    copy_into(&mut q, f.U(), n);
                    (w, q, 0)
                }
                Err(_) => (w, q, -1),
            }
        };
        let parts: Vec<_> = (0..batch)
            .into_par_iter()
            .map(|b| one(&v[b * n * n..(b + 1) * n * n]))
            .collect();
        Ok((
            T::wrap(parts.iter().flat_map(|p| p.0.iter().copied()).collect()),
            T::wrap(parts.iter().flat_map(|p| p.1.iter().copied()).collect()),
            CpuStorage::I32(parts.iter().map(|p| p.2).collect()),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::swaps_of;

    #[test]
    fn swaps_replay_the_permutation() {
        let perm = [2usize, 0, 3, 1];
        let ipiv = swaps_of(&perm, 4);
        let mut rows = vec![0usize, 1, 2, 3];
        for (i, &p) in ipiv.iter().enumerate() {
            rows.swap(i, p as usize - 1);
        }
        assert_eq!(rows, perm);
    }
}
