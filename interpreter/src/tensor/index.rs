//! Indexing along one dim through an integer index tensor: `index_select`
//! and `gather` (PyTorch semantics) read, their adjoints `index_add` and
//! `scatter_add` accumulate, and each records its backward through the
//! other (a repeated index accumulates its gradients).
//!
//! All four reduce to two backend primitives over strided layouts,
//! [`Storage::gather`](crate::backend::Storage::gather) and
//! [`Storage::scatter_add_`](crate::backend::Storage::scatter_add_): the
//! indexed tensor is walked with its indexed dim fixed (stride 0) and each
//! element moves `index * stride` along that dim; `index_select` broadcasts a
//! 1-D index over the other dims (stride 0), `gather` reads the index
//! through its own layout. Nothing is copied to make an input dense; indices
//! of any integer dtype are read as i64.
//!
//! Sums are kept in an accumulator dtype ([`scatter_dtype`]: f32 for f16,
//! bf16 and f32; i32 for u8 and i32) and rounded once to the result dtype, on
//! both backends. On CUDA they are atomic adds, so float sums may differ from
//! the CPU's in the last bits (the order of the additions differs).
//!
//! Index values are checked on the CPU: one outside `[0, size)` is an error
//! naming the op, the index and the shape (negative indices are not counted
//! from the end, as in PyTorch). On CUDA they are not checked (that would
//! wait for the GPU); memory outside the tensor is never touched:
//! `index_select` / `gather` give NaN (floats) or 0 (integers, bool) for
//! such an index and `index_add` / `scatter_add` skip it.

use super::autograd::{self, functions, Saved};
use super::{DType, Device, Layout, Tensor};
use crate::core::error::{Error, Result};
use crate::core::index::{scatter_dtype, Along};
use crate::core::shape::{normalize_dim, normalize_dim_for};

/// `index` as i64 on `x`'s device, or a typed error.
fn index_of(op: &'static str, x: &Tensor, index: &Tensor) -> Result<Tensor> {
    if !index.dtype().is_int() {
        return Err(Error::UnsupportedDType {
            op,
            dtype: index.dtype(),
            hint: " as an index (the index must be an integer tensor, e.g. i64)".into(),
        });
    }
    x.same_device(op, index)?;
    index.to_dtype(DType::I64)
}

/// The layout of a 1-D (or 0-dim) `index` broadcast over `shape`, its
/// elements running along `dim`.
fn along_dim(index: &Layout, shape: &[usize], dim: usize) -> Layout {
    let mut strides = vec![0; shape.len()];
    strides[dim] = index.strides().first().copied().unwrap_or(0);
    Layout::from_parts(shape.to_vec(), strides, index.offset())
}

/// `x`'s layout walked over `shape` (no larger than `x`'s) with `dim` held at
/// index 0: the base each index moves from.
fn base(x: &Layout, shape: &[usize], dim: usize) -> Layout {
    let mut strides = x.strides().to_vec();
    strides[dim] = 0;
    Layout::from_parts(shape.to_vec(), strides, x.offset())
}

/// Fails unless `index` has as many dims as `what` (of `shape`) and is no
/// larger than it in the dims other than `dim` (`dim: None`: in every dim).
fn check_fits(
    op: &'static str,
    index: &[usize],
    what: &str,
    shape: &[usize],
    dim: Option<usize>,
) -> Result<()> {
    if index.len() != shape.len() {
        return Err(Error::shape(
            op,
            format!("the index of shape {index:?} must have as many dims as the {what} of shape {shape:?}"),
        ));
    }
    match (0..shape.len()).find(|&k| Some(k) != dim && index[k] > shape[k]) {
        None => Ok(()),
        Some(k) => Err(Error::shape(
            op,
            format!("the index of shape {index:?} is larger than the {what} of shape {shape:?} in dim {k}"),
        )),
    }
}

/// `x` read through the i64 `idx`, laid out as `li` over the result's shape,
/// along `dim`; a dense result of `li`'s shape.
fn gather_raw(op: &'static str, x: &Tensor, dim: usize, idx: &Tensor, li: &Layout) -> Result<Tensor> {
    let shape = li.shape();
    let along = Along {
        op,
        dim,
        shape: x.shape().to_vec(),
        stride: x.layout().strides()[dim],
    };
    let lx = base(x.layout(), shape, dim);
    let out = x.storage().gather(&lx, &along, &idx.storage(), li)?;
    Tensor::from_storage(op, out, shape)
}

/// `dest` (zeros of `shape` when `None`) with `src` (of `dtype`, read through
/// `ls`) added along `dim` at the i64 `idx` (read through `li`, over `ls`'s
/// shape); a new dense tensor of `dtype`.
#[allow(clippy::too_many_arguments)]
fn scatter_raw(
    op: &'static str,
    dest: Option<&Tensor>,
    (shape, dtype, device): (&[usize], DType, Device),
    dim: usize,
    idx: &Tensor,
    li: &Layout,
    src: &Tensor,
    ls: &Layout,
) -> Result<Tensor> {
    let acc = scatter_dtype(dtype).ok_or_else(|| Error::UnsupportedDType {
        op,
        dtype,
        hint: " (bool tensors cannot be summed; convert to an integer dtype)".into(),
    })?;
    let d = match dest {
        Some(t) => Tensor::from_storage(op, t.storage().cast(t.layout(), acc)?, shape)?,
        None => Tensor::zeros(shape, Some(acc), device)?,
    };
    let along = Along {
        op,
        dim,
        shape: shape.to_vec(),
        stride: d.layout().strides()[dim],
    };
    let ld = base(d.layout(), ls.shape(), dim);
    d.storage_mut()
        .scatter_add_(&ld, &along, &idx.storage(), li, &src.storage(), ls)?;
    d.to_dtype(dtype)
}

/// `t` with a leading size-1 dim when it is 0-dim (the 0-dim forms of the ops
/// here index that one element).
fn at_least_1d(t: &Tensor) -> Result<Tensor> {
    if t.ndim() == 0 {
        t.reshape(&[1])
    } else {
        Ok(t.clone())
    }
}

fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

impl Tensor {
    /// The slices of `dim` at `index` (a 1-D integer tensor; repeats allowed),
    /// in that order, as `torch.index_select`: the result has this shape with
    /// `dim` resized to the number of indices.
    pub fn index_select(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "index_select";
        let idx = index_of(OP, self, index)?;
        if idx.ndim() > 1 {
            return Err(Error::shape(
                OP,
                format!(
                    "the index must be a 1-D tensor, got shape {:?} (use gather, or flatten the index and reshape the result)",
                    idx.shape()
                ),
            ));
        }
        if self.ndim() == 0 {
            normalize_dim_for(OP, dim, 1, self.shape())?;
            if idx.numel() != 1 {
                return Err(Error::shape(
                    OP,
                    format!("a 0-dim tensor takes exactly one index, got {}", idx.numel()),
                ));
            }
            return self
                .reshape(&[1])?
                .index_select(0, &idx.reshape(&[1])?)?
                .reshape(&[]);
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        let mut shape = self.shape().to_vec();
        shape[d] = idx.numel();
        let out = autograd::forward(|| gather_raw(OP, self, d, &idx, &along_dim(idx.layout(), &shape, d)))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (is, xshape) = (Saved::new(&idx), self.shape().to_vec());
        Ok(autograd::record(OP, &[self], out, move |g, _| {
            let idx = is.get(OP)?;
            let li = along_dim(idx.layout(), g.shape(), d);
            let meta = (xshape.as_slice(), g.dtype(), g.device());
            Ok(vec![Some(scatter_raw(
                OP,
                None,
                meta,
                d,
                idx,
                &li,
                g,
                g.layout(),
            )?)])
        }))
    }

    /// PyTorch's `gather`: `out[i][j][k] = self[i][index[i][j][k]][k]` for
    /// `dim = 1` (likewise for other dims). `index` has this tensor's number of
    /// dims and is no larger in the other dims; the result has its shape.
    pub fn gather(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        const OP: &str = "gather";
        let idx = index_of(OP, self, index)?;
        if self.ndim() == 0 {
            normalize_dim_for(OP, dim, 1, self.shape())?;
            if idx.ndim() > 1 {
                return Err(Error::shape(
                    OP,
                    format!(
                        "the index of shape {:?} must have as many dims as the input of shape []",
                        idx.shape()
                    ),
                ));
            }
            let out = self.reshape(&[1])?.gather(0, &at_least_1d(&idx)?)?;
            return out.reshape(&shape_i64(idx.shape()));
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        check_fits(OP, idx.shape(), "input", self.shape(), Some(d))?;
        let out = autograd::forward(|| gather_raw(OP, self, d, &idx, idx.layout()))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (is, xshape) = (Saved::new(&idx), self.shape().to_vec());
        Ok(autograd::record(OP, &[self], out, move |g, _| {
            let idx = is.get(OP)?;
            let meta = (xshape.as_slice(), g.dtype(), g.device());
            Ok(vec![Some(scatter_raw(
                OP,
                None,
                meta,
                d,
                idx,
                idx.layout(),
                g,
                g.layout(),
            )?)])
        }))
    }

    /// PyTorch's `scatter_add` (out of place): a copy of this tensor with
    /// `out[i][index[i][j][k]][k] += src[i][j][k]` for `dim = 1` and every
    /// element of `index` (repeats accumulate). `index` has this tensor's
    /// number of dims, is no larger than `src` in any dim and no larger than
    /// this tensor outside `dim`; `src` is converted to this tensor's dtype.
    pub fn scatter_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "scatter_add";
        let idx = index_of(OP, self, index)?;
        self.same_device(OP, src)?;
        if self.ndim() == 0 {
            normalize_dim_for(OP, dim, 1, self.shape())?;
            let r = self
                .reshape(&[1])?
                .scatter_add(0, &at_least_1d(&idx)?, &at_least_1d(src)?)?;
            return r.reshape(&[]);
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        check_fits(OP, idx.shape(), "input", self.shape(), Some(d))?;
        check_fits(OP, idx.shape(), "src", src.shape(), None)?;
        let meta = (self.shape(), self.dtype(), self.device());
        let out = autograd::forward(|| -> Result<Tensor> {
            let s = src.to_dtype(self.dtype())?;
            let ls = Layout::from_parts(
                idx.shape().to_vec(),
                s.layout().strides().to_vec(),
                s.layout().offset(),
            );
            scatter_raw(OP, Some(self), meta, d, &idx, idx.layout(), &s, &ls)
        })?;
        if !autograd::needs_grad(&[self, src]) {
            return Ok(out);
        }
        let (is, src_shape) = (Saved::new(&idx), src.shape().to_vec());
        Ok(autograd::record(OP, &[self, src], out, move |g, needs| {
            let idx = is.get(OP)?;
            let gsrc = if needs[1] {
                let part = gather_raw(OP, g, d, idx, idx.layout())?;
                if part.shape() == src_shape.as_slice() {
                    Some(part)
                } else {
                    // src elements outside the index's shape were not read
                    let ishape = idx.shape().to_vec();
                    Some(functions::view_scatter(&src_shape, &part, move |z| {
                        let mut v = z.clone();
                        for (k, &n) in ishape.iter().enumerate() {
                            v = v.narrow(k as i64, 0, n as i64)?;
                        }
                        Ok(v)
                    })?)
                }
            } else {
                None
            };
            Ok(vec![needs[0].then(|| g.clone()), gsrc])
        }))
    }

    /// PyTorch's `index_add` (out of place): a copy of this tensor with slice
    /// `j` of `src` along `dim` added to slice `index[j]` (repeats
    /// accumulate). `index` is 1-D; `src` has this shape with `dim` resized to
    /// the number of indices, and is converted to this tensor's dtype.
    pub fn index_add(&self, dim: i64, index: &Tensor, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "index_add";
        let idx = index_of(OP, self, index)?;
        self.same_device(OP, src)?;
        if idx.ndim() > 1 {
            return Err(Error::shape(
                OP,
                format!("the index must be a 1-D tensor, got shape {:?}", idx.shape()),
            ));
        }
        if self.ndim() == 0 {
            normalize_dim_for(OP, dim, 1, self.shape())?;
            let r = self
                .reshape(&[1])?
                .index_add(0, &at_least_1d(&idx)?, &at_least_1d(src)?)?;
            return r.reshape(&[]);
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        let mut want = self.shape().to_vec();
        want[d] = idx.numel();
        if src.shape() != want.as_slice() {
            return Err(Error::shape(
                OP,
                format!(
                    "src of shape {:?} does not fit: {} indices into dim {d} of shape {:?} need src of shape {want:?}",
                    src.shape(),
                    idx.numel(),
                    self.shape()
                ),
            ));
        }
        let meta = (self.shape(), self.dtype(), self.device());
        let out = autograd::forward(|| -> Result<Tensor> {
            let s = src.to_dtype(self.dtype())?;
            let li = along_dim(idx.layout(), s.shape(), d);
            scatter_raw(OP, Some(self), meta, d, &idx, &li, &s, s.layout())
        })?;
        if !autograd::needs_grad(&[self, src]) {
            return Ok(out);
        }
        let is = Saved::new(&idx);
        Ok(autograd::record(OP, &[self, src], out, move |g, needs| {
            let idx = is.get(OP)?;
            let gsrc = if needs[1] {
                let mut shape = g.shape().to_vec();
                shape[d] = idx.numel();
                Some(gather_raw(OP, g, d, idx, &along_dim(idx.layout(), &shape, d))?)
            } else {
                None
            };
            Ok(vec![needs[0].then(|| g.clone()), gsrc])
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::HostValues;

    fn ints(v: &[i64], shape: &[usize]) -> Tensor {
        Tensor::from_host(&HostValues::Int(v.to_vec()), shape, DType::I64, Device::Cpu).unwrap()
    }

    fn floats(t: &Tensor) -> Vec<f64> {
        match t.to_host().unwrap() {
            HostValues::Float(v) => v,
            HostValues::Int(v) => v.into_iter().map(|x| x as f64).collect(),
            HostValues::Bool(v) => v.into_iter().map(|x| x as u8 as f64).collect(),
        }
    }

    fn x34() -> Tensor {
        Tensor::arange(
            crate::tensor::Scalar::Int(0),
            crate::tensor::Scalar::Int(12),
            crate::tensor::Scalar::Int(1),
            Some(DType::F32),
            Device::Cpu,
        )
        .unwrap()
        .reshape(&[3, 4])
        .unwrap()
    }

    #[test]
    fn index_select_rows_columns_and_views() {
        let x = x34();
        let r = x.index_select(0, &ints(&[2, 0, 2], &[3])).unwrap();
        assert_eq!(r.shape(), &[3, 4]);
        assert_eq!(floats(&r), [8., 9., 10., 11., 0., 1., 2., 3., 8., 9., 10., 11.]);
        let c = x.index_select(-1, &ints(&[3, 1], &[2])).unwrap();
        assert_eq!(floats(&c), [3., 1., 7., 5., 11., 9.]);
        // a transposed input and a strided index
        let idx = ints(&[1, 9, 0, 9, 2], &[5]).slice(0, Some(0), None, 2).unwrap();
        let t = x.t().unwrap().index_select(1, &idx).unwrap();
        assert_eq!(t.shape(), &[4, 3]);
        assert_eq!(floats(&t), [4., 0., 8., 5., 1., 9., 6., 2., 10., 7., 3., 11.]);
        let i32_idx = ints(&[1], &[1]).to_dtype(DType::I32).unwrap();
        assert_eq!(floats(&x.index_select(0, &i32_idx).unwrap()), [4., 5., 6., 7.]);
        let s = Tensor::scalar(crate::tensor::Scalar::Int(5), DType::F32, Device::Cpu).unwrap();
        let z = s.index_select(0, &ints(&[0], &[])).unwrap();
        assert_eq!((z.shape().len(), floats(&z)), (0, vec![5.0]));
    }

    #[test]
    fn gather_follows_pytorch() {
        let x = x34();
        let idx = ints(&[3, 0, 1, 1, 0, 2], &[3, 2]);
        assert_eq!(floats(&x.gather(1, &idx).unwrap()), [3., 0., 5., 5., 8., 10.]);
        let idx0 = ints(&[2, 0, 1, 1], &[1, 4]);
        assert_eq!(floats(&x.gather(0, &idx0).unwrap()), [8., 1., 6., 7.]);
    }

    #[test]
    fn scatter_add_and_index_add_accumulate_repeats() {
        let z = Tensor::zeros(&[3, 2], Some(DType::F32), Device::Cpu).unwrap();
        let src = x34().narrow(1, 0, 2).unwrap();
        let r = z.index_add(0, &ints(&[1, 1, 0], &[3]), &src).unwrap();
        assert_eq!(floats(&r), [8., 9., 4., 6., 0., 0.]);
        let idx = ints(&[0, 0, 2, 0], &[1, 4]);
        let s = z.t().unwrap().contiguous().unwrap();
        let r = s.scatter_add(1, &ints(&[0, 0, 2], &[1, 3]), &x34()).unwrap();
        assert_eq!(floats(&r), [1., 0., 2., 0., 0., 0.]);
        let h = Tensor::zeros(&[3], Some(DType::BF16), Device::Cpu).unwrap();
        let ones = Tensor::ones(&[4], Some(DType::BF16), Device::Cpu).unwrap();
        let r = h.scatter_add(0, &idx.flatten(0, -1).unwrap(), &ones).unwrap();
        assert_eq!((r.dtype(), floats(&r)), (DType::BF16, vec![3., 0., 1.]));
        let u = Tensor::full(
            &[2],
            crate::tensor::Scalar::Int(250),
            Some(DType::U8),
            Device::Cpu,
        )
        .unwrap();
        let r = u.index_add(0, &ints(&[0, 0], &[2]), &u).unwrap();
        assert_eq!(floats(&r), [(250 * 3 % 256) as f64, 250.]);
    }

    #[test]
    fn bad_indices_and_shapes_are_errors() {
        let x = x34();
        let e = x.index_select(0, &ints(&[0, 3], &[2])).unwrap_err().to_string();
        assert_eq!(
            e,
            "index_select: index 3 is out of range for dimension 0 of size 3 (shape [3, 4])"
        );
        let e = x.index_select(1, &ints(&[-1], &[1])).unwrap_err().to_string();
        assert!(e.contains("index -1 is out of range for dimension 1"), "{e}");
        let e = x.index_select(0, &x).unwrap_err().to_string();
        assert!(
            e.contains("index_select: not supported for dtype f32 as an index"),
            "{e}"
        );
        let e = x.index_select(2, &ints(&[0], &[1])).unwrap_err().to_string();
        assert!(e.contains("dimension 2 is out of range"), "{e}");
        let e = x
            .index_select(0, &ints(&[0, 1], &[1, 2]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be a 1-D tensor"), "{e}");
        let e = x.gather(1, &ints(&[0, 1], &[2])).unwrap_err().to_string();
        assert!(e.contains("as many dims as the input of shape [3, 4]"), "{e}");
        let e = x.gather(1, &ints(&[0; 5], &[5, 1])).unwrap_err().to_string();
        assert!(
            e.contains("larger than the input of shape [3, 4] in dim 0"),
            "{e}"
        );
        let e = x.gather(0, &ints(&[4, 0], &[1, 2])).unwrap_err().to_string();
        assert!(
            e.contains("gather: index 4 is out of range for dimension 0"),
            "{e}"
        );
        let e = x
            .scatter_add(0, &ints(&[0; 8], &[2, 4]), &x.narrow(0, 0, 1).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("larger than the src of shape [1, 4]"), "{e}");
        let e = x.index_add(1, &ints(&[0, 1], &[2]), &x).unwrap_err().to_string();
        assert!(e.contains("need src of shape [3, 2]"), "{e}");
        let e = x
            .to_dtype(DType::Bool)
            .unwrap()
            .index_add(0, &ints(&[0], &[1]), &x.narrow(0, 0, 1).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("index_add: not supported for dtype bool"), "{e}");
    }
}
