//! Locking several storages at once: every op that holds more than one
//! storage lock (`copy_` and slice assignment, the fused optimizer steps,
//! the gradient copies of `dist`) takes them through [`lock_ordered`], in one
//! global order (by the storage's address), so that two engines on two
//! threads working on the same tensors in opposite roles cannot deadlock.

use super::Tensor;
use crate::backend::Storage;
use crate::core::error::{Error, Result};
use std::sync::{Arc, RwLockReadGuard, RwLockWriteGuard};

/// How an op uses a storage it locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Read only.
    Read,
    /// Written (bumps the storage's version).
    Write,
}

/// One lock of [`lock_ordered`].
pub(crate) enum StorageGuard<'a> {
    /// A shared lock.
    Read(RwLockReadGuard<'a, Storage>),
    /// An exclusive lock.
    Write(RwLockWriteGuard<'a, Storage>),
}

impl StorageGuard<'_> {
    /// The storage, to read.
    pub(crate) fn get(&self) -> &Storage {
        match self {
            StorageGuard::Read(g) => g,
            StorageGuard::Write(g) => g,
        }
    }

    /// The storage, to write; an error for a guard taken to read.
    pub(crate) fn get_mut(&mut self, op: &'static str) -> Result<&mut Storage> {
        match self {
            StorageGuard::Write(g) => Ok(&mut *g),
            StorageGuard::Read(_) => Err(Error::invalid(
                op,
                "internal: a storage locked to read was written",
            )),
        }
    }
}

/// Locks the storages of `reqs` in address order and returns the guards in
/// the order asked. Two requests for one storage are an error (the caller
/// copies a shared source first), as is more than one lock per storage.
pub(crate) fn lock_ordered<'a>(
    op: &'static str,
    reqs: &[(&'a Tensor, Access)],
) -> Result<Vec<StorageGuard<'a>>> {
    let addr = |t: &Tensor| Arc::as_ptr(&t.0.storage) as usize;
    let mut order: Vec<usize> = (0..reqs.len()).collect();
    order.sort_by_key(|&i| addr(reqs[i].0));
    if order.windows(2).any(|w| addr(reqs[w[0]].0) == addr(reqs[w[1]].0)) {
        return Err(Error::invalid(
            op,
            "two of its tensors share memory (a parameter, gradient or state viewing another)",
        ));
    }
    let mut slots: Vec<Option<StorageGuard<'a>>> = reqs.iter().map(|_| None).collect();
    for i in order {
        let (t, access) = reqs[i];
        slots[i] = Some(match access {
            Access::Read => StorageGuard::Read(t.storage()),
            Access::Write => StorageGuard::Write(t.storage_mut()),
        });
    }
    Ok(slots.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Device;

    #[test]
    fn guards_come_back_in_the_order_asked() {
        let a = Tensor::from_slice(&[1.0f32], &[1], Device::Cpu).unwrap();
        let b = Tensor::from_slice(&[2.0f32, 3.0], &[2], Device::Cpu).unwrap();
        let v0 = b.version();
        let mut g = lock_ordered("t", &[(&b, Access::Write), (&a, Access::Read)]).unwrap();
        assert_eq!(g[0].get().len(), 2);
        assert_eq!(g[1].get().len(), 1);
        assert!(g[1].get_mut("t").is_err());
        assert!(g[0].get_mut("t").is_ok());
        drop(g);
        assert!(b.version() > v0, "a write lock counts as a write");
        let view = a.reshape(&[1, 1]).unwrap();
        assert!(lock_ordered("t", &[(&a, Access::Write), (&view, Access::Read)]).is_err());
    }
}
