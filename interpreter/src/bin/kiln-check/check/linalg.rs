//! Linear algebra (`tensor/factor.rs`, `tensor/solve.rs`) on both backends:
//! faer on the CPU against cuSOLVER/cuBLAS on the GPU, for f32 and f64 and
//! every input layout (contiguous, transposed, sliced, expanded batch,
//! permuted batch). Results that are unique are compared as they are;
//! factors whose signs are a convention (QR, SVD, eigenvectors) through
//! the products they reconstruct and their absolute values. Inputs are
//! made well-conditioned (`x + n·I`, `x xᵀ / n + I`), so both sides agree
//! to the dtype's precision times a small factor.

use super::*;
use kiln::tensor::statistics::NormOrd;

/// `x + (n + 1)·I`: diagonally dominant, invertible.
fn dominant(x: &Tensor) -> Result<Tensor> {
    let n = x.shape()[x.ndim() - 1];
    let eye = Tensor::eye(n, n, Some(x.dtype()), x.device())?;
    x.add(&eye.mul_scalar(n as f64 + 1.0)?)
}

/// `x xᵀ / n + I`: symmetric positive-definite.
fn spd(x: &Tensor) -> Result<Tensor> {
    let n = x.shape()[x.ndim() - 1];
    let eye = Tensor::eye(n, n, Some(x.dtype()), x.device())?;
    x.matmul(&x.mt()?)?.div_scalar(n as f64)?.add(&eye)
}

/// `U diag(S) Vh` from a factorization's parts.
fn rebuild(u: &Tensor, s: &Tensor, vh: &Tensor) -> Result<Tensor> {
    u.mul(&s.unsqueeze(-2)?)?.matmul(vh)
}

/// Square matrix layouts: (name, base shape, view to a square batch).
fn square_layouts() -> Vec<(&'static str, Vec<usize>, View)> {
    vec![
        ("contiguous", vec![40, 40], |t| Ok(t.clone())),
        ("transposed", vec![40, 40], |t| t.t()),
        ("sliced", vec![40, 80], |t| t.slice(1, Some(1), None, 2)),
        ("expanded", vec![1, 24, 24], |t| t.expand(&[3, 24, 24])),
        ("permuted3d", vec![24, 4, 24], |t| t.permute(&[1, 0, 2])),
    ]
}

impl Checker {
    /// Each linear-algebra op on both backends from the same input.
    pub(super) fn linalg(&mut self) {
        type Op = (&'static str, fn(&Tensor) -> Result<Tensor>);
        let ops: Vec<Op> = vec![
            ("inv", |t| dominant(t)?.inv()),
            ("det (log|det| via slogdet)", |t| {
                let p = dominant(t)?.slogdet()?;
                p[0].mul(&p[1])
            }),
            ("det 6x6", |t| {
                dominant(&t.narrow(-1, 0, 6)?.narrow(-2, 0, 6)?)?.det()
            }),
            ("solve", |t| dominant(t)?.solve(&t.narrow(-1, 0, 3)?, true)),
            ("solve vector right", |t| {
                let b = t.select(-2, 0)?;
                dominant(t)?.solve(&b.unsqueeze(-2)?, false)
            }),
            ("solve_triangular", |t| {
                dominant(t)?
                    .triu(0)?
                    .solve_triangular(&t.narrow(-1, 0, 5)?, true, true, false)
            }),
            ("cholesky", |t| spd(t)?.cholesky(false)),
            ("cholesky_solve", |t| {
                t.narrow(-1, 0, 2)?
                    .cholesky_solve(&spd(t)?.cholesky(false)?, false)
            }),
            ("lu_factor LU", |t| Ok(dominant(t)?.lu_factor()?[0].clone())),
            ("lu_factor pivots", |t| Ok(t.lu_factor_ex()?[1].clone())),
            ("lu_solve", |t| {
                let f = dominant(t)?.lu_factor()?;
                f[0].lu_solve(&f[1], &t.narrow(-1, 0, 2)?, true, true)
            }),
            ("qr |R|", |t| t.qr("reduced")?[1].abs()),
            ("qr Q R", |t| {
                let f = t.narrow(-1, 0, 7)?.qr("complete")?;
                f[0].matmul(&f[1])
            }),
            ("svdvals", |t| t.svdvals()),
            ("svd U S Vh (wide)", |t| {
                let f = t.narrow(-2, 0, 9)?.svd(false)?;
                rebuild(&f[0], &f[1], &f[2])
            }),
            ("svd |U| of distinct values", |t| {
                let f = t.matmul(&t.mt()?)?.svd(true)?;
                f[0].narrow(-1, 0, 3)?.abs()
            }),
            ("eigvalsh", |t| spd(t)?.eigvalsh("L")),
            ("eigh Q L Qᵀ", |t| {
                let f = t.add(&t.mt()?)?.eigh("U")?;
                rebuild(&f[1], &f[0], &f[1].mt()?)
            }),
            ("pinv", |t| t.narrow(-1, 0, 11)?.pinv(None, None, false)),
            ("lstsq", |t| {
                let a = t.narrow(-1, 0, 6)?;
                Ok(a.lstsq(&t.narrow(-1, 6, 2)?, None, None)?[0].clone())
            }),
            ("matrix_rank", |t| {
                t.narrow(-1, 0, 5)?
                    .matmul(&t.narrow(-2, 0, 5)?)?
                    .matrix_rank(None, None, false)
            }),
            ("matrix_norm nuc", |t| t.matrix_norm(NormOrd::Nuc, false)),
            ("matrix_norm 2", |t| t.matrix_norm(NormOrd::P(2.0), true)),
            ("cond", |t| dominant(t)?.cond(None)),
            ("matrix_power -3", |t| {
                dominant(t)?
                    .div_scalar(t.shape()[t.ndim() - 1] as f64)?
                    .matrix_power(-3)
            }),
        ];
        for dtype in [DType::F32, DType::F64] {
            for (layout, shape, view) in square_layouts() {
                let x = match input(&mut self.gen, &shape, dtype, false)
                    .and_then(|t| t.div_scalar(2.0))
                    .and_then(|t| view(&t))
                {
                    Ok(x) => x,
                    Err(e) => {
                        self.record("linalg input", dtype, layout, Err(e));
                        continue;
                    }
                };
                for (name, op) in &ops {
                    let r = self.both(&x, op);
                    self.record_scaled(name, dtype, layout, r, 100.0);
                }
            }
        }
        // integer inputs are an error on both sides, with the same message
        let ints = input(&mut self.gen, &[4, 4], DType::I64, false);
        let r = ints.and_then(|x| {
            let (c, g) = (x.inv(), x.to_device(gpu())?.inv());
            match (c, g) {
                (Err(a), Err(b)) if a.to_string() == b.to_string() => Ok((x.clone(), x)),
                (c, g) => Err(kiln::Error::invalid(
                    "inv",
                    format!(
                        "integer input: expected one error on both sides, got {:?} and {:?}",
                        c.err(),
                        g.err()
                    ),
                )),
            }
        });
        self.record("inv of integers (an error)", DType::I64, "contiguous", r);
    }
}
