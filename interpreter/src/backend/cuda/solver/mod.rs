//! Matrix factorizations on the GPU through cuSOLVER (LU `getrf`/`getrs`,
//! Cholesky `potrf`, QR `geqrf`/`orgqr`, SVD by Jacobi `gesvdj`, symmetric
//! eigendecomposition `syevd`) and cuBLAS's triangular solve `trsm`, all on
//! the calling thread's stream with workspaces from the caching allocator.
//! Matrices are dense column-major batches ([`Mats`]); batches of small
//! matrices go through the batched routines (`getrfBatched`,
//! `getrsBatched`, `potrfBatched`, `trsmBatched`, `gesvdjBatched`: one call
//! for all), the rest one call per matrix. cuSOLVER is loaded on first use,
//! so a machine without it runs everything else and a factorization gives a
//! clear error. The typed entry points (one implementation per float type)
//! are in `lapack.rs`.

use super::runtime::{cuda_error, CudaRuntime};
use super::CudaStorage;
use crate::backend::factor::{Mats, SvdParts};
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::{DType, Layout};
use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys as sol;
use cudarc::driver::sys::CUstream;
use std::ffi::c_int;

mod lapack;
use lapack::Lapack;

/// The cuSOLVER dense handle, created on the first factorization and
/// bound to the stream it last served.
pub(crate) struct SolverHandle {
    handle: Option<sol::cusolverDnHandle_t>,
    bound: CUstream,
}

// SAFETY: a cuSOLVER handle may be used from any thread as long as calls
// are not concurrent; it is only reached through the runtime's mutex.
unsafe impl Send for SolverHandle {}

impl SolverHandle {
    pub(crate) fn new() -> SolverHandle {
        SolverHandle {
            handle: None,
            bound: std::ptr::null_mut(),
        }
    }

    /// The handle, bound to `stream`.
    fn on(&mut self, stream: CUstream) -> Result<sol::cusolverDnHandle_t> {
        let handle = match self.handle {
            Some(h) => h,
            None => {
                // cudarc panics when it cannot load the library
                let h = std::panic::catch_unwind(cudarc::cusolver::result::dn_create)
                    .map_err(|_| Error::DeviceUnavailable {
                        device: "cuda:0".into(),
                        reason: "the cuSOLVER library (libcusolver) could not be loaded; linear algebra on CUDA needs it"
                            .into(),
                    })?
                    .map_err(|e| cuda_error("cuSOLVER create handle", e))?;
                self.handle = Some(h);
                self.bound = std::ptr::null_mut();
                h
            }
        };
        if self.bound != stream {
            // SAFETY: a live handle and a live stream of this context.
            unsafe { cudarc::cusolver::result::dn_set_stream(handle, stream as _) }
                .map_err(|e| cuda_error("cuSOLVER set stream", e))?;
            self.bound = stream;
        }
        Ok(handle)
    }
}

/// Checks a cuSOLVER status.
fn ok(call: &str, s: sol::cusolverStatus_t) -> Result<()> {
    if s == sol::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(cuda_error(call, s))
    }
}

/// Checks a cuBLAS status.
fn blas_ok(call: &str, s: blas::cublasStatus_t) -> Result<()> {
    if s == blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(cuda_error(call, s))
    }
}

/// Batches of at least this many matrices go through the batched
/// cuBLAS/cuSOLVER routines (one call for all; LU only for matrices of at
/// most [`BATCHED_MAX_N`] rows, which those routines are tuned for), the
/// rest one call per matrix.
const BATCHED_MIN: usize = 2;
/// The largest matrix the batched LU routines serve.
const BATCHED_MAX_N: usize = 64;

/// A device array of the addresses of `count` matrices of `stride`
/// elements in `s` (what the batched routines take).
fn pointers(s: &CudaStorage, stride: usize, count: usize) -> Result<CudaStorage> {
    let base = s.ptr() as usize;
    let esz = s.dtype.size_in_bytes();
    let addrs: Vec<i64> = (0..count).map(|b| (base + b * stride * esz) as i64).collect();
    CudaStorage::from_cpu(&crate::backend::CpuStorage::I64(addrs))
}

/// A matrix dimension as cuSOLVER's int.
fn dim(op: &'static str, n: usize) -> Result<c_int> {
    c_int::try_from(n)
        .map_err(|_| Error::invalid(op, format!("a matrix dimension of {n} is too large for cuSOLVER")))
}

/// Runs `$body` with `$T` the Rust type of `$dtype` (f32 or f64).
macro_rules! float {
    ($op:expr, $dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            d => {
                return Err(Error::UnsupportedDType {
                    op: $op,
                    dtype: d,
                    hint: " (linear algebra takes f32 or f64)".into(),
                })
            }
        }
    };
}

impl CudaStorage {
    /// A dense copy of the first `n` elements (cuSOLVER overwrites its input).
    fn copy_dense(&self, n: usize) -> Result<CudaStorage> {
        self.cast(&Layout::contiguous(&[n]), self.dtype)
    }

    /// The typed device address of element `i`.
    fn elem<T>(&self, i: usize) -> *mut T {
        (self.ptr() as usize + i * self.dtype.size_in_bytes()) as *mut T
    }

    /// A workspace of `n` elements of `T` (at least one).
    fn workspace<T: Lapack>(n: c_int) -> Result<CudaStorage> {
        CudaStorage::alloc(T::DTYPE, (n.max(1)) as usize)
    }

    /// See [`Storage::lu_factor`].
    pub(crate) fn lu_factor(&self, m: Mats) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
        const OP: &str = "lu_factor";
        let rt = CudaRuntime::get()?;
        let k = m.rows.min(m.cols);
        let lu = self.copy_dense(m.numel())?;
        let piv = CudaStorage::full(DType::I32, m.batch * k, crate::core::Scalar::Int(1))?;
        let info = CudaStorage::full(DType::I32, m.batch, crate::core::Scalar::Int(0))?;
        if m.numel() == 0 {
            return Ok((lu, piv, info));
        }
        let (r, c) = (dim(OP, m.rows)?, dim(OP, m.cols)?);
        float!(OP, self.dtype, T => {
            if m.rows == m.cols && m.batch >= BATCHED_MIN && m.rows <= BATCHED_MAX_N {
                let ptrs = pointers(&lu, m.rows * m.cols, m.batch)?;
                let mut handle = rt.blas.lock().unwrap_or_else(|p| p.into_inner());
                let h = handle.on(rt.cu_stream())?;
                // SAFETY: `ptrs` holds `batch` addresses of n × n matrices inside `lu`;
                // pivots and info are sized for the batch; the handle is held.
                blas_ok("cublasXgetrfBatched", unsafe {
                    T::getrf_batched(h, r, ptrs.elem::<*mut T>(0), r, piv.elem::<c_int>(0), info.elem::<c_int>(0), dim(OP, m.batch)?)
                })?;
                return Ok((lu, piv, info));
            }
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            let mut lw: c_int = 0;
            // SAFETY: live device buffers sized for the batch; the handle is bound to this
            // thread's stream and held under the runtime's mutex.
            unsafe {
                ok("cusolverDnXgetrf_bufferSize", T::getrf_size(h, r, c, lu.elem::<T>(0), r, &mut lw))?;
                let work = Self::workspace::<T>(lw)?;
                for b in 0..m.batch {
                    ok(
                        "cusolverDnXgetrf",
                        T::getrf(h, r, c, lu.elem::<T>(b * m.rows * m.cols), r, work.elem::<T>(0),
                            piv.elem::<c_int>(b * k), info.elem::<c_int>(b)),
                    )?;
                }
            }
        });
        Ok((lu, piv, info))
    }

    /// See [`Storage::lu_solve`].
    pub(crate) fn lu_solve(
        &self,
        piv: &CudaStorage,
        b: &CudaStorage,
        batch: usize,
        n: usize,
        nrhs: usize,
        transpose: bool,
    ) -> Result<CudaStorage> {
        const OP: &str = "lu_solve";
        let rt = CudaRuntime::get()?;
        let x = b.copy_dense(batch * n * nrhs)?;
        if batch * n * nrhs == 0 {
            return Ok(x);
        }
        let info = CudaStorage::alloc(DType::I32, batch)?;
        let (nn, k) = (dim(OP, n)?, dim(OP, nrhs)?);
        let t = if transpose {
            sol::cublasOperation_t::CUBLAS_OP_T
        } else {
            sol::cublasOperation_t::CUBLAS_OP_N
        };
        float!(OP, self.dtype, T => {
            if batch >= BATCHED_MIN && n <= BATCHED_MAX_N {
                let (pa, pb) = (pointers(self, n * n, batch)?, pointers(&x, n * nrhs, batch)?);
                let bt = if transpose { blas::cublasOperation_t::CUBLAS_OP_T } else { blas::cublasOperation_t::CUBLAS_OP_N };
                let mut handle = rt.blas.lock().unwrap_or_else(|p| p.into_inner());
                let h = handle.on(rt.cu_stream())?;
                let mut host_info: c_int = 0;
                // SAFETY: the pointer arrays address `batch` matrices inside `self` and
                // `x`; `host_info` (argument checks) is a host int, as cuBLAS asks.
                blas_ok("cublasXgetrsBatched", unsafe {
                    T::getrs_batched(h, bt, nn, k, pa.elem::<*const T>(0), nn, piv.elem::<c_int>(0), pb.elem::<*mut T>(0), nn,
                        &mut host_info, dim(OP, batch)?)
                })?;
                return Ok(x);
            }
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            for i in 0..batch {
                // SAFETY: as in lu_factor.
                unsafe {
                    ok(
                        "cusolverDnXgetrs",
                        T::getrs(h, t, nn, k, self.elem::<T>(i * n * n), nn, piv.elem::<c_int>(i * n),
                            x.elem::<T>(i * n * nrhs), nn, info.elem::<c_int>(i)),
                    )?;
                }
            }
        });
        Ok(x)
    }

    /// See [`Storage::cholesky`].
    pub(crate) fn cholesky(&self, batch: usize, n: usize) -> Result<(CudaStorage, CudaStorage)> {
        const OP: &str = "cholesky";
        let rt = CudaRuntime::get()?;
        let l = self.copy_dense(batch * n * n)?;
        let info = CudaStorage::full(DType::I32, batch, crate::core::Scalar::Int(0))?;
        if batch * n == 0 {
            return Ok((l, info));
        }
        let nn = dim(OP, n)?;
        let lower = sol::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        float!(OP, self.dtype, T => {
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            if batch >= BATCHED_MIN {
                let ptrs = pointers(&l, n * n, batch)?;
                // SAFETY: `ptrs` addresses `batch` n × n matrices inside `l`; info is sized
                // for the batch.
                ok("cusolverDnXpotrfBatched", unsafe {
                    T::potrf_batched(h, lower, nn, ptrs.elem::<*mut T>(0), nn, info.elem::<c_int>(0), dim(OP, batch)?)
                })?;
                return Ok((l, info));
            }
            let mut lw: c_int = 0;
            // SAFETY: as in lu_factor.
            unsafe {
                ok("cusolverDnXpotrf_bufferSize", T::potrf_size(h, lower, nn, l.elem::<T>(0), nn, &mut lw))?;
                let work = Self::workspace::<T>(lw)?;
                for b in 0..batch {
                    ok(
                        "cusolverDnXpotrf",
                        T::potrf(h, lower, nn, l.elem::<T>(b * n * n), nn, work.elem::<T>(0), lw, info.elem::<c_int>(b)),
                    )?;
                }
            }
        });
        Ok((l, info))
    }

    /// See [`Storage::triangular_solve`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn triangular_solve(
        &self,
        b: &CudaStorage,
        batch: usize,
        n: usize,
        nrhs: usize,
        upper: bool,
        unit: bool,
    ) -> Result<CudaStorage> {
        const OP: &str = "solve_triangular";
        let rt = CudaRuntime::get()?;
        let x = b.copy_dense(batch * n * nrhs)?;
        if batch * n * nrhs == 0 {
            return Ok(x);
        }
        let (nn, k) = (dim(OP, n)?, dim(OP, nrhs)?);
        let fill = if upper {
            blas::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER
        } else {
            blas::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER
        };
        let diag = if unit {
            blas::cublasDiagType_t::CUBLAS_DIAG_UNIT
        } else {
            blas::cublasDiagType_t::CUBLAS_DIAG_NON_UNIT
        };
        float!(OP, self.dtype, T => {
            let mut handle = rt.blas.lock().unwrap_or_else(|p| p.into_inner());
            let h = handle.on(rt.cu_stream())?;
            let one = T::ONE;
            if batch >= BATCHED_MIN {
                let (pa, pb) = (pointers(self, n * n, batch)?, pointers(&x, n * nrhs, batch)?);
                // SAFETY: the pointer arrays address `batch` matrices inside `self` and `x`.
                blas_ok("cublasXtrsmBatched", unsafe {
                    T::trsm_batched(h, blas::cublasSideMode_t::CUBLAS_SIDE_LEFT, fill, blas::cublasOperation_t::CUBLAS_OP_N,
                        diag, nn, k, &one, pa.elem::<*const T>(0), nn, pb.elem::<*mut T>(0), nn, dim(OP, batch)?)
                })?;
                return Ok(x);
            }
            for i in 0..batch {
                // SAFETY: as in lu_factor; `one` outlives the call (host pointer mode).
                let s = unsafe {
                    T::trsm(h, blas::cublasSideMode_t::CUBLAS_SIDE_LEFT, fill, blas::cublasOperation_t::CUBLAS_OP_N,
                        diag, nn, k, &one, self.elem::<T>(i * n * n), nn, x.elem::<T>(i * n * nrhs), nn)
                };
                if s != blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
                    return Err(cuda_error("cublasXtrsm", s));
                }
            }
        });
        Ok(x)
    }

    /// See [`Storage::qr`].
    pub(crate) fn qr(&self, m: Mats, complete: bool) -> Result<(CudaStorage, CudaStorage)> {
        const OP: &str = "qr";
        let rt = CudaRuntime::get()?;
        let (rows, cols) = (m.rows, m.cols);
        let k = rows.min(cols);
        let qc = if complete { rows } else { k };
        let r = self.copy_dense(m.numel())?;
        let mut q = CudaStorage::full(self.dtype, m.batch * rows * qc, crate::core::Scalar::Int(0))?;
        if m.numel() == 0 {
            // Q of an empty matrix is the identity
            if qc > 0 {
                let eye = CudaStorage::full(self.dtype, 1, crate::core::Scalar::Int(1))?;
                let diag = Layout::from_parts(vec![m.batch, qc.min(rows)], vec![rows * qc, rows + 1], 0);
                let src = Layout::from_parts(vec![m.batch, qc.min(rows)], vec![0, 0], 0);
                q.copy_from(&diag, &eye, &src)?;
            }
            return Ok((r, q));
        }
        let tau = CudaStorage::alloc(self.dtype, m.batch * k)?;
        let info = CudaStorage::alloc(DType::I32, m.batch)?;
        let (mr, mc, mk, mq) = (dim(OP, rows)?, dim(OP, cols)?, dim(OP, k)?, dim(OP, qc)?);
        float!(OP, self.dtype, T => {
            {
                let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
                let h = solver.on(rt.cu_stream())?;
                let mut lw: c_int = 0;
                // SAFETY: as in lu_factor.
                unsafe {
                    ok("cusolverDnXgeqrf_bufferSize", T::geqrf_size(h, mr, mc, r.elem::<T>(0), mr, &mut lw))?;
                    let work = Self::workspace::<T>(lw)?;
                    for b in 0..m.batch {
                        ok(
                            "cusolverDnXgeqrf",
                            T::geqrf(h, mr, mc, r.elem::<T>(b * rows * cols), mr, tau.elem::<T>(b * k),
                                work.elem::<T>(0), lw, info.elem::<c_int>(b)),
                        )?;
                    }
                }
            }
            // the reflectors (the first k columns) into Q's buffer
            let dst = Layout::from_parts(vec![m.batch, k, rows], vec![rows * qc, rows, 1], 0);
            let src = Layout::from_parts(vec![m.batch, k, rows], vec![rows * cols, rows, 1], 0);
            q.copy_from(&dst, &r, &src)?;
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            let mut lw: c_int = 0;
            // SAFETY: as in lu_factor.
            unsafe {
                ok("cusolverDnXorgqr_bufferSize", T::orgqr_size(h, mr, mq, mk, q.elem::<T>(0), mr, tau.elem::<T>(0), &mut lw))?;
                let work = Self::workspace::<T>(lw)?;
                for b in 0..m.batch {
                    ok(
                        "cusolverDnXorgqr",
                        T::orgqr(h, mr, mq, mk, q.elem::<T>(b * rows * qc), mr, tau.elem::<T>(b * k),
                            work.elem::<T>(0), lw, info.elem::<c_int>(b)),
                    )?;
                }
            }
        });
        Ok((r, q))
    }

    /// See [`Storage::svd`]. The vectors are always computed (cuSOLVER's
    /// Jacobi SVD wants them) and dropped when not asked for; batches of
    /// matrices up to 32 × 32 go through one `gesvdjBatched` call.
    pub(crate) fn svd(&self, m: Mats, full: bool, vectors: bool) -> Result<SvdParts> {
        const OP: &str = "svd";
        let rt = CudaRuntime::get()?;
        let (rows, cols) = (m.rows, m.cols);
        let k = rows.min(cols);
        let (uc, vc) = if full { (rows, cols) } else { (k, k) };
        let a = self.copy_dense(m.numel())?;
        let s = CudaStorage::alloc(self.dtype, m.batch * k)?;
        let mut u = CudaStorage::full(self.dtype, m.batch * rows * uc, crate::core::Scalar::Int(0))?;
        let mut v = CudaStorage::full(self.dtype, m.batch * cols * vc, crate::core::Scalar::Int(0))?;
        let info = CudaStorage::full(DType::I32, m.batch, crate::core::Scalar::Int(0))?;
        let parts = |s: CudaStorage, u: CudaStorage, v: CudaStorage, info: CudaStorage| -> Result<SvdParts> {
            let (u, v) = if vectors {
                (u, v)
            } else {
                (
                    CudaStorage::alloc(self.dtype, 0)?,
                    CudaStorage::alloc(self.dtype, 0)?,
                )
            };
            Ok(SvdParts {
                s: Storage::Cuda(s),
                u: Storage::Cuda(u),
                v: Storage::Cuda(v),
                info: Storage::Cuda(info),
            })
        };
        if m.numel() == 0 {
            let one = CudaStorage::full(self.dtype, 1, crate::core::Scalar::Int(1))?;
            for (buf, n, c) in [(&mut u, rows, uc), (&mut v, cols, vc)] {
                if n.min(c) > 0 {
                    let diag = Layout::from_parts(vec![m.batch, n.min(c)], vec![n * c, n + 1], 0);
                    let src = Layout::from_parts(vec![m.batch, n.min(c)], vec![0, 0], 0);
                    buf.copy_from(&diag, &one, &src)?;
                }
            }
            return parts(s, u, v, info);
        }
        let (mr, mc) = (dim(OP, rows)?, dim(OP, cols)?);
        let jobz = sol::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR;
        let batched = m.batch >= BATCHED_MIN && rows <= 32 && cols <= 32;
        // the batched routine makes square U and V: thin results are their first k columns
        let (ub, vb) = if batched && !full {
            (
                CudaStorage::alloc(self.dtype, m.batch * rows * rows)?,
                CudaStorage::alloc(self.dtype, m.batch * cols * cols)?,
            )
        } else {
            (u.clone(), v.clone())
        };
        let econ = c_int::from(!full);
        float!(OP, self.dtype, T => {
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            let mut params: sol::gesvdjInfo_t = std::ptr::null_mut();
            // SAFETY: as in lu_factor; `params` is created here and destroyed below.
            unsafe {
                ok("cusolverDnCreateGesvdjInfo", sol::cusolverDnCreateGesvdjInfo(&mut params))?;
                let run = || -> Result<()> {
                    let mut lw: c_int = 0;
                    if batched {
                        let nb = dim(OP, m.batch)?;
                        ok(
                            "cusolverDnXgesvdjBatched_bufferSize",
                            T::gesvdj_batched_size(h, jobz, mr, mc, a.elem::<T>(0), mr, s.elem::<T>(0), ub.elem::<T>(0), mr,
                                vb.elem::<T>(0), mc, &mut lw, params, nb),
                        )?;
                        let work = Self::workspace::<T>(lw)?;
                        return ok(
                            "cusolverDnXgesvdjBatched",
                            T::gesvdj_batched(h, jobz, mr, mc, a.elem::<T>(0), mr, s.elem::<T>(0), ub.elem::<T>(0), mr,
                                vb.elem::<T>(0), mc, work.elem::<T>(0), lw, info.elem::<c_int>(0), params, nb),
                        );
                    }
                    ok(
                        "cusolverDnXgesvdj_bufferSize",
                        T::gesvdj_size(h, jobz, econ, mr, mc, a.elem::<T>(0), mr, s.elem::<T>(0), u.elem::<T>(0), mr,
                            v.elem::<T>(0), mc, &mut lw, params),
                    )?;
                    let work = Self::workspace::<T>(lw)?;
                    for b in 0..m.batch {
                        ok(
                            "cusolverDnXgesvdj",
                            T::gesvdj(h, jobz, econ, mr, mc, a.elem::<T>(b * rows * cols), mr, s.elem::<T>(b * k),
                                u.elem::<T>(b * rows * uc), mr, v.elem::<T>(b * cols * vc), mc, work.elem::<T>(0), lw,
                                info.elem::<c_int>(b), params),
                        )?;
                    }
                    Ok(())
                };
                let r = run();
                sol::cusolverDnDestroyGesvdjInfo(params);
                r?;
            }
        });
        if batched && !full {
            for (dst, src, n) in [(&mut u, &ub, rows), (&mut v, &vb, cols)] {
                let to = Layout::from_parts(vec![m.batch, k, n], vec![n * k, n, 1], 0);
                let from = Layout::from_parts(vec![m.batch, k, n], vec![n * n, n, 1], 0);
                dst.copy_from(&to, src, &from)?;
            }
        }
        parts(s, u, v, info)
    }

    /// See [`Storage::eigh`].
    pub(crate) fn eigh(
        &self,
        batch: usize,
        n: usize,
        vectors: bool,
    ) -> Result<(CudaStorage, CudaStorage, CudaStorage)> {
        const OP: &str = "eigh";
        let rt = CudaRuntime::get()?;
        let a = self.copy_dense(batch * n * n)?;
        let w = CudaStorage::alloc(self.dtype, batch * n)?;
        let info = CudaStorage::full(DType::I32, batch, crate::core::Scalar::Int(0))?;
        if batch * n == 0 {
            return Ok((w, a, info));
        }
        let nn = dim(OP, n)?;
        let jobz = if vectors {
            sol::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
        } else {
            sol::cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
        };
        let lower = sol::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER;
        float!(OP, self.dtype, T => {
            let mut solver = rt.solver.lock().unwrap_or_else(|p| p.into_inner());
            let h = solver.on(rt.cu_stream())?;
            let mut lw: c_int = 0;
            // SAFETY: as in lu_factor.
            unsafe {
                ok("cusolverDnXsyevd_bufferSize", T::syevd_size(h, jobz, lower, nn, a.elem::<T>(0), nn, w.elem::<T>(0), &mut lw))?;
                let work = Self::workspace::<T>(lw)?;
                for b in 0..batch {
                    ok(
                        "cusolverDnXsyevd",
                        T::syevd(h, jobz, lower, nn, a.elem::<T>(b * n * n), nn, w.elem::<T>(b * n), work.elem::<T>(0),
                            lw, info.elem::<c_int>(b)),
                    )?;
                }
            }
        });
        let v = if vectors {
            a
        } else {
            CudaStorage::alloc(self.dtype, 0)?
        };
        Ok((w, v, info))
    }
}
