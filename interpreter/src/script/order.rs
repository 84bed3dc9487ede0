//! The script side of the scans and sorts (`tensor/order.rs`): argument
//! conversion only. Results PyTorch returns as a tuple come back as an array
//! (`x.sort()[0]` the values, `[1]` the i64 indices).

use super::convert::{ok, tensor_array, RhaiResult};
use super::kwargs::{register as kw, Form, Kwargs};
use super::registry::{Api, Category};
use crate::core::{DType, HostValues};
use crate::tensor::counting::HistogramBins;
use crate::tensor::quantile::{Interpolation, Quantiles};
use crate::tensor::Tensor;
use rhai::{Array, Engine};

/// The optional `dtype` option as a dtype.
fn dtype_option(k: &Kwargs, op: &str) -> RhaiResult<Option<DType>> {
    match k.get("dtype") {
        None => Ok(None),
        Some(_) => {
            let s = k.string("dtype", "")?;
            let _ = op;
            ok(DType::parse(&s)).map(Some)
        }
    }
}

/// The `dim` option, required.
fn dim(k: &Kwargs, op: &str) -> RhaiResult<i64> {
    k.opt_int("dim")?
        .ok_or_else(|| super::convert::script_error(format!("{op}: the dim is required")))
}

/// Registers the scans and sorts.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Reductions);
    let api = &mut api;
    kw(
        api,
        "cumsum",
        "running sum along dim (integers and bool sum in i64); option dtype",
        ["t"],
        &["dim", "dtype"],
        Form::Plain,
        |[t], k| ok(t.cumsum(dim(&k, "cumsum")?, dtype_option(&k, "cumsum")?)),
    );
    kw(
        api,
        "cumprod",
        "running product along dim; option dtype",
        ["t"],
        &["dim", "dtype"],
        Form::Plain,
        |[t], k| ok(t.cumprod(dim(&k, "cumprod")?, dtype_option(&k, "cumprod")?)),
    );
    kw(
        api,
        "cummax",
        "running maximum along dim: [values, indices]",
        ["t"],
        &["dim"],
        Form::Plain,
        |[t], k| tensor_array(t.cummax(dim(&k, "cummax")?)),
    );
    kw(
        api,
        "cummin",
        "running minimum along dim: [values, indices]",
        ["t"],
        &["dim"],
        Form::Plain,
        |[t], k| tensor_array(t.cummin(dim(&k, "cummin")?)),
    );
    kw(
        api,
        "logcumsumexp",
        "running log(sum(exp(x))) along dim, computed stably",
        ["t"],
        &["dim"],
        Form::Plain,
        |[t], k| ok(t.logcumsumexp(dim(&k, "logcumsumexp")?)),
    );
    kw(
        api,
        "sort",
        "values along dim (-1) in order, stably (NaN largest): [values, indices]; options descending, stable",
        ["t"],
        &["dim", "descending", "stable"],
        Form::Plain,
        |[t], k| -> RhaiResult<Array> {
            k.flag("stable", true)?;
            tensor_array(t.sort(k.int("dim", -1)?, k.flag("descending", false)?))
        },
    );
    kw(
        api,
        "argsort",
        "positions that sort the values along dim (-1); options descending, stable",
        ["t"],
        &["dim", "descending", "stable"],
        Form::Plain,
        |[t], k| {
            k.flag("stable", true)?;
            ok(t.argsort(k.int("dim", -1)?, k.flag("descending", false)?))
        },
    );
    kw(
        api,
        "msort",
        "values sorted along dim 0",
        ["t"],
        &[],
        Form::Plain,
        |[t], _| ok(t.sort(0, false).map(|mut v| v.swap_remove(0))),
    );
    kw(
        api,
        "topk",
        "the k largest values along dim (-1) in order: [values, indices]; options largest (true), sorted",
        ["t"],
        &["k", "dim", "largest", "sorted"],
        Form::WithOptions,
        |[t], k| {
            let n = k
                .opt_int("k")?
                .ok_or_else(|| super::convert::script_error("topk: k is required"))?;
            k.flag("sorted", true)?;
            tensor_array(t.topk(n, k.int("dim", -1)?, k.flag("largest", true)?))
        },
    );
    kw(
        api,
        "kthvalue",
        "the k-th smallest value along dim (-1) and its index: [values, indices]; option keepdim",
        ["t"],
        &["k", "dim", "keepdim"],
        Form::WithOptions,
        |[t], k| {
            let n = k
                .opt_int("k")?
                .ok_or_else(|| super::convert::script_error("kthvalue: k is required"))?;
            tensor_array(t.kthvalue(n, k.int("dim", -1)?, k.flag("keepdim", false)?))
        },
    );
    register_counting(api);
    register_quantiles(api);
    for (name, ignore_nan) in [("median", false), ("nanmedian", true)] {
        let doc: &'static str = if ignore_nan {
            "the lower median ignoring NaN: of all elements, or along dim as [values, indices]; option keepdim"
        } else {
            "the lower median (NaN if any is NaN): of all elements, or along dim as [values, indices]; option keepdim"
        };
        api.doc(doc)
            .func(name, ["t"], move |t: Tensor| ok(t.median_all(ignore_nan)));
        kw(
            api,
            name,
            doc,
            ["t"],
            &["dim", "keepdim"],
            Form::WithOptions,
            move |[t], k| tensor_array(t.median_dim(dim(&k, name)?, k.flag("keepdim", false)?, ignore_nan)),
        );
    }
}

/// `quantile` and `nanquantile`: q a number, a tensor or an array of numbers.
fn register_quantiles(api: &mut Api) {
    for (name, ignore_nan) in [("quantile", false), ("nanquantile", true)] {
        let doc: &'static str = if ignore_nan {
            "the q-quantiles ignoring NaN (q: a number in [0, 1], or a tensor or array of them, which puts their dim first): of all elements or along dim; options keepdim, interpolation (linear, lower, higher, midpoint, nearest)"
        } else {
            "the q-quantiles, NaN where a NaN is (q: a number in [0, 1], or a tensor or array of them, which puts their dim first): of all elements or along dim; options keepdim, interpolation (linear, lower, higher, midpoint, nearest)"
        };
        kw(
            api,
            name,
            doc,
            ["t"],
            &["q", "dim", "keepdim", "interpolation"],
            Form::WithOptions,
            move |[t], k| -> RhaiResult<Tensor> {
                let q = k
                    .get("q")
                    .ok_or_else(|| super::convert::script_error(format!("{name}: q is required")))?;
                let listed = match q.clone().try_cast::<Array>() {
                    Some(a) => {
                        let v = a
                            .iter()
                            .map(|x| super::convert::number(name, "q", x))
                            .collect::<RhaiResult<Vec<f64>>>()?;
                        let n = v.len();
                        Some(ok(Tensor::from_host(
                            &HostValues::Float(v),
                            &[n],
                            DType::F64,
                            t.device(),
                        ))?)
                    }
                    None => q.clone().try_cast::<Tensor>(),
                };
                let q = match &listed {
                    Some(l) => Quantiles::Many(l),
                    None => Quantiles::One(super::convert::number(name, "q", q)?),
                };
                let how = ok(Interpolation::parse(name, &k.string("interpolation", "linear")?))?;
                let (dim, keepdim) = (k.opt_int("dim")?, k.flag("keepdim", false)?);
                if ignore_nan {
                    ok(t.nanquantile(q, dim, keepdim, how))
                } else {
                    ok(t.quantile(q, dim, keepdim, how))
                }
            },
        );
    }
}

/// `[values, inverse, counts]` as PyTorch returns them: the values alone,
/// or with the inverse and/or the counts asked for.
fn unique_result(r: (Tensor, Tensor, Tensor), inverse: bool, counts: bool) -> RhaiResult<rhai::Dynamic> {
    let (v, i, c) = r;
    if !inverse && !counts {
        return Ok(rhai::Dynamic::from(v));
    }
    let mut out: Array = vec![rhai::Dynamic::from(v)];
    if inverse {
        out.push(rhai::Dynamic::from(i));
    }
    if counts {
        out.push(rhai::Dynamic::from(c));
    }
    Ok(rhai::Dynamic::from(out))
}

fn register_counting(api: &mut Api) {
    kw(
        api,
        "diff",
        "the n-th forward difference along dim (n 1, dim -1); options prepend, append",
        ["t"],
        &["n", "dim", "prepend", "append"],
        Form::Plain,
        |[t], k| {
            let (pre, app) = (k.tensor("prepend", &t)?, k.tensor("append", &t)?);
            ok(t.diff(k.int("n", 1)?, k.int("dim", -1)?, pre.as_ref(), app.as_ref()))
        },
    );
    kw(
        api,
        "searchsorted",
        "insertion points of values in the sorted innermost dim (i64); option right",
        ["sorted_sequence", "values"],
        &["right"],
        Form::Plain,
        |[s, v], k| ok(s.searchsorted(&v, k.flag("right", false)?)),
    );
    kw(
        api,
        "bucketize",
        "the bucket of each value among sorted 1-D boundaries (i64); option right",
        ["t", "boundaries"],
        &["right"],
        Form::Plain,
        |[t, b], k| ok(t.bucketize(&b, k.flag("right", false)?)),
    );
    kw(
        api,
        "bincount",
        "occurrences of each non-negative integer (reads the largest back); options weights (f64 sums), minlength",
        ["t"],
        &["weights", "minlength"],
        Form::Plain,
        |[t], k| {
            let w = k.tensor("weights", &t)?;
            ok(t.bincount(w.as_ref(), k.int("minlength", 0)?.max(0) as usize))
        },
    );
    kw(
        api,
        "histc",
        "histogram of bins (100) equal bins over [min, max] (the data's range when both 0)",
        ["t"],
        &["bins", "min", "max"],
        Form::Plain,
        |[t], k| {
            ok(t.histc(
                k.int("bins", 100)?.max(0) as usize,
                k.number("min", 0.0)?,
                k.number("max", 0.0)?,
            ))
        },
    );
    kw(
        api,
        "histogram",
        "[hist, bin_edges]: bins (100) equal bins over range (the data's by default) or the given edges; options range ([min, max]), weight, density",
        ["t"],
        &["bins", "range", "weight", "density"],
        Form::Plain,
        |[t], k| {
            let edges = k.get("bins").and_then(|b| b.clone().try_cast::<Tensor>());
            let bins = match &edges {
                Some(e) => HistogramBins::Edges(e),
                None => HistogramBins::Count(k.int("bins", 100)?.max(0) as usize),
            };
            let range = match k.get("range") {
                None => None,
                Some(r) => {
                    let v = r
                        .clone()
                        .try_cast::<Array>()
                        .filter(|a| a.len() == 2)
                        .ok_or_else(|| super::convert::script_error("histogram: range must be [min, max]"))?;
                    Some((
                        super::convert::number("histogram", "range", &v[0])?,
                        super::convert::number("histogram", "range", &v[1])?,
                    ))
                }
            };
            let weight = k.tensor("weight", &t)?;
            let (h, e) = ok(t.histogram(bins, range, weight.as_ref(), k.flag("density", false)?))?;
            tensor_array(Ok(vec![h, e]))
        },
    );
    kw(
        api,
        "mode",
        "the most frequent value along dim (-1; the smallest of equally frequent ones) and its last position: [values, indices]; option keepdim",
        ["t"],
        &["dim", "keepdim"],
        Form::Plain,
        |[t], k| tensor_array(t.mode(k.int("dim", -1)?, k.flag("keepdim", false)?)),
    );
    kw(
        api,
        "unique",
        "distinct values, sorted (reads the count back); options return_inverse, return_counts (then an array), sorted, dim (distinct slices along dim)",
        ["t"],
        &["sorted", "return_inverse", "return_counts", "dim"],
        Form::Plain,
        |[t], k| {
            k.flag("sorted", true)?;
            let r = match k.opt_int("dim")? {
                Some(d) => ok(t.unique_dim(d, false))?,
                None => ok(t.unique())?,
            };
            unique_result(r, k.flag("return_inverse", false)?, k.flag("return_counts", false)?)
        },
    );
    kw(
        api,
        "unique_consecutive",
        "runs of equal values collapsed; options return_inverse, return_counts (then an array)",
        ["t"],
        &["return_inverse", "return_counts", "dim"],
        Form::Plain,
        |[t], k| {
            let r = match k.opt_int("dim")? {
                Some(d) => ok(t.unique_dim(d, true))?,
                None => ok(t.unique_consecutive())?,
            };
            unique_result(
                r,
                k.flag("return_inverse", false)?,
                k.flag("return_counts", false)?,
            )
        },
    );
}
