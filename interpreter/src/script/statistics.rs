//! The script side of the composed reductions (`tensor/statistics.rs`):
//! argument conversion only. Dims as an int or an array (`()` for all);
//! `keepdim` and the like positionally or in an options map; pairs of
//! results (`aminmax`, `var_mean`) as arrays.

use super::convert::{ints, ok, script_error, tensor_array, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::statistics::NormOrd;
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, Map, FLOAT};

fn dims_of(op: &str, d: &Dynamic) -> RhaiResult<Vec<i64>> {
    if d.is_unit() {
        Ok(vec![])
    } else {
        ints(op, "dims", d)
    }
}

/// A norm order: a number, or "fro" / "nuc" (also "inf", "-inf").
pub(super) fn ord_of(op: &str, v: &Dynamic) -> RhaiResult<NormOrd> {
    if let Ok(f) = v.as_float() {
        return Ok(NormOrd::P(f));
    }
    if let Ok(i) = v.as_int() {
        return Ok(NormOrd::P(i as FLOAT));
    }
    match v.clone().into_string().as_deref() {
        Ok("fro") => Ok(NormOrd::Fro),
        Ok("nuc") => Ok(NormOrd::Nuc),
        Ok("inf") => Ok(NormOrd::P(f64::INFINITY)),
        Ok("-inf") => Ok(NormOrd::P(f64::NEG_INFINITY)),
        _ => Err(script_error(format!(
            "{op}: ord must be a number, \"fro\", \"nuc\", \"inf\" or \"-inf\", got {v}"
        ))),
    }
}

/// `(dims, keepdim, correction)` from an options map.
fn opts(op: &str, m: &Map) -> RhaiResult<(Vec<i64>, bool, u32)> {
    let (mut dims, mut keepdim, mut correction) = (vec![], false, 1u32);
    for (k, v) in m {
        match k.as_str() {
            "dim" | "dims" => dims = dims_of(op, v)?,
            "keepdim" => {
                keepdim = v
                    .as_bool()
                    .map_err(|t| script_error(format!("{op}: option 'keepdim' must be a bool, got {t}")))?
            }
            "correction" => {
                let c = v.as_int().map_err(|t| {
                    script_error(format!("{op}: option 'correction' must be an int, got {t}"))
                })?;
                correction =
                    u32::try_from(c).map_err(|_| script_error(format!("{op}: correction must be >= 0")))?;
            }
            other => {
                return Err(script_error(format!(
                    "{op}: unknown option '{other}' (expected dim, keepdim, correction)"
                )))
            }
        }
    }
    Ok((dims, keepdim, correction))
}

/// Registers the composed reductions.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Reductions);
    let api = &mut api;
    type Over = fn(&Tensor, &[i64], bool) -> crate::Result<Tensor>;
    let over: [(&str, &'static str, Over); 5] = [
        (
            "logsumexp",
            "log(sum(exp(t))) over dims, computed stably",
            Tensor::logsumexp,
        ),
        ("amax", "the maximum over dims (all by default)", Tensor::amax),
        ("amin", "the minimum over dims (all by default)", Tensor::amin),
        (
            "nansum",
            "the sum over dims (all by default), NaN counted as 0",
            Tensor::nansum,
        ),
        (
            "nanmean",
            "the mean over dims (all by default) of the non-NaN elements",
            Tensor::nanmean,
        ),
    ];
    for (name, doc, f) in over {
        if name != "logsumexp" {
            api.doc(doc)
                .func(name, ["t"], move |t: Tensor| ok(f(&t, &[], false)));
        }
        api.doc(doc)
            .func(name, ["t", "dims"], move |t: Tensor, d: Dynamic| {
                match d.clone().try_cast::<Map>() {
                    Some(m) => {
                        let (dims, keepdim, _) = opts(name, &m)?;
                        ok(f(&t, &dims, keepdim))
                    }
                    None => ok(f(&t, &dims_of(name, &d)?, false)),
                }
            });
        api.doc(doc).func(
            name,
            ["t", "dims", "keepdim"],
            move |t: Tensor, d: Dynamic, k: bool| ok(f(&t, &dims_of(name, &d)?, k)),
        );
    }
    const AMINMAX: &str = "[min, max] over dim (all by default); opts #{dim, keepdim}";
    api.doc(AMINMAX).func("aminmax", ["t"], |t: Tensor| {
        tensor_array(
            t.amin(&[], false)
                .and_then(|lo| Ok(vec![lo, t.amax(&[], false)?])),
        )
    });
    api.doc(AMINMAX)
        .func("aminmax", ["t", "opts"], |t: Tensor, m: Map| {
            let (dims, keepdim, _) = opts("aminmax", &m)?;
            tensor_array(
                t.amin(&dims, keepdim)
                    .and_then(|lo| Ok(vec![lo, t.amax(&dims, keepdim)?])),
            )
        });
    const COUNT: &str = "the number of non-zero elements over dims (all by default)";
    api.doc(COUNT)
        .func("count_nonzero", ["t"], |t: Tensor| ok(t.count_nonzero(&[])));
    api.doc(COUNT)
        .func("count_nonzero", ["t", "dims"], |t: Tensor, d: Dynamic| {
            ok(t.count_nonzero(&dims_of("count_nonzero", &d)?))
        });
    for (name, std) in [("var_mean", false), ("std_mean", true)] {
        let doc = if std {
            "[std, mean] over dims (all by default); opts #{dim, correction, keepdim}"
        } else {
            "[var, mean] over dims (all by default); opts #{dim, correction, keepdim}"
        };
        let f = move |t: &Tensor, dims: &[i64], c: u32, k: bool| {
            if std {
                t.std_mean(dims, c, k)
            } else {
                t.var_mean(dims, c, k)
            }
        };
        api.doc(doc)
            .func(name, ["t"], move |t: Tensor| tensor_array(f(&t, &[], 1, false)));
        api.doc(doc)
            .func(name, ["t", "dims"], move |t: Tensor, d: Dynamic| {
                match d.clone().try_cast::<Map>() {
                    Some(m) => {
                        let (dims, keepdim, c) = opts(name, &m)?;
                        tensor_array(f(&t, &dims, c, keepdim))
                    }
                    None => tensor_array(f(&t, &dims_of(name, &d)?, 1, false)),
                }
            });
    }
    register_norms(api);
}

fn register_norms(api: &mut Api) {
    for (name, doc) in [
        ("vector_norm", "torch.linalg.vector_norm: (Σ|t|^ord)^(1/ord) over dims (ord 2, all dims by default; inf, -inf, 0 too)"),
        ("norm", "torch.norm: a number p is the vector norm over dims, \"fro\" the Frobenius norm (2 by default)"),
    ] {
        let f = move |t: &Tensor, ord: NormOrd, dims: &[i64], k: bool| match (name, ord) {
            ("vector_norm", NormOrd::P(p)) => t.vector_norm(p, dims, k),
            ("vector_norm", _) => Err(crate::Error::invalid("vector_norm", "ord must be a number")),
            _ => t.norm(ord, dims, k),
        };
        api.doc(doc).func(name, ["t"], move |t: Tensor| ok(f(&t, NormOrd::P(2.0), &[], false)));
        api.doc(doc).func(name, ["t", "ord"], move |t: Tensor, o: Dynamic| {
            ok(f(&t, ord_of(name, &o)?, &[], false))
        });
        api.doc(doc).func(name, ["t", "ord", "dims"], move |t: Tensor, o: Dynamic, d: Dynamic| {
            ok(f(&t, ord_of(name, &o)?, &dims_of(name, &d)?, false))
        });
        api.doc(doc).func(
            name,
            ["t", "ord", "dims", "keepdim"],
            move |t: Tensor, o: Dynamic, d: Dynamic, k: bool| ok(f(&t, ord_of(name, &o)?, &dims_of(name, &d)?, k)),
        );
    }
    const MATRIX_NORM: &str =
        "torch.linalg.matrix_norm over the last two dims: \"fro\" (default), \"nuc\", 2, -2, 1, -1, inf, -inf";
    api.doc(MATRIX_NORM).func("matrix_norm", ["t"], |t: Tensor| {
        ok(t.matrix_norm(NormOrd::Fro, false))
    });
    api.doc(MATRIX_NORM)
        .func("matrix_norm", ["t", "ord"], |t: Tensor, o: Dynamic| {
            ok(t.matrix_norm(ord_of("matrix_norm", &o)?, false))
        });
    api.doc("each slice along dim with a p-norm above maxnorm scaled down to it (torch.renorm)")
        .func(
            "renorm",
            ["t", "p", "dim", "maxnorm"],
            |t: Tensor, p: Dynamic, d: rhai::INT, m: Dynamic| -> RhaiResult<Tensor> {
                let num = |k: &str, v: &Dynamic| super::convert::number("renorm", k, v);
                ok(t.renorm(num("p", &p)?, d, num("maxnorm", &m)?))
            },
        );
    const COV: &str = "the covariance of the rows (variables) over the columns; opts #{correction} (1)";
    api.doc(COV).func("cov", ["t"], |t: Tensor| ok(t.cov(1)));
    api.doc(COV).func("cov", ["t", "opts"], |t: Tensor, m: Map| {
        let (_, _, c) = opts("cov", &m)?;
        ok(t.cov(c))
    });
    api.doc("the correlation coefficients of the rows")
        .func("corrcoef", ["t"], |t: Tensor| ok(t.corrcoef()));
}
