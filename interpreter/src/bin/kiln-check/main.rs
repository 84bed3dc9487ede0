//! `kiln-check`: runs the CPU-vs-CUDA differential check on a GPU machine and
//! prints a table and `N passed, N failed` (exit code 1 on any failure).
//! `--csv FILE` also writes the table as CSV; `--failures` prints only failures;
//! `--resources` prints what the row and reduction kernels compiled to.
//! `--group NAME` (repeatable) runs only those groups of `check::GROUPS`;
//! `--cpu-only` runs both sides on the CPU (no GPU needed: errors and panics).

use std::io::Write;

mod check;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let csv = args
        .iter()
        .position(|a| a == "--csv")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let only_failures = args.iter().any(|a| a == "--failures");
    let cpu_only = args.iter().any(|a| a == "--cpu-only");
    check::CPU_ONLY.store(cpu_only, std::sync::atomic::Ordering::Relaxed);
    if cpu_only {
        eprintln!("kiln-check: --cpu-only: both sides on the CPU (a smoke run for errors and panics)");
    } else if let Err(e) = kiln::backend::cuda::CudaRuntime::get() {
        eprintln!("kiln-check: {e}");
        return std::process::ExitCode::FAILURE;
    }
    if args.iter().any(|a| a == "--resources") {
        match check::kernel_resources() {
            Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
            Err(e) => eprintln!("kiln-check: {e}"),
        }
    }
    let groups: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "--group")
        .map(|w| w[1].as_str())
        .collect();
    if let Some(g) = groups.iter().find(|g| !check::GROUPS.contains(g)) {
        eprintln!(
            "kiln-check: unknown group '{g}' (expected one of {})",
            check::GROUPS.join(", ")
        );
        return std::process::ExitCode::FAILURE;
    }
    let cases = if groups.is_empty() {
        check::run()
    } else {
        check::run_groups(&groups)
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:<16} {:<6} {:<22} {:>10}  result",
        "op", "dtype", "layout", "err/tol"
    );
    for c in &cases {
        if only_failures && c.passed() {
            continue;
        }
        let status = match (&c.error, c.passed()) {
            (Some(e), _) => format!("FAIL: {e}"),
            (None, true) => "ok".to_string(),
            (None, false) => "FAIL".to_string(),
        };
        let _ = writeln!(
            out,
            "{:<16} {:<6} {:<22} {:>10.3e}  {status}",
            c.op, c.dtype, c.layout, c.worst
        );
    }
    let passed = cases.iter().filter(|c| c.passed()).count();
    let failed = cases.len() - passed;
    let asynchrony = check::asynchrony();
    match &asynchrony {
        Ok(m) => {
            let _ = writeln!(out, "asynchrony: ok: {m}");
        }
        Err(m) => {
            let _ = writeln!(out, "asynchrony: FAIL: {m}");
        }
    }
    let engines = check::engines_on_threads();
    match &engines {
        Ok(m) => {
            let _ = writeln!(out, "engines on threads: ok: {m}");
        }
        Err(m) => {
            let _ = writeln!(out, "engines on threads: FAIL: {m}");
        }
    }
    let failed = failed + asynchrony.is_err() as usize + engines.is_err() as usize;
    let _ = writeln!(
        out,
        "{} passed, {failed} failed",
        passed + asynchrony.is_ok() as usize + engines.is_ok() as usize
    );
    if let Some(path) = csv {
        let mut s = String::from("op,dtype,layout,err_over_tol,passed\n");
        for c in &cases {
            s.push_str(&format!(
                "{},{},{},{:e},{}\n",
                c.op,
                c.dtype,
                c.layout,
                c.worst,
                c.passed()
            ));
        }
        let _ = std::fs::write(path, s);
    }
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}
