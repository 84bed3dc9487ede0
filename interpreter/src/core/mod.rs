//! The bottom layer: the types every other layer speaks and nothing above it.
//! [`DType`] and [`Scalar`], [`Device`], [`Layout`] with its shape and
//! stride arithmetic ([`shape`], [`strided`]), the op vocabulary ([`op`],
//! [`index`], [`collective`]), host values ([`HostValues`]), the error type
//! ([`Error`]), and the per-thread run state the backends consult before
//! they allocate or loop: memory budgets ([`memory`]), run control
//! ([`control`]) and CUDA-graph capture ([`capture`]).
//!
//! Nothing here imports from `backend`, `tensor`, `script` or any other
//! layer above; `tests/layers.rs` checks it.

pub mod capture;
pub mod collective;
pub mod control;
pub mod device;
pub mod dtype;
pub mod error;
pub mod index;
pub mod layout;
pub mod memory;
pub mod op;
pub mod shape;
pub mod strided;
pub mod thread_scope;
pub mod values;

pub use device::Device;
pub use dtype::{DType, Scalar};
pub use error::{Error, Result};
pub use layout::Layout;
pub use memory::{BudgetScope, MemoryBudget};
pub use values::HostValues;
