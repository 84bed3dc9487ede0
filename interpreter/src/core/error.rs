//! The library's error type: every failure an op, a conversion or a script can
//! cause is a value of [`Error`], with a message that names the op and the
//! operands' shapes. Nothing here panics.

use super::{DType, Device};

/// Shorthand for results of kiln operations.
pub type Result<T> = std::result::Result<T, Error>;

/// A typed kiln error; its `Display` is the one-line message a user sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Two shapes that cannot be broadcast together.
    #[error("{op}: shapes {lhs:?} and {rhs:?} cannot be broadcast together")]
    BroadcastMismatch {
        /// The op that failed.
        op: &'static str,
        /// The left operand's shape.
        lhs: Vec<usize>,
        /// The right operand's shape.
        rhs: Vec<usize>,
    },
    /// Operand shapes that do not fit the op (matmul inner sizes, cat, ...).
    #[error("{op}: {msg}")]
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// What does not fit.
        msg: String,
    },
    /// A reshape/view whose element count or layout does not fit.
    #[error("{op}: cannot reshape a tensor of shape {from:?} ({numel} elements) into shape {to:?}")]
    InvalidReshape {
        /// The op that failed.
        op: &'static str,
        /// The tensor's shape.
        from: Vec<usize>,
        /// The tensor's element count.
        numel: usize,
        /// The shape asked for (`-1` inferred).
        to: Vec<i64>,
    },
    /// A dimension argument outside `-ndim..ndim`.
    #[error(
        "{op}: dimension {dim} is out of range for a tensor of shape {shape:?} (expected a dim in [{}, {}])",
        -(*ndim as i64),
        *ndim as i64 - 1
    )]
    DimOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The dim given.
        dim: i64,
        /// The tensor's number of dims.
        ndim: usize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// An index outside the size of its dimension.
    #[error("{op}: index {index} is out of range for dimension {dim} of size {size} (shape {shape:?})")]
    IndexOutOfRange {
        /// The op that failed.
        op: &'static str,
        /// The index given.
        index: i64,
        /// The dim indexed.
        dim: usize,
        /// The size of that dim.
        size: usize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// An op that does not support the operand's dtype.
    #[error("{op}: not supported for dtype {dtype}{hint}")]
    UnsupportedDType {
        /// The op that failed.
        op: &'static str,
        /// The operand's dtype.
        dtype: DType,
        /// What to do instead (may be empty).
        hint: String,
    },
    /// An in-place op whose result dtype cannot be stored in the destination.
    #[error("{op}: result of dtype {result} cannot be written in place into a tensor of dtype {dest}")]
    InPlaceDType {
        /// The op that failed.
        op: &'static str,
        /// The op's result dtype.
        result: DType,
        /// The destination's dtype.
        dest: DType,
    },
    /// Operands on different devices.
    #[error("{op}: expected all tensors on one device, found {lhs} and {rhs}")]
    DeviceMismatch {
        /// The op that failed.
        op: &'static str,
        /// The first operand's device.
        lhs: Device,
        /// The other operand's device.
        rhs: Device,
    },
    /// A device that this build or machine cannot use.
    #[error("device {device} is not available: {reason}")]
    DeviceUnavailable {
        /// The device asked for.
        device: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A name that is not a dtype.
    #[error("unknown dtype '{0}' (expected one of f32, f64, f16, bf16, i64, i32, u8, bool)")]
    UnknownDType(String),
    /// A name that is neither a device nor a dtype.
    #[error("unknown device '{0}' (expected cpu, cuda or cuda:N)")]
    UnknownDevice(String),
    /// Any other invalid argument, with the op's name.
    #[error("{op}: {msg}")]
    InvalidArgument {
        /// The op that failed.
        op: &'static str,
        /// What is wrong with the argument.
        msg: String,
    },
    /// Work inside a `cuda::graph` capture that a graph cannot replay: it
    /// waits for the GPU, reads values back to the host or copies host data
    /// in. `op` is the script function that was called.
    #[error("{op}: {what} inside a cuda::graph capture; a graph replays queued GPU work only, so do this outside the block")]
    NotCapturable {
        /// The script function (or op) that was called.
        op: String,
        /// What it would have done.
        what: &'static str,
    },
    /// A file that cannot be opened, read or written.
    #[error("{op}: cannot access '{path}': {msg}")]
    FileAccess {
        /// The op that failed.
        op: &'static str,
        /// The file's path.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// A file whose contents do not follow its format.
    #[error("{op}: '{path}': {msg}")]
    FileFormat {
        /// The op that failed.
        op: &'static str,
        /// The file's path.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// File access switched off by the embedder.
    #[error("{op}: file access is disabled in this interpreter")]
    FilesDisabled {
        /// The op that tried to read or write a file.
        op: &'static str,
    },
    /// A new tensor that does not fit in the engine's memory budget.
    #[error(
        "{op}: memory limit exceeded: a new tensor of {requested} bytes does not fit in this engine's budget of {limit} bytes ({in_use} bytes in use)"
    )]
    MemoryLimit {
        /// The op that allocated.
        op: &'static str,
        /// Bytes the new tensor needs.
        requested: usize,
        /// Bytes held by the engine's live tensors before the request.
        in_use: usize,
        /// The budget, in bytes.
        limit: usize,
    },
    /// An allocation that the machine cannot satisfy: more than its memory
    /// or this process's address-space limit, or refused by the allocator.
    #[error("{op}: out of memory: cannot allocate {bytes} bytes on {device} ({why})")]
    OutOfMemory {
        /// The op that allocated.
        op: &'static str,
        /// Bytes asked for.
        bytes: usize,
        /// Where (`cpu` or `cuda:N`).
        device: String,
        /// Why it failed.
        why: String,
    },
    /// The run was stopped: interrupted by the host or Ctrl-C, or past the
    /// engine's work limit, in the middle of a native op.
    #[error("{op}: {why}")]
    Terminated {
        /// The op that was running.
        op: &'static str,
        /// What stopped it.
        why: String,
    },
    /// A collective of the process group that failed: a peer that cannot be
    /// reached or timed out, or ranks that disagree on the call.
    #[error("{op}: {msg}")]
    Distributed {
        /// The collective (or `dist` for connection setup).
        op: &'static str,
        /// What went wrong, naming the ranks involved.
        msg: String,
    },
    /// A CUDA call that failed (a kernel launch, a library call, a copy, a
    /// synchronisation): the op that ran it, the call, the driver's message
    /// and the operands' shapes where the op's front-end knows them.
    #[error("{op}: CUDA error in {call}: {msg}{}", operand_shapes(.shapes))]
    Cuda {
        /// The op that was running.
        op: &'static str,
        /// The CUDA call that failed.
        call: String,
        /// The driver's or library's error.
        msg: String,
        /// The operands' shapes (empty where unknown).
        shapes: Vec<Vec<usize>>,
    },
    /// The GPU could not give an op the memory it asked for, even after the
    /// caching allocator returned its cached blocks to the driver and tried
    /// again.
    #[error(
        "{op}: CUDA out of memory: tried to allocate {} on {device} ({} in all, {} free); kiln holds {} in live tensors and {} reserved by its caching allocator{}",
        bytes_text(*.bytes),
        bytes_text(*.total),
        bytes_text(*.free),
        bytes_text(*.allocated),
        bytes_text(*.reserved),
        oom_shapes(.shapes)
    )]
    CudaOutOfMemory {
        /// The op that allocated.
        op: &'static str,
        /// The device (`cuda:N`).
        device: String,
        /// Bytes asked for.
        bytes: usize,
        /// Bytes in live tensors on the device.
        allocated: usize,
        /// Bytes the caching allocator holds from the driver (live plus cached).
        reserved: usize,
        /// Free device memory the driver reports.
        free: usize,
        /// The device's memory in all.
        total: usize,
        /// The operands' shapes (empty where unknown).
        shapes: Vec<Vec<usize>>,
    },
    /// A tensor read or written as an element type other than its dtype.
    #[error("{op}: the tensor has dtype {found}, not {expected} (convert it first with to_dtype)")]
    DTypeMismatch {
        /// The op.
        op: &'static str,
        /// The dtype the caller asked for.
        expected: DType,
        /// The tensor's dtype.
        found: DType,
    },
}

/// `" with operands of shapes [2, 3] and [3, 4]"`, or nothing when no
/// shape is known.
fn operand_shapes(shapes: &[Vec<usize>]) -> String {
    match shapes {
        [] => String::new(),
        [one] => format!(" with an operand of shape {one:?}"),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|s| format!("{s:?}")).collect();
            format!(" with operands of shapes {} and {last:?}", init.join(", "))
        }
    }
}

/// `"; its operands have shapes [2, 3] and [3, 4]"`, or nothing.
fn oom_shapes(shapes: &[Vec<usize>]) -> String {
    match shapes {
        [] => String::new(),
        [one] => format!("; its operand has shape {one:?}"),
        _ => operand_shapes(shapes).replace(" with operands of shapes", "; its operands have shapes"),
    }
}

/// Bytes for people: `512 bytes`, `2.00 MiB`, `139.80 GiB`.
pub fn bytes_text(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}

impl Error {
    /// The error with the operands' shapes attached, for the errors that
    /// carry them ([`Error::Cuda`], [`Error::CudaOutOfMemory`]) and have
    /// none yet; other errors are returned as they are. Only the error path
    /// pays for it.
    pub fn with_shapes(self, shapes: &[&[usize]]) -> Error {
        match self {
            Error::Cuda {
                op,
                call,
                msg,
                shapes: s,
            } if s.is_empty() => Error::Cuda {
                op,
                call,
                msg,
                shapes: shapes.iter().map(|s| s.to_vec()).collect(),
            },
            Error::CudaOutOfMemory {
                op,
                device,
                bytes,
                allocated,
                reserved,
                free,
                total,
                shapes: s,
            } if s.is_empty() => Error::CudaOutOfMemory {
                op,
                device,
                bytes,
                allocated,
                reserved,
                free,
                total,
                shapes: shapes.iter().map(|s| s.to_vec()).collect(),
            },
            e => e,
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_errors_name_the_op_the_call_and_the_shapes() {
        let e = Error::Cuda {
            op: "matmul",
            call: "cublasGemmEx".into(),
            msg: "CUBLAS_STATUS_EXECUTION_FAILED".into(),
            shapes: vec![],
        };
        assert_eq!(
            e.clone().with_shapes(&[&[2, 3], &[3, 4]]).to_string(),
            "matmul: CUDA error in cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED with operands of shapes [2, 3] and [3, 4]"
        );
        assert_eq!(
            e.with_shapes(&[&[5]]).with_shapes(&[&[9]]).to_string(),
            "matmul: CUDA error in cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED with an operand of shape [5]"
        );
        let other = Error::invalid("sum", "bad");
        assert_eq!(other.clone().with_shapes(&[&[1]]), other);
    }

    #[test]
    fn out_of_memory_says_what_was_asked_held_and_free() {
        let gib = 1usize << 30;
        let e = Error::CudaOutOfMemory {
            op: "zeros",
            device: "cuda:0".into(),
            bytes: 2 * gib,
            allocated: 120 * gib,
            reserved: 130 * gib,
            free: gib + gib / 5,
            total: 140 * gib,
            shapes: vec![],
        };
        assert_eq!(
            e.to_string(),
            "zeros: CUDA out of memory: tried to allocate 2.00 GiB on cuda:0 (140.00 GiB in all, 1.20 GiB free); kiln holds 120.00 GiB in live tensors and 130.00 GiB reserved by its caching allocator"
        );
        let shaped = Error::CudaOutOfMemory {
            op: "add",
            device: "cuda:0".into(),
            bytes: 1024,
            allocated: 0,
            reserved: 0,
            free: 0,
            total: 0,
            shapes: vec![],
        }
        .with_shapes(&[&[2, 3], &[2, 3]]);
        assert!(
            shaped
                .to_string()
                .ends_with("allocator; its operands have shapes [2, 3] and [2, 3]"),
            "{shaped}"
        );
        assert_eq!(bytes_text(512), "512 bytes");
        assert_eq!(bytes_text(3 << 20), "3.00 MiB");
    }
}
