//! CUDA indexing along one dim through an i64 index: one `gather_*` launch
//! (index_select, gather) and one atomic `scatter_add_*` launch (index_add,
//! scatter_add, and both backwards), each over a strided geometry, so no
//! input is copied first. Indices are not checked here (that would wait for
//! the GPU); the kernels never address memory with an out-of-range index.

use super::kernels::{self, geometry};
use super::{CudaRuntime, CudaStorage};
use crate::core::error::{Error, Result};
use crate::core::index::Along;
use crate::core::Layout;
use kiln_kernels::params::IndexDim;

/// The kernels' view of the indexed dim, after checking that every element
/// an index can reach from `base` has a 32-bit offset.
fn index_dim(a: &Along, base: &Layout) -> Result<IndexDim> {
    let reach = (a.size().max(1) - 1)
        .checked_mul(a.stride)
        .and_then(|r| r.checked_add(base.storage_extent()));
    match reach {
        Some(r) if r <= u32::MAX as usize && a.size() <= u32::MAX as usize => Ok(IndexDim {
            stride: a.stride as u32,
            size: a.size() as u32,
        }),
        _ => Err(Error::invalid(
            a.op,
            format!(
                "a tensor of shape {:?} is too large for the CUDA kernels (32-bit indexing)",
                a.shape
            ),
        )),
    }
}

impl CudaStorage {
    /// `self[lx(i) + idx[li(i)] * stride]` over `lx`'s shape; dense output.
    pub fn gather(&self, lx: &Layout, a: &Along, idx: &CudaStorage, li: &Layout) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let h = index_dim(a, lx)?;
        let (g, [xo, io]) = geometry(a.op, lx.shape(), [lx, li])?;
        let y = CudaStorage::alloc(self.dtype, lx.numel())?;
        kernels::gather(rt, self.dtype, g, (self.ptr(), xo), (idx.ptr(), io), h, y.ptr())?;
        Ok(y)
    }

    /// `self[ld(i) + idx[li(i)] * stride] += src[ls(i)]` over `ls`'s shape, with
    /// atomic adds into this accumulator storage.
    pub fn scatter_add_(
        &mut self,
        ld: &Layout,
        a: &Along,
        idx: &CudaStorage,
        li: &Layout,
        src: &CudaStorage,
        ls: &Layout,
    ) -> Result<()> {
        let want = crate::core::index::scatter_dtype(src.dtype);
        if want != Some(self.dtype) {
            return Err(Error::invalid(
                a.op,
                format!(
                    "internal: a {} source needs a {want:?} accumulator, got {}",
                    src.dtype, self.dtype
                ),
            ));
        }
        let rt = CudaRuntime::get()?;
        let h = index_dim(a, ld)?;
        let (g, [dso, io, so]) = geometry(a.op, ls.shape(), [ld, li, ls])?;
        kernels::scatter_add(
            rt,
            src.dtype,
            g,
            (self.ptr(), dso),
            (idx.ptr(), io),
            (src.ptr(), so),
            h,
        )
    }
}
