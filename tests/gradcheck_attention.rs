//! Gradient checks of the transformer ops (`tensor/attention.rs`): the
//! reference attention for q, k, v and an additive mask, causal, with bool
//! masks (a row with no key left included), grouped-query heads and an
//! explicit scale; `rms_norm` with and without weight; `rope` with offset
//! and with explicit positions: each backward against central finite
//! differences in f64 on the CPU.

mod common;

use common::*;
use kiln::tensor::attention::AttentionOptions;
use kiln::tensor::Generator;
use kiln::{Result, Tensor};

type OpFn = fn(&[Tensor]) -> Result<Tensor>;

fn run(cases: &[(&str, &[&[usize]], OpFn)]) {
    for (name, shapes, f) in cases {
        let mut rng = Rng::new(name);
        let inputs: Vec<Input> = shapes.iter().map(|s| uni(&mut rng, s, -1.0, 1.0)).collect();
        gradcheck(name, &inputs, f);
    }
}

fn sdpa(x: &[Tensor], opts: AttentionOptions) -> Result<Tensor> {
    let mut g = Generator::new(0);
    x[0].scaled_dot_product_attention(&x[1], &x[2], &opts, &mut g)
}

/// A bool mask `[l, s]` from a pattern of 0/1 (row-major).
fn bool_mask(l: usize, s: usize, pattern: &[u8]) -> Tensor {
    let v: Vec<f64> = pattern.iter().map(|&b| b as f64).collect();
    f64_tensor(&v, &[l, s]).to_dtype(kiln::DType::Bool).unwrap()
}

#[test]
fn attention() {
    run(&[
        ("sdpa plain", &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 3]], |x| {
            sdpa(x, AttentionOptions::default())
        }),
        (
            "sdpa causal",
            &[&[1, 2, 4, 3], &[1, 2, 4, 3], &[1, 2, 4, 2]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        is_causal: true,
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa causal, fewer queries than keys",
            &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 4]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        is_causal: true,
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa additive mask",
            &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 3], &[3, 5]],
            |x| {
                let opts = AttentionOptions {
                    attn_mask: Some(x[3].clone()),
                    ..Default::default()
                };
                sdpa(x, opts)
            },
        ),
        (
            "sdpa bool mask with an empty row",
            &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 3]],
            |x| {
                let m = bool_mask(3, 5, &[1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
                sdpa(
                    x,
                    AttentionOptions {
                        attn_mask: Some(m),
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa grouped-query heads and scale",
            &[&[1, 4, 3, 4], &[1, 2, 5, 4], &[1, 2, 5, 3]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        enable_gqa: true,
                        scale: Some(0.3),
                        ..Default::default()
                    },
                )
            },
        ),
        ("sdpa one query", &[&[2, 1, 4], &[2, 6, 4], &[2, 6, 4]], |x| {
            sdpa(x, AttentionOptions::default())
        }),
    ]);
}

#[test]
fn norms_and_rotations() {
    run(&[
        ("rms_norm with weight", &[&[3, 4, 5], &[4, 5]], |x| {
            x[0].rms_norm(&[4, 5], Some(&x[1]), Some(1e-5))
        }),
        ("rms_norm", &[&[3, 6]], |x| x[0].rms_norm(&[6], None, None)),
        ("rope with offset", &[&[2, 3, 5, 6]], |x| {
            x[0].rope(10000.0, 7, None)
        }),
        ("rope at positions", &[&[4, 8]], |x| {
            let p = f64_tensor(&[3.0, 0.0, 11.0, 5.0], &[4]);
            x[0].rope(100.0, 0, Some(&p))
        }),
    ]);
}

/// The same attention by blocks of one to three query rows: the backward
/// recomputes each block from the saved log-sum-exp (and replays dropout).
#[test]
fn attention_by_blocks() {
    run(&[
        (
            "sdpa causal, blocks of 1",
            &[&[1, 2, 5, 3], &[1, 2, 5, 3], &[1, 2, 5, 2]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        is_causal: true,
                        block_rows: Some(1),
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa additive mask, blocks of 2",
            &[&[2, 5, 4], &[2, 3, 4], &[2, 3, 3], &[5, 3]],
            |x| {
                let opts = AttentionOptions {
                    attn_mask: Some(x[3].clone()),
                    block_rows: Some(2),
                    ..Default::default()
                };
                sdpa(x, opts)
            },
        ),
        (
            "sdpa mask broadcast over queries, blocks of 2",
            &[&[2, 5, 4], &[2, 3, 4], &[2, 3, 3], &[1, 3]],
            |x| {
                let opts = AttentionOptions {
                    attn_mask: Some(x[3].clone()),
                    block_rows: Some(2),
                    ..Default::default()
                };
                sdpa(x, opts)
            },
        ),
        (
            "sdpa bool mask with an empty row, blocks of 2",
            &[&[2, 3, 4], &[2, 5, 4], &[2, 5, 3]],
            |x| {
                let m = bool_mask(3, 5, &[1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]);
                sdpa(
                    x,
                    AttentionOptions {
                        attn_mask: Some(m),
                        block_rows: Some(2),
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa dropout, blocks of 2",
            &[&[2, 5, 4], &[2, 6, 4], &[2, 6, 3]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        dropout_p: 0.3,
                        block_rows: Some(2),
                        ..Default::default()
                    },
                )
            },
        ),
        (
            "sdpa broadcast batch, blocks of 3",
            &[&[2, 1, 4, 3], &[1, 3, 5, 3], &[1, 3, 5, 2]],
            |x| {
                sdpa(
                    x,
                    AttentionOptions {
                        block_rows: Some(3),
                        ..Default::default()
                    },
                )
            },
        ),
    ]);
}

/// Values do not depend on the block size, with dropout too (each weight's
/// draw is fixed by its place in the whole batch of score matrices).
#[test]
fn blocks_give_the_same_values() {
    let mut rng = Rng::new("blocks");
    let [q, k, v] = [[2, 3, 7, 4], [2, 3, 9, 4], [2, 3, 9, 5]].map(|s| {
        let i = uni(&mut rng, &s, -1.0, 1.0);
        f64_tensor(&i.values, &i.shape)
    });
    for (causal, dropout_p) in [(false, 0.0), (true, 0.0), (false, 0.4), (true, 0.25)] {
        let run = |rows| {
            let o = AttentionOptions {
                is_causal: causal,
                block_rows: rows,
                dropout_p,
                ..Default::default()
            };
            values(
                &q.scaled_dot_product_attention(&k, &v, &o, &mut Generator::new(7))
                    .unwrap(),
            )
        };
        let whole = run(None);
        for rows in [1, 2, 3, 7] {
            assert_close(
                &format!("causal {causal}, dropout {dropout_p}, blocks of {rows}"),
                &run(Some(rows)),
                &whole,
            );
        }
    }
}
