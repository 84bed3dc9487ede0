//! Runtime functions: `seed`, the default device, `time(|| ...)`, `args()`,
//! and the `cuda::` namespace (`is_available`, `device_name`,
//! `synchronize`, memory statistics). This build has no CUDA backend yet, so
//! `cuda::is_available()` is false and CUDA devices are a clear error.

use super::convert::{ok, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::backend::cuda::{blas, CudaRuntime};
use crate::tensor::Device;
use rhai::{Dynamic, Engine, FnPtr, Module, NativeCallContext, FLOAT, INT};
use std::sync::Arc;
use std::time::Instant;

/// Registers the runtime functions and the `cuda` module.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let module = cuda_module(engine, rt);
    engine.register_static_module("cuda", module.into());
    let mut api = Api::new(engine, Category::Runtime);
    for name in ["seed", "manual_seed"] {
        let r = rt.clone();
        api.doc("reseeds this engine's random generator (the same on CPU and GPU)")
            .volatile(name, ["n"], move |n: INT| r.with_rng(|g| g.reseed(n as u64)));
    }
    let r = rt.clone();
    api.doc("sets the device new tensors go to (\"cpu\", \"cuda\")")
        .volatile(
            "set_default_device",
            ["device"],
            move |s: &str| -> RhaiResult<()> { ok(Device::parse(s).and_then(|d| r.set_device(d))) },
        );
    let r = rt.clone();
    api.doc("the device new tensors go to")
        .volatile("default_device", [], move || r.device().to_string());
    let r = rt.clone();
    api.doc("the script's command-line arguments, as strings")
        .volatile("args", [], move || -> rhai::Array {
            r.args().into_iter().map(Dynamic::from).collect()
        });
    api.doc("calls f and returns its wall time in seconds, after the device finished its work")
        .volatile(
            "time",
            ["f"],
            |ctx: NativeCallContext, f: FnPtr| -> RhaiResult<FLOAT> {
                let start = Instant::now();
                let _value = f.call_within_context::<Dynamic>(&ctx, ())?;
                synchronize();
                Ok(start.elapsed().as_secs_f64())
            },
        );
}

/// Waits for all queued device work (nothing to wait for without a GPU).
fn synchronize() {
    if let Ok(rt) = CudaRuntime::get() {
        let _ = rt.synchronize();
    }
}

/// `cuda::device_info()`'s map.
fn device_info(rt: &CudaRuntime) -> rhai::Map {
    let k = rt.kernels();
    let (major, minor) = k.capability();
    let mut m = rhai::Map::new();
    m.insert("name".into(), rt.device_name().to_string().into());
    m.insert("compute_capability".into(), format!("{major}.{minor}").into());
    m.insert("kernels".into(), k.code().into());
    m.insert("sass".into(), crate::backend::cuda::images::sass_archs().into());
    let loaded: rhai::Array = k
        .loaded_modules()
        .into_iter()
        .map(|n| n.to_string().into())
        .collect();
    m.insert("modules_loaded".into(), loaded.into());
    m
}

/// The `cuda::` functions (`engine` gives the type names of their signatures).
fn cuda_module(engine: &Engine, rt: &Arc<Runtime>) -> Module {
    let mut m = Module::new();
    let mut api = Api::module(&mut m, "cuda", engine, Category::Cuda);
    api.doc("true when a GPU is usable")
        .volatile("is_available", [], CudaRuntime::is_available);
    api.doc("the number of GPUs kiln uses (0 or 1)")
        .volatile("device_count", [], || CudaRuntime::is_available() as INT);
    api.doc("the GPU's name (an error without one)")
        .volatile("device_name", [], || -> RhaiResult<String> {
            ok(CudaRuntime::get().map(|rt| rt.device_name().to_string()))
        });
    api.doc("the GPU and the code kiln runs on it: name, compute capability, the kernels' code (SASS for its architecture, or PTX the driver compiles), the architectures with SASS in this build, the kernel modules loaded so far")
        .volatile("device_info", [], || -> RhaiResult<rhai::Map> {
            ok(CudaRuntime::get().map(device_info))
        });
    api.doc("waits until all queued GPU work is done")
        .volatile("synchronize", [], synchronize);
    for (name, on) in [("profiler_start", true), ("profiler_stop", false)] {
        api.doc(if on {
            "starts collection by an attached CUDA profiler (torch.cuda.profiler.start; for `ncu --profile-from-start off`)"
        } else {
            "stops collection by an attached CUDA profiler (torch.cuda.profiler.stop)"
        })
        .volatile(name, [], move || -> RhaiResult<()> {
            ok(CudaRuntime::get().and_then(|rt| rt.set_profiling(on)))
        });
    }
    api.doc("true when all work queued on this engine's stream has finished (never waits)")
        .volatile("is_idle", [], || -> RhaiResult<bool> {
            ok(CudaRuntime::get().and_then(|rt| rt.is_idle()))
        });
    api.doc("bytes of GPU memory held by live tensors")
        .volatile("memory_allocated", [], || {
            CudaRuntime::get().map_or(0, |rt| rt.memory_stats().allocated as INT)
        });
    api.doc("the most bytes of GPU memory held by live tensors at once, since the start or reset_peak_memory_stats()")
        .volatile("max_memory_allocated", [], || {
            CudaRuntime::get().map_or(0, |rt| rt.memory_stats().peak_allocated as INT)
        });
    api.doc("starts max_memory_allocated over from the bytes live now")
        .volatile("reset_peak_memory_stats", [], || {
            if let Ok(rt) = CudaRuntime::get() {
                rt.reset_peak_memory();
            }
        });
    api.doc("bytes of GPU memory the caching allocator holds")
        .volatile("memory_reserved", [], || {
            CudaRuntime::get().map_or(0, |rt| rt.memory_stats().reserved as INT)
        });
    api.doc("returns the allocator's unused GPU memory to the driver")
        .volatile("empty_cache", [], || {
            if let Ok(rt) = CudaRuntime::get() {
                rt.empty_cache();
            }
        });
    api.doc("how often a buffer moved between CUDA streams (each costs an event and a wait)")
        .volatile("stream_handoffs", [], || {
            CudaRuntime::get().map_or(0, |rt| rt.stream_handoffs() as INT)
        });
    api.doc("lets f32 matmuls use TF32 tensor cores (off by default), for this engine")
        .volatile("set_allow_tf32", ["allow"], |allow: bool| {
            blas::set_allow_tf32(allow);
        });
    api.doc("whether f32 matmuls may use TF32 tensor cores")
        .volatile("allow_tf32", [], blas::allow_tf32);
    api.doc("switches convolutions on CUDA through cuDNN (on by default; off: windows and cuBLAS), for the process")
        .volatile("set_cudnn_enabled", ["enabled"], |on: bool| {
            crate::tensor::cnn::cudnn::set_enabled(on);
        });
    api.doc("whether convolutions on CUDA go through cuDNN").volatile(
        "cudnn_enabled",
        [],
        crate::tensor::cnn::cudnn::enabled,
    );
    api.doc("chooses each convolution geometry's cuDNN algorithms by timing them all once (off by default), for the process")
        .volatile("set_cudnn_benchmark", ["on"], |on: bool| {
            crate::backend::cuda::cudnn::set_benchmark(on);
        });
    api.doc("whether cuDNN algorithms are chosen by timing them")
        .volatile("cudnn_benchmark", [], crate::backend::cuda::cudnn::benchmark);
    super::graph::register_cuda(&mut api, rt);
    drop(api);
    m
}
