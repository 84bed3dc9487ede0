//! Matrix structure and masks, as PyTorch defines them: `tril`/`triu`,
//! `diagonal` (a view), `diag`, `diag_embed`, `diagflat`, `trace`,
//! `masked_fill`, `take`, `take_along_dim`, `one_hot`, `meshgrid`,
//! `cartesian_prod`, `combinations`, `block_diag`, `vander`,
//! `unravel_index`, `logspace` and `tril_indices`/`triu_indices`.
//!
//! Each is composed of views, comparisons with `arange`, `where`, `gather`
//! and `index_select`, so it runs on every backend with autograd; the ops
//! that build a larger tensor around their input (`diag` of a vector,
//! `diag_embed`) write it through a diagonal view and record the diagonal of
//! the gradient as their backward.

use super::autograd::{self, functions};
use super::{DType, Device, Layout, Tensor};
use crate::core::error::{Error, Result};
use crate::core::op::{CmpOp, ReduceOp};
use crate::core::shape::normalize_dim;
use crate::core::{HostValues, Scalar};

/// `0..n` as i64 on `device`.
fn range(n: usize, device: Device) -> Result<Tensor> {
    Tensor::arange(
        Scalar::Int(0),
        Scalar::Int(n as i64),
        Scalar::Int(1),
        Some(DType::I64),
        device,
    )
}

impl Tensor {
    /// The mask of the last two dims' elements with `col - row` compared to `k`.
    fn band(&self, op: &'static str, cmp: CmpOp, k: i64) -> Result<Tensor> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                op,
                format!("needs at least 2 dims, got shape {:?}", self.shape()),
            ));
        }
        let (m, n) = (self.shape()[self.ndim() - 2], self.shape()[self.ndim() - 1]);
        let rows = range(m, self.device())?.unsqueeze(1)?;
        let cols = range(n, self.device())?.unsqueeze(0)?;
        let mask = cols.sub(&rows)?.compare_scalar(cmp, Scalar::Int(k), false)?;
        let zero = Tensor::zeros(&[], Some(self.dtype()), self.device())?;
        Tensor::where_cond(&mask, self, &zero)
    }

    /// The lower triangle of the last two dims (elements with `col - row <=
    /// diagonal`), the rest zero.
    pub fn tril(&self, diagonal: i64) -> Result<Tensor> {
        self.band("tril", CmpOp::Le, diagonal)
    }

    /// The upper triangle of the last two dims (elements with `col - row >=
    /// diagonal`), the rest zero.
    pub fn triu(&self, diagonal: i64) -> Result<Tensor> {
        self.band("triu", CmpOp::Ge, diagonal)
    }

    /// The diagonal `offset` of dims `dim1` and `dim2` as a new last dim (a
    /// view; above the main diagonal for `offset > 0`).
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        const OP: &str = "diagonal";
        let d1 = normalize_dim(OP, dim1, self.shape())?;
        let d2 = normalize_dim(OP, dim2, self.shape())?;
        if d1 == d2 {
            return Err(Error::invalid(
                OP,
                format!(
                    "dim1 and dim2 must differ, both are {d1} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let l = self.layout();
        let (n1, n2) = (l.shape()[d1] as i64, l.shape()[d2] as i64);
        let (s1, s2) = (l.strides()[d1], l.strides()[d2]);
        let (len, start) = if offset >= 0 {
            ((n1.min(n2 - offset)).max(0), offset.min(n2.max(0)) as usize * s2)
        } else {
            (
                (n2.min(n1 + offset)).max(0),
                (-offset).min(n1.max(0)) as usize * s1,
            )
        };
        let mut shape = vec![];
        let mut strides = vec![];
        for d in (0..self.ndim()).filter(|&d| d != d1 && d != d2) {
            shape.push(l.shape()[d]);
            strides.push(l.strides()[d]);
        }
        shape.push(len as usize);
        strides.push(s1 + s2);
        let offset_elems = if len == 0 { l.offset() } else { l.offset() + start };
        let out = self.view_with(OP, Layout::from_parts(shape, strides, offset_elems))?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let in_shape = self.shape().to_vec();
        Ok(autograd::record(OP, &[self], out, move |g, _| {
            Ok(vec![Some(functions::view_scatter(&in_shape, g, move |z| {
                z.diagonal(offset, d1 as i64, d2 as i64)
            })?)])
        }))
    }

    /// `torch.diag_embed`: the last dim of this tensor on the diagonal
    /// `offset` of dims `dim1`, `dim2` of a new tensor, zeros elsewhere.
    pub fn diag_embed(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        const OP: &str = "diag_embed";
        let x = if self.ndim() == 0 {
            self.reshape(&[1])?
        } else {
            self.clone()
        };
        let nd = x.ndim() + 1;
        let norm = |d: i64| -> Result<usize> {
            let shape = vec![0; nd];
            normalize_dim(OP, d, &shape).map_err(|_| Error::DimOutOfRange {
                op: OP,
                dim: d,
                ndim: nd,
                shape: x.shape().to_vec(),
            })
        };
        let (d1, d2) = (norm(dim1)?, norm(dim2)?);
        if d1 == d2 {
            return Err(Error::invalid(
                OP,
                format!("dim1 and dim2 must differ, both are {d1}"),
            ));
        }
        let n = x.shape()[x.ndim() - 1] + offset.unsigned_abs() as usize;
        let mut rest = x.shape()[..x.ndim() - 1].iter().copied();
        let shape: Vec<usize> = (0..nd)
            .map(|d| {
                if d == d1 || d == d2 {
                    n
                } else {
                    rest.next().unwrap_or(1)
                }
            })
            .collect();
        let out = autograd::no_grad(|| {
            let z = Tensor::zeros(&shape, Some(x.dtype()), x.device())?;
            z.diagonal(offset, d1 as i64, d2 as i64)?.copy_(&x)?;
            Ok::<_, Error>(z)
        })?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let in_shape: Vec<i64> = self.shape().iter().map(|&s| s as i64).collect();
        Ok(autograd::record(OP, &[self], out, move |g, _| {
            Ok(vec![Some(
                g.diagonal(offset, d1 as i64, d2 as i64)?.reshape(&in_shape)?,
            )])
        }))
    }

    /// `torch.diag`: a 1-D tensor on the diagonal `offset` of a new square
    /// matrix, or the diagonal of a matrix (a copy).
    pub fn diag(&self, offset: i64) -> Result<Tensor> {
        match self.ndim() {
            1 => self.diag_embed(offset, 0, 1),
            2 => self.diagonal(offset, 0, 1)?.clone_data(),
            _ => Err(Error::shape(
                "diag",
                format!("needs a 1-D or 2-D tensor, got shape {:?}", self.shape()),
            )),
        }
    }

    /// The flattened tensor on the diagonal `offset` of a new matrix.
    pub fn diagflat(&self, offset: i64) -> Result<Tensor> {
        self.flatten(0, -1)?.diag_embed(offset, 0, 1)
    }

    /// The sum of a matrix's main diagonal.
    pub fn trace(&self) -> Result<Tensor> {
        if self.ndim() != 2 {
            return Err(Error::shape(
                "trace",
                format!("needs a matrix, got shape {:?}", self.shape()),
            ));
        }
        self.diagonal(0, 0, 1)?.reduce(ReduceOp::Sum, None, false)
    }

    /// `value` where `mask` (bool, broadcast to this shape) is true.
    pub fn masked_fill(&self, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
        const OP: &str = "masked_fill";
        if mask.dtype() != DType::Bool {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: mask.dtype(),
                hint: " as a mask (it must be bool)".into(),
            });
        }
        if value.ndim() != 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "value must be a number or a 0-dim tensor, got shape {:?}",
                    value.shape()
                ),
            ));
        }
        let shape = crate::core::shape::broadcast_shapes(OP, self.shape(), mask.shape())?;
        if shape != self.shape() {
            return Err(Error::shape(
                OP,
                format!(
                    "mask of shape {:?} does not broadcast to the input's shape {:?}",
                    mask.shape(),
                    self.shape()
                ),
            ));
        }
        let value = value.to_dtype(self.dtype())?.to_device(self.device())?;
        Tensor::where_cond(mask, &value, self)
    }

    /// The elements at `index` (any shape, i64) of the flattened tensor.
    pub fn take(&self, index: &Tensor) -> Result<Tensor> {
        let shape: Vec<i64> = index.shape().iter().map(|&s| s as i64).collect();
        self.flatten(0, -1)?
            .index_select(0, &index.flatten(0, -1)?)?
            .reshape(&shape)
    }

    /// `torch.take_along_dim`: `gather` along `dim` with the other dims of
    /// this tensor and `indices` broadcast; without a dim, over the flattened
    /// tensor.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        const OP: &str = "take_along_dim";
        let Some(dim) = dim else {
            return self.flatten(0, -1)?.gather(0, &indices.flatten(0, -1)?);
        };
        if self.ndim() != indices.ndim() {
            return Err(Error::shape(
                OP,
                format!(
                    "input of shape {:?} and indices of shape {:?} must have the same number of dims",
                    self.shape(),
                    indices.shape()
                ),
            ));
        }
        let d = normalize_dim(OP, dim, self.shape())?;
        let mut xs: Vec<i64> = vec![];
        let mut is: Vec<i64> = vec![];
        for k in 0..self.ndim() {
            let (a, b) = (self.shape()[k], indices.shape()[k]);
            if k == d {
                xs.push(a as i64);
                is.push(b as i64);
                continue;
            }
            let s = crate::core::shape::broadcast_shapes(OP, &[a], &[b])?[0] as i64;
            xs.push(s);
            is.push(s);
        }
        self.expand(&xs)?.gather(d as i64, &indices.expand(&is)?)
    }

    /// `F.one_hot`: each integer class as a row of `classes` i64 (0 or 1);
    /// `classes` `None` takes the largest value + 1 (which reads the values
    /// back, as PyTorch does). Values outside `0..classes` are an error.
    pub fn one_hot(&self, classes: Option<i64>) -> Result<Tensor> {
        const OP: &str = "one_hot";
        if !self.dtype().is_int() {
            return Err(Error::UnsupportedDType {
                op: OP,
                dtype: self.dtype(),
                hint: " (one_hot takes an integer tensor of class indices)".into(),
            });
        }
        let (lo, hi) = if self.numel() == 0 {
            (0, -1)
        } else {
            (
                self.reduce(ReduceOp::Min, None, false)?.item()?.to_i64(),
                self.reduce(ReduceOp::Max, None, false)?.item()?.to_i64(),
            )
        };
        let classes = match classes {
            None | Some(-1) => {
                if self.numel() == 0 {
                    return Err(Error::invalid(
                        OP,
                        "cannot infer the number of classes of an empty tensor",
                    ));
                }
                hi + 1
            }
            Some(c) if c < 0 => {
                return Err(Error::invalid(
                    OP,
                    format!("num_classes must be -1 or non-negative, got {c}"),
                ))
            }
            Some(c) => c,
        };
        if lo < 0 || hi >= classes {
            return Err(Error::invalid(
                OP,
                format!(
                    "class values must lie in 0..{classes}, found {lo}..={hi} (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let classes = range(classes as usize, self.device())?;
        self.to_dtype(DType::I64)?
            .unsqueeze(-1)?
            .compare(CmpOp::Eq, &classes)?
            .to_dtype(DType::I64)
    }

    /// `torch.meshgrid`: 1-D tensors spread over the grid of their sizes
    /// (expanded views); `"ij"` indexes the grid by the inputs' order, `"xy"`
    /// swaps the first two grid dims.
    pub fn meshgrid(tensors: &[Tensor], indexing: &str) -> Result<Vec<Tensor>> {
        const OP: &str = "meshgrid";
        if indexing != "ij" && indexing != "xy" {
            return Err(Error::invalid(
                OP,
                format!("indexing must be \"ij\" or \"xy\", got \"{indexing}\""),
            ));
        }
        if let Some(t) = tensors.iter().find(|t| t.ndim() > 1) {
            return Err(Error::shape(
                OP,
                format!("expects 0-D or 1-D tensors, got shape {:?}", t.shape()),
            ));
        }
        let sizes: Vec<i64> = tensors.iter().map(|t| t.numel() as i64).collect();
        let swap = indexing == "xy" && tensors.len() >= 2;
        let pos = |i: usize| if swap && i < 2 { 1 - i } else { i };
        let mut grid = sizes.clone();
        if swap {
            grid.swap(0, 1);
        }
        tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut shape = vec![1i64; tensors.len()];
                shape[pos(i)] = -1;
                t.reshape(&shape)?.expand(&grid)
            })
            .collect()
    }

    /// `fill_diagonal_`'s result: this tensor (at least 2-D, all dims equal
    /// beyond 2-D) with `value` on its main diagonal; with `wrap` a tall
    /// matrix's diagonal starts again every `cols + 1` rows, as NumPy's.
    pub fn fill_diagonal(&self, value: Scalar, wrap: bool) -> Result<Tensor> {
        const OP: &str = "fill_diagonal_";
        let s = self.shape();
        if s.len() < 2 || (s.len() > 2 && s.iter().any(|&d| d != s[0])) {
            return Err(Error::shape(
                OP,
                format!("expects a matrix, or all dims of equal size, got shape {s:?}"),
            ));
        }
        // the flat positions of the diagonal: multiples of the sum of the
        // row-major strides (for a tall matrix with wrap, every cols + 1)
        let strides: i64 = {
            let mut acc = 1i64;
            let mut total = 0i64;
            for &d in s.iter().rev() {
                total += acc;
                acc *= d as i64;
            }
            total
        };
        let numel = self.numel() as i64;
        let min = *s.iter().min().unwrap_or(&0) as i64;
        let end = if s.len() == 2 && wrap {
            numel
        } else {
            (min * strides).min(numel)
        };
        let flat = range(numel as usize, self.device())?;
        let on = flat
            .binary_scalar(crate::core::op::BinaryOp::Rem, Scalar::Int(strides), false)?
            .compare_scalar(CmpOp::Eq, Scalar::Int(0), false)?
            .binary(
                crate::core::op::BinaryOp::BitAnd,
                &flat.compare_scalar(CmpOp::Lt, Scalar::Int(end), false)?,
            )?;
        let shape: Vec<i64> = s.iter().map(|&d| d as i64).collect();
        let value = Tensor::scalar(value, self.dtype(), self.device())?;
        Tensor::where_cond(&on.reshape(&shape)?, &value, self)
    }

    /// `torch.put`: this tensor with `source`'s values written at the flat
    /// (row-major) positions `index` (negative ones count from the end),
    /// or added there with `accumulate`.
    pub fn put(&self, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<Tensor> {
        const OP: &str = "put";
        if index.numel() != source.numel() {
            return Err(Error::shape(
                OP,
                format!(
                    "index ({} values, shape {:?}) and source ({} values, shape {:?}) must have as many elements",
                    index.numel(),
                    index.shape(),
                    source.numel(),
                    source.shape()
                ),
            ));
        }
        let shape: Vec<i64> = self.shape().iter().map(|&d| d as i64).collect();
        self.reshape(&[-1])?
            .index_put(
                &[index.reshape(&[-1])?],
                &source.reshape(&[-1])?.to_dtype(self.dtype())?,
                accumulate,
            )?
            .reshape(&shape)
    }

    /// `torch.combinations`: the `r`-element combinations of a 1-D tensor's
    /// elements (with repeats for `with_replacement`), one per row, in
    /// lexicographic order of their positions.
    pub fn combinations(&self, r: i64, with_replacement: bool) -> Result<Tensor> {
        const OP: &str = "combinations";
        if self.ndim() != 1 {
            return Err(Error::shape(
                OP,
                format!("expects a 1-D tensor, got shape {:?}", self.shape()),
            ));
        }
        if r < 0 {
            return Err(Error::invalid(OP, format!("r must be non-negative, got {r}")));
        }
        let (n, r) = (self.numel(), r as usize);
        if r == 0 {
            return self.narrow(0, 0, 0);
        }
        // the positions of each combination, column by column
        let mut columns: Vec<Vec<i64>> = vec![vec![]; r];
        let mut pick: Vec<usize> = vec![0; r];
        if !with_replacement {
            pick = (0..r).collect();
        }
        let fits = |p: &[usize]| p.last().is_some_and(|&l| l < n);
        while fits(&pick) {
            for (c, &i) in columns.iter_mut().zip(&pick) {
                c.push(i as i64);
            }
            // the rightmost position that can still move on
            let step = usize::from(!with_replacement);
            let Some(j) = (0..r).rev().find(|&j| pick[j] + step * (r - 1 - j) + 1 < n) else {
                break;
            };
            pick[j] += 1;
            for k in j + 1..r {
                pick[k] = pick[k - 1] + step;
            }
        }
        let parts = columns
            .into_iter()
            .map(|c| {
                let len = c.len();
                let index = Tensor::from_host(&HostValues::Int(c), &[len], DType::I64, self.device())?;
                self.index_select(0, &index)
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&parts, 1)
    }

    /// `torch.block_diag`: the matrices (0-D and 1-D tensors count as one
    /// row) along the diagonal of one matrix, zeros elsewhere, in their
    /// promoted dtype.
    pub fn block_diag(tensors: &[Tensor]) -> Result<Tensor> {
        const OP: &str = "block_diag";
        let Some(first) = tensors.first() else {
            return Tensor::zeros(&[0, 0], Some(DType::F32), Device::Cpu);
        };
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |d, t| DType::promote(d, t.dtype()));
        let mut blocks = Vec::with_capacity(tensors.len());
        for (i, t) in tensors.iter().enumerate() {
            if t.device() != first.device() {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "tensor {i} is on {} and tensor 0 on {}",
                        t.device(),
                        first.device()
                    ),
                ));
            }
            blocks.push(match t.ndim() {
                0 => t.reshape(&[1, 1])?,
                1 => t.unsqueeze(0)?,
                2 => t.clone(),
                _ => {
                    return Err(Error::shape(
                        OP,
                        format!(
                            "expects tensors of at most 2 dims, got shape {:?} (tensor {i})",
                            t.shape()
                        ),
                    ))
                }
            });
        }
        let cols: usize = blocks.iter().map(|b| b.shape()[1]).sum();
        let mut at = 0;
        let mut rows = Vec::with_capacity(blocks.len());
        for b in &blocks {
            let c = b.shape()[1];
            let b = b.to_dtype(dtype)?;
            rows.push(b.pad(&[at as i64, (cols - at - c) as i64], "constant", 0.0)?);
            at += c;
        }
        Tensor::cat(&rows, 0)
    }

    /// `torch.vander` (`increasing` false) and `torch.linalg.vander` (true):
    /// the powers `0..n` of the last dim's values, as columns (default
    /// `n`: that dim's size).
    pub fn vander(&self, n: Option<i64>, increasing: bool) -> Result<Tensor> {
        const OP: &str = "vander";
        if self.ndim() == 0 {
            return Err(Error::shape(OP, "expects at least 1 dim, got a 0-dim tensor"));
        }
        let len = self.shape()[self.ndim() - 1] as i64;
        let n = n.unwrap_or(len);
        if n < 0 {
            return Err(Error::invalid(OP, format!("N must be non-negative, got {n}")));
        }
        let x = if self.dtype() == DType::Bool {
            self.to_dtype(DType::I64)?
        } else {
            self.clone()
        };
        let mut lead: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
        if n == 0 {
            lead.push(0);
            return Tensor::zeros(
                &lead.iter().map(|&d| d as usize).collect::<Vec<_>>(),
                Some(x.dtype()),
                x.device(),
            );
        }
        let mut ones_shape: Vec<usize> = x.shape().to_vec();
        ones_shape.push(1);
        let ones = Tensor::ones(&ones_shape, Some(x.dtype()), x.device())?;
        lead.push(n - 1);
        let powers =
            Tensor::cat(&[ones, x.unsqueeze(-1)?.expand(&lead)?], -1)?.cumprod(-1, Some(x.dtype()))?;
        if increasing {
            Ok(powers)
        } else {
            powers.flip(&[-1])
        }
    }

    /// `torch.unravel_index`: the coordinates in `shape` of these flat
    /// (row-major) indices, one tensor per dim; negative indices count
    /// from the end.
    pub fn unravel_index(&self, shape: &[usize]) -> Result<Vec<Tensor>> {
        const OP: &str = "unravel_index";
        if !self.dtype().is_int() {
            return Err(Error::invalid(
                OP,
                format!("expects integer indices, got {}", self.dtype()),
            ));
        }
        let numel: usize = shape.iter().product();
        let idx = self.to_dtype(DType::I64)?;
        if idx.numel() > 0 {
            let lo = idx.reduce(ReduceOp::Min, None, false)?.item()?.to_i64();
            let hi = idx.reduce(ReduceOp::Max, None, false)?.item()?.to_i64();
            if lo < -(numel as i64) || hi >= numel as i64 {
                return Err(Error::invalid(
                    OP,
                    format!("indices must be in [-{numel}, {numel}) for shape {shape:?}, got values in [{lo}, {hi}]"),
                ));
            }
        }
        use crate::core::op::BinaryOp;
        // negative indices count from the end
        let mut rest = idx.binary_scalar(BinaryOp::Rem, Scalar::Int(numel.max(1) as i64), false)?;
        let mut out = Vec::with_capacity(shape.len());
        for &size in shape.iter().rev() {
            let size = Scalar::Int(size.max(1) as i64);
            out.push(rest.binary_scalar(BinaryOp::Rem, size, false)?);
            rest = rest.binary_scalar(BinaryOp::FloorDivide, size, false)?;
        }
        out.reverse();
        Ok(out)
    }

    /// `torch.cartesian_prod`: every combination of the 1-D tensors'
    /// elements, one per row.
    pub fn cartesian_prod(tensors: &[Tensor]) -> Result<Tensor> {
        if tensors.len() == 1 {
            return tensors[0].clone_data();
        }
        let grids = Tensor::meshgrid(tensors, "ij")?
            .iter()
            .map(|g| g.flatten(0, -1))
            .collect::<Result<Vec<_>>>()?;
        Tensor::stack(&grids, 1)
    }

    /// `base ** linspace(start, end, steps)` (f32 by default), computed on
    /// the host in f64 (as `linspace` is), so both devices get the same,
    /// correctly rounded powers.
    pub fn logspace(
        start: f64,
        end: f64,
        steps: i64,
        base: f64,
        dtype: Option<DType>,
        device: Device,
    ) -> Result<Tensor> {
        let exps = Tensor::linspace(start, end, steps, Some(DType::F64), Device::Cpu)?.to_host()?;
        let n = steps.max(0) as usize;
        let values: Vec<f64> = (0..n)
            .filter_map(|i| exps.get(i))
            .map(|e| base.powf(e.to_f64()))
            .collect();
        Tensor::from_host(
            &HostValues::Float(values),
            &[n],
            dtype.unwrap_or(DType::F32),
            device,
        )
    }

    /// The (row, column) indices of the lower (`upper` false) or upper
    /// triangle of a `rows × cols` matrix with diagonal `offset`, as a `[2, N]`
    /// i64 tensor in row-major order.
    pub fn triangle_indices(
        rows: i64,
        cols: i64,
        offset: i64,
        upper: bool,
        device: Device,
    ) -> Result<Tensor> {
        let op = if upper { "triu_indices" } else { "tril_indices" };
        if rows < 0 || cols < 0 {
            return Err(Error::invalid(
                op,
                format!("row and col must be non-negative, got {rows} and {cols}"),
            ));
        }
        // about half the matrix, two i64 each: refused before the loop when too big
        let cells = (rows as u64).saturating_mul(cols as u64);
        crate::core::memory::check_bytes(op, cells.saturating_mul(8).min(usize::MAX as u64) as usize, true)?;
        let (mut r, mut c) = (vec![], vec![]);
        for i in 0..rows {
            for j in 0..cols {
                let keep = if upper { j - i >= offset } else { j - i <= offset };
                if keep {
                    r.push(i);
                    c.push(j);
                }
            }
        }
        let n = r.len();
        r.extend(c);
        Tensor::from_host(&HostValues::Int(r), &[2, n], DType::I64, device)
    }
}
