//! The layer rule, checked on the source: dependencies run one way,
//! `script → tensor → backend → core` (with `io`, `dist` and `progress`
//! beside `script`, above `tensor`, and `profiler` beside `backend`). A file of a lower layer that names a
//! higher one (`crate::tensor::…` inside `backend/`, say) fails this test, so
//! an import circle cannot come back unnoticed.

use std::path::{Path, PathBuf};

/// The library's top-level modules, lowest first; a module may name only
/// modules of a lower or equal rank.
const RANKS: &[(&str, u32)] = &[
    ("core", 0),
    ("backend", 1),
    ("profiler", 1),
    ("tensor", 2),
    ("io", 3),
    ("progress", 3),
    ("dist", 4),
    ("script", 5),
    ("engine", 6),
];

fn rank(module: &str) -> Option<u32> {
    RANKS.iter().find(|(m, _)| *m == module).map(|&(_, r)| r)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a line: what precedes a `//` comment.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// Every `crate::NAME` (or `$crate::NAME`) the code of `text` names.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = code(line);
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.push((n + 1, name));
            rest = after;
        }
    }
    found
}

#[test]
fn lower_layers_never_name_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    for (module, own) in RANKS {
        let dir = src.join(module);
        let mut files = Vec::new();
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        for path in files {
            let text = std::fs::read_to_string(&path).expect("readable source");
            for (line, name) in named_modules(&text) {
                if let Some(theirs) = rank(&name) {
                    if theirs > *own {
                        let shown = path.strip_prefix(&src).unwrap_or(&path).display().to_string();
                        violations.push(format!(
                            "{shown}:{line}: `{module}` names the higher layer `{name}`"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layer violations:\n{}",
        violations.join("\n")
    );
}

#[test]
fn every_library_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    for line in lib.lines() {
        let line = code(line).trim();
        let Some(rest) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
        else {
            continue;
        };
        let name = rest.trim_end_matches(';').trim();
        assert!(
            rank(name).is_some(),
            "lib.rs declares `{name}`, which has no place in RANKS"
        );
    }
}

#[test]
fn the_scan_sees_a_violation() {
    let found =
        named_modules("use crate::tensor::Tensor; // crate::script\nlet x = $crate::core::DType::F32;");
    assert_eq!(found, [(1, "tensor".to_string()), (2, "core".to_string())]);
}
