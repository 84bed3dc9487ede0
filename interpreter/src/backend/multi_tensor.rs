//! Steps over many tensors at once: the multi-tensor Adam / AdamW update
//! (PyTorch's `fused=True`) and `clip_grad_norm_`'s two passes (the norm
//! of every gradient together, then every gradient scaled). On CUDA one
//! launch covers up to 24 tensors of a dtype (`cuda/train.rs`); on the CPU
//! the Adam step runs its single-tensor loop over each, and the tensor
//! layer composes the norm from reductions.

use super::{mixed, CudaStorage, Storage};
use crate::core::error::{Error, Result};
use kiln_kernels::params::{AdamParams, SgdParams};

/// One parameter of [`Storage::adam_step_multi`]: the storages of the
/// parameter, its gradient and its two moments, each with the element
/// offset of its dense run, and the run's length.
pub struct AdamItem<'a> {
    /// The parameter (updated).
    pub p: (&'a mut Storage, usize),
    /// Its gradient.
    pub g: (&'a Storage, usize),
    /// The first moment (updated).
    pub m: (&'a mut Storage, usize),
    /// The second moment (updated).
    pub v: (&'a mut Storage, usize),
    /// Elements.
    pub n: usize,
}

/// A CUDA parameter's `[param, grad, buffer]` runs and their length.
type CudaSgdRun<'a> = ([(&'a CudaStorage, usize); 3], usize);

/// One parameter of [`Storage::sgd_step_multi`]: the storages of the
/// parameter, its gradient and (with momentum) its buffer, each with the
/// element offset of its dense run, and the run's length.
pub struct SgdItem<'a> {
    /// The parameter (updated).
    pub p: (&'a mut Storage, usize),
    /// Its gradient.
    pub g: (&'a Storage, usize),
    /// The momentum buffer (updated), when there is momentum.
    pub buf: Option<(&'a mut Storage, usize)>,
    /// Elements.
    pub n: usize,
}

impl Storage {
    /// One SGD step in place over many parameters (see [`SgdItem`]): on
    /// CUDA one launch per 24 parameters of one dtype; on the CPU the
    /// single-parameter loop over each.
    /// With `count` (an `i64` step count on the GPU, with its element
    /// offset) the kernels decide the first step from it (see
    /// [`SgdParams::step_at`]); on the CPU the caller resolves the count.
    pub fn sgd_step_multi(
        items: &mut [SgdItem<'_>],
        h: &SgdParams,
        count: Option<(&Storage, usize)>,
    ) -> Result<()> {
        // nothing to update (every parameter was without a gradient)
        if items.is_empty() {
            return Ok(());
        }
        let cuda: Option<Vec<CudaSgdRun<'_>>> = items
            .iter()
            .map(|i| {
                let buf = i.buf.as_ref().map(|(b, o)| (&**b, *o));
                match (&*i.p.0, i.g.0, buf) {
                    (Storage::Cuda(p), Storage::Cuda(g), None) => {
                        Some(([(p, i.p.1), (g, i.g.1), (p, i.p.1)], i.n))
                    }
                    (Storage::Cuda(p), Storage::Cuda(g), Some((Storage::Cuda(b), bo))) => {
                        Some(([(p, i.p.1), (g, i.g.1), (b, bo)], i.n))
                    }
                    _ => None,
                }
            })
            .collect();
        if let Some(cuda) = cuda {
            let h = SgdParams {
                step_at: device_count("sgd_step_multi_", count)?,
                ..*h
            };
            return CudaStorage::sgd_step_multi(&cuda, &h);
        }
        host_count("sgd_step_multi_", count)?;
        for i in items.iter_mut() {
            let (g, n) = (i.g, i.n);
            let buf = i.buf.as_mut().map(|(b, o)| (&mut **b, *o));
            i.p.0.sgd_step(i.p.1, g, buf, n, h)?;
        }
        Ok(())
    }

    /// One Adam / AdamW step in place over many parameters: each item's
    /// `[param, grad, m, v]` storages with their offsets and its element
    /// count. On CUDA one launch per 24 parameters of one dtype (PyTorch's
    /// `fused=True`); on the CPU the single-parameter loop over each.
    /// With `count` (an `i64` step count on the GPU, with its element
    /// offset) the kernels compute the bias corrections from it (see
    /// [`AdamParams::step_at`]); on the CPU the caller resolves the count.
    pub fn adam_step_multi(
        items: &mut [AdamItem<'_>],
        h: &AdamParams,
        count: Option<(&Storage, usize)>,
    ) -> Result<()> {
        // nothing to update (every parameter was without a gradient)
        if items.is_empty() {
            return Ok(());
        }
        if items.iter().all(|i| {
            matches!(
                (&*i.p.0, i.g.0, &*i.m.0, &*i.v.0),
                (
                    Storage::Cuda(_),
                    Storage::Cuda(_),
                    Storage::Cuda(_),
                    Storage::Cuda(_)
                )
            )
        }) {
            let cuda: Vec<([(&CudaStorage, usize); 4], usize)> = items
                .iter()
                .filter_map(|i| match (&*i.p.0, i.g.0, &*i.m.0, &*i.v.0) {
                    (Storage::Cuda(p), Storage::Cuda(g), Storage::Cuda(m), Storage::Cuda(v)) => {
                        Some(([(p, i.p.1), (g, i.g.1), (m, i.m.1), (v, i.v.1)], i.n))
                    }
                    _ => None,
                })
                .collect();
            let h = AdamParams {
                step_at: device_count("adam_step_multi_", count)?,
                ..*h
            };
            return CudaStorage::adam_step_multi(&cuda, &h);
        }
        host_count("adam_step_multi_", count)?;
        for i in items.iter_mut() {
            let (g, n) = (i.g, i.n);
            i.p.0
                .adam_step(i.p.1, g, (&mut *i.m.0, i.m.1), (&mut *i.v.0, i.v.1), n, h)?;
        }
        Ok(())
    }

    /// Per-block sums of squares (`inf`: largest magnitudes) over dense runs
    /// `(storage, offset, elements)` of CUDA tensors: partial results in the
    /// accumulator dtype, whose sum (maximum) over every storage returned is
    /// that of all the runs.
    pub fn norm_multi(items: &[(&Storage, usize, usize)], inf: bool) -> Result<Vec<Storage>> {
        let cuda = cuda_runs("clip_grad_norm_", items.iter().map(|&(s, o, n)| (s, o, n)))?;
        Ok(CudaStorage::norm_multi(&cuda, inf)?
            .into_iter()
            .map(Storage::Cuda)
            .collect())
    }

    /// Dense runs `(storage, offset, elements)` of CUDA tensors scaled in
    /// place by the one-element f32 `coef`.
    pub fn scale_multi(items: &mut [(&mut Storage, usize, usize)], coef: &Storage) -> Result<()> {
        let Storage::Cuda(c) = coef else {
            return Err(mixed("clip_grad_norm_"));
        };
        let cuda = cuda_runs("clip_grad_norm_", items.iter().map(|(s, o, n)| (&**s, *o, *n)))?;
        CudaStorage::scale_multi(&cuda, c)
    }
}

/// Checks that the CPU loop got no step count in storage (the caller
/// resolves it to a host number there).
fn host_count(op: &'static str, count: Option<(&Storage, usize)>) -> Result<()> {
    match count {
        None => Ok(()),
        Some(_) => Err(Error::invalid(op, "internal: a step count in storage on the CPU")),
    }
}

/// The device address of an `i64` step count (0 for none).
fn device_count(op: &'static str, count: Option<(&Storage, usize)>) -> Result<u64> {
    match count {
        None => Ok(0),
        Some((Storage::Cuda(c), offset)) if c.dtype() == crate::core::DType::I64 && offset < c.len() => {
            Ok(c.element_address(offset))
        }
        Some(_) => Err(Error::invalid(
            op,
            "the step count must be one i64 element on the parameters' GPU",
        )),
    }
}

/// The CUDA storages of `runs`, or an error when one is on the CPU.
fn cuda_runs<'a>(
    op: &'static str,
    runs: impl Iterator<Item = (&'a Storage, usize, usize)>,
) -> Result<Vec<(&'a CudaStorage, usize, usize)>> {
    runs.map(|(s, o, n)| match s {
        Storage::Cuda(c) => Ok((c, o, n)),
        Storage::Cpu(_) => Err(Error::invalid(
            op,
            "internal: the multi-tensor passes run on CUDA only",
        )),
    })
    .collect()
}
