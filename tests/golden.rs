//! Golden-script tests: every `tests/scripts/NAME.rhai` runs in a fresh
//! interpreter and its printed output must equal `tests/scripts/NAME.out`
//! exactly. An uncaught script error is part of the output, as the line
//! `error: <message with position>`. Set `KILN_BLESS=1` to write missing
//! `.out` files (then check them by hand before committing). Reasons for an
//! unavailable device vary by machine and are replaced by `<reason>`.
//! Scripts that touch files get two constants: `TMP_DIR`, a fresh scratch
//! folder (shown as `<tmp>` in the output), and `DATA_DIR`, the repository's
//! `data/` folder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/scripts")
}

/// A scratch folder for one test run, emptied first.
fn tmp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs one script and returns everything it printed.
fn run_script(path: &Path, tmp: &Path) -> String {
    let out = Arc::new(Mutex::new(String::new()));
    let mut kiln = kiln::Interpreter::with_device(kiln::Device::Cpu).unwrap();
    let sink = out.clone();
    kiln.on_print(move |s| {
        let mut o = sink.lock().unwrap();
        o.push_str(s);
        o.push('\n');
    });
    kiln.set_args(vec!["first".into(), "second".into()]);
    let tmp_str = tmp.display().to_string();
    kiln.scope_mut().push_constant("TMP_DIR", tmp_str.clone());
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    kiln.scope_mut()
        .push_constant("DATA_DIR", data.display().to_string());
    let source = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    if let Err(e) = kiln.run(&source, &name) {
        out.lock().unwrap().push_str(&format!("error: {e}\n"));
    }
    let s = out.lock().unwrap().replace(&tmp_str, "<tmp>");
    normalize(&s)
}

/// Why a device is unavailable depends on the machine (no driver, no GPU, no
/// kernels in this build): golden files keep only that it is unavailable.
fn normalize(s: &str) -> String {
    s.lines()
        .map(|l| match l.find(" is not available: ") {
            Some(i) => format!("{} is not available: <reason>\n", &l[..i]),
            None => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn golden_scripts() {
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(scripts_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rhai"))
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty(), "no golden scripts found");
    let bless = std::env::var_os("KILN_BLESS").is_some();
    let tmp = tmp_dir();
    let mut failures = vec![];
    for script in &scripts {
        let expected_path = script.with_extension("out");
        let actual = run_script(script, &tmp);
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
                script.display()
            )),
            Err(_) if bless => std::fs::write(&expected_path, &actual).unwrap(),
            Err(_) => failures.push(format!(
                "{}: missing {}",
                script.display(),
                expected_path.display()
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(
        failures.is_empty(),
        "{} of {} golden scripts failed:\n\n{}",
        failures.len(),
        scripts.len(),
        failures.join("\n\n")
    );
}
