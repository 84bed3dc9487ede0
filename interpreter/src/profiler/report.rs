//! What a profiling session recorded: the spans, their rows per name (as
//! `torch.profiler`'s `key_averages()`), the table printed from them, and a
//! Chrome trace event file (`chrome://tracing`, Perfetto).

use crate::core::error::{Error, Result};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// One finished span; times in microseconds from the session's start.
#[derive(Clone, Debug)]
pub(super) struct Span {
    pub name: Arc<str>,
    pub parent: Option<usize>,
    pub start_us: f64,
    pub host_us: f64,
    /// (start on the host's clock, duration) of its device work.
    pub gpu: Option<(f64, f64)>,
    /// Net change of the GPU memory held by tensors.
    pub mem_bytes: i64,
}

/// The spans of one name, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The span name: a script function (`matmul`, `cuda::synchronize`)
    /// or an autograd node (`matmul_backward`).
    pub name: Arc<str>,
    /// How many spans had the name.
    pub calls: usize,
    /// Host time inside the calls, less the time of spans nested in them.
    pub host_self_us: f64,
    /// Host time inside the calls.
    pub host_total_us: f64,
    /// Device time of the calls, less that of spans nested in them.
    pub gpu_self_us: f64,
    /// Device time of the calls.
    pub gpu_total_us: f64,
    /// Net bytes of GPU memory the calls left allocated, less nested spans'.
    pub mem_self_bytes: i64,
}

/// The order of a table's rows (largest first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    /// Host time less nested spans'.
    HostSelf,
    /// Host time.
    HostTotal,
    /// Device time less nested spans'.
    GpuSelf,
    /// Device time.
    GpuTotal,
    /// Number of calls.
    Calls,
    /// GPU memory left allocated (its size, either sign).
    Memory,
}

impl SortBy {
    /// Parses `host_self`, `host_total`, `gpu_self`, `gpu_total`, `calls`,
    /// `memory` (PyTorch's `self_cpu_time_total`, `cpu_time_total`,
    /// `self_cuda_time_total`, `cuda_time_total` and `count` too).
    pub fn parse(s: &str) -> Result<SortBy> {
        Ok(match s {
            "host_self" | "self_cpu_time_total" => SortBy::HostSelf,
            "host_total" | "cpu_time_total" => SortBy::HostTotal,
            "gpu_self" | "self_cuda_time_total" => SortBy::GpuSelf,
            "gpu_total" | "cuda_time_total" => SortBy::GpuTotal,
            "calls" | "count" => SortBy::Calls,
            "memory" | "self_cuda_memory_usage" => SortBy::Memory,
            other => {
                return Err(Error::invalid(
                    "profile",
                    format!("unknown sort_by \"{other}\" (expected host_self, host_total, gpu_self, gpu_total, calls, memory)"),
                ))
            }
        })
    }
}

/// A finished profile.
#[derive(Clone, Debug)]
pub struct Report {
    spans: Vec<Span>,
    wall_us: f64,
    gpu: bool,
}

impl Report {
    pub(super) fn new(spans: Vec<Span>, wall_us: f64, gpu: bool) -> Report {
        Report { spans, wall_us, gpu }
    }

    /// True when device times were recorded (CUDA was in use).
    pub fn has_gpu_times(&self) -> bool {
        self.gpu
    }

    /// Wall time of the session, microseconds.
    pub fn wall_us(&self) -> f64 {
        self.wall_us
    }

    /// Host time of the outermost spans, microseconds.
    pub fn host_us(&self) -> f64 {
        self.spans
            .iter()
            .filter(|s| s.parent.is_none())
            .map(|s| s.host_us)
            .sum()
    }

    /// Device time of the outermost spans, microseconds.
    pub fn gpu_us(&self) -> f64 {
        self.spans
            .iter()
            .filter(|s| s.parent.is_none())
            .filter_map(|s| s.gpu.map(|g| g.1))
            .sum()
    }

    /// One row per span name, sorted by `sort` (largest first, then by name).
    pub fn rows(&self, sort: SortBy) -> Vec<Row> {
        // what each span's children took, to subtract for self times
        let mut child = vec![(0.0f64, 0.0f64, 0i64); self.spans.len()];
        for s in &self.spans {
            if let Some(p) = s.parent {
                child[p].0 += s.host_us;
                child[p].1 += s.gpu.map_or(0.0, |g| g.1);
                child[p].2 += s.mem_bytes;
            }
        }
        let mut by_name: HashMap<Arc<str>, Row> = HashMap::new();
        for (s, c) in self.spans.iter().zip(&child) {
            let row = by_name.entry(s.name.clone()).or_insert_with(|| Row {
                name: s.name.clone(),
                calls: 0,
                host_self_us: 0.0,
                host_total_us: 0.0,
                gpu_self_us: 0.0,
                gpu_total_us: 0.0,
                mem_self_bytes: 0,
            });
            let gpu = s.gpu.map_or(0.0, |g| g.1);
            row.calls += 1;
            row.host_total_us += s.host_us;
            row.host_self_us += (s.host_us - c.0).max(0.0);
            row.gpu_total_us += gpu;
            row.gpu_self_us += (gpu - c.1).max(0.0);
            row.mem_self_bytes += s.mem_bytes - c.2;
        }
        let mut rows: Vec<Row> = by_name.into_values().collect();
        let key = |r: &Row| -> f64 {
            match sort {
                SortBy::HostSelf => r.host_self_us,
                SortBy::HostTotal => r.host_total_us,
                SortBy::GpuSelf => r.gpu_self_us,
                SortBy::GpuTotal => r.gpu_total_us,
                SortBy::Calls => r.calls as f64,
                SortBy::Memory => r.mem_self_bytes.unsigned_abs() as f64,
            }
        };
        rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
        rows
    }

    /// The default order: device self time when there is one, else host
    /// self time.
    pub fn default_sort(&self) -> SortBy {
        if self.gpu {
            SortBy::GpuSelf
        } else {
            SortBy::HostSelf
        }
    }

    /// The rows as a text table (at most `limit` rows; 0: all), with the
    /// totals under it.
    pub fn table(&self, sort: SortBy, limit: usize) -> String {
        let rows = self.rows(sort);
        let shown = if limit == 0 {
            rows.len()
        } else {
            limit.min(rows.len())
        };
        let width = rows[..shown]
            .iter()
            .map(|r| r.name.chars().count())
            .max()
            .unwrap_or(4)
            .clamp(4, 48);
        let mut out = String::new();
        let _ = write!(
            out,
            "{:<width$}  {:>6}  {:>10}  {:>10}  {:>10}",
            "Name", "Calls", "Host self", "Host total", "Host avg"
        );
        if self.gpu {
            let _ = write!(
                out,
                "  {:>10}  {:>10}  {:>10}  {:>10}",
                "GPU self", "GPU total", "GPU avg", "GPU mem"
            );
        }
        out.push('\n');
        let rule = out.trim_end().chars().count();
        out.push_str(&"-".repeat(rule));
        out.push('\n');
        for r in &rows[..shown] {
            let name: String = if r.name.chars().count() > width {
                r.name.chars().take(width - 1).chain(['…']).collect()
            } else {
                r.name.to_string()
            };
            let n = r.calls.max(1) as f64;
            let _ = write!(
                out,
                "{name:<width$}  {:>6}  {:>10}  {:>10}  {:>10}",
                r.calls,
                time(r.host_self_us),
                time(r.host_total_us),
                time(r.host_total_us / n)
            );
            if self.gpu {
                let _ = write!(
                    out,
                    "  {:>10}  {:>10}  {:>10}  {:>10}",
                    time(r.gpu_self_us),
                    time(r.gpu_total_us),
                    time(r.gpu_total_us / n),
                    bytes(r.mem_self_bytes)
                );
            }
            out.push('\n');
        }
        if shown < rows.len() {
            let _ = writeln!(out, "({} more rows)", rows.len() - shown);
        }
        out.push_str(&"-".repeat(rule));
        let _ = write!(
            out,
            "\nHost time total: {}; wall time: {}",
            time(self.host_us()),
            time(self.wall_us)
        );
        if self.gpu {
            let _ = write!(out, "; GPU time total: {}", time(self.gpu_us()));
        }
        out
    }

    /// The spans as a Chrome trace event file (JSON): a host row and, with
    /// device times, a GPU row; times in microseconds.
    pub fn chrome_trace(&self) -> String {
        let mut events = vec![
            serde_json::json!({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "kiln"}}),
            serde_json::json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "host"}}),
        ];
        if self.gpu {
            events.push(serde_json::json!({"name": "thread_name", "ph": "M", "pid": 0, "tid": 1, "args": {"name": "GPU stream"}}));
        }
        for s in &self.spans {
            events.push(serde_json::json!({
                "name": &*s.name, "cat": "op", "ph": "X", "pid": 0, "tid": 0,
                "ts": s.start_us, "dur": s.host_us,
                "args": {"gpu_memory_bytes": s.mem_bytes},
            }));
            if let Some((start, dur)) = s.gpu {
                events.push(serde_json::json!({
                    "name": &*s.name, "cat": "gpu", "ph": "X", "pid": 0, "tid": 1,
                    "ts": start, "dur": dur,
                }));
            }
        }
        serde_json::json!({"traceEvents": events, "displayTimeUnit": "ms"}).to_string()
    }
}

/// Microseconds as a short time: `812.000us`, `3.412ms`, `1.203s`.
fn time(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{us:.3}us")
    }
}

/// Bytes as a short size: `0 B`, `1.50 MB`, `-12.00 KB`.
fn bytes(b: i64) -> String {
    let a = b.unsigned_abs() as f64;
    let sign = if b < 0 { "-" } else { "" };
    if a >= 1e9 {
        format!("{sign}{:.2} GB", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.2} MB", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.2} KB", a / 1e3)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, parent: Option<usize>, start: f64, host: f64, gpu: Option<(f64, f64)>) -> Span {
        Span {
            name: Arc::from(name),
            parent,
            start_us: start,
            host_us: host,
            gpu,
            mem_bytes: 0,
        }
    }

    #[test]
    fn self_times_subtract_children_and_the_table_lists_every_name() {
        let r = Report::new(
            vec![
                span("backward", None, 0.0, 100.0, Some((0.0, 80.0))),
                span("matmul_backward", Some(0), 10.0, 30.0, Some((5.0, 50.0))),
                span("add", None, 120.0, 5.0, Some((90.0, 2.0))),
            ],
            200.0,
            true,
        );
        let rows = r.rows(SortBy::GpuSelf);
        assert_eq!(rows[0].name.as_ref(), "matmul_backward");
        let b = rows.iter().find(|r| r.name.as_ref() == "backward").unwrap();
        assert_eq!(
            (b.host_self_us, b.gpu_self_us, b.gpu_total_us),
            (70.0, 30.0, 80.0)
        );
        assert_eq!((r.host_us(), r.gpu_us()), (105.0, 82.0));
        let t = r.table(SortBy::GpuSelf, 0);
        for name in [
            "matmul_backward",
            "backward",
            "add",
            "GPU self",
            "Host time total: 105.000us",
        ] {
            assert!(t.contains(name), "{t}");
        }
        assert!(r.table(SortBy::Calls, 1).contains("(2 more rows)"));
        let trace: serde_json::Value = serde_json::from_str(&r.chrome_trace()).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        // three host spans, three GPU spans, three name records
        assert_eq!(events.len(), 9);
        assert!(SortBy::parse("gpu_total").is_ok() && SortBy::parse("speed").is_err());
    }
}
