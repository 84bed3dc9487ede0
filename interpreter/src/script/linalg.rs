//! The script side of linear algebra (`tensor/factor.rs`,
//! `tensor/solve.rs`): argument conversion only. `torch.linalg`'s
//! functions live in the `linalg::` module under PyTorch's names
//! (`linalg::svd(a)` returns `[U, S, Vh]`); the same ones are also global
//! functions and methods (`a.inv()`, `solve(a, b)`), where `svd` is
//! `torch.svd` (`[U, S, V]`, option `some`) and the older `torch.*` names
//! (`inverse`, `logdet`, `triangular_solve`, `cholesky_solve`,
//! `cholesky_inverse`, `pinverse`) are global only. Tuples come back as
//! arrays.

use super::convert::{ok, script_error, tensor_array, tensor_list, RhaiResult};
use super::kwargs::{register as kw, Form, Kwargs};
use super::registry::{Api, Category};
use super::statistics::ord_of;
use crate::tensor::Tensor;
use rhai::{Array, Engine, Module};

/// Registers the `linalg` module and the global forms.
pub fn register(engine: &mut Engine) {
    let mut module = Module::new();
    {
        let mut api = Api::module(&mut module, "linalg", engine, Category::Linalg);
        shared(&mut api);
        linalg_only(&mut api);
    }
    engine.register_static_module("linalg", module.into());
    let mut api = Api::new(engine, Category::Linalg);
    shared(&mut api);
    torch_only(&mut api);
}

/// The rank tolerances `atol`, `rtol` and the `hermitian` flag of `pinv`
/// and `matrix_rank`.
fn tolerances(k: &Kwargs) -> RhaiResult<(Option<f64>, Option<f64>, bool)> {
    Ok((
        k.opt_number("atol")?,
        k.opt_number("rtol")?,
        k.flag("hermitian", false)?,
    ))
}

/// The functions whose global form is the `torch.linalg` one.
fn shared(api: &mut Api) {
    kw(
        api,
        "inv",
        "torch.linalg.inv: the inverse of square matrices (singular ones are an error)",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.inv()),
    );
    kw(
        api,
        "det",
        "torch.linalg.det: the determinant of square matrices (through LU)",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.det()),
    );
    kw(
        api,
        "slogdet",
        "torch.linalg.slogdet: [sign, log|det|] of square matrices",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| tensor_array(a.slogdet()),
    );
    kw(
        api,
        "solve",
        "torch.linalg.solve: X with A X = B (X A = B when left is false); B a matrix or a vector; batches broadcast",
        ["a", "b"],
        &["left"],
        Form::Plain,
        |[a, b], k| ok(a.solve(&b, k.flag("left", true)?)),
    );
    kw(
        api,
        "solve_triangular",
        "torch.linalg.solve_triangular: X with A X = B for triangular A; options upper (required), left (true), unitriangular (false)",
        ["a", "b"],
        &["upper", "left", "unitriangular"],
        Form::Plain,
        |[a, b], k| {
            let upper = k.get("upper").ok_or_else(|| script_error("solve_triangular: option 'upper' is required"))?;
            let upper = upper
                .as_bool()
                .map_err(|t| script_error(format!("solve_triangular: option 'upper' must be a bool, got {t}")))?;
            ok(a.solve_triangular(&b, upper, k.flag("left", true)?, k.flag("unitriangular", false)?))
        },
    );
    kw(
        api,
        "cholesky_ex",
        "torch.linalg.cholesky_ex: [L, info] without the check (info: the first leading minor that is not positive-definite, 0 if none)",
        ["a"],
        &["upper"],
        Form::Plain,
        |[a], k| tensor_array(a.cholesky_ex(k.flag("upper", false)?)),
    );
    kw(
        api,
        "inv_ex",
        "torch.linalg.inv_ex: [inverse, info] without the singularity check",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| tensor_array(a.inv_ex()),
    );
    kw(
        api,
        "lu",
        "torch.linalg.lu: [P, L, U] with A = P L U (partial pivoting; P built from the pivots on the host)",
        ["a"],
        &["pivot"],
        Form::Plain,
        |[a], k| {
            if !k.flag("pivot", true)? {
                return Err(script_error(
                    "lu: pivot=false is not supported (LU without pivoting is unstable)",
                ));
            }
            tensor_array(a.lu())
        },
    );
    kw(
        api,
        "lu_unpack",
        "torch.lu_unpack: [P, L, U] from lu_factor's [LU, pivots]",
        ["lu", "pivots"],
        &[],
        Form::Plain,
        |[lu, p], _| tensor_array(lu.lu_unpack(&p)),
    );
    kw(
        api,
        "cholesky",
        "torch.linalg.cholesky: the lower factor L of a symmetric positive-definite A = L Lᵀ (Lᵀ when upper)",
        ["a"],
        &["upper"],
        Form::Plain,
        |[a], k| ok(a.cholesky(k.flag("upper", false)?)),
    );
    kw(
        api,
        "qr",
        "torch.linalg.qr: [Q, R]; mode \"reduced\" (default), \"complete\" or \"r\" (torch.qr's some=false is \"complete\")",
        ["a"],
        &["mode", "some"],
        Form::Plain,
        |[a], k| {
            let mode = match k.get("mode") {
                Some(v) if v.is_bool() => if v.as_bool().unwrap_or(true) { "reduced".into() } else { "complete".into() },
                Some(_) => k.string("mode", "reduced")?,
                None if !k.flag("some", true)? => "complete".into(),
                None => "reduced".into(),
            };
            tensor_array(a.qr(&mode))
        },
    );
    kw(
        api,
        "svdvals",
        "torch.linalg.svdvals: the singular values, descending",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.svdvals()),
    );
    kw(
        api,
        "eigh",
        "torch.linalg.eigh: [eigenvalues (ascending), eigenvectors (columns)] of symmetric matrices; option UPLO \"L\" (default) or \"U\"",
        ["a"],
        &["UPLO"],
        Form::Plain,
        |[a], k| tensor_array(a.eigh(&k.string("UPLO", "L")?)),
    );
    kw(
        api,
        "eigvalsh",
        "torch.linalg.eigvalsh: the eigenvalues of symmetric matrices, ascending; option UPLO",
        ["a"],
        &["UPLO"],
        Form::Plain,
        |[a], k| ok(a.eigvalsh(&k.string("UPLO", "L")?)),
    );
    kw(
        api,
        "lstsq",
        "torch.linalg.lstsq: [solution, residuals, rank, singular_values] of min ‖A X − B‖ (minimum-norm, through the SVD); options rcond, driver",
        ["a", "b"],
        &["rcond", "driver"],
        Form::Plain,
        |[a, b], k| {
            let driver = k.get("driver").map(|_| k.string("driver", "")).transpose()?;
            tensor_array(a.lstsq(&b, k.opt_number("rcond")?, driver.as_deref()))
        },
    );
    kw(
        api,
        "pinv",
        "torch.linalg.pinv: the pseudo-inverse through the SVD; options atol, rtol, hermitian",
        ["a"],
        &["atol", "rtol", "hermitian"],
        Form::Plain,
        |[a], k| {
            let (atol, rtol, hermitian) = tolerances(&k)?;
            ok(a.pinv(atol, rtol, hermitian))
        },
    );
    kw(
        api,
        "matrix_exp",
        "torch.linalg.matrix_exp: e^A of square matrices (scaling and squaring of a Taylor series)",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.matrix_exp()),
    );
    kw(
        api,
        "matrix_power",
        "torch.linalg.matrix_power: A^n (n < 0 through the inverse, n = 0 the identity)",
        ["a"],
        &["n"],
        Form::WithOptions,
        |[a], k| {
            let n = k
                .get("n")
                .ok_or_else(|| script_error("matrix_power: the power n is required"))?;
            let n = n
                .as_int()
                .map_err(|t| script_error(format!("matrix_power: n must be an int, got {t}")))?;
            ok(a.matrix_power(n))
        },
    );
    kw(
        api,
        "matrix_rank",
        "torch.linalg.matrix_rank: the number of singular values above max(atol, rtol·σ_max); options atol, rtol, hermitian",
        ["a"],
        &["atol", "rtol", "hermitian"],
        Form::Plain,
        |[a], k| {
            let (atol, rtol, hermitian) = tolerances(&k)?;
            ok(a.matrix_rank(atol, rtol, hermitian))
        },
    );
    for (name, doc, checked) in [
        (
            "lu_factor",
            "torch.linalg.lu_factor: [LU, pivots] (partial pivoting; pivots 1-based int32); a singular input is an error",
            true,
        ),
        ("lu_factor_ex", "torch.linalg.lu_factor_ex: [LU, pivots, info] without the singularity check", false),
    ] {
        kw(api, name, doc, ["a"], &["pivot"], Form::Plain, move |[a], k| {
            if !k.flag("pivot", true)? {
                return Err(script_error(format!(
                    "{name}: pivot=false is not supported (LU without pivoting is unstable)"
                )));
            }
            tensor_array(if checked { a.lu_factor() } else { a.lu_factor_ex() })
        });
    }
    kw(
        api,
        "lu_solve",
        "torch.linalg.lu_solve: X with A X = B from lu_factor's [LU, pivots]; options left, adjoint",
        ["lu", "pivots", "b"],
        &["left", "adjoint"],
        Form::Plain,
        |[lu, p, b], k| ok(lu.lu_solve(&p, &b, k.flag("left", true)?, k.flag("adjoint", false)?)),
    );
    kw(
        api,
        "cond",
        "torch.linalg.cond: the condition number (σ_max/σ_min; option p: 2, -2, \"fro\", \"nuc\", 1, -1, inf, -inf)",
        ["a"],
        &["p"],
        Form::Plain,
        |[a], k| {
            let p = k.get("p").map(|v| ord_of("cond", v)).transpose()?;
            ok(a.cond(p))
        },
    );
    api.doc("torch.linalg.multi_dot: the product of a list of matrices (first and last may be vectors)")
        .func("multi_dot", ["tensors"], |list: Array| -> RhaiResult<Tensor> {
            ok(Tensor::multi_dot(&tensor_list("multi_dot", &list)?))
        });
}

/// `torch.linalg` functions whose global name means something else.
fn linalg_only(api: &mut Api) {
    kw(
        api,
        "tensorinv",
        "torch.linalg.tensorinv: the inverse of a read as a matrix of its first ind (2) dims by the rest: shape rest + first",
        ["a"],
        &["ind"],
        Form::Plain,
        |[a], k| {
            let ind = k.int("ind", 2)?;
            if ind < 1 {
                return Err(script_error(format!("tensorinv: ind must be positive, got {ind}")));
            }
            ok(a.tensorinv(ind as usize))
        },
    );
    kw(
        api,
        "tensorsolve",
        "torch.linalg.tensorsolve: x with tensordot(a, x, x.ndim) = b; option dims (of a, moved to the end first)",
        ["a", "b"],
        &["dims"],
        Form::Plain,
        |[a, b], k| {
            let dims = k.get("dims").map(|d| super::convert::ints("tensorsolve", "dims", d)).transpose()?;
            ok(a.tensorsolve(&b, dims.as_deref()))
        },
    );
    kw(
        api,
        "vander",
        "torch.linalg.vander: the powers x^0, ..., x^(N-1) of the last dim's values as columns; option N (its size)",
        ["x"],
        &["N"],
        Form::Plain,
        |[x], k| ok(x.vander(k.opt_int("N")?, true)),
    );
    kw(
        api,
        "svd",
        "torch.linalg.svd: [U, S, Vh] with A = U diag(S) Vh; option full_matrices (true)",
        ["a"],
        &["full_matrices"],
        Form::Plain,
        |[a], k| tensor_array(a.svd(k.flag("full_matrices", true)?)),
    );
    kw(
        api,
        "norm",
        "torch.linalg.norm: a vector norm (1-D input or one dim) or a matrix norm (2-D input or two dims); options ord, dim, keepdim",
        ["a"],
        &["ord", "dim", "keepdim"],
        Form::Plain,
        |[a], k| {
            let ord = k.get("ord").map(|v| ord_of("norm", v)).transpose()?;
            let dims = match k.get("dim") {
                Some(d) => Some(super::convert::ints("norm", "dim", d)?),
                None => None,
            };
            ok(a.linalg_norm(ord, dims.as_deref(), k.flag("keepdim", false)?))
        },
    );
    kw(
        api,
        "vector_norm",
        "torch.linalg.vector_norm: (Σ|x|^ord)^(1/ord) over dim (all by default); options ord (2), dim, keepdim",
        ["a"],
        &["ord", "dim", "keepdim"],
        Form::Plain,
        |[a], k| {
            let ord = k.number("ord", 2.0).or_else(|_| match k.get("ord").map(|v| ord_of("vector_norm", v)).transpose()? {
                Some(crate::tensor::statistics::NormOrd::P(p)) => Ok(p),
                _ => Err(script_error("vector_norm: ord must be a number")),
            })?;
            let dims = match k.get("dim") {
                Some(d) => super::convert::ints("vector_norm", "dim", d)?,
                None => vec![],
            };
            ok(a.vector_norm(ord, &dims, k.flag("keepdim", false)?))
        },
    );
    kw(
        api,
        "matrix_norm",
        "torch.linalg.matrix_norm: over two dims (the last two by default); ord \"fro\" (default), \"nuc\", 2, -2, 1, -1, inf, -inf; options dim, keepdim",
        ["a"],
        &["ord", "dim", "keepdim"],
        Form::Plain,
        |[a], k| {
            let ord = match k.get("ord") {
                Some(v) => ord_of("matrix_norm", v)?,
                None => crate::tensor::statistics::NormOrd::Fro,
            };
            let dims = match k.get("dim") {
                Some(d) => super::convert::ints("matrix_norm", "dim", d)?,
                None => vec![-2, -1],
            };
            ok(a.matrix_norm_dims(ord, &dims, k.flag("keepdim", false)?))
        },
    );
    kw(
        api,
        "cross",
        "torch.linalg.cross: the cross product of 3-vectors along dim (-1)",
        ["a", "b"],
        &["dim"],
        Form::Plain,
        |[a, b], k| ok(a.cross(&b, Some(k.int("dim", -1)?))),
    );
    kw(
        api,
        "matmul",
        "torch.linalg.matmul: the matrix product",
        ["a", "b"],
        &[],
        Form::Plain,
        |[a, b], _| ok(a.matmul(&b)),
    );
    kw(
        api,
        "vecdot",
        "torch.linalg.vecdot: Σ x·y along dim (-1), with broadcasting",
        ["x", "y"],
        &["dim"],
        Form::Plain,
        |[x, y], k| {
            let dim = k.int("dim", -1)?;
            ok(x.mul(&y)
                .and_then(|p| p.reduce(crate::core::op::ReduceOp::Sum, Some(&[dim]), false)))
        },
    );
}

/// The older `torch.*` names (global functions and methods only).
fn torch_only(api: &mut Api) {
    kw(
        api,
        "svd",
        "torch.svd: [U, S, V] (V, not Vᵀ); options some (true: thin factors), compute_uv (true)",
        ["a"],
        &["some", "compute_uv"],
        Form::Plain,
        |[a], k| tensor_array(a.svd_torch(k.flag("some", true)?, k.flag("compute_uv", true)?)),
    );
    kw(
        api,
        "inverse",
        "torch.inverse: the inverse of square matrices",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.inv()),
    );
    kw(
        api,
        "logdet",
        "torch.logdet: log(det(A)) (NaN for a negative determinant)",
        ["a"],
        &[],
        Form::Plain,
        |[a], _| ok(a.logdet()),
    );
    kw(
        api,
        "triangular_solve",
        "torch.triangular_solve(b, A): [X, A] with A X = b; options upper (true), transpose, unitriangular",
        ["b", "a"],
        &["upper", "transpose", "unitriangular"],
        Form::Plain,
        |[b, a], k| {
            tensor_array(b.triangular_solve(
                &a,
                k.flag("upper", true)?,
                k.flag("transpose", false)?,
                k.flag("unitriangular", false)?,
            ))
        },
    );
    kw(
        api,
        "cholesky_solve",
        "torch.cholesky_solve(B, L): X with L Lᵀ X = B; option upper",
        ["b", "l"],
        &["upper"],
        Form::Plain,
        |[b, l], k| ok(b.cholesky_solve(&l, k.flag("upper", false)?)),
    );
    kw(
        api,
        "cholesky_inverse",
        "torch.cholesky_inverse(L): (L Lᵀ)⁻¹ from the Cholesky factor; option upper",
        ["l"],
        &["upper"],
        Form::Plain,
        |[l], k| ok(l.cholesky_inverse(k.flag("upper", false)?)),
    );
    kw(
        api,
        "pinverse",
        "torch.pinverse: the pseudo-inverse; option rcond (1e-15)",
        ["a"],
        &["rcond"],
        Form::Plain,
        |[a], k| ok(a.pinv(None, Some(k.number("rcond", 1e-15)?), false)),
    );
}
