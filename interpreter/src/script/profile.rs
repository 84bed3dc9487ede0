//! `profile(|| …)`: runs a block with the op profiler on (see
//! [`crate::profiler`]) and returns a `Profile`, which prints as a table in
//! the manner of `torch.profiler`'s `key_averages().table()`.
//!
//! ```rhai
//! let p = profile(|| { (x @ w).relu().sum().backward() });
//! print(p);                                  // the table, sorted by GPU (else host) self time
//! print(p.table(#{sort_by: "calls", row_limit: 5}));
//! p.save_trace("trace.json");                // Chrome trace: chrome://tracing, Perfetto
//! let rows = p.rows;                         // [#{name, calls, host_self_ms, ...}, ...]
//! let v = p.value;                           // what the block returned
//! ```
//!
//! Options of `profile(f, opts)`: `trace` (a file to write the trace to),
//! `sort_by` (`host_self`, `host_total`, `gpu_self`, `gpu_total`, `calls`,
//! `memory`) and `row_limit` (30; 0 for all) for the printed table.

use super::convert::{ok, script_error, RhaiResult};
use super::registry::{Api, Category};
use super::Runtime;
use crate::profiler::{Report, Session, SortBy};
use rhai::{Array, Dynamic, Engine, FnPtr, Map, NativeCallContext, FLOAT, INT};
use std::path::Path;
use std::sync::Arc;

/// A finished profile as scripts hold it.
#[derive(Clone)]
pub struct Profile {
    report: Arc<Report>,
    value: Dynamic,
    sort: SortBy,
    limit: usize,
}

/// The table options of `opts` (`sort_by`, `row_limit`) over `report`'s defaults.
fn table_options(report: &Report, opts: &Map) -> RhaiResult<(SortBy, usize)> {
    for key in opts.keys() {
        if !["trace", "sort_by", "row_limit"].contains(&key.as_str()) {
            return Err(script_error(format!(
                "profile: unknown option '{key}' (expected trace, sort_by, row_limit)"
            )));
        }
    }
    let sort = match opts.get("sort_by") {
        Some(s) => {
            let s = s
                .clone()
                .into_immutable_string()
                .map_err(|t| script_error(format!("profile: sort_by must be a string, got {t}")))?;
            ok(SortBy::parse(&s))?
        }
        None => report.default_sort(),
    };
    let limit = match opts.get("row_limit") {
        Some(n) => {
            let n = n
                .as_int()
                .map_err(|t| script_error(format!("profile: row_limit must be an integer, got {t}")))?;
            usize::try_from(n)
                .map_err(|_| script_error(format!("profile: row_limit must be 0 or more, got {n}")))?
        }
        None => 30,
    };
    Ok((sort, limit))
}

/// Runs `f` under a profiling session.
fn run(rt: &Runtime, ctx: &NativeCallContext, f: &FnPtr, opts: &Map) -> RhaiResult<Profile> {
    let session = ok(Session::start())?;
    let value = f.call_within_context::<Dynamic>(ctx, ())?;
    let report = ok(session.finish())?;
    let (sort, limit) = table_options(&report, opts)?;
    let profile = Profile {
        report: Arc::new(report),
        value,
        sort,
        limit,
    };
    if let Some(path) = opts.get("trace") {
        let path = path
            .clone()
            .into_immutable_string()
            .map_err(|t| script_error(format!("profile: trace must be a file name, got {t}")))?;
        save_trace(rt, &profile, &path)?;
    }
    Ok(profile)
}

fn save_trace(rt: &Runtime, p: &Profile, path: &str) -> RhaiResult<()> {
    ok(rt
        .files()
        .write("profile", Path::new(path), p.report.chrome_trace().as_bytes()))
}

/// The rows as maps; times in milliseconds.
fn rows(p: &Profile) -> Array {
    p.report
        .rows(p.sort)
        .into_iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("name".into(), r.name.to_string().into());
            m.insert("calls".into(), (r.calls as INT).into());
            m.insert("host_self_ms".into(), (r.host_self_us / 1e3).into());
            m.insert("host_total_ms".into(), (r.host_total_us / 1e3).into());
            m.insert("gpu_self_ms".into(), (r.gpu_self_us / 1e3).into());
            m.insert("gpu_total_ms".into(), (r.gpu_total_us / 1e3).into());
            m.insert("gpu_memory_bytes".into(), (r.mem_self_bytes as INT).into());
            Dynamic::from_map(m)
        })
        .collect()
}

/// Registers `profile` and the `Profile` type.
pub fn register(engine: &mut Engine, rt: &Arc<Runtime>) {
    engine.register_type_with_name::<Profile>("Profile");
    let mut api = Api::new(engine, Category::Runtime);
    const PROFILE: &str = "runs f with the op profiler on and returns a Profile (prints as a table of calls, host and GPU time per function; .rows, .value, .save_trace(path)); opts #{trace, sort_by, row_limit}";
    let r = rt.clone();
    api.doc(PROFILE)
        .volatile("profile", ["f"], move |ctx: NativeCallContext, f: FnPtr| {
            run(&r, &ctx, &f, &Map::new())
        });
    let r = rt.clone();
    api.doc(PROFILE).volatile(
        "profile",
        ["f", "opts"],
        move |ctx: NativeCallContext, f: FnPtr, m: Map| run(&r, &ctx, &f, &m),
    );
    for name in ["to_string", "to_debug"] {
        api.doc("the profile's table")
            .func(name, ["p"], |p: &mut Profile| p.report.table(p.sort, p.limit));
    }
    api.doc("the profile's table, sorted and cut as in profile's options")
        .func("table", ["p"], |p: &mut Profile| p.report.table(p.sort, p.limit));
    api.doc("the profile's table with options #{sort_by, row_limit}")
        .func(
            "table",
            ["p", "opts"],
            |p: &mut Profile, m: Map| -> RhaiResult<String> {
                let (sort, limit) = table_options(&p.report, &m)?;
                Ok(p.report.table(sort, limit))
            },
        );
    api.doc("one map per function: name, calls, host_self_ms, host_total_ms, gpu_self_ms, gpu_total_ms, gpu_memory_bytes")
        .get("rows", ["p"], |p: &mut Profile| rows(p));
    api.doc("what the profiled block returned")
        .get("value", ["p"], |p: &mut Profile| p.value.clone());
    api.doc("host time of the profiled calls, milliseconds").get(
        "host_ms",
        ["p"],
        |p: &mut Profile| -> FLOAT { p.report.host_us() / 1e3 },
    );
    api.doc("GPU time of the profiled calls, milliseconds (0 on the CPU)")
        .get("gpu_ms", ["p"], |p: &mut Profile| -> FLOAT {
            p.report.gpu_us() / 1e3
        });
    api.doc("wall time of the profiled block, milliseconds").get(
        "wall_ms",
        ["p"],
        |p: &mut Profile| -> FLOAT { p.report.wall_us() / 1e3 },
    );
    let r = rt.clone();
    api.doc("writes the profile as a Chrome trace event file (chrome://tracing, Perfetto)")
        .volatile("save_trace", ["p", "path"], move |p: &mut Profile, path: &str| {
            save_trace(&r, p, path)
        });
}
