//! The fused attention kernels (`tensor/attention/fused.rs`) against the
//! unfused reference: each case computed on the CPU in f32 from the same
//! f16/bf16/f32 inputs and on CUDA through the kernels, compared in the
//! inputs' dtype (f32's kernels multiply tf32 pairs, held to f32's
//! tolerance): the output and the gradients of q, k and v (of `sum(out · w)`
//! for a fixed random `w`). Head dims 32, 64, 96 and 128, causal or not, lengths
//! that are not multiples of the tiles, one query, grouped-query heads, and
//! operands that are views of a `[B, L, H, D]` projection, and dropout
//! (one draw per call: the same weights drop on both sides).

use super::*;
use kiln::tensor::attention::{fused_attention_enabled, set_fused_attention, AttentionOptions};

/// One attention case: sizes and options.
struct Sdpa {
    name: &'static str,
    batch: usize,
    heads: usize,
    kv_heads: usize,
    l: usize,
    s: usize,
    d: usize,
    causal: bool,
    /// Operands made as `[B, rows, H, D]` and transposed to `[B, H, rows, D]`.
    projected: bool,
    /// Dropout probability (the same weights drop on both sides).
    dropout: f64,
}

const CASES: [Sdpa; 10] = [
    Sdpa {
        name: "d64 causal",
        batch: 2,
        heads: 4,
        kv_heads: 4,
        l: 128,
        s: 128,
        d: 64,
        causal: true,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d64 odd lengths",
        batch: 1,
        heads: 2,
        kv_heads: 2,
        l: 70,
        s: 45,
        d: 64,
        causal: false,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d128 causal, more keys",
        batch: 1,
        heads: 2,
        kv_heads: 2,
        l: 45,
        s: 130,
        d: 128,
        causal: true,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d128 grouped-query heads",
        batch: 2,
        heads: 4,
        kv_heads: 2,
        l: 66,
        s: 66,
        d: 128,
        causal: false,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d64 one query",
        batch: 1,
        heads: 1,
        kv_heads: 1,
        l: 1,
        s: 33,
        d: 64,
        causal: false,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d128 causal, projected views",
        batch: 2,
        heads: 3,
        kv_heads: 3,
        l: 80,
        s: 80,
        d: 128,
        causal: true,
        projected: true,
        dropout: 0.0,
    },
    Sdpa {
        name: "d32 causal",
        batch: 2,
        heads: 2,
        kv_heads: 2,
        l: 100,
        s: 100,
        d: 32,
        causal: true,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d96 grouped-query heads",
        batch: 1,
        heads: 4,
        kv_heads: 1,
        l: 50,
        s: 70,
        d: 96,
        causal: false,
        projected: false,
        dropout: 0.0,
    },
    Sdpa {
        name: "d64 causal, dropout",
        batch: 2,
        heads: 2,
        kv_heads: 2,
        l: 90,
        s: 90,
        d: 64,
        causal: true,
        projected: false,
        dropout: 0.3,
    },
    Sdpa {
        name: "d128 dropout, grouped-query heads",
        batch: 1,
        heads: 4,
        kv_heads: 2,
        l: 70,
        s: 100,
        d: 128,
        causal: false,
        projected: false,
        dropout: 0.2,
    },
];

impl Sdpa {
    /// The output and the three gradients, on the device of the inputs.
    fn run(&self, [q, k, v, w]: [&Tensor; 4]) -> Result<Vec<Tensor>> {
        let leaf = |t: &Tensor| -> Result<Tensor> {
            let t = t.detach();
            t.set_requires_grad(true)?;
            Ok(t)
        };
        let (q, k, v) = (leaf(q)?, leaf(k)?, leaf(v)?);
        let heads = |t: &Tensor| {
            if self.projected {
                t.transpose(1, 2)
            } else {
                Ok(t.clone())
            }
        };
        let opts = AttentionOptions {
            is_causal: self.causal,
            enable_gqa: self.heads != self.kv_heads,
            dropout_p: self.dropout,
            ..Default::default()
        };
        let out = heads(&q)?.scaled_dot_product_attention(
            &heads(&k)?,
            &heads(&v)?,
            &opts,
            &mut Generator::new(0),
        )?;
        out.to_dtype(DType::F32)?.mul(w)?.sum()?.backward()?;
        let grad = |t: &Tensor| {
            t.grad()
                .ok_or_else(|| kiln::Error::invalid("check", "no gradient"))
        };
        Ok(vec![out.detach(), grad(&q)?, grad(&k)?, grad(&v)?])
    }

    /// An operand of `heads` heads of `rows` rows in the case's layout.
    fn shape(&self, heads: usize, rows: usize) -> Vec<usize> {
        if self.projected {
            vec![self.batch, rows, heads, self.d]
        } else {
            vec![self.batch, heads, rows, self.d]
        }
    }
}

impl Checker {
    /// Every case in f16, bf16 and f32 with the fused kernels on.
    pub(super) fn attention(&mut self) {
        let was = fused_attention_enabled();
        set_fused_attention(true);
        for c in &CASES {
            for dtype in [DType::F16, DType::BF16, DType::F32] {
                let r: Result<Vec<(Tensor, Tensor)>> = (|| {
                    let mut make = |shape: Vec<usize>| -> Result<Tensor> {
                        input(&mut self.gen, &shape, DType::F64, false)?
                            .mul_scalar(0.5)?
                            .to_dtype(dtype)
                    };
                    let q = make(c.shape(c.heads, c.l))?;
                    let k = make(c.shape(c.kv_heads, c.s))?;
                    let v = make(c.shape(c.kv_heads, c.s))?;
                    let w = make(vec![c.batch, c.heads, c.l, c.d])?.to_dtype(DType::F32)?;
                    let wide = |t: &Tensor| t.to_dtype(DType::F32);
                    let cpu = c.run([&wide(&q)?, &wide(&k)?, &wide(&v)?, &w])?;
                    let d = gpu();
                    let on = |t: &Tensor| t.to_device(d);
                    let dev = c.run([&on(&q)?, &on(&k)?, &on(&v)?, &on(&w)?])?;
                    cpu.into_iter()
                        .zip(dev)
                        .map(|(a, b)| Ok((a.to_dtype(dtype)?, b.to_dtype(dtype)?)))
                        .collect()
                })();
                let layout = format!(
                    "b{} h{}/{} L{} S{} d{}",
                    c.batch, c.heads, c.kv_heads, c.l, c.s, c.d
                );
                let parts = ["", " grad q", " grad k", " grad v"];
                match r {
                    Ok(pairs) => {
                        for (part, pair) in parts.iter().zip(pairs) {
                            let scale = if part.is_empty() { 1.0 } else { 8.0 };
                            self.record_scaled(
                                &format!("sdpa {}{part}", c.name),
                                dtype,
                                &layout,
                                Ok(pair),
                                scale,
                            );
                        }
                    }
                    Err(e) => {
                        for part in parts {
                            self.record(&format!("sdpa {}{part}", c.name), dtype, &layout, Err(e.clone()));
                        }
                    }
                }
            }
        }
        set_fused_attention(was);
    }
}
