//! Using kiln as a library: tensors in and out of scripts, own functions, and
//! interpreters on several threads.

use kiln::{DType, Device, Interpreter, Tensor};

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
        kiln::tensor::HostValues::Float(vec![10.0, 14.0, 14.0, 20.0])
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
fn interpreters_run_on_several_threads() {
    let handles: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut k = Interpreter::new();
                k.eval::<f64>(&format!("seed({i}); (ones([64, 64]) * {i}.0).sum().item()"))
                    .unwrap()
            })
        })
        .collect();
    let sums: Vec<f64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(sums, vec![0.0, 4096.0, 8192.0, 12288.0]);
}

#[test]
fn errors_carry_positions() {
    let mut k = Interpreter::new();
    let e = k
        .run("let a = ones([2]);\nlet b = a + ones([3]);", "pos.rhai")
        .unwrap_err();
    assert_eq!(e.line, Some(2));
    assert_eq!(e.source.as_deref(), Some("pos.rhai"));
    assert!(e.message.contains("[2] and [3]"), "{}", e.message);
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
