//! The `progress(n)` object, after tqdm: the script ticks it and it shows the
//! count, the rate and live metrics (see [`crate::progress`] for how it is
//! drawn: a bar on a terminal, plain lines on stderr otherwise; an
//! embedder's callback gets the plain lines instead, see [`super::output`]).
//!
//! ```rhai
//! let p = progress(100, #{desc: "train"});   // also progress(n)
//! for i in 0..100 {
//!     p.tick();                 // +1; p.inc(k) adds k
//!     p.set("loss", 0.123);     // a live metric: number, tensor of one element, or text
//! }
//! p.message("done");
//! p.finish();                   // also when the last handle goes away
//! ```
//!
//! Options: `desc` (a label), `mode` (`"auto"`, `"bar"`, `"plain"`, `"off"`).
//! Properties: `p.pos`, `p.total`, `p.elapsed` (seconds).

use super::convert::{ok, script_error, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::core::Scalar;
use crate::progress::{format_metric, Mode, Progress};
use crate::tensor::Tensor;
use rhai::{Dynamic, Engine, Map, FLOAT, INT};
use std::sync::Arc;

/// A script handle to a progress counter (clones share it).
#[derive(Clone)]
pub struct ScriptProgress(Arc<Progress>);

fn count(op: &str, n: INT) -> RhaiResult<u64> {
    u64::try_from(n).map_err(|_| script_error(format!("{op}: expected a count >= 0, got {n}")))
}

fn make(rt: &Runtime, n: INT, m: &Map) -> RhaiResult<ScriptProgress> {
    let total = count("progress", n)?;
    let mut desc = String::new();
    let mut mode = Mode::detect();
    for (k, v) in m {
        let s = v
            .clone()
            .into_immutable_string()
            .map_err(|t| script_error(format!("progress: option '{k}' must be a string, got {t}")))?;
        match k.as_str() {
            "desc" => desc = s.to_string(),
            "mode" => {
                mode = Mode::parse(&s).ok_or_else(|| {
                    script_error(format!(
                        "progress: unknown mode \"{s}\" (expected auto, bar, plain, off)"
                    ))
                })?
            }
            other => {
                return Err(script_error(format!(
                    "progress: unknown option '{other}' (expected desc, mode)"
                )))
            }
        }
    }
    Ok(ScriptProgress(Arc::new(
        rt.outputs().progress(total, &desc, mode),
    )))
}

/// A metric value as text: numbers with four significant digits, tensors by their one element.
fn metric_text(v: &Dynamic) -> RhaiResult<String> {
    if let Ok(i) = v.as_int() {
        return Ok(i.to_string());
    }
    if let Ok(f) = v.as_float() {
        return Ok(format_metric(f));
    }
    if let Some(t) = v.clone().try_cast::<Tensor>() {
        return Ok(match ok(t.item())? {
            Scalar::Float(f) => format_metric(f),
            Scalar::Int(i) => i.to_string(),
            Scalar::Bool(b) => b.to_string(),
        });
    }
    Ok(v.to_string())
}

/// Registers `progress` and its methods.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    engine.register_type_with_name::<ScriptProgress>("Progress");
    let mut api = Api::new(engine, Category::Progress);
    const PROGRESS: &str = "a progress counter of n steps, shown as a bar or lines; opts #{desc, mode}";
    let r = rt.clone();
    api.doc(PROGRESS)
        .volatile("progress", ["n"], move |n: INT| make(&r, n, &Map::new()));
    let r = rt.clone();
    api.doc(PROGRESS)
        .volatile("progress", ["n", "opts"], move |n: INT, m: Map| make(&r, n, &m));
    api.doc("advances the counter by one step")
        .volatile("tick", ["p"], |p: &mut ScriptProgress| p.0.inc(1));
    api.doc("advances the counter by k steps").volatile(
        "inc",
        ["p", "k"],
        |p: &mut ScriptProgress, k: INT| -> RhaiResult<()> {
            p.0.inc(count("inc", k)?);
            Ok(())
        },
    );
    api.doc("sets the counter to step k").volatile(
        "set_position",
        ["p", "k"],
        |p: &mut ScriptProgress, k: INT| -> RhaiResult<()> {
            p.0.set_position(count("set_position", k)?);
            Ok(())
        },
    );
    api.doc("shows a live metric: a number, a one-element tensor, or text")
        .volatile(
            "set",
            ["p", "name", "value"],
            |p: &mut ScriptProgress, name: &str, v: Dynamic| -> RhaiResult<()> {
                p.0.set_metric(name, metric_text(&v)?);
                Ok(())
            },
        );
    api.doc("shows a line of text with the counter").volatile(
        "message",
        ["p", "text"],
        |p: &mut ScriptProgress, s: &str| p.0.set_message(s),
    );
    api.doc("ends the counter's display (also when the last handle goes)")
        .volatile("finish", ["p"], |p: &mut ScriptProgress| p.0.finish());
    api.doc("the steps done")
        .get("pos", ["p"], |p: &mut ScriptProgress| p.0.position() as INT);
    api.doc("the steps in all")
        .get("total", ["p"], |p: &mut ScriptProgress| p.0.total() as INT);
    api.doc("seconds since the counter was made")
        .get("elapsed", ["p"], |p: &mut ScriptProgress| -> FLOAT {
            p.0.elapsed()
        });
    api.doc("the counter as text, Progress(pos/total)")
        .func("to_string", ["p"], |p: &mut ScriptProgress| {
            format!("Progress({}/{})", p.0.position(), p.0.total())
        });
}
