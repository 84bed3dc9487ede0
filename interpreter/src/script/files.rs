//! File functions: `load_csv`, `load_csv_with_header`, `load_npy`, `load_idx`,
//! `load_text` (and the character tokenizer over its strings),
//! `save_npy`, `load_safetensors`, `save_safetensors`. They convert
//! arguments and call [`crate::io`], which does every file access through the
//! runtime's [`crate::io::FileAccess`] (off: each call is an error).
//!
//! ```rhai
//! let d = load_csv("data/digits.csv.gz");              // [1797, 65] f32
//! let t = load_csv_with_header("iris.csv");            // #{header: [...], data: tensor}
//! save_npy(d, "digits.npy");
//! save_safetensors(#{w: w, b: b}, "model.safetensors");
//! let m = load_safetensors("model.safetensors", #{device: "cpu"});
//! ```

use super::convert::{named_tensors, ok, opts, script_error, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::DType;
use crate::io::csv::{Column, CsvOptions};
use crate::tensor::Tensor;
use rhai::{Array, Dynamic, Engine, Map};
use std::path::Path;
use std::sync::Arc;

/// CSV options from a script map: `header`, `delimiter`, `comment`, `columns`, `dtype`, `device`.
fn csv_options(rt: &Runtime, m: &Map) -> RhaiResult<(CsvOptions, crate::tensor::Device)> {
    let op = "load_csv";
    let mut o = CsvOptions::default();
    let mut device = rt.device();
    let byte = |k: &str, v: &Dynamic| -> RhaiResult<u8> {
        let s = v
            .clone()
            .into_immutable_string()
            .map_err(|t| script_error(format!("{op}: option '{k}' must be a string, got {t}")))?;
        match s.as_bytes() {
            [b] => Ok(*b),
            _ => Err(script_error(format!(
                "{op}: option '{k}' must be one character, got \"{s}\""
            ))),
        }
    };
    for (k, v) in m {
        match k.as_str() {
            "header" => {
                o.header = Some(
                    v.as_bool()
                        .map_err(|t| script_error(format!("{op}: option 'header' must be true or false, got {t}")))?,
                )
            }
            "delimiter" => o.delimiter = byte(k, v)?,
            "comment" => o.comment = Some(byte(k, v)?),
            "columns" => {
                let arr = v.clone().try_cast::<Array>().ok_or_else(|| {
                    script_error(format!("{op}: option 'columns' must be an array of ints or names"))
                })?;
                let cols = arr
                    .iter()
                    .map(|c| {
                        if let Ok(i) = c.as_int() {
                            Ok(Column::Index(i))
                        } else if let Ok(s) = c.clone().into_immutable_string() {
                            Ok(Column::Name(s.to_string()))
                        } else {
                            Err(script_error(format!(
                                "{op}: option 'columns' must hold ints or names, found {}",
                                c.type_name()
                            )))
                        }
                    })
                    .collect::<RhaiResult<Vec<_>>>()?;
                o.columns = Some(cols);
            }
            "dtype" | "device" => {
                let mut one = Map::new();
                one.insert(k.clone(), v.clone());
                let t = opts(op, &one)?;
                if let Some(d) = t.dtype {
                    o.dtype = d;
                }
                if let Some(d) = t.device {
                    device = d;
                }
            }
            other => {
                return Err(script_error(format!(
                    "{op}: unknown option '{other}' (expected header, delimiter, comment, columns, dtype, device)"
                )))
            }
        }
    }
    Ok((o, device))
}

fn load_csv(rt: &Runtime, path: &str, m: &Map) -> RhaiResult<(Vec<String>, Tensor)> {
    let (o, device) = csv_options(rt, m)?;
    ok(crate::io::csv::load(rt.files(), Path::new(path), &o, device))
}

/// A tensor converted as `#{dtype: ...}` asks (unchanged without one).
fn with_dtype(t: Tensor, dtype: Option<DType>) -> RhaiResult<Tensor> {
    match dtype {
        Some(d) => ok(t.to_dtype(d)),
        None => Ok(t),
    }
}

fn load_idx(rt: &Runtime, path: &str, m: &Map) -> RhaiResult<Tensor> {
    let o = opts("load_idx", m)?;
    let t = ok(crate::io::idx::load(
        rt.files(),
        Path::new(path),
        o.device.unwrap_or_else(|| rt.device()),
    ))?;
    with_dtype(t, o.dtype)
}

fn load_npy(rt: &Runtime, path: &str, m: &Map) -> RhaiResult<Tensor> {
    let o = opts("load_npy", m)?;
    let t = ok(crate::io::npy::load(
        rt.files(),
        Path::new(path),
        o.device.unwrap_or_else(|| rt.device()),
    ))?;
    with_dtype(t, o.dtype)
}

fn load_safetensors(rt: &Runtime, path: &str, m: &Map) -> RhaiResult<Map> {
    let o = opts("load_safetensors", m)?;
    let named = ok(crate::io::safetensors::load(
        rt.files(),
        Path::new(path),
        o.device.unwrap_or_else(|| rt.device()),
    ))?;
    let mut out = Map::new();
    for (name, t) in named {
        out.insert(name.into(), Dynamic::from(with_dtype(t, o.dtype)?));
    }
    Ok(out)
}

fn save_safetensors(rt: &Runtime, m: &Map, path: &str) -> RhaiResult<()> {
    let named = named_tensors("save_safetensors", "entry", m)?;
    ok(crate::io::safetensors::save(rt.files(), &named, Path::new(path)))
}

/// Registers the file functions.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    let mut api = Api::new(engine, Category::Io);
    const CSV: &str = "a CSV file (.gz too) of numbers as a 2-d tensor; opts #{header, delimiter, comment, columns, dtype, device}";
    let r = rt.clone();
    api.doc(CSV)
        .volatile("load_csv", ["path"], move |p: &str| -> RhaiResult<Tensor> {
            Ok(load_csv(&r, p, &Map::new())?.1)
        });
    let r = rt.clone();
    api.doc(CSV).volatile(
        "load_csv",
        ["path", "opts"],
        move |p: &str, m: Map| -> RhaiResult<Tensor> { Ok(load_csv(&r, p, &m)?.1) },
    );
    const CSV_HEADER: &str = "a CSV file as #{header: [names], data: tensor}; opts as load_csv";
    for arity in [1, 2] {
        let r = rt.clone();
        let with_header = move |p: &str, m: &Map| -> RhaiResult<Map> {
            let (header, t) = load_csv(&r, p, m)?;
            let mut out = Map::new();
            let names: Array = header.into_iter().map(Dynamic::from).collect();
            out.insert("header".into(), names.into());
            out.insert("data".into(), Dynamic::from(t));
            Ok(out)
        };
        if arity == 1 {
            api.doc(CSV_HEADER)
                .volatile("load_csv_with_header", ["path"], move |p: &str| {
                    with_header(p, &Map::new())
                });
        } else {
            api.doc(CSV_HEADER).volatile(
                "load_csv_with_header",
                ["path", "opts"],
                move |p: &str, m: Map| with_header(p, &m),
            );
        }
    }
    const IDX: &str = "a tensor from an IDX file (MNIST, Fashion-MNIST; .gz too): u8 images/labels as u8; opts #{dtype, device}";
    let r = rt.clone();
    api.doc(IDX)
        .volatile("load_idx", ["path"], move |p: &str| load_idx(&r, p, &Map::new()));
    let r = rt.clone();
    api.doc(IDX)
        .volatile("load_idx", ["path", "opts"], move |p: &str, m: Map| {
            load_idx(&r, p, &m)
        });
    let r = rt.clone();
    api.doc("the text of a UTF-8 file (.gz too) as a string")
        .volatile("load_text", ["path"], move |p: &str| -> RhaiResult<String> {
            ok(crate::io::text::load(r.files(), Path::new(p)))
        });
    api.doc("the distinct characters of text, sorted, as a string (a character vocabulary)")
        .func("char_vocabulary", ["text"], |t: &str| {
            crate::io::text::vocabulary(t)
        });
    let r = rt.clone();
    api.doc("the index in vocab of each character of text: an i64 tensor on the default device")
        .volatile("encode_chars", ["text", "vocab"], move |t: &str, v: &str| {
            ok(crate::io::text::encode(t, v, r.device()))
        });
    api.doc("the characters of vocab at the indices of an integer tensor, as a string")
        .func(
            "decode_chars",
            ["ids", "vocab"],
            |ids: Tensor, v: &str| -> RhaiResult<String> { ok(crate::io::text::decode(&ids, v)) },
        );
    const NPY: &str = "a tensor from a .npy file; opts #{dtype, device}";
    let r = rt.clone();
    api.doc(NPY)
        .volatile("load_npy", ["path"], move |p: &str| load_npy(&r, p, &Map::new()));
    let r = rt.clone();
    api.doc(NPY)
        .volatile("load_npy", ["path", "opts"], move |p: &str, m: Map| {
            load_npy(&r, p, &m)
        });
    let r = rt.clone();
    api.doc("writes t to a .npy file").volatile(
        "save_npy",
        ["t", "path"],
        move |t: Tensor, p: &str| -> RhaiResult<()> { ok(crate::io::npy::save(r.files(), &t, Path::new(p))) },
    );
    const SAFETENSORS: &str =
        "the tensors of a .safetensors file, as a map of name to tensor; opts #{dtype, device}";
    let r = rt.clone();
    api.doc(SAFETENSORS)
        .volatile("load_safetensors", ["path"], move |p: &str| {
            load_safetensors(&r, p, &Map::new())
        });
    let r = rt.clone();
    api.doc(SAFETENSORS)
        .volatile("load_safetensors", ["path", "opts"], move |p: &str, m: Map| {
            load_safetensors(&r, p, &m)
        });
    let r = rt.clone();
    api.doc("writes a map of name to tensor to a .safetensors file")
        .volatile("save_safetensors", ["tensors", "path"], move |m: Map, p: &str| {
            save_safetensors(&r, &m, p)
        });
}
