//! Solves and the functions of a matrix built on the factorizations of
//! `factor.rs`: `inv`, `det`, `slogdet`, `logdet`, `solve` (left or
//! right, matrix or vector right-hand sides, broadcast batches),
//! `solve_triangular` / `triangular_solve`, `cholesky_solve`,
//! `cholesky_inverse`, `lu_solve`, `lstsq`, `pinv`, `matrix_rank`,
//! `matrix_power`, `cond` and `multi_dot`, as `torch.linalg` defines them.
//!
//! Gradients: `inv`, `slogdet`, `solve` and `solve_triangular` by
//! PyTorch's formulas, `det` through the SVD (so it holds for singular
//! matrices too); the rest through the ops they are made of.

use super::autograd::{self, functions::sum_to, Saved};
use super::factor::{batch_dims, check_info, check_matrices, identity_like, lapack_in, lapack_out, singular};
use super::Tensor;
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::shape::broadcast_shapes;
use crate::core::{DType, Scalar};

/// Broadcasts the batch dims of `a` (`… × n × n`) and `b` (`… × n × k`).
fn broadcast_batches(op: &'static str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Vec<usize>)> {
    let (ab, n, _) = batch_dims(a);
    let (bb, rows, k) = batch_dims(b);
    if rows != n {
        return Err(Error::shape(
            op,
            format!(
                "the right-hand side has {rows} rows but the matrix is {n} × {n} (shapes {:?} and {:?})",
                a.shape(),
                b.shape()
            ),
        ));
    }
    let batch = broadcast_shapes(op, &ab, &bb)?;
    let full = |b: &[usize], r: usize, c: usize| -> Vec<i64> {
        b.iter().map(|&x| x as i64).chain([r as i64, c as i64]).collect()
    };
    Ok((
        a.expand(&full(&batch, n, n))?,
        b.expand(&full(&batch, n, k))?,
        batch,
    ))
}

/// Whether `b` is a (batch of) vector right-hand side(s) for `a`, as
/// `torch.linalg.solve` decides: 1-D, or one dim less than `a` with `a`'s
/// leading shape.
fn is_vector_rhs(a: &Tensor, b: &Tensor) -> bool {
    b.ndim() == 1 || (b.ndim() + 1 == a.ndim() && b.shape() == &a.shape()[..a.ndim() - 1])
}

/// Checks that two operands share dtype and device.
fn same_kind(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    a.same_device(op, b)?;
    if a.dtype() != b.dtype() {
        return Err(Error::invalid(
            op,
            format!(
                "expects operands of one dtype, got {} and {} (shapes {:?} and {:?})",
                a.dtype(),
                b.dtype(),
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

impl Tensor {
    /// `A⁻¹ B` for square `A` (`self`) and matrices `B` of broadcast batch
    /// dims, through LU; singular `A` is an error. No recording.
    fn lu_solve_forward(&self, op: &'static str, b: &Tensor, transpose: bool) -> Result<Tensor> {
        let (a, b, batch) = broadcast_batches(op, self, b)?;
        let (_, n, k) = batch_dims(&b);
        let (abuf, mats) = lapack_in(&a)?;
        let (lu, piv, info) = abuf.storage().lu_factor(mats)?;
        check_info(op, info, &a, singular)?;
        let (bbuf, _) = lapack_in(&b)?;
        let x = lu.lu_solve(&piv, &bbuf.storage(), mats.batch, n, k, transpose)?;
        lapack_out(op, x, &batch, n, k)
    }

    /// `torch.linalg.inv`: the inverse of square matrices (singular ones are an error).
    pub fn inv(&self) -> Result<Tensor> {
        const OP: &str = "inv";
        check_matrices(OP, self, true)?;
        let (batch, n, _) = batch_dims(self);
        let y = autograd::forward(|| self.lu_solve_forward(OP, &identity_like(self, &batch, n)?, false))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(y);
        }
        let ys = Saved::new(&y);
        Ok(autograd::record(OP, &[self], y, move |g, _| {
            // gA = -Y^T g Y^T
            let yt = ys.get(OP)?.mt()?;
            Ok(vec![Some(yt.matmul(g)?.matmul(&yt)?.neg()?)])
        }))
    }

    /// `torch.linalg.inv_ex`: `[inverse, info]` without the singularity
    /// check (`info` the first zero pivot, 1-based; the inverse is then
    /// not finite). No gradient.
    pub fn inv_ex(&self) -> Result<Vec<Tensor>> {
        const OP: &str = "inv";
        check_matrices(OP, self, true)?;
        autograd::forward(|| {
            let (batch, n, _) = batch_dims(self);
            let (abuf, mats) = lapack_in(self)?;
            let (lu, piv, info) = abuf.storage().lu_factor(mats)?;
            let (bbuf, _) = lapack_in(&identity_like(self, &batch, n)?)?;
            let x = lu.lu_solve(&piv, &bbuf.storage(), mats.batch, n, n, false)?;
            Ok(vec![
                lapack_out(OP, x, &batch, n, n)?,
                Tensor::from_storage(OP, info, &batch)?,
            ])
        })
    }

    /// The LU diagonal's product parts: `(diag(U), sign of the row order)`.
    fn lu_diag(&self, op: &'static str) -> Result<(Tensor, Tensor)> {
        check_matrices(op, self, true)?;
        let (batch, n, _) = batch_dims(self);
        let (abuf, mats) = lapack_in(self)?;
        let (lu, piv, _info) = abuf.storage().lu_factor(mats)?;
        let lu = lapack_out(op, lu, &batch, n, n)?;
        let mut pshape = batch.clone();
        pshape.push(n);
        let piv = Tensor::from_storage(op, piv, &pshape)?;
        // each pivot that is not its own row is one swap
        let rows = Tensor::arange(
            Scalar::Int(1),
            Scalar::Int(n as i64 + 1),
            Scalar::Int(1),
            Some(DType::I32),
            self.device(),
        )?;
        let swaps =
            piv.compare(CmpOp::Ne, &rows)?
                .to_dtype(DType::I64)?
                .reduce(ReduceOp::Sum, Some(&[-1]), false)?;
        let parity = swaps.remainder_scalar(2)?.to_dtype(self.dtype())?;
        let sign = parity.mul_scalar(-2.0)?.add_scalar(1.0)?;
        Ok((lu.diagonal(0, -2, -1)?, sign))
    }

    /// `torch.linalg.det`: the determinant of square matrices.
    pub fn det(&self) -> Result<Tensor> {
        const OP: &str = "det";
        let d = autograd::forward(|| -> Result<Tensor> {
            let (diag, sign) = self.lu_diag(OP)?;
            diag.reduce(ReduceOp::Prod, Some(&[-1]), false)?.mul(&sign)
        })?;
        if !autograd::needs_grad(&[self]) {
            return Ok(d);
        }
        let xs = Saved::new(self);
        Ok(autograd::record(OP, &[self], d, move |g, _| {
            Ok(vec![Some(det_backward(xs.get(OP)?, g)?)])
        }))
    }

    /// `torch.linalg.slogdet`: `[sign, logabsdet]` of the determinant.
    pub fn slogdet(&self) -> Result<Vec<Tensor>> {
        const OP: &str = "slogdet";
        let (sign, logabs) = autograd::forward(|| -> Result<(Tensor, Tensor)> {
            let (diag, perm_sign) = self.lu_diag(OP)?;
            let sign = diag
                .sign()?
                .reduce(ReduceOp::Prod, Some(&[-1]), false)?
                .mul(&perm_sign)?;
            let logabs = diag.abs()?.log()?.reduce(ReduceOp::Sum, Some(&[-1]), false)?;
            Ok((sign, logabs))
        })?;
        if !autograd::needs_grad(&[self]) {
            return Ok(vec![sign, logabs]);
        }
        let xs = Saved::new(self);
        let logabs = autograd::record(OP, &[self], logabs, move |g, _| {
            // gA = g A^-T
            let inv_t = inverse_unchecked(xs.get(OP)?)?.mt()?;
            Ok(vec![Some(inv_t.mul(&g.unsqueeze(-1)?.unsqueeze(-1)?)?)])
        });
        Ok(vec![sign, logabs])
    }

    /// `torch.logdet`: `log(det(A))` (NaN for a negative determinant, -inf for zero).
    pub fn logdet(&self) -> Result<Tensor> {
        let parts = self.slogdet()?;
        parts[1].add(&parts[0].log()?)
    }

    /// `torch.linalg.solve`: `X` with `A X = B` (`X A = B` unless `left`);
    /// `B` a matrix or, as PyTorch decides, a vector (batches broadcast).
    pub fn solve(&self, b: &Tensor, left: bool) -> Result<Tensor> {
        const OP: &str = "solve";
        check_matrices(OP, self, true)?;
        same_kind(OP, self, b)?;
        if is_vector_rhs(self, b) {
            return self.solve(&b.unsqueeze(-1)?, left)?.squeeze(Some(&[-1]));
        }
        if b.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!("expects B of at least 1 dim, got shape {:?}", b.shape()),
            ));
        }
        if !left {
            // X A = B  <=>  Aᵀ Xᵀ = Bᵀ
            return self.mt()?.solve(&b.mt()?, true)?.mt();
        }
        let x = autograd::forward(|| self.lu_solve_forward(OP, b, false))?;
        if !autograd::needs_grad(&[self, b]) {
            return Ok(x);
        }
        // gB = A^-T g
        let solve_t = |a: &Tensor, g: &Tensor| autograd::forward(|| a.lu_solve_forward(OP, g, true));
        Ok(record_solve(OP, self, b, x, solve_t, Ok))
    }

    /// `torch.linalg.solve_triangular`: `X` with `A X = B` (`X A = B`
    /// unless `left`) for triangular `A` (`self`; its `upper` or lower
    /// triangle, a unit diagonal when `unitriangular`).
    pub fn solve_triangular(
        &self,
        b: &Tensor,
        upper: bool,
        left: bool,
        unitriangular: bool,
    ) -> Result<Tensor> {
        const OP: &str = "solve_triangular";
        check_matrices(OP, self, true)?;
        same_kind(OP, self, b)?;
        if b.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!("expects B of at least 2 dims, got shape {:?}", b.shape()),
            ));
        }
        if !left {
            return self
                .mt()?
                .solve_triangular(&b.mt()?, !upper, true, unitriangular)?
                .mt();
        }
        let x = autograd::forward(|| -> Result<Tensor> {
            let (a, b, batch) = broadcast_batches(OP, self, b)?;
            let (_, n, k) = batch_dims(&b);
            let (abuf, mats) = lapack_in(&a)?;
            let (bbuf, _) = lapack_in(&b)?;
            let x =
                abuf.storage()
                    .triangular_solve(&bbuf.storage(), mats.batch, n, k, upper, unitriangular)?;
            lapack_out(OP, x, &batch, n, k)
        })?;
        if !autograd::needs_grad(&[self, b]) {
            return Ok(x);
        }
        // gB = A^-T g (Aᵀ has the other triangle); gA keeps A's triangle
        let solve_t = move |a: &Tensor, g: &Tensor| a.mt()?.solve_triangular(g, !upper, true, unitriangular);
        let triangle = move |full: Tensor| match (upper, unitriangular) {
            (true, false) => full.triu(0),
            (true, true) => full.triu(1),
            (false, false) => full.tril(0),
            (false, true) => full.tril(-1),
        };
        Ok(record_solve(OP, self, b, x, solve_t, triangle))
    }

    /// `torch.triangular_solve(b, A, upper=True, transpose=False,
    /// unitriangular=False)`: `[X, A]` with `op(A) X = b` (`self` is `b`).
    pub fn triangular_solve(
        &self,
        a: &Tensor,
        upper: bool,
        transpose: bool,
        unitriangular: bool,
    ) -> Result<Vec<Tensor>> {
        let x = if transpose {
            a.mt()?.solve_triangular(self, !upper, true, unitriangular)?
        } else {
            a.solve_triangular(self, upper, true, unitriangular)?
        };
        Ok(vec![x, a.clone_data()?])
    }

    /// `torch.cholesky_solve(B, L, upper=False)`: `X` with `L Lᵀ X = B`
    /// (`self` is `B`; `Uᵀ U` when `upper`).
    pub fn cholesky_solve(&self, l: &Tensor, upper: bool) -> Result<Tensor> {
        const OP: &str = "cholesky_solve";
        check_matrices(OP, l, true)?;
        check_matrices(OP, self, false)?;
        let lower = if upper { l.mt()? } else { l.clone() };
        let y = lower.solve_triangular(self, false, true, false)?;
        lower.mt()?.solve_triangular(&y, true, true, false)
    }

    /// `torch.cholesky_inverse(L, upper=False)`: `(L Lᵀ)⁻¹` from the factor.
    pub fn cholesky_inverse(&self, upper: bool) -> Result<Tensor> {
        check_matrices("cholesky_inverse", self, true)?;
        let (batch, n, _) = batch_dims(self);
        identity_like(self, &batch, n)?.cholesky_solve(self, upper)
    }

    /// `torch.linalg.lu_solve(LU, pivots, B, left=True, adjoint=False)`
    /// with the factors of [`lu_factor`](Tensor::lu_factor) (`self` is LU).
    pub fn lu_solve(&self, pivots: &Tensor, b: &Tensor, left: bool, adjoint: bool) -> Result<Tensor> {
        const OP: &str = "lu_solve";
        check_matrices(OP, self, true)?;
        same_kind(OP, self, b)?;
        if pivots.dtype() != DType::I32 && pivots.dtype() != DType::I64 {
            return Err(Error::invalid(
                OP,
                format!("pivots must be integers, got {}", pivots.dtype()),
            ));
        }
        if b.ndim() < 2 {
            return Err(Error::shape(
                OP,
                format!("expects B of at least 2 dims, got shape {:?}", b.shape()),
            ));
        }
        if !left {
            // X A = B  <=>  Aᵀ Xᵀ = Bᵀ
            return self.lu_solve(pivots, &b.mt()?, true, !adjoint)?.mt();
        }
        let (batch, n, _) = batch_dims(self);
        let mut pshape = batch.clone();
        pshape.push(n);
        if pivots.shape() != pshape.as_slice() {
            return Err(Error::shape(
                OP,
                format!(
                    "pivots of shape {:?} do not match LU of shape {:?}",
                    pivots.shape(),
                    self.shape()
                ),
            ));
        }
        let (lu, b, bb) = broadcast_batches(OP, self, b)?;
        let mut full: Vec<i64> = bb.iter().map(|&x| x as i64).collect();
        full.push(n as i64);
        let piv = pivots.to_dtype(DType::I32)?.expand(&full)?.dense()?;
        let (_, _, k) = batch_dims(&b);
        let (lbuf, mats) = lapack_in(&lu)?;
        let (bbuf, _) = lapack_in(&b)?;
        let x = lbuf
            .storage()
            .lu_solve(&piv.storage(), &bbuf.storage(), mats.batch, n, k, adjoint)?;
        lapack_out(OP, x, &bb, n, k)
    }

    /// The singular values with the cut-off `max(atol, rtol · σ_max)` of
    /// `torch.linalg.pinv` / `matrix_rank` (rtol defaults to `eps · max(m, n)`
    /// unless only `atol` is given).
    fn rank_tolerance(&self, s: &Tensor, atol: Option<f64>, rtol: Option<f64>) -> Result<Tensor> {
        let (_, m, n) = batch_dims(self);
        let eps = if self.dtype() == DType::F64 {
            f64::EPSILON
        } else {
            f32::EPSILON as f64
        };
        let rtol = match (atol, rtol) {
            (_, Some(r)) => r,
            (Some(a), None) if a > 0.0 => 0.0,
            _ => eps * m.max(n) as f64,
        };
        // the largest value of each row (0 for an empty row)
        let smax = if s.shape()[s.ndim() - 1] == 0 {
            s.reduce(ReduceOp::Sum, Some(&[-1]), true)?
        } else {
            s.amax(&[-1], true)?
        };
        smax.mul_scalar(rtol)?.maximum_scalar(atol.unwrap_or(0.0))
    }

    /// `torch.linalg.pinv`: the pseudo-inverse through the SVD (`hermitian`:
    /// through `eigh`), dropping singular values below the tolerance.
    pub fn pinv(&self, atol: Option<f64>, rtol: Option<f64>, hermitian: bool) -> Result<Tensor> {
        const OP: &str = "pinv";
        check_matrices(OP, self, hermitian)?;
        if hermitian {
            let parts = self.eigh("L")?;
            let (w, q) = (&parts[0], &parts[1]);
            let absw = w.abs()?;
            let tol = self.rank_tolerance(&absw, atol, rtol)?;
            let keep = absw.compare(CmpOp::Gt, &tol)?;
            let winv = Tensor::where_cond(&keep, &w.reciprocal()?, &w.zeros_like()?)?;
            return q.mul(&winv.unsqueeze(-2)?)?.matmul(&q.mt()?);
        }
        let parts = self.svd(false)?;
        let (u, s, vh) = (&parts[0], &parts[1], &parts[2]);
        let tol = self.rank_tolerance(s, atol, rtol)?;
        let keep = s.compare(CmpOp::Gt, &tol)?;
        let sinv = Tensor::where_cond(&keep, &s.reciprocal()?, &s.zeros_like()?)?;
        vh.mt()?.mul(&sinv.unsqueeze(-2)?)?.matmul(&u.mt()?)
    }

    /// `torch.linalg.matrix_rank`: the number of singular values (absolute
    /// eigenvalues when `hermitian`) above the tolerance, as i64.
    pub fn matrix_rank(&self, atol: Option<f64>, rtol: Option<f64>, hermitian: bool) -> Result<Tensor> {
        const OP: &str = "matrix_rank";
        check_matrices(OP, self, hermitian)?;
        let s = if hermitian {
            self.eigvalsh("L")?.abs()?
        } else {
            self.svdvals()?
        };
        let tol = self.rank_tolerance(&s, atol, rtol)?;
        s.compare(CmpOp::Gt, &tol)?
            .to_dtype(DType::I64)?
            .reduce(ReduceOp::Sum, Some(&[-1]), false)
    }

    /// `torch.linalg.matrix_power`: `A^n` by repeated squaring (`n < 0`:
    /// of the inverse; `n = 0`: the identity). Integer matrices for `n ≥ 0`.
    pub fn matrix_power(&self, n: i64) -> Result<Tensor> {
        const OP: &str = "matrix_power";
        if self.ndim() < 2 || self.shape()[self.ndim() - 1] != self.shape()[self.ndim() - 2] {
            return Err(Error::shape(
                OP,
                format!(
                    "expects square matrices (at least 2 dims), got shape {:?}",
                    self.shape()
                ),
            ));
        }
        let (batch, k, _) = batch_dims(self);
        if n == 0 {
            return identity_like(self, &batch, k)?.contiguous();
        }
        let base = if n < 0 { self.inv()? } else { self.clone() };
        let mut e = n.unsigned_abs();
        let mut result: Option<Tensor> = None;
        let mut sq = base;
        loop {
            if e & 1 == 1 {
                result = Some(match result {
                    Some(r) => r.matmul(&sq)?,
                    None => sq.clone(),
                });
            }
            e >>= 1;
            if e == 0 {
                break;
            }
            sq = sq.matmul(&sq)?;
        }
        let r = result.expect("n != 0");
        if r.shares_storage(self) {
            r.clone_data()
        } else {
            Ok(r)
        }
    }

    /// `torch.linalg.cond` for `p` None/2 (σ_max / σ_min), -2 (the
    /// reverse), or any `matrix_norm` order (`‖A‖ ‖A⁻¹‖`).
    pub fn cond(&self, p: Option<super::statistics::NormOrd>) -> Result<Tensor> {
        use super::statistics::NormOrd;
        const OP: &str = "cond";
        check_matrices(
            OP,
            self,
            !matches!(p, None | Some(NormOrd::P(2.0)) | Some(NormOrd::P(-2.0))),
        )?;
        if self.numel() == 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "the condition number needs non-empty matrices, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        match p {
            None | Some(NormOrd::P(2.0)) | Some(NormOrd::P(-2.0)) => {
                let s = self.svdvals()?;
                let k = s.shape()[s.ndim() - 1] as i64;
                let (hi, lo) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k - 1, 1)?);
                let r = if p == Some(NormOrd::P(-2.0)) {
                    lo.div(&hi)?
                } else {
                    hi.div(&lo)?
                };
                r.squeeze(Some(&[-1]))
            }
            Some(ord) => self
                .matrix_norm(ord, false)?
                .mul(&self.inv()?.matrix_norm(ord, false)?),
        }
    }

    /// `torch.linalg.lstsq(A, B, rcond=None, driver=None)`: `[solution,
    /// residuals, rank, singular_values]`, the minimum-norm least-squares
    /// solution through the SVD. Residuals (`‖A X − B‖²` per column) when
    /// `m > n` and every matrix has full rank, else empty; singular values
    /// for the "gelsd" and "gelss" drivers, else empty (as PyTorch).
    pub fn lstsq(&self, b: &Tensor, rcond: Option<f64>, driver: Option<&str>) -> Result<Vec<Tensor>> {
        const OP: &str = "lstsq";
        check_matrices(OP, self, false)?;
        same_kind(OP, self, b)?;
        let with_sv = match driver {
            None | Some("gelsy") | Some("gels") => false,
            Some("gelsd") | Some("gelss") => true,
            Some(other) => {
                return Err(Error::invalid(
                    OP,
                    format!("driver must be one of gels, gelsy, gelsd, gelss, got \"{other}\""),
                ))
            }
        };
        let vector = b.ndim() + 1 == self.ndim();
        let bm = if vector { b.unsqueeze(-1)? } else { b.clone() };
        let (_, m, n) = batch_dims(self);
        if bm.ndim() < 2 || bm.shape()[bm.ndim() - 2] != m {
            return Err(Error::shape(
                OP,
                format!(
                    "A of shape {:?} and B of shape {:?} do not have the same number of rows",
                    self.shape(),
                    b.shape()
                ),
            ));
        }
        let parts = self.svd(false)?;
        let (u, s, vh) = (&parts[0], &parts[1], &parts[2]);
        let tol = self.rank_tolerance(s, None, rcond)?;
        let keep = s.compare(CmpOp::Gt, &tol)?;
        let sinv = Tensor::where_cond(&keep, &s.reciprocal()?, &s.zeros_like()?)?;
        let x = vh
            .mt()?
            .mul(&sinv.unsqueeze(-2)?)?
            .matmul(&u.mt()?.matmul(&bm)?)?;
        let rank = keep
            .to_dtype(DType::I64)?
            .reduce(ReduceOp::Sum, Some(&[-1]), false)?;
        let empty = Tensor::zeros(&[0], Some(self.dtype()), self.device())?;
        // (a sync, as PyTorch's: whether residuals exist depends on the ranks)
        let full_rank = m > n && rank.to_vec::<i64>()?.iter().all(|&r| r == n as i64);
        let residuals = if full_rank {
            let r = self.matmul(&x)?.sub(&bm)?;
            let r2 = r.mul(&r)?.reduce(ReduceOp::Sum, Some(&[-2]), false)?;
            if vector {
                r2.squeeze(Some(&[-1]))?
            } else {
                r2
            }
        } else {
            empty.clone()
        };
        let x = if vector { x.squeeze(Some(&[-1]))? } else { x };
        let sv = if with_sv { s.clone() } else { empty };
        Ok(vec![x, residuals, rank, sv])
    }

    /// `torch.linalg.multi_dot`: the product of a chain of matrices (the
    /// first may be 1-D, a row vector; the last 1-D, a column vector).
    pub fn multi_dot(tensors: &[Tensor]) -> Result<Tensor> {
        const OP: &str = "multi_dot";
        if tensors.len() < 2 {
            return Err(Error::invalid(
                OP,
                format!("expects at least 2 tensors, got {}", tensors.len()),
            ));
        }
        for (i, t) in tensors.iter().enumerate() {
            let edge = i == 0 || i + 1 == tensors.len();
            if t.ndim() != 2 && !(edge && t.ndim() == 1) {
                return Err(Error::shape(
                    OP,
                    format!(
                        "tensor {i} must be 2-D (the first and last may be 1-D), got shape {:?}",
                        t.shape()
                    ),
                ));
            }
        }
        let mut acc = tensors[0].clone();
        for t in &tensors[1..] {
            acc = acc.matmul(t)?;
        }
        Ok(acc)
    }
}

/// Records `x = A⁻¹ B` (`op` a solve of `a` and `b`): `gB = A⁻ᵀ g` by
/// `solve_t(A, g)`, `gA = -gB Xᵀ` kept to `a`'s structure by `keep`, each
/// summed back over broadcast batch dims.
fn record_solve(
    op: &'static str,
    a: &Tensor,
    b: &Tensor,
    x: Tensor,
    solve_t: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + 'static,
    keep: impl Fn(Tensor) -> Result<Tensor> + Send + 'static,
) -> Tensor {
    let (as_, xs) = (Saved::new(a), Saved::new(&x));
    let (ashape, bshape) = (a.shape().to_vec(), b.shape().to_vec());
    autograd::record(op, &[a, b], x, move |g, needs| {
        let (a, x) = (as_.get(op)?, xs.get(op)?);
        let gb = solve_t(a, g)?;
        let ga = if needs[0] {
            Some(sum_to(&keep(gb.matmul(&x.mt()?)?.neg()?)?, &ashape)?)
        } else {
            None
        };
        let gb = if needs[1] {
            Some(sum_to(&gb, &bshape)?)
        } else {
            None
        };
        Ok(vec![ga, gb])
    })
}

/// The determinant's gradient, `g · adj(A)ᵀ`, through the SVD so that it
/// holds for singular matrices too: with `A = U S Vh`,
/// `adj(A)ᵀ = det(U) det(Vh) · U diag(∏_{j≠i} s_j) Vh`, the products of
/// all singular values but one taken from both ends (exact with zeros).
fn det_backward(a: &Tensor, g: &Tensor) -> Result<Tensor> {
    autograd::forward(|| -> Result<Tensor> {
        let f = a.svd(false)?;
        let (u, s, vh) = (&f[0], &f[1], &f[2]);
        let n = s.shape()[s.ndim() - 1] as i64;
        if n == 0 {
            return a.zeros_like();
        }
        let one = s
            .narrow(-1, 0, 1)?
            .constant(1.0)?
            .broadcast_to(s.narrow(-1, 0, 1)?.shape())?;
        let before = Tensor::cat(&[one.clone(), s.cumprod(-1, None)?.narrow(-1, 0, n - 1)?], -1)?;
        let from_end = s.flip(&[-1])?.cumprod(-1, None)?.flip(&[-1])?;
        let after = Tensor::cat(&[from_end.narrow(-1, 1, n - 1)?, one], -1)?;
        let others = before.mul(&after)?;
        // det(U) det(Vh) is ±1: the sign of each orthogonal factor's LU
        let det_sign = |m: &Tensor| -> Result<Tensor> {
            let (diag, rows) = m.lu_diag("det")?;
            diag.sign()?
                .reduce(ReduceOp::Prod, Some(&[-1]), false)?
                .mul(&rows)
        };
        let sign = det_sign(u)?.mul(&det_sign(vh)?)?;
        let scale = g.mul(&sign)?.unsqueeze(-1)?.unsqueeze(-1)?;
        u.mul(&others.unsqueeze(-2)?)?.matmul(vh)?.mul(&scale)
    })
}

/// `A⁻¹` without the singularity check (NaN or inf for singular input),
/// for gradients.
fn inverse_unchecked(a: &Tensor) -> Result<Tensor> {
    autograd::forward(|| -> Result<Tensor> {
        let (batch, n, _) = batch_dims(a);
        let (abuf, mats) = lapack_in(a)?;
        let (lu, piv, _info) = abuf.storage().lu_factor(mats)?;
        let eye = identity_like(a, &batch, n)?;
        let (bbuf, _) = lapack_in(&eye)?;
        let x = lu.lu_solve(&piv, &bbuf.storage(), mats.batch, n, n, false)?;
        lapack_out("inv", x, &batch, n, n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{Device, HostValues};

    fn t(v: &[f64], shape: &[usize]) -> Tensor {
        Tensor::from_host(&HostValues::Float(v.to_vec()), shape, DType::F64, Device::Cpu).unwrap()
    }

    #[test]
    fn solve_and_inverse_agree_with_hand_values() {
        let a = t(&[4.0, 3.0, 6.0, 3.0], &[2, 2]);
        let inv = a.inv().unwrap().to_vec::<f64>().unwrap();
        let want = [-0.5, 0.5, 1.0, -2.0 / 3.0];
        for (g, w) in inv.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{inv:?}");
        }
        assert!((a.det().unwrap().item().unwrap().to_f64() + 6.0).abs() < 1e-12);
        let b = t(&[1.0, 2.0], &[2]);
        let x = a.solve(&b, true).unwrap().to_vec::<f64>().unwrap();
        assert!(
            (4.0 * x[0] + 3.0 * x[1] - 1.0).abs() < 1e-12 && (6.0 * x[0] + 3.0 * x[1] - 2.0).abs() < 1e-12
        );
    }

    #[test]
    fn empty_matrices_give_empty_results_or_clear_errors() {
        for shape in [&[0usize, 0][..], &[2, 0, 0], &[0, 3], &[3, 0], &[0, 2, 2]] {
            let a = Tensor::zeros(shape, Some(DType::F64), Device::Cpu).unwrap();
            let square = shape[shape.len() - 1] == shape[shape.len() - 2];
            // every op returns or fails with its own name; none panics
            let results: Vec<(&str, Result<Vec<Tensor>>)> = vec![
                ("inv", a.inv().map(|t| vec![t])),
                ("det", a.det().map(|t| vec![t])),
                ("slogdet", a.slogdet()),
                ("cholesky", a.cholesky(false).map(|t| vec![t])),
                ("qr", a.qr("complete")),
                ("svd", a.svd(true)),
                ("eigh", a.eigh("L")),
                ("pinv", a.pinv(None, None, false).map(|t| vec![t])),
                ("matrix_rank", a.matrix_rank(None, None, false).map(|t| vec![t])),
                ("lstsq", a.lstsq(&a, None, None)),
                ("cond", a.cond(None).map(|t| vec![t])),
            ];
            for (op, r) in results {
                if let Err(e) = r {
                    let e = e.to_string();
                    assert!(e.starts_with(op), "{op} on {shape:?}: {e}");
                    assert!(
                        !square || op == "cond",
                        "{op} of square empty matrices {shape:?} failed: {e}"
                    );
                }
            }
        }
        // the determinant of an empty matrix is 1, its inverse empty
        let a = Tensor::zeros(&[2, 0, 0], Some(DType::F64), Device::Cpu).unwrap();
        assert_eq!(a.det().unwrap().to_vec::<f64>().unwrap(), vec![1.0, 1.0]);
        assert_eq!(a.inv().unwrap().shape(), &[2, 0, 0]);
    }

    #[test]
    fn singular_input_is_an_error() {
        let a = t(&[1.0, 2.0, 2.0, 4.0], &[2, 2]);
        let e = a.inv().unwrap_err().to_string();
        assert!(e.contains("inv") && e.contains("singular"), "{e}");
        assert_eq!(a.det().unwrap().item().unwrap().to_f64(), 0.0);
    }
}
