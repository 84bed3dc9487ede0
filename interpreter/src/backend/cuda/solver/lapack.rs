//! The typed cuSOLVER and cuBLAS entry points of the factorizations: one
//! [`Lapack`] implementation per float type, so the operations in the
//! parent module are written once for f32 and f64 (as cudarc's safe layer
//! types its launches). Each method is the C routine of that name with the
//! `S`/`D` prefix chosen by the type.

use crate::core::DType;
use cudarc::cublas::sys as blas;
use cudarc::cusolver::sys as sol;
use std::ffi::c_int;

/// One float type's cuSOLVER and cuBLAS entry points (LAPACK's argument lists).
#[allow(clippy::too_many_arguments)]
pub(super) trait Lapack: Copy {
    const DTYPE: DType;
    const ONE: Self;
    unsafe fn getrf_size(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lw: *mut c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn getrf(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        w: *mut Self,
        ipiv: *mut c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn getrs(
        h: sol::cusolverDnHandle_t,
        t: sol::cublasOperation_t,
        n: c_int,
        nrhs: c_int,
        a: *const Self,
        lda: c_int,
        ipiv: *const c_int,
        b: *mut Self,
        ldb: c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn potrf_size(
        h: sol::cusolverDnHandle_t,
        u: sol::cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lw: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn potrf(
        h: sol::cusolverDnHandle_t,
        u: sol::cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        w: *mut Self,
        lw: c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn geqrf_size(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        lw: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn geqrf(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        tau: *mut Self,
        w: *mut Self,
        lw: c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn orgqr_size(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *const Self,
        lda: c_int,
        tau: *const Self,
        lw: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn orgqr(
        h: sol::cusolverDnHandle_t,
        m: c_int,
        n: c_int,
        k: c_int,
        a: *mut Self,
        lda: c_int,
        tau: *const Self,
        w: *mut Self,
        lw: c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn gesvdj_size(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        econ: c_int,
        m: c_int,
        n: c_int,
        a: *const Self,
        lda: c_int,
        s: *const Self,
        u: *const Self,
        ldu: c_int,
        v: *const Self,
        ldv: c_int,
        lw: *mut c_int,
        p: sol::gesvdjInfo_t,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn gesvdj(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        econ: c_int,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        s: *mut Self,
        u: *mut Self,
        ldu: c_int,
        v: *mut Self,
        ldv: c_int,
        w: *mut Self,
        lw: c_int,
        info: *mut c_int,
        p: sol::gesvdjInfo_t,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn syevd_size(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        u: sol::cublasFillMode_t,
        n: c_int,
        a: *const Self,
        lda: c_int,
        w: *const Self,
        lw: *mut c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn syevd(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        u: sol::cublasFillMode_t,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        w: *mut Self,
        work: *mut Self,
        lw: c_int,
        info: *mut c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn getrf_batched(
        h: blas::cublasHandle_t,
        n: c_int,
        a: *const *mut Self,
        lda: c_int,
        ipiv: *mut c_int,
        info: *mut c_int,
        batch: c_int,
    ) -> blas::cublasStatus_t;
    unsafe fn getrs_batched(
        h: blas::cublasHandle_t,
        t: blas::cublasOperation_t,
        n: c_int,
        nrhs: c_int,
        a: *const *const Self,
        lda: c_int,
        ipiv: *const c_int,
        b: *const *mut Self,
        ldb: c_int,
        info: *mut c_int,
        batch: c_int,
    ) -> blas::cublasStatus_t;
    unsafe fn potrf_batched(
        h: sol::cusolverDnHandle_t,
        u: sol::cublasFillMode_t,
        n: c_int,
        a: *mut *mut Self,
        lda: c_int,
        info: *mut c_int,
        batch: c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn trsm_batched(
        h: blas::cublasHandle_t,
        side: blas::cublasSideMode_t,
        u: blas::cublasFillMode_t,
        t: blas::cublasOperation_t,
        d: blas::cublasDiagType_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        a: *const *const Self,
        lda: c_int,
        b: *const *mut Self,
        ldb: c_int,
        batch: c_int,
    ) -> blas::cublasStatus_t;
    unsafe fn gesvdj_batched_size(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        m: c_int,
        n: c_int,
        a: *const Self,
        lda: c_int,
        s: *const Self,
        u: *const Self,
        ldu: c_int,
        v: *const Self,
        ldv: c_int,
        lw: *mut c_int,
        p: sol::gesvdjInfo_t,
        batch: c_int,
    ) -> sol::cusolverStatus_t;
    unsafe fn gesvdj_batched(
        h: sol::cusolverDnHandle_t,
        jobz: sol::cusolverEigMode_t,
        m: c_int,
        n: c_int,
        a: *mut Self,
        lda: c_int,
        s: *mut Self,
        u: *mut Self,
        ldu: c_int,
        v: *mut Self,
        ldv: c_int,
        w: *mut Self,
        lw: c_int,
        info: *mut c_int,
        p: sol::gesvdjInfo_t,
        batch: c_int,
    ) -> sol::cusolverStatus_t;
    #[allow(clippy::too_many_arguments)]
    unsafe fn trsm(
        h: blas::cublasHandle_t,
        side: blas::cublasSideMode_t,
        u: blas::cublasFillMode_t,
        t: blas::cublasOperation_t,
        d: blas::cublasDiagType_t,
        m: c_int,
        n: c_int,
        alpha: *const Self,
        a: *const Self,
        lda: c_int,
        b: *mut Self,
        ldb: c_int,
    ) -> blas::cublasStatus_t;
}

macro_rules! lapack {
    ($t:ty, $dt:expr, $getrf_size:ident, $getrf:ident, $getrs:ident, $potrf_size:ident, $potrf:ident,
     $geqrf_size:ident, $geqrf:ident, $orgqr_size:ident, $orgqr:ident, $gesvdj_size:ident, $gesvdj:ident,
     $syevd_size:ident, $syevd:ident, $trsm:ident, $getrf_b:ident, $getrs_b:ident, $potrf_b:ident,
     $trsm_b:ident, $gesvdj_b_size:ident, $gesvdj_b:ident) => {
        impl Lapack for $t {
            const DTYPE: DType = $dt;
            const ONE: Self = 1.0;
            unsafe fn getrf_size(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                lw: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$getrf_size(h, m, n, a, lda, lw)
            }
            unsafe fn getrf(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                w: *mut Self,
                ipiv: *mut c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$getrf(h, m, n, a, lda, w, ipiv, info)
            }
            unsafe fn getrs(
                h: sol::cusolverDnHandle_t,
                t: sol::cublasOperation_t,
                n: c_int,
                nrhs: c_int,
                a: *const Self,
                lda: c_int,
                ipiv: *const c_int,
                b: *mut Self,
                ldb: c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$getrs(h, t, n, nrhs, a, lda, ipiv, b, ldb, info)
            }
            unsafe fn potrf_size(
                h: sol::cusolverDnHandle_t,
                u: sol::cublasFillMode_t,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                lw: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$potrf_size(h, u, n, a, lda, lw)
            }
            unsafe fn potrf(
                h: sol::cusolverDnHandle_t,
                u: sol::cublasFillMode_t,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                w: *mut Self,
                lw: c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$potrf(h, u, n, a, lda, w, lw, info)
            }
            unsafe fn geqrf_size(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                lw: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$geqrf_size(h, m, n, a, lda, lw)
            }
            unsafe fn geqrf(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                tau: *mut Self,
                w: *mut Self,
                lw: c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$geqrf(h, m, n, a, lda, tau, w, lw, info)
            }
            unsafe fn orgqr_size(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: *const Self,
                lda: c_int,
                tau: *const Self,
                lw: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$orgqr_size(h, m, n, k, a, lda, tau, lw)
            }
            unsafe fn orgqr(
                h: sol::cusolverDnHandle_t,
                m: c_int,
                n: c_int,
                k: c_int,
                a: *mut Self,
                lda: c_int,
                tau: *const Self,
                w: *mut Self,
                lw: c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$orgqr(h, m, n, k, a, lda, tau, w, lw, info)
            }
            unsafe fn gesvdj_size(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                econ: c_int,
                m: c_int,
                n: c_int,
                a: *const Self,
                lda: c_int,
                s: *const Self,
                u: *const Self,
                ldu: c_int,
                v: *const Self,
                ldv: c_int,
                lw: *mut c_int,
                p: sol::gesvdjInfo_t,
            ) -> sol::cusolverStatus_t {
                sol::$gesvdj_size(h, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, lw, p)
            }
            unsafe fn gesvdj(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                econ: c_int,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                s: *mut Self,
                u: *mut Self,
                ldu: c_int,
                v: *mut Self,
                ldv: c_int,
                w: *mut Self,
                lw: c_int,
                info: *mut c_int,
                p: sol::gesvdjInfo_t,
            ) -> sol::cusolverStatus_t {
                sol::$gesvdj(
                    h, jobz, econ, m, n, a, lda, s, u, ldu, v, ldv, w, lw, info, p,
                )
            }
            unsafe fn syevd_size(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                u: sol::cublasFillMode_t,
                n: c_int,
                a: *const Self,
                lda: c_int,
                w: *const Self,
                lw: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$syevd_size(h, jobz, u, n, a, lda, w, lw)
            }
            unsafe fn syevd(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                u: sol::cublasFillMode_t,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                w: *mut Self,
                work: *mut Self,
                lw: c_int,
                info: *mut c_int,
            ) -> sol::cusolverStatus_t {
                sol::$syevd(h, jobz, u, n, a, lda, w, work, lw, info)
            }
            unsafe fn getrf_batched(
                h: blas::cublasHandle_t,
                n: c_int,
                a: *const *mut Self,
                lda: c_int,
                ipiv: *mut c_int,
                info: *mut c_int,
                batch: c_int,
            ) -> blas::cublasStatus_t {
                blas::$getrf_b(h, n, a, lda, ipiv, info, batch)
            }
            unsafe fn getrs_batched(
                h: blas::cublasHandle_t,
                t: blas::cublasOperation_t,
                n: c_int,
                nrhs: c_int,
                a: *const *const Self,
                lda: c_int,
                ipiv: *const c_int,
                b: *const *mut Self,
                ldb: c_int,
                info: *mut c_int,
                batch: c_int,
            ) -> blas::cublasStatus_t {
                blas::$getrs_b(h, t, n, nrhs, a, lda, ipiv, b, ldb, info, batch)
            }
            unsafe fn potrf_batched(
                h: sol::cusolverDnHandle_t,
                u: sol::cublasFillMode_t,
                n: c_int,
                a: *mut *mut Self,
                lda: c_int,
                info: *mut c_int,
                batch: c_int,
            ) -> sol::cusolverStatus_t {
                sol::$potrf_b(h, u, n, a, lda, info, batch)
            }
            unsafe fn trsm_batched(
                h: blas::cublasHandle_t,
                side: blas::cublasSideMode_t,
                u: blas::cublasFillMode_t,
                t: blas::cublasOperation_t,
                d: blas::cublasDiagType_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                a: *const *const Self,
                lda: c_int,
                b: *const *mut Self,
                ldb: c_int,
                batch: c_int,
            ) -> blas::cublasStatus_t {
                blas::$trsm_b(h, side, u, t, d, m, n, alpha, a, lda, b, ldb, batch)
            }
            unsafe fn gesvdj_batched_size(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                m: c_int,
                n: c_int,
                a: *const Self,
                lda: c_int,
                s: *const Self,
                u: *const Self,
                ldu: c_int,
                v: *const Self,
                ldv: c_int,
                lw: *mut c_int,
                p: sol::gesvdjInfo_t,
                batch: c_int,
            ) -> sol::cusolverStatus_t {
                sol::$gesvdj_b_size(h, jobz, m, n, a, lda, s, u, ldu, v, ldv, lw, p, batch)
            }
            unsafe fn gesvdj_batched(
                h: sol::cusolverDnHandle_t,
                jobz: sol::cusolverEigMode_t,
                m: c_int,
                n: c_int,
                a: *mut Self,
                lda: c_int,
                s: *mut Self,
                u: *mut Self,
                ldu: c_int,
                v: *mut Self,
                ldv: c_int,
                w: *mut Self,
                lw: c_int,
                info: *mut c_int,
                p: sol::gesvdjInfo_t,
                batch: c_int,
            ) -> sol::cusolverStatus_t {
                sol::$gesvdj_b(
                    h, jobz, m, n, a, lda, s, u, ldu, v, ldv, w, lw, info, p, batch,
                )
            }
            unsafe fn trsm(
                h: blas::cublasHandle_t,
                side: blas::cublasSideMode_t,
                u: blas::cublasFillMode_t,
                t: blas::cublasOperation_t,
                d: blas::cublasDiagType_t,
                m: c_int,
                n: c_int,
                alpha: *const Self,
                a: *const Self,
                lda: c_int,
                b: *mut Self,
                ldb: c_int,
            ) -> blas::cublasStatus_t {
                blas::$trsm(h, side, u, t, d, m, n, alpha, a, lda, b, ldb)
            }
        }
    };
}

lapack!(
    f32,
    DType::F32,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf,
    cusolverDnSgetrs,
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cusolverDnSgeqrf_bufferSize,
    cusolverDnSgeqrf,
    cusolverDnSorgqr_bufferSize,
    cusolverDnSorgqr,
    cusolverDnSgesvdj_bufferSize,
    cusolverDnSgesvdj,
    cusolverDnSsyevd_bufferSize,
    cusolverDnSsyevd,
    cublasStrsm_v2,
    cublasSgetrfBatched,
    cublasSgetrsBatched,
    cusolverDnSpotrfBatched,
    cublasStrsmBatched,
    cusolverDnSgesvdjBatched_bufferSize,
    cusolverDnSgesvdjBatched
);
lapack!(
    f64,
    DType::F64,
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf,
    cusolverDnDgetrs,
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cusolverDnDgeqrf_bufferSize,
    cusolverDnDgeqrf,
    cusolverDnDorgqr_bufferSize,
    cusolverDnDorgqr,
    cusolverDnDgesvdj_bufferSize,
    cusolverDnDgesvdj,
    cusolverDnDsyevd_bufferSize,
    cusolverDnDsyevd,
    cublasDtrsm_v2,
    cublasDgetrfBatched,
    cublasDgetrsBatched,
    cusolverDnDpotrfBatched,
    cublasDtrsmBatched,
    cusolverDnDgesvdjBatched_bufferSize,
    cusolverDnDgesvdjBatched
);
