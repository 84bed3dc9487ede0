//! The dense fast paths of the CUDA kernels, at the shapes that pick each
//! branch.

use super::*;

impl Checker {
    /// The CUDA backend's dense kernels at the shapes that pick each of their
    /// branches: row reductions split into chunks or not, packed or not (odd
    /// lengths, unaligned offsets), column reductions over a middle axis with
    /// and without chunks; softmax and layer norm by a warp, by a block, and
    /// past the register cache; tiled transposes (2-D, batched 3-D, into a
    /// view); row-broadcast binaries on either side.
    pub(super) fn dense_paths(&mut self) {
        type Case = (&'static str, Vec<usize>, fn(&Tensor) -> Result<Tensor>);
        let reductions: Vec<Case> = vec![
            ("[5, 20000] dim1", vec![5, 20000], |t| {
                t.reduce(ReduceOp::Sum, Some(&[1]), false)
            }),
            ("[5, 20001] dim1 max", vec![5, 20001], |t| {
                t.reduce(ReduceOp::Max, Some(&[1]), false)
            }),
            ("[3, 4097] offset 1 mean", vec![3, 4097], |t| {
                t.flatten(0, -1)?.narrow(0, 1, 12288)?.view(&[3, 4096])?.reduce(
                    ReduceOp::Mean,
                    Some(&[1]),
                    true,
                )
            }),
            ("[3000, 130] dim0", vec![3000, 130], |t| {
                t.reduce(ReduceOp::Sum, Some(&[0]), false)
            }),
            ("[3000, 130] dim0 min", vec![3000, 130], |t| {
                t.reduce(ReduceOp::Min, Some(&[0]), false)
            }),
            ("[7, 300, 5] dim1", vec![7, 300, 5], |t| {
                t.reduce(ReduceOp::Mean, Some(&[1]), false)
            }),
            ("[4, 6, 50, 9] dims[1,2]", vec![4, 6, 50, 9], |t| {
                t.reduce(ReduceOp::Sum, Some(&[1, 2]), true)
            }),
            ("[700, 600] dim0", vec![700, 600], |t| {
                t.reduce(ReduceOp::Max, Some(&[0]), false)
            }),
            ("[2^21] all", vec![1 << 21], |t| {
                t.reduce(ReduceOp::Sum, None, false)
            }),
        ];
        let rows: Vec<Case> = vec![
            ("softmax rows of 100", vec![77, 100], |t| t.softmax(-1)),
            ("softmax rows of 1000", vec![33, 1000], |t| t.softmax(-1)),
            ("log_softmax rows of 5000", vec![9, 5000], |t| t.log_softmax(-1)),
            ("softmax rows of 20000", vec![3, 20000], |t| t.softmax(-1)),
            ("layer_norm rows of 1000", vec![33, 1000], |t| {
                t.layer_norm(&[1000], None, None, 1e-5)
            }),
            ("layer_norm rows of 20000", vec![3, 20000], |t| {
                t.layer_norm(&[20000], None, None, 1e-5)
            }),
        ];
        let copies: Vec<Case> = vec![
            ("transpose [300, 500]", vec![300, 500], |t| t.t()?.contiguous()),
            ("permute(0,2,1) [6, 70, 45]", vec![6, 70, 45], |t| {
                t.permute(&[0, 2, 1])?.contiguous()
            }),
            ("copy_ transposed into dense", vec![40, 90], |t| {
                let y = t.t()?.clone_data()?;
                y.copy_(&t.t()?)?;
                Ok(y)
            }),
            ("row broadcast M + v", vec![300, 64], |t| t.add(&t.select(0, 3)?)),
            ("row broadcast v * M", vec![300, 64], |t| t.select(0, 5)?.mul(t)),
        ];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            for (name, shape, f) in &reductions {
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record_scaled("dense reduce", dtype, name, r, 100.0);
            }
            for (name, shape, f) in &rows {
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record_scaled(name.split(' ').next().unwrap_or(name), dtype, name, r, 10.0);
            }
        }
        for dtype in DType::ALL {
            for (name, shape, f) in &copies {
                if name.starts_with("row") && !dtype.is_float() {
                    continue;
                }
                let r = input(&mut self.gen, shape, dtype, false).and_then(|x| self.both(&x, f));
                self.record("dense copy", dtype, name, r);
            }
        }
    }
}
