//! In-place writes into a tensor's storage, seen by every view of it:
//! `copy_`, `fill_`, and the arithmetic `add_`/`sub_`/`mul_`/`div_` behind
//! `+= -= *= /=`. Results are computed first and then written, so a tensor
//! may read itself (`x += x`, `t[0] = t[1]`).

use super::locks::{lock_ordered, Access};
use super::{DType, Scalar, Tensor};
use crate::core::dtype::Category;
use crate::core::error::{Error, Result};
use crate::core::op::BinaryOp;

/// PyTorch's `can_cast` for in-place results: no float into an integer
/// tensor, no number into a bool tensor.
fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category() || to.category() == Category::Float
}

impl Tensor {
    /// Writes `src` (broadcast to this shape, converted to this dtype) into this tensor.
    /// `src` may be on another device: `host.copy_(gpu)` downloads straight
    /// into the host tensor's memory (no new allocation), and the other way
    /// round uploads into the device tensor.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        self.write_from("copy_", src, true)
    }

    /// Writes `src` (cast to this dtype, broadcast to this shape) into this
    /// tensor for the in-place form `op` of an out-of-place op
    /// (`x.relu_()`, `x.scatter_(...)`), which names it in errors.
    pub fn assign_(&self, op: &'static str, src: &Tensor) -> Result<()> {
        self.write_from(op, src, false)
    }

    /// `copy_` on behalf of the in-place op `op` (named in errors); a `src` on
    /// another device is an error unless `cross_device`.
    fn write_from(&self, op: &'static str, src: &Tensor, cross_device: bool) -> Result<()> {
        if !cross_device {
            self.same_device(op, src)?;
        }
        super::autograd::check_inplace(op, self, Some(src))?;
        if self.layout().has_internal_overlap() {
            return Err(Error::invalid(
                op,
                format!(
                    "cannot write into an expanded tensor of shape {:?} (several elements share one memory location); call contiguous() or clone() first",
                    self.shape()
                ),
            ));
        }
        let src = src.to_dtype(self.dtype())?;
        let src = if src.shares_storage(self) {
            src.clone_data()?
        } else {
            src
        };
        let ls = src.layout().broadcast_to(op, self.shape())?;
        // `src` is another storage here (a shared one was cloned above)
        self.write_elements(op, &src, &ls)
    }

    /// Writes the elements of `src` (this tensor's dtype, read through `ls`,
    /// a layout of this tensor's shape over `src`'s storage, which is not
    /// this one's) into this tensor, with both storages locked in the global
    /// order ([`lock_ordered`]); no autograd record, no conversion.
    pub(crate) fn write_elements(&self, op: &'static str, src: &Tensor, ls: &super::Layout) -> Result<()> {
        let mut locks = lock_ordered(op, &[(self, Access::Write), (src, Access::Read)])?;
        let [dst, data] = &mut locks[..] else {
            return Err(Error::invalid(op, "internal: two locks expected"));
        };
        dst.get_mut(op)?.copy_from(self.layout(), data.get(), ls)
    }

    /// Sets every element to `value`.
    pub fn fill_(&self, value: Scalar) -> Result<()> {
        let v = Tensor::scalar(value, self.dtype(), self.device())?;
        self.write_from("fill_", &v, false)
    }

    /// `self = self op rhs`, written into this tensor's storage.
    pub fn binary_(&self, op: BinaryOp, rhs: &Tensor) -> Result<()> {
        self.check_writable(op)?;
        let r = self.binary(op, rhs)?;
        self.write_result(op, r)
    }

    /// `self = self op s`, written into this tensor's storage.
    pub fn binary_scalar_(&self, op: BinaryOp, s: Scalar) -> Result<()> {
        self.check_writable(op)?;
        let r = self.binary_scalar(op, s, false)?;
        self.write_result(op, r)
    }

    fn check_writable(&self, op: BinaryOp) -> Result<()> {
        super::autograd::check_inplace(op.name(), self, None)?;
        if self.layout().has_internal_overlap() {
            return Err(Error::invalid(
                op.name(),
                format!(
                    "cannot write in place into an expanded tensor of shape {:?} (several elements share one memory location); call contiguous() or clone() first",
                    self.shape()
                ),
            ));
        }
        Ok(())
    }

    fn write_result(&self, op: BinaryOp, r: Tensor) -> Result<()> {
        if !can_cast(r.dtype(), self.dtype()) {
            return Err(Error::InPlaceDType {
                op: op.name(),
                result: r.dtype(),
                dest: self.dtype(),
            });
        }
        if r.shape() != self.shape() {
            return Err(Error::shape(
                op.name(),
                format!(
                    "in-place result of shape {:?} does not fit the destination of shape {:?}",
                    r.shape(),
                    self.shape()
                ),
            ));
        }
        self.write_from(op.name(), &r, false)
    }
}
