//! Several engines on several threads at once: each thread builds its own
//! interpreter (own scope, random generator and memory budget) and runs real
//! tensor work; tensors are `Send + Sync` and cross threads freely.
//!
//!     cargo run --example threads

use kiln::{Device, Interpreter, Tensor};
use std::sync::mpsc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One shared, read-only input for every worker: a cheap Arc handle.
    let data: Vec<f32> = (0..64 * 32).map(|i| (i % 11) as f32 - 5.0).collect();
    let x = Tensor::from_vec(data, &[64, 32], Device::Cpu)?;

    let (tx, rx) = mpsc::channel();
    let workers: Vec<_> = (0..4)
        .map(|id| {
            let (x, tx) = (x.clone(), tx.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let mut kiln = Interpreter::builder()
                    .device(Device::Cpu)
                    .max_memory(64 << 20)
                    .build()
                    .map_err(|e| e.to_string())?;
                kiln.set_var("x", x);
                kiln.set_var("k", id as f64 + 1.0);
                // a gram matrix, reductions and a gradient, all exact in f32
                let out: Tensor = kiln
                    .eval(
                        "let w = full([32, 1], k).requires_grad(true);
                         let g = x.t() @ x;
                         let loss = ((x @ w) ** 2).sum();
                         loss.backward();
                         stack([g.sum(), g.max(), w.grad.sum(), loss.detach()], 0)",
                    )
                    .map_err(|e| e.to_string())?;
                let _ = tx.send((id, out));
                Ok(())
            })
        })
        .collect();
    drop(tx);

    // The reference values, computed here in Rust.
    let v = x.to_vec::<f32>()?;
    let (rows, cols) = (64, 32);
    let mut gram_sum = 0.0f64;
    let mut gram_max = f32::MIN;
    for a in 0..cols {
        for b in 0..cols {
            let g: f32 = (0..rows).map(|r| v[r * cols + a] * v[r * cols + b]).sum();
            gram_sum += g as f64;
            gram_max = gram_max.max(g);
        }
    }
    // with w = k everywhere: loss = k^2 * sum of squared row sums, and
    // d loss / d w = 2 x^T (x w), whose sum is 2k * the gram matrix's sum
    let row_sq: f64 = (0..rows)
        .map(|r| (0..cols).map(|c| v[r * cols + c] as f64).sum::<f64>().powi(2))
        .sum();

    let mut seen = 0;
    for (id, out) in rx {
        let got = out.to_vec::<f32>()?;
        println!("thread {id}: {got:?}");
        let k = id as f64 + 1.0;
        let want = [gram_sum, gram_max as f64, 2.0 * k * gram_sum, k * k * row_sq].map(|x| x as f32);
        assert_eq!(got, want, "thread {id}");
        seen += 1;
    }
    for w in workers {
        w.join().map_err(|_| "a worker panicked")??;
    }
    assert_eq!(seen, 4);
    Ok(())
}
