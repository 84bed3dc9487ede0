//! Matrix products through cuBLAS (`cublasGemmStridedBatchedEx`). Row-major
//! `C = A·B` is computed as column-major `Cᵀ = Bᵀ·Aᵀ`; transposed or
//! column-major operands are passed with cuBLAS's transpose flags, not copied.
//! Single f32/f16/bf16 products up to 1024³ (where host time matters), and
//! products with a bias row ([`matmul_bias`]), go through cuBLASLt
//! (`super::lt`) with plans cached per shape; `KILN_CUBLASLT=0` in the
//! environment keeps the plain products on cuBLAS.
//! f32 uses full FP32 unless TF32 is allowed ([`set_allow_tf32`], as
//! PyTorch's `allow_tf32`, but per thread and so per engine); f16 and bf16 accumulate in f32.

use super::runtime::{cuda_error, CudaRuntime};
use super::CudaStorage;
use crate::backend::{Activation, MatmulDims};
use crate::core::error::{Error, Result};
use crate::core::strided::offsets;
use crate::core::{DType, Layout};
use cudarc::cublas::{result as blas, sys};
use std::cell::Cell;
use std::ffi::c_void;

thread_local! {
    static ALLOW_TF32: Cell<bool> = const { Cell::new(false) };
}

/// Lets f32 matmuls issued from this thread use TF32 tensor cores (off by
/// default); returns the previous setting. An engine's scripts see the
/// engine's own setting: [`Runtime::enter`](crate::Runtime::enter) applies
/// it to the thread while they run and restores the thread's afterwards.
pub fn set_allow_tf32(allow: bool) -> bool {
    ALLOW_TF32.with(|c| c.replace(allow))
}

/// Whether f32 matmuls issued from this thread may use TF32.
pub fn allow_tf32() -> bool {
    ALLOW_TF32.with(Cell::get)
}

/// One operand as cuBLAS sees it: per-batch element offsets, transpose flag, leading dim.
struct Gemm {
    bases: Vec<usize>,
    trans: sys::cublasOperation_t,
    ld: usize,
}

/// Describes a `rows × cols` row-major matrix operand, if cuBLAS can read it in place.
fn describe(l: &Layout, rows: usize, cols: usize) -> Option<Gemm> {
    let nd = l.ndim();
    let (rs, cs) = (l.strides()[nd - 2], l.strides()[nd - 1]);
    let bases = offsets(&l.shape()[..nd - 2], &l.strides()[..nd - 2], l.offset());
    if cs == 1 && rs >= cols.max(1) {
        Some(Gemm {
            bases,
            trans: sys::cublasOperation_t::CUBLAS_OP_N,
            ld: rs,
        })
    } else if rs == 1 && cs >= rows.max(1) {
        Some(Gemm {
            bases,
            trans: sys::cublasOperation_t::CUBLAS_OP_T,
            ld: cs,
        })
    } else if rows <= 1 && cs == 1 {
        Some(Gemm {
            bases,
            trans: sys::cublasOperation_t::CUBLAS_OP_N,
            ld: cols.max(1),
        })
    } else if cols <= 1 && rs == 1 {
        Some(Gemm {
            bases,
            trans: sys::cublasOperation_t::CUBLAS_OP_T,
            ld: rows.max(1),
        })
    } else {
        None
    }
}

/// The most products of an unevenly strided batch run as separate GEMM
/// calls rather than from a dense copy.
const LOOPED_BATCHES: usize = 4;

/// The common stride of evenly spaced batch offsets (0 for one batch).
fn batch_stride(bases: &[usize]) -> Option<i64> {
    match bases {
        [] | [_] => Some(0),
        [a, b, rest @ ..] => {
            let s = *b as i64 - *a as i64;
            let mut prev = *b as i64;
            for &x in rest {
                if x as i64 - prev != s {
                    return None;
                }
                prev = x as i64;
            }
            Some(s)
        }
    }
}

/// The strides `(outer, inner)` when batch offsets form a grid of
/// `bases.len() / inner_count` outer by `inner_count` inner entries, each
/// dim evenly spaced (heads split off a `[B, L, H, D]` projection: batch
/// entries `L·H·D` apart, heads `D` apart).
fn grid_strides(bases: &[usize], inner_count: usize) -> Option<(i64, i64)> {
    if inner_count == 0 || bases.len() % inner_count != 0 {
        return None;
    }
    let at = |i: usize| bases[i] as i64;
    let si = if inner_count > 1 { at(1) - at(0) } else { 0 };
    let so = if bases.len() > inner_count {
        at(inner_count) - at(0)
    } else {
        0
    };
    let fits = bases.iter().enumerate().all(|(x, &b)| {
        let (i, j) = ((x / inner_count) as i64, (x % inner_count) as i64);
        b as i64 == at(0) + i * so + j * si
    });
    fits.then_some((so, si))
}

fn types(dtype: DType) -> Result<(sys::cudaDataType, sys::cublasComputeType_t)> {
    use sys::cublasComputeType_t as C;
    use sys::cudaDataType as D;
    Ok(match dtype {
        DType::F32 if allow_tf32() => (D::CUDA_R_32F, C::CUBLAS_COMPUTE_32F_FAST_TF32),
        DType::F32 => (D::CUDA_R_32F, C::CUBLAS_COMPUTE_32F),
        DType::F64 => (D::CUDA_R_64F, C::CUBLAS_COMPUTE_64F),
        DType::F16 => (D::CUDA_R_16F, C::CUBLAS_COMPUTE_32F),
        DType::BF16 => (D::CUDA_R_16BF, C::CUBLAS_COMPUTE_32F),
        d => {
            return Err(Error::UnsupportedDType {
                op: "matmul",
                dtype: d,
                hint: " on CUDA (cuBLAS multiplies float dtypes; convert with to_dtype(\"f32\"))".into(),
            })
        }
    })
}

/// The largest single product (`m·n·k`) that goes through cuBLASLt: below
/// it the host's time per call matters and cuBLASLt's cached plan saves it;
/// above it cuBLAS's own choice is as fast or faster (on the H100, TF32
/// products at 4096³ ran at 0.81 of cuBLAS's speed through cuBLASLt's first
/// heuristic choice).
const LT_MAX_VOLUME: usize = 1 << 30;

/// Whether single products may go through cuBLASLt (unless `KILN_CUBLASLT=0`).
fn lt_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("KILN_CUBLASLT").map_or(true, |v| v != "0"))
}

/// The cuBLASLt description of the single product `C (m × n) = A·B` with
/// cuBLAS's operand descriptions `ga`, `gb` at the given addresses.
#[allow(clippy::too_many_arguments)]
fn lt_gemm(
    dtype: DType,
    (m, k, n): (usize, usize, usize),
    ga: &Gemm,
    gb: &Gemm,
    pa: u64,
    pb: u64,
    pc: u64,
    epilogue: super::lt::LtEpilogue,
) -> super::lt::LtGemm {
    use super::lt::alignment;
    let t = sys::cublasOperation_t::CUBLAS_OP_T;
    super::lt::LtGemm {
        dtype,
        tf32: allow_tf32(),
        rows: n,
        cols: m,
        depth: k,
        trans_a: gb.trans == t,
        trans_b: ga.trans == t,
        lda: gb.ld,
        ldb: ga.ld,
        epilogue,
        align: [alignment(pb), alignment(pa), alignment(pc), alignment(pc)],
    }
}

/// `act(a @ b + bias)` for 2-D `la = [m, k]`, `lb = [k, n]` and a bias of
/// `n` dense elements from `bias_offset`, in one cuBLASLt call with the bias
/// and the activation in its epilogue; with `keep_pre` (the tanh GELU only)
/// also the pre-activation `a @ b + bias`, for the backward. `None` when
/// cuBLASLt cannot take it (nothing was queued).
pub fn matmul_bias(
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    (bias, bias_offset): (&CudaStorage, usize),
    d: &MatmulDims,
    (act, keep_pre): (Activation, bool),
) -> Result<Option<(CudaStorage, Option<CudaStorage>)>> {
    use super::lt::LtEpilogue as E;
    let dtype = a.dtype;
    let (m, k, n) = (d.m, d.k, d.n);
    if !d.batch.is_empty()
        || m == 0
        || k == 0
        || n == 0
        || bias_offset + n > bias.len
        || b.dtype != dtype
        || bias.dtype != dtype
    {
        return Ok(None);
    }
    let epilogue = match (act, keep_pre) {
        (Activation::Identity, false) => E::Bias,
        (Activation::Relu, false) => E::ReluBias,
        (Activation::GeluTanh, false) => E::GeluBias,
        (Activation::GeluTanh, true) => E::GeluAuxBias,
        (_, true) => return Ok(None),
    };
    // large TF32 products: cuBLASLt's first choice is slower than cuBLAS's (see LT_MAX_VOLUME)
    if dtype == DType::F32 && allow_tf32() && m.saturating_mul(n).saturating_mul(k) > LT_MAX_VOLUME {
        return Ok(None);
    }
    let (Some(ga), Some(gb)) = (describe(la, m, k), describe(lb, k, n)) else {
        return Ok(None);
    };
    let out = CudaStorage::alloc(dtype, m * n)?;
    let pre = if keep_pre {
        Some(CudaStorage::alloc(dtype, m * n)?)
    } else {
        None
    };
    let esz = dtype.size_in_bytes() as u64;
    let (pa, pb) = (
        a.ptr() + ga.bases[0] as u64 * esz,
        b.ptr() + gb.bases[0] as u64 * esz,
    );
    let (pc, pbias) = (out.ptr(), bias.ptr() + bias_offset as u64 * esz);
    let g = lt_gemm(dtype, (m, k, n), &ga, &gb, pa, pb, pc, epilogue);
    if super::lt::alignment(pbias) < dtype.size_in_bytes() as u8 {
        return Ok(None);
    }
    // the operands are Lt's B and A (column-major Cᵀ = Bᵀ·Aᵀ)
    let aux = pre.as_ref().map(|p| p.ptr());
    Ok(super::lt::gemm(&g, pb, pa, pc, Some(pbias), aux)?.then_some((out, pre)))
}

/// `a @ b` for `la = batch + [m, k]`, `lb = batch + [k, n]`; dense `batch + [m, n]` result.
pub fn matmul(
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    d: &MatmulDims,
) -> Result<CudaStorage> {
    let rt = CudaRuntime::get()?;
    let dtype = a.dtype;
    if dtype.is_int() {
        return matmul_int(rt, a, la, b, lb, d);
    }
    let (dt, compute) = types(dtype)?;
    let (m, k, n) = (d.m, d.k, d.n);
    let batches = crate::core::shape::numel(&d.batch);
    let out = CudaStorage::alloc(dtype, batches * m * n)?;
    if out.len == 0 {
        return Ok(out);
    }
    if k == 0 {
        return CudaStorage::full(dtype, out.len, crate::core::Scalar::Int(0));
    }
    // the innermost batch dim (heads, say) for operands whose batch offsets form a grid
    let inner = d.batch.last().copied().unwrap_or(1).max(1);
    let (a, ga) = readable(a, la, m, k, inner)?;
    let (b, gb) = readable(b, lb, k, n, inner)?;
    let esz = dtype.size_in_bytes();
    let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
    let (alpha, beta): (*const c_void, *const c_void) = if dtype == DType::F64 {
        (&one64 as *const f64 as _, &zero64 as *const f64 as _)
    } else {
        (&one32 as *const f32 as _, &zero32 as *const f32 as _)
    };
    let mut handle = rt.blas.lock().unwrap_or_else(|p| p.into_inner());
    let h = handle.on(rt.cu_stream())?;
    let call = |(a_off, b_off, c_off): (usize, usize, usize),
                (sa, sb, sc): (i64, i64, i64),
                count: usize|
     -> Result<()> {
        let (pa, pb, pc) = (
            (a.ptr() as usize + a_off * esz) as *const c_void,
            (b.ptr() as usize + b_off * esz) as *const c_void,
            (out.ptr() as usize + c_off * esz) as *mut c_void,
        );
        if count == 1
            && dtype != DType::F64
            && m.saturating_mul(n).saturating_mul(k) <= LT_MAX_VOLUME
            && lt_enabled()
        {
            // one product through cuBLASLt's cached plan: less host time than cuBLAS's own heuristics
            let g = lt_gemm(
                dtype,
                (m, k, n),
                &ga,
                &gb,
                pa as u64,
                pb as u64,
                pc as u64,
                super::lt::LtEpilogue::None,
            );
            if super::lt::gemm(&g, pb as u64, pa as u64, pc as u64, None, None)? {
                return Ok(());
            }
        }
        let algo = sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT;
        // SAFETY: the pointers are live device allocations covering every element the
        // layouts address (each operand's layout passed `Layout::check_fits` against
        // its storage when its tensor was made, and the output is dense); `alpha`/`beta` match the compute type; the handle is bound to
        // the calling thread's stream and held under the runtime's mutex.
        unsafe {
            if count == 1 {
                // one product: the plain GEMM costs less host time than a batch of one
                blas::gemm_ex(
                    h,
                    gb.trans,
                    ga.trans,
                    n as i32,
                    m as i32,
                    k as i32,
                    alpha,
                    pb,
                    dt,
                    gb.ld as i32,
                    pa,
                    dt,
                    ga.ld as i32,
                    beta,
                    pc,
                    dt,
                    n as i32,
                    compute,
                    algo,
                )
            } else {
                blas::gemm_strided_batched_ex(
                    h,
                    gb.trans,
                    ga.trans,
                    n as i32,
                    m as i32,
                    k as i32,
                    alpha,
                    pb,
                    dt,
                    gb.ld as i32,
                    sb,
                    pa,
                    dt,
                    ga.ld as i32,
                    sa,
                    beta,
                    pc,
                    dt,
                    n as i32,
                    sc,
                    count as i32,
                    compute,
                    algo,
                )
            }
        }
        .map_err(|e| cuda_error("cuBLAS gemm", e))
    };
    let mn = m * n;
    let grids = (grid_strides(&ga.bases, inner), grid_strides(&gb.bases, inner));
    match (batch_stride(&ga.bases), batch_stride(&gb.bases), grids) {
        (Some(sa), Some(sb), _) => call((ga.bases[0], gb.bases[0], 0), (sa, sb, mn as i64), batches)?,
        (_, _, (Some((oa, ia)), Some((ob, ib)))) => {
            // one strided-batched call per entry of the smaller grid dim
            let outer = batches / inner;
            let (a0, b0) = (ga.bases[0] as i64, gb.bases[0] as i64);
            let at = |x0: i64, step: i64, i: usize| (x0 + step * i as i64) as usize;
            if outer <= inner {
                for i in 0..outer {
                    let offs = (at(a0, oa, i), at(b0, ob, i), i * inner * mn);
                    call(offs, (ia, ib, mn as i64), inner)?;
                }
            } else {
                for j in 0..inner {
                    let offs = (at(a0, ia, j), at(b0, ib, j), j * mn);
                    call(offs, (oa, ob, (inner * mn) as i64), outer)?;
                }
            }
        }
        _ => {
            for i in 0..batches {
                call((ga.bases[i], gb.bases[i], i * mn), (0, 0, mn as i64), 1)?;
            }
        }
    }
    Ok(out)
}

/// Integer products (no cuBLAS routine exists): a plain kernel, one thread per output.
fn matmul_int(
    rt: &CudaRuntime,
    a: &CudaStorage,
    la: &Layout,
    b: &CudaStorage,
    lb: &Layout,
    d: &MatmulDims,
) -> Result<CudaStorage> {
    let batches = crate::core::shape::numel(&d.batch);
    let out = CudaStorage::alloc(a.dtype, batches * d.m * d.n)?;
    if out.len == 0 {
        return Ok(out);
    }
    let nd = la.ndim();
    let ba = Layout::from_parts(d.batch.clone(), la.strides()[..nd - 2].to_vec(), la.offset());
    let bb = Layout::from_parts(d.batch.clone(), lb.strides()[..nd - 2].to_vec(), lb.offset());
    let (g, [ao, bo]) = super::kernels::geometry("matmul", &d.batch, [&ba, &bb])?;
    if out.len > u32::MAX as usize {
        return Err(Error::invalid(
            "matmul",
            "output too large for the CUDA integer matmul",
        ));
    }
    let s = |l: &Layout, i: usize| l.strides()[nd - 2 + i] as u32;
    super::kernels::matmul_int(
        rt,
        a.dtype,
        (g, ao, bo),
        kiln_kernels::params::MatmulShape {
            m: d.m as u32,
            n: d.n as u32,
            k: d.k as u32,
            ars: s(la, 0),
            acs: s(la, 1),
            brs: s(lb, 0),
            bcs: s(lb, 1),
        },
        a.ptr(),
        b.ptr(),
        out.ptr(),
    )?;
    Ok(out)
}

/// The operand as cuBLAS will read it: in place when its strides allow, else a
/// dense copy (a `CudaStorage` clone only shares the buffer).
fn readable(
    s: &CudaStorage,
    l: &Layout,
    rows: usize,
    cols: usize,
    inner: usize,
) -> Result<(CudaStorage, Gemm)> {
    if let Some(g) = describe(l, rows, cols) {
        // batch offsets that are neither evenly spaced nor a grid of two
        // evenly spaced dims (heads split off a `[B, L, H, D]` projection
        // are one: a strided-batched call per head) cost one GEMM call
        // each: past a few, one copy and one strided-batched call cost less
        if g.bases.len() <= LOOPED_BATCHES
            || batch_stride(&g.bases).is_some()
            || grid_strides(&g.bases, inner).is_some()
        {
            return Ok((s.clone(), g));
        }
    }
    let dense = s.cast(l, s.dtype)?;
    let g = describe(&Layout::contiguous(l.shape()), rows, cols).ok_or_else(internal)?;
    Ok((dense, g))
}

fn internal() -> Error {
    Error::invalid("matmul", "internal: a dense operand has no cuBLAS description")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_split_off_a_projection_form_a_grid() {
        // [B=3, H=4] heads of a [B, L=5, H, D=8] buffer: b·160 + h·8
        let bases: Vec<usize> = (0..3)
            .flat_map(|b| (0..4).map(move |h| 7 + b * 160 + h * 8))
            .collect();
        assert_eq!(batch_stride(&bases), None);
        assert_eq!(grid_strides(&bases, 4), Some((160, 8)));
        assert_eq!(grid_strides(&bases, 3), None);
        // evenly spaced offsets are a grid too, and one entry is
        assert_eq!(grid_strides(&[0, 5, 10, 15], 2), Some((10, 5)));
        assert_eq!(grid_strides(&[4], 1), Some((0, 0)));
        // a broadcast outer dim
        assert_eq!(grid_strides(&[0, 8, 0, 8], 2), Some((0, 8)));
        assert_eq!(grid_strides(&[0, 8, 1, 9, 3], 2), None);
    }
}
