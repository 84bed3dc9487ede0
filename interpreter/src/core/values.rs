//! Host-side values in logical order: what crosses back from a device when a
//! script reads a tensor (`item`, `to_list`, `print`), independent of dtype.

use super::Scalar;

/// Host-side values in logical order: what crosses back from a device.
#[derive(Clone, Debug, PartialEq)]
pub enum HostValues {
    /// bool tensors
    Bool(Vec<bool>),
    /// integer tensors, widened to i64
    Int(Vec<i64>),
    /// float tensors, widened to f64
    Float(Vec<f64>),
}

impl HostValues {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            HostValues::Bool(v) => v.len(),
            HostValues::Int(v) => v.len(),
            HostValues::Float(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` as a scalar.
    pub fn get(&self, i: usize) -> Option<Scalar> {
        match self {
            HostValues::Bool(v) => v.get(i).map(|&b| Scalar::Bool(b)),
            HostValues::Int(v) => v.get(i).map(|&x| Scalar::Int(x)),
            HostValues::Float(v) => v.get(i).map(|&x| Scalar::Float(x)),
        }
    }
}
