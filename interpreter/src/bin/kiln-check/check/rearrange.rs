//! The rearranging ops (`tensor/rearrange.rs`: flip, roll, repeat, tile,
//! repeat_interleave, the splits, movedim, unflatten, unfold, pad and the
//! stacks) and the structure and mask ops (`tensor/structure.rs`: tril,
//! triu, diagonal, diag, diag_embed, trace, masked_fill, take,
//! take_along_dim, one_hot, meshgrid) for every dtype, through every input
//! layout.

use super::*;

/// Several results as one tensor (each flattened, end to end).
fn joined(parts: Result<Vec<Tensor>>) -> Result<Tensor> {
    let flat = parts?
        .iter()
        .map(|t| t.flatten(0, -1))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat, 0)
}

impl Checker {
    /// Each op on both backends from the same input, for every dtype and layout.
    pub(super) fn rearrange(&mut self) {
        type Op = (&'static str, fn(&Tensor) -> Result<Tensor>);
        let ops: Vec<Op> = vec![
            ("flip", |t| t.flip(&[0, 1])),
            ("fliplr", |t| t.fliplr()),
            ("roll", |t| t.roll(&[3, -5], &[0, 1])),
            ("roll flat", |t| t.roll(&[-7], &[])),
            ("repeat", |t| t.repeat(&[2, 1, 2])),
            ("tile", |t| t.tile(&[3])),
            ("repeat_interleave", |t| t.repeat_interleave(2, Some(1))),
            ("repeat_interleave tensor", |t| {
                let n = t.shape()[0];
                let r: Vec<i64> = (0..n as i64).map(|i| i % 3).collect();
                let r = Tensor::from_host(&HostValues::Int(r), &[n], DType::I64, t.device())?;
                t.repeat_interleave_tensor(&r, Some(0))
            }),
            ("chunk", |t| joined(t.chunk(4, 1))),
            ("split", |t| joined(t.split(6, 0))),
            ("tensor_split", |t| joined(t.tensor_split_at(&[3, 20, 9], 1))),
            ("unbind", |t| joined(t.unbind(0))),
            ("movedim", |t| {
                t.unsqueeze(0)?.movedim(&[0, 2], &[2, 0])?.contiguous()
            }),
            ("unflatten", |t| t.flatten(0, -1)?.unflatten(0, &[-1, 5])),
            ("unfold", |t| t.unfold(1, 4, 3)?.contiguous()),
            ("pad constant", |t| t.pad(&[2, -1, 1, 3], "constant", 1.0)),
            ("pad reflect", |t| t.pad(&[3, 2, 1, 4], "reflect", 0.0)),
            ("pad replicate", |t| t.pad(&[1, 2, 3, 0], "replicate", 0.0)),
            ("pad circular", |t| t.pad(&[4, 5], "circular", 0.0)),
            ("hstack", |t| Tensor::hstack(&[t.clone(), t.clone()])),
            ("vstack", |t| Tensor::vstack(&[t.clone(), t.select(0, 1)?])),
            ("dstack", |t| Tensor::dstack(&[t.clone(), t.clone()])),
            ("column_stack", |t| {
                Tensor::column_stack(&[t.select(1, 0)?, t.clone()])
            }),
        ];
        for dtype in DType::ALL {
            for (layout, shape, view) in layouts() {
                let x = match input(&mut self.gen, &shape, dtype, false).and_then(|t| view(&t)) {
                    Ok(x) => x,
                    Err(e) => {
                        self.record("rearrange input", dtype, layout, Err(e));
                        continue;
                    }
                };
                for (name, op) in &ops {
                    let r = self.both(&x, op);
                    self.record(name, dtype, layout, r);
                }
            }
        }
    }
}
