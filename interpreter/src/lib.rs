//! kiln: a Rust-hosted, embeddable scripting interpreter for tensor programs.
//!
//! A [Rhai](https://rhai.rs) script orchestrates; Rust computes. The layers,
//! from the script down:
//!
//! - [`script`]: the Rhai script API (functions, methods, operators) and the
//!   [`Interpreter`] that runs scripts; it only converts arguments.
//! - [`tensor`]: the [`Tensor`] handle, its [`Layout`], [`DType`] and
//!   [`Device`], and the op front-end (validation, broadcasting, promotion).
//! - [`backend`]: device storage and the primitive kernels (the CPU backend
//!   today; the CUDA backend slots in beside it).
//!
//! ```
//! let mut kiln = kiln::Interpreter::new();
//! let v: f64 = kiln.eval("(ones([2, 3]) @ ones([3, 4])).sum().item()").unwrap();
//! assert_eq!(v, 24.0);
//! ```

pub mod backend;
pub mod check;
pub mod error;
pub mod io;
pub mod progress;
pub mod script;
pub mod tensor;

pub use error::{Error, Result};
pub use script::{Interpreter, ScriptError};

pub use tensor::{DType, Device, Layout, Scalar, Tensor};
