//! Hostile scripts against an embedded engine: views that would reach
//! outside their storage, requests that would abort the host, native ops
//! that would run for hours, and two engines copying between the same
//! tensors in opposite directions. Each must end in a typed error (or the
//! right value) and leave the engine usable.

use kiln::{Device, ErrorKind, Interpreter, Limit, Limits, Tensor};
use std::time::Duration;

fn device() -> Device {
    if kiln::backend::cuda::CudaRuntime::is_available() {
        Device::Cuda(0)
    } else {
        Device::Cpu
    }
}

fn sandbox(limits: Limits) -> Interpreter {
    sandbox_on(device(), limits)
}

fn sandbox_on(device: Device, limits: Limits) -> Interpreter {
    Interpreter::builder()
        .device(device)
        .limits(limits)
        .build()
        .expect("an engine")
}

/// Runs `src`, which must fail, and checks that the engine still works.
fn fails(k: &mut Interpreter, src: &str) -> kiln::ScriptError {
    // in a block, so that nothing the script makes outlives the run
    let e = match k.run(&format!("{{ {src} }}"), "hostile.rhai") {
        Ok(v) => panic!("`{src}` should fail, gave {v:?}"),
        Err(e) => e,
    };
    let after: i64 = k.eval("arange(5).sum().item()").expect("the engine survives");
    assert_eq!(after, 10, "after `{src}`");
    e
}

#[test]
fn views_never_reach_outside_their_storage() {
    let mut k = sandbox(Limits::sandbox());
    for src in [
        "let secret = full([8192], 1234.5); let base = zeros([2, 4096]); \
         let v = base.narrow(0, 9223372036854775807, 1); (v @ eye(4096) == 1234.5).sum().item()",
        "ones([5]).narrow(0, 9223372036854775807, 2).sum()",
        "ones([5]).narrow(0, -9223372036854775807 - 1, 2).sum()",
        "ones([5]).narrow(0, 4, 9223372036854775807)",
        "ones([5]).select(0, 9223372036854775807)",
        "ones([5]).select(0, -9223372036854775807 - 1)",
    ] {
        let e = fails(&mut k, src);
        assert!(matches!(e.kind, ErrorKind::Tensor(_)), "{src}: {e}");
    }
    // Python clamping: huge steps and bounds select what Python selects
    let v: Vec<f32> = k
        .eval::<Tensor>("arange(5).float().slice(0, 0, 2, 9223372036854775807)")
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(v, [0.0]);
    let m: f64 = k
        .eval("let v = arange(5).float().slice(0, 0, 2, 9223372036854775807); (v.unsqueeze(0) @ v.unsqueeze(1)).item()")
        .unwrap();
    assert_eq!(m, 0.0);
    let s: i64 = k
        .eval("arange(5).slice(0, -9223372036854775807 - 1, 9223372036854775807, 9223372036854775807).numel")
        .unwrap();
    assert_eq!(s, 1);
    let all: i64 = k.eval("arange(5)[0..=9223372036854775807].numel").unwrap();
    assert_eq!(all, 5);
}

#[test]
fn impossible_requests_are_errors_not_aborts() {
    let mut k = sandbox(Limits::sandbox());
    for src in [
        "ones([1]).expand([1 << 40]).exp()",
        "ones([1]).expand([1 << 40]).relu()",
        "-ones([1]).expand([1 << 40])",
        "ones([1]).expand([1 << 40]) > 0",
        "ones([1]).expand([1 << 40]).softmax(0)",
        "ones([1]).expand([1 << 40]).log_softmax(0)",
        "ones([1]).expand([1 << 40]).to_list()",
        "ones([3]).index_select(0, zeros([1], #{dtype: \"i64\"}).expand([1 << 40]))",
        "let a = ones([1, 1], #{dtype: \"f16\"}).expand([1 << 20, 1 << 20]); a @ a",
        "zeros([10000000000], #{dtype: \"u8\"})",
        "ones([1]).expand([1 << 28]).exp()",
        "let s = []; for i in 0..30000 { s.push(1); } zeros(s)",
        "let s = []; for i in 0..65 { s.push(1); } ones([1]).reshape(s)",
    ] {
        let e = fails(&mut k, src);
        assert!(
            matches!(e.kind, ErrorKind::Tensor(_) | ErrorKind::Limit(Limit::Memory(_))),
            "{src}: {e}"
        );
    }
    let budget = k.memory_budget().expect("the sandbox has a budget");
    assert_eq!(budget.in_use(), 0, "failed ops hold no memory");
}

#[test]
fn view_handles_count_against_the_budget() {
    let limits = Limits {
        max_memory: Some(1 << 20),
        ..Limits::sandbox()
    };
    let mut k = sandbox(limits);
    // 100 000 views of 64 dims of a one-element tensor: about 1 KiB each
    let e = fails(
        &mut k,
        "let s = []; for i in 0..64 { s.push(1); } let base = zeros([1]); \
         let views = []; for i in 0..100000 { views.push(base.reshape(s)); } views.len()",
    );
    assert_eq!(e.limit(), Some(Limit::Memory(1 << 20)), "{e}");
    assert_eq!(k.memory_budget().unwrap().in_use(), 0);
}

#[test]
fn silent_wrong_results_are_errors() {
    let mut k = sandbox(Limits::sandbox());
    for src in [
        "arange(0, -9223372036854775807 - 1, -1)",
        "arange(-9223372036854775807 - 1, 9223372036854775807)",
        "full([2], 0.0 / 0.0, #{dtype: \"i64\"})",
        "tensor([300, -1], #{dtype: \"u8\"})",
        "tensor([3000000000], #{dtype: \"i32\"})",
    ] {
        fails(&mut k, src);
    }
    let v: Vec<i64> = k
        .eval::<Tensor>("arange(-5, 9223372036854775807, 1 << 62)")
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(v, [-5, (1 << 62) - 5, i64::MAX - 4]);
}

#[test]
fn long_native_ops_stop_at_the_time_limit() {
    let limits = Limits {
        max_duration: Some(Duration::from_millis(300)),
        ..Limits::sandbox()
    };
    // CPU loops (on a GPU, these sizes are refused before any launch)
    let mut k = sandbox_on(Device::Cpu, limits);
    for src in [
        "ones([1]).expand([1 << 50]).sum()",
        "ones([1]).expand([1 << 50]).argmax()",
        "ones([1, 1]).expand([2, 1 << 49]).sum(1)",
        "let a = ones([1, 1]).expand([1, 1 << 40]); let b = ones([1, 1]).expand([1 << 40, 1]); a @ b",
        "loop { }",
    ] {
        let e = fails(&mut k, src);
        assert_eq!(e.limit(), Some(Limit::Duration(300)), "{src}: {e}");
    }
}

#[test]
fn long_elementwise_ops_on_expanded_views_stop_too() {
    let limits = Limits {
        max_duration: Some(Duration::from_millis(300)),
        max_memory: Some(2 << 30),
        ..Limits::sandbox()
    };
    let mut k = sandbox_on(Device::Cpu, limits);
    // 2^28 elements (1 GiB of f32): allowed, but far longer than the limit
    for src in [
        "ones([1, 1]).expand([1 << 14, 1 << 14]).exp().sum()",
        "(ones([1, 1]).expand([1 << 14, 1 << 14]) + ones([1 << 14]).expand([1 << 14, 1 << 14])).sum()",
    ] {
        let e = fails(&mut k, src);
        assert_eq!(e.limit(), Some(Limit::Duration(300)), "{src}: {e}");
    }
    assert_eq!(k.memory_budget().unwrap().in_use(), 0);
}

#[test]
fn the_host_can_interrupt_a_native_op() {
    let mut k = sandbox_on(Device::Cpu, Limits::default());
    let stop = k.interrupt_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stop.interrupt();
    });
    let e = k
        .run("ones([1]).expand([1 << 50]).sum()", "long.rhai")
        .unwrap_err();
    t.join().unwrap();
    assert_eq!(e.kind, ErrorKind::Terminated, "{e}");
    assert_eq!(k.eval::<i64>("arange(3).sum().item()").unwrap(), 3);
}

#[test]
fn opposite_copies_on_two_threads_finish() {
    let a = Tensor::from_slice(&[1.0f32; 64], &[64], Device::Cpu).unwrap();
    let b = Tensor::from_slice(&[2.0f32; 64], &[64], Device::Cpu).unwrap();
    let run = |src: &'static str, a: Tensor, b: Tensor| {
        std::thread::spawn(move || {
            let mut k = Interpreter::builder().device(Device::Cpu).build().unwrap();
            k.set_var("a", a).set_var("b", b);
            k.run(src, "copy.rhai").map(|_| ())
        })
    };
    let one = run(
        "for i in 0..2000 { a.copy_(b); a[0..8] = b[8..16]; }",
        a.clone(),
        b.clone(),
    );
    let two = run(
        "for i in 0..2000 { b.copy_(a); b[0..8] = a[8..16]; }",
        a.clone(),
        b.clone(),
    );
    one.join().unwrap().unwrap();
    two.join().unwrap().unwrap();
    // the same storage read and written keeps NumPy's results
    let mut k = Interpreter::builder().device(Device::Cpu).build().unwrap();
    let v: Vec<f32> = k
        .eval::<Tensor>("let a = arange(6).float().reshape([2, 3]); a += a; a.to_list(); a.flatten()")
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(v, [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    let t: Vec<f32> = k
        .eval::<Tensor>("let m = arange(4).float().reshape([2, 2]); m.copy_(m.t()); m.flatten()")
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(t, [0.0, 2.0, 1.0, 3.0]);
}

#[test]
#[cfg(target_os = "linux")]
fn an_address_space_limit_gives_an_error_not_an_abort() {
    // 10 GB of u8 under a 4 GB `ulimit -v`: refused before the allocator is asked
    let script = "let e = \"\"; try { zeros([10000000000], #{dtype: \"u8\"}); } catch (x) { e = x; } \
                  print(e); print(arange(4).sum().item());";
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000 && exec \"{}\" --device cpu -e '{}'",
            env!("CARGO_BIN_EXE_kiln"),
            script
        ))
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("address-space limit"), "{stdout}");
    assert!(stdout.ends_with("6\n"), "{stdout}");
}
