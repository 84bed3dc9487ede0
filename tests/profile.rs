//! The op profiler from scripts (`profile(|| …)`) on the CPU: calls counted
//! per function and per autograd node, self times within totals, the table,
//! the rows, the block's value, the Chrome trace file, and clear errors.

use kiln::{Device, Interpreter};
use rhai::{Array, Dynamic, Map};

fn cpu() -> Interpreter {
    Interpreter::builder()
        .device(Device::Cpu)
        .allow_files(true)
        .build()
        .unwrap()
}

/// The row of `name` in a profile's `rows`.
fn row(rows: &Array, name: &str) -> Map {
    rows.iter()
        .map(|r| r.clone().cast::<Map>())
        .find(|r| r["name"].clone().into_string().unwrap() == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

fn float(m: &Map, key: &str) -> f64 {
    m[key].as_float().unwrap()
}

#[test]
fn calls_are_counted_per_function_and_autograd_node() {
    let mut k = cpu();
    let _ = k.run(
        "let x = randn([32, 32]).requires_grad(true);
         let p = profile(|| { let y = 0; for i in 0..7 { y = (x @ x).relu(); } let s = y.sum(); s.backward(); s.item() });",
        "setup",
    )
    .unwrap();
    let rows: Array = k.eval("p.rows").unwrap();
    assert_eq!(row(&rows, "@")["calls"].as_int().unwrap(), 7);
    assert_eq!(row(&rows, "relu")["calls"].as_int().unwrap(), 7);
    assert_eq!(row(&rows, "item")["calls"].as_int().unwrap(), 1);
    // backward is one call, and its nodes are spans inside it
    let backward = row(&rows, "backward");
    let node = row(&rows, "matmul_backward");
    assert_eq!(node["calls"].as_int().unwrap(), 1);
    assert!(float(&backward, "host_total_ms") >= float(&node, "host_total_ms"));
    assert!(
        float(&backward, "host_self_ms")
            <= float(&backward, "host_total_ms") - float(&node, "host_total_ms") + 1e-6
    );
    for r in &rows {
        let r = r.clone().cast::<Map>();
        assert!(float(&r, "host_self_ms") <= float(&r, "host_total_ms") + 1e-9);
        assert_eq!(float(&r, "gpu_total_ms"), 0.0, "no GPU times on the CPU");
    }
    // the block's value, and the totals
    let value: f64 = k.eval("p.value").unwrap();
    assert!(value.is_finite());
    let (host, wall): (f64, f64) = (k.eval("p.host_ms").unwrap(), k.eval("p.wall_ms").unwrap());
    assert!(host > 0.0 && host <= wall, "{host} {wall}");
}

#[test]
fn the_table_prints_and_takes_options() {
    let mut k = cpu();
    let _ = k.run("let p = profile(|| { let a = ones([4]); for i in 0..3 { a = a.exp() + 1; } a }, #{sort_by: \"calls\", row_limit: 2});", "setup")
        .unwrap();
    let table: String = k.eval("p.to_string()").unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("Name") && lines[0].contains("Host self"),
        "{table}"
    );
    // sorted by calls: exp and + (3 each) before ones (1); two rows shown
    assert!(
        lines[2].starts_with("+") || lines[2].starts_with("exp"),
        "{table}"
    );
    assert!(
        table.contains("(1 more rows)") && table.contains("Host time total"),
        "{table}"
    );
    let all: String = k.eval("p.table(#{row_limit: 0})").unwrap();
    assert!(all.contains("ones") && !all.contains("GPU self"), "{all}");
    let value: Dynamic = k.eval("p.value").unwrap();
    assert!(value.is::<kiln::Tensor>());
}

#[test]
fn the_trace_is_a_chrome_trace_event_file() {
    let dir = std::env::temp_dir().join(format!("kiln-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.json").display().to_string().replace('\\', "/");
    let mut k = cpu();
    let _ = k
        .run(
            &format!("let p = profile(|| zeros([3]).sum(), #{{trace: \"{path}\"}});"),
            "setup",
        )
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let spans: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(spans, ["zeros", "sum"]);
    assert!(events
        .iter()
        .all(|e| e["ph"] != "X" || e["dur"].as_f64().unwrap() >= 0.0));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_use_is_a_clear_error_and_recording_stops() {
    let mut k = cpu();
    let nested = k
        .eval::<Dynamic>("profile(|| profile(|| 1))")
        .unwrap_err()
        .to_string();
    assert!(nested.contains("already recording"), "{nested}");
    let option = k
        .eval::<Dynamic>("profile(|| 1, #{sort: \"calls\"})")
        .unwrap_err()
        .to_string();
    assert!(option.contains("unknown option 'sort'"), "{option}");
    let sort = k
        .eval::<Dynamic>("profile(|| 1, #{sort_by: \"speed\"})")
        .unwrap_err()
        .to_string();
    assert!(sort.contains("unknown sort_by"), "{sort}");
    // an error inside the block comes out, and a later profile records again
    let inner = k
        .eval::<Dynamic>("profile(|| zeros([2]) @ zeros([3]))")
        .unwrap_err()
        .to_string();
    assert!(inner.contains("matmul") || inner.contains("@"), "{inner}");
    let calls: i64 = k.eval("profile(|| ones([1])).rows[0].calls").unwrap();
    assert_eq!(calls, 1);
    let files = Interpreter::builder()
        .device(Device::Cpu)
        .build()
        .unwrap()
        .eval::<Dynamic>("profile(|| 1, #{trace: \"t.json\"})");
    assert!(
        files.unwrap_err().to_string().contains("file"),
        "file access is off by default"
    );
}
