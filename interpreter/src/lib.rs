//! kiln: a Rust-hosted, embeddable scripting interpreter for tensor programs.
//!
//! A [Rhai](https://rhai.rs) script orchestrates; Rust computes. The layers,
//! from the host down:
//!
//! - [`engine`]: the embedding API: the [`Interpreter`] that runs scripts,
//!   its [`Builder`] and sandbox [`Limits`], the typed [`ScriptError`], and
//!   [`register`] to put kiln on a Rhai engine the host already has.
//! - [`script`]: the Rhai script API (functions, methods, operators) and the
//!   per-engine [`Runtime`]; it only converts arguments.
//! - [`dist`]: the process group of `kiln launch` and its collectives
//!   (`all_reduce`, `broadcast`, `all_gather`, `barrier`) over TCP or NCCL;
//!   [`io`]: CSV, `.npy`, safetensors and raw files.
//! - [`tensor`]: the [`Tensor`] handle, the op front-end (validation,
//!   broadcasting, promotion, autograd), host data in and out
//!   ([`Tensor::from_slice`], [`Tensor::to_vec`]).
//! - [`backend`]: device storage and the primitive kernels (CPU and CUDA);
//!   beside it [`profiler`], the spans `profile(|| …)` records.
//! - [`core`]: the types every layer speaks — [`DType`],
//!   [`Device`], [`Layout`], [`Scalar`], the op vocabulary (generated from
//!   the op table in `kiln_kernels::ops`), the [`Error`] type, memory budgets
//!   ([`MemoryBudget`]) and run control. It imports nothing above it.
//!
//! Dependencies run one way, `script → tensor → backend → core` (`io` and
//! `dist` beside `script`); `tests/layers.rs` checks it.
//!
//! A host passes tensors in, runs a script, and reads tensors back:
//!
//! ```
//! use kiln::{Device, Interpreter, Tensor};
//! let mut kiln = Interpreter::builder().device(Device::Cpu).build()?;
//! let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], Device::Cpu)?;
//! kiln.set_var("x", x);
//! let y: Tensor = kiln.eval("(x @ x.t()).relu()").unwrap();
//! assert_eq!(y.shape(), &[2, 2]);
//! assert_eq!(y.to_vec::<f32>()?, [14.0, 32.0, 32.0, 77.0]);
//! # Ok::<(), kiln::Error>(())
//! ```
//!
//! Tensors are cheap `Arc` handles and `Send + Sync`; so is an
//! [`Interpreter`], and several of them may run on several threads at once.

#![warn(missing_docs)]

pub mod backend;
pub mod core;
pub mod dist;
pub mod engine;
pub mod io;
pub mod profiler;
pub mod progress;
pub mod script;
pub mod tensor;

pub use crate::core::error;
pub use crate::core::{BudgetScope, DType, Device, Layout, MemoryBudget, Scalar};
pub use crate::core::{Error, Result};
pub use engine::{register, Builder, ErrorKind, Interpreter, InterruptHandle, Limit, Limits, ScriptError};
pub use half::{bf16, f16};
pub use script::convert::RhaiResult;
pub use script::Runtime;
pub use tensor::{Element, Tensor};

/// Compile-time checks that the handles a host shares between threads can be.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Tensor>();
    send_sync::<Interpreter>();
    send_sync::<Runtime>();
    send_sync::<MemoryBudget>();
    send_sync::<ScriptError>();
    send_sync::<Error>();
    send_sync::<rhai::AST>();
};
