//! A stream-ordered caching allocator, after PyTorch's: freed blocks go to a
//! free list keyed by the stream of their last use and their size, and are
//! reused by later allocations on that stream without any synchronisation
//! (the stream orders the reuse after the last use). Blocks cached for one
//! stream are not handed to another. Sizes round up to 512 bytes (small) or
//! 2 MiB (large). On out-of-memory the cache is released and the allocation
//! retried once.
//!
//! **Graph pools.** A CUDA-graph capture runs on a stream of its own, which
//! is also its private pool (`CachingAllocator::open_pool`): blocks made
//! while it captures come from `cuMemAlloc` (a stream-ordered allocation
//! would become a node of the graph) and belong to the pool for as long as
//! the graph lives; freed, they return to the pool's list whatever stream
//! used them last, so a replay's writes never land in memory that eager
//! work was given. `CachingAllocator::close_pool` gives the pool's cached
//! blocks back when the graph is dropped; blocks still held by tensors then
//! join the ordinary cache when those are freed.

use cudarc::driver::{result, sys};
use std::collections::{BTreeMap, HashSet};

const SMALL: usize = 1 << 20;
const SMALL_ROUND: usize = 512;
const LARGE_ROUND: usize = 2 << 20;

/// Bytes in use and held by the allocator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in live tensors.
    pub allocated: usize,
    /// Bytes obtained from the driver (live plus cached).
    pub reserved: usize,
    /// The most bytes in live tensors at once since the start or the last
    /// [`CachingAllocator::reset_peak`].
    pub peak_allocated: usize,
}

/// A request the driver refused even after the cache was returned to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocFailure {
    /// The block size asked of the driver (the request rounded up).
    pub size: usize,
    /// The allocator's statistics after emptying its cache.
    pub stats: MemoryStats,
    /// The driver's error.
    pub driver: String,
    /// True when the driver said it is out of memory (other failures are
    /// not retried and are not reported as out-of-memory).
    pub out_of_memory: bool,
}

/// The retry policy of the caching allocator: `alloc`, and when it fails
/// for want of memory (`is_oom`), `empty` (return the cached blocks to the
/// driver and wait for the frees) and `alloc` once more.
pub fn with_retry<T, E>(
    mut alloc: impl FnMut() -> Result<T, E>,
    is_oom: impl Fn(&E) -> bool,
    empty: impl FnOnce(),
) -> Result<T, E> {
    match alloc() {
        Ok(v) => Ok(v),
        Err(e) if is_oom(&e) => {
            empty();
            alloc()
        }
        Err(e) => Err(e),
    }
}

/// The caching allocator of the device, shared by its streams.
pub struct CachingAllocator {
    /// (stream, size) → cached blocks.
    free: BTreeMap<(usize, usize), Vec<sys::CUdeviceptr>>,
    stats: MemoryStats,
    /// The streams of live graph pools.
    pools: HashSet<usize>,
    /// Blocks from `cuMemAlloc` (freed with `cuMemFree`, not stream-ordered).
    sync_blocks: HashSet<sys::CUdeviceptr>,
}

// SAFETY: the stream handles are only used under the runtime's mutex.
unsafe impl Send for CachingAllocator {}

/// The block size a request of `bytes` is served from.
pub fn round_size(bytes: usize) -> usize {
    let b = bytes.max(1);
    if b < SMALL {
        b.div_ceil(SMALL_ROUND).saturating_mul(SMALL_ROUND)
    } else {
        b.div_ceil(LARGE_ROUND).saturating_mul(LARGE_ROUND)
    }
}

impl Default for CachingAllocator {
    fn default() -> Self {
        CachingAllocator::new()
    }
}

impl CachingAllocator {
    /// An empty allocator.
    pub fn new() -> Self {
        CachingAllocator {
            free: BTreeMap::new(),
            stats: MemoryStats::default(),
            pools: HashSet::new(),
            sync_blocks: HashSet::new(),
        }
    }

    /// A block of at least `bytes` for use on `stream` (a `CUstream` handle): a cached one of that
    /// size class, else a new one; with the graph pool it belongs to (the
    /// stream, when `stream` is a live pool's; else 0).
    pub(crate) fn alloc(
        &mut self,
        bytes: usize,
        stream: usize,
    ) -> Result<(sys::CUdeviceptr, usize, usize), AllocFailure> {
        let size = round_size(bytes);
        let pool = if self.pools.contains(&stream) { stream } else { 0 };
        if let Some(list) = self.free.get_mut(&(stream, size)) {
            if let Some(ptr) = list.pop() {
                self.stats.allocated += size;
                self.stats.peak_allocated = self.stats.peak_allocated.max(self.stats.allocated);
                return Ok((ptr, size, pool));
            }
        }
        let is_oom = |e: &result::DriverError| e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY;
        let ptr = if pool != 0 {
            // SAFETY: a plain allocation (allowed in a relaxed-mode capture; a
            // stream-ordered one would be captured as a graph node).
            let malloc = || unsafe { result::malloc_sync(size) };
            // the capturing stream may not wait: return the cache without a sync
            with_retry(malloc, is_oom, || self.empty_cache())
        } else {
            // SAFETY: a plain stream-ordered allocation on our stream.
            let malloc = || unsafe { result::malloc_async(stream as sys::CUstream, size) };
            let empty = || {
                self.empty_cache();
                // the frees are stream-ordered: wait for them, so that blocks
                // cached for other streams are free for this one too
                let _ = result::ctx::synchronize();
            };
            with_retry(malloc, is_oom, empty)
        }
        .map_err(|e| AllocFailure {
            size,
            stats: self.stats,
            driver: format!("{e:?}"),
            out_of_memory: is_oom(&e),
        })?;
        if pool != 0 {
            self.sync_blocks.insert(ptr);
        }
        self.stats.allocated += size;
        self.stats.peak_allocated = self.stats.peak_allocated.max(self.stats.allocated);
        self.stats.reserved += size;
        Ok((ptr, size, pool))
    }

    /// Returns a block last used on `stream` to the cache: to its graph
    /// pool's list while that pool lives, else to `stream`'s, where later
    /// work on that stream may reuse it at once.
    pub(crate) fn release(&mut self, ptr: sys::CUdeviceptr, size: usize, stream: usize, pool: usize) {
        self.stats.allocated = self.stats.allocated.saturating_sub(size);
        let key = if pool != 0 && self.pools.contains(&pool) {
            pool
        } else {
            stream
        };
        self.free.entry((key, size)).or_default().push(ptr);
    }

    /// Makes `stream` a graph's private pool (see the module's doc).
    pub(crate) fn open_pool(&mut self, stream: usize) {
        self.pools.insert(stream);
    }

    /// Ends the graph pool of `stream`: its cached blocks go back to the
    /// driver. The caller has waited for the graph's last replay.
    pub(crate) fn close_pool(&mut self, stream: usize) {
        self.pools.remove(&stream);
        let keys: Vec<(usize, usize)> = self
            .free
            .range((stream, 0)..=(stream, usize::MAX))
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            for ptr in self.free.remove(&key).unwrap_or_default() {
                self.free_block(ptr, key);
            }
        }
    }

    /// Gives one cached block of `key` (stream, size) back to the driver.
    fn free_block(&mut self, ptr: sys::CUdeviceptr, (stream, size): (usize, usize)) {
        // SAFETY: the block is cached, so no live tensor refers to it; a
        // stream-ordered free is ordered after its last use on that stream,
        // and `cuMemFree` waits for the device first.
        unsafe {
            if self.sync_blocks.remove(&ptr) {
                let _ = result::free_sync(ptr);
            } else {
                let _ = result::free_async(ptr, stream as sys::CUstream);
            }
        }
        self.stats.reserved = self.stats.reserved.saturating_sub(size);
    }

    /// Starts the peak over from the bytes live now.
    pub fn reset_peak(&mut self) {
        self.stats.peak_allocated = self.stats.allocated;
    }

    /// Gives every cached block back to the driver, except those of live
    /// graph pools (their graphs replay into them).
    pub fn empty_cache(&mut self) {
        let keys: Vec<(usize, usize)> = self
            .free
            .keys()
            .filter(|(stream, _)| !self.pools.contains(stream))
            .copied()
            .collect();
        for key in keys {
            for ptr in self.free.remove(&key).unwrap_or_default() {
                self.free_block(ptr, key);
            }
        }
    }

    /// Current statistics.
    pub fn stats(&self) -> MemoryStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_allocation_empties_the_cache_and_retries_once() {
        let (mut calls, mut emptied) = (0, false);
        let oom = |e: &&str| *e == "out of memory";
        let r: Result<u32, &str> = with_retry(
            || {
                calls += 1;
                if calls == 1 {
                    Err("out of memory")
                } else {
                    Ok(7)
                }
            },
            oom,
            || emptied = true,
        );
        assert_eq!((r, calls, emptied), (Ok(7), 2, true));
        let mut calls = 0;
        let r: Result<u32, &str> = with_retry(
            || {
                calls += 1;
                Err("out of memory")
            },
            oom,
            || {},
        );
        assert_eq!((r, calls), (Err("out of memory"), 2));
        let mut emptied = false;
        let r: Result<u32, &str> = with_retry(|| Ok(1), oom, || emptied = true);
        assert_eq!((r, emptied), (Ok(1), false));
        // a failure that is not for want of memory is not retried
        let (mut calls, mut emptied) = (0, false);
        let r: Result<u32, &str> = with_retry(
            || {
                calls += 1;
                Err("invalid context")
            },
            oom,
            || emptied = true,
        );
        assert_eq!((r, calls, emptied), (Err("invalid context"), 1, false));
    }

    #[test]
    fn size_classes() {
        assert_eq!(round_size(0), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(round_size(SMALL), LARGE_ROUND);
        assert_eq!(round_size(3 << 20), 4 << 20);
    }
}
