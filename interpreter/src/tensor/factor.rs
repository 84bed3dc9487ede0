//! Matrix factorizations as `torch.linalg` defines them: `lu_factor`,
//! `cholesky`, `qr` (reduced, complete, r), `svd` / `svdvals` and `eigh` /
//! `eigvalsh`, over batches of matrices (all dims before the last two).
//! The backends take dense column-major matrices ([`Mats`]): the input goes
//! in as the buffer of its transpose and results come back as transposed
//! views, so no op reorders memory twice. Failures (a zero pivot, a matrix
//! that is not positive-definite, no convergence) are read back from the
//! device and raised as errors, as PyTorch does.
//!
//! Gradients (PyTorch's formulas): `cholesky`, `qr` (complete mode needs
//! rows ≤ columns), `svd` (each of U, S, Vh recorded with its own share of the
//! gradient, which is linear in the three), `eigh` (eigenvalues and
//! eigenvectors likewise). Like PyTorch's, the vector gradients are
//! undefined for repeated eigenvalues or singular values.

use super::autograd::{self, Saved};
use super::Tensor;
use crate::backend::{Mats, Storage};
use crate::core::error::{Error, Result};
use crate::core::shape::numel;
use crate::core::DType;

impl Tensor {
    /// The last two dims swapped (PyTorch's `mT`; `mH` too, as kiln's
    /// tensors are real).
    pub fn mt(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                "mT",
                format!("needs at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        self.transpose(-2, -1)
    }
}

/// Checks a linear-algebra input: f32 or f64, at least 2 dims, square
/// matrices when `square`.
pub(crate) fn check_matrices(op: &'static str, a: &Tensor, square: bool) -> Result<()> {
    if !matches!(a.dtype(), DType::F32 | DType::F64) {
        return Err(Error::UnsupportedDType {
            op,
            dtype: a.dtype(),
            hint: " (linear algebra takes f32 or f64 matrices; convert with to_dtype(\"f32\"))".into(),
        });
    }
    if a.ndim() < 2 {
        return Err(Error::shape(
            op,
            format!(
                "expects a matrix or a batch of matrices (at least 2 dims), got shape {:?}",
                a.shape()
            ),
        ));
    }
    let nd = a.ndim();
    if square && a.shape()[nd - 1] != a.shape()[nd - 2] {
        return Err(Error::shape(
            op,
            format!(
                "expects square matrices, got shape {:?} ({} × {})",
                a.shape(),
                a.shape()[nd - 2],
                a.shape()[nd - 1]
            ),
        ));
    }
    Ok(())
}

/// The batch shape and the matrix size of `a` (at least 2 dims).
pub(crate) fn batch_dims(a: &Tensor) -> (Vec<usize>, usize, usize) {
    let nd = a.ndim();
    (a.shape()[..nd - 2].to_vec(), a.shape()[nd - 2], a.shape()[nd - 1])
}

/// `a` as the backends take it: the dense buffer of its transpose, which
/// holds each matrix column-major.
pub(crate) fn lapack_in(a: &Tensor) -> Result<(Tensor, Mats)> {
    let (batch, rows, cols) = batch_dims(a);
    let t = a.mt()?.dense()?;
    Ok((
        t,
        Mats {
            batch: numel(&batch),
            rows,
            cols,
        },
    ))
}

/// A backend result of column-major `rows × cols` matrices as a tensor of
/// shape `batch + [rows, cols]` (a transposed view of the buffer).
pub(crate) fn lapack_out(
    op: &'static str,
    s: Storage,
    batch: &[usize],
    rows: usize,
    cols: usize,
) -> Result<Tensor> {
    let mut shape = batch.to_vec();
    shape.extend([cols, rows]);
    Tensor::from_storage(op, s, &shape)?.mt()
}

/// Raises the first failure in LAPACK's `info` (one i32 per matrix) as an
/// error: `what(code)` says what went wrong; the batch element is named
/// when there is a batch. Reads the values back (a sync on CUDA).
pub(crate) fn check_info(
    op: &'static str,
    info: Storage,
    a: &Tensor,
    what: impl Fn(i32) -> String,
) -> Result<()> {
    let n = info.len();
    check_info_of(op, &Tensor::from_storage(op, info, &[n])?, a, what)
}

/// [`check_info`] for `info` already a tensor (any shape, one i32 per matrix).
pub(crate) fn check_info_of(
    op: &'static str,
    info: &Tensor,
    a: &Tensor,
    what: impl Fn(i32) -> String,
) -> Result<()> {
    let n = info.numel();
    let codes = info.to_vec::<i32>()?;
    if let Some((i, &code)) = codes.iter().enumerate().find(|(_, c)| **c != 0) {
        let nd = a.ndim();
        let which = if nd > 2 && n > 1 {
            let batch = &a.shape()[..nd - 2];
            format!(" (in the matrix at batch index {:?})", unravel(i, batch))
        } else {
            String::new()
        };
        return Err(Error::invalid(
            op,
            format!("{}{which}; input shape {:?}", what(code), a.shape()),
        ));
    }
    Ok(())
}

/// The multi-index of flat position `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (d, &s) in shape.iter().enumerate().rev() {
        idx[d] = i % s.max(1);
        i /= s.max(1);
    }
    idx
}

/// What a zero pivot means for `op`.
pub(crate) fn singular(code: i32) -> String {
    format!(
        "the input is singular: U[{0},{0}] of its LU factorization is zero",
        code - 1
    )
}

/// An `n × n` identity with `batch` dims, like `a`.
pub(crate) fn identity_like(a: &Tensor, batch: &[usize], n: usize) -> Result<Tensor> {
    let eye = Tensor::eye(n, n, Some(a.dtype()), a.device())?;
    let mut shape: Vec<i64> = batch.iter().map(|&b| b as i64).collect();
    shape.extend([n as i64, n as i64]);
    eye.expand(&shape)
}

impl Tensor {
    /// LU factorization with partial pivoting, unchecked: `[LU, pivots,
    /// info]` (`torch.linalg.lu_factor_ex`; pivots are 1-based int32).
    pub fn lu_factor_ex(&self) -> Result<Vec<Tensor>> {
        const OP: &str = "lu_factor";
        check_matrices(OP, self, false)?;
        let (batch, rows, cols) = batch_dims(self);
        let (buf, mats) = lapack_in(self)?;
        let (lu, piv, info) = buf.storage().lu_factor(mats)?;
        let lu = lapack_out(OP, lu, &batch, rows, cols)?;
        let mut pshape = batch.clone();
        pshape.push(rows.min(cols));
        let piv = Tensor::from_storage(OP, piv, &pshape)?;
        let info = Tensor::from_storage(OP, info, &batch)?;
        Ok(vec![lu, piv, info])
    }

    /// `torch.linalg.lu_factor`: `[LU, pivots]`; a singular input is an
    /// error (use [`lu_factor_ex`](Tensor::lu_factor_ex) to skip the check).
    pub fn lu_factor(&self) -> Result<Vec<Tensor>> {
        const OP: &str = "lu_factor";
        check_matrices(OP, self, false)?;
        let (batch, rows, cols) = batch_dims(self);
        let (buf, mats) = lapack_in(self)?;
        let (lu, piv, info) = buf.storage().lu_factor(mats)?;
        check_info(OP, info, self, |c| {
            format!(
                "U[{0},{0}] is zero, and using it in lu_solve would divide by zero (lu_factor_ex skips this check)",
                c - 1
            )
        })?;
        let lu = lapack_out(OP, lu, &batch, rows, cols)?;
        let mut pshape = batch;
        pshape.push(rows.min(cols));
        Ok(vec![lu, Tensor::from_storage(OP, piv, &pshape)?])
    }

    /// `torch.lu_unpack(LU, pivots)`: `[P, L, U]` with `A = P L U`, from
    /// the packed factors of [`lu_factor`](Tensor::lu_factor). The row
    /// permutation is built from the pivots on the host (they are read
    /// back: a sync on CUDA, small as the pivots are).
    pub fn lu_unpack(&self, pivots: &Tensor) -> Result<Vec<Tensor>> {
        const OP: &str = "lu_unpack";
        check_matrices(OP, self, false)?;
        let (batch, m, n) = batch_dims(self);
        let k = m.min(n);
        let mut pshape = batch.clone();
        pshape.push(k);
        if pivots.shape() != pshape.as_slice() || !matches!(pivots.dtype(), DType::I32 | DType::I64) {
            return Err(Error::shape(
                OP,
                format!(
                    "pivots must be integers of shape {pshape:?} for LU of shape {:?}, got {} {:?}",
                    self.shape(),
                    pivots.dtype(),
                    pivots.shape()
                ),
            ));
        }
        let eye = Tensor::eye(m, k, Some(self.dtype()), self.device())?;
        let l = self.narrow(-1, 0, k as i64)?.tril(-1)?.add(&eye)?;
        let u = self.narrow(-2, 0, k as i64)?.triu(0)?;
        // P[perm[i], i] = 1, perm the rows in the order the swaps leave them
        let piv = pivots.to_dtype(DType::I64)?.to_vec::<i64>()?;
        let count = numel(&batch);
        let mut p = vec![0.0f64; count * m * m];
        for b in 0..count {
            let mut perm: Vec<usize> = (0..m).collect();
            for (i, &q) in piv[b * k..(b + 1) * k].iter().enumerate() {
                let q = usize::try_from(q - 1).ok().filter(|&q| q < m).ok_or_else(|| {
                    Error::invalid(OP, format!("pivot {q} at position {i} is outside 1..={m}"))
                })?;
                perm.swap(i, q);
            }
            for (i, &row) in perm.iter().enumerate() {
                p[b * m * m + row * m + i] = 1.0;
            }
        }
        let mut shape = batch;
        shape.extend([m, m]);
        let p = Tensor::from_host(
            &crate::core::HostValues::Float(p),
            &shape,
            self.dtype(),
            self.device(),
        )?;
        Ok(vec![p, l, u])
    }

    /// `torch.linalg.lu`: `[P, L, U]` with `A = P L U` (partial pivoting).
    pub fn lu(&self) -> Result<Vec<Tensor>> {
        let f = self.lu_factor_ex()?;
        f[0].lu_unpack(&f[1])
    }

    /// `torch.linalg.cholesky`: the lower factor `L` of a symmetric
    /// positive-definite `A = L Lᵀ` (`Lᵀ` when `upper`).
    pub fn cholesky(&self, upper: bool) -> Result<Tensor> {
        self.cholesky_with(upper, true).map(|(l, _)| l)
    }

    /// `torch.linalg.cholesky_ex`: `[L, info]` without the check (`info`
    /// is the order of the first leading minor that is not
    /// positive-definite, 0 when the factorization succeeded).
    pub fn cholesky_ex(&self, upper: bool) -> Result<Vec<Tensor>> {
        let (l, info) = self.cholesky_with(upper, false)?;
        Ok(vec![l, info])
    }

    /// The Cholesky factor and the i32 `info`, raising a failure as an
    /// error when `check`.
    fn cholesky_with(&self, upper: bool, check: bool) -> Result<(Tensor, Tensor)> {
        const OP: &str = "cholesky";
        check_matrices(OP, self, true)?;
        let (batch, n, _) = batch_dims(self);
        let (l, info) = autograd::forward(|| -> Result<(Tensor, Tensor)> {
            let (buf, mats) = lapack_in(self)?;
            let (l, info) = buf.storage().cholesky(mats.batch, n)?;
            let info = Tensor::from_storage(OP, info, &batch)?;
            if check {
                check_info_of(OP, &info, self, |c| {
                    format!(
                        "the input is not positive-definite (the leading minor of order {c} is not positive-definite)"
                    )
                })?;
            }
            Ok((lapack_out(OP, l, &batch, n, n)?.tril(0)?, info))
        })?;
        let l = if autograd::needs_grad(&[self]) {
            let ls = Saved::new(&l);
            autograd::record("cholesky", &[self], l, move |g, _| {
                Ok(vec![Some(cholesky_backward(ls.get("cholesky")?, g)?)])
            })
        } else {
            l
        };
        Ok((if upper { l.mt()? } else { l }, info))
    }

    /// `torch.linalg.qr`: `[Q, R]` with `mode` "reduced" (Q `m × k`, R
    /// `k × n`, `k = min(m, n)`), "complete" (Q `m × m`, R `m × n`) or "r"
    /// (R only; Q is an empty tensor).
    pub fn qr(&self, mode: &str) -> Result<Vec<Tensor>> {
        const OP: &str = "qr";
        check_matrices(OP, self, false)?;
        let complete = match mode {
            "reduced" | "r" => false,
            "complete" => true,
            other => {
                return Err(Error::invalid(
                    OP,
                    format!("mode must be \"reduced\", \"complete\" or \"r\", got \"{other}\""),
                ))
            }
        };
        let (batch, m, n) = batch_dims(self);
        let k = m.min(n);
        let (q, r) = autograd::forward(|| -> Result<(Tensor, Tensor)> {
            let (buf, mats) = lapack_in(self)?;
            let (r, q) = buf.storage().qr(mats, complete)?;
            let r = lapack_out(OP, r, &batch, m, n)?;
            let r = if complete { r } else { r.narrow(-2, 0, k as i64)? };
            let qc = if complete { m } else { k };
            Ok((lapack_out(OP, q, &batch, m, qc)?, r.triu(0)?))
        })?;
        if mode == "r" {
            let empty = Tensor::zeros(&[0], Some(self.dtype()), self.device())?;
            return Ok(vec![empty, record_qr(self, r, q, false, complete)?]);
        }
        let q_out = record_qr(self, q.clone(), r.clone(), true, complete)?;
        let r_out = record_qr(self, r, q, false, complete)?;
        Ok(vec![q_out, r_out])
    }
}

/// Records one output of `qr` (`out` is Q when `is_q`, else R; `other` is
/// the other factor) with its share of the gradient.
fn record_qr(a: &Tensor, out: Tensor, other: Tensor, is_q: bool, complete: bool) -> Result<Tensor> {
    if !autograd::needs_grad(&[a]) {
        return Ok(out);
    }
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    if complete && m > n {
        return Err(Error::invalid(
            "qr",
            format!(
                "the gradient of qr in mode \"complete\" is defined when rows <= columns (Q's extra columns are not determined by A); got shape {:?}",
                a.shape()
            ),
        ));
    }
    let (o, x, xa) = (Saved::new(&out), Saved::new(&other), Saved::new(a));
    Ok(autograd::record("qr", &[a], out, move |g, _| {
        let (out, other) = (o.get("qr")?, x.get("qr")?);
        let (q, r) = if is_q { (out, other) } else { (other, out) };
        let (gq, gr) = if is_q { (Some(g), None) } else { (None, Some(g)) };
        if m >= n {
            return Ok(vec![Some(qr_backward(q, r, gq, gr)?)]);
        }
        // wide: A = [X Y] with X = Q R1 square, Y = Q R2; X's gradient sees
        // Y's part of R through Q
        let y = xa.get("qr")?.narrow(-1, m as i64, (n - m) as i64)?;
        let r1 = r.narrow(-1, 0, m as i64)?;
        let (gx, gy) = match gr {
            Some(gr) => {
                let (gr1, gr2) = (
                    gr.narrow(-1, 0, m as i64)?,
                    gr.narrow(-1, m as i64, (n - m) as i64)?,
                );
                let gq_total = y.matmul(&gr2.mt()?)?;
                (qr_backward(q, &r1, Some(&gq_total), Some(&gr1))?, q.matmul(&gr2)?)
            }
            None => (qr_backward(q, &r1, gq, None)?, y.zeros_like()?),
        };
        Ok(vec![Some(Tensor::cat(&[gx, gy], -1)?)])
    }))
}

/// `gA = (gQ + Q copyutl(gR Rᵀ - Qᵀ gQ)) R⁻ᵀ` for tall `A = QR`, where
/// `copyutl` keeps the upper triangle and mirrors it below.
fn qr_backward(q: &Tensor, r: &Tensor, gq: Option<&Tensor>, gr: Option<&Tensor>) -> Result<Tensor> {
    let mut k = match gr {
        Some(gr) => gr.matmul(&r.mt()?)?,
        None => r.zeros_like()?,
    };
    if let Some(gq) = gq {
        k = k.sub(&q.mt()?.matmul(gq)?)?;
    }
    let sym = k.triu(0)?.add(&k.triu(1)?.mt()?)?;
    let mut b = q.matmul(&sym)?;
    if let Some(gq) = gq {
        b = b.add(gq)?;
    }
    // B R⁻ᵀ = (R⁻¹ Bᵀ)ᵀ
    r.solve_triangular(&b.mt()?, true, true, false)?.mt()
}

/// PyTorch's Cholesky gradient: `Φ = tril(Lᵀ gL)` with its diagonal
/// halved, `S = L⁻ᵀ Φ L⁻¹`, `gA = (S + Sᵀ) / 2`.
fn cholesky_backward(l: &Tensor, g: &Tensor) -> Result<Tensor> {
    let phi = l.mt()?.matmul(&g.tril(0)?)?.tril(0)?;
    let half_diag = phi.diagonal(0, -2, -1)?.mul_scalar(0.5)?.diag_embed(0, -2, -1)?;
    let phi = phi.tril(-1)?.add(&half_diag)?;
    // L⁻ᵀ Φ L⁻¹ = L⁻ᵀ (L⁻ᵀ Φᵀ)ᵀ
    let left = l.mt()?.solve_triangular(&phi, true, true, false)?; // L⁻ᵀ Φ
    let s = l.mt()?.solve_triangular(&left.mt()?, true, true, false)?.mt()?; // (L⁻ᵀ (L⁻ᵀΦ)ᵀ)ᵀ
    s.add(&s.mt()?)?.mul_scalar(0.5)
}

/// The parts of an SVD as tensors.
struct Svd {
    u: Tensor,
    s: Tensor,
    vh: Tensor,
}

impl Tensor {
    /// The SVD without recording: `U`, `S`, `Vh` (empty `U`, `Vh` without
    /// `vectors`).
    fn svd_forward(&self, op: &'static str, full: bool, vectors: bool) -> Result<Svd> {
        check_matrices(op, self, false)?;
        let (batch, m, n) = batch_dims(self);
        let k = m.min(n);
        let (buf, mats) = lapack_in(self)?;
        let parts = buf.storage().svd(mats, full, vectors)?;
        check_info(op, parts.info, self, |_| {
            "the algorithm failed to converge (is the input finite and well-conditioned?)".into()
        })?;
        let mut sshape = batch.clone();
        sshape.push(k);
        let s = Tensor::from_storage(op, parts.s, &sshape)?;
        if !vectors {
            let empty = Tensor::zeros(&[0], Some(self.dtype()), self.device())?;
            return Ok(Svd {
                u: empty.clone(),
                s,
                vh: empty,
            });
        }
        let (uc, vc) = if full { (m, n) } else { (k, k) };
        let u = lapack_out(op, parts.u, &batch, m, uc)?;
        let v = lapack_out(op, parts.v, &batch, n, vc)?;
        Ok(Svd { u, s, vh: v.mt()? })
    }

    /// `torch.linalg.svd`: `[U, S, Vh]` with `A = U diag(S) Vh`, singular
    /// values descending; `full_matrices` gives square `U` and `Vh`.
    pub fn svd(&self, full_matrices: bool) -> Result<Vec<Tensor>> {
        const OP: &str = "svd";
        let f = autograd::forward(|| self.svd_forward(OP, full_matrices, true))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(vec![f.u, f.s, f.vh]);
        }
        let (m, n) = (f.u.shape()[f.u.ndim() - 2], f.vh.shape()[f.vh.ndim() - 1]);
        let k = m.min(n);
        // the gradient sees the thin factors
        let (u, vh) = (f.u.narrow(-1, 0, k as i64)?, f.vh.narrow(-2, 0, k as i64)?);
        let saved = || (Saved::new(&u), Saved::new(&f.s), Saved::new(&vh));
        let mut outs = vec![];
        for (which, out) in [(0usize, f.u.clone()), (1, f.s.clone()), (2, f.vh.clone())] {
            let (us, ss, vs) = saved();
            outs.push(autograd::record(OP, &[self], out, move |g, _| {
                let (u, s, vh) = (us.get(OP)?, ss.get(OP)?, vs.get(OP)?);
                let g = match which {
                    0 => g.narrow(-1, 0, k as i64)?,
                    2 => g.narrow(-2, 0, k as i64)?,
                    _ => g.clone(),
                };
                Ok(vec![Some(svd_backward(u, s, vh, which, &g)?)])
            }));
        }
        Ok(outs)
    }

    /// `torch.svd` (the older form): `[U, S, V]` with `V` not transposed;
    /// thin factors when `some` (the default), and zero-filled `U`, `V`
    /// without `compute_uv`.
    pub fn svd_torch(&self, some: bool, compute_uv: bool) -> Result<Vec<Tensor>> {
        if !compute_uv {
            let s = self.svdvals()?;
            let (batch, m, n) = batch_dims(self);
            let shape = |r: usize, c: usize| {
                let mut s = batch.clone();
                s.extend([r, c]);
                s
            };
            let (uc, vc) = if some { (m.min(n), m.min(n)) } else { (m, n) };
            let u = Tensor::zeros(&shape(m, uc), Some(self.dtype()), self.device())?;
            let v = Tensor::zeros(&shape(n, vc), Some(self.dtype()), self.device())?;
            return Ok(vec![u, s, v]);
        }
        let mut parts = self.svd(!some)?;
        let vh = parts.pop().expect("three parts");
        parts.push(vh.mt()?);
        Ok(parts)
    }

    /// `torch.linalg.svdvals`: the singular values, descending.
    pub fn svdvals(&self) -> Result<Tensor> {
        if autograd::needs_grad(&[self]) {
            return Ok(self.svd(false)?.swap_remove(1));
        }
        Ok(self.svd_forward("svdvals", false, false)?.s)
    }

    /// `torch.linalg.eigh`: `[eigenvalues, eigenvectors]` of symmetric
    /// matrices (ascending eigenvalues, eigenvectors as columns), read from
    /// the lower triangle (`uplo` "L") or the upper one ("U").
    pub fn eigh(&self, uplo: &str) -> Result<Vec<Tensor>> {
        const OP: &str = "eigh";
        let (w, q) = autograd::forward(|| self.eigh_forward(OP, uplo, true))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(vec![w, q]);
        }
        let mut outs = vec![];
        for (values, out) in [(true, w.clone()), (false, q.clone())] {
            let (ws, qs) = (Saved::new(&w), Saved::new(&q));
            outs.push(autograd::record(OP, &[self], out, move |g, _| {
                let (w, q) = (ws.get(OP)?, qs.get(OP)?);
                Ok(vec![Some(eigh_backward(w, q, values, g)?)])
            }));
        }
        Ok(outs)
    }

    /// `torch.linalg.eigvalsh`: the eigenvalues of symmetric matrices, ascending.
    pub fn eigvalsh(&self, uplo: &str) -> Result<Tensor> {
        if autograd::needs_grad(&[self]) {
            return Ok(self.eigh(uplo)?.swap_remove(0));
        }
        Ok(self.eigh_forward("eigvalsh", uplo, false)?.0)
    }

    fn eigh_forward(&self, op: &'static str, uplo: &str, vectors: bool) -> Result<(Tensor, Tensor)> {
        check_matrices(op, self, true)?;
        let a = match uplo {
            "L" | "l" => self.clone(),
            // the upper triangle of A is the lower one of Aᵀ
            "U" | "u" => self.mt()?,
            other => {
                return Err(Error::invalid(
                    op,
                    format!("UPLO must be \"L\" or \"U\", got \"{other}\""),
                ))
            }
        };
        let (batch, n, _) = batch_dims(self);
        let (buf, mats) = lapack_in(&a)?;
        let (w, v, info) = buf.storage().eigh(mats.batch, n, vectors)?;
        check_info(op, info, self, |_| {
            "the algorithm failed to converge (is the input finite?)".into()
        })?;
        let mut wshape = batch.clone();
        wshape.push(n);
        let w = Tensor::from_storage(op, w, &wshape)?;
        let v = if vectors {
            lapack_out(op, v, &batch, n, n)?
        } else {
            Tensor::zeros(&[0], Some(self.dtype()), self.device())?
        };
        Ok((w, v))
    }
}

/// One output's share of the SVD gradient (`which`: 0 U, 1 S, 2 Vh), with
/// thin `u` (`m × k`), `s` (`k`), `vh` (`k × n`).
fn svd_backward(u: &Tensor, s: &Tensor, vh: &Tensor, which: usize, g: &Tensor) -> Result<Tensor> {
    let (m, n) = (u.shape()[u.ndim() - 2], vh.shape()[vh.ndim() - 1]);
    let k = s.shape()[s.ndim() - 1];
    if which == 1 {
        // U diag(gS) Vh
        return u.mul(&g.unsqueeze(-2)?)?.matmul(vh);
    }
    let s_row = s.unsqueeze(-2)?; // S_j along columns
    let s_col = s.unsqueeze(-1)?; // S_i along rows
    let s2 = s.mul(s)?;
    // E_ij = S_j² - S_i², with ones on the diagonal
    let e = s2.unsqueeze(-2)?.sub(&s2.unsqueeze(-1)?)?;
    let eye = Tensor::eye(k, k, Some(s.dtype()), s.device())?;
    let e = e.add(&eye)?;
    let skew = |x: Tensor| -> Result<Tensor> { x.sub(&x.mt()?) };
    if which == 0 {
        let uhgu = skew(u.mt()?.matmul(g)?)?;
        let inner = uhgu.mul(&s_row)?.div(&e)?;
        let mut ga = u.matmul(&inner)?;
        if m > k {
            let gus = g.div(&s_row)?;
            ga = ga.add(&gus.sub(&u.matmul(&u.mt()?.matmul(&gus)?)?)?)?;
        }
        ga.matmul(vh)
    } else {
        let vhgv = skew(vh.matmul(&g.mt()?)?)?;
        let inner = s_col.mul(&vhgv)?.div(&e)?;
        let mut ga = inner.matmul(vh)?;
        if n > k {
            let sgvh = g.div(&s_col)?;
            ga = ga.add(&sgvh.sub(&sgvh.matmul(&vh.mt()?)?.matmul(vh)?)?)?;
        }
        u.matmul(&ga)
    }
}

/// One output's share of the `eigh` gradient: `Q diag(gL) Qᵀ` for the
/// eigenvalues, `Q (F ∘ Qᵀ gQ) Qᵀ` with `F_ij = 1 / (L_j - L_i)` (0 on the
/// diagonal) for the eigenvectors.
fn eigh_backward(w: &Tensor, q: &Tensor, values: bool, g: &Tensor) -> Result<Tensor> {
    let inner = if values {
        g.diag_embed(0, -2, -1)?
    } else {
        let n = w.shape()[w.ndim() - 1];
        let eye = Tensor::eye(n, n, Some(w.dtype()), w.device())?;
        let e = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?.add(&eye)?;
        let off = eye.neg()?.add_scalar(1.0)?;
        q.mt()?.matmul(g)?.div(&e)?.mul(&off)?
    };
    q.matmul(&inner)?.matmul(&q.mt()?)
}
