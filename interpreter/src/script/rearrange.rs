//! The script side of the rearranging ops (`tensor/rearrange.rs`): argument
//! conversion only. Dims and sizes come as an int or an array of ints;
//! PyTorch's keyword arguments as an options map (`x.split(2, #{dim: 1})`,
//! `pad(x, [1, 1], #{mode: "reflect"})`); several results as an array.

use super::convert::{ints, number, ok, script_error, tensor_array, tensor_list, RhaiResult};
use super::registry::{Api, Category};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, INT};

/// The int option `key` of `m` (`default` when absent); other keys are errors.
fn int_opt(op: &str, m: &Map, key: &str, default: Option<INT>) -> RhaiResult<Option<INT>> {
    if let Some(other) = m.keys().find(|k| k.as_str() != key) {
        return Err(script_error(format!(
            "{op}: unknown option '{other}' (expected {key})"
        )));
    }
    match m.get(key) {
        None => Ok(default),
        Some(v) if v.is_unit() => Ok(None),
        Some(v) => v
            .as_int()
            .map(Some)
            .map_err(|t| script_error(format!("{op}: option '{key}' must be an int, got {t}"))),
    }
}

/// `dims` given as an int, an array, or `()`.
fn dims_of(op: &str, d: &Dynamic) -> RhaiResult<Vec<i64>> {
    if d.is_unit() {
        Ok(vec![])
    } else {
        ints(op, "dims", d)
    }
}

/// Registers the rearranging ops.
pub fn register(engine: &mut Engine) {
    let mut api = Api::new(engine, Category::Views);
    register_order(&mut api);
    register_splits(&mut api);
    register_stacks(&mut api);
}

fn register_order(api: &mut Api) {
    const FLIP: &str = "the elements reversed along dims (a copy)";
    api.doc(FLIP)
        .func("flip", ["t", "dims"], |t: Tensor, d: Dynamic| {
            ok(t.flip(&ints("flip", "dims", &d)?))
        });
    api.doc(FLIP)
        .func("flip", ["t", "d0", "d1"], |t: Tensor, a: INT, b: INT| {
            ok(t.flip(&[a, b]))
        });
    api.doc("columns reversed (dim 1)")
        .func("fliplr", ["t"], |t: Tensor| ok(t.fliplr()));
    api.doc("rows reversed (dim 0)")
        .func("flipud", ["t"], |t: Tensor| ok(t.flipud()));
    const ROLL: &str = "elements shifted along dims, wrapping around (the flattened tensor without dims)";
    api.doc(ROLL)
        .func("roll", ["t", "shifts"], |t: Tensor, s: Dynamic| {
            ok(t.roll(&ints("roll", "shifts", &s)?, &[]))
        });
    api.doc(ROLL).func(
        "roll",
        ["t", "shifts", "dims"],
        |t: Tensor, s: Dynamic, d: Dynamic| {
            let dims = match d.clone().try_cast::<Map>() {
                Some(m) => {
                    if let Some(other) = m.keys().find(|k| k.as_str() != "dims") {
                        return Err(script_error(format!(
                            "roll: unknown option '{other}' (expected dims)"
                        )));
                    }
                    m.get("dims").map_or(Ok(vec![]), |v| dims_of("roll", v))?
                }
                None => dims_of("roll", &d)?,
            };
            ok(t.roll(&ints("roll", "shifts", &s)?, &dims))
        },
    );
    const REPEAT: &str = "the tensor repeated along each dim (at least one size per dim)";
    api.doc(REPEAT)
        .func("repeat", ["t", "sizes"], |t: Tensor, s: Dynamic| {
            ok(t.repeat(&ints("repeat", "sizes", &s)?))
        });
    api.doc(REPEAT)
        .func("repeat", ["t", "s0", "s1"], |t: Tensor, a: INT, b: INT| {
            ok(t.repeat(&[a, b]))
        });
    api.doc(REPEAT).func(
        "repeat",
        ["t", "s0", "s1", "s2"],
        |t: Tensor, a: INT, b: INT, c: INT| ok(t.repeat(&[a, b, c])),
    );
    api.doc("torch.tile: repeat, with missing leading sizes taken as 1")
        .func("tile", ["t", "dims"], |t: Tensor, d: Dynamic| {
            ok(t.tile(&ints("tile", "dims", &d)?))
        });
    const INTERLEAVE: &str =
        "each element (each slice of dim) repeated: repeats is an int or a 1-D int tensor; without dim, flattened";
    fn interleave(t: &Tensor, r: &Dynamic, dim: Option<INT>) -> RhaiResult<Tensor> {
        match r.clone().try_cast::<Tensor>() {
            Some(rt) => ok(t.repeat_interleave_tensor(&rt, dim)),
            None => {
                let n = r.as_int().map_err(|ty| {
                    script_error(format!(
                        "repeat_interleave: repeats must be an int or a tensor, got {ty}"
                    ))
                })?;
                ok(t.repeat_interleave(n, dim))
            }
        }
    }
    api.doc(INTERLEAVE)
        .func("repeat_interleave", ["t", "repeats"], |t: Tensor, r: Dynamic| {
            interleave(&t, &r, None)
        });
    api.doc(INTERLEAVE).func(
        "repeat_interleave",
        ["t", "repeats", "dim"],
        |t: Tensor, r: Dynamic, d: Dynamic| {
            let dim = match d.clone().try_cast::<Map>() {
                Some(m) => int_opt("repeat_interleave", &m, "dim", None)?,
                None if d.is_unit() => None,
                None => Some(d.as_int().map_err(|ty| {
                    script_error(format!("repeat_interleave: dim must be an int, got {ty}"))
                })?),
            };
            interleave(&t, &r, dim)
        },
    );
    const MOVEDIM: &str = "dims source moved to positions destination (ints or arrays; a view)";
    for name in ["movedim", "moveaxis"] {
        api.doc(MOVEDIM).func(
            name,
            ["t", "source", "destination"],
            move |t: Tensor, s: Dynamic, d: Dynamic| {
                ok(t.movedim(&ints(name, "source", &s)?, &ints(name, "destination", &d)?))
            },
        );
    }
    for name in ["swapaxes", "swapdims"] {
        api.doc("dims d0 and d1 swapped (a view; = transpose)").func(
            name,
            ["t", "d0", "d1"],
            |t: Tensor, a: INT, b: INT| ok(t.transpose(a, b)),
        );
    }
    api.doc("dim split into sizes (one may be -1; a view)").func(
        "unflatten",
        ["t", "dim", "sizes"],
        |t: Tensor, d: INT, s: Dynamic| ok(t.unflatten(d, &ints("unflatten", "sizes", &s)?)),
    );
    api.doc("t viewed with other's shape")
        .func("view_as", ["t", "other"], |t: Tensor, o: Tensor| {
            let shape: Vec<i64> = o.shape().iter().map(|&d| d as i64).collect();
            ok(t.view(&shape))
        });
    api.doc("t reshaped to other's shape")
        .func("reshape_as", ["t", "other"], |t: Tensor, o: Tensor| {
            let shape: Vec<i64> = o.shape().iter().map(|&d| d as i64).collect();
            ok(t.reshape(&shape))
        });
    api.doc("all windows of size elements along dim, step apart, as a new last dim (a view)")
        .func(
            "unfold",
            ["t", "dim", "size", "step"],
            |t: Tensor, d: INT, s: INT, st: INT| ok(t.unfold(d, s, st)),
        );
    const PAD: &str = "F.pad: (before, after) pairs from the last dim back; mode constant (with value), reflect, replicate or circular";
    api.doc(PAD).func("pad", ["t", "pad"], |t: Tensor, p: Dynamic| {
        ok(t.pad(&ints("pad", "pad", &p)?, "constant", 0.0))
    });
    api.doc(PAD).func(
        "pad",
        ["t", "pad", "mode"],
        |t: Tensor, p: Dynamic, m: Dynamic| {
            let pad = ints("pad", "pad", &p)?;
            match m.clone().try_cast::<Map>() {
                Some(opts) => {
                    let (mut mode, mut value) = ("constant".to_string(), 0.0);
                    for (k, v) in &opts {
                        match k.as_str() {
                            "mode" => {
                                mode = v.clone().into_string().map_err(|ty| {
                                    script_error(format!("pad: option 'mode' must be a string, got {ty}"))
                                })?
                            }
                            "value" => value = number("pad", "option 'value'", v)?,
                            other => {
                                return Err(script_error(format!(
                                    "pad: unknown option '{other}' (expected mode, value)"
                                )))
                            }
                        }
                    }
                    ok(t.pad(&pad, &mode, value))
                }
                None => {
                    let mode = m.into_string().map_err(|ty| {
                        script_error(format!("pad: mode must be a string or an options map, got {ty}"))
                    })?;
                    ok(t.pad(&pad, &mode, 0.0))
                }
            }
        },
    );
    api.doc(PAD).func(
        "pad",
        ["t", "pad", "mode", "value"],
        |t: Tensor, p: Dynamic, m: &str, v: Dynamic| {
            ok(t.pad(&ints("pad", "pad", &p)?, m, number("pad", "value", &v)?))
        },
    );
}

/// The `dim` argument of the splits: an int, or an options map `#{dim: d}`.
fn split_dim(op: &str, d: &Dynamic) -> RhaiResult<INT> {
    match d.clone().try_cast::<Map>() {
        Some(m) => Ok(int_opt(op, &m, "dim", Some(0))?.unwrap_or(0)),
        None => d
            .as_int()
            .map_err(|ty| script_error(format!("{op}: dim must be an int or an options map, got {ty}"))),
    }
}

fn register_splits(api: &mut Api) {
    const CHUNK: &str = "chunks views along dim (0 by default) of ceil(size / chunks) elements each";
    api.doc(CHUNK)
        .func("chunk", ["t", "chunks"], |t: Tensor, n: INT| {
            tensor_array(t.chunk(n, 0))
        });
    api.doc(CHUNK).func(
        "chunk",
        ["t", "chunks", "dim"],
        |t: Tensor, n: INT, d: Dynamic| tensor_array(t.chunk(n, split_dim("chunk", &d)?)),
    );
    fn split(t: &Tensor, s: &Dynamic, dim: INT) -> RhaiResult<Array> {
        match s.as_int() {
            Ok(size) => tensor_array(t.split(size, dim)),
            Err(_) => tensor_array(t.split_sizes(&ints("split", "split sizes", s)?, dim)),
        }
    }
    const SPLIT: &str =
        "views along dim (0 by default): pieces of one size (the last may be smaller), or of the sizes given";
    api.doc(SPLIT)
        .func("split", ["t", "split_size"], |t: Tensor, s: Dynamic| {
            split(&t, &s, 0)
        });
    api.doc(SPLIT).func(
        "split",
        ["t", "split_size", "dim"],
        |t: Tensor, s: Dynamic, d: Dynamic| split(&t, &s, split_dim("split", &d)?),
    );
    fn tensor_split(t: &Tensor, s: &Dynamic, dim: INT) -> RhaiResult<Array> {
        match s.as_int() {
            Ok(n) => tensor_array(t.tensor_split(n, dim)),
            Err(_) => tensor_array(t.tensor_split_at(&ints("tensor_split", "indices", s)?, dim)),
        }
    }
    const TENSOR_SPLIT: &str =
        "views along dim (0 by default): n sections as even as possible, or cut before each index";
    api.doc(TENSOR_SPLIT)
        .func("tensor_split", ["t", "sections"], |t: Tensor, s: Dynamic| {
            tensor_split(&t, &s, 0)
        });
    api.doc(TENSOR_SPLIT).func(
        "tensor_split",
        ["t", "sections", "dim"],
        |t: Tensor, s: Dynamic, d: Dynamic| tensor_split(&t, &s, split_dim("tensor_split", &d)?),
    );
    const UNBIND: &str = "the slices of dim (0 by default), that dim removed (views)";
    api.doc(UNBIND)
        .func("unbind", ["t"], |t: Tensor| tensor_array(t.unbind(0)));
    api.doc(UNBIND)
        .func("unbind", ["t", "dim"], |t: Tensor, d: Dynamic| {
            tensor_array(t.unbind(split_dim("unbind", &d)?))
        });
}

fn register_stacks(api: &mut Api) {
    type Join = fn(&[Tensor]) -> crate::Result<Tensor>;
    let joins: [(&str, &'static str, Join); 5] = [
        (
            "hstack",
            "tensors joined column-wise (1-D tensors end to end)",
            Tensor::hstack,
        ),
        (
            "vstack",
            "tensors joined row-wise (1-D tensors as rows)",
            Tensor::vstack,
        ),
        ("row_stack", "= vstack", Tensor::vstack),
        (
            "dstack",
            "tensors joined along dim 2 (after atleast_3d)",
            Tensor::dstack,
        ),
        (
            "column_stack",
            "tensors joined as columns (0-D and 1-D become [n, 1])",
            Tensor::column_stack,
        ),
    ];
    for (name, doc, join) in joins {
        api.doc(doc).func(name, ["tensors"], move |l: Array| {
            ok(join(&tensor_list(name, &l)?))
        });
    }
    type Atleast = fn(&Tensor) -> crate::Result<Tensor>;
    let atleast: [(&str, &'static str, Atleast); 3] = [
        (
            "atleast_1d",
            "0-D tensors as [1], others unchanged (also over an array)",
            Tensor::atleast_1d,
        ),
        (
            "atleast_2d",
            "as at least 2-D: [n] becomes [1, n] (also over an array)",
            Tensor::atleast_2d,
        ),
        (
            "atleast_3d",
            "as at least 3-D: [n] becomes [1, n, 1], [m, n] becomes [m, n, 1] (also over an array)",
            Tensor::atleast_3d,
        ),
    ];
    for (name, doc, f) in atleast {
        api.doc(doc).func(name, ["t"], move |t: Tensor| ok(f(&t)));
        api.doc(doc).func(name, ["tensors"], move |l: Array| {
            tensor_array(tensor_list(name, &l)?.iter().map(f).collect())
        });
    }
}
