//! The tensor core: the [`Tensor`] handle and its metadata ([`Layout`],
//! [`DType`], [`Device`]), and the op front-end. Every op is written once in
//! the submodules here (validation, broadcasting, dtype promotion) and then
//! dispatched to a backend through [`crate::backend::Storage`]; ops on
//! tensors that require grad also record their backward ([`autograd`]).

pub mod activation;
pub mod attention;
pub mod autocast;
pub mod autograd;
pub mod cnn;
pub mod combine;
pub mod contraction;
pub mod counting;
pub mod creation;
pub mod elementwise;
pub mod factor;
pub mod format;
pub mod functional;
pub mod graph;
pub mod host;
pub mod index;
pub mod inplace;
pub mod integrate;
pub mod join;
pub mod linalg;
pub(crate) mod locks;
pub mod loss;
pub mod matrix_exp;
mod multi_tensor;
pub mod nn;
pub mod optim;
pub mod order;
pub mod pointwise;
pub mod quantile;
pub mod random;
pub mod rearrange;
pub mod reduce;
pub mod sampling;
pub mod scatter_forms;
pub mod select;
pub mod solve;
pub mod special;
pub mod statistics;
pub mod strided;
pub mod structure;
pub mod view;
pub mod windows;

pub use crate::core::{BudgetScope, DType, Device, HostValues, Layout, MemoryBudget, Scalar};
pub use host::Element;
pub use random::Generator;

use crate::backend::Storage;
use crate::core::error::{Error, Result};
use crate::core::{control, memory};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Lockable storage with a version counter that every write bumps (autograd
/// checks it to catch saved tensors modified in place).
pub(crate) struct StorageCell {
    data: RwLock<Storage>,
    version: AtomicU64,
    /// Elements of the storage (fixed for its life), read without the lock.
    len: usize,
    /// The bytes this storage holds of a memory budget, given back on drop.
    _charge: Option<memory::Charge>,
}

/// Shared storage; views of one tensor hold the same `Arc`.
pub(crate) type SharedStorage = Arc<StorageCell>;

struct TensorImpl {
    storage: SharedStorage,
    layout: Layout,
    dtype: DType,
    device: Device,
    /// Set once, for tensors that require grad or were made by a recorded op.
    autograd: OnceLock<Arc<autograd::AutogradMeta>>,
    /// The bytes of this handle (see [`Tensor::handle_bytes`]) held of the
    /// memory budget entered where it was made, given back on drop.
    _handle: Option<memory::Charge>,
}

/// An n-dimensional array on a device: a cheap, thread-safe handle. Cloning
/// costs a reference count; views share the storage of the tensor they view.
#[derive(Clone)]
pub struct Tensor(Arc<TensorImpl>);

impl Tensor {
    /// A tensor over a whole new storage with a contiguous layout of `shape`;
    /// the storage is charged to the memory budget entered on this thread,
    /// if any (`op` names the allocating op in the error when it does not fit).
    /// A run that must stop gets an error here instead of a result its CPU
    /// loops may have cut short ([`control`]).
    pub(crate) fn from_storage(op: &'static str, storage: Storage, shape: &[usize]) -> Result<Tensor> {
        control::check(op)?;
        let layout = Layout::contiguous(shape);
        layout.check_fits(op, storage.len())?;
        let bytes = storage.len().saturating_mul(storage.dtype().size_in_bytes());
        let charge = memory::charge(op, bytes)?;
        let (dtype, device) = (storage.dtype(), storage.device());
        let handle = memory::charge(op, Tensor::handle_bytes(layout.ndim()))?;
        let cell = StorageCell {
            len: storage.len(),
            data: RwLock::new(storage),
            version: AtomicU64::new(0),
            _charge: charge,
        };
        Ok(Tensor(Arc::new(TensorImpl {
            storage: Arc::new(cell),
            layout,
            dtype,
            device,
            autograd: OnceLock::new(),
            _handle: handle,
        })))
    }

    /// The bytes a tensor handle of `ndim` dims holds besides its storage
    /// (the handle and its layout). A memory budget charges them for every
    /// handle a script makes, views included, so that many views of one
    /// storage cannot hold memory the budget does not see.
    pub fn handle_bytes(ndim: usize) -> usize {
        std::mem::size_of::<TensorImpl>() + 2 * std::mem::size_of::<usize>() * ndim
    }

    /// A view of the same storage with another layout; fails (naming `op`)
    /// unless the layout stays inside the storage ([`Layout::check_fits`]),
    /// the invariant every kernel relies on, or its handle does not fit in
    /// the memory budget.
    pub(crate) fn view_with(&self, op: &'static str, layout: Layout) -> Result<Tensor> {
        let layout = layout.without_empty_offset();
        layout.check_fits(op, self.storage_len())?;
        let handle = memory::charge(op, Tensor::handle_bytes(layout.ndim()))?;
        Ok(self.handle_with(layout, handle))
    }

    fn handle_with(&self, layout: Layout, handle: Option<memory::Charge>) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout,
            dtype: self.0.dtype,
            device: self.0.device,
            autograd: OnceLock::new(),
            _handle: handle,
        }))
    }

    /// Elements in the storage (shared by every view of it).
    pub(crate) fn storage_len(&self) -> usize {
        self.0.storage.len
    }

    /// A view with a layout known to fit: this tensor's own, or one of the
    /// same shape and elements.
    /// Its handle is charged to the budget even past the limit (this cannot
    /// fail); the next allocation then does.
    pub(crate) fn with_checked_layout(&self, layout: Layout) -> Tensor {
        let handle = memory::charge_unchecked(Tensor::handle_bytes(layout.ndim()));
        self.handle_with(layout, handle)
    }

    /// The sizes of each dimension.
    pub fn shape(&self) -> &[usize] {
        self.0.layout.shape()
    }

    /// The layout over the storage.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// The device holding the data.
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }

    /// True when the elements are dense and row-major.
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }

    /// True when both tensors view the same storage.
    pub fn shares_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    pub(crate) fn storage(&self) -> RwLockReadGuard<'_, Storage> {
        read_lock(&self.0.storage)
    }

    pub(crate) fn storage_mut(&self) -> RwLockWriteGuard<'_, Storage> {
        self.0.storage.version.fetch_add(1, Ordering::Relaxed);
        self.0
            .storage
            .data
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many writes the storage has seen (shared by all views of it).
    pub(crate) fn version(&self) -> u64 {
        self.0.storage.version.load(Ordering::Relaxed)
    }

    /// The autograd metadata, when this tensor has any.
    pub(crate) fn autograd_meta(&self) -> Option<&Arc<autograd::AutogradMeta>> {
        self.0.autograd.get()
    }

    /// The autograd metadata slot (set at most once).
    pub(crate) fn autograd_slot(&self) -> &OnceLock<Arc<autograd::AutogradMeta>> {
        &self.0.autograd
    }

    /// The elements in logical order, on the host (waits for the device).
    pub fn to_host(&self) -> Result<HostValues> {
        self.storage().to_host(self.layout())
    }

    /// The single element of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "item",
                format!(
                    "only a tensor with one element can be converted to a number, got shape {:?} ({} elements)",
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        self.to_host()?
            .get(0)
            .ok_or_else(|| Error::invalid("item", "tensor has no elements"))
    }

    /// Fails unless both tensors are on one device.
    pub(crate) fn same_device(&self, op: &'static str, other: &Tensor) -> Result<()> {
        if self.device() != other.device() {
            return Err(Error::DeviceMismatch {
                op,
                lhs: self.device(),
                rhs: other.device(),
            });
        }
        Ok(())
    }
}

fn read_lock(s: &SharedStorage) -> RwLockReadGuard<'_, Storage> {
    s.data.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}
