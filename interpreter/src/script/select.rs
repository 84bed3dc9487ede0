//! The script side of selection by masks and index tensors
//! (`tensor/select.rs`): argument conversion only, plus `t[mask]` and
//! `t[index]` reads and writes.

use super::convert::{ok, operand, script_error, tensor_array, tensor_list, RhaiResult};
use super::kwargs::{register as kw, Form};
use super::methods::index_arg;
use super::registry::{Api, Category};
use super::Runtime;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, INT};
use std::sync::Arc;

/// Registers the selection ops and the tensor indexers.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Indexing);
    let api = &mut api;
    kw(
        api,
        "nonzero",
        "indices of the non-zero elements, [n, ndim] i64 (reads the count back); option as_tuple: one tensor per dim",
        ["t"],
        &["as_tuple"],
        Form::Plain,
        |[t], k| -> RhaiResult<Dynamic> {
            if k.flag("as_tuple", false)? {
                Ok(Dynamic::from(tensor_array(t.nonzero_tuple())?))
            } else {
                Ok(Dynamic::from(ok(t.nonzero())?))
            }
        },
    );
    api.doc("indices of the non-zero elements, [n, ndim] i64 (= nonzero)")
        .func("argwhere", ["t"], |t: Tensor| ok(t.nonzero()));
    api.doc("where(cond): the indices of the true elements, one tensor per dim (= nonzero(as_tuple))")
        .func("where", ["cond"], |c: Tensor| tensor_array(c.nonzero_tuple()));
    api.doc("the elements where mask (broadcast) is true, 1-D (reads the count back)")
        .func("masked_select", ["t", "mask"], |t: Tensor, m: Tensor| {
            ok(t.masked_select(&m))
        });
    api.doc("t with the elements where mask is true replaced, in order, by source's")
        .func(
            "masked_scatter",
            ["t", "mask", "source"],
            |t: Tensor, m: Tensor, s: Tensor| ok(t.masked_scatter(&m, &s)),
        );
    api.doc("t with the slices index of dim set to value").func(
        "index_fill",
        ["t", "dim", "index", "value"],
        |t: Tensor, d: INT, i: Dynamic, v: Dynamic| {
            let i = index_arg("index_fill", &t, &i)?;
            let v = operand("index_fill", &v, Some(&t), t.device())?;
            ok(t.index_fill(d, &i, &v))
        },
    );
    api.doc("t with the slices index of dim replaced by source's")
        .func(
            "index_copy",
            ["t", "dim", "index", "source"],
            |t: Tensor, d: INT, i: Dynamic, s: Tensor| {
                ok(t.index_copy(d, &index_arg("index_copy", &t, &i)?, &s))
            },
        );
    const INDEX_PUT: &str = "t with t[indices] = values (indices: an array of integer tensors or one bool mask); option accumulate";
    api.doc(INDEX_PUT).func(
        "index_put",
        ["t", "indices", "values"],
        |t: Tensor, i: Array, v: Dynamic| {
            let v = operand("index_put", &v, Some(&t), t.device())?;
            ok(t.index_put(&tensor_list("index_put", &i)?, &v, false))
        },
    );
    api.doc(INDEX_PUT).func(
        "index_put",
        ["t", "indices", "values", "accumulate"],
        |t: Tensor, i: Array, v: Dynamic, a: Dynamic| {
            let v = operand("index_put", &v, Some(&t), t.device())?;
            let acc = match a.clone().try_cast::<rhai::Map>() {
                Some(m) => match m.get("accumulate") {
                    Some(b) => b.as_bool().map_err(|ty| {
                        script_error(format!("index_put: option 'accumulate' must be a bool, got {ty}"))
                    })?,
                    None => false,
                },
                None => a
                    .as_bool()
                    .map_err(|ty| script_error(format!("index_put: accumulate must be a bool, got {ty}")))?,
            };
            ok(t.index_put(&tensor_list("index_put", &i)?, &v, acc))
        },
    );
    kw(
        api,
        "scatter",
        "t with src (a tensor or a number) written at index along dim; option reduce (\"add\")",
        ["t"],
        &["dim", "index", "src", "reduce"],
        Form::WithOptions,
        |[t], k| {
            let d = k
                .opt_int("dim")?
                .ok_or_else(|| script_error("scatter: dim is required"))?;
            let i = k
                .get("index")
                .ok_or_else(|| script_error("scatter: index is required"))?;
            let i = index_arg("scatter", &t, i)?;
            let src = k
                .tensor("src", &t)?
                .ok_or_else(|| script_error("scatter: src is required"))?;
            let reduce = k.get("reduce").map(|_| k.string("reduce", "")).transpose()?;
            ok(t.scatter(d, &i, &src, reduce.as_deref()))
        },
    );
    kw(
        api,
        "scatter_reduce",
        "combines src into t at index along dim by reduce (sum, mean, amax, amin); option include_self (true)",
        ["t"],
        &["dim", "index", "src", "reduce", "include_self"],
        Form::WithOptions,
        |[t], k| {
            let d = k
                .opt_int("dim")?
                .ok_or_else(|| script_error("scatter_reduce: dim is required"))?;
            let i = k.get("index").ok_or_else(|| script_error("scatter_reduce: index is required"))?;
            let i = index_arg("scatter_reduce", &t, i)?;
            let src = k
                .tensor("src", &t)?
                .ok_or_else(|| script_error("scatter_reduce: src is required"))?;
            let reduce = k.string("reduce", "")?;
            ok(t.scatter_reduce(d, &i, &src, &reduce, k.flag("include_self", true)?))
        },
    );
    register_view_scatters(api);
    register_indexers(api, rt);
}

/// `select_scatter`, `slice_scatter`, `diagonal_scatter` and `index_reduce`.
fn register_view_scatters(api: &mut Api) {
    kw(
        api,
        "select_scatter",
        "a copy of t with src in place of t.select(dim, index)",
        ["t", "src"],
        &["dim", "index"],
        Form::WithOptions,
        |[t, src], k| {
            let need = |key: &str| {
                k.opt_int(key)?
                    .ok_or_else(|| script_error(format!("select_scatter: {key} is required")))
            };
            ok(t.select_scatter(&src, need("dim")?, need("index")?))
        },
    );
    kw(
        api,
        "slice_scatter",
        "a copy of t with src in place of the slice start..end by step along dim; options dim (0), start, end, step (1)",
        ["t", "src"],
        &["dim", "start", "end", "step"],
        Form::Plain,
        |[t, src], k| {
            ok(t.slice_scatter(
                &src,
                k.int("dim", 0)?,
                k.opt_int("start")?,
                k.opt_int("end")?,
                k.int("step", 1)?,
            ))
        },
    );
    kw(
        api,
        "diagonal_scatter",
        "a copy of t with src in place of t.diagonal(offset, dim1, dim2); options offset (0), dim1 (0), dim2 (1)",
        ["t", "src"],
        &["offset", "dim1", "dim2"],
        Form::Plain,
        |[t, src], k| {
            ok(t.diagonal_scatter(&src, k.int("offset", 0)?, k.int("dim1", 0)?, k.int("dim2", 1)?))
        },
    );
    kw(
        api,
        "index_reduce",
        "slice i of source along dim combined into slice index[i] of t by reduce (prod, mean, amax, amin); option include_self (true)",
        ["t"],
        &["dim", "index", "source", "reduce", "include_self"],
        Form::WithOptions,
        |[t], k| {
            let d = k
                .opt_int("dim")?
                .ok_or_else(|| script_error("index_reduce: dim is required"))?;
            let i = k.get("index").ok_or_else(|| script_error("index_reduce: index is required"))?;
            let i = index_arg("index_reduce", &t, i)?;
            let src = k
                .tensor("source", &t)?
                .ok_or_else(|| script_error("index_reduce: source is required"))?;
            let reduce = k.string("reduce", "")?;
            ok(t.index_reduce(d, &i, &src, &reduce, k.flag("include_self", true)?))
        },
    );
}

/// The index tensors of `t[i]`: a tensor, or an array of tensors (one per
/// leading dim).
fn index_tensors(op: &str, t: &Tensor, i: &Dynamic) -> RhaiResult<Vec<Tensor>> {
    if let Some(a) = i.clone().try_cast::<Array>() {
        if a.iter().all(|x| x.is::<Tensor>()) && !a.is_empty() {
            return tensor_list(op, &a);
        }
    }
    Ok(vec![index_arg(op, t, i)?])
}

fn register_indexers(api: &mut Api, rt: &Arc<Runtime>) {
    api.doc(
        "t[index]: the rows at an integer tensor index, or the elements where a bool mask is true (a copy)",
    )
    .index_get(["t", "index"], |t: &mut Tensor, i: Tensor| {
        ok(t.index_tensors(&[i]))
    });
    let r = rt.clone();
    api.doc("t[index] = x: writes x (broadcast) into the rows at an integer tensor index, or where a bool mask is true")
        .index_set(
            ["t", "index", "x"],
            move |t: &mut Tensor, i: Tensor, v: Dynamic| -> RhaiResult<()> {
                if v.is_unit() {
                    return Ok(());
                }
                let _ = &r;
                let v = operand("index assignment", &v, Some(t), t.device())?;
                let new = ok(t.index_put(&index_tensors("index assignment", t, &Dynamic::from(i))?, &v, false))?;
                ok(t.copy_(&new))
            },
        );
}
