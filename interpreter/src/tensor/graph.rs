//! `cuda::graph`'s front-end: a [`Recording`] of what a block queues on the
//! GPU becomes a [`Graph`], replayed with one launch, whose named inputs
//! (CUDA tensors the block reads) take new values before a replay — shape
//! and dtype checked, copied in place so the recorded kernels see them.
//!
//! Only GPU work is recorded. Host-side logic in the block (script control
//! flow, CPU tensors, host numbers passed to ops) ran once, at capture; a
//! replay repeats the recorded kernels with the values they were given then.
//! Random ops are the exception: each replay draws fresh numbers, the ones
//! an eager run of the block would draw at that point (every generator the
//! block drew from moves on by the block's draws), and a reseed between
//! replays is followed.

use super::autograd::no_grad;
use super::{random, Device, Tensor};
use crate::backend::cuda::graph::{Capture, CapturedGraph};
use crate::core::error::{Error, Result};

const OP: &str = "cuda::graph";

/// A recording in progress (see [`Graph::record`]).
pub struct Recording {
    capture: Capture,
    inputs: Vec<(String, Tensor)>,
}

impl Recording {
    /// Ends the recording: the graph, ready to replay.
    pub fn finish(self) -> Result<Graph> {
        let captured = self.capture.end()?;
        // the recorded draws have not been made: the first replay makes them
        random::rewind_captured(captured.draws());
        Ok(Graph {
            captured,
            inputs: self.inputs,
        })
    }
}

/// A recorded block of GPU work.
pub struct Graph {
    captured: CapturedGraph,
    inputs: Vec<(String, Tensor)>,
}

impl Graph {
    /// Starts recording what this thread queues on `device` (which must be
    /// CUDA). `inputs` are the named tensors a replay may refill; those not
    /// on `device` are left out (a replay could not reach them).
    pub fn record(device: Device, inputs: Vec<(String, Tensor)>) -> Result<Recording> {
        Graph::check_device(device)?;
        let inputs = inputs.into_iter().filter(|(_, t)| t.device() == device).collect();
        Ok(Recording {
            capture: Capture::begin()?,
            inputs,
        })
    }

    /// `Ok` when `device` can record graphs (a CUDA device), else an error
    /// saying why not.
    pub fn check_device(device: Device) -> Result<()> {
        if matches!(device, Device::Cuda(_)) {
            return Ok(());
        }
        Err(Error::invalid(
            OP,
            format!(
                "this engine runs on the {device}, and a graph records GPU work (use set_default_device(\"cuda\") or --device cuda)"
            ),
        ))
    }

    /// The names of the inputs a replay may refill.
    pub fn input_names(&self) -> Vec<String> {
        self.inputs.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The number of nodes (kernels, copies, fills) the graph holds.
    pub fn nodes(&self) -> usize {
        self.captured.nodes()
    }

    /// Copies each `(name, value)` into the input of that name (same shape
    /// and dtype), then replays the graph.
    pub fn replay(&self, fresh: &[(String, Tensor)]) -> Result<()> {
        let mut targets = Vec::with_capacity(fresh.len());
        for (name, value) in fresh {
            let Some((_, input)) = self.inputs.iter().find(|(n, _)| n == name) else {
                let known = self.input_names();
                return Err(Error::invalid(
                    "replay",
                    format!(
                        "'{name}' is not an input of this graph (its inputs are the CUDA tensors the block captured: {})",
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    ),
                ));
            };
            if value.shape() != input.shape() || value.dtype() != input.dtype() {
                return Err(Error::invalid(
                    "replay",
                    format!(
                        "input '{name}' was recorded as {:?} {} and cannot take a {:?} {} tensor (a graph replays fixed shapes and dtypes)",
                        input.shape(),
                        input.dtype(),
                        value.shape(),
                        value.dtype()
                    ),
                ));
            }
            targets.push((input, value));
        }
        no_grad(|| -> Result<()> {
            for (input, value) in targets {
                if !(input.shares_storage(value) && input.layout() == value.layout()) {
                    input.copy_(value)?;
                }
            }
            Ok(())
        })?;
        self.captured.replay(&random::replay_draws(self.captured.draws()))
    }
}
