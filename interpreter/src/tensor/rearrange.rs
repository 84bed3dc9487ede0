//! Rearranging ops, as PyTorch defines them: `flip` (`fliplr`, `flipud`),
//! `rot90`, `roll`, `repeat`, `tile`, `repeat_interleave`, the splits (`chunk`,
//! `split`, `tensor_split`, `hsplit`, `vsplit`, `dsplit`, `unbind`), `movedim`, `unflatten`, sliding
//! windows (`unfold`), `pad` (constant, reflect, replicate, circular) and the
//! stacks (`hstack`, `vstack`, `dstack`, `column_stack`, `atleast_nd`).
//!
//! Each is composed of views, `cat`, `index_select` and `where`, so it runs
//! on every backend and records its gradient through those ops; the splits,
//! `movedim`, `unflatten` and `unfold` return views.

use super::autograd::{self, functions};
use super::{DType, Layout, Tensor};
use crate::core::error::{Error, Result};
use crate::core::shape::{infer_shape, normalize_dim};
use crate::core::{HostValues, Scalar};

/// How `hsplit`, `vsplit` and `dsplit` split: into equal sections, or
/// before each index.
#[derive(Clone, Copy, Debug)]
pub enum Sections<'a> {
    /// This many equal sections.
    Count(i64),
    /// Before each of these indices.
    At(&'a [i64]),
}

/// `dims` normalized for `x`, each at most once.
fn distinct_dims(op: &'static str, dims: &[i64], x: &Tensor) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        let n = normalize_dim(op, d, x.shape())?;
        if out.contains(&n) {
            return Err(Error::invalid(
                op,
                format!(
                    "dim {d} appears more than once in {dims:?} (shape {:?})",
                    x.shape()
                ),
            ));
        }
        out.push(n);
    }
    Ok(out)
}

/// `start, start+step, ...` (`n` values) as an i64 index on `x`'s device.
fn index_range(x: &Tensor, start: i64, step: i64, n: usize) -> Result<Tensor> {
    let end = start + step * n as i64;
    Tensor::arange(
        Scalar::Int(start),
        Scalar::Int(end),
        Scalar::Int(step),
        Some(DType::I64),
        x.device(),
    )
}

impl Tensor {
    /// The elements in reverse order along each of `dims` (a copy).
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        let dims = distinct_dims("flip", dims, self)?;
        let mut out = self.clone();
        for d in dims {
            let n = self.shape()[d];
            if n > 1 {
                out = out.index_select(d as i64, &index_range(self, n as i64 - 1, -1, n)?)?;
            }
        }
        if out.shares_storage(self) {
            out = out.clone_data()?;
        }
        Ok(out)
    }

    /// Columns reversed (dim 1; at least 2 dims).
    pub fn fliplr(&self) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                "fliplr",
                format!("needs at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        self.flip(&[1])
    }

    /// Rows reversed (dim 0; at least 1 dim).
    pub fn flipud(&self) -> Result<Tensor> {
        if self.ndim() < 1 {
            return Err(Error::shape("flipud", "needs at least 1 dim, got a 0-dim tensor"));
        }
        self.flip(&[0])
    }

    /// `self` turned by 90° `k` times in the plane of `dims` (two distinct
    /// dims), from the first towards the second, as `torch.rot90`; negative
    /// `k` turns the other way.
    pub fn rot90(&self, k: i64, dims: &[i64]) -> Result<Tensor> {
        const OP: &str = "rot90";
        if dims.len() != 2 || self.ndim() < 2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "expects two dims of a tensor of at least 2 dims, got dims {dims:?} for shape {:?}",
                    self.shape()
                ),
            ));
        }
        let d = distinct_dims(OP, dims, self)?;
        let (d0, d1) = (d[0] as i64, d[1] as i64);
        match k.rem_euclid(4) {
            1 => self.flip(&[d1])?.transpose(d0, d1),
            2 => self.flip(&[d0, d1]),
            3 => self.flip(&[d0])?.transpose(d0, d1),
            _ => self.clone_data(),
        }
    }

    /// `tensor_split` along dim 1 (dim 0 of a 1-D tensor), as `torch.hsplit`:
    /// a number of sections must divide the dim; indices split before each.
    pub fn hsplit(&self, sections: Sections<'_>) -> Result<Vec<Tensor>> {
        let dim = if self.ndim() == 1 { 0 } else { 1 };
        self.split_directional("hsplit", 1, dim, sections)
    }

    /// `tensor_split` along dim 0 of a tensor of at least 2 dims (`torch.vsplit`).
    pub fn vsplit(&self, sections: Sections<'_>) -> Result<Vec<Tensor>> {
        self.split_directional("vsplit", 2, 0, sections)
    }

    /// `tensor_split` along dim 2 of a tensor of at least 3 dims (`torch.dsplit`).
    pub fn dsplit(&self, sections: Sections<'_>) -> Result<Vec<Tensor>> {
        self.split_directional("dsplit", 3, 2, sections)
    }

    fn split_directional(
        &self,
        op: &'static str,
        min_dims: usize,
        dim: usize,
        sections: Sections<'_>,
    ) -> Result<Vec<Tensor>> {
        if self.ndim() < min_dims {
            return Err(Error::shape(
                op,
                format!(
                    "expects a tensor of at least {min_dims} dims, got shape {:?}",
                    self.shape()
                ),
            ));
        }
        match sections {
            Sections::Count(n) => {
                let size = self.shape()[dim];
                if n <= 0 || size % n as usize != 0 {
                    return Err(Error::invalid(
                        op,
                        format!(
                            "cannot split dim {dim} of size {size} into {n} equal sections (shape {:?})",
                            self.shape()
                        ),
                    ));
                }
                self.tensor_split(n, dim as i64)
            }
            Sections::At(indices) => self.tensor_split_at(indices, dim as i64),
        }
    }

    /// Elements shifted by `shifts[i]` along `dims[i]`, wrapping around; with
    /// no dims, over the flattened tensor (shape kept).
    pub fn roll(&self, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
        if dims.is_empty() {
            if shifts.len() != 1 {
                return Err(Error::invalid(
                    "roll",
                    format!("without dims, shifts must be one number, got {shifts:?}"),
                ));
            }
            let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
            return self.flatten(0, -1)?.roll(shifts, &[0])?.reshape(&shape);
        }
        if shifts.len() != dims.len() {
            return Err(Error::invalid(
                "roll",
                format!("shifts {shifts:?} and dims {dims:?} must have the same length"),
            ));
        }
        let mut out = self.clone();
        for (&shift, &dim) in shifts.iter().zip(dims) {
            let d = normalize_dim("roll", dim, self.shape())?;
            let n = self.shape()[d] as i64;
            let s = if n == 0 { 0 } else { shift.rem_euclid(n) };
            if s != 0 {
                let tail = out.narrow(d as i64, n - s, s)?;
                let head = out.narrow(d as i64, 0, n - s)?;
                out = Tensor::cat(&[tail, head], d as i64)?;
            }
        }
        if out.shares_storage(self) {
            out = out.clone_data()?;
        }
        Ok(out)
    }

    /// The tensor repeated `sizes[i]` times along each dim (`torch.repeat`:
    /// at least as many sizes as dims; extra sizes add leading dims).
    pub fn repeat(&self, sizes: &[i64]) -> Result<Tensor> {
        if sizes.len() < self.ndim() {
            return Err(Error::shape(
                "repeat",
                format!(
                    "{} repeat sizes for a tensor of {} dims (shape {:?}): give at least one per dim",
                    sizes.len(),
                    self.ndim(),
                    self.shape()
                ),
            ));
        }
        if let Some(&r) = sizes.iter().find(|&&r| r < 0) {
            return Err(Error::invalid(
                "repeat",
                format!("repeat sizes must be non-negative, got {r}"),
            ));
        }
        let lead = sizes.len() - self.ndim();
        let padded: Vec<i64> = std::iter::repeat_n(1, lead)
            .chain(self.shape().iter().map(|&d| d as i64))
            .collect();
        // [1, s0, 1, s1, ...] expanded to [r0, s0, r1, s1, ...], then merged pairwise
        let mut interleaved = Vec::with_capacity(2 * padded.len());
        let mut expanded = Vec::with_capacity(2 * padded.len());
        let mut result = Vec::with_capacity(padded.len());
        for (&s, &r) in padded.iter().zip(sizes) {
            interleaved.extend([1, s]);
            expanded.extend([r, s]);
            result.push(r.checked_mul(s).ok_or_else(|| {
                Error::invalid(
                    "repeat",
                    format!("sizes {sizes:?} overflow (shape {:?})", self.shape()),
                )
            })?);
        }
        self.reshape(&interleaved)?
            .expand(&expanded)?
            .contiguous()?
            .reshape(&result)
    }

    /// `torch.tile`: [`repeat`](Tensor::repeat) with missing leading sizes taken as 1.
    pub fn tile(&self, dims: &[i64]) -> Result<Tensor> {
        let mut sizes = vec![1; self.ndim().saturating_sub(dims.len())];
        sizes.extend_from_slice(dims);
        self.repeat(&sizes)
    }

    /// Each element repeated `repeats` times along `dim` (the flattened
    /// tensor when `dim` is `None`).
    pub fn repeat_interleave(&self, repeats: i64, dim: Option<i64>) -> Result<Tensor> {
        if repeats < 0 {
            return Err(Error::invalid(
                "repeat_interleave",
                format!("repeats must be non-negative, got {repeats}"),
            ));
        }
        let (x, d) = match dim {
            Some(d) => (self.clone(), normalize_dim("repeat_interleave", d, self.shape())?),
            None => (self.flatten(0, -1)?, 0),
        };
        let mut expanded: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
        expanded.insert(d + 1, repeats);
        let mut result: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
        result[d] *= repeats;
        x.unsqueeze(d as i64 + 1)?
            .expand(&expanded)?
            .contiguous()?
            .reshape(&result)
    }

    /// Each slice `i` of `dim` repeated `repeats[i]` times (a 1-D integer
    /// tensor, or one value for all); `None` flattens first. The output's
    /// size depends on the values, so a CUDA `repeats` is read back first.
    pub fn repeat_interleave_tensor(&self, repeats: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        const OP: &str = "repeat_interleave";
        if !repeats.dtype().is_int() || repeats.ndim() > 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "repeats must be a 0-D or 1-D integer tensor, got {} of shape {:?}",
                    repeats.dtype().name(),
                    repeats.shape()
                ),
            ));
        }
        let (x, d) = match dim {
            Some(d) => (self.clone(), normalize_dim(OP, d, self.shape())?),
            None => (self.flatten(0, -1)?, 0),
        };
        let n = x.shape()[d];
        let host = repeats.to_host()?;
        let counts: Vec<i64> = (0..repeats.numel())
            .filter_map(|i| host.get(i))
            .map(|s| s.to_i64())
            .collect();
        if counts.len() == 1 {
            return x.repeat_interleave(counts[0], Some(d as i64));
        }
        if counts.len() != n {
            return Err(Error::shape(
                OP,
                format!(
                    "repeats has {} values for dim {d} of size {n} (shape {:?})",
                    counts.len(),
                    x.shape()
                ),
            ));
        }
        if let Some(&r) = counts.iter().find(|&&r| r < 0) {
            return Err(Error::invalid(
                OP,
                format!("repeats must be non-negative, got {r}"),
            ));
        }
        let index: Vec<i64> = counts
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r as usize))
            .collect();
        let len = index.len();
        let index = Tensor::from_host(&HostValues::Int(index), &[len], DType::I64, x.device())?;
        x.index_select(d as i64, &index)
    }

    /// `chunks` views along `dim` of `ceil(size / chunks)` elements each (the
    /// last may be smaller; fewer chunks when the size runs out).
    pub fn chunk(&self, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
        if chunks <= 0 {
            return Err(Error::invalid(
                "chunk",
                format!("chunks must be positive, got {chunks}"),
            ));
        }
        let d = normalize_dim("chunk", dim, self.shape())?;
        let n = self.shape()[d] as i64;
        let size = (n + chunks - 1) / chunks;
        if size == 0 {
            return (0..chunks).map(|_| self.narrow(d as i64, 0, 0)).collect();
        }
        self.split(size, dim)
    }

    /// Views along `dim` of `size` elements each (the last may be smaller).
    pub fn split(&self, size: i64, dim: i64) -> Result<Vec<Tensor>> {
        let d = normalize_dim("split", dim, self.shape())?;
        let n = self.shape()[d] as i64;
        if size < 0 || (size == 0 && n != 0) {
            return Err(Error::invalid(
                "split",
                format!(
                    "split size must be positive, got {size} (dim {d} of shape {:?})",
                    self.shape()
                ),
            ));
        }
        if n == 0 {
            return Ok(vec![self.narrow(d as i64, 0, 0)?]);
        }
        (0..n)
            .step_by(size as usize)
            .map(|start| self.narrow(d as i64, start, size.min(n - start)))
            .collect()
    }

    /// Views along `dim` of the given sizes, which must add up to its size.
    pub fn split_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.split_sizes_as("split", sizes, dim)
    }

    /// [`Tensor::split_sizes`] as `torch.split_with_sizes` (its errors name it).
    pub fn split_with_sizes(&self, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        self.split_sizes_as("split_with_sizes", sizes, dim)
    }

    fn split_sizes_as(&self, op: &'static str, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        let d = normalize_dim(op, dim, self.shape())?;
        let n = self.shape()[d] as i64;
        if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != n {
            return Err(Error::shape(
                op,
                format!(
                    "split sizes {sizes:?} must be non-negative and add up to {n}, the size of dim {d} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let mut start = 0;
        sizes
            .iter()
            .map(|&s| {
                let piece = self.narrow(d as i64, start, s);
                start += s;
                piece
            })
            .collect()
    }

    /// `sections` views along `dim` as even as possible (the first
    /// `size % sections` one element longer), as `torch.tensor_split`.
    pub fn tensor_split(&self, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
        if sections <= 0 {
            return Err(Error::invalid(
                "tensor_split",
                format!("sections must be positive, got {sections}"),
            ));
        }
        let d = normalize_dim("tensor_split", dim, self.shape())?;
        let n = self.shape()[d] as i64;
        let (base, extra) = (n / sections, n % sections);
        let sizes: Vec<i64> = (0..sections).map(|i| base + (i < extra) as i64).collect();
        self.split_sizes(&sizes, dim)
    }

    /// Views along `dim` cut before each of `indices` (Python slice bounds:
    /// clamped, and empty where an index is below the one before).
    pub fn tensor_split_at(&self, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
        let d = normalize_dim("tensor_split", dim, self.shape())?;
        let n = self.shape()[d];
        let mut out = Vec::with_capacity(indices.len() + 1);
        let mut prev = Some(0);
        for end in indices.iter().map(|&i| Some(i)).chain([None]) {
            let (s, _, len) = super::view::clamp_slice(n, prev, end, 1);
            out.push(self.narrow(d as i64, s as i64, len as i64)?);
            prev = end;
        }
        Ok(out)
    }

    /// The slices of `dim`, that dim removed (views).
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        let d = normalize_dim("unbind", dim, self.shape())?;
        (0..self.shape()[d] as i64)
            .map(|i| self.select(d as i64, i))
            .collect()
    }

    /// Dims `source` moved to positions `destination`, the others keeping
    /// their order (a view).
    pub fn movedim(&self, source: &[i64], destination: &[i64]) -> Result<Tensor> {
        if source.len() != destination.len() {
            return Err(Error::invalid(
                "movedim",
                format!("source {source:?} and destination {destination:?} must have the same length"),
            ));
        }
        let src = distinct_dims("movedim", source, self)?;
        let dst = distinct_dims("movedim", destination, self)?;
        let nd = self.ndim();
        let mut order: Vec<Option<usize>> = vec![None; nd];
        for (&s, &t) in src.iter().zip(&dst) {
            order[t] = Some(s);
        }
        let mut rest = (0..nd).filter(|d| !src.contains(d));
        let perm: Vec<i64> = order
            .into_iter()
            .map(|o| o.or_else(|| rest.next()).unwrap_or(0) as i64)
            .collect();
        self.permute(&perm)
    }

    /// `dim` split into `sizes` (one may be -1), as `torch.unflatten`.
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        let d = normalize_dim("unflatten", dim, self.shape())?;
        let inner = infer_shape("unflatten", &self.shape()[d..=d], sizes)?;
        let mut shape: Vec<i64> = self.shape()[..d].iter().map(|&s| s as i64).collect();
        shape.extend(inner.iter().map(|&s| s as i64));
        shape.extend(self.shape()[d + 1..].iter().map(|&s| s as i64));
        self.view(&shape)
    }

    /// All windows of `size` elements along `dim`, `step` apart, as a new
    /// last dim (a view; `Tensor.unfold`).
    pub fn unfold(&self, dim: i64, size: i64, step: i64) -> Result<Tensor> {
        const OP: &str = "unfold";
        let x = if self.ndim() == 0 {
            self.reshape(&[1])?
        } else {
            self.clone()
        };
        let d = normalize_dim(OP, dim, x.shape())?;
        let n = x.shape()[d] as i64;
        if size < 0 || size > n || step <= 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "size {size} and step {step} do not fit dim {d} of size {n} (shape {:?}): need 0 <= size <= {n}, step > 0",
                    x.shape()
                ),
            ));
        }
        let windows = ((n - size) / step + 1) as usize;
        let l = x.layout();
        let mut shape = l.shape().to_vec();
        let mut strides = l.strides().to_vec();
        shape[d] = windows;
        shape.push(size as usize);
        let stride = strides[d];
        strides[d] = stride * step as usize;
        strides.push(stride);
        let out = x.view_with(OP, Layout::from_parts(shape, strides, l.offset()))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let in_shape = self.shape().to_vec();
        Ok(autograd::record(OP, &[self], out, move |g, _| {
            // each window position k of every window adds into x[k + step*w]
            let mut grad = Tensor::zeros(&in_shape, Some(g.dtype()), g.device())?;
            let flat = if in_shape.is_empty() {
                grad.reshape(&[1])?
            } else {
                grad.clone()
            };
            let last = g.ndim() as i64 - 1;
            for k in 0..size {
                let part = g.select(last, k)?;
                let span = step * (windows as i64 - 1) + 1;
                let placed = functions::view_scatter(flat.shape(), &part, move |z| {
                    z.slice(d as i64, Some(k), Some(k + span), step)
                })?;
                grad = grad.add(&placed.reshape(&in_shape.iter().map(|&s| s as i64).collect::<Vec<_>>())?)?;
            }
            Ok(vec![Some(grad)])
        }))
    }

    /// `F.pad`: `pad` holds (before, after) pairs from the last dim backwards.
    /// `mode` "constant" fills with `value` (negative pads crop); "reflect"
    /// mirrors without repeating the edge, "replicate" repeats the edge,
    /// "circular" wraps around.
    pub fn pad(&self, pad: &[i64], mode: &str, value: f64) -> Result<Tensor> {
        const OP: &str = "pad";
        if pad.len() % 2 != 0 || pad.len() > 2 * self.ndim() {
            return Err(Error::invalid(
                OP,
                format!(
                    "padding {pad:?} must hold (before, after) pairs for at most {} dims (shape {:?})",
                    self.ndim(),
                    self.shape()
                ),
            ));
        }
        let mut out = self.clone();
        for (i, pair) in pad.chunks(2).enumerate() {
            let d = self.ndim() - 1 - i;
            let (before, after) = (pair[0], pair[1]);
            out = pad_dim(&out, d, before, after, mode, value, self.shape())?;
        }
        if out.shares_storage(self) {
            out = out.clone_data()?;
        }
        Ok(out)
    }

    /// 0-dim tensors as 1-D of one element; others unchanged.
    pub fn atleast_1d(&self) -> Result<Tensor> {
        if self.ndim() == 0 {
            self.reshape(&[1])
        } else {
            Ok(self.clone())
        }
    }

    /// As at least 2-D: a 1-D `[n]` becomes `[1, n]`.
    pub fn atleast_2d(&self) -> Result<Tensor> {
        match self.ndim() {
            0 => self.reshape(&[1, 1]),
            1 => self.unsqueeze(0),
            _ => Ok(self.clone()),
        }
    }

    /// As at least 3-D: `[n]` becomes `[1, n, 1]`, `[m, n]` becomes `[m, n, 1]`.
    pub fn atleast_3d(&self) -> Result<Tensor> {
        match self.ndim() {
            0 => self.reshape(&[1, 1, 1]),
            1 => self.unsqueeze(0)?.unsqueeze(2),
            2 => self.unsqueeze(2),
            _ => Ok(self.clone()),
        }
    }

    /// Joined column-wise: 1-D tensors end to end, others along dim 1.
    pub fn hstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors
            .iter()
            .map(Tensor::atleast_1d)
            .collect::<Result<Vec<_>>>()?;
        let dim = if ts.first().is_some_and(|t| t.ndim() == 1) {
            0
        } else {
            1
        };
        Tensor::cat(&ts, dim)
    }

    /// Joined row-wise, 1-D tensors as rows.
    pub fn vstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors
            .iter()
            .map(Tensor::atleast_2d)
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&ts, 0)
    }

    /// Joined depth-wise (dim 2), after [`atleast_3d`](Tensor::atleast_3d).
    pub fn dstack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors
            .iter()
            .map(Tensor::atleast_3d)
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&ts, 2)
    }

    /// Joined as columns: 0-D and 1-D tensors become columns `[n, 1]`.
    pub fn column_stack(tensors: &[Tensor]) -> Result<Tensor> {
        let ts = tensors
            .iter()
            .map(|t| match t.ndim() {
                0 | 1 => t.reshape(&[-1, 1]),
                _ => Ok(t.clone()),
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::cat(&ts, 1)
    }
}

/// One dim of [`Tensor::pad`].
fn pad_dim(
    x: &Tensor,
    d: usize,
    before: i64,
    after: i64,
    mode: &str,
    value: f64,
    shape: &[usize],
) -> Result<Tensor> {
    const OP: &str = "pad";
    let n = x.shape()[d] as i64;
    let dim = d as i64;
    let bad = |why: String| Error::invalid(OP, format!("{why} (dim {d}, shape {shape:?})"));
    if mode != "constant" && (before < 0 || after < 0) {
        return Err(bad(format!(
            "negative padding ({before}, {after}) needs mode \"constant\""
        )));
    }
    let mut x = x.clone();
    // negative constant padding crops first
    let (crop_front, crop_back) = (before.min(0).abs(), after.min(0).abs());
    if crop_front + crop_back > 0 {
        if crop_front + crop_back > n {
            return Err(bad(format!(
                "padding ({before}, {after}) crops more than the {n} elements"
            )));
        }
        x = x.narrow(dim, crop_front, n - crop_front - crop_back)?;
    }
    let (before, after, n) = (before.max(0), after.max(0), x.shape()[d] as i64);
    if before == 0 && after == 0 {
        return Ok(x);
    }
    let (front, back) = match mode {
        "constant" => {
            let side = |k: i64| -> Result<Tensor> {
                let mut s = x.shape().to_vec();
                s[d] = k as usize;
                Tensor::full(&s, Scalar::Float(value), Some(x.dtype()), x.device())
            };
            (side(before)?, side(after)?)
        }
        "reflect" => {
            if before >= n || after >= n {
                return Err(bad(format!(
                    "reflect padding ({before}, {after}) must be below the size {n}"
                )));
            }
            (
                x.narrow(dim, 1, before)?.flip(&[dim])?,
                x.narrow(dim, n - 1 - after, after)?.flip(&[dim])?,
            )
        }
        "replicate" => {
            if n == 0 {
                return Err(bad("replicate padding of an empty dim".into()));
            }
            let rep = |at: i64, k: i64| -> Result<Tensor> {
                let mut s: Vec<i64> = x.shape().iter().map(|&v| v as i64).collect();
                s[d] = k;
                x.narrow(dim, at, 1)?.expand(&s)
            };
            (rep(0, before)?, rep(n - 1, after)?)
        }
        "circular" => {
            if before > n || after > n {
                return Err(bad(format!(
                    "circular padding ({before}, {after}) must be at most the size {n}"
                )));
            }
            (x.narrow(dim, n - before, before)?, x.narrow(dim, 0, after)?)
        }
        other => {
            return Err(Error::invalid(
                OP,
                format!("unknown mode \"{other}\" (expected constant, reflect, replicate or circular)"),
            ))
        }
    };
    Tensor::cat(&[front, x, back], dim)
}
