//! The elementwise front-end: unary math, binary arithmetic and comparisons
//! with NumPy broadcasting and PyTorch promotion (tensors with tensors and with
//! host scalars), `where`, `clamp`, casts and copies.

use super::autograd::{self, functions, Saved};
use super::{DType, Device, Layout, Scalar, Tensor};
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::op::{BinaryOp, CmpOp, UnaryOp, UnaryRule};
use crate::core::shape::broadcast_shapes;

/// The dtype of `a op b`, PyTorch style: dimensioned tensors decide within a
/// category; a 0-dim tensor only matters when its category is higher.
pub fn result_type(a: &Tensor, b: &Tensor) -> DType {
    let (da, db) = (a.dtype(), b.dtype());
    match (a.ndim() == 0, b.ndim() == 0) {
        (za, zb) if za == zb => DType::promote(da, db),
        (true, false) if da.category() > db.category() => da,
        (true, false) => db,
        (false, true) if db.category() > da.category() => db,
        _ => da,
    }
}

/// Runs `f` on the storages of two tensors, taking one lock when they share storage.
pub(crate) fn with_storages<R>(a: &Tensor, b: &Tensor, f: impl FnOnce(&Storage, &Storage) -> R) -> R {
    let sa = a.storage();
    if a.shares_storage(b) {
        f(&sa, &sa)
    } else {
        let sb = b.storage();
        f(&sa, &sb)
    }
}

/// Runs `f` on the storages of any number of tensors, locking each shared
/// storage once.
pub(crate) fn with_all_storages<R>(ts: &[&Tensor], f: impl FnOnce(&[&Storage]) -> R) -> R {
    let mut guards = Vec::with_capacity(ts.len());
    let mut which = Vec::with_capacity(ts.len());
    for (i, t) in ts.iter().enumerate() {
        match ts[..i].iter().position(|u| u.shares_storage(t)) {
            Some(j) => which.push(which[j]),
            None => {
                guards.push(t.storage());
                which.push(guards.len() - 1);
            }
        }
    }
    let storages: Vec<&Storage> = which.iter().map(|&g| &*guards[g]).collect();
    f(&storages)
}

/// One `Tensor` method per row of the unary op table (`t.exp()`, ...).
macro_rules! unary_methods {
    ($($v:ident $n:ident $doc:literal $rule:ident $dom:ident $f:tt $i:tt;)*) => {
        impl Tensor {
            $(
                #[doc = $doc]
                pub fn $n(&self) -> Result<Tensor> {
                    self.unary(UnaryOp::$v)
                }
            )*
        }
    };
}
kiln_kernels::unary_ops!(unary_methods);

macro_rules! binary_methods {
    ($($name:ident, $scalar:ident => $op:ident),* $(,)?) => {
        impl Tensor {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "` with broadcasting.")]
                pub fn $name(&self, rhs: &Tensor) -> Result<Tensor> {
                    self.binary(BinaryOp::$op, rhs)
                }
                #[doc = concat!("Elementwise `", stringify!($name), "` with a host scalar.")]
                pub fn $scalar(&self, rhs: impl Into<Scalar>) -> Result<Tensor> {
                    self.binary_scalar(BinaryOp::$op, rhs.into(), false)
                }
            )*
        }
    };
}

binary_methods!(
    add, add_scalar => Add, sub, sub_scalar => Sub, mul, mul_scalar => Mul,
    div, div_scalar => Div, remainder, remainder_scalar => Rem, pow, pow_scalar => Pow,
    maximum, maximum_scalar => Maximum, minimum, minimum_scalar => Minimum,
);

impl Tensor {
    /// Applies a unary op; integer inputs of float-only ops compute in f32.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        if super::autocast::widens(self) && super::autocast::widens_unary(op) {
            return super::autocast::widen(self)?.unary(op);
        }
        if !autograd::needs_grad(&[self]) {
            return self.unary_impl(op);
        }
        let y = autograd::forward(|| self.unary_impl(op))?;
        let (x, ys) = (Saved::new(self), Saved::new(&y));
        Ok(autograd::record(op.name(), &[self], y, move |g, _| {
            Ok(vec![functions::unary(
                op,
                x.get(op.name())?,
                ys.get(op.name())?,
                g,
            )?])
        }))
    }

    fn unary_impl(&self, op: UnaryOp) -> Result<Tensor> {
        if let Some(p) = channels_last_perm(self) {
            return self.permute(&p)?.unary_impl(op)?.permute(&inverse(&p));
        }
        let dtype = op
            .result_dtype(self.dtype())
            .ok_or_else(|| Error::dtype(op.name(), self.dtype()))?;
        let src = if op.rule() != UnaryRule::Logical {
            self.to_dtype(dtype)?
        } else {
            self.clone()
        };
        let out = src.storage().unary(op, src.layout())?;
        Tensor::from_storage(op.name(), out, self.shape())
    }

    /// Broadcasts both operands to one shape.
    fn broadcast_pair(&self, op: &'static str, rhs: &Tensor) -> Result<(Vec<usize>, Layout, Layout)> {
        let shape = broadcast_shapes(op, self.shape(), rhs.shape())?;
        let la = self.layout().broadcast_to(op, &shape)?;
        let lb = rhs.layout().broadcast_to(op, &shape)?;
        Ok((shape, la, lb))
    }

    /// `self op rhs` with broadcasting and promotion.
    pub fn binary(&self, op: BinaryOp, rhs: &Tensor) -> Result<Tensor> {
        if op == BinaryOp::Pow && (super::autocast::widens(self) || super::autocast::widens(rhs)) {
            let widen = super::autocast::widen;
            return widen(self)?.binary(op, &widen(rhs)?);
        }
        if !autograd::needs_grad(&[self, rhs]) {
            return self.binary_impl(op, rhs);
        }
        let y = autograd::forward(|| self.binary_impl(op, rhs))?;
        let (a, b, ys) = (Saved::new(self), Saved::new(rhs), Saved::new(&y));
        Ok(autograd::record(op.name(), &[self, rhs], y, move |g, needs| {
            let n = op.name();
            functions::binary(op, a.get(n)?, b.get(n)?, ys.get(n)?, g, needs)
        }))
    }

    fn binary_impl(&self, op: BinaryOp, rhs: &Tensor) -> Result<Tensor> {
        self.same_device(op.name(), rhs)?;
        let dtype = op.compute_dtype(result_type(self, rhs));
        let (shape, _, _) = self.broadcast_pair(op.name(), rhs)?;
        if let Some(p) = memory_format_lead(&[self, rhs], &shape).and_then(channels_last_perm) {
            let a = self.broadcast_to(&shape)?.permute(&p)?;
            let b = rhs.broadcast_to(&shape)?.permute(&p)?;
            return a.binary_impl(op, &b)?.permute(&inverse(&p));
        }
        let (a, b) = (self.to_dtype(dtype)?, rhs.to_dtype(dtype)?);
        check_binary_values(op, dtype, &b)?;
        let (_, la, lb) = a.broadcast_pair(op.name(), &b)?;
        let out = with_storages(&a, &b, |sa, sb| sa.binary(op, &la, sb, &lb))?;
        Tensor::from_storage(op.name(), out, &shape)
    }

    /// `self op s` (or `s op self` when `reversed`) with a host scalar.
    pub fn binary_scalar(&self, op: BinaryOp, s: Scalar, reversed: bool) -> Result<Tensor> {
        // `x ** s`, `s ** x` and `s / x` are on autocast's f32 list
        if super::autocast::widens(self) && (op == BinaryOp::Pow || (reversed && op == BinaryOp::Div)) {
            return super::autocast::widen(self)?.binary_scalar(op, s, reversed);
        }
        if !autograd::needs_grad(&[self]) {
            return self.binary_scalar_impl(op, s, reversed);
        }
        let y = autograd::forward(|| self.binary_scalar_impl(op, s, reversed))?;
        let (x, ys) = (Saved::new(self), Saved::new(&y));
        Ok(autograd::record(op.name(), &[self], y, move |g, _| {
            let n = op.name();
            Ok(vec![functions::binary_scalar(
                op,
                x.get(n)?,
                s,
                reversed,
                ys.get(n)?,
                g,
            )?])
        }))
    }

    fn binary_scalar_impl(&self, op: BinaryOp, s: Scalar, reversed: bool) -> Result<Tensor> {
        if let Some(p) = channels_last_perm(self) {
            return self
                .permute(&p)?
                .binary_scalar_impl(op, s, reversed)?
                .permute(&inverse(&p));
        }
        let dtype = op.compute_dtype(s.promote_with(self.dtype()));
        if dtype.is_int()
            && reversed
            && matches!(
                op,
                BinaryOp::Rem | BinaryOp::Fmod | BinaryOp::FloorDivide | BinaryOp::Pow
            )
        {
            // the tensor is the divisor / exponent: checked through the tensor path
            let st = Tensor::scalar(s, dtype, self.device())?;
            return st.binary(op, self);
        }
        let st = Tensor::scalar(s, dtype, Device::Cpu)?;
        check_binary_values(op, dtype, &st)?;
        let a = self.to_dtype(dtype)?;
        let out = a.storage().binary_scalar(op, a.layout(), s, reversed)?;
        Tensor::from_storage(op.name(), out, self.shape())
    }

    /// A comparison with broadcasting; returns a bool tensor.
    pub fn compare(&self, op: CmpOp, rhs: &Tensor) -> Result<Tensor> {
        self.same_device(op.name(), rhs)?;
        let dtype = result_type(self, rhs);
        let (a, b) = (self.to_dtype(dtype)?, rhs.to_dtype(dtype)?);
        let (shape, la, lb) = a.broadcast_pair(op.name(), &b)?;
        if let Some(p) = memory_format_lead(&[&a, &b], &shape).and_then(channels_last_perm) {
            let (a, b) = (
                a.broadcast_to(&shape)?.permute(&p)?,
                b.broadcast_to(&shape)?.permute(&p)?,
            );
            return a.compare(op, &b)?.permute(&inverse(&p));
        }
        let out = with_storages(&a, &b, |sa, sb| sa.compare(op, &la, sb, &lb))?;
        Tensor::from_storage(op.name(), out, &shape)
    }

    /// A comparison with a host scalar (`reversed`: `s op self`).
    pub fn compare_scalar(&self, op: CmpOp, s: Scalar, reversed: bool) -> Result<Tensor> {
        let a = self.to_dtype(s.promote_with(self.dtype()))?;
        if let Some(p) = channels_last_perm(&a) {
            return a
                .permute(&p)?
                .compare_scalar(op, s, reversed)?
                .permute(&inverse(&p));
        }
        let out = a.storage().compare_scalar(op, a.layout(), s, reversed)?;
        Tensor::from_storage(op.name(), out, self.shape())
    }

    /// `cond ? a : b` elementwise, broadcasting all three (`cond` is read as bool).
    pub fn where_cond(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        if !autograd::needs_grad(&[a, b]) {
            return Tensor::where_impl(cond, a, b);
        }
        let y = autograd::forward(|| Tensor::where_impl(cond, a, b))?;
        let c = Saved::new(cond);
        let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
        Ok(autograd::record("where", &[cond, a, b], y, move |g, needs| {
            functions::where_cond(c.get("where")?, &sa, &sb, g, needs)
        }))
    }

    fn where_impl(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        cond.same_device("where", a)?;
        a.same_device("where", b)?;
        let dtype = result_type(a, b);
        let (a, b) = (a.to_dtype(dtype)?, b.to_dtype(dtype)?);
        let c = cond.to_dtype(DType::Bool)?;
        let shape = broadcast_shapes("where", c.shape(), a.shape())?;
        let shape = broadcast_shapes("where", &shape, b.shape())?;
        // Materialise shared storages so that each operand takes its own lock
        // (before the layouts are taken: a copy is laid out afresh).
        let a = if a.shares_storage(&c) { a.clone_data()? } else { a };
        let b = if b.shares_storage(&c) || b.shares_storage(&a) {
            b.clone_data()?
        } else {
            b
        };
        let (lc, la, lb) = (
            c.layout().broadcast_to("where", &shape)?,
            a.layout().broadcast_to("where", &shape)?,
            b.layout().broadcast_to("where", &shape)?,
        );
        let out = {
            let (sc, sa, sb) = (c.storage(), a.storage(), b.storage());
            sc.where_cond(&lc, &sa, &la, &sb, &lb)?
        };
        Tensor::from_storage("where", out, &shape)
    }

    /// Clamps into `[min, max]` (either bound optional); NaN stays NaN.
    pub fn clamp(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        if min.is_none() && max.is_none() {
            return Err(Error::invalid(
                "clamp",
                "at least one of min and max must be given",
            ));
        }
        if !autograd::needs_grad(&[self]) {
            return self.clamp_impl(min, max);
        }
        let y = autograd::forward(|| self.clamp_impl(min, max))?;
        let x = Saved::new(self);
        Ok(autograd::record("clamp", &[self], y, move |g, _| {
            Ok(vec![Some(functions::clamp(x.get("clamp")?, min, max, g)?)])
        }))
    }

    fn clamp_impl(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        let mut t = self.clone();
        if let Some(lo) = min {
            t = t.binary_scalar(BinaryOp::Maximum, lo, false)?;
        }
        if let Some(hi) = max {
            t = t.binary_scalar(BinaryOp::Minimum, hi, false)?;
        }
        Ok(t)
    }

    /// This tensor converted to `dtype` (the same handle when it already is).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out = match channels_last_perm(self).or_else(|| dense_perm(self)) {
            Some(p) => {
                let order: Vec<usize> = p.iter().map(|&d| d as usize).collect();
                let lp = self.layout().permute(&order);
                let out = self.storage().cast(&lp, dtype)?;
                Tensor::from_storage("to_dtype", out, lp.shape())?.permute(&inverse(&p))?
            }
            None => {
                let out = self.storage().cast(self.layout(), dtype)?;
                Tensor::from_storage("to_dtype", out, self.shape())?
            }
        };
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        // the engine converts the gradient back to this tensor's dtype
        Ok(autograd::record("to_dtype", &[self], out, |g, _| {
            Ok(vec![Some(g.clone())])
        }))
    }

    /// This tensor in a floating dtype: itself when it is one, else f32 (as
    /// PyTorch computes float-only math on integer and bool inputs).
    pub fn to_float(&self) -> Result<Tensor> {
        self.to_dtype(self.dtype().to_float())
    }

    /// A 0-dim tensor of `value` in this tensor's dtype and on its device,
    /// for compositions that need a constant operand.
    pub fn constant(&self, value: f64) -> Result<Tensor> {
        Tensor::full(&[], Scalar::Float(value), Some(self.dtype()), self.device())
    }

    /// A contiguous tensor with the same values: this handle when already contiguous.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.clone_data()
    }

    /// This handle when it is contiguous and covers its whole storage from the
    /// start (kernels that take a bare storage need that), else a copy.
    pub(crate) fn dense(&self) -> Result<Tensor> {
        if self.is_contiguous() && self.layout().offset() == 0 && self.storage().len() == self.numel() {
            return Ok(self.clone());
        }
        self.clone_data()
    }

    /// A copy of the data in new, contiguous storage.
    pub fn clone_data(&self) -> Result<Tensor> {
        let out = self.storage().cast(self.layout(), self.dtype())?;
        let out = Tensor::from_storage("clone", out, self.shape())?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        Ok(autograd::record("clone", &[self], out, |g, _| {
            Ok(vec![Some(g.clone())])
        }))
    }

    /// This tensor on `device` (the same handle when it already is there).
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        let out = self.storage().to_device(self.layout(), device)?;
        let out = Tensor::from_storage("to", out, self.shape())?;
        if !autograd::needs_grad(&[self]) {
            return Ok(out);
        }
        let from = self.device();
        Ok(autograd::record("to_device", &[self], out, move |g, _| {
            Ok(vec![Some(g.to_device(from)?)])
        }))
    }
}

/// Value checks the CPU makes before integer ops that would be undefined.
fn check_binary_values(op: BinaryOp, dtype: DType, rhs: &Tensor) -> Result<()> {
    if !op.accepts(dtype) {
        let hint = if op.is_bitwise() && !op.accepts(DType::Bool) {
            " (it takes integer tensors)"
        } else if op.is_bitwise() {
            " (bitwise ops take integer or bool tensors)"
        } else {
            " (for bool tensors use logical_not, or convert with to_dtype(\"i64\"))"
        };
        return Err(Error::UnsupportedDType {
            op: op.name(),
            dtype,
            hint: hint.into(),
        });
    }
    if !dtype.is_int() || rhs.device() != Device::Cpu {
        return Ok(());
    }
    let bad = |pred: fn(i64) -> bool| match rhs.to_host() {
        Ok(super::HostValues::Int(v)) => v.into_iter().any(pred),
        _ => false,
    };
    match op {
        BinaryOp::Rem | BinaryOp::Fmod | BinaryOp::FloorDivide if bad(|x| x == 0) => {
            Err(Error::invalid(op.name(), "integer division by zero"))
        }
        BinaryOp::Pow if bad(|x| x < 0) => Err(Error::invalid(
            "pow",
            "integers to negative integer powers are not allowed",
        )),
        _ => Ok(()),
    }
}

/// The operand whose memory format a broadcast result takes: the first of
/// the result's shape that is not expanded.
fn memory_format_lead<'a>(operands: &[&'a Tensor], shape: &[usize]) -> Option<&'a Tensor> {
    operands
        .iter()
        .copied()
        .find(|t| t.shape() == shape && !t.layout().has_internal_overlap())
}

/// The permutation that makes `t` contiguous when it is a dense
/// channels-last 4-D or 5-D tensor (and not also contiguous): elementwise
/// results then keep that memory format, as PyTorch's do, so a
/// channels-last network stays channels-last between its convolutions.
pub(crate) fn channels_last_perm(t: &Tensor) -> Option<Vec<i64>> {
    let n = t.ndim();
    if !(n == 4 || n == 5) || t.is_contiguous() {
        return None;
    }
    let order = Layout::channels_last_order(n);
    t.layout()
        .is_dense_in_order(&order)
        .then(|| order.iter().map(|&d| d as i64).collect())
}

/// The dim order (outermost first) in which `t` is dense when it is a
/// permuted dense tensor that is not contiguous (a transposed matrix, a
/// `[B, L, H, D]` buffer seen as `[B, H, L, D]`): a dtype conversion then
/// reads and writes it in memory order and keeps the permutation, as
/// PyTorch's `to(dtype)` keeps the strides of a dense tensor.
fn dense_perm(t: &Tensor) -> Option<Vec<i64>> {
    if t.is_contiguous() || t.ndim() < 2 {
        return None;
    }
    let (shape, strides) = (t.shape(), t.layout().strides());
    let mut order: Vec<usize> = (0..t.ndim()).collect();
    // outermost first; size-1 dims go where they were
    order.sort_by_key(|&d| (std::cmp::Reverse(if shape[d] == 1 { 0 } else { strides[d] }), d));
    t.layout()
        .is_dense_in_order(&order)
        .then(|| order.iter().map(|&d| d as i64).collect())
}

/// The permutation that undoes `p`.
pub(crate) fn inverse(p: &[i64]) -> Vec<i64> {
    let mut back = vec![0i64; p.len()];
    for (i, &d) in p.iter().enumerate() {
        back[d as usize] = i as i64;
    }
    back
}
