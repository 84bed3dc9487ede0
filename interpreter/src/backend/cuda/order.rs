//! Scans and sorts of dense rows on the GPU: the storage side of
//! `kernels/order.rs` (scratch buffers from the caching allocator).

use super::kernels;
use super::runtime::CudaRuntime;
use super::CudaStorage;
use crate::core::error::{Error, Result};
use crate::core::op::ScanOp;
use crate::core::DType;

/// `rows * len` as the kernels' u32 count, or an error naming `op`.
fn count(op: &'static str, rows: usize, len: usize) -> Result<(u32, u32)> {
    match rows.checked_mul(len) {
        Some(n) if n <= u32::MAX as usize => Ok((rows as u32, len as u32)),
        _ => Err(Error::invalid(
            op,
            format!("{rows} rows of {len} are too many for the CUDA kernels (32-bit indexing)"),
        )),
    }
}

impl CudaStorage {
    /// The scan `op` of `rows` dense rows of `len` elements, and the i64
    /// positions for cummax/cummin.
    pub fn scan(&self, op: ScanOp, rows: usize, len: usize) -> Result<(CudaStorage, Option<CudaStorage>)> {
        let rt = CudaRuntime::get()?;
        let (r, l) = count(op.name(), rows, len)?;
        let y = CudaStorage::alloc(self.dtype, rows * len)?;
        let yi = if op.with_indices() {
            Some(CudaStorage::alloc(DType::I64, rows * len)?)
        } else {
            None
        };
        if rows * len == 0 {
            return Ok((y, yi));
        }
        let chunks = kernels::scan_chunks(l) as usize;
        let totals = if chunks > 1 {
            Some(CudaStorage::alloc(DType::U8, rows * chunks * kernels::SCAN_CELL)?)
        } else {
            None
        };
        kernels::scan(
            rt,
            op,
            self.dtype,
            (r, l),
            self.ptr(),
            totals.as_ref().map_or(0, |t| t.ptr()),
            y.ptr(),
            yi.as_ref().map_or(0, |t| t.ptr()),
        )?;
        Ok((y, yi))
    }

    /// `rows` dense rows of `len` sorted (stably; NaN last, or first when
    /// `descending`), with the i64 positions the values came from.
    pub fn sort(&self, rows: usize, len: usize, descending: bool) -> Result<(CudaStorage, CudaStorage)> {
        let rt = CudaRuntime::get()?;
        let (r, l) = count("sort", rows, len)?;
        let padded = kernels::sort_padded(l) as usize;
        count("sort", rows, padded)?;
        let y = CudaStorage::alloc(self.dtype, rows * len)?;
        let yi = CudaStorage::alloc(DType::I64, rows * len)?;
        if rows * len == 0 {
            return Ok((y, yi));
        }
        let keys = CudaStorage::alloc(DType::I64, rows * padded)?;
        let idx = CudaStorage::alloc(DType::I32, rows * padded)?;
        kernels::sort(
            rt,
            self.dtype,
            (r, l),
            descending,
            self.ptr(),
            (keys.ptr(), idx.ptr()),
            y.ptr(),
            yi.ptr(),
        )?;
        Ok((y, yi))
    }

    /// For each of `rows` dense rows of `m` values (`self`), its insertion
    /// point (i64) in the matching dense row of `n` sorted elements of
    /// `seq` (one row for all when `shared`), after equal ones when `right`.
    pub fn search_sorted(
        &self,
        seq: &CudaStorage,
        rows: usize,
        m: usize,
        n: usize,
        shared: bool,
        right: bool,
    ) -> Result<CudaStorage> {
        let rt = CudaRuntime::get()?;
        let (r, mm) = count("searchsorted", rows, m)?;
        let (_, nn) = count("searchsorted", if shared { 1 } else { rows }, n)?;
        let out = CudaStorage::alloc(DType::I64, rows * m)?;
        if rows * m == 0 {
            return Ok(out);
        }
        kernels::search(
            rt,
            self.dtype,
            (r, mm, nn),
            shared,
            right,
            seq.ptr(),
            self.ptr(),
            out.ptr(),
        )?;
        Ok(out)
    }
}
