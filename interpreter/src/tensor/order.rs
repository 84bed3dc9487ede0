//! Scans and sorting along one dim: `cumsum`, `cumprod`, `cummax`,
//! `cummin`, `logcumsumexp` (own kernels, one pass of chunks per row),
//! `sort` (stable; NaN largest), `argsort`, `msort`, `topk`, `kthvalue`,
//! `median`, `nanmedian` and `mode`. The dim is moved last and made dense for the
//! kernels, then moved back.
//!
//! Gradients: `cumsum` by a reversed cumsum, `cumprod` by PyTorch's formula
//! that stays exact at zeros, `cummax`/`cummin` by scattering into the
//! positions, `logcumsumexp` through reversed `logcumsumexp`s of the
//! gradient's positive and negative parts; sorted values are re-read through
//! `gather` with the positions, so every sort-based op differentiates
//! through it.

use super::autograd::{self, Saved};
use super::{DType, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, ReduceOp, ScanOp};
use crate::core::shape::normalize_dim;
use crate::core::Scalar;

impl Tensor {
    /// This tensor with `dim` last and dense: (rows, len) of it.
    fn rows_along(&self, op: &'static str, dim: i64) -> Result<(Tensor, usize, usize, usize)> {
        if self.ndim() == 0 {
            if dim != 0 && dim != -1 {
                return Err(Error::shape(
                    op,
                    format!("dim {dim} is out of range for a 0-dim tensor"),
                ));
            }
            return Ok((self.reshape(&[1])?.dense()?, 1, 1, 0));
        }
        let d = normalize_dim(op, dim, self.shape())?;
        // dense: the kernels read the storage from its start
        let moved = self.movedim(&[d as i64], &[-1])?.dense()?;
        let len = self.shape()[d];
        Ok((moved, self.numel() / len.max(1), len, d))
    }

    /// Brings a result of [`rows_along`]'s layout back to this tensor's.
    fn rows_back(&self, r: Tensor, d: usize) -> Result<Tensor> {
        if self.ndim() == 0 {
            return r.reshape(&[]);
        }
        let mut shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        shape.remove(d);
        shape.push(self.shape()[d] as i64);
        let r = r.reshape(&shape)?;
        if d + 1 == self.ndim() {
            Ok(r)
        } else {
            r.movedim(&[-1], &[d as i64])?.contiguous()
        }
    }

    /// The scan `op` along `dim`, and the positions for cummax/cummin; no
    /// recording (see the public ops).
    fn scan_forward(&self, op: ScanOp, dim: i64) -> Result<(Tensor, Option<Tensor>)> {
        let compute = match self.dtype() {
            d if op.computes_in(d) => d,
            d if d.is_float() => d,
            _ if op == ScanOp::Logcumsumexp => DType::F32,
            _ => DType::I64,
        };
        let x = self.to_dtype(compute)?;
        let (rows_t, rows, len, d) = x.rows_along(op.name(), dim)?;
        let (y, yi) = rows_t.storage().scan(op, rows, len)?;
        let y = Tensor::from_storage(op.name(), y, rows_t.shape())?;
        let y = self.rows_back(y, d)?;
        let yi = match yi {
            Some(i) => Some(self.rows_back(Tensor::from_storage(op.name(), i, rows_t.shape())?, d)?),
            None => None,
        };
        Ok((y, yi))
    }

    /// Running sum along `dim` (integers and bool sum in i64, unless `dtype` says otherwise).
    pub fn cumsum(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = match dtype {
            Some(d) => self.to_dtype(d)?,
            None => super::autocast::widen(self)?,
        };
        if !autograd::needs_grad(&[&x]) {
            return Ok(x.scan_forward(ScanOp::Cumsum, dim)?.0);
        }
        let y = autograd::forward(|| x.scan_forward(ScanOp::Cumsum, dim))?.0;
        let nd = x.ndim();
        Ok(autograd::record("cumsum", &[&x], y, move |g, _| {
            if nd == 0 {
                return Ok(vec![Some(g.clone())]);
            }
            Ok(vec![Some(g.flip(&[dim])?.cumsum(dim, None)?.flip(&[dim])?)])
        }))
    }

    /// Running product along `dim`.
    pub fn cumprod(&self, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
        let x = match dtype {
            Some(d) => self.to_dtype(d)?,
            None => super::autocast::widen(self)?,
        };
        if !autograd::needs_grad(&[&x]) {
            return Ok(x.scan_forward(ScanOp::Cumprod, dim)?.0);
        }
        let y = autograd::forward(|| x.scan_forward(ScanOp::Cumprod, dim))?.0;
        let (xs, ys) = (Saved::new(&x), Saved::new(&y));
        Ok(autograd::record("cumprod", &[&x], y, move |g, _| {
            let (x, y) = (xs.get("cumprod")?, ys.get("cumprod")?);
            Ok(vec![Some(cumprod_backward(x, y, g, dim)?)])
        }))
    }

    /// Running maximum along `dim`: `[values, indices]` (ties and NaN take
    /// the later position).
    pub fn cummax(&self, dim: i64) -> Result<Vec<Tensor>> {
        self.arg_scan(ScanOp::Cummax, dim)
    }

    /// Running minimum along `dim`: `[values, indices]`.
    pub fn cummin(&self, dim: i64) -> Result<Vec<Tensor>> {
        self.arg_scan(ScanOp::Cummin, dim)
    }

    fn arg_scan(&self, op: ScanOp, dim: i64) -> Result<Vec<Tensor>> {
        let (y, yi) = autograd::forward(|| self.scan_forward(op, dim))?;
        let yi = yi.expect("cummax and cummin give positions");
        let y = y.to_dtype(self.dtype())?;
        if !autograd::needs_grad(&[self]) {
            return Ok(vec![y, yi]);
        }
        // the values are the input read at the positions
        let y = if self.ndim() == 0 {
            self.clone()
        } else {
            self.gather(dim, &yi)?
        };
        Ok(vec![y, yi])
    }

    /// Running `log(sum(exp(x)))` along `dim`, computed stably.
    pub fn logcumsumexp(&self, dim: i64) -> Result<Tensor> {
        let x = self.to_float()?;
        if !autograd::needs_grad(&[&x]) {
            return Ok(x.scan_forward(ScanOp::Logcumsumexp, dim)?.0);
        }
        let y = autograd::forward(|| x.scan_forward(ScanOp::Logcumsumexp, dim))?.0;
        let (xs, ys) = (Saved::new(&x), Saved::new(&y));
        Ok(autograd::record("logcumsumexp", &[&x], y, move |g, _| {
            let (x, y) = (xs.get("logcumsumexp")?, ys.get("logcumsumexp")?);
            // Σ_{j >= i} g_j e^(x_i - y_j), by parts of one sign in log space
            let rev = |t: &Tensor| -> Result<Tensor> {
                if t.ndim() == 0 {
                    return Ok(t.clone());
                }
                t.flip(&[dim])?.logcumsumexp(dim)?.flip(&[dim])
            };
            let zero = g.constant(0.0)?;
            let part = |sign: f64| -> Result<Tensor> {
                let gs = g.mul_scalar(sign)?;
                let pos = gs.compare_scalar(CmpOp::Gt, Scalar::Float(0.0), false)?;
                let lg = Tensor::where_cond(&pos, &gs, &zero)?.log()?;
                rev(&lg.sub(y)?)?.add(x)?.exp()
            };
            Ok(vec![Some(part(1.0)?.sub(&part(-1.0)?)?)])
        }))
    }

    /// The values along `dim` in order (ascending, or descending), stably, NaN
    /// counted largest: `[values, indices]`.
    pub fn sort(&self, dim: i64, descending: bool) -> Result<Vec<Tensor>> {
        let (rows_t, rows, len, d) = self.rows_along("sort", dim)?;
        let (y, yi) = autograd::forward(|| -> Result<(Tensor, Tensor)> {
            let (y, yi) = rows_t.storage().sort(rows, len, descending)?;
            Ok((
                self.rows_back(Tensor::from_storage("sort", y, rows_t.shape())?, d)?,
                self.rows_back(Tensor::from_storage("sort", yi, rows_t.shape())?, d)?,
            ))
        })?;
        if !autograd::needs_grad(&[self]) || self.ndim() == 0 {
            return Ok(vec![y, yi]);
        }
        Ok(vec![self.gather(dim, &yi)?, yi])
    }

    /// The positions that sort the values along `dim`.
    pub fn argsort(&self, dim: i64, descending: bool) -> Result<Tensor> {
        Ok(self.detach().sort(dim, descending)?.swap_remove(1))
    }

    /// The `k` largest (or smallest) values along `dim` and their positions,
    /// in order.
    pub fn topk(&self, k: i64, dim: i64, largest: bool) -> Result<Vec<Tensor>> {
        let size = if self.ndim() == 0 {
            1
        } else {
            self.shape()[normalize_dim("topk", dim, self.shape())?]
        };
        if k < 0 || k as usize > size {
            return Err(Error::invalid(
                "topk",
                format!(
                    "k ({k}) is out of range for dim {dim} of size {size} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let s = self.sort(dim, largest)?;
        if self.ndim() == 0 {
            return Ok(s);
        }
        s.iter().map(|t| t.narrow(dim, 0, k)?.contiguous()).collect()
    }

    /// The `k`-th smallest value along `dim` (k from 1) and its position.
    pub fn kthvalue(&self, k: i64, dim: i64, keepdim: bool) -> Result<Vec<Tensor>> {
        let size = if self.ndim() == 0 {
            1
        } else {
            self.shape()[normalize_dim("kthvalue", dim, self.shape())?]
        };
        if k < 1 || k as usize > size {
            return Err(Error::invalid(
                "kthvalue",
                format!(
                    "k ({k}) is out of range for dim {dim} of size {size} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let s = self.sort(dim, false)?;
        s.iter().map(|t| pick(t, dim, k - 1, keepdim)).collect()
    }

    /// The lower median along `dim` and its position; a row with NaN gives
    /// NaN (at its first NaN), or, for `ignore_nan`, the median of the rest.
    pub fn median_dim(&self, dim: i64, keepdim: bool, ignore_nan: bool) -> Result<Vec<Tensor>> {
        let op = if ignore_nan { "nanmedian" } else { "median" };
        let size = if self.ndim() == 0 {
            1
        } else {
            self.shape()[normalize_dim(op, dim, self.shape())?]
        };
        if size == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "cannot take the median of an empty dim (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let s = self.sort(dim, false)?;
        if self.ndim() == 0 {
            return Ok(s);
        }
        if !self.dtype().is_float() {
            return s
                .iter()
                .map(|t| pick(t, dim, (size as i64 - 1) / 2, keepdim))
                .collect();
        }
        // NaN sorts last: count them per row
        let nans = self
            .isnan()?
            .to_dtype(DType::I64)?
            .reduce(ReduceOp::Sum, Some(&[dim]), true)?;
        let n = Tensor::scalar(Scalar::Int(size as i64), DType::I64, self.device())?;
        let at = if ignore_nan {
            // the lower median of the values that are not NaN (0 when all are)
            n.sub(&nans)?
                .sub_scalar(1)?
                .maximum_scalar(0)?
                .div_scalar(2)?
                .floor()?
                .to_dtype(DType::I64)?
        } else {
            let has_nan = nans.compare_scalar(CmpOp::Gt, Scalar::Int(0), false)?;
            let mid = Tensor::scalar(Scalar::Int((size as i64 - 1) / 2), DType::I64, self.device())?;
            Tensor::where_cond(&has_nan, &n.sub(&nans)?, &mid)?
        };
        let out: Vec<Tensor> = s.iter().map(|t| t.gather(dim, &at)).collect::<Result<_>>()?;
        if keepdim {
            return Ok(out);
        }
        out.iter().map(|t| t.squeeze(Some(&[dim]))).collect()
    }

    /// `torch.mode`: the most frequent value along `dim` (the smallest of
    /// equally frequent ones) and the position of its last occurrence.
    /// Through the sort: runs of equal sorted values are counted with a
    /// scan, and the longest run wins.
    pub fn mode(&self, dim: i64, keepdim: bool) -> Result<Vec<Tensor>> {
        const OP: &str = "mode";
        let d = if self.ndim() == 0 {
            0
        } else {
            normalize_dim(OP, dim, self.shape())? as i64
        };
        let size = if self.ndim() == 0 {
            1
        } else {
            self.shape()[d as usize]
        };
        if size == 0 {
            return Err(Error::invalid(
                OP,
                format!("cannot take the mode of an empty dim (shape {:?})", self.shape()),
            ));
        }
        if self.ndim() == 0 {
            let zero = Tensor::scalar(Scalar::Int(0), DType::I64, self.device())?;
            return Ok(vec![self.clone(), zero]);
        }
        let s = self.detach().sort(d, false)?;
        let (sorted, order) = (&s[0], &s[1]);
        let n = size as i64;
        // where a run of equal values starts (NaN equals NaN here, as one value)
        let starts = if n == 1 {
            sorted
                .constant(1.0)?
                .to_dtype(DType::Bool)?
                .broadcast_to(sorted.shape())?
        } else {
            let (next, prev) = (sorted.narrow(d, 1, n - 1)?, sorted.narrow(d, 0, n - 1)?);
            let both_nan = next.isnan()?.binary(BinaryOp::BitAnd, &prev.isnan()?)?;
            let not_both = both_nan.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?;
            let differ = next
                .compare(CmpOp::Ne, &prev)?
                .binary(BinaryOp::BitAnd, &not_both)?;
            let first = sorted.narrow(d, 0, 1)?.constant(1.0)?.to_dtype(DType::Bool)?;
            let first = first.broadcast_to(sorted.narrow(d, 0, 1)?.shape())?;
            Tensor::cat(&[first, differ], d)?
        };
        // each element's run number, and the length of the run ending there
        let run = starts.to_dtype(DType::I64)?.cumsum(d, None)?.sub_scalar(1)?;
        let ones = Tensor::ones(sorted.shape(), Some(DType::I64), self.device())?;
        let lengths =
            Tensor::zeros(sorted.shape(), Some(DType::I64), self.device())?.scatter_add(d, &run, &ones)?;
        // the first longest run (the smallest value), and where it ends
        let best = lengths.reduce(ReduceOp::ArgMax, Some(&[d]), true)?;
        let ends = lengths.cumsum(d, None)?.sub_scalar(1)?;
        let end = ends.gather(d, &best)?;
        let values = self.sort(d, false)?[0].gather(d, &end)?;
        let indices = order.gather(d, &end)?;
        if keepdim {
            Ok(vec![values, indices])
        } else {
            Ok(vec![values.squeeze(Some(&[d]))?, indices.squeeze(Some(&[d]))?])
        }
    }

    /// The lower median of all elements (NaN if any is NaN, or, for
    /// `ignore_nan`, of the others).
    pub fn median_all(&self, ignore_nan: bool) -> Result<Tensor> {
        let flat = self.reshape(&[-1])?;
        Ok(flat.median_dim(0, false, ignore_nan)?.swap_remove(0))
    }
}

/// `t` at position `k` of `dim` (kept as size 1 when `keepdim`).
fn pick(t: &Tensor, dim: i64, k: i64, keepdim: bool) -> Result<Tensor> {
    if t.ndim() == 0 {
        return Ok(t.clone());
    }
    let v = t.narrow(dim, k, 1)?;
    if keepdim {
        v.contiguous()
    } else {
        v.squeeze(Some(&[dim]))?.contiguous()
    }
}

/// The gradient of `y = cumprod(x)` along `dim`, exact at zeros: before a
/// row's first zero `revcumsum(g y) / x`; at it, the reversed cumsum of
/// `g` times the product with that zero left out; after it, 0.
fn cumprod_backward(x: &Tensor, y: &Tensor, g: &Tensor, dim: i64) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(g.clone());
    }
    let rev_cumsum = |t: &Tensor| -> Result<Tensor> { t.flip(&[dim])?.cumsum(dim, None)?.flip(&[dim]) };
    let zero = x.compare_scalar(CmpOp::Eq, Scalar::Float(0.0), false)?;
    let zeros_so_far = zero.to_dtype(DType::I64)?.cumsum(dim, None)?;
    let before = zeros_so_far.compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?;
    let first = zero.binary(
        crate::core::op::BinaryOp::Mul,
        &zeros_so_far.compare_scalar(CmpOp::Eq, Scalar::Int(1), false)?,
    )?;
    let one = x.constant(1.0)?;
    let safe_x = Tensor::where_cond(&before, x, &one)?;
    let g_before = rev_cumsum(&g.mul(y)?)?.div(&safe_x)?;
    // the product with the first zero replaced by 1
    let y_skip = Tensor::where_cond(&first, &one, x)?.cumprod(dim, None)?;
    let g_first = rev_cumsum(&g.mul(&y_skip)?)?;
    let z = x.constant(0.0)?;
    let out = Tensor::where_cond(&first, &g_first, &z)?;
    Tensor::where_cond(&before, &g_before, &out)
}
