//! Matrix factorizations and solves (LAPACK's primitives): faer on the CPU
//! (`cpu/factor.rs`), cuSOLVER and cuBLAS on CUDA (`cuda/solver.rs`).
//!
//! Every matrix here is dense and **column-major**, as LAPACK and cuSOLVER
//! take them: the front-end passes the row-major buffer of the transposed
//! tensor (`a.mT().contiguous()`) and reads results back as transposed
//! views, so neither backend reorders anything. Results that may fail
//! carry LAPACK's i32 `info` per matrix (0: fine; `k > 0`: the `k`-th pivot
//! is zero or not positive; -1: no convergence or a non-finite input),
//! which the front-end turns into an error, syncing as PyTorch does.

use super::{cpu, gate, mixed, Storage};
use crate::core::error::Result;
use crate::core::DType;

/// A dense batch of column-major `rows × cols` matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mats {
    /// how many matrices
    pub batch: usize,
    /// rows of each
    pub rows: usize,
    /// columns of each
    pub cols: usize,
}

impl Mats {
    /// Elements of the whole batch.
    pub fn numel(&self) -> usize {
        self.batch * self.rows * self.cols
    }
}

/// An SVD's parts: singular values (descending), `U` and `V` as columns
/// (empty storages when vectors were not asked for), and `info`.
pub struct SvdParts {
    /// `batch × min(rows, cols)` singular values
    pub s: Storage,
    /// `rows × rows` (full) or `rows × k` left vectors
    pub u: Storage,
    /// `cols × cols` (full) or `cols × k` right vectors (`V`, not `Vᵀ`)
    pub v: Storage,
    /// LAPACK's info per matrix
    pub info: Storage,
}

impl Storage {
    /// LU with partial pivoting: the packed factors, the 1-based i32 pivots
    /// (`min(rows, cols)` per matrix) and `info` (first zero pivot of `U`).
    pub fn lu_factor(&self, m: Mats) -> Result<(Storage, Storage, Storage)> {
        gate(self, "lu_factor", self.dtype(), m.numel())?;
        match self {
            Storage::Cpu(a) => {
                let (lu, p, i) = cpu::factor::lu_factor(a, m)?;
                Ok((Storage::Cpu(lu), Storage::Cpu(p), Storage::Cpu(i)))
            }
            Storage::Cuda(a) => {
                let (lu, p, i) = a.lu_factor(m)?;
                Ok((Storage::Cuda(lu), Storage::Cuda(p), Storage::Cuda(i)))
            }
        }
    }

    /// Solves `A X = B` (`Aᵀ X = B` when `transpose`) from `self`, the packed
    /// `n × n` LU factors, and their pivots; `b` is `n × nrhs` per matrix.
    #[allow(clippy::too_many_arguments)]
    pub fn lu_solve(
        &self,
        pivots: &Storage,
        b: &Storage,
        batch: usize,
        n: usize,
        nrhs: usize,
        transpose: bool,
    ) -> Result<Storage> {
        gate(self, "lu_solve", b.dtype(), batch * n * nrhs)?;
        match (self, pivots, b) {
            (Storage::Cpu(lu), Storage::Cpu(p), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::factor::lu_solve(
                lu, p, b, batch, n, nrhs, transpose,
            )?)),
            (Storage::Cuda(lu), Storage::Cuda(p), Storage::Cuda(b)) => {
                Ok(Storage::Cuda(lu.lu_solve(p, b, batch, n, nrhs, transpose)?))
            }
            _ => Err(mixed("lu_solve")),
        }
    }

    /// The lower Cholesky factor of each symmetric `n × n` matrix (its
    /// strictly upper part is unspecified) and `info`.
    pub fn cholesky(&self, batch: usize, n: usize) -> Result<(Storage, Storage)> {
        gate(self, "cholesky", self.dtype(), batch * n * n)?;
        match self {
            Storage::Cpu(a) => {
                let (l, i) = cpu::factor::cholesky(a, batch, n)?;
                Ok((Storage::Cpu(l), Storage::Cpu(i)))
            }
            Storage::Cuda(a) => {
                let (l, i) = a.cholesky(batch, n)?;
                Ok((Storage::Cuda(l), Storage::Cuda(i)))
            }
        }
    }

    /// Solves `A X = B` with `self` the triangular `n × n` `A` (its upper or
    /// lower triangle; unit diagonal when `unit`), `b` `n × nrhs`.
    #[allow(clippy::too_many_arguments)]
    pub fn triangular_solve(
        &self,
        b: &Storage,
        batch: usize,
        n: usize,
        nrhs: usize,
        upper: bool,
        unit: bool,
    ) -> Result<Storage> {
        gate(self, "solve_triangular", b.dtype(), batch * n * nrhs)?;
        match (self, b) {
            (Storage::Cpu(a), Storage::Cpu(b)) => Ok(Storage::Cpu(cpu::factor::triangular_solve(
                a, b, batch, n, nrhs, upper, unit,
            )?)),
            (Storage::Cuda(a), Storage::Cuda(b)) => {
                Ok(Storage::Cuda(a.triangular_solve(b, batch, n, nrhs, upper, unit)?))
            }
            _ => Err(mixed("solve_triangular")),
        }
    }

    /// Householder QR: `R` (`rows × cols`; its upper trapezoid is the
    /// factor, the rest unspecified) and `Q` (`rows × rows` when `complete`,
    /// else `rows × min(rows, cols)`).
    pub fn qr(&self, m: Mats, complete: bool) -> Result<(Storage, Storage)> {
        let qc = if complete { m.rows } else { m.rows.min(m.cols) };
        gate(self, "qr", self.dtype(), m.numel() + m.batch * m.rows * qc)?;
        match self {
            Storage::Cpu(a) => {
                let (r, q) = cpu::factor::qr(a, m, complete)?;
                Ok((Storage::Cpu(r), Storage::Cpu(q)))
            }
            Storage::Cuda(a) => {
                let (r, q) = a.qr(m, complete)?;
                Ok((Storage::Cuda(r), Storage::Cuda(q)))
            }
        }
    }

    /// Singular values (descending) and, when `vectors`, `U` and `V`
    /// (square when `full`, else thin).
    pub fn svd(&self, m: Mats, full: bool, vectors: bool) -> Result<SvdParts> {
        let k = m.rows.min(m.cols);
        let (uc, vc) = if full { (m.rows, m.cols) } else { (k, k) };
        let vecs = if vectors {
            m.batch * (m.rows * uc + m.cols * vc)
        } else {
            0
        };
        gate(self, "svd", self.dtype(), m.batch * k + vecs)?;
        match self {
            Storage::Cpu(a) => {
                let p = cpu::factor::svd(a, m, full, vectors)?;
                Ok(SvdParts {
                    s: Storage::Cpu(p.s),
                    u: Storage::Cpu(p.u),
                    v: Storage::Cpu(p.v),
                    info: Storage::Cpu(p.info),
                })
            }
            Storage::Cuda(a) => a.svd(m, full, vectors),
        }
    }

    /// Eigenvalues (ascending) of each symmetric `n × n` matrix (read from
    /// its lower triangle), the eigenvectors as columns when `vectors` (else
    /// an empty storage), and `info`.
    pub fn eigh(&self, batch: usize, n: usize, vectors: bool) -> Result<(Storage, Storage, Storage)> {
        let vn = if vectors { n * n } else { 0 };
        gate(self, "eigh", self.dtype(), batch * (n + vn))?;
        gate(self, "eigh", DType::I32, batch)?;
        match self {
            Storage::Cpu(a) => {
                let (w, v, i) = cpu::factor::eigh(a, batch, n, vectors)?;
                Ok((Storage::Cpu(w), Storage::Cpu(v), Storage::Cpu(i)))
            }
            Storage::Cuda(a) => {
                let (w, v, i) = a.eigh(batch, n, vectors)?;
                Ok((Storage::Cuda(w), Storage::Cuda(v), Storage::Cuda(i)))
            }
        }
    }
}
