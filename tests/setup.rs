//! The README's set-up command installs the nightly toolchain `build.rs`
//! builds the GPU kernels with: the two name the same pinned date.

use std::path::Path;

/// The first `nightly-YYYY-MM-DD` in `text`.
fn pinned(text: &str) -> Option<&str> {
    text.match_indices("nightly-").find_map(|(i, _)| {
        let date = text.get(i + 8..i + 18)?;
        let ok = date.bytes().enumerate().all(|(k, b)| match k {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
        ok.then(|| &text[i..i + 18])
    })
}

#[test]
fn the_readme_installs_the_nightly_the_build_uses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../README.md")).unwrap();
    let build = std::fs::read_to_string(root.join("build.rs")).unwrap();
    let setup = &readme[readme.find("## Set up").expect("a Set up section")..];
    let command = setup
        .lines()
        .find(|l| l.starts_with("    rustup "))
        .expect("the set-up command");
    assert!(command.contains("--component rust-src"), "{command}");
    assert_eq!(pinned(command), pinned(&build), "README: {command}");
    assert!(pinned(&build).is_some(), "build.rs pins no nightly");
}
