//! Extending the language: the host registers its own Rust functions, which
//! take and return tensors, and scripts call them like built-ins.
//!
//!     cargo run --example custom_op

use kiln::{Device, Interpreter, RhaiResult, Tensor};

/// A host op written with kiln's tensor methods: `x * sigmoid(beta * x)`.
fn swish(x: Tensor, beta: f64) -> RhaiResult<Tensor> {
    Ok(x.mul(&x.mul_scalar(beta)?.sigmoid()?)?)
}

/// A host op that works on the raw values: a running (prefix) sum of a 1-D
/// f64 tensor, computed in plain Rust.
fn cumsum(x: Tensor) -> RhaiResult<Tensor> {
    if x.ndim() != 1 {
        return Err(format!("cumsum: expected a 1-D tensor, got shape {:?}", x.shape()).into());
    }
    let mut acc = 0.0;
    let out: Vec<f64> = x
        .to_vec_as::<f64>()?
        .into_iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    Ok(Tensor::from_vec(out, x.shape(), x.device())?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut kiln = Interpreter::builder().device(Device::Cpu).build()?;
    kiln.register_fn("swish", swish);
    kiln.register_fn("cumsum", cumsum);
    // plain Rust values work as well
    kiln.register_fn("host_version", || env!("CARGO_PKG_VERSION").to_string());

    let y: Tensor = kiln.eval("swish(tensor([-1.0, 0.0, 2.0]), 1.0)")?;
    let got = y.to_vec::<f32>()?;
    let want: Vec<f32> = [-1.0f32, 0.0, 2.0]
        .iter()
        .map(|&x| x / (1.0 + (-x).exp()))
        .collect();
    println!("swish: {got:?}");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }

    // host ops compose with script code, functions and autograd-free math
    let c: Tensor = kiln
        .eval("fn total(t) { cumsum(t)[-1] }\n cumsum(arange(1, 6).to_dtype(\"f64\")) + total(ones([3]))")?;
    println!("cumsum: {:?}", c.to_vec::<f64>()?);
    assert_eq!(c.to_vec::<f64>()?, [4.0, 6.0, 9.0, 13.0, 18.0]);
    assert_eq!(kiln.eval::<String>("host_version()")?, env!("CARGO_PKG_VERSION"));

    // a host op's own error and a kiln error inside it both reach the script's caller
    let e = kiln.run("cumsum(ones([2, 2]))", "op.rhai").unwrap_err();
    println!("error, as expected: {e}");
    assert!(e.message.contains("expected a 1-D tensor"));
    let e = kiln.run("swish(ones([2]), \"fast\")", "op.rhai").unwrap_err();
    println!("error, as expected: {e}");
    assert_eq!(e.kind, kiln::ErrorKind::Runtime);
    Ok(())
}
