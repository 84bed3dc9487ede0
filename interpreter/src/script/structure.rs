//! The script side of the structure and mask ops (`tensor/structure.rs`):
//! argument conversion only. PyTorch's keyword arguments come in an options
//! map (`x.diagonal(#{offset: 1, dim1: 1, dim2: 2})`, `meshgrid([a, b],
//! #{indexing: "xy"})`, `tril_indices(3, 3, #{offset: -1, device: "cpu"})`).

use super::convert::{number, ok, operand, script_error, tensor_array, tensor_list, RhaiResult};
use super::kwargs::Kwargs;
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::{DType, Device};
use crate::tensor::windows::Window;
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map, INT};
use std::sync::Arc;

/// Reads the options of `m` whose names are in `keys`; an unknown one is an error.
fn options<'m>(op: &str, m: &'m Map, keys: &[&str]) -> RhaiResult<impl Fn(&str) -> Option<&'m Dynamic>> {
    if let Some(other) = m.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(script_error(format!(
            "{op}: unknown option '{other}' (expected {})",
            keys.join(", ")
        )));
    }
    Ok(move |k: &str| m.get(k))
}

fn int(op: &str, key: &str, v: Option<&Dynamic>, default: INT) -> RhaiResult<INT> {
    v.map_or(Ok(default), |v| {
        v.as_int()
            .map_err(|t| script_error(format!("{op}: option '{key}' must be an int, got {t}")))
    })
}

fn string(op: &str, key: &str, v: Option<&Dynamic>, default: &str) -> RhaiResult<String> {
    v.map_or(Ok(default.to_string()), |v| {
        v.clone()
            .into_string()
            .map_err(|t| script_error(format!("{op}: option '{key}' must be a string, got {t}")))
    })
}

/// Registers the structure and mask ops.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Views);
    let api = &mut api;
    for (name, doc, upper) in [
        (
            "tril",
            "the lower triangle of the last two dims (col - row <= diagonal), zeros above",
            false,
        ),
        (
            "triu",
            "the upper triangle of the last two dims (col - row >= diagonal), zeros below",
            true,
        ),
    ] {
        let f = move |t: &Tensor, k: INT| if upper { t.triu(k) } else { t.tril(k) };
        api.doc(doc).func(name, ["t"], move |t: Tensor| ok(f(&t, 0)));
        api.doc(doc)
            .func(name, ["t", "diagonal"], move |t: Tensor, k: Dynamic| {
                let k = match k.clone().try_cast::<Map>() {
                    Some(m) => int(name, "diagonal", options(name, &m, &["diagonal"])?("diagonal"), 0)?,
                    None => k
                        .as_int()
                        .map_err(|ty| script_error(format!("{name}: diagonal must be an int, got {ty}")))?,
                };
                ok(f(&t, k))
            });
    }
    const DIAGONAL: &str =
        "the diagonal offset of dims dim1, dim2 (0, 0, 1 by default) as a new last dim (a view)";
    api.doc(DIAGONAL)
        .func("diagonal", ["t"], |t: Tensor| ok(t.diagonal(0, 0, 1)));
    api.doc(DIAGONAL)
        .func("diagonal", ["t", "offset"], |t: Tensor, o: Dynamic| {
            match o.clone().try_cast::<Map>() {
                Some(m) => {
                    let get = options("diagonal", &m, &["offset", "dim1", "dim2"])?;
                    ok(t.diagonal(
                        int("diagonal", "offset", get("offset"), 0)?,
                        int("diagonal", "dim1", get("dim1"), 0)?,
                        int("diagonal", "dim2", get("dim2"), 1)?,
                    ))
                }
                None => ok(t.diagonal(
                    o.as_int()
                        .map_err(|ty| script_error(format!("diagonal: offset must be an int, got {ty}")))?,
                    0,
                    1,
                )),
            }
        });
    api.doc(DIAGONAL).func(
        "diagonal",
        ["t", "offset", "dim1", "dim2"],
        |t: Tensor, o: INT, a: INT, b: INT| ok(t.diagonal(o, a, b)),
    );
    const DIAG_EMBED: &str =
        "the last dim on the diagonal offset of dims dim1, dim2 (0, -2, -1) of a new tensor";
    api.doc(DIAG_EMBED)
        .func("diag_embed", ["t"], |t: Tensor| ok(t.diag_embed(0, -2, -1)));
    api.doc(DIAG_EMBED)
        .func("diag_embed", ["t", "offset"], |t: Tensor, o: INT| {
            ok(t.diag_embed(o, -2, -1))
        });
    api.doc(DIAG_EMBED).func(
        "diag_embed",
        ["t", "offset", "dim1", "dim2"],
        |t: Tensor, o: INT, a: INT, b: INT| ok(t.diag_embed(o, a, b)),
    );
    const DIAG: &str = "a vector on the diagonal offset of a new matrix, or a matrix's diagonal (a copy)";
    api.doc(DIAG).func("diag", ["t"], |t: Tensor| ok(t.diag(0)));
    api.doc(DIAG)
        .func("diag", ["t", "offset"], |t: Tensor, o: INT| ok(t.diag(o)));
    const DIAGFLAT: &str = "the flattened tensor on the diagonal offset of a new matrix";
    api.doc(DIAGFLAT)
        .func("diagflat", ["t"], |t: Tensor| ok(t.diagflat(0)));
    api.doc(DIAGFLAT)
        .func("diagflat", ["t", "offset"], |t: Tensor, o: INT| ok(t.diagflat(o)));
    api.doc("the sum of a matrix's main diagonal")
        .func("trace", ["t"], |t: Tensor| ok(t.trace()));
    api.doc("value (a number or 0-dim tensor) where the bool mask is true")
        .func(
            "masked_fill",
            ["t", "mask", "value"],
            |t: Tensor, mask: Tensor, v: Dynamic| {
                let value = operand("masked_fill", &v, Some(&t), t.device())?;
                ok(t.masked_fill(&mask, &value))
            },
        );
    api.doc("the elements at index (any shape) of the flattened tensor")
        .func("take", ["t", "index"], |t: Tensor, i: Tensor| ok(t.take(&i)));
    const TAKE_ALONG: &str = "gather along dim with the other dims broadcast (flattened without dim)";
    api.doc(TAKE_ALONG)
        .func("take_along_dim", ["t", "indices"], |t: Tensor, i: Tensor| {
            ok(t.take_along_dim(&i, None))
        });
    api.doc(TAKE_ALONG).func(
        "take_along_dim",
        ["t", "indices", "dim"],
        |t: Tensor, i: Tensor, d: Dynamic| {
            let dim =
                match d.clone().try_cast::<Map>() {
                    Some(m) => options("take_along_dim", &m, &["dim"])?("dim")
                        .map(|v| int("take_along_dim", "dim", Some(v), 0))
                        .transpose()?,
                    None if d.is_unit() => None,
                    None => Some(d.as_int().map_err(|ty| {
                        script_error(format!("take_along_dim: dim must be an int, got {ty}"))
                    })?),
                };
            ok(t.take_along_dim(&i, dim))
        },
    );
    const ONE_HOT: &str = "F.one_hot: integer classes as rows of num_classes i64 (-1: largest value + 1)";
    api.doc(ONE_HOT)
        .func("one_hot", ["t"], |t: Tensor| ok(t.one_hot(None)));
    api.doc(ONE_HOT)
        .func("one_hot", ["t", "num_classes"], |t: Tensor, n: INT| {
            ok(t.one_hot(Some(n)))
        });
    const MESHGRID: &str =
        "1-D tensors spread over the grid of their sizes (indexing \"ij\" or \"xy\"; expanded views)";
    api.doc(MESHGRID).func("meshgrid", ["tensors"], |l: Array| {
        tensor_array(Tensor::meshgrid(&tensor_list("meshgrid", &l)?, "ij"))
    });
    api.doc(MESHGRID)
        .func("meshgrid", ["tensors", "indexing"], |l: Array, i: Dynamic| {
            let indexing = match i.clone().try_cast::<Map>() {
                Some(m) => string(
                    "meshgrid",
                    "indexing",
                    options("meshgrid", &m, &["indexing"])?("indexing"),
                    "ij",
                )?,
                None => i.into_string().map_err(|ty| {
                    script_error(format!(
                        "meshgrid: indexing must be a string or an options map, got {ty}"
                    ))
                })?,
            };
            tensor_array(Tensor::meshgrid(&tensor_list("meshgrid", &l)?, &indexing))
        });
    api.doc("every combination of the 1-D tensors' elements, one per row")
        .func("cartesian_prod", ["tensors"], |l: Array| {
            ok(Tensor::cartesian_prod(&tensor_list("cartesian_prod", &l)?))
        });
    register_combining(api);
    register_creation(api, rt);
}

/// `combinations`, `block_diag`, `vander` and `unravel_index`.
fn register_combining(api: &mut Api) {
    use super::kwargs::{register as kw, Form};
    kw(
        api,
        "combinations",
        "the r-element combinations (r 2) of a 1-D tensor's elements, one per row; option with_replacement (false)",
        ["t"],
        &["r", "with_replacement"],
        Form::Plain,
        |[t], k| ok(t.combinations(k.int("r", 2)?, k.flag("with_replacement", false)?)),
    );
    api.doc(
        "the matrices (0-D and 1-D tensors as one row) along the diagonal of one matrix, zeros elsewhere",
    )
    .func("block_diag", ["tensors"], |l: Array| {
        ok(Tensor::block_diag(&tensor_list("block_diag", &l)?))
    });
    kw(
        api,
        "vander",
        "the Vandermonde matrix of a vector: columns x^(N-1), ..., x^0 (x^0 first with increasing); options N (len(x)), increasing (false)",
        ["x"],
        &["N", "increasing"],
        Form::Plain,
        |[x], k| ok(x.vander(k.opt_int("N")?, k.flag("increasing", false)?)),
    );
    api.doc("the coordinates in shape of flat row-major indices, one tensor per dim (negative indices count from the end)")
        .func("unravel_index", ["indices", "shape"], |i: Dynamic, s: Dynamic| -> RhaiResult<Array> {
            let i = match i.clone().try_cast::<Tensor>() {
                Some(t) => t,
                None => operand("unravel_index", &i, None, Device::Cpu)?,
            };
            let shape: Vec<usize> = super::convert::shape("unravel_index", &s)?;
            tensor_array(i.unravel_index(&shape))
        });
}

fn register_creation(api: &mut Api, rt: &Arc<Runtime>) {
    api.category(Category::Creation);
    register_windows(api, rt);
    const LOGSPACE: &str = "steps values base ** linspace(start, end) (base 10); opts #{base, dtype, device}";
    let r = rt.clone();
    api.doc(LOGSPACE).func(
        "logspace",
        ["start", "end", "steps"],
        move |a: Dynamic, b: Dynamic, n: INT| {
            ok(Tensor::logspace(
                number("logspace", "start", &a)?,
                number("logspace", "end", &b)?,
                n,
                10.0,
                None,
                r.device(),
            ))
        },
    );
    let r = rt.clone();
    api.doc(LOGSPACE).func(
        "logspace",
        ["start", "end", "steps", "opts"],
        move |a: Dynamic, b: Dynamic, n: INT, m: Map| {
            let get = options("logspace", &m, &["base", "dtype", "device"])?;
            let base = get("base").map_or(Ok(10.0), |v| number("logspace", "base", v))?;
            let dtype = get("dtype").map(|v| parse_dtype("logspace", v)).transpose()?;
            let device = get("device").map(|v| parse_device("logspace", v)).transpose()?;
            ok(Tensor::logspace(
                number("logspace", "start", &a)?,
                number("logspace", "end", &b)?,
                n,
                base,
                dtype,
                device.unwrap_or_else(|| r.device()),
            ))
        },
    );
    for (name, upper) in [("tril_indices", false), ("triu_indices", true)] {
        let doc = if upper {
            "the [2, N] i64 (row, col) indices of the upper triangle (col - row >= offset) of a row x col matrix"
        } else {
            "the [2, N] i64 (row, col) indices of the lower triangle (col - row <= offset) of a row x col matrix"
        };
        let r = rt.clone();
        api.doc(doc).func(name, ["row", "col"], move |a: INT, b: INT| {
            ok(Tensor::triangle_indices(a, b, 0, upper, r.device()))
        });
        let r = rt.clone();
        api.doc(doc).func(
            name,
            ["row", "col", "offset"],
            move |a: INT, b: INT, o: Dynamic| {
                let (offset, device) = match o.clone().try_cast::<Map>() {
                    Some(m) => {
                        let get = options(name, &m, &["offset", "device"])?;
                        (
                            int(name, "offset", get("offset"), 0)?,
                            get("device").map(|v| parse_device(name, v)).transpose()?,
                        )
                    }
                    None => (
                        o.as_int()
                            .map_err(|ty| script_error(format!("{name}: offset must be an int, got {ty}")))?,
                        None,
                    ),
                };
                ok(Tensor::triangle_indices(
                    a,
                    b,
                    offset,
                    upper,
                    device.unwrap_or_else(|| r.device()),
                ))
            },
        );
    }
}

/// The window functions: `hann_window(n[, periodic][, opts])`, with
/// hamming's `alpha, beta` and kaiser's `beta` after `periodic`,
/// positionally or in the options map with `dtype`, `device` and
/// `requires_grad`.
fn register_windows(api: &mut Api, rt: &Arc<Runtime>) {
    const COMMON: &[&str] = &["periodic", "dtype", "device", "requires_grad"];
    const HAMMING: &[&str] = &["periodic", "alpha", "beta", "dtype", "device", "requires_grad"];
    const KAISER: &[&str] = &["periodic", "beta", "dtype", "device", "requires_grad"];
    let kinds: [(&'static str, &'static str, &'static [&'static str], usize); 5] = [
        ("hann_window", "the Hann window of n points (periodic by default); opts #{periodic, dtype, device, requires_grad}", COMMON, 1),
        ("hamming_window", "the Hamming window alpha - beta cos(2πk / (N - 1)) (0.54, 0.46); args periodic, alpha, beta", HAMMING, 3),
        ("blackman_window", "the Blackman window of n points (periodic by default)", COMMON, 1),
        ("bartlett_window", "the triangular Bartlett window of n points (periodic by default)", COMMON, 1),
        ("kaiser_window", "the Kaiser window I0(beta √(1 - r²)) / I0(beta) (beta 12); args periodic, beta", KAISER, 2),
    ];
    for (name, doc, names, positional) in kinds {
        let make = move |rt: &Runtime, n: INT, args: Vec<Dynamic>| -> RhaiResult<Tensor> {
            let k = Kwargs::parse(name, names, args)?;
            let kind = match name {
                "hann_window" => Window::Hann,
                "hamming_window" => Window::Hamming {
                    alpha: k.number("alpha", 0.54)?,
                    beta: k.number("beta", 0.46)?,
                },
                "blackman_window" => Window::Blackman,
                "bartlett_window" => Window::Bartlett,
                _ => Window::Kaiser {
                    beta: k.number("beta", 12.0)?,
                },
            };
            let dtype = k.get("dtype").map(|v| parse_dtype(name, v)).transpose()?;
            let device = k.get("device").map(|v| parse_device(name, v)).transpose()?;
            let t = ok(Tensor::window(
                kind,
                n,
                k.flag("periodic", true)?,
                dtype,
                device.unwrap_or_else(|| rt.device()),
            ))?;
            if k.flag("requires_grad", false)? {
                ok(t.set_requires_grad(true))?;
            }
            Ok(t)
        };
        // positional options, then one more for a trailing map
        let r = rt.clone();
        api.doc(doc)
            .func(name, ["window_length"], move |n: INT| make(&r, n, vec![]));
        let r = rt.clone();
        api.doc(doc)
            .func(name, ["window_length", names[0]], move |n: INT, a: Dynamic| {
                make(&r, n, vec![a])
            });
        let r = rt.clone();
        api.doc(doc).func(
            name,
            ["window_length", names[0], names[1]],
            move |n: INT, a: Dynamic, b: Dynamic| make(&r, n, vec![a, b]),
        );
        if positional >= 2 {
            let r = rt.clone();
            api.doc(doc).func(
                name,
                ["window_length", names[0], names[1], names[2]],
                move |n: INT, a: Dynamic, b: Dynamic, c: Dynamic| make(&r, n, vec![a, b, c]),
            );
        }
        if positional >= 3 {
            let r = rt.clone();
            api.doc(doc).func(
                name,
                ["window_length", names[0], names[1], names[2], "opts"],
                move |n: INT, a: Dynamic, b: Dynamic, c: Dynamic, d: Dynamic| make(&r, n, vec![a, b, c, d]),
            );
        }
    }
}

fn parse_dtype(op: &str, v: &Dynamic) -> RhaiResult<DType> {
    let s = v
        .clone()
        .into_string()
        .map_err(|t| script_error(format!("{op}: option 'dtype' must be a string, got {t}")))?;
    ok(DType::parse(&s))
}

fn parse_device(op: &str, v: &Dynamic) -> RhaiResult<Device> {
    let s = v
        .clone()
        .into_string()
        .map_err(|t| script_error(format!("{op}: option 'device' must be a string, got {t}")))?;
    ok(Device::parse(&s))
}
