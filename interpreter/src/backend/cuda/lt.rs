//! Matrix products through cuBLASLt, for what plain cuBLAS does not give:
//! a bias (and a ReLU or tanh GELU, optionally keeping the pre-activation
//! for the backward) applied in the GEMM's epilogue (`addmm` with a bias
//! row, `linear`),
//! and single products with less host time (the descriptors and the chosen
//! algorithm are made once per shape and cached, as PyTorch caches them,
//! instead of cuBLAS's heuristics running on every call).
//!
//! Operands are described as [`super::blas`] describes them for cuBLAS
//! (row-major `C = A·B` as column-major `Cᵀ = Bᵀ·Aᵀ`). A product cuBLASLt
//! cannot take (the library is missing, no algorithm fits, the call is
//! refused) returns `false` and the caller uses plain cuBLAS, or composes
//! the epilogue's work.

use super::runtime::CudaRuntime;
use super::CudaStorage;
use crate::core::error::Result;
use crate::core::DType;
use cudarc::cublaslt::{result as lt, sys};
use std::collections::HashMap;
use std::ffi::c_void;

/// The workspace cuBLASLt's algorithms may use (bytes).
const WORKSPACE: usize = 4 << 20;

/// One product as cuBLASLt sees it, in column-major terms: `D (rows × cols)
/// = op(A) (rows × depth) · op(B) (depth × cols)`, plus an optional bias of
/// `rows` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LtGemm {
    /// The element type of every operand, the bias and the result.
    pub dtype: DType,
    /// f32 products on TF32 tensor cores.
    pub tf32: bool,
    /// `D`'s rows, columns, and the shared depth.
    pub rows: usize,
    pub cols: usize,
    pub depth: usize,
    /// Whether `A` and `B` are read transposed, and their leading dims.
    pub trans_a: bool,
    pub trans_b: bool,
    pub lda: usize,
    pub ldb: usize,
    /// What the epilogue applies to the product.
    pub epilogue: LtEpilogue,
    /// The alignment (bytes, at most 16) of the four pointers.
    pub align: [u8; 4],
}

/// The epilogue of an [`LtGemm`]: the bias vector (one value per row of
/// `D`) and an activation after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LtEpilogue {
    /// The product alone.
    None,
    /// Plus the bias.
    Bias,
    /// Plus the bias, then clamped at zero.
    ReluBias,
    /// Plus the bias, then the tanh GELU.
    GeluBias,
    /// As `GeluBias`, also writing the pre-activation (`D`'s shape, leading
    /// dim `rows`, which must be a multiple of 8) to an auxiliary buffer.
    GeluAuxBias,
}

impl LtEpilogue {
    fn has_bias(self) -> bool {
        self != LtEpilogue::None
    }

    fn has_aux(self) -> bool {
        self == LtEpilogue::GeluAuxBias
    }

    fn code(self) -> sys::cublasLtEpilogue_t {
        use sys::cublasLtEpilogue_t as E;
        match self {
            LtEpilogue::None => E::CUBLASLT_EPILOGUE_DEFAULT,
            LtEpilogue::Bias => E::CUBLASLT_EPILOGUE_BIAS,
            LtEpilogue::ReluBias => E::CUBLASLT_EPILOGUE_RELU_BIAS,
            LtEpilogue::GeluBias => E::CUBLASLT_EPILOGUE_GELU_BIAS,
            LtEpilogue::GeluAuxBias => E::CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
        }
    }
}

/// The descriptors and algorithm of one [`LtGemm`].
struct Plan {
    desc: sys::cublasLtMatmulDesc_t,
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
    workspace: usize,
}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: descriptors this plan created and nothing else holds.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

/// The cuBLASLt handle (made on first use; `None` inside when the library
/// cannot be loaded) and the plans made so far.
#[derive(Default)]
pub(crate) struct LtHandle {
    handle: Option<Option<sys::cublasLtHandle_t>>,
    plans: HashMap<LtGemm, Option<Plan>>,
}

// SAFETY: the handle and descriptors are used under the runtime's mutex only.
unsafe impl Send for LtHandle {}

impl LtHandle {
    fn handle(&mut self) -> Option<sys::cublasLtHandle_t> {
        *self.handle.get_or_insert_with(|| {
            // cudarc panics when it cannot load the library
            std::panic::catch_unwind(lt::create_handle)
                .ok()
                .and_then(|h| h.ok())
        })
    }
}

/// The largest power of two (at most 16) dividing `ptr`.
pub(crate) fn alignment(ptr: u64) -> u8 {
    let mut a = 16u64;
    while a > 1 && ptr % a != 0 {
        a /= 2;
    }
    a as u8
}

fn data_type(dtype: DType) -> Option<sys::cudaDataType> {
    Some(match dtype {
        DType::F32 => sys::cudaDataType::CUDA_R_32F,
        DType::F16 => sys::cudaDataType::CUDA_R_16F,
        DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
        _ => return None,
    })
}

/// Makes the plan of `g`, or `None` when cuBLASLt has no algorithm for it.
fn plan(h: sys::cublasLtHandle_t, g: &LtGemm) -> Option<Plan> {
    let dt = data_type(g.dtype)?;
    let compute = if g.dtype == DType::F32 && g.tf32 {
        sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
    } else {
        sys::cublasComputeType_t::CUBLAS_COMPUTE_32F
    };
    let desc = lt::create_matmul_desc(compute, sys::cudaDataType::CUDA_R_32F).ok()?;
    let (ar, ac) = if g.trans_a {
        (g.depth, g.rows)
    } else {
        (g.rows, g.depth)
    };
    let (br, bc) = if g.trans_b {
        (g.cols, g.depth)
    } else {
        (g.depth, g.cols)
    };
    let layout =
        |r: usize, c: usize, ld: usize| lt::create_matrix_layout(dt, r as u64, c as u64, ld as i64).ok();
    let layouts = match (
        layout(ar, ac, g.lda),
        layout(br, bc, g.ldb),
        layout(g.rows, g.cols, g.rows),
    ) {
        (Some(a), Some(b), Some(c)) => [a, b, c],
        (a, b, c) => {
            // SAFETY: what was made here, destroyed once.
            unsafe {
                let _ = lt::destroy_matmul_desc(desc);
                for l in [a, b, c].into_iter().flatten() {
                    let _ = lt::destroy_matrix_layout(l);
                }
            }
            return None;
        }
    };
    let mut p = Plan {
        desc,
        layouts,
        // SAFETY: plain integer data, replaced by the chosen algorithm below
        algo: unsafe { std::mem::zeroed() },
        workspace: 0,
    };
    let set = |attr: sys::cublasLtMatmulDescAttributes_t, v: i32| {
        // SAFETY: a live descriptor and an attribute of 32-bit value.
        unsafe { lt::set_matmul_desc_attribute(p.desc, attr, &v as *const i32 as *const c_void, 4) }.ok()
    };
    use sys::cublasLtMatmulDescAttributes_t as A;
    set(A::CUBLASLT_MATMUL_DESC_TRANSA, g.trans_a as i32)?;
    set(A::CUBLASLT_MATMUL_DESC_TRANSB, g.trans_b as i32)?;
    set(A::CUBLASLT_MATMUL_DESC_EPILOGUE, g.epilogue.code() as i32)?;
    if g.epilogue.has_aux() {
        let ld = g.rows as i64;
        // SAFETY: a live descriptor and an attribute of 64-bit value.
        unsafe {
            lt::set_matmul_desc_attribute(
                p.desc,
                A::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                &ld as *const i64 as *const c_void,
                8,
            )
        }
        .ok()?;
    }
    let pref = lt::create_matmul_pref().ok()?;
    use sys::cublasLtMatmulPreferenceAttributes_t as P;
    let ws = WORKSPACE as u64;
    // SAFETY: a live preference and attributes of the sizes given.
    let chosen = unsafe {
        let mut ok = lt::set_matmul_pref_attribute(
            pref,
            P::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            &ws as *const u64 as *const c_void,
            8,
        )
        .is_ok();
        for (attr, a) in [
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            P::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ]
        .into_iter()
        .zip(g.align)
        {
            let a = a as u32;
            ok &= lt::set_matmul_pref_attribute(pref, attr, &a as *const u32 as *const c_void, 4).is_ok();
        }
        let [la, lb, lc] = p.layouts;
        let r = ok
            .then(|| lt::get_matmul_algo_heuristic(h, p.desc, la, lb, lc, lc, pref).ok())
            .flatten();
        let _ = lt::destroy_matmul_pref(pref);
        r
    }?;
    p.algo = chosen.algo;
    p.workspace = chosen.workspaceSize;
    Some(p)
}

/// `d = act(op(a)·op(b) + bias)` through cuBLASLt on the calling thread's
/// stream (`g` describes the operands, whose device addresses are given;
/// `aux` receives the pre-activation for [`LtEpilogue::GeluAuxBias`]).
/// `Ok(false)` when cuBLASLt cannot take it: nothing was queued.
pub(crate) fn gemm(g: &LtGemm, a: u64, b: u64, d: u64, bias: Option<u64>, aux: Option<u64>) -> Result<bool> {
    let aux_fits = match aux {
        Some(p) => g.rows % 8 == 0 && alignment(p) == 16,
        None => true,
    };
    if data_type(g.dtype).is_none()
        || g.epilogue.has_bias() != bias.is_some()
        || g.epilogue.has_aux() != aux.is_some()
        || !aux_fits
    {
        return Ok(false);
    }
    let rt = CudaRuntime::get()?;
    let stream = rt.cu_stream();
    let mut lts = rt.lt.lock().unwrap_or_else(|p| p.into_inner());
    let Some(h) = lts.handle() else {
        return Ok(false);
    };
    let plan = lts.plans.entry(*g).or_insert_with(|| plan(h, g));
    let Some(p) = plan.as_ref() else {
        return Ok(false);
    };
    let ws = if p.workspace > 0 {
        Some(CudaStorage::alloc(DType::U8, p.workspace)?)
    } else {
        None
    };
    let (one, zero) = (1f32, 0f32);
    // SAFETY: the plan describes these operands (the caller's `g`), which are
    // live device allocations covering what the layouts address; the bias
    // holds `rows` elements, the auxiliary buffer `D`'s; the workspace holds `p.workspace` bytes and goes
    // back to the stream-ordered cache after the call is queued.
    let r = unsafe {
        if let Some(bias) = bias {
            lt::set_matmul_desc_attribute(
                p.desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                &bias as *const u64 as *const c_void,
                8,
            )
            .map_err(|e| super::runtime::cuda_error("cuBLASLt bias", e))?;
        }
        if let Some(aux) = aux {
            lt::set_matmul_desc_attribute(
                p.desc,
                sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                &aux as *const u64 as *const c_void,
                8,
            )
            .map_err(|e| super::runtime::cuda_error("cuBLASLt epilogue buffer", e))?;
        }
        let [la, lb, lc] = p.layouts;
        lt::matmul(
            h,
            p.desc,
            &one as *const f32 as *const c_void,
            &zero as *const f32 as *const c_void,
            a as *const c_void,
            la,
            b as *const c_void,
            lb,
            d as *const c_void,
            lc,
            d as *mut c_void,
            lc,
            &p.algo,
            ws.as_ref()
                .map_or(std::ptr::null_mut(), |w| w.element_address(0) as *mut c_void),
            p.workspace,
            stream as sys::cudaStream_t,
        )
    };
    match r {
        Ok(()) => Ok(true),
        // refused when called (nothing queued): this shape goes to the
        // composed path from now on, as when no algorithm fits
        Err(lt::CublasError(status)) if refused(status) => {
            lts.plans.insert(*g, None);
            Ok(false)
        }
        Err(e) => Err(super::runtime::cuda_error("cuBLASLt matmul", e)),
    }
}

/// A status with which cuBLASLt turns a call down before queuing anything.
fn refused(status: sys::cublasStatus_t) -> bool {
    use sys::cublasStatus_t as S;
    matches!(
        status,
        S::CUBLAS_STATUS_NOT_SUPPORTED | S::CUBLAS_STATUS_INVALID_VALUE | S::CUBLAS_STATUS_ARCH_MISMATCH
    )
}
