//! Embedding kiln: a host passes a tensor into a script and reads one back.
//!
//! The host prepares a batch of points in Rust, a script fits a least-squares
//! line through them with a few steps of gradient descent (autograd included),
//! and the host reads the fitted weights back as a `Vec<f32>`.
//!
//!     cargo run --example embed

use kiln::{Device, Interpreter, Limits, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An engine for scripts the host trusts only so far: no files, bounded work and memory.
    let mut kiln = Interpreter::builder()
        .device(Device::Cpu)
        .limits(Limits {
            max_operations: Some(1_000_000),
            max_memory: Some(16 << 20),
            ..Limits::default()
        })
        .build()?;

    // y = 3x - 2 sampled at x = 0, 0.25, ..., 1.75 (exact in f32)
    let xs: Vec<f32> = (0..8).map(|i| i as f32 * 0.25).collect();
    let ys: Vec<f32> = xs.iter().map(|x| 3.0 * x - 2.0).collect();
    kiln.set_var("x", Tensor::from_vec(xs, &[8, 1], Device::Cpu)?);
    kiln.set_var("y", Tensor::from_vec(ys, &[8, 1], Device::Cpu)?);

    let fit = kiln.compile(
        r#"
        let w = zeros([1]).requires_grad(true);
        let b = zeros([1]).requires_grad(true);
        for step in 0..500 {
            let loss = ((x * w + b - y) ** 2).mean();
            loss.backward();
            no_grad(|| {
                w -= 0.5 * w.grad;
                b -= 0.5 * b.grad;
            });
            w.zero_grad();
            b.zero_grad();
        }
        cat([w, b], 0).detach()
        "#,
        "fit.rhai",
    )?;
    let params: Tensor = kiln.eval_ast(&fit)?;
    assert_eq!(params.shape(), &[2]);
    let p = params.to_vec::<f32>()?;
    println!("fitted y = {:.4} x + {:.4}", p[0], p[1]);
    assert!((p[0] - 3.0).abs() < 1e-3 && (p[1] + 2.0).abs() < 1e-3, "{p:?}");

    // the scope is the host's too: read a value the script left there
    let _ = kiln.run(
        "let residual = (x * 3.0 - 2.0 - y).abs().max().item();",
        "check.rhai",
    )?;
    let residual: f64 = kiln.get_var("residual").ok_or("no residual")?;
    assert_eq!(residual, 0.0);

    // errors are typed and point into the script
    let err = kiln.run("let z = x @ y;", "bad.rhai").unwrap_err();
    println!("error, as expected: {err}");
    assert_eq!((err.line, err.column), (Some(1), Some(11)));
    assert!(matches!(
        err.tensor_error(),
        Some(kiln::Error::ShapeMismatch { op: "matmul", .. })
    ));
    Ok(())
}
