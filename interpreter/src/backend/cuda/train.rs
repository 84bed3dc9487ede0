//! CUDA training ops: cross-entropy from logits (forward and backward, one
//! row kernel each), the fused optimizer steps (one launch per parameter,
//! in place, or one per list of 24 parameters) and `clip_grad_norm_`'s two
//! passes over lists of gradients. The op front-end has checked dtypes, shapes and density.

use super::{kernels, CudaRuntime, CudaStorage};
use crate::core::error::{Error, Result};
use crate::core::DType;
use kiln_kernels::params::{AdamParams, CrossEntropyParams, SgdParams, TensorList, LIST_TENSORS};

/// `n` as a kernel size, or a clear error.
fn size32(op: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        Error::invalid(
            op,
            format!("{n} elements are too many for the CUDA kernels (32-bit indexing)"),
        )
    })
}

fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

impl CudaStorage {
    /// Per-row loss and log-sum-exp (accumulator dtype) of dense `[rows, classes]`
    /// logits against dense i64 `labels`. A label out of range gives its row a
    /// NaN loss (the kernel never indexes with it).
    pub fn cross_entropy(
        &self,
        classes: usize,
        labels: &CudaStorage,
        ignore_index: i64,
        smoothing: f64,
    ) -> Result<(CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let rows = labels.len;
        size32("cross_entropy", rows * classes)?;
        let acc = acc_dtype(self.dtype);
        let (loss, lse) = (CudaStorage::alloc(acc, rows)?, CudaStorage::alloc(acc, rows)?);
        if rows == 0 || classes == 0 {
            return Ok((loss, lse));
        }
        let h = CrossEntropyParams {
            rows: rows as u32,
            classes: classes as u32,
            ignore_index,
            smoothing,
            ..Default::default()
        };
        kernels::cross_entropy(rt, self.dtype, h, self.ptr(), labels.ptr(), loss.ptr(), lse.ptr())?;
        Ok((loss, lse))
    }

    /// The logits' gradient: `(softmax - target) * grad[r * grad_stride]`, dense.
    #[allow(clippy::too_many_arguments)]
    pub fn cross_entropy_backward(
        &self,
        classes: usize,
        labels: &CudaStorage,
        lse: &CudaStorage,
        grad: &CudaStorage,
        grad_stride: usize,
        ignore_index: i64,
        smoothing: f64,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let rows = labels.len;
        size32("cross_entropy", rows * classes)?;
        let gx = CudaStorage::alloc(self.dtype, rows * classes)?;
        if rows == 0 || classes == 0 {
            return Ok(gx);
        }
        let h = CrossEntropyParams {
            rows: rows as u32,
            classes: classes as u32,
            grad_stride: size32("cross_entropy", grad_stride)?,
            ignore_index,
            smoothing,
            ..Default::default()
        };
        kernels::cross_entropy_backward(
            rt,
            self.dtype,
            h,
            self.ptr(),
            labels.ptr(),
            lse.ptr(),
            grad.ptr(),
            gx.ptr(),
        )?;
        Ok(gx)
    }

    /// One SGD step in place over `n` elements from `offset` (see `Storage::sgd_step`).
    pub fn sgd_step(
        &mut self,
        offset: usize,
        grad: (&CudaStorage, usize),
        buf: Option<(&CudaStorage, usize)>,
        n: usize,
        h: &SgdParams,
    ) -> Result<()> {
        let rt = CudaRuntime::get()?;
        for o in [Some(offset), Some(grad.1), buf.map(|b| b.1)]
            .into_iter()
            .flatten()
        {
            size32("sgd_step_", o + n)?;
        }
        let p = self.at(offset as u32);
        let g = grad.0.at(grad.1 as u32);
        let b = buf.map_or(0, |(b, o)| b.at(o as u32));
        let packed = [p, g, b].iter().all(|a| a % 16 == 0);
        kernels::sgd_step(rt, self.dtype, n as u32, packed, p, g, b, *h)
    }

    /// One Adam / AdamW step in place over `n` elements from `offset`.
    pub fn adam_step(
        &mut self,
        offset: usize,
        grad: (&CudaStorage, usize),
        m: (&CudaStorage, usize),
        v: (&CudaStorage, usize),
        n: usize,
        h: &AdamParams,
    ) -> Result<()> {
        let rt = CudaRuntime::get()?;
        for o in [offset, grad.1, m.1, v.1] {
            size32("adam_step_", o + n)?;
        }
        let p = self.at(offset as u32);
        let g = grad.0.at(grad.1 as u32);
        let (mp, vp) = (m.0.at(m.1 as u32), v.0.at(v.1 as u32));
        let packed = [p, g, mp, vp].iter().all(|a| a % 16 == 0);
        kernels::adam_step(rt, self.dtype, n as u32, packed, (p, g), (mp, vp), *h)
    }

    /// One Adam / AdamW step over many dense parameters, each
    /// `[(param, offset), (grad, offset), (m, offset), (v, offset)]` and its
    /// element count: one launch per 24 parameters of one dtype.
    pub fn adam_step_multi(items: &[([(&CudaStorage, usize); 4], usize)], h: &AdamParams) -> Result<()> {
        let rt = CudaRuntime::get()?;
        for (dtype, list) in tensor_lists("adam_step_", items.iter().map(|&(parts, n)| (parts, n)))? {
            kernels::adam_multi(rt, dtype, list, *h)?;
        }
        Ok(())
    }

    /// One SGD step over many dense parameters, each `[(param, offset),
    /// (grad, offset), (buffer, offset)]` (the buffer read only with
    /// momentum) and its element count: one launch per 24 parameters of one dtype.
    pub fn sgd_step_multi(items: &[([(&CudaStorage, usize); 3], usize)], h: &SgdParams) -> Result<()> {
        let rt = CudaRuntime::get()?;
        let runs = items.iter().map(|&([p, g, b], n)| ([p, g, b, p], n));
        for (dtype, list) in tensor_lists("sgd_step_", runs)? {
            kernels::sgd_multi(rt, dtype, list, *h)?;
        }
        Ok(())
    }

    /// Per-block sums of squares (`inf`: largest magnitudes) over many dense
    /// runs `(storage, offset, elements)`: one accumulator-dtype storage per
    /// launch (24 runs of one dtype), whose sum (maximum) is theirs.
    pub fn norm_multi(items: &[(&CudaStorage, usize, usize)], inf: bool) -> Result<Vec<CudaStorage>> {
        let rt = CudaRuntime::get()?;
        let mut partials = vec![];
        for (dtype, list) in tensor_lists("clip_grad_norm_", items.iter().map(|&(s, o, n)| ([(s, o); 4], n)))?
        {
            let partial = CudaStorage::alloc(acc_dtype(dtype), list.blocks() as usize)?;
            kernels::norm_multi(rt, dtype, list, inf, partial.ptr())?;
            partials.push(partial);
        }
        Ok(partials)
    }

    /// Many dense runs `(storage, offset, elements)` scaled in place by the
    /// f32 `coef` (one element): one launch per 24 runs of one dtype.
    pub fn scale_multi(items: &[(&CudaStorage, usize, usize)], coef: &CudaStorage) -> Result<()> {
        let rt = CudaRuntime::get()?;
        if coef.dtype != DType::F32 || coef.len == 0 {
            return Err(Error::invalid(
                "clip_grad_norm_",
                "internal: the scale must be one f32",
            ));
        }
        for (dtype, list) in tensor_lists("clip_grad_norm_", items.iter().map(|&(s, o, n)| ([(s, o); 4], n)))?
        {
            kernels::scale_multi(rt, dtype, list, coef.ptr())?;
        }
        Ok(())
    }
}

/// The launches' lists of `items` (up to four `(storage, offset)` runs of
/// `n` elements each, the first one's dtype naming the item's): each list
/// 24 items of one dtype; empty runs are left out.
fn tensor_lists<'a>(
    op: &'static str,
    items: impl Iterator<Item = ([(&'a CudaStorage, usize); 4], usize)>,
) -> Result<Vec<(DType, TensorList)>> {
    let mut lists: Vec<(DType, TensorList)> = vec![];
    for (parts, n) in items {
        if n == 0 {
            continue;
        }
        for (s, o) in parts {
            size32(op, o + n)?;
            if o + n > s.len {
                return Err(Error::invalid(
                    op,
                    format!("internal: a run of {n} from {o} overruns {} elements", s.len),
                ));
            }
        }
        let addresses = parts.map(|(s, o)| s.at(o as u32));
        let dtype = parts[0].0.dtype;
        let room = |(d, l): &&mut (DType, TensorList)| *d == dtype && (l.count as usize) < LIST_TENSORS;
        match lists.iter_mut().rev().find(room) {
            Some((_, l)) => {
                l.push(n as u32, addresses);
            }
            None => {
                let mut l = TensorList::default();
                l.push(n as u32, addresses);
                lists.push((dtype, l));
            }
        }
    }
    Ok(lists)
}
