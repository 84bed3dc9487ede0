//! The kernel table and the launches, one file per kernel family, mirroring
//! `gpu-kernels/src/kernels/` (and the CPU backend's op families):
//! [`table`] names every kernel and its module; [`loader`] loads each
//! module on first use; [`launch`] holds the
//! geometry and the raw launches every family shares; [`elementwise`],
//! [`reduce`], [`rows`], [`loss`], [`optim`], [`index`], [`copy`],
//! [`matmul`], [`order`] and [`attention`] have one launch function per kernel family, which fills the
//! family's argument block (`kiln_kernels::args`, one `#[repr(C)]` struct
//! compiled into both sides) and hands it to the one generic launch.

pub mod attention;
pub mod copy;
pub mod elementwise;
pub mod index;
pub mod launch;
pub mod loader;
pub mod loss;
pub mod matmul;
pub mod optim;
pub mod order;
pub mod reduce;
pub mod rows;
pub mod table;

pub use attention::*;
pub use copy::*;
pub use elementwise::*;
pub use index::*;
pub use launch::{dense, geometry, pack, packable};
pub use loader::KernelTable;
pub use loss::*;
pub use matmul::*;
pub use optim::*;
pub use order::*;
pub use reduce::*;
pub use rows::*;
pub use table::{DenseReduce, Kernel};
