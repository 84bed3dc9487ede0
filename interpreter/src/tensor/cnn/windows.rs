//! The sliding windows of a tensor's spatial dims as a view, and its adjoint:
//! `x [N, C, *S]` seen as `[N, C, *O, *k]` (every window position, then the
//! kernel offsets inside it; no copy), and the sum of such windows back into
//! `[N, C, *S]`. Convolution and pooling are built on them; `F.unfold`
//! (im2col) and `F.fold` (col2im) are their matrix forms. Each is the other's
//! gradient, so gradients of any order work.

use super::{batched, pad_spatial, per_dim_min};
use crate::core::error::{Error, Result};
use crate::core::index::{scatter_dtype, Along};
use crate::tensor::{autograd, DType, Layout, Tensor};

/// Window positions along one dim of `size` elements.
pub(crate) fn positions(size: i64, kernel: i64, dilation: i64, stride: i64) -> i64 {
    let span = dilation * (kernel - 1) + 1;
    if size < span {
        0
    } else {
        (size - span) / stride + 1
    }
}

/// The geometry of a window view: kernel, dilation and stride per spatial dim.
#[derive(Clone, Debug)]
pub(crate) struct Windows {
    pub kernel: Vec<i64>,
    pub dilation: Vec<i64>,
    pub stride: Vec<i64>,
}

impl Windows {
    /// Spatial dims.
    pub fn dims(&self) -> usize {
        self.kernel.len()
    }

    /// Elements in one window.
    pub fn volume(&self) -> i64 {
        self.kernel.iter().product()
    }

    /// True when `o` windows never share an element: in every dim one
    /// window, a kernel of one, or windows spaced past their span.
    pub fn disjoint(&self, o: &[i64]) -> bool {
        (0..self.dims()).all(|i| {
            o[i] <= 1 || self.kernel[i] == 1 || self.stride[i] > self.dilation[i] * (self.kernel[i] - 1)
        })
    }

    /// Window positions over `spatial`.
    pub fn positions(&self, spatial: &[usize]) -> Vec<i64> {
        (0..self.dims())
            .map(|i| {
                positions(
                    spatial[i] as i64,
                    self.kernel[i],
                    self.dilation[i],
                    self.stride[i],
                )
            })
            .collect()
    }
}

/// Overlapping windows `cols [*lead, *O, *k]` summed into a new tensor of
/// `shape` (`[*lead, *spatial]`) in one scatter-add: every window element
/// goes to its flat position in the plane, from a small host table of those
/// positions (`[*O, *k]`, shared by all `lead` planes through zero strides).
fn scatter_windows(
    op: &'static str,
    cols: &Tensor,
    shape: &[usize],
    spatial: &[usize],
    w: &Windows,
    o: &[i64],
) -> Result<Tensor> {
    let n = w.dims();
    let lead = cols.ndim() - 2 * n;
    let acc = scatter_dtype(cols.dtype()).unwrap_or(DType::F32);
    let plane: usize = spatial.iter().product();
    let mut flat_shape = shape[..lead].to_vec();
    flat_shape.push(plane);
    let dest = Tensor::zeros(&flat_shape, Some(acc), cols.device())?;
    // plane position of window element (o, k): Σ (o_i·stride_i + k_i·dilation_i)·inner_i
    let mut inner = vec![1i64; n];
    for i in (0..n.saturating_sub(1)).rev() {
        inner[i] = inner[i + 1] * spatial[i + 1] as i64;
    }
    let positions: i64 = o.iter().product();
    let mut table = Vec::with_capacity((positions * w.volume()) as usize);
    for p in 0..positions {
        let mut rest = p;
        let mut base = 0;
        for i in (0..n).rev() {
            base += (rest % o[i]) * w.stride[i] * inner[i];
            rest /= o[i];
        }
        for k in 0..w.volume() {
            let mut rest = k;
            let mut off = 0;
            for i in (0..n).rev() {
                off += (rest % w.kernel[i]) * w.dilation[i] * inner[i];
                rest /= w.kernel[i];
            }
            table.push(base + off);
        }
    }
    let idx = Tensor::from_vec(table, &[(positions * w.volume()) as usize], cols.device())?;
    let table_strides = Layout::contiguous(&cols.shape()[lead..]).strides().to_vec();
    let mut li_strides = vec![0usize; lead];
    li_strides.extend(table_strides);
    let li = Layout::from_parts(cols.shape().to_vec(), li_strides, 0);
    let mut ld_strides = dest.layout().strides()[..lead].to_vec();
    ld_strides.extend(std::iter::repeat_n(0, 2 * n));
    let ld = Layout::from_parts(cols.shape().to_vec(), ld_strides, 0);
    let along = Along {
        op,
        dim: lead,
        shape: flat_shape,
        stride: 1,
    };
    dest.storage_mut()
        .scatter_add_(&ld, &along, &idx.storage(), &li, &cols.storage(), cols.layout())?;
    dest.reshape(&shape.iter().map(|&v| v as i64).collect::<Vec<_>>())?
        .to_dtype(cols.dtype())
}

impl Tensor {
    /// `[N, C, *S]` as the view `[N, C, *O, *k]` of its windows (`op` names
    /// errors); the gradient sums each window back into place.
    pub(crate) fn spatial_windows(&self, op: &'static str, w: &Windows) -> Result<Tensor> {
        let n = w.dims();
        let spatial = &self.shape()[self.ndim() - n..];
        let o = w.positions(spatial);
        if o.iter().any(|&v| v < 1) {
            return Err(super::too_small(
                op,
                spatial,
                &w.kernel,
                &w.dilation,
                self.shape(),
            ));
        }
        let out = self.windows_view(op, w, &o)?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let (w, spatial) = (w.clone(), spatial.to_vec());
        Ok(autograd::record(op, &[self], out, move |g, _| {
            Ok(vec![Some(g.fold_windows(op, &spatial, &w)?)])
        }))
    }

    /// The first `o` windows per dim as a view (no autograd).
    fn windows_view(&self, op: &'static str, w: &Windows, o: &[i64]) -> Result<Tensor> {
        let n = w.dims();
        let l = self.layout();
        let lead = self.ndim() - n;
        let mut shape = l.shape()[..lead].to_vec();
        let mut strides = l.strides()[..lead].to_vec();
        for (i, &oi) in o.iter().enumerate() {
            shape.push(oi as usize);
            strides.push(l.strides()[lead + i] * w.stride[i] as usize);
        }
        for i in 0..n {
            shape.push(w.kernel[i] as usize);
            strides.push(l.strides()[lead + i] * w.dilation[i] as usize);
        }
        self.view_with(op, Layout::from_parts(shape, strides, l.offset()))
    }

    /// The adjoint of [`spatial_windows`](Tensor::spatial_windows): windows
    /// `[*lead, *O, *k]` summed into a new `[*lead, *spatial]` tensor, each
    /// element at its place in the input (overlaps add up).
    pub(crate) fn fold_windows(&self, op: &'static str, spatial: &[usize], w: &Windows) -> Result<Tensor> {
        let n = w.dims();
        let lead = self.ndim() - 2 * n;
        let o: Vec<i64> = self.shape()[lead..lead + n].iter().map(|&v| v as i64).collect();
        let full = w.positions(spatial);
        if (0..n).any(|i| o[i] > full[i])
            || self.shape()[lead + n..] != w.kernel.iter().map(|&k| k as usize).collect::<Vec<_>>()[..]
        {
            return Err(Error::shape(
                op,
                format!(
                    "windows of shape {:?} do not fit a spatial size {spatial:?} with kernel {:?}, dilation {:?}, stride {:?}",
                    self.shape(),
                    w.kernel,
                    w.dilation,
                    w.stride
                ),
            ));
        }
        let mut shape = self.shape()[..lead].to_vec();
        shape.extend_from_slice(spatial);
        let out = autograd::forward(|| -> Result<Tensor> {
            if !w.disjoint(&o) {
                return scatter_windows(op, self, &shape, spatial, w, &o);
            }
            // each element has its own place: one strided copy
            let z = Tensor::zeros(&shape, Some(self.dtype()), self.device())?;
            z.windows_view(op, w, &o)?.copy_(self)?;
            Ok(z)
        })?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let w = w.clone();
        Ok(autograd::record(op, &[self], out, move |g, _| {
            let gw = g.spatial_windows(op, &w)?;
            // the windows of the gradient that the forward's windows cover
            let mut part = gw;
            for (i, &oi) in o.iter().enumerate() {
                part = part.narrow((lead + i) as i64, 0, oi)?;
            }
            Ok(vec![Some(part)])
        }))
    }

    /// `F.unfold` (im2col): the sliding blocks of `[N, C, H, W]` (or
    /// `[C, H, W]`) as columns `[N, C·kh·kw, L]`, after zero padding.
    pub fn im2col(
        &self,
        kernel: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Tensor> {
        const OP: &str = "unfold";
        let w = Windows {
            kernel: per_dim_min(OP, "kernel_size", kernel, 2, 1)?,
            dilation: per_dim_min(OP, "dilation", dilation, 2, 1)?,
            stride: per_dim_min(OP, "stride", stride, 2, 1)?,
        };
        let pad = per_dim_min(OP, "padding", padding, 2, 0)?;
        let (x, unbatched) = batched(OP, self, 2)?;
        let x = pad_spatial(&x, &pad, &pad, "constant", 0.0)?;
        let win = x.spatial_windows(OP, &w)?;
        let (nb, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
        // [N, C, OH, OW, kh, kw] -> [N, C, kh, kw, OH, OW] -> [N, C·K, L]
        let cols = win
            .permute(&[0, 1, 4, 5, 2, 3])?
            .reshape(&[nb, c * w.volume(), -1])?;
        if unbatched {
            cols.squeeze(Some(&[0]))
        } else {
            Ok(cols)
        }
    }

    /// `F.fold` (col2im): columns `[N, C·kh·kw, L]` (or `[C·kh·kw, L]`)
    /// summed into `[N, C, *output_size]`, overlapping blocks adding up.
    pub fn col2im(
        &self,
        output_size: &[i64],
        kernel: &[i64],
        dilation: &[i64],
        padding: &[i64],
        stride: &[i64],
    ) -> Result<Tensor> {
        const OP: &str = "fold";
        let size = per_dim_min(OP, "output_size", output_size, 2, 1)?;
        let w = Windows {
            kernel: per_dim_min(OP, "kernel_size", kernel, 2, 1)?,
            dilation: per_dim_min(OP, "dilation", dilation, 2, 1)?,
            stride: per_dim_min(OP, "stride", stride, 2, 1)?,
        };
        let pad = per_dim_min(OP, "padding", padding, 2, 0)?;
        let (x, unbatched) = match self.ndim() {
            3 => (self.clone(), false),
            2 => (self.unsqueeze(0)?, true),
            _ => {
                return Err(Error::shape(
                    OP,
                    format!(
                        "expects a 2-D (unbatched) or 3-D (batched) input, got shape {:?}",
                        self.shape()
                    ),
                ))
            }
        };
        let padded: Vec<usize> = (0..2).map(|i| (size[i] + 2 * pad[i]) as usize).collect();
        let o = w.positions(&padded);
        let (nb, ck, l) = (x.shape()[0] as i64, x.shape()[1] as i64, x.shape()[2] as i64);
        if ck % w.volume() != 0 || l != o[0] * o[1] {
            return Err(Error::shape(
                OP,
                format!(
                    "input of shape {:?} does not match kernel {:?} (dim 1 must be a multiple of {}) and {} blocks (output_size {size:?}, padding {pad:?}, dilation {:?}, stride {:?})",
                    self.shape(),
                    w.kernel,
                    w.volume(),
                    o[0] * o[1],
                    w.dilation,
                    w.stride
                ),
            ));
        }
        let c = ck / w.volume();
        let win = x
            .reshape(&[nb, c, w.kernel[0], w.kernel[1], o[0], o[1]])?
            .permute(&[0, 1, 4, 5, 2, 3])?;
        let out = win.fold_windows(OP, &padded, &w)?;
        let crop: Vec<i64> = pad.iter().map(|p| -p).collect();
        let out = pad_spatial(&out, &crop, &crop, "constant", 0.0)?;
        if unbatched {
            out.squeeze(Some(&[0]))
        } else {
            Ok(out)
        }
    }
}
