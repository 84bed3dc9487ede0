//! Selection by masks and index tensors, composed of scans, gathers and
//! scatters: `nonzero` / `argwhere` (and one-argument `where`),
//! `masked_select`, `masked_scatter`, `index_fill`, `index_copy`,
//! `index_put` (with `accumulate`), `scatter` (a tensor or a value, with the
//! `add` reduction PyTorch's `scatter` takes) and `scatter_reduce`
//! (`sum`, `prod`, `mean`, `amax`, `amin`), and the
//! reads and writes of `t[mask]` and `t[index]`.
//!
//! The ops whose output size depends on the values (`nonzero`,
//! `masked_select`, `t[mask]`) count the selected elements on the host,
//! which waits for the device, as PyTorch does.

use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

/// `n` as a one-element i64 tensor on `t`'s device.
fn int_scalar(t: &Tensor, n: i64) -> Result<Tensor> {
    Tensor::scalar(Scalar::Int(n), DType::I64, t.device())
}

impl Tensor {
    /// The flat positions of the non-zero elements, in order (1-D i64); the
    /// count is read back to the host.
    pub fn flat_nonzero(&self) -> Result<Tensor> {
        let mask = self
            .reshape(&[-1])?
            .compare_scalar(CmpOp::Ne, Scalar::Int(0), false)?;
        let n = mask.numel();
        if n == 0 {
            return Tensor::zeros(&[0], Some(DType::I64), self.device());
        }
        let rank = mask.to_dtype(DType::I64)?.cumsum(0, None)?;
        let count = rank.select(0, n as i64 - 1)?.item()?.to_i64();
        // selected elements go to their rank - 1, the others to a spare slot
        let slot = Tensor::where_cond(&mask, &rank.sub_scalar(1)?, &int_scalar(self, count)?)?;
        let lin = Tensor::arange(
            Scalar::Int(0),
            Scalar::Int(n as i64),
            Scalar::Int(1),
            None,
            self.device(),
        )?;
        Tensor::zeros(&[count as usize + 1], Some(DType::I64), self.device())?
            .scatter_add(0, &slot, &lin)?
            .narrow(0, 0, count)
    }

    /// The indices of the non-zero elements, one row per element (`[n,
    /// ndim]`, i64), as `torch.nonzero`.
    pub fn nonzero(&self) -> Result<Tensor> {
        let lin = self.flat_nonzero()?;
        if self.ndim() == 0 {
            return lin.reshape(&[-1, 0]);
        }
        let cols = self.nonzero_columns(&lin)?;
        Tensor::stack(&cols, 1)
    }

    /// The indices of the non-zero elements, one 1-D tensor per dim
    /// (`torch.nonzero(as_tuple=True)`, one-argument `where`).
    pub fn nonzero_tuple(&self) -> Result<Vec<Tensor>> {
        let lin = self.flat_nonzero()?;
        if self.ndim() == 0 {
            return Ok(vec![lin]);
        }
        self.nonzero_columns(&lin)
    }

    /// Flat positions split into per-dim indices of this tensor's shape.
    fn nonzero_columns(&self, lin: &Tensor) -> Result<Vec<Tensor>> {
        let shape = self.shape();
        let mut stride = 1i64;
        let mut cols = vec![lin.clone(); shape.len()];
        for d in (0..shape.len()).rev() {
            let q = lin.binary_scalar(BinaryOp::FloorDivide, Scalar::Int(stride), false)?;
            cols[d] = q.remainder_scalar(shape[d].max(1) as i64)?;
            stride *= shape[d] as i64;
        }
        Ok(cols)
    }

    /// The elements where `mask` (broadcast with this tensor) is true, as a
    /// 1-D tensor.
    pub fn masked_select(&self, mask: &Tensor) -> Result<Tensor> {
        check_mask("masked_select", mask)?;
        let shape = crate::core::shape::broadcast_shapes("masked_select", self.shape(), mask.shape())?;
        let x = self.broadcast_to(&shape)?.reshape(&[-1])?;
        let idx = mask.broadcast_to(&shape)?.flat_nonzero()?;
        x.take(&idx)
    }

    /// This tensor with the elements where `mask` is true replaced, in
    /// order, by the first elements of `source`.
    pub fn masked_scatter(&self, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
        check_mask("masked_scatter", mask)?;
        let m = mask.broadcast_to(self.shape())?.reshape(&[-1])?;
        let n = m.numel();
        if n == 0 {
            return Ok(self.clone());
        }
        let rank = m.to_dtype(DType::I64)?.cumsum(0, None)?;
        let count = rank.select(0, n as i64 - 1)?.item()?.to_i64();
        if count as usize > source.numel() {
            return Err(Error::shape(
                "masked_scatter",
                format!(
                    "the mask selects {count} elements but source of shape {:?} has only {}",
                    source.shape(),
                    source.numel()
                ),
            ));
        }
        let at = rank.sub_scalar(1)?.maximum_scalar(0)?;
        let vals = source.to_dtype(self.dtype())?.reshape(&[-1])?.take(&at)?;
        Tensor::where_cond(&m, &vals, &self.reshape(&[-1])?)?.reshape(&self.shape_i64())
    }

    /// The shape as i64s.
    fn shape_i64(&self) -> Vec<i64> {
        self.shape().iter().map(|&d| d as i64).collect()
    }

    /// A bool mask true at the slices `index` of `dim`, shaped to broadcast
    /// against this tensor.
    fn slice_mask(&self, op: &'static str, dim: usize, index: &Tensor) -> Result<Tensor> {
        if index.ndim() > 1 || !index.dtype().is_int() {
            return Err(Error::shape(
                op,
                format!(
                    "index must be a 1-D integer tensor, got {:?} {}",
                    index.shape(),
                    index.dtype().name()
                ),
            ));
        }
        let size = self.shape()[dim];
        let hits = Tensor::zeros(&[size], Some(DType::I64), self.device())?.index_add(
            0,
            &index.reshape(&[-1])?,
            &Tensor::ones(&[index.numel()], Some(DType::I64), self.device())?,
        )?;
        let mut shape = vec![1i64; self.ndim()];
        shape[dim] = size as i64;
        hits.compare_scalar(CmpOp::Gt, Scalar::Int(0), false)?
            .reshape(&shape)
    }

    /// This tensor with the slices `index` of `dim` set to `value`.
    pub fn index_fill(&self, dim: i64, index: &Tensor, value: &Tensor) -> Result<Tensor> {
        let d = normalize_dim("index_fill", dim, self.shape())?;
        let mask = self.slice_mask("index_fill", d, index)?;
        Tensor::where_cond(&mask, &value.to_dtype(self.dtype())?, self)
    }

    /// This tensor with the slices `index` of `dim` replaced by the slices of
    /// `source` (indices distinct, as PyTorch requires).
    pub fn index_copy(&self, dim: i64, index: &Tensor, source: &Tensor) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            // bool has no sums: through u8
            let src = source.to_dtype(DType::U8)?;
            return self
                .to_dtype(DType::U8)?
                .index_copy(dim, index, &src)?
                .to_dtype(DType::Bool);
        }
        let d = normalize_dim("index_copy", dim, self.shape())?;
        let mask = self.slice_mask("index_copy", d, index)?;
        let vals = self
            .zeros_like()?
            .index_add(dim, index, &source.to_dtype(self.dtype())?)?;
        Tensor::where_cond(&mask, &vals, self)
    }

    /// `self[indices] = values` (or `+=` with `accumulate`): `indices` index
    /// the leading dims, integer tensors broadcast together or one bool mask;
    /// `values` broadcast to the selection.
    pub fn index_put(&self, indices: &[Tensor], values: &Tensor, accumulate: bool) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            let v = values.to_dtype(DType::U8)?;
            let out = self.to_dtype(DType::U8)?.index_put(indices, &v, accumulate)?;
            return out.compare_scalar(CmpOp::Ne, Scalar::Int(0), false);
        }
        let (rows, flat, lead) = self.advanced_rows("index_put", indices)?;
        let rest: Vec<usize> = self.shape()[lead..].to_vec();
        let mut sel_shape = vec![rows.numel()];
        sel_shape.extend(&rest);
        let v = values.to_dtype(self.dtype())?.broadcast_to(&sel_shape)?;
        let out = if accumulate {
            flat.index_add(0, &rows, &v)?
        } else {
            let hit = flat.rows_mask(flat.shape()[0], &rows)?;
            let vals = flat.zeros_like()?.index_add(0, &rows, &v)?;
            Tensor::where_cond(&hit, &vals, &flat)?
        };
        out.reshape(&self.shape_i64())
    }

    /// `self[indices]` for integer index tensors of the leading dims
    /// (broadcast together) or one bool mask: the selected rows, shaped as
    /// the indices' broadcast shape (or `[count]` for a mask) followed by
    /// the remaining dims.
    pub fn index_tensors(&self, indices: &[Tensor]) -> Result<Tensor> {
        let (rows, flat, lead) = self.advanced_rows("index", indices)?;
        let mut shape: Vec<i64> = match indices {
            [m] if m.dtype() == DType::Bool => vec![rows.numel() as i64],
            _ => broadcast_all("index", indices)?
                .iter()
                .map(|&d| d as i64)
                .collect(),
        };
        shape.extend(self.shape()[lead..].iter().map(|&d| d as i64));
        flat.index_select(0, &rows)?.reshape(&shape)
    }

    /// A bool mask over the `n` rows of this tensor (dim 0), true at
    /// `rows`, shaped to broadcast over it.
    fn rows_mask(&self, n: usize, rows: &Tensor) -> Result<Tensor> {
        let hits = Tensor::zeros(&[n], Some(DType::I64), self.device())?.index_add(
            0,
            rows,
            &Tensor::ones(&[rows.numel()], Some(DType::I64), self.device())?,
        )?;
        hits.compare_scalar(CmpOp::Gt, Scalar::Int(0), false)?
            .reshape(&rows_shape(n, self))
    }

    /// The flat row numbers `indices` select among the leading dims they
    /// cover, this tensor viewed as `[rows, rest...]`, and how many leading
    /// dims that is.
    fn advanced_rows(&self, op: &'static str, indices: &[Tensor]) -> Result<(Tensor, Tensor, usize)> {
        if indices.is_empty() {
            return Err(Error::invalid(op, "at least one index tensor is needed"));
        }
        for i in indices {
            self.same_device(op, i)?;
        }
        if let [m] = indices {
            if m.dtype() == DType::Bool {
                let k = m.ndim();
                if k == 0 || k > self.ndim() || m.shape() != &self.shape()[..k] {
                    return Err(Error::shape(
                        op,
                        format!(
                            "the mask of shape {:?} must match the leading dims of shape {:?}",
                            m.shape(),
                            self.shape()
                        ),
                    ));
                }
                return Ok((m.flat_nonzero()?, self.flatten_leading(k)?, k));
            }
        }
        let k = indices.len();
        if k > self.ndim() {
            return Err(Error::shape(
                op,
                format!("{k} index tensors for a tensor of shape {:?}", self.shape()),
            ));
        }
        let shape = broadcast_all(op, indices)?;
        let mut lin: Option<Tensor> = None;
        for (d, i) in indices.iter().enumerate() {
            if !i.dtype().is_int() {
                return Err(Error::UnsupportedDType {
                    op,
                    dtype: i.dtype(),
                    hint: " (index tensors must be integers, or one bool mask)".into(),
                });
            }
            let size = self.shape()[d] as i64;
            // negative indices count from the end
            let i = i.to_dtype(DType::I64)?;
            let neg = i.compare_scalar(CmpOp::Lt, Scalar::Int(0), false)?;
            let i = Tensor::where_cond(&neg, &i.add_scalar(size)?, &i)?.broadcast_to(&shape)?;
            lin = Some(match lin {
                None => i,
                Some(l) => l.mul_scalar(size)?.add(&i)?,
            });
        }
        let rows = lin.expect("one index at least").reshape(&[-1])?;
        Ok((rows, self.flatten_leading(k)?, k))
    }

    /// This tensor with its first `k` dims merged into one.
    fn flatten_leading(&self, k: usize) -> Result<Tensor> {
        let mut shape = vec![self.shape()[..k].iter().product::<usize>() as i64];
        shape.extend(self.shape()[k..].iter().map(|&d| d as i64));
        self.reshape(&shape)
    }

    /// PyTorch's `scatter`: this tensor with `src` (a tensor, or a 0-dim
    /// value broadcast) written at `index` along `dim`, or combined there by
    /// `reduce` (`"add"`, `"multiply"`).
    pub fn scatter(&self, dim: i64, index: &Tensor, src: &Tensor, reduce: Option<&str>) -> Result<Tensor> {
        if self.dtype() == DType::Bool {
            let out = self
                .to_dtype(DType::U8)?
                .scatter(dim, index, &src.to_dtype(DType::U8)?, reduce)?;
            return out.compare_scalar(CmpOp::Ne, Scalar::Int(0), false);
        }
        let src = if src.ndim() == 0 {
            src.to_dtype(self.dtype())?.broadcast_to(index.shape())?
        } else {
            src.to_dtype(self.dtype())?
        };
        match reduce {
            None => {
                let d = normalize_dim("scatter", dim, self.shape())?;
                self.scatter_pick(d, index, &src, Pick::Last, false)
            }
            Some("add") | Some("sum") => self.scatter_add(dim, index, &src),
            Some("multiply") => {
                let d = normalize_dim("scatter", dim, self.shape())?;
                self.scatter_pick(d, index, &src, Pick::Prod, true)
            }
            Some(other) => Err(Error::invalid(
                "scatter",
                format!("unknown reduce '{other}' (expected \"add\" or \"multiply\")"),
            )),
        }
    }

    /// How many `index` entries land on each element (i64, this tensor's shape).
    fn scatter_hits(&self, dim: i64, index: &Tensor) -> Result<Tensor> {
        let ones = Tensor::ones(index.shape(), Some(DType::I64), self.device())?;
        Tensor::zeros(self.shape(), Some(DType::I64), self.device())?.scatter_add(dim, index, &ones)
    }

    /// PyTorch's `scatter_reduce`: combines `src` into this tensor at
    /// `index` along `dim` by `reduce` (`sum`, `prod`, `mean`, `amax`,
    /// `amin`), counting this tensor's own value unless `include_self` is
    /// false (elements no index reaches keep their value).
    pub fn scatter_reduce(
        &self,
        dim: i64,
        index: &Tensor,
        src: &Tensor,
        reduce: &str,
        include_self: bool,
    ) -> Result<Tensor> {
        const OP: &str = "scatter_reduce";
        let d = normalize_dim(OP, dim, self.shape())?;
        let src = src.to_dtype(self.dtype())?;
        let hits = self.scatter_hits(dim, index)?;
        let hit = hits.compare_scalar(CmpOp::Gt, Scalar::Int(0), false)?;
        let base = |identity: f64| -> Result<Tensor> {
            if include_self {
                Ok(self.clone())
            } else {
                Tensor::where_cond(&hit, &self.constant(identity)?, self)
            }
        };
        match reduce {
            "sum" => base(0.0)?.scatter_add(dim, index, &src),
            "mean" => {
                let sum = base(0.0)?.scatter_add(dim, index, &src)?;
                let count = hits.add_scalar(i64::from(include_self))?.maximum_scalar(1)?;
                let mean = sum.div(&count.to_dtype(sum.dtype().to_float())?)?;
                let mean = if self.dtype().is_float() {
                    mean
                } else {
                    mean.floor()?.to_dtype(self.dtype())?
                };
                Tensor::where_cond(&hit, &mean, self)
            }
            "amax" => self.scatter_pick(d, index, &src, Pick::Max, include_self),
            "amin" => self.scatter_pick(d, index, &src, Pick::Min, include_self),
            "prod" => self.scatter_pick(d, index, &src, Pick::Prod, include_self),
            other => Err(Error::invalid(
                OP,
                format!("unknown reduce '{other}' (expected sum, prod, mean, amax or amin)"),
            )),
        }
    }
}

impl Tensor {
    /// Writes one contribution per target: the largest or smallest (the
    /// contributions sorted by value, then stably by target, the last or
    /// first of each target's run), or the last in order (`scatter` without
    /// a reduction; PyTorch leaves the choice among duplicates open).
    fn scatter_pick(
        &self,
        d: usize,
        index: &Tensor,
        src: &Tensor,
        pick: Pick,
        include_self: bool,
    ) -> Result<Tensor> {
        const OP: &str = "scatter_reduce";
        if index.ndim() != self.ndim() || src.ndim() != self.ndim() {
            return Err(Error::shape(
                OP,
                format!(
                    "self {:?}, index {:?} and src {:?} must have the same number of dims",
                    self.shape(),
                    index.shape(),
                    src.shape()
                ),
            ));
        }
        let m = index.numel();
        if m == 0 {
            return Ok(self.clone());
        }
        let ishape = index.shape().to_vec();
        let mut src_view = src.clone();
        for (k, &n) in ishape.iter().enumerate() {
            src_view = src_view.narrow(k as i64, 0, n as i64)?;
        }
        // the flat target of every contribution
        let mut stride = 1i64;
        let mut target = int_scalar(self, 0)?.broadcast_to(&ishape)?;
        for k in (0..self.ndim()).rev() {
            let coord = if k == d {
                index.to_dtype(DType::I64)?
            } else {
                let mut s = vec![1i64; ishape.len()];
                s[k] = ishape[k] as i64;
                Tensor::arange(
                    Scalar::Int(0),
                    Scalar::Int(ishape[k] as i64),
                    Scalar::Int(1),
                    None,
                    self.device(),
                )?
                .reshape(&s)?
                .broadcast_to(&ishape)?
            };
            target = target.add(&coord.mul_scalar(stride)?)?;
            stride *= self.shape()[k] as i64;
        }
        let tgt = target.reshape(&[-1])?;
        let val = src_view.reshape(&[-1])?;
        let (tgt, val) = if matches!(pick, Pick::Last | Pick::Prod) {
            (tgt, val)
        } else {
            let by_value = val.argsort(0, false)?;
            (tgt.take(&by_value)?, val.take(&by_value)?)
        };
        let max = pick != Pick::Min;
        let by_target = tgt.argsort(0, false)?;
        let (tgt, val) = (tgt.take(&by_target)?, val.take(&by_target)?);
        let val = if pick == Pick::Prod {
            segmented_product(&tgt, &val)?
        } else {
            val
        };
        // the last (max) or first (min) of each target's run
        let edge = if max {
            let next = tgt.narrow(0, 1, m as i64 - 1)?;
            let differs = tgt.narrow(0, 0, m as i64 - 1)?.compare(CmpOp::Ne, &next)?;
            Tensor::cat(
                &[differs, Tensor::ones(&[1], Some(DType::Bool), self.device())?],
                0,
            )?
        } else {
            let prev = tgt.narrow(0, 0, m as i64 - 1)?;
            let differs = tgt.narrow(0, 1, m as i64 - 1)?.compare(CmpOp::Ne, &prev)?;
            Tensor::cat(
                &[Tensor::ones(&[1], Some(DType::Bool), self.device())?, differs],
                0,
            )?
        };
        let chosen = edge.flat_nonzero()?;
        let (t_sel, v_sel) = (tgt.take(&chosen)?, val.take(&chosen)?);
        let flat = self.reshape(&[-1])?;
        let new = if include_self && pick != Pick::Last {
            let own = flat.take(&t_sel)?;
            if pick == Pick::Prod {
                own.mul(&v_sel)?
            } else if max {
                own.binary(BinaryOp::Maximum, &v_sel)?
            } else {
                own.binary(BinaryOp::Minimum, &v_sel)?
            }
        } else {
            v_sel
        };
        flat.index_copy(0, &t_sel, &new)?.reshape(&self.shape_i64())
    }
}

/// Which contribution `scatter_pick` keeps per target (`Prod`: the
/// product of them all).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    Max,
    Min,
    Last,
    Prod,
}

/// The running product of `val` within each run of equal `tgt` (sorted),
/// by doubling: after the pass with offset `k`, element `j` holds the
/// product of its run's elements in `(j - 2k, j]`; `log2(n)` passes of
/// elementwise work, exact for integers.
fn segmented_product(tgt: &Tensor, val: &Tensor) -> Result<Tensor> {
    let m = val.numel();
    let one = val.constant(1.0)?;
    let mut v = val.clone();
    let mut off = 1;
    while off < m {
        let (k, rest) = (off as i64, (m - off) as i64);
        let same = tgt
            .narrow(0, k, rest)?
            .compare(CmpOp::Eq, &tgt.narrow(0, 0, rest)?)?;
        let prev = Tensor::where_cond(&same, &v.narrow(0, 0, rest)?, &one)?;
        let tail = v.narrow(0, k, rest)?.mul(&prev)?;
        v = Tensor::cat(&[v.narrow(0, 0, k)?, tail], 0)?;
        off *= 2;
    }
    Ok(v)
}

/// The shape `[n, 1, 1, ...]` that broadcasts a row mask over `t` viewed as rows.
fn rows_shape(n: usize, t: &Tensor) -> Vec<i64> {
    let mut s = vec![n as i64];
    s.extend(std::iter::repeat_n(1, t.ndim().saturating_sub(1)));
    s
}

/// The broadcast shape of the index tensors.
fn broadcast_all(op: &'static str, indices: &[Tensor]) -> Result<Vec<usize>> {
    let mut shape = indices[0].shape().to_vec();
    for i in &indices[1..] {
        shape = crate::core::shape::broadcast_shapes(op, &shape, i.shape())?;
    }
    Ok(shape)
}

/// A mask must be bool.
fn check_mask(op: &'static str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        return Err(Error::UnsupportedDType {
            op,
            dtype: mask.dtype(),
            hint: " (the mask must be a bool tensor)".into(),
        });
    }
    Ok(())
}
