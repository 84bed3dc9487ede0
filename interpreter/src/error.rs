//! The library's error type: every failure an op, a conversion or a script can
//! cause is a value of [`Error`], with a message that names the op and the
//! operands' shapes. Nothing here panics.

use crate::tensor::{DType, Device};

/// Shorthand for results of kiln operations.
pub type Result<T> = std::result::Result<T, Error>;

/// A typed kiln error; its `Display` is the one-line message a user sees.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Two shapes that cannot be broadcast together.
    #[error("{op}: shapes {lhs:?} and {rhs:?} cannot be broadcast together")]
    BroadcastMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
    },
    /// Operand shapes that do not fit the op (matmul inner sizes, cat, ...).
    #[error("{op}: {msg}")]
    ShapeMismatch { op: &'static str, msg: String },
    /// A reshape/view whose element count or layout does not fit.
    #[error("{op}: cannot reshape a tensor of shape {from:?} ({numel} elements) into shape {to:?}")]
    InvalidReshape {
        op: &'static str,
        from: Vec<usize>,
        numel: usize,
        to: Vec<i64>,
    },
    /// A dimension argument outside `-ndim..ndim`.
    #[error(
        "{op}: dimension {dim} is out of range for a tensor of shape {shape:?} (expected a dim in [{}, {}])",
        -(*ndim as i64),
        *ndim as i64 - 1
    )]
    DimOutOfRange {
        op: &'static str,
        dim: i64,
        ndim: usize,
        shape: Vec<usize>,
    },
    /// An index outside the size of its dimension.
    #[error("{op}: index {index} is out of range for dimension {dim} of size {size} (shape {shape:?})")]
    IndexOutOfRange {
        op: &'static str,
        index: i64,
        dim: usize,
        size: usize,
        shape: Vec<usize>,
    },
    /// An op that does not support the operand's dtype.
    #[error("{op}: not supported for dtype {dtype}{hint}")]
    UnsupportedDType {
        op: &'static str,
        dtype: DType,
        hint: String,
    },
    /// An in-place op whose result dtype cannot be stored in the destination.
    #[error("{op}: result of dtype {result} cannot be written in place into a tensor of dtype {dest}")]
    InPlaceDType {
        op: &'static str,
        result: DType,
        dest: DType,
    },
    /// Operands on different devices.
    #[error("{op}: expected all tensors on one device, found {lhs} and {rhs}")]
    DeviceMismatch {
        op: &'static str,
        lhs: Device,
        rhs: Device,
    },
    /// A device that this build or machine cannot use.
    #[error("device {device} is not available: {reason}")]
    DeviceUnavailable { device: String, reason: String },
    /// A name that is not a dtype.
    #[error("unknown dtype '{0}' (expected one of f32, f64, f16, bf16, i64, i32, u8, bool)")]
    UnknownDType(String),
    /// A name that is neither a device nor a dtype.
    #[error("unknown device '{0}' (expected cpu, cuda or cuda:N)")]
    UnknownDevice(String),
    /// Any other invalid argument, with the op's name.
    #[error("{op}: {msg}")]
    InvalidArgument { op: &'static str, msg: String },
    /// A file that cannot be opened, read or written.
    #[error("{op}: cannot access '{path}': {msg}")]
    FileAccess {
        op: &'static str,
        path: String,
        msg: String,
    },
    /// A file whose contents do not follow its format.
    #[error("{op}: '{path}': {msg}")]
    FileFormat {
        op: &'static str,
        path: String,
        msg: String,
    },
    /// File access switched off by the embedder.
    #[error("{op}: file access is disabled in this interpreter")]
    FilesDisabled { op: &'static str },
}

impl Error {
    /// An [`Error::InvalidArgument`] for `op`.
    pub fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::InvalidArgument { op, msg: msg.into() }
    }

    /// An [`Error::ShapeMismatch`] for `op`.
    pub fn shape(op: &'static str, msg: impl Into<String>) -> Self {
        Error::ShapeMismatch { op, msg: msg.into() }
    }

    /// An [`Error::UnsupportedDType`] for `op`, without a hint.
    pub fn dtype(op: &'static str, dtype: DType) -> Self {
        Error::UnsupportedDType {
            op,
            dtype,
            hint: String::new(),
        }
    }
}
