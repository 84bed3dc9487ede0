//! Tests of the `kiln` binary: the issue's examples, exit codes, error
//! positions, script arguments, `--device`, the line REPL on piped input, and
//! that no input reaches a Rust panic.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .env_remove("KILN_DEVICE")
        .output()
        .expect("run kiln")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn issue_examples() {
    let o = kiln(&["-e", "print((ones([2,3]) @ ones([3,4])).sum().item())"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "24.0\n");
    let o = kiln(&["-e", "print(tensor([[1,2],[3,4]]).t().contiguous().to_list())"]);
    assert_eq!(stdout(&o), "[[1, 3], [2, 4]]\n");
}

#[test]
fn version_and_help() {
    let o = kiln(&["--version"]);
    assert!(o.status.success());
    assert!(stdout(&o).starts_with("kiln "), "{}", stdout(&o));
    let o = kiln(&["--help"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("--device"));
    assert!(stdout(&o).contains("--eval"));
}

#[test]
fn script_file_with_arguments_and_error_position() {
    let dir = std::env::temp_dir().join(format!("kiln-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = dir.join("ok.rhai");
    std::fs::write(&ok, "print(args());\nprint(ARGS.len());\n").unwrap();
    let o = kiln(&[ok.to_str().unwrap(), "a", "--b", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "[\"a\", \"--b\", \"3\"]\n3\n");

    let bad = dir.join("bad.rhai");
    std::fs::write(&bad, "let a = ones([2, 3]);\nlet b = ones([4]);\nprint(a + b);\n").unwrap();
    let o = kiln(&[bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bad.rhai:3:9:"), "{err}");
    assert!(err.contains("[2, 3] and [4]"), "{err}");

    let syntax = dir.join("syntax.rhai");
    std::fs::write(&syntax, "let a = ;\n").unwrap();
    let o = kiln(&[syntax.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("syntax.rhai:1:"), "{}", stderr(&o));

    let o = kiln(&[dir.join("missing.rhai").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read script"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn eval_error_exits_nonzero_with_position() {
    let o = kiln(&["-e", "let x = 1;\nones([2]).reshape([3])"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.starts_with("error: <eval>:2:"), "{err}");
    assert!(err.contains("reshape"), "{err}");
}

#[test]
fn device_selection() {
    let o = kiln(&["--device", "cpu", "-e", "print(ones([1]).device)"]);
    assert_eq!(stdout(&o), "cpu\n");
    let o = kiln(&["--device", "cuda", "-e", "print(1)"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cuda:0 is not available"), "{}", stderr(&o));
    let o = kiln(&["--device", "tpu", "-e", "print(1)"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown device 'tpu'"), "{}", stderr(&o));
}

#[test]
fn repl_on_piped_input_keeps_state_and_survives_errors() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"let x = arange(4);\nfn twice(t) { t * 2 }\nx + ones([5])\ntwice(x).to_list()\nx.sum().item()\n",
        )
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(stdout(&o), "[0, 2, 4, 6]\n6\n");
    assert!(stderr(&o).contains("<repl>:1:"), "{}", stderr(&o));
}

#[test]
fn no_input_reaches_a_panic() {
    let cases = [
        "ones([2,3]) @ ones([2,3])",
        "zeros([-1])",
        "zeros(\"abc\")",
        "tensor([[1,2],[3]])",
        "tensor([]).max()",
        "arange(0, 10, 0)",
        "ones([2]).reshape([-1, -1])",
        "ones([2, 3]).permute([0, 0])",
        "ones([2, 3]).transpose(0, 5)",
        "ones([3])[7]",
        "ones([3]).narrow(0, 2, 5)",
        "ones([3]).slice(0, 0, 3, 0)",
        "ones([3]).expand([2, 4])",
        "let x = ones([3]).expand([2, 3]); x += 1",
        "let x = arange(3); x /= 2",
        "arange(3) % 0",
        "arange(3) ** -1",
        "tensor([true]) - tensor([true])",
        "ones([2]).to(\"f8\")",
        "ones([2]).to(\"cuda\")",
        "ones([2], #{dtype: \"nope\"})",
        "ones([2], #{colour: \"red\"})",
        "randint(5, 1, [2])",
        "linspace(0, 1, -3)",
        "cat([], 0)",
        "stack([ones([2]), ones([3])])",
        "ones([2,3]).layer_norm([4])",
        "ones([2]).softmax(3)",
        "ones([2, 2]).bmm(ones([2, 2]))",
        "tensor(1.0)[0]",
        "ones([0]).argmax()",
        "ones([2]).item()",
        "ones([2, 3]).t().view([6])",
        "eye(-2)",
        "ones([1 << 62, 1 << 62])",
        "tensor([1, 2]).sum([0, 0])",
        "where(ones([2]) > 0, ones([3]), 0)",
        "ones([2, 3]).index_select(0, [2])",
        "ones([2, 3]).index_select(5, [0])",
        "ones([2, 3]).index_select(0, ones([1]))",
        "ones([2, 3]).index_select(0, [[0]])",
        "ones([2, 3]).gather(1, [0])",
        "ones([2, 3]).gather(1, [[7]])",
        "ones([2, 3]).scatter_add(0, [[0]], ones([0, 0]))",
        "ones([2, 3]).index_add(0, [0], ones([2, 3]))",
        "randperm(-5)",
        "cuda::device_name()",
    ];
    for code in cases {
        let o = kiln(&["-e", code]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "`{code}` should fail cleanly: {err}");
        assert!(err.starts_with("error: <eval>:"), "`{code}`: {err}");
        assert!(!err.contains("panicked"), "`{code}` panicked: {err}");
    }
}

#[test]
fn progress_on_piped_output_writes_plain_lines_to_stderr() {
    let script = "let p = progress(20, #{desc: \"epoch\"}); \
                  for i in 0..20 { p.tick(); p.set(\"loss\", 1.0 / (i + 1)); } \
                  p.message(\"ok\"); p.finish(); print(p.pos);";
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["-e", script])
        .env_remove("KILN_DEVICE")
        .env_remove("KILN_PROGRESS")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}", stderr(&o));
    // stdout holds only what the script printed
    assert_eq!(stdout(&o), "20\n");
    let err = stderr(&o);
    assert!(!err.contains('\x1b'), "escape codes in {err:?}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 10, "{err}");
    assert!(lines[0].starts_with("epoch: 2/20 (10%) "), "{}", lines[0]);
    // the tick comes before the metric of that step
    assert!(lines[0].ends_with(", loss=1"), "{}", lines[0]);
    assert!(lines[9].starts_with("epoch: 20/20 (100%) "), "{}", lines[9]);
    assert!(lines[9].ends_with(", loss=0.05, ok"), "{}", lines[9]);
    let off = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["-e", script])
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    assert_eq!(stderr(&off), "");
}

#[test]
fn files_load_relative_to_the_working_directory() {
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["-e", "print(load_csv(\"data/digits.csv.gz\").shape)"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .env_remove("KILN_DEVICE")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "[1797, 65]\n");
}

#[test]
fn train_digits_reaches_97_percent() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let weights = std::env::temp_dir().join(format!("kiln-digits-{}.safetensors", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(root)
        .args(["--device", "cpu", "scripts/train_digits.rhai"])
        .args(["--out", weights.to_str().unwrap()])
        .env_remove("KILN_DEVICE")
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    std::fs::remove_file(&weights).ok();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let last = |key: &str| -> f64 {
        let line = out
            .lines()
            .rev()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no '{key}' in {out}"));
        line[key.len()..].trim().parse().unwrap()
    };
    let acc = last("final test accuracy");
    assert!(acc >= 0.97, "accuracy {acc}:\n{out}");
    assert_eq!(last("reloaded test accuracy"), acc, "{out}");
}

#[test]
fn iris_reaches_90_percent() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(root)
        .args(["--device", "cpu", "scripts/iris.rhai"])
        .env_remove("KILN_DEVICE")
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("train 120 rows, test 30 rows\n"), "{out}");
    assert!(out.contains("\nepoch 10: loss "), "{out}");
    let acc: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("final test accuracy "))
        .unwrap_or_else(|| panic!("no final accuracy in {out}"))
        .trim()
        .parse()
        .unwrap();
    assert!(acc >= 0.9, "accuracy {acc}:\n{out}");
}
