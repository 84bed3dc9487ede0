//! Gradient checks of linear algebra (`tensor/factor.rs`,
//! `tensor/solve.rs`): each backward against central finite differences
//! in f64 on the CPU. Inputs are kept well-conditioned (diagonally
//! dominant, symmetric positive-definite, distinct singular values) so the
//! functions are smooth where they are probed; singular vectors and
//! eigenvectors enter sign-invariant expressions.

mod common;

use common::*;
use kiln::{Result, Tensor};

/// `x + n·I`: a diagonally dominant (invertible) batch of `n × n` matrices.
fn dominant(x: &Tensor, n: usize) -> Result<Tensor> {
    let eye = Tensor::eye(n, n, Some(x.dtype()), x.device())?;
    x.add(&eye.mul_scalar(n as f64 + 1.0)?)
}

/// `x xᵀ + I`: symmetric positive-definite.
fn spd(x: &Tensor, n: usize) -> Result<Tensor> {
    let eye = Tensor::eye(n, n, Some(x.dtype()), x.device())?;
    x.matmul(&x.mt()?)?.add(&eye)
}

#[test]
fn inverses_determinants_and_solves() {
    type OpFn = fn(&[Tensor]) -> Result<Tensor>;
    let cases: &[(&str, &[&[usize]], OpFn)] = &[
        ("inv", &[&[3, 3]], |x| dominant(&x[0], 3)?.inv()),
        ("inv batched", &[&[2, 3, 3]], |x| dominant(&x[0], 3)?.inv()),
        ("det", &[&[3, 3]], |x| dominant(&x[0], 3)?.det()),
        ("det of a general matrix", &[&[3, 3]], |x| x[0].det()),
        ("det batched", &[&[2, 2, 2]], |x| dominant(&x[0], 2)?.det()),
        ("det of a singular matrix", &[&[2, 3]], |x| {
            // the last row repeats the first: det is 0, its gradient is not
            Tensor::cat(&[x[0].clone(), x[0].narrow(0, 0, 1)?], 0)?.det()
        }),
        ("slogdet", &[&[3, 3]], |x| {
            dominant(&x[0], 3)?.slogdet()?[1].clone().mul_scalar(1.0)
        }),
        ("logdet", &[&[3, 3]], |x| spd(&x[0], 3)?.logdet()),
        ("solve matrix", &[&[3, 3], &[3, 2]], |x| {
            dominant(&x[0], 3)?.solve(&x[1], true)
        }),
        ("solve vector", &[&[3, 3], &[3]], |x| {
            dominant(&x[0], 3)?.solve(&x[1], true)
        }),
        ("solve right", &[&[3, 3], &[2, 3]], |x| {
            dominant(&x[0], 3)?.solve(&x[1], false)
        }),
        ("solve broadcast", &[&[3, 3], &[2, 3, 2]], |x| {
            dominant(&x[0], 3)?.solve(&x[1], true)
        }),
        ("solve_triangular lower", &[&[3, 3], &[3, 2]], |x| {
            dominant(&x[0], 3)?
                .tril(0)?
                .solve_triangular(&x[1], false, true, false)
        }),
        ("solve_triangular upper right", &[&[3, 3], &[2, 3]], |x| {
            dominant(&x[0], 3)?.solve_triangular(&x[1], true, false, false)
        }),
        ("solve_triangular unit", &[&[3, 3], &[3, 2]], |x| {
            x[0].solve_triangular(&x[1], false, true, true)
        }),
        ("cholesky_solve", &[&[3, 3], &[3, 2]], |x| {
            x[1].cholesky_solve(&spd(&x[0], 3)?.cholesky(false)?, false)
        }),
        ("matrix_power -2", &[&[3, 3]], |x| {
            dominant(&x[0], 3)?.matrix_power(-2)
        }),
        ("matrix_power 5", &[&[3, 3]], |x| x[0].matrix_power(5)),
    ];
    for (name, shapes, f) in cases {
        let mut rng = Rng::new(name);
        let inputs: Vec<Input> = shapes.iter().map(|s| uni(&mut rng, s, -1.0, 1.0)).collect();
        gradcheck(name, &inputs, f);
    }
}

#[test]
fn factorizations() {
    type OpFn = fn(&[Tensor]) -> Result<Tensor>;
    let cases: &[(&str, &[usize], OpFn)] = &[
        ("cholesky", &[3, 3], |x| spd(&x[0], 3)?.cholesky(false)),
        ("cholesky upper batched", &[2, 3, 3], |x| {
            spd(&x[0], 3)?.cholesky(true)
        }),
        ("qr Q", &[4, 3], |x| Ok(x[0].qr("reduced")?[0].clone())),
        ("qr R", &[4, 3], |x| Ok(x[0].qr("reduced")?[1].clone())),
        ("qr square both", &[3, 3], |x| {
            let f = x[0].qr("reduced")?;
            f[0].sum()?.mul(&f[1].sum()?)
        }),
        ("qr wide Q", &[3, 5], |x| Ok(x[0].qr("reduced")?[0].clone())),
        ("qr wide R", &[3, 5], |x| Ok(x[0].qr("reduced")?[1].clone())),
        ("qr wide complete both", &[2, 4], |x| {
            let f = x[0].qr("complete")?;
            f[0].sum()?.mul(&f[1].sum()?)
        }),
        ("svdvals", &[3, 4], |x| x[0].svdvals()),
        ("svd S", &[4, 3], |x| Ok(x[0].svd(false)?[1].clone())),
        ("svd U (tall)", &[4, 3], |x| {
            let u = x[0].svd(false)?[0].clone();
            u.mul(&u)
        }),
        ("svd Vh (tall)", &[4, 3], |x| {
            let v = x[0].svd(false)?[2].clone();
            v.mul(&v)
        }),
        ("svd U (wide)", &[3, 4], |x| {
            let u = x[0].svd(false)?[0].clone();
            u.mul(&u)
        }),
        ("svd Vh (wide)", &[3, 4], |x| {
            let v = x[0].svd(false)?[2].clone();
            v.mul(&v)
        }),
        ("svd reconstruction", &[3, 3], |x| {
            let f = x[0].svd(false)?;
            f[0].mul(&f[1].unsqueeze(-2)?)?.matmul(&f[2])
        }),
        ("eigvalsh", &[3, 3], |x| x[0].add(&x[0].mt()?)?.eigvalsh("L")),
        ("eigh vectors", &[3, 3], |x| {
            let q = x[0].add(&x[0].mt()?)?.eigh("L")?[1].clone();
            q.mul(&q)
        }),
        ("eigh both batched", &[2, 3, 3], |x| {
            let f = x[0].add(&x[0].mt()?)?.eigh("U")?;
            f[1].mul(&f[1])?.mul(&f[0].unsqueeze(-2)?)
        }),
        ("pinv tall", &[4, 3], |x| x[0].pinv(None, None, false)),
        ("lstsq", &[4, 2], |x| {
            let b = x[0].narrow(1, 0, 1)?.exp()?;
            Ok(x[0].lstsq(&b, None, None)?[0].clone())
        }),
        ("matrix_norm nuc", &[3, 4], |x| {
            x[0].matrix_norm(kiln::tensor::statistics::NormOrd::Nuc, false)
        }),
        ("matrix_norm 2", &[3, 4], |x| {
            x[0].matrix_norm(kiln::tensor::statistics::NormOrd::P(2.0), false)
        }),
    ];
    for (name, shape, f) in cases {
        let mut rng = Rng::new(name);
        gradcheck(name, &[uni(&mut rng, shape, -1.0, 1.0)], f);
    }
}
