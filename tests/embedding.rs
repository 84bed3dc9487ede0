//! Using kiln as a library: tensors in and out of scripts, own functions,
//! builder options, sandbox limits and the memory budget, compiled scripts,
//! typed errors, and interpreters on several threads.

use kiln::tensor::HostValues;
use kiln::{bf16, f16, Builder, DType, Device, Error, ErrorKind, Interpreter, Limit, Limits, Tensor};
use rhai::Dynamic;

fn cpu() -> Interpreter {
    Interpreter::builder().device(Device::Cpu).build().unwrap()
}

#[test]
fn tensors_cross_the_script_boundary() {
    let mut k = Interpreter::new();
    let t = Tensor::from_f32(&[1.0, 2.0, 3.0, 4.0], &[2, 2], Device::Cpu).unwrap();
    k.scope_mut().push("x", t);
    let y: Tensor = k.eval("x.t() @ x").unwrap();
    assert_eq!(y.shape(), &[2, 2]);
    assert_eq!(y.dtype(), DType::F32);
    assert_eq!(
        y.to_host().unwrap(),
        HostValues::Float(vec![10.0, 14.0, 14.0, 20.0])
    );
}

#[test]
fn own_functions_and_persistent_state() {
    let mut k = Interpreter::new();
    k.engine_mut()
        .register_fn("double_it", |t: Tensor| t.mul_scalar(2i64).unwrap());
    let _unit = k
        .run("let a = arange(3); fn f(t) { double_it(t) + 1 }", "setup")
        .unwrap();
    let v: rhai::Array = k.eval("f(a).to_list()").unwrap();
    let v: Vec<i64> = v.into_iter().map(|d| d.as_int().unwrap()).collect();
    assert_eq!(v, vec![1, 3, 5]);
}

#[test]
fn host_functions_take_and_return_tensors_and_fail_with_typed_errors() {
    let mut k = cpu();
    k.register_fn(
        "affine",
        |x: Tensor, w: Tensor, b: Tensor| -> kiln::RhaiResult<Tensor> { Ok(x.matmul(&w)?.add(&b)?) },
    );
    let w = Tensor::from_slice(&[1.0f32, 0.0, 0.0, 2.0], &[2, 2], Device::Cpu).unwrap();
    k.set_var("w", w);
    let y: Tensor = k.eval("affine(ones([3, 2]), w, tensor([10.0, 20.0]))").unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), [11.0, 22.0, 11.0, 22.0, 11.0, 22.0]);

    let e = k
        .run("let y = 1;\naffine(ones([3, 5]), w, ones([2]))", "host.rhai")
        .unwrap_err();
    assert_eq!((e.source.as_deref(), e.line), (Some("host.rhai"), Some(2)));
    match e.tensor_error() {
        Some(Error::ShapeMismatch { op: "matmul", .. }) => {}
        other => panic!("expected a matmul shape error, got {other:?} ({e})"),
    }
    // the script can catch it as a string, like every kiln error
    let caught: bool = k
        .eval("let r = false; try { affine(ones([3, 5]), w, ones([2])); } catch (e) { r = e.contains(\"matmul\"); } r")
        .unwrap();
    assert!(caught);
}

#[test]
fn scope_reads_and_writes() {
    let mut k = cpu();
    k.set_var("n", 3_i64).set_var("name", "kiln".to_string());
    let _ = k
        .run("let t = ones([n, 2]) * 2; let label = name + \"!\"; n += 1;", "s")
        .unwrap();
    assert_eq!(k.get_var::<i64>("n"), Some(4));
    assert_eq!(k.get_var::<String>("label").as_deref(), Some("kiln!"));
    let t: Tensor = k.get_var("t").unwrap();
    assert_eq!(
        (t.shape(), t.to_vec::<f32>().unwrap()),
        (&[3, 2][..], vec![2.0; 6])
    );
    assert!(k.get_var::<Tensor>("n").is_none());
    assert_eq!(k.get_var::<i64>("missing"), None);
    // a variable set again is replaced, not shadowed
    k.set_var("n", 10_i64);
    assert_eq!(k.eval::<i64>("n").unwrap(), 10);
    assert_eq!(k.scope().iter().filter(|(name, _, _)| *name == "n").count(), 1);
}

#[test]
fn compiled_scripts_run_many_times() {
    let mut k = cpu();
    let ast = k.compile("acc += x.sum().item(); acc", "acc.rhai").unwrap();
    k.set_var("acc", 0.0_f64);
    for i in 1..=5 {
        let x = Tensor::from_vec(vec![i as f64; 4], &[4], Device::Cpu).unwrap();
        k.set_var("x", x);
        let acc: f64 = k.eval_ast(&ast).unwrap();
        assert_eq!(acc, (4 * i * (i + 1) / 2) as f64);
    }
    // functions defined by one run are callable from the host and from later runs
    let _ = k.run("fn sq(t) { t * t }", "lib.rhai").unwrap();
    let t = Tensor::from_slice(&[1i32, -2, 3], &[3], Device::Cpu).unwrap();
    let y: Tensor = k.call_fn("sq", (t,)).unwrap();
    assert_eq!(y.to_vec::<i32>().unwrap(), [1, 4, 9]);
    let y: Tensor = k
        .eval_ast(&k.compile("sq(arange(3))", "use.rhai").unwrap())
        .unwrap();
    assert_eq!(y.to_vec::<i64>().unwrap(), [0, 1, 4]);
    let e = k.call_fn::<Tensor>("nope", ()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    let e = k
        .call_fn::<String>("sq", (Tensor::from_slice(&[1u8], &[1], Device::Cpu).unwrap(),))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::ResultType, "{e}");
}

#[test]
fn to_vec_for_each_dtype() {
    let mut k = cpu();
    let cases: [(&str, DType); 8] = [
        ("tensor([true, false, true, true])", DType::Bool),
        ("tensor([0, 1, 200, 255], #{dtype: \"u8\"})", DType::U8),
        ("tensor([-7, 0, 5, 2147483647], #{dtype: \"i32\"})", DType::I32),
        ("tensor([-9007199254740993, 0, 1, 2])", DType::I64),
        ("tensor([0.5, -2.0, 65504.0, 1.0], #{dtype: \"f16\"})", DType::F16),
        ("tensor([0.5, -3.0, 256.0, 1.0], #{dtype: \"bf16\"})", DType::BF16),
        ("tensor([0.1, -2.5, 1e30, 1.0])", DType::F32),
        ("tensor([0.1, -2.5, 1e300, 1.0], #{dtype: \"f64\"})", DType::F64),
    ];
    for (src, dtype) in cases {
        let t: Tensor = k.eval(src).unwrap();
        assert_eq!(
            (t.dtype(), t.shape(), t.device()),
            (dtype, &[4][..], Device::Cpu),
            "{src}"
        );
        match dtype {
            DType::Bool => assert_eq!(t.to_vec::<bool>().unwrap(), [true, false, true, true]),
            DType::U8 => assert_eq!(t.to_vec::<u8>().unwrap(), [0, 1, 200, 255]),
            DType::I32 => assert_eq!(t.to_vec::<i32>().unwrap(), [-7, 0, 5, i32::MAX]),
            DType::I64 => assert_eq!(t.to_vec::<i64>().unwrap(), [-9007199254740993, 0, 1, 2]),
            DType::F16 => assert_eq!(
                t.to_vec::<f16>().unwrap(),
                [0.5, -2.0, 65504.0, 1.0].map(f16::from_f32)
            ),
            DType::BF16 => assert_eq!(
                t.to_vec::<bf16>().unwrap(),
                [0.5, -3.0, 256.0, 1.0].map(bf16::from_f32)
            ),
            DType::F32 => assert_eq!(t.to_vec::<f32>().unwrap(), [0.1, -2.5, 1e30, 1.0]),
            DType::F64 => assert_eq!(t.to_vec::<f64>().unwrap(), [0.1, -2.5, 1e300, 1.0]),
        }
        // any other element type is a typed error naming both dtypes
        let wrong = if dtype == DType::F64 {
            DType::F32
        } else {
            DType::F64
        };
        let e = if wrong == DType::F32 {
            t.to_vec::<f32>().unwrap_err()
        } else {
            t.to_vec::<f64>().unwrap_err()
        };
        assert_eq!(
            e,
            Error::DTypeMismatch {
                op: "to_vec",
                expected: wrong,
                found: dtype
            }
        );
        // and the converting read gives every dtype as f64
        assert_eq!(t.to_vec_as::<f64>().unwrap().len(), 4);
    }
    // host-made tensors of every type go into a script and come back unchanged
    k.set_var(
        "h",
        Tensor::from_slice(&[f16::from_f32(1.5), f16::from_f32(-0.25)], &[2], Device::Cpu).unwrap(),
    );
    let back: Tensor = k.eval("h.clone()").unwrap();
    assert_eq!(back.to_vec_as::<f32>().unwrap(), [1.5, -0.25]);
}

#[test]
fn builder_options() {
    // stdlib modules: only those asked for are importable
    let mut k = Builder::new().device(Device::Cpu).stdlib(["nn"]).build().unwrap();
    let _ = k.run("import \"nn\" as nn;", "ok.rhai").unwrap();
    // (with files off, a module that is not in the stdlib cannot be read)
    let e = k.run("import \"optim\" as optim;", "no.rhai").unwrap_err();
    assert_eq!(
        e.tensor_error(),
        Some(&Error::FilesDisabled { op: "import" }),
        "{e}"
    );
    let mut k = Builder::new()
        .device(Device::Cpu)
        .no_stdlib()
        .allow_files(true)
        .build()
        .unwrap();
    let e = k.run("import \"nn\" as nn;", "no.rhai").unwrap_err();
    assert!(e.message.contains("nn"), "{e}");
    let e = Builder::new().stdlib(["nn", "vision"]).build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "stdlib: unknown module 'vision' (expected one of nn, optim, losses, data, metrics, ddp, init)"
    );

    // device: a CUDA device is refused when there is none
    if !kiln::backend::cuda::CudaRuntime::is_available() {
        let e = Builder::new().device(Device::Cuda(0)).build().unwrap_err();
        assert!(matches!(e, Error::DeviceUnavailable { .. }), "{e}");
    }
    let mut k = Builder::new().device(Device::Cpu).build().unwrap();
    assert_eq!(k.eval::<String>("zeros([1]).device").unwrap(), "cpu");

    // files: off by default in a builder, on when allowed, switchable later
    let dir = std::env::temp_dir().join(format!("kiln-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.npy").display().to_string().replace('\\', "/");
    let save = format!("save_npy(arange(4), \"{path}\")");
    let mut k = Builder::new().device(Device::Cpu).build().unwrap();
    let e = k.run(&save, "io.rhai").unwrap_err();
    assert_eq!(e.tensor_error(), Some(&Error::FilesDisabled { op: "save_npy" }));
    let mut k = Builder::new()
        .device(Device::Cpu)
        .allow_files(true)
        .build()
        .unwrap();
    let _ = k.run(&save, "io.rhai").unwrap();
    let t: Tensor = k.eval(&format!("load_npy(\"{path}\")")).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), [0, 1, 2, 3]);
    k.set_allow_files(false);
    assert!(k.run(&format!("load_npy(\"{path}\")"), "io.rhai").is_err());
    // imports of .rhai files pass the same gate
    let module = dir.join("helper.rhai");
    std::fs::write(&module, "fn three() { 3 }").unwrap();
    let import = format!(
        "import \"{}\" as h; h::three()",
        module.with_extension("").display()
    );
    let e = k.run(&import, "imp.rhai").unwrap_err();
    assert_eq!(
        e.tensor_error(),
        Some(&Error::FilesDisabled { op: "import" }),
        "{e}"
    );
    k.set_allow_files(true);
    assert_eq!(k.run(&import, "imp.rhai").unwrap().as_int(), Ok(3));
    std::fs::remove_dir_all(&dir).unwrap();

    // limits read back
    let k = Builder::new().limits(Limits::sandbox()).build().unwrap();
    assert_eq!(k.limits(), Limits::sandbox());
    assert_eq!(k.memory_budget().map(|b| b.limit()), Some(1 << 30));
    assert_eq!(k.engine().max_call_levels(), 64);
}

#[test]
fn kiln_on_a_host_engine() {
    let mut engine = rhai::Engine::new();
    engine.register_fn("host_answer", || 42_i64);
    let runtime = Builder::new()
        .device(Device::Cpu)
        .max_memory(4096)
        .register(&mut engine)
        .unwrap();
    let _run = runtime.enter();
    let v: i64 = engine.eval("host_answer() + arange(4).sum().item()").unwrap();
    assert_eq!(v, 48);
    let e = *engine.eval::<Tensor>("zeros([1024, 2])").unwrap_err();
    assert!(e.to_string().contains("memory limit exceeded"), "{e}");
    // the plain form
    let mut engine = rhai::Engine::new();
    let _rt = kiln::register(&mut engine);
    let t: Tensor = engine.eval("eye(2) * 3").unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [3.0, 0.0, 0.0, 3.0]);
}

#[test]
fn engines_on_one_thread_keep_their_own_grad_mode_and_tf32() {
    let (mut a, mut b) = (cpu(), cpu());
    let _ = a
        .run("set_grad_enabled(false); cuda::set_allow_tf32(true);", "a.rhai")
        .unwrap();
    // the thread is as it was, and b starts with its own defaults
    assert!(kiln::tensor::autograd::is_grad_enabled());
    assert!(!kiln::backend::cuda::blas::allow_tf32());
    let src = "let w = tensor([1.0, 2.0]).requires_grad(true); (w * w).sum().backward(); w.grad";
    let grad: Tensor = b.eval(src).unwrap();
    assert_eq!(grad.to_vec::<f32>().unwrap(), [2.0, 4.0]);
    assert!(!b.eval::<bool>("cuda::allow_tf32()").unwrap());
    // a keeps what its script set, through every entry point
    assert!(!a.eval::<bool>("is_grad_enabled()").unwrap());
    assert!(a.eval::<bool>("cuda::allow_tf32()").unwrap());
    let _ = a
        .run("fn modes() { [is_grad_enabled(), cuda::allow_tf32()] }", "f.rhai")
        .unwrap();
    let modes: rhai::Array = a.call_fn("modes", ()).unwrap();
    assert_eq!((modes[0].as_bool(), modes[1].as_bool()), (Ok(false), Ok(true)));
    let ast = a
        .compile("(ones([2]).requires_grad(true) * 2).requires_grad", "r.rhai")
        .unwrap();
    assert!(!a.eval_ast::<bool>(&ast).unwrap());
    assert!(!a.runtime().grad_enabled() && a.runtime().allow_tf32());
    // a failing script leaves its modes too, and the thread's alone
    let e = a
        .run("set_grad_enabled(true); throw \"stop\";", "t.rhai")
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert!(a.runtime().grad_enabled());
    a.runtime().set_grad_enabled(false);
    assert!(!a.eval::<bool>("is_grad_enabled()").unwrap());
    assert!(kiln::tensor::autograd::is_grad_enabled());
    assert!(!kiln::backend::cuda::blas::allow_tf32());

    // a host engine holding the runtime's scope
    let mut engine = rhai::Engine::new();
    let rt = Builder::new().device(Device::Cpu).register(&mut engine).unwrap();
    {
        let _run = rt.enter();
        engine.run("set_grad_enabled(false)").unwrap();
        assert!(!rt.grad_enabled());
        assert!(!kiln::tensor::autograd::is_grad_enabled());
        // another engine runs inside with its own mode
        assert!(b.eval::<bool>("is_grad_enabled()").unwrap());
        assert!(!kiln::tensor::autograd::is_grad_enabled());
    }
    assert!(kiln::tensor::autograd::is_grad_enabled());
    assert!(!rt.grad_enabled());
    let _run = rt.enter();
    assert!(!engine.eval::<bool>("is_grad_enabled()").unwrap());
}

#[test]
fn debug_and_progress_reach_the_hosts_callbacks() {
    use std::sync::{Arc, Mutex};
    let collect = || {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let l = lines.clone();
        (lines, move |s: &str| l.lock().unwrap().push(s.to_string()))
    };
    let mut k = cpu();
    let (printed, on_print) = collect();
    k.on_print(on_print);
    let script = "print(\"p\"); debug(7); \
                  let p = progress(4, #{desc: \"fit\", mode: \"bar\"}); \
                  for i in 0..4 { p.tick(); p.set(\"loss\", 0.5); } p.finish();";
    let _ = k.run(script, "out.rhai").unwrap();
    let lines = printed.lock().unwrap().clone();
    assert_eq!(lines[0], "p");
    assert_eq!(lines[1], "out.rhai @ 1:13 | 7");
    // a bar asked for is drawn as plain lines through the callback
    assert!(lines[2].starts_with("fit: 1/4 (25%) "), "{lines:?}");
    assert!(lines.last().unwrap().starts_with("fit: 4/4 (100%) "), "{lines:?}");
    assert!(lines.last().unwrap().ends_with(", loss=0.5"), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains('\x1b')), "{lines:?}");
    // progress of its own
    let (progress, on_progress) = collect();
    k.on_progress_output(on_progress);
    printed.lock().unwrap().clear();
    let _ = k.run(script, "out.rhai").unwrap();
    assert_eq!(*printed.lock().unwrap(), ["p", "out.rhai @ 1:13 | 7"]);
    let shown = progress.lock().unwrap();
    assert_eq!(shown.len(), 4, "{shown:?}");
    assert!(shown[3].starts_with("fit: 4/4 (100%) "), "{shown:?}");

    // a host engine: progress through the runtime's callback
    let mut engine = rhai::Engine::new();
    let rt = kiln::register(&mut engine);
    let (shown, on_progress) = collect();
    rt.set_progress_output(Some(Arc::new(on_progress)));
    let _run = rt.enter();
    engine.run("progress(2, #{desc: \"host\"}).inc(2)").unwrap();
    let shown = shown.lock().unwrap();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(shown[0].starts_with("host: 2/2 (100%) "), "{shown:?}");
}

#[test]
fn register_keeps_files_off_unless_asked() {
    let dir = std::env::temp_dir().join(format!("kiln-register-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.npy").display().to_string().replace('\\', "/");
    let save = format!("save_npy(arange(3), \"{path}\")");
    let load = format!("load_npy(\"{path}\").sum().item()");

    let mut engine = rhai::Engine::new();
    let rt = kiln::register(&mut engine);
    assert!(!rt.files().allowed());
    let e = engine.run(&save).unwrap_err().to_string();
    assert!(e.contains("file access is disabled"), "{e}");
    assert!(!std::path::Path::new(&path).exists());
    // as the builder's default
    let mut engine = rhai::Engine::new();
    let rt = Builder::new().register(&mut engine).unwrap();
    assert!(!rt.files().allowed());
    // allowed when asked
    let mut engine = rhai::Engine::new();
    let rt = Builder::new().allow_files(true).register(&mut engine).unwrap();
    assert!(rt.files().allowed());
    engine.run(&save).unwrap();
    assert_eq!(engine.eval::<i64>(&load).unwrap(), 3);
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `src` under `k`, expecting it to hit `limit`; then checks the
/// interpreter still works.
fn hits(k: &mut Interpreter, src: &str, limit: Limit) -> kiln::ScriptError {
    let e = k.run(src, "limit.rhai").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Limit(limit), "{src}: {e}");
    assert_eq!(e.limit(), Some(limit));
    assert!(e.message.contains(limit.name()), "{}", e.message);
    assert!(e.message.contains(&limit.value().to_string()), "{}", e.message);
    assert_eq!(e.source.as_deref(), Some("limit.rhai"));
    assert_eq!(
        k.eval::<i64>("arange(3).sum().item()").unwrap(),
        3,
        "usable after {src}"
    );
    e
}

#[test]
fn each_limit_gives_a_typed_error() {
    let mut k = Builder::new()
        .device(Device::Cpu)
        .max_operations(10_000)
        .max_call_depth(16)
        .max_string_size(100)
        .max_array_size(50)
        .max_map_size(10)
        .build()
        .unwrap();
    let e = hits(&mut k, "let x = 0;\nloop { x += 1; }", Limit::Operations(10_000));
    assert_eq!(
        e.message,
        "limit max_operations = 10000 exceeded: the script ran more than 10000 operations"
    );
    assert_eq!(e.line, Some(2));
    hits(&mut k, "fn f(n) { f(n + 1) } f(0)", Limit::CallDepth(16));
    hits(
        &mut k,
        "let s = \"\"; for i in 0..200 { s += \"ab\"; } s",
        Limit::StringSize(100),
    );
    hits(
        &mut k,
        "let a = []; for i in 0..100 { a.push(i); } a",
        Limit::ArraySize(50),
    );
    hits(
        &mut k,
        "let m = #{}; for i in 0..20 { let n = #{}; n[`k${i}`] = i; m += n; } m",
        Limit::MapSize(10),
    );
    // a script cannot catch a limit
    hits(
        &mut k,
        "try { loop {} } catch (e) { 0 }",
        Limit::Operations(10_000),
    );
    // the limits hold inside stdlib functions and tensor-to-array conversions too
    hits(&mut k, "zeros([100]).to_list()", Limit::ArraySize(50));
}

#[test]
fn deep_recursion_is_an_error_on_a_small_stack() {
    // the default call depth must stop recursion before a 2 MiB thread
    // stack (the std default) runs out, in debug builds too
    let r = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let mut k = cpu();
            let e = k.run("fn f(n) { f(n + 1) + 1 } f(0)", "deep.rhai").unwrap_err();
            e.kind
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(
        r,
        ErrorKind::Limit(Limit::CallDepth(kiln::engine::DEFAULT_CALL_DEPTH))
    );
}

#[test]
fn memory_budget_is_charged_and_released() {
    let mut k = Builder::new()
        .device(Device::Cpu)
        .max_memory(1 << 20)
        .build()
        .unwrap();
    let budget = k.memory_budget().unwrap().clone();
    assert_eq!((budget.limit(), budget.in_use()), (1 << 20, 0));

    // every tensor handle costs its metadata as well as its storage
    let handle = |ndim: usize| Tensor::handle_bytes(ndim);
    // 600 KiB fits; a second 600 KiB does not
    let _ = k.run("let a = zeros([153600]);", "a.rhai").unwrap();
    assert_eq!(budget.in_use(), 614_400 + handle(1));
    let e = k
        .run("let x = 1;\nlet b = ones([153600]);", "b.rhai")
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Limit(Limit::Memory(1 << 20)));
    assert_eq!(e.line, Some(2));
    assert_eq!(
        e.message,
        format!(
            "full: memory limit exceeded: a new tensor of 614400 bytes does not fit in this engine's budget of 1048576 bytes ({} bytes in use)",
            614_400 + handle(1)
        )
    );
    // ops whose output is not known in advance are charged too
    let e = k.run("let c = a.to_dtype(\"f64\");", "c.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)), "{e}");
    let e = k.run("let d = cat([a, a], 0);", "d.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)), "{e}");
    // broadcasting a small pair into a huge result is refused before allocating
    let e = k.run("ones([1000, 1]) + ones([1, 1000])", "e.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)), "{e}");
    assert_eq!(
        budget.in_use(),
        614_400 + handle(1),
        "failed ops give their memory back"
    );
    // views share the storage: they cost their handle only
    let _ = k
        .run("let v = a.reshape([480, 320]).t(); let w = a[0..10];", "v.rhai")
        .unwrap();
    assert_eq!(budget.in_use(), 614_400 + 2 * handle(1) + handle(2));

    // freeing the tensor (dropping the last handle) gives its bytes back
    let _ = k.run("a = (); v = (); w = ();", "free.rhai").unwrap();
    assert_eq!(budget.in_use(), 0);
    let _ = k.run("let b = ones([153600]);", "b.rhai").unwrap();
    assert_eq!(budget.in_use(), 614_400 + handle(1));

    // a tensor handed to the host stays charged until the host drops it
    let _ = k.run("b = ones([50000]);", "b.rhai").unwrap();
    let t: Tensor = k.eval("b + b").unwrap();
    assert_eq!(budget.in_use(), 2 * (200_000 + handle(1)));
    let e = k.run("let c = zeros([170000]);", "c.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)));
    drop(t);
    let _ = k.run("let c = zeros([170000]);", "c.rhai").unwrap();
    let _ = k.run("b = (); c = ();", "free.rhai").unwrap();
    assert_eq!(budget.in_use(), 0);

    // host tensors passed in are not charged; what a script makes from them is
    let host = Tensor::zeros(&[300_000], None, Device::Cpu).unwrap();
    k.set_var("h", host);
    assert_eq!(budget.in_use(), 0);
    let e = k.run("h + 1", "h.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)));
    let s: f64 = k.eval("h.sum().item()").unwrap();
    assert_eq!(s, 0.0);

    // autograd's graph and gradients count as well
    let _ = k.run("h = ();", "free.rhai").unwrap();
    let g: Vec<f32> = k
        .eval::<Tensor>("let w = ones([4]).requires_grad(true); (w * w).sum().backward(); w.grad")
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(g, [2.0; 4]);
    assert!(budget.in_use() > 0);
    // a caught memory error leaves the script running (like out of memory)
    let v: i64 = k
        .eval("let v = 0; try { zeros([1000000]); } catch (e) { v = 1; } v")
        .unwrap();
    assert_eq!(v, 1);
}

#[test]
fn typed_errors_reach_the_host_through_functions_closures_and_rethrows() {
    let mut k = Interpreter::new();
    let bad_add = Error::BroadcastMismatch {
        op: "add",
        lhs: vec![2],
        rhs: vec![3],
    };
    // raised inside a script function called from a script function
    let e = k
        .run(
            "fn inner(a) { a + ones([3]) }\nfn outer(a) { inner(a) }\nouter(ones([2]));",
            "nested.rhai",
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Tensor(Box::new(bad_add.clone())), "{e}");
    // raised inside a closure
    let e = k
        .run("let f = |a| a + ones([3]); f.call(ones([2]));", "closure.rhai")
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Tensor(Box::new(bad_add.clone())), "{e}");
    // caught and thrown again: the value still stands for the typed error
    let e = k
        .run(
            "try { ones([2]) + ones([3]) } catch (e) { throw e; }",
            "rethrow.rhai",
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Tensor(Box::new(bad_add)), "{e}");
    // a script's own string with the very same text is not a kiln error:
    // nothing is matched by message
    let e = k
        .run(
            "let m = \"\"; try { ones([2]) + ones([3]) } catch (e) { m = e; } throw \"\" + m;",
            "text.rhai",
        )
        .unwrap_err();
    assert!(e.message.contains("cannot be broadcast"), "{e}");
    assert_eq!(e.kind, ErrorKind::Runtime);
}

#[test]
fn errors_carry_positions() {
    let mut k = Interpreter::new();
    let e = k
        .run("let a = ones([2]);\nlet b = a + ones([3]);", "pos.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert_eq!(e.column, Some(11));
    assert_eq!(e.source.as_deref(), Some("pos.rhai"));
    assert!(e.message.contains("[2] and [3]"), "{}", e.message);
    assert_eq!(
        e.kind,
        ErrorKind::Tensor(Box::new(Error::BroadcastMismatch {
            op: "add",
            lhs: vec![2],
            rhs: vec![3]
        }))
    );
    assert_eq!(e.to_string(), format!("pos.rhai:2:11: {}", e.message));

    let e = k.run("let x = ;", "syntax.rhai").unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.line, e.column),
        (ErrorKind::Syntax, Some(1), Some(9))
    );
    let e = k.run("\n\nundefined_thing + 1", "rt.rhai").unwrap_err();
    assert_eq!((e.kind.clone(), e.line), (ErrorKind::Runtime, Some(3)));
    let e = k.run("throw \"mine\"", "t.rhai").unwrap_err();
    assert_eq!((e.kind.clone(), e.message.as_str()), (ErrorKind::Runtime, "mine"));
    let e = k.eval::<Tensor>("1 + 1").unwrap_err();
    assert_eq!(e.kind, ErrorKind::ResultType);
    let e = k
        .run_file(std::path::Path::new("/nonexistent/x.rhai"))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    // an error inside a script function is typed by its cause
    let e = k
        .run("fn g(t) { t.reshape([7]) }\ng(ones([2, 3]))", "fn.rhai")
        .unwrap_err();
    assert!(
        matches!(e.tensor_error(), Some(Error::InvalidReshape { .. })),
        "{e:?}"
    );
    // a caught error is not reported later as the cause of another one
    let e = k
        .run(
            "try { ones([2]) + ones([3]) } catch (e) {}\nthrow \"other\"",
            "c.rhai",
        )
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
}

#[test]
fn file_access_can_be_switched_off() {
    let mut kiln = kiln::Interpreter::with_device(kiln::Device::Cpu).unwrap();
    kiln.set_allow_files(false);
    let e = kiln.run("load_npy(\"x.npy\")", "<t>").unwrap_err();
    assert_eq!(e.message, "load_npy: file access is disabled in this interpreter");
    let e = kiln
        .run("save_safetensors(#{a: ones([2])}, \"x.safetensors\")", "<t>")
        .unwrap_err();
    assert_eq!(
        e.message,
        "save_safetensors: file access is disabled in this interpreter"
    );
    let e = kiln
        .run("load_csv(\"x.csv\", #{header: true})", "<t>")
        .unwrap_err();
    assert!(e.message.contains("disabled"), "{}", e.message);
    assert!(!std::path::Path::new("x.safetensors").exists());
}

/// What thread `i` computes, in Rust, for [`interpreters_run_on_several_threads`].
fn expected(i: usize) -> (Vec<f32>, f64, Vec<f32>, i64) {
    let n = 8;
    let a: Vec<f32> = (0..n * n).map(|j| ((j + i) % 7) as f32 - 3.0).collect();
    let b: Vec<f32> = (0..n * n).map(|j| ((j * 3 + i) % 5) as f32 - 2.0).collect();
    let mut c = vec![0.0f32; n * n];
    for r in 0..n {
        for col in 0..n {
            c[r * n + col] = (0..n).map(|k| a[r * n + k] * b[k * n + col]).sum();
        }
    }
    let sum: f64 = c.iter().map(|&x| x as f64).sum();
    // d/dA sum(A @ B) = ones @ B^T: each row is B's row sums
    let row_sums: Vec<f32> = (0..n).map(|k| (0..n).map(|col| b[k * n + col]).sum()).collect();
    let grad: Vec<f32> = (0..n * n).map(|j| row_sums[j % n]).collect();
    let argmax = c
        .iter()
        .enumerate()
        .fold(
            (0, f32::MIN),
            |(bi, bv), (j, &v)| if v > bv { (j, v) } else { (bi, bv) },
        )
        .0 as i64;
    (c, sum, grad, argmax)
}

fn cuda_available() -> bool {
    kiln::backend::cuda::CudaRuntime::is_available()
}

#[test]
fn interpreters_run_on_several_threads() {
    run_on_threads(Device::Cpu);
    if cuda_available() {
        run_on_threads(Device::Cuda(0));
    }
}

/// Four interpreters at once on `device`, each checked exactly against Rust.
fn run_on_threads(device: Device) {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut k = Builder::new()
                    .device(device)
                    .max_memory(16 << 20)
                    .build()
                    .unwrap();
                let n = 8;
                let a: Vec<f32> = (0..n * n).map(|j| ((j + i) % 7) as f32 - 3.0).collect();
                let b: Vec<f32> = (0..n * n).map(|j| ((j * 3 + i) % 5) as f32 - 2.0).collect();
                k.set_var("a", Tensor::from_vec(a, &[n, n], device).unwrap());
                k.set_var("b", Tensor::from_vec(b, &[n, n], device).unwrap());
                let step = k
                    .compile(
                        "let w = a.clone().requires_grad(true);
                         let c = w @ b;
                         c.sum().backward();
                         [c.detach(), c.sum().item(), w.grad, c.flatten().argmax().item()]",
                        "thread.rhai",
                    )
                    .unwrap();
                let mut out = vec![];
                for _ in 0..50 {
                    let r: rhai::Array = k.eval_ast(&step).unwrap();
                    let r: Vec<Dynamic> = r;
                    out.push((
                        r[0].clone().cast::<Tensor>().to_vec::<f32>().unwrap(),
                        r[1].as_float().unwrap(),
                        r[2].clone().cast::<Tensor>().to_vec::<f32>().unwrap(),
                        r[3].as_int().unwrap(),
                    ));
                }
                (i, out)
            })
        })
        .collect();
    for h in handles {
        let (i, runs) = h.join().unwrap();
        let want = expected(i);
        for got in runs {
            assert_eq!(got, want, "thread {i} on {device}");
        }
    }
}

#[test]
fn tensors_move_between_threads() {
    let t: Tensor = cpu().eval("arange(6).reshape([2, 3]) * 2").unwrap();
    let views: Vec<Tensor> = (0..3).map(|_| t.t().unwrap()).collect();
    let sums: Vec<i64> = std::thread::scope(|s| {
        let hs: Vec<_> = views
            .iter()
            .map(|v| s.spawn(move || v.sum().unwrap().to_vec::<i64>().unwrap()[0]))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sums, [30, 30, 30]);
    // an interpreter itself can move to another thread
    let mut k = cpu();
    k.set_var("t", t);
    let v = std::thread::spawn(move || k.eval::<i64>("t.max().item()").unwrap())
        .join()
        .unwrap();
    assert_eq!(v, 10);
}

/// The README's embedding example, verbatim.
#[test]
fn readme_example() -> Result<(), Box<dyn std::error::Error>> {
    use kiln::RhaiResult;
    let mut kiln = Interpreter::builder() // files off unless .allow_files(true)
        .device(Device::Cpu)
        .limits(Limits::sandbox()) // operations, call depth, sizes, tensor memory
        .build()?;
    kiln.register_fn("scale", |t: Tensor, k: f64| -> RhaiResult<Tensor> {
        Ok(t.mul_scalar(k)?)
    });
    kiln.set_var(
        "x",
        Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2], Device::Cpu)?,
    );
    let step = kiln.compile("scale(x @ x.t(), 0.5)", "step.rhai")?; // compile once, run many
    let y: Tensor = kiln.eval_ast(&step)?;
    assert_eq!(y.to_vec::<f32>()?, [2.5, 5.5, 5.5, 12.5]);
    Ok(())
}

/// The same host API on a GPU, when there is one: typed data in and out,
/// and the memory budget charged for device storage.
#[test]
fn gpu_tensors_and_budget_when_available() {
    if !cuda_available() {
        return;
    }
    let gpu = Device::Cuda(0);
    let t = Tensor::from_slice(&[1.5f32, -2.0, 3.25, 4.0, 0.5, 6.0], &[2, 3], gpu).unwrap();
    assert_eq!(t.device(), gpu);
    assert_eq!(
        t.t().unwrap().to_vec::<f32>().unwrap(),
        [1.5, 4.0, -2.0, 0.5, 3.25, 6.0]
    );
    let b = Tensor::from_vec(vec![bf16::from_f32(2.0), bf16::from_f32(-0.5)], &[2], gpu).unwrap();
    assert_eq!(
        b.to_vec::<bf16>().unwrap(),
        [bf16::from_f32(2.0), bf16::from_f32(-0.5)]
    );
    let i = Tensor::from_slice(&[i64::MAX, -1, 7], &[3], gpu).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), [i64::MAX, -1, 7]);

    let mut k = Builder::new().device(gpu).max_memory(1 << 20).build().unwrap();
    let budget = k.memory_budget().unwrap().clone();
    let _ = k.run("let a = zeros([153600]);", "a.rhai").unwrap();
    assert_eq!(budget.in_use(), 614_400 + Tensor::handle_bytes(1));
    let e = k.run("let b = a + 1;", "b.rhai").unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)), "{e}");
    let _ = k.run("a = ();", "free.rhai").unwrap();
    assert_eq!(budget.in_use(), 0);
    let y: Tensor = k.eval("(ones([64, 32]) @ ones([32, 16])).sum(0)").unwrap();
    assert_eq!((y.device(), y.to_vec::<f32>().unwrap()), (gpu, vec![2048.0; 16]));
    drop(y);
    assert_eq!(budget.in_use(), 0);
}
