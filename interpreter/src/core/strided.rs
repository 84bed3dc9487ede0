//! Walking strided layouts the way PyTorch's TensorIterator does: several
//! operands of one shape get their adjacent dims merged where all of them allow
//! it, size-1 dims dropped, and the innermost merged dim becomes a "row" that
//! kernels loop over with a fixed stride per operand (stride 0 = broadcast).

/// `N` operands of one logical shape, with dims merged as far as all allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged<const N: usize> {
    /// Merged sizes, outermost first; never empty (a scalar is `[1]`).
    pub shape: Vec<usize>,
    /// Per operand, its stride in each merged dim.
    pub strides: [Vec<usize>; N],
}

impl<const N: usize> Merged<N> {
    /// Merges the dims of `N` operands that share `shape`.
    pub fn new(shape: &[usize], strides: [&[usize]; N]) -> Self {
        if shape.contains(&0) {
            return Merged {
                shape: vec![0],
                strides: std::array::from_fn(|_| vec![0]),
            };
        }
        let mut out_shape: Vec<usize> = Vec::with_capacity(shape.len());
        let mut out_strides: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
        for (d, &size) in shape.iter().enumerate() {
            if size == 1 {
                continue;
            }
            if let Some(&last) = out_shape.last() {
                let mergeable = (0..N).all(|k| {
                    let prev = *out_strides[k].last().unwrap_or(&0);
                    strides[k][d].checked_mul(size) == Some(prev)
                });
                if mergeable {
                    let n = out_shape.len() - 1;
                    out_shape[n] = last * size;
                    for k in 0..N {
                        out_strides[k][n] = strides[k][d];
                    }
                    continue;
                }
            }
            out_shape.push(size);
            for k in 0..N {
                out_strides[k].push(strides[k][d]);
            }
        }
        if out_shape.is_empty() {
            return Merged {
                shape: vec![1],
                strides: std::array::from_fn(|_| vec![0]),
            };
        }
        Merged {
            shape: out_shape,
            strides: out_strides,
        }
    }

    /// Length of one row (the innermost merged dim).
    pub fn row_len(&self) -> usize {
        *self.shape.last().unwrap_or(&1)
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        let n = self.shape.len();
        super::shape::numel(&self.shape[..n - 1])
    }

    /// Per operand, its stride along a row.
    pub fn row_strides(&self) -> [usize; N] {
        std::array::from_fn(|k| *self.strides[k].last().unwrap_or(&0))
    }

    /// Calls `f(row, base_offsets)` for rows `start..end`, where `base_offsets`
    /// already include each operand's storage offset `offsets[k]`.
    pub fn for_each_row(
        &self,
        offsets: [usize; N],
        start: usize,
        end: usize,
        mut f: impl FnMut(usize, [usize; N]),
    ) {
        let outer = self.shape.len() - 1;
        let mut idx = vec![0usize; outer];
        let mut rem = start;
        for d in (0..outer).rev() {
            idx[d] = rem % self.shape[d];
            rem /= self.shape[d];
        }
        let mut base: [usize; N] = std::array::from_fn(|k| {
            offsets[k] + (0..outer).map(|d| idx[d] * self.strides[k][d]).sum::<usize>()
        });
        for row in start..end {
            f(row, base);
            // advance the odometer
            let mut d = outer;
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                for (k, b) in base.iter_mut().enumerate() {
                    *b += self.strides[k][d];
                }
                if idx[d] < self.shape[d] {
                    break;
                }
                for (k, b) in base.iter_mut().enumerate() {
                    *b -= self.strides[k][d] * self.shape[d];
                }
                idx[d] = 0;
            }
        }
    }
}

/// The storage offsets of a single strided layout in logical (row-major) order.
pub fn offsets(shape: &[usize], strides: &[usize], offset: usize) -> Vec<usize> {
    let m = Merged::<1>::new(shape, [strides]);
    let (n, [s]) = (m.row_len(), m.row_strides());
    let mut out = Vec::with_capacity(m.rows() * n);
    m.for_each_row([offset], 0, m.rows(), |_, [b]| {
        out.extend((0..n).map(|j| b + j * s));
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_contiguous_and_keeps_broadcast() {
        let m = Merged::<2>::new(&[2, 3, 4], [&[12, 4, 1], &[0, 0, 1]]);
        assert_eq!(m.shape, vec![6, 4]);
        assert_eq!(m.strides[1], vec![0, 1]);
        let c = Merged::<1>::new(&[2, 3, 4], [&[12, 4, 1]]);
        assert_eq!(c.shape, vec![24]);
        let s = Merged::<1>::new(&[], [&[]]);
        assert_eq!((s.rows(), s.row_len()), (1, 1));
    }

    #[test]
    fn offsets_of_transpose_and_slice() {
        assert_eq!(offsets(&[3, 2], &[1, 3], 0), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(offsets(&[2, 2], &[5, 2], 1), vec![1, 3, 6, 8]);
        assert_eq!(offsets(&[0, 2], &[2, 1], 0), Vec::<usize>::new());
        let mut rows = vec![];
        Merged::<1>::new(&[2, 3, 2], [&[1, 2, 6]]).for_each_row([0], 2, 5, |r, [b]| rows.push((r, b)));
        assert_eq!(rows, vec![(2, 4), (3, 1), (4, 3)]);
    }
}
