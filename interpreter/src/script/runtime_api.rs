//! Runtime functions: `seed`, the default device, `time(|| ...)`, `args()`,
//! and the `cuda::` namespace (`is_available`, `device_name`,
//! `synchronize`, memory statistics). This build has no CUDA backend yet, so
//! `cuda::is_available()` is false and CUDA devices are a clear error.

use super::convert::{ok, RhaiResult};
use super::creation::volatile;
use super::Runtime;
use crate::backend::cuda::{blas, CudaRuntime};
use crate::core::Device;
use rhai::{Dynamic, Engine, FnPtr, FuncRegistration, Module, NativeCallContext, FLOAT, INT};
use std::sync::Arc;
use std::time::Instant;

/// Registers the runtime functions and the `cuda` module.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    for name in ["seed", "manual_seed"] {
        let r = rt.clone();
        volatile!(engine, name, move |n: INT| r.with_rng(|g| g.reseed(n as u64)));
    }
    let r = rt.clone();
    volatile!(engine, "set_default_device", move |s: &str| -> RhaiResult<()> {
        ok(Device::parse(s).and_then(|d| r.set_device(d)))
    });
    let r = rt.clone();
    volatile!(engine, "default_device", move || r.device().to_string());
    let r = rt.clone();
    volatile!(engine, "args", move || -> rhai::Array {
        r.args().into_iter().map(Dynamic::from).collect()
    });
    volatile!(engine, "time", |ctx: NativeCallContext,
                               f: FnPtr|
     -> RhaiResult<FLOAT> {
        let start = Instant::now();
        let _value = f.call_within_context::<Dynamic>(&ctx, ())?;
        synchronize();
        Ok(start.elapsed().as_secs_f64())
    },);
    engine.register_static_module("cuda", cuda_module().into());
}

/// Waits for all queued device work (nothing to wait for without a GPU).
fn synchronize() {
    if let Ok(rt) = CudaRuntime::get() {
        let _ = rt.synchronize();
    }
}

fn cuda_module() -> Module {
    let mut m = Module::new();
    let reg = |name: &str| FuncRegistration::new(name.to_string()).with_volatility(true);
    reg("is_available").set_into_module(&mut m, CudaRuntime::is_available);
    reg("device_count").set_into_module(&mut m, || CudaRuntime::is_available() as INT);
    reg("device_name").set_into_module(&mut m, || -> RhaiResult<String> {
        ok(CudaRuntime::get().map(|rt| rt.device_name().to_string()))
    });
    reg("synchronize").set_into_module(&mut m, synchronize);
    reg("is_idle").set_into_module(&mut m, || -> RhaiResult<bool> {
        ok(CudaRuntime::get().and_then(|rt| rt.is_idle()))
    });
    reg("memory_allocated").set_into_module(&mut m, || {
        CudaRuntime::get().map_or(0, |rt| rt.memory_stats().allocated as INT)
    });
    reg("memory_reserved").set_into_module(&mut m, || {
        CudaRuntime::get().map_or(0, |rt| rt.memory_stats().reserved as INT)
    });
    reg("empty_cache").set_into_module(&mut m, || {
        if let Ok(rt) = CudaRuntime::get() {
            rt.empty_cache();
        }
    });
    reg("stream_handoffs").set_into_module(&mut m, || {
        CudaRuntime::get().map_or(0, |rt| rt.stream_handoffs() as INT)
    });
    reg("set_allow_tf32").set_into_module(&mut m, |allow: bool| {
        blas::set_allow_tf32(allow);
    });
    reg("allow_tf32").set_into_module(&mut m, blas::allow_tf32);
    m
}
