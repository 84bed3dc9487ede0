//! The kernel table at run time: the GPU code's modules (`images`), each
//! loaded on the first use of one of its kernels and resolved into functions
//! then (a script that only adds vectors loads one module). A GPU with SASS
//! in the binary loads it in milliseconds; any other (or `KILN_FORCE_PTX=1`)
//! has the driver compile the module's PTX, and a compile that takes more
//! than a moment prints one line saying so. Modules are compiled one at a
//! time, on first use: the driver serializes its compiles (twelve modules
//! loaded on twelve threads finished one after another on the H200, the
//! first needed one last), so compiling ahead on other threads only delays
//! the module a script waits for. `KILN_LOG_MODULES=1` prints each load and
//! its time.

use super::table::{ptx_entries, Kernel};
use crate::backend::cuda::images::{self, Code};
use crate::core::error::{Error, Result};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Every kernel the host expects, module by module, loaded on first use.
pub struct KernelTable {
    inner: Modules,
}

struct Modules {
    ctx: Arc<CudaContext>,
    /// The GPU's name, for messages.
    gpu: String,
    /// What this GPU loads: SASS of an architecture, or the PTX.
    code: Code,
    /// The GPU's compute capability (major, minor).
    capability: (u32, u32),
    /// The kernels each module must export.
    by_module: Vec<Vec<Kernel>>,
    /// Each module once loaded (or why it could not be).
    slots: Vec<OnceLock<std::result::Result<Loaded, String>>>,
}

/// One loaded module's kernels, with the most threads a block of each may
/// have (its register use decides: a heavy kernel cannot run 1024 threads).
struct Loaded {
    functions: HashMap<Kernel, (CudaFunction, u32)>,
}

/// Set once the "compiling GPU kernels" line has been printed.
static ANNOUNCED: AtomicBool = AtomicBool::new(false);

impl KernelTable {
    /// The table for the GPU of `ctx`: decides which code it loads (an error
    /// when the GPU is older than every target) and loads nothing yet.
    pub fn new(ctx: Arc<CudaContext>, gpu: &str) -> std::result::Result<Self, String> {
        let attr = |a| ctx.attribute(a).map(|v| v.max(0) as u32);
        let major = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
            .map_err(|e| format!("cannot read the compute capability: {e:?}"))?;
        let minor = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
            .map_err(|e| format!("cannot read the compute capability: {e:?}"))?;
        let force_ptx = std::env::var("KILN_FORCE_PTX").is_ok_and(|v| !v.is_empty() && v != "0");
        let code = images::choose(major, minor, force_ptx).map_err(|e| format!("{gpu}: {e}"))?;
        let mut by_module = vec![vec![]; images::MODULES.len()];
        for k in Kernel::expected() {
            by_module[k.module()].push(k);
        }
        Ok(KernelTable {
            inner: Modules {
                ctx,
                gpu: gpu.to_string(),
                code,
                capability: (major, minor),
                by_module,
                slots: (0..images::MODULES.len()).map(|_| OnceLock::new()).collect(),
            },
        })
    }

    /// What this GPU loads, in words (`SASS for sm_90`, or the PTX).
    pub fn code(&self) -> String {
        self.inner.code.to_string()
    }

    /// The GPU's compute capability (major, minor).
    pub fn capability(&self) -> (u32, u32) {
        self.inner.capability
    }

    /// The names of the modules loaded so far.
    pub fn loaded_modules(&self) -> Vec<&'static str> {
        self.inner
            .slots
            .iter()
            .zip(images::MODULES.iter())
            .filter(|(slot, _)| slot.get().is_some_and(|r| r.is_ok()))
            .map(|(_, image)| image.name)
            .collect()
    }

    /// The kernel, or a clear error when its module cannot be loaded or has
    /// none for these dtypes.
    pub fn get(&self, k: Kernel) -> Result<&CudaFunction> {
        let loaded = self.inner.module(k.module()).map_err(|msg| Error::Cuda {
            op: crate::core::memory::current_op(),
            call: "cuModuleLoadData".into(),
            msg,
            shapes: vec![],
        })?;
        loaded.functions.get(&k).map(|(f, _)| f).ok_or_else(|| {
            Error::invalid(
                crate::core::memory::current_op(),
                format!("not supported on CUDA for these dtypes (no kernel {})", k.name()),
            )
        })
    }

    /// The kernel when it exists and its module loads.
    pub fn find(&self, k: Kernel) -> Option<&CudaFunction> {
        self.get(k).ok()
    }

    /// The most threads a block of `k` may have (256 when unknown).
    pub fn max_threads(&self, k: Kernel) -> u32 {
        self.inner
            .module(k.module())
            .ok()
            .and_then(|m| m.functions.get(&k))
            .map_or(256, |&(_, limit)| limit)
    }

    /// Registers a thread, local (spilled) bytes a thread and the block limit
    /// of `k`, as the driver compiled it.
    pub fn resources(&self, k: Kernel) -> Option<(i32, i32, u32)> {
        let f = self.find(k)?;
        Some((
            f.num_regs().ok()?,
            f.local_size_bytes().ok()?,
            self.max_threads(k),
        ))
    }

    /// Number of kernels the host expects.
    pub fn len(&self) -> usize {
        self.inner.by_module.iter().map(Vec::len).sum()
    }

    /// True when the host expects no kernel.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Modules {
    /// Module `m`, loaded on first call (waiting when another thread is
    /// loading it).
    fn module(&self, m: usize) -> std::result::Result<&Loaded, String> {
        self.slots[m]
            .get_or_init(|| self.load(m))
            .as_ref()
            .map_err(String::clone)
    }

    /// Loads module `m` and resolves every kernel it must export.
    fn load(&self, m: usize) -> std::result::Result<Loaded, String> {
        let image = &images::MODULES[m];
        let done = Arc::new(AtomicBool::new(false));
        if self.code == Code::Ptx {
            announce_if_slow(&self.gpu, Arc::clone(&done));
        }
        let started = std::time::Instant::now();
        let module = self.ctx.load_module(image.code(self.code));
        done.store(true, Ordering::Release);
        if std::env::var_os("KILN_LOG_MODULES").is_some() {
            eprintln!(
                "kiln: kernel module '{}' ({}) loaded in {:.3} s",
                image.name,
                self.code,
                started.elapsed().as_secs_f64()
            );
        }
        let module = module.map_err(|e| {
            format!(
                "cannot load the GPU kernel module '{}' ({}) on {}: {e:?}",
                image.name, self.code, self.gpu
            )
        })?;
        let missing: Vec<&str> = {
            let exported = ptx_entries(image.ptx);
            self.by_module[m]
                .iter()
                .map(|k| k.name())
                .filter(|n| !exported.contains(n))
                .collect()
        };
        if !missing.is_empty() {
            return Err(format!(
                "the GPU kernel module '{}' lacks {} kernel(s) the host expects: {} (rebuild kiln)",
                image.name,
                missing.len(),
                missing.join(", ")
            ));
        }
        let mut functions = HashMap::new();
        for &k in &self.by_module[m] {
            let name = k.name();
            let f = module
                .load_function(name)
                .map_err(|e| format!("cannot load kernel {name}: {e:?}"))?;
            let limit = f.max_threads_per_block().unwrap_or(256).clamp(32, 1024) as u32;
            functions.insert(k, (f, limit));
        }
        Ok(Loaded { functions })
    }
}

/// Prints, once per process, that the driver is compiling the kernels, when
/// a compile is still running after a moment (a warm driver cache answers
/// well before).
fn announce_if_slow(gpu: &str, done: Arc<AtomicBool>) {
    if ANNOUNCED.load(Ordering::Acquire) {
        return;
    }
    let gpu = gpu.to_string();
    let _ = std::thread::Builder::new()
        .name("kiln-jit-notice".into())
        .spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            if !done.load(Ordering::Acquire) && !ANNOUNCED.swap(true, Ordering::AcqRel) {
                eprintln!("compiling GPU kernels for {gpu} (first use only)…");
            }
        });
}
