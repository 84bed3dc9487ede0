//! The matmul front-end: `matmul` with PyTorch's rules (1-D operands, batch
//! broadcasting), and the strict `mm` (2-D) and `bmm` (3-D) forms; and the
//! tensor forms of `inv` and `solve` (`tensorinv`, `tensorsolve`), which
//! reshape to matrices.

use super::autograd::{self, functions, Saved};
use super::elementwise::{result_type, with_storages};
use super::{DType, Tensor};
use crate::backend::{Activation, MatmulDims};
use crate::core::error::{Error, Result};
use crate::core::op::BinaryOp;
use crate::core::shape::broadcast_shapes;

impl Tensor {
    /// Matrix product with `torch.matmul`'s rules.
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        self.matmul_named(rhs, "matmul")
    }

    /// Inner product of two 1-D tensors.
    pub fn dot(&self, rhs: &Tensor) -> Result<Tensor> {
        if self.ndim() != 1 || rhs.ndim() != 1 {
            return Err(Error::shape(
                "dot",
                format!(
                    "expects two 1-D tensors, got shapes {:?} and {:?}",
                    self.shape(),
                    rhs.shape()
                ),
            ));
        }
        self.matmul_named(rhs, "dot")
    }

    /// Inner product of two 1-D tensors (`torch.vdot`: the same as `dot` for
    /// real tensors).
    pub fn vdot(&self, rhs: &Tensor) -> Result<Tensor> {
        self.dot(rhs)
    }

    fn matmul_named(&self, rhs: &Tensor, op: &'static str) -> Result<Tensor> {
        let (a, b) = (self, rhs);
        let (sa, sb) = (a.shape(), b.shape());
        if a.ndim() == 0 || b.ndim() == 0 {
            return Err(Error::shape(
                op,
                format!("both operands need at least 1 dim, got shapes {sa:?} and {sb:?}"),
            ));
        }
        let k = sa[sa.len() - 1];
        let k2 = if sb.len() == 1 { sb[0] } else { sb[sb.len() - 2] };
        if k != k2 {
            return Err(Error::shape(
                op,
                format!("shapes {sa:?} and {sb:?} cannot be multiplied (inner sizes {k} and {k2} differ)"),
            ));
        }
        let (ba, bb) = (
            &sa[..sa.len().saturating_sub(2)],
            &sb[..sb.len().saturating_sub(2)],
        );
        if broadcast_shapes(op, ba, bb).is_err() {
            return Err(Error::shape(
                op,
                format!(
                    "shapes {sa:?} and {sb:?}: batch dims {ba:?} and {bb:?} cannot be broadcast together"
                ),
            ));
        }
        match (a.ndim(), b.ndim()) {
            (1, 1) => a.unsqueeze(0)?.matmul_nd(&b.unsqueeze(1)?, op)?.reshape(&[]),
            (1, _) => a.unsqueeze(0)?.matmul_nd(b, op)?.squeeze(Some(&[-2])),
            (_, 1) => a.fold_matmul(&b.unsqueeze(1)?, op)?.squeeze(Some(&[-1])),
            _ => a.fold_matmul(b, op),
        }
    }

    /// Product of two matrices (both exactly 2-D).
    pub fn mm(&self, rhs: &Tensor) -> Result<Tensor> {
        if self.ndim() != 2 || rhs.ndim() != 2 {
            return Err(Error::shape(
                "mm",
                format!(
                    "expects two 2-D tensors, got shapes {:?} and {:?}",
                    self.shape(),
                    rhs.shape()
                ),
            ));
        }
        self.matmul_nd(rhs, "mm")
    }

    /// Batched product of two 3-D tensors with equal batch sizes.
    pub fn bmm(&self, rhs: &Tensor) -> Result<Tensor> {
        if self.ndim() != 3 || rhs.ndim() != 3 || self.shape()[0] != rhs.shape()[0] {
            return Err(Error::shape(
                "bmm",
                format!(
                    "expects two 3-D tensors with the same batch size, got shapes {:?} and {:?}",
                    self.shape(),
                    rhs.shape()
                ),
            ));
        }
        self.matmul_nd(rhs, "bmm")
    }

    /// `self @ rhs` for operands of at least 2 dims; a batched `self`
    /// against a matrix folds its batch dims into the rows, as
    /// `torch.matmul` does: one GEMM instead of a batch of small ones, and
    /// the matrix's gradient one GEMM over all rows instead of a product
    /// per batch element summed afterwards.
    fn fold_matmul(&self, rhs: &Tensor, op: &'static str) -> Result<Tensor> {
        let sa = self.shape();
        if sa.len() <= 2 || rhs.ndim() != 2 {
            return self.matmul_nd(rhs, op);
        }
        let k = sa[sa.len() - 1];
        let rows: usize = sa[..sa.len() - 1].iter().product();
        let y = self.reshape(&[rows as i64, k as i64])?.matmul_nd(rhs, op)?;
        let mut shape: Vec<i64> = sa[..sa.len() - 1].iter().map(|&d| d as i64).collect();
        shape.push(rhs.shape()[1] as i64);
        y.reshape(&shape)
    }

    /// Both operands at least 2-D: broadcast batch dims, check inner sizes.
    fn matmul_nd(&self, rhs: &Tensor, op: &'static str) -> Result<Tensor> {
        if super::autocast::enabled() {
            let (a, b) = (super::autocast::lower(self)?, super::autocast::lower(rhs)?);
            let _off = super::autocast::AutocastGuard::new(None)?;
            return a.matmul_nd(&b, op);
        }
        if !autograd::needs_grad(&[self, rhs]) {
            return self.matmul_nd_impl(rhs, op);
        }
        let y = autograd::forward(|| self.matmul_nd_impl(rhs, op))?;
        let (a, b) = (Saved::new(self), Saved::new(rhs));
        Ok(autograd::record(op, &[self, rhs], y, move |g, needs| {
            functions::matmul(a.get(op)?, b.get(op)?, g, needs)
        }))
    }

    /// `act(bias + m1 @ m2)` with the bias row and the activation applied in
    /// the GEMM's epilogue (one cuBLASLt call on CUDA), for `addmm` and
    /// `linear`: 2-D `m1 [m, k]`, `m2 [k, n]`, a dense 1-D `bias [n]`, one
    /// float dtype, outside autocast. `None` where that path does not apply
    /// (the caller composes).
    pub(super) fn addmm_fused(
        bias: &Tensor,
        m1: &Tensor,
        m2: &Tensor,
        act: Activation,
    ) -> Result<Option<Tensor>> {
        let op: &'static str = match act {
            Activation::Identity => "addmm",
            Activation::Relu => "linear_relu",
            Activation::GeluTanh => "linear_gelu",
        };
        let dtype = m1.dtype();
        let fits = matches!(m1.device(), crate::core::Device::Cuda(_))
            && !super::autocast::enabled()
            && m1.ndim() == 2
            && m2.ndim() == 2
            && bias.ndim() == 1
            && m1.shape()[1] == m2.shape()[0]
            && bias.shape()[0] == m2.shape()[1]
            && m1.shape()[0] > 0
            && m1.shape()[1] > 0
            && m2.shape()[1] > 0
            && m2.dtype() == dtype
            && bias.dtype() == dtype
            && matches!(dtype, DType::F32 | DType::F16 | DType::BF16)
            && m2.device() == m1.device()
            && bias.device() == m1.device()
            && (bias.layout().strides()[0] == 1 || bias.shape()[0] == 1)
            && !bias.shares_storage(m1)
            && !bias.shares_storage(m2);
        if !fits {
            return Ok(None);
        }
        let (m, k, n) = (m1.shape()[0], m1.shape()[1], m2.shape()[1]);
        let grad = autograd::needs_grad(&[bias, m1, m2]);
        // the tanh GELU's backward reads the pre-activation, which the epilogue writes too
        let keep_pre = grad && act == Activation::GeluTanh;
        let run = || -> Result<Option<(Tensor, Option<Tensor>)>> {
            let d = MatmulDims {
                batch: vec![],
                m,
                k,
                n,
            };
            let sb = bias.storage();
            let out = with_storages(m1, m2, |x, y| {
                x.matmul_bias(
                    m1.layout(),
                    y,
                    m2.layout(),
                    (&sb, bias.layout().offset()),
                    &d,
                    act,
                    keep_pre,
                )
            })?;
            let Some((y, pre)) = out else {
                return Ok(None);
            };
            let pre = pre.map(|s| Tensor::from_storage(op, s, &[m, n])).transpose()?;
            Ok(Some((Tensor::from_storage(op, y, &[m, n])?, pre)))
        };
        if !grad {
            return Ok(run()?.map(|(y, _)| y));
        }
        let Some((y, pre)) = autograd::forward(run)? else {
            return Ok(None);
        };
        let (a, b) = (Saved::new(m1), Saved::new(m2));
        // what the activation's gradient reads: the output without its graph
        // (ReLU: no cycle) or the pre-activation (GELU)
        let through = match act {
            Activation::Identity => None,
            Activation::Relu => Some((BinaryOp::ReluBackward, Saved::new(&y.detach()))),
            Activation::GeluTanh => match pre {
                Some(pre) => Some((BinaryOp::GeluTanhBackward, Saved::new(&pre))),
                None => return Err(Error::invalid(op, "the fused product kept no pre-activation")),
            },
        };
        Ok(Some(autograd::record(op, &[bias, m1, m2], y, move |g, needs| {
            let inner;
            let g = match &through {
                Some((backward, x)) => {
                    inner = g.binary(*backward, x.get(op)?)?;
                    &inner
                }
                None => g,
            };
            let gbias = needs[0]
                .then(|| g.reduce(crate::core::op::ReduceOp::Sum, Some(&[0]), false))
                .transpose()?;
            let mut gab = functions::matmul(a.get(op)?, b.get(op)?, g, &needs[1..])?;
            let gb = gab.pop().flatten();
            let ga = gab.pop().flatten();
            Ok(vec![gbias, ga, gb])
        })))
    }

    fn matmul_nd_impl(&self, rhs: &Tensor, op: &'static str) -> Result<Tensor> {
        self.same_device(op, rhs)?;
        let (sa, sb) = (self.shape(), rhs.shape());
        let (na, nb) = (sa.len(), sb.len());
        let (m, k, k2, n) = (sa[na - 2], sa[na - 1], sb[nb - 2], sb[nb - 1]);
        if k != k2 {
            return Err(Error::shape(
                op,
                format!("shapes {sa:?} and {sb:?} cannot be multiplied ({m}x{k} and {k2}x{n})"),
            ));
        }
        let batch = broadcast_shapes(op, &sa[..na - 2], &sb[..nb - 2])?;
        let dtype = result_type(self, rhs);
        if dtype == crate::tensor::DType::Bool {
            return Err(Error::dtype(op, dtype));
        }
        let (a, b) = (self.to_dtype(dtype)?, rhs.to_dtype(dtype)?);
        let full = |x: usize, y: usize| {
            let mut s = batch.clone();
            s.extend([x, y]);
            s
        };
        let la = a.layout().broadcast_to(op, &full(m, k))?;
        let lb = b.layout().broadcast_to(op, &full(k, n))?;
        let dims = MatmulDims {
            batch: batch.clone(),
            m,
            k,
            n,
        };
        let out = with_storages(&a, &b, |x, y| x.matmul(&la, y, &lb, &dims))?;
        Tensor::from_storage(op, out, &full(m, n))
    }
}

impl Tensor {
    /// `torch.linalg.tensorinv`: the inverse of this tensor read as a
    /// matrix of its first `ind` dims by the rest (their products must
    /// agree): shape `rest + first`.
    pub fn tensorinv(&self, ind: usize) -> Result<Tensor> {
        const OP: &str = "tensorinv";
        let s = self.shape();
        if ind == 0 || ind > s.len() {
            return Err(Error::invalid(
                OP,
                format!("ind must be in [1, {}], got {ind}", s.len()),
            ));
        }
        let (rows, cols): (usize, usize) = (s[..ind].iter().product(), s[ind..].iter().product());
        if rows != cols {
            return Err(Error::shape(
                OP,
                format!("the first {ind} dims ({rows} elements) and the rest ({cols}) of shape {s:?} must have equal products"),
            ));
        }
        let out: Vec<i64> = s[ind..].iter().chain(&s[..ind]).map(|&d| d as i64).collect();
        self.reshape(&[rows as i64, cols as i64])?.inv()?.reshape(&out)
    }

    /// `torch.linalg.tensorsolve`: the `x` with `tensordot(self, x,
    /// x.ndim) = b`; `dims` of `self` are moved to the end first. `x` has
    /// the shape of `self`'s trailing dims beyond `b`'s.
    pub fn tensorsolve(&self, b: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
        const OP: &str = "tensorsolve";
        let a = match dims {
            Some(d) if !d.is_empty() => {
                let to: Vec<i64> = (0..d.len() as i64).map(|i| i - d.len() as i64).collect();
                self.movedim(d, &to)?
            }
            _ => self.clone(),
        };
        let s = a.shape();
        let bs = b.shape();
        if s.len() < bs.len() || s[..bs.len()] != *bs {
            return Err(Error::shape(
                OP,
                format!("b's shape {bs:?} must begin the (moved) shape of a {s:?}"),
            ));
        }
        let rows: usize = bs.iter().product();
        let x_shape: Vec<i64> = s[bs.len()..].iter().map(|&d| d as i64).collect();
        let cols: usize = s[bs.len()..].iter().product();
        if rows != cols {
            return Err(Error::shape(
                OP,
                format!("b's elements ({rows}) and the solution's ({cols}, shape {x_shape:?}) must agree"),
            ));
        }
        a.reshape(&[rows as i64, cols as i64])?
            .solve(&b.reshape(&[rows as i64, 1])?, true)?
            .reshape(&x_shape)
    }
}
