//! Engines on several threads, the collectives through NCCL, asynchrony,
//! and what the driver compiled the heavy kernels to.

use super::*;

/// Engines on several threads at once, each on its own stream: four
/// interpreters run the same training-like script (matmul, softmax,
/// reductions, backward) on CUDA concurrently, then a tensor made by one
/// engine is used by another on a different thread (the stream handoff).
/// Every result must match the same script on the CPU.
pub fn engines_on_threads() -> std::result::Result<String, String> {
    use kiln::Interpreter;
    const SCRIPT: &str = "
        seed(SEED);
        let x = randn([512, 256]);
        let w = (randn([256, 64]) * 0.1).requires_grad(true);
        let total = 0.0;
        for i in 0..20 {
            let p = (x @ w).softmax(-1);
            let loss = (p * p).sum();
            loss.backward();
            total += loss.item();
            no_grad(|| { w -= w.grad * 0.01; });
            w.zero_grad();
        }
        [total, w.sum().item(), w.abs().max().item()]";
    let run = |device: Device, seed: i64| -> std::result::Result<Vec<f64>, String> {
        let mut k = Interpreter::builder()
            .device(device)
            .build()
            .map_err(|e| e.to_string())?;
        k.set_var("SEED", seed);
        let v: rhai::Array = k.eval(SCRIPT).map_err(|e| e.to_string())?;
        Ok(v.into_iter().map(|d| d.as_float().unwrap_or(f64::NAN)).collect())
    };
    let threads: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || run(gpu(), i)))
        .collect();
    let mut worst = 0.0f64;
    for (i, h) in threads.into_iter().enumerate() {
        let gpu = h.join().map_err(|_| "a thread panicked".to_string())??;
        let cpu = run(Device::Cpu, i as i64)?;
        for (g, c) in gpu.iter().zip(&cpu) {
            let rel = (g - c).abs() / c.abs().max(1e-6);
            if rel.is_nan() || rel > 1e-3 {
                return Err(format!("engine {i}: cuda {gpu:?} vs cpu {cpu:?}"));
            }
            worst = worst.max(rel);
        }
    }
    // a tensor made by an engine on one thread, used by another engine on another
    let (tx, rx) = std::sync::mpsc::channel::<Tensor>();
    let maker = std::thread::spawn(move || -> std::result::Result<(), String> {
        let mut k = Interpreter::builder()
            .device(gpu())
            .build()
            .map_err(|e| e.to_string())?;
        let mut t: Tensor = k
            .eval("let a = ones([4096, 4096]); for i in 0..20 { a = a * 1.5 - 0.25; } a")
            .map_err(|e| e.to_string())?;
        // still queued on the maker's stream when handed over
        t = t.mul_scalar(2.0).map_err(|e| e.to_string())?;
        tx.send(t).map_err(|e| e.to_string())
    });
    let t = rx.recv().map_err(|e| e.to_string())?;
    maker.join().map_err(|_| "a thread panicked".to_string())??;
    let user = std::thread::spawn(move || -> std::result::Result<f64, String> {
        let mut k = Interpreter::builder()
            .device(gpu())
            .build()
            .map_err(|e| e.to_string())?;
        k.set_var("t", t);
        k.eval::<f64>("(t + 1.0).mean().item()")
            .map_err(|e| e.to_string())
    });
    let got = user.join().map_err(|_| "a thread panicked".to_string())??;
    let mut v = 1.0f64;
    for _ in 0..20 {
        v = v * 1.5 - 0.25;
    }
    let want = (v as f32 * 2.0) as f64 + 1.0;
    if (got - want).abs() > want.abs() * 1e-4 {
        return Err(format!("handoff between engines: got {got}, want {want}"));
    }
    let handoffs = kiln::backend::cuda::CudaRuntime::get().map_or(0, |rt| rt.stream_handoffs());
    Ok(format!(
        "4 engines on 4 threads match the CPU (worst relative error {worst:.1e}); a tensor handed between engines on two threads reads {got}; {handoffs} stream handoffs in all"
    ))
}

impl Checker {
    /// The collectives through NCCL (`Transport::Nccl`, a group of one on
    /// this GPU) against the host path, for every dtype and op through
    /// every writable layout: the result in the view and the untouched
    /// elements around it (the whole base tensor) must match. A group of one
    /// checks the data path (dense ranges, copies of strided views written
    /// back, dtypes, the communicator's set-up and queueing), not arithmetic
    /// between ranks.
    pub(super) fn collectives(&mut self) {
        use kiln::dist::{Config, ProcessGroup, ReduceOp as Red, Transport};
        let dev = gpu();
        let group = |transport| {
            ProcessGroup::new(Config {
                transport,
                ..Config::default()
            })
        };
        let (host, nccl) = (group(Transport::Host), group(Transport::Nccl));
        for dtype in DType::ALL {
            for (lname, shape, view) in layouts() {
                let writable = lname != "expanded";
                let ops: &[(&str, Red)] = if dtype.is_float() {
                    &[
                        ("sum", Red::Sum),
                        ("mean", Red::Mean),
                        ("max", Red::Max),
                        ("min", Red::Min),
                    ]
                } else {
                    &[("sum", Red::Sum), ("max", Red::Max), ("min", Red::Min)]
                };
                for &(name, op) in ops.iter().filter(|_| writable) {
                    let r = (|| {
                        let x = input(&mut self.gen, &shape, dtype, false)?;
                        let xg = x.to_device(dev)?;
                        host.all_reduce(&view(&x)?, op)?;
                        nccl.all_reduce(&view(&xg)?, op)?;
                        Ok((x, xg))
                    })();
                    self.record(&format!("all_reduce {name}"), dtype, lname, r);
                }
                if writable {
                    let r = (|| {
                        let x = input(&mut self.gen, &shape, dtype, false)?;
                        let xg = x.to_device(dev)?;
                        host.broadcast(&view(&x)?, 0)?;
                        nccl.broadcast(&view(&xg)?, 0)?;
                        Ok((x, xg))
                    })();
                    self.record("broadcast", dtype, lname, r);
                }
                let r = (|| {
                    let x = input(&mut self.gen, &shape, dtype, false)?;
                    let c = host.all_gather(&view(&x)?)?;
                    let g = nccl.all_gather(&view(&x.to_device(dev)?)?)?;
                    if g.device() != dev || g.shape() != c.shape() {
                        return Err(kiln::Error::invalid(
                            "all_gather",
                            format!("got {:?} on {}", g.shape(), g.device()),
                        ));
                    }
                    Ok((c, g))
                })();
                self.record("all_gather", dtype, lname, r);
            }
        }
    }
}

/// Checks that queued ops return before the GPU finishes them, and that
/// reading a value waits for them.
pub fn asynchrony() -> std::result::Result<String, String> {
    use kiln::backend::cuda::CudaRuntime;
    let rt = CudaRuntime::get().map_err(|e| e.to_string())?;
    let mut x = Tensor::ones(&[1 << 24], None, gpu()).map_err(|e| e.to_string())?;
    rt.synchronize().map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    for _ in 0..200 {
        x = x
            .mul_scalar(1.0001)
            .and_then(|y| y.exp())
            .and_then(|y| y.log())
            .map_err(|e| e.to_string())?;
    }
    let enqueue = start.elapsed();
    let idle_after_chain = rt.is_idle().map_err(|e| e.to_string())?;
    let v = x.select(0, 0).and_then(|t| t.item()).map_err(|e| e.to_string())?;
    let total = start.elapsed();
    let idle_after_item = rt.is_idle().map_err(|e| e.to_string())?;
    let msg = format!(
        "600 ops on 2^24 elements: queued in {:.2} ms, finished after {:.2} ms; idle right after queueing: {idle_after_chain}; idle after item(): {idle_after_item}; value {v:?}",
        enqueue.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3
    );
    if !idle_after_chain && idle_after_item {
        Ok(msg)
    } else {
        Err(msg)
    }
}

/// What the driver compiled the row and reduction kernels to: registers and
/// spilled bytes a thread, and the most threads a block (one line each).
pub fn kernel_resources() -> std::result::Result<Vec<String>, String> {
    use kiln::backend::cuda::kernels::DenseReduce;
    use kiln::backend::cuda::{CudaRuntime, Kernel};
    let rt = CudaRuntime::get().map_err(|e| e.to_string())?;
    let mut lines = vec![];
    for d in [DType::F32, DType::BF16, DType::F64] {
        for k in [
            Kernel::LayerNorm(d),
            Kernel::LayerNormBackward(d),
            Kernel::SoftmaxRows(d),
            Kernel::ReduceLanes(DenseReduce::Sum, d),
            Kernel::ReduceCols(DenseReduce::Sum, d),
            Kernel::ReduceColsFinish(DenseReduce::Sum, d),
            Kernel::Dropout(d),
        ] {
            if let Some((regs, local, max)) = rt.kernels().resources(k) {
                lines.push(format!(
                    "{:<28} {regs:>4} registers, {local:>4} local bytes, {max:>5} threads max",
                    k.name()
                ));
            }
        }
    }
    use kiln_kernels::params::FlashParams;
    for d in [DType::F16, DType::BF16, DType::F32] {
        let elem = d.size_in_bytes();
        for e in FlashParams::HEAD_DIMS {
            for drop in [false, true] {
                for (k, shared) in [
                    (
                        Kernel::FlashForward(d, e, drop),
                        FlashParams::forward_shared_bytes(e, elem),
                    ),
                    (
                        Kernel::FlashBackwardKv(d, e, drop),
                        FlashParams::backward_kv_shared_bytes(e, elem),
                    ),
                    (
                        Kernel::FlashBackwardQ(d, e, drop),
                        FlashParams::backward_q_shared_bytes(e, elem),
                    ),
                ] {
                    if let Some((regs, local, max)) = rt.kernels().resources(k) {
                        lines.push(format!(
                            "{:<34} {regs:>4} registers, {local:>4} local bytes, {max:>5} threads max, {shared:>6} shared bytes",
                            k.name()
                        ));
                    }
                }
            }
        }
    }
    for d in [DType::F16, DType::BF16] {
        for e in FlashParams::HOPPER_HEAD_DIMS {
            for (k, shared) in [
                (
                    Kernel::FlashForwardHopper(d, e),
                    FlashParams::hopper_forward_shared_bytes(e),
                ),
                (
                    Kernel::FlashBackwardKvHopper(d, e),
                    FlashParams::hopper_backward_kv_shared_bytes(e, false),
                ),
                (
                    Kernel::FlashBackwardKvqHopper(d, e),
                    FlashParams::hopper_backward_kv_shared_bytes(e, true),
                ),
                (
                    Kernel::FlashBackwardQHopper(d, e),
                    FlashParams::hopper_backward_q_shared_bytes(e),
                ),
            ] {
                if rt.kernels().capability() == (9, 0) {
                    if let Some((regs, local, max)) = rt.kernels().resources(k) {
                        lines.push(format!(
                            "{:<34} {regs:>4} registers, {local:>4} local bytes, {max:>5} threads max, {shared:>6} shared bytes",
                            k.name()
                        ));
                    }
                }
            }
        }
    }
    Ok(lines)
}
