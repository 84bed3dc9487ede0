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

/// Runs the line REPL on `input` piped in.
fn piped(input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["--device", "cpu"])
        .env_remove("KILN_DEVICE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn repl_help_shows_docs_and_signatures_from_the_registry() {
    let o = piped(b":help softmax\n:help cuda::synchronize\n:help\n");
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        out.contains("  softmax(t: Tensor, dim: i64) -> Tensor\n      softmax along dim"),
        "{out}"
    );
    assert!(out.contains("  cuda::synchronize()\n      waits until"), "{out}");
    // the listing by group, from the registry, after the session's commands
    assert!(out.contains(":time EXPR"), "{out}");
    for line in [
        "  creation     tensor zeros ones",
        "  nn           softmax log_softmax layer_norm",
    ] {
        assert!(out.contains(line), "{line:?} not in {out}");
    }
}

#[test]
fn repl_skips_a_line_of_invalid_utf8_and_goes_on() {
    let o = piped(
        b"let x = 20;\nprint(\"a\xff\");\nx + 1\nfn f(t) {\n  t \xc3\n}\nx + 2\r\nprint(\"\xc3\xa9\")\n",
    );
    let err = stderr(&o);
    assert_eq!(stdout(&o), "21\n22\n\u{e9}\n", "{err}");
    assert!(
        err.contains("error: line 2: invalid UTF-8 (byte 9 of the line: 0xff); the line is skipped\n"),
        "{err}"
    );
    // inside an unfinished statement: that statement goes too, and its
    // last line is then input of its own
    assert!(
        err.contains("error: line 5: invalid UTF-8 (byte 5 of the line: 0xc3); the line is skipped (with the unfinished input before it)"),
        "{err}"
    );
    assert!(err.contains("error: <repl>:1:1: Unexpected '}'"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // the session reports the failure in its exit status
    assert_eq!(o.status.code(), Some(1));
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

/// The number after `key` on the last line of `out` that starts with it.
fn last_value(out: &str, key: &str) -> f64 {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no '{key}' in {out}"));
    line[key.len()..].trim().parse().unwrap()
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
    let last = |key: &str| last_value(&out, key);
    let acc = last("final test accuracy");
    assert!(acc >= 0.97, "accuracy {acc}:\n{out}");
    assert_eq!(last("reloaded test accuracy"), acc, "{out}");
}

#[test]
fn train_digits_cnn_reaches_98_percent() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let weights = std::env::temp_dir().join(format!("kiln-digits-cnn-{}.safetensors", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(root)
        .args([
            "--device",
            "cpu",
            "scripts/train_digits_cnn.rhai",
            "--epochs",
            "6",
        ])
        .args(["--out", weights.to_str().unwrap()])
        .env_remove("KILN_DEVICE")
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    std::fs::remove_file(&weights).ok();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let last = |key: &str| last_value(&out, key);
    let acc = last("final test accuracy");
    assert!(acc >= 0.98, "accuracy {acc}:\n{out}");
    // the running statistics travel with the weights
    assert_eq!(last("reloaded test accuracy"), acc, "{out}");
}

#[test]
fn train_gpt_tiny_beats_the_unigram_baseline() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(root)
        .args(["--device", "cpu", "scripts/train_gpt.rhai", "--size", "tiny"])
        .env_remove("KILN_DEVICE")
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let (unigram, val) = (
        last_value(&out, "unigram baseline"),
        last_value(&out, "final validation loss"),
    );
    // about 3.30 nats for the character frequencies alone; 200 steps of the
    // tiny model reach about 2.8
    assert!(
        val < unigram - 0.35,
        "validation loss {val} against the unigram baseline {unigram}:\n{out}"
    );
    // a sample of generated text follows the separator
    assert!(
        out.split("---\n").nth(1).is_some_and(|s| s.trim().len() > 20),
        "{out}"
    );
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

/// Runs `kiln launch ARGS` from the repository root, with the dist variables
/// of any outer run removed.
fn launch(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .arg("launch")
        .args(args)
        .env_remove("KILN_DEVICE")
        .env_remove("KILN_RANK")
        .env_remove("KILN_WORLD_SIZE")
        .env_remove("KILN_DIST_ADDR")
        .env("KILN_PROGRESS", "off")
        .env("KILN_DIST_TIMEOUT", "30")
        .output()
        .expect("run kiln launch")
}

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lines rank `r` printed, without the prefix.
fn rank_lines(out: &str, r: usize) -> Vec<String> {
    let prefix = format!("[rank {r}] ");
    out.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .collect()
}

const COLLECTIVES: &str = r#"
import "ddp" as ddp;
let r = dist::rank();
let w = dist::world_size();
let t = tensor([r + 1.0, 10.0 * r]);
dist::all_reduce(t, "sum");
print(`sum ${t.to_list()}`);
let m = tensor([[r * 2.0]], #{dtype: "f64"});
print(`mean ${dist::all_reduce(m, "mean").to_list()}`);
let hi = tensor([r, -r]);
dist::all_reduce(hi, "max");
let lo = tensor([r, -r]);
dist::all_reduce(lo, "min");
print(`max ${hi.to_list()} min ${lo.to_list()}`);
let b = full([2], r * 7).t();
dist::broadcast(b, w - 1);
print(`bcast ${b.to_list()}`);
let g = dist::all_gather(tensor([r, r * r], #{dtype: "i32"}));
print(`gather ${g.shape} ${g.dtype} ${g.to_list()}`);
let s = ddp::shard(6);
print(`shard ${s.start} ${s.len}`);
let p = full([2], r * 1.0).requires_grad(true);
p.sum().backward();
p.grad *= r + 1.0;
ddp::all_reduce_grads([p]);
ddp::broadcast_parameters([p], w - 1);
print(`grad ${p.grad.to_list()} param ${p.to_list()}`);
dist::barrier();
print(`done ${r}/${w}`);
"#;

#[test]
fn launch_runs_collectives_on_every_rank() {
    let dir = scratch("collectives");
    let script = dir.join("c.rhai");
    std::fs::write(&script, COLLECTIVES).unwrap();
    for (n, sum, mean, gather) in [
        (2, "[3.0, 10.0]", "[[1.0]]", "[[0, 0], [1, 1]]"),
        (3, "[6.0, 30.0]", "[[2.0]]", "[[0, 0], [1, 1], [2, 4]]"),
    ] {
        let o = launch(&["--nproc", &n.to_string(), script.to_str().unwrap()]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        for r in 0..n {
            let root = 7 * (n - 1);
            let expect = [
                format!("sum {sum}"),
                format!("mean {mean}"),
                format!("max [{}, 0] min [0, {}]", n - 1, -(n as i64 - 1)),
                format!("bcast [{root}, {root}]"),
                format!("gather [{n}, 2] i32 {gather}"),
                format!("shard {} {}", r * 6 / n, 6 / n),
                format!(
                    "grad [{g:?}, {g:?}] param [{q:?}, {q:?}]",
                    g = (n + 1) as f64 / 2.0,
                    q = (n - 1) as f64
                ),
                format!("done {r}/{n}"),
            ];
            assert_eq!(rank_lines(&out, r), expect, "rank {r} of {n}:\n{out}");
        }
    }
    // without the launcher: rank 0 of 1, every collective the identity
    let o = kiln(&[script.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "sum [1.0, 0.0]\nmean [[0.0]]\nmax [0, 0] min [0, 0]\nbcast [0, 0]\ngather [1, 2] i32 [[0, 0]]\nshard 0 6\ngrad [1.0, 1.0] param [0.0, 0.0]\ndone 0/1\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn launch_reports_mismatches_and_bad_arguments() {
    let dir = scratch("mismatch");
    let script = dir.join("m.rhai");
    std::fs::write(
        &script,
        "let t = zeros([dist::rank() + 1]);\ntry { dist::all_reduce(t, \"sum\"); } catch (e) { print(e); }\ndist::barrier();\nprint(\"after\");\n",
    )
    .unwrap();
    let o = launch(&["--nproc", "2", script.to_str().unwrap()]);
    assert!(!o.status.success());
    let out = stdout(&o);
    for r in 0..2 {
        let lines = rank_lines(&out, r);
        assert!(
            lines[0].contains("rank 0 called all_reduce(<f32 tensor of shape [1]>, \"sum\") (collective #0) but rank 1 called all_reduce(<f32 tensor of shape [2]>, \"sum\")"),
            "{out}"
        );
        assert!(!lines.iter().any(|l| l == "after"), "{out}");
    }
    assert!(stderr(&o).contains("failed earlier"), "{}", stderr(&o));
    let o = kiln(&["-e", "dist::all_reduce(ones([1]), \"median\")"]);
    assert!(
        stderr(&o).contains("<eval>:1:7: all_reduce: unknown op 'median'"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&["-e", "dist::all_reduce(arange(3), \"mean\")"]);
    assert!(
        stderr(&o).contains("needs a floating-point tensor"),
        "{}",
        stderr(&o)
    );
    let o = kiln(&["-e", "dist::broadcast(ones([1]), 1)"]);
    assert!(stderr(&o).contains("root 1 is not a rank"), "{}", stderr(&o));
    let o = launch(&["--nproc", "0", script.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("--nproc must be at least 1"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn launch_ends_the_other_ranks_when_one_fails() {
    let dir = scratch("fail");
    let script = dir.join("f.rhai");
    // rank 2 fails; ranks 0 and 1 would wait in the barrier for the timeout
    std::fs::write(
        &script,
        "if dist::rank() == 2 { throw \"boom\"; }\ndist::barrier();\nprint(\"unreachable\");\n",
    )
    .unwrap();
    let start = std::time::Instant::now();
    let o = launch(&["--nproc", "3", script.to_str().unwrap()]);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("[rank 2] error:"), "{err}");
    assert!(err.contains("boom"), "{err}");
    assert!(err.contains("kiln launch: rank 2 failed: exit code 1"), "{err}");
    assert!(!stdout(&o).contains("unreachable"), "{}", stdout(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ddp_on_two_ranks_matches_one_process() {
    let dir = scratch("ddp");
    let one = dir.join("one.safetensors");
    let two = dir.join("two.safetensors");
    let args = ["scripts/train_digits_ddp.rhai", "--epochs", "2", "--out"];
    // one process, no launcher: world size 1
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["--device", "cpu"])
        .args(args)
        .arg(&one)
        .env_remove("KILN_DEVICE")
        .env_remove("KILN_WORLD_SIZE")
        .env("KILN_PROGRESS", "off")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).starts_with("1 rank(s), global batch 64"),
        "{}",
        stdout(&o)
    );
    let o = launch(&[
        "--nproc",
        "2",
        "--device",
        "cpu",
        args[0],
        args[1],
        args[2],
        args[3],
        two.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("[rank 0] 2 rank(s), global batch 64 (32 rows per rank)"),
        "{out}"
    );
    assert!(out.contains("[rank 0] epoch 2: loss "), "{out}");
    assert!(rank_lines(&out, 1).is_empty(), "{out}");
    let diff = max_weight_diff(&one, &two);
    assert!(diff < 1e-4, "the weights differ by {diff}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The largest difference between the four tensors of two weight files.
fn max_weight_diff(a: &std::path::Path, b: &std::path::Path) -> f64 {
    let cmp = format!(
        "let a = load_safetensors(\"{}\"); let b = load_safetensors(\"{}\"); let m = 0.0; \
         for k in a.keys() {{ let d = (a[k] - b[k]).abs().max().item(); if d > m {{ m = d; }} }} \
         print(a.len()); print(m);",
        a.display(),
        b.display()
    );
    let o = kiln(&["-e", &cmp]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("4"), "{out}");
    lines.next().unwrap().parse().unwrap()
}

/// Runs train_digits_ddp.rhai for 2 epochs on `nproc` ranks (no launcher
/// for 1) with `extra` arguments, saving to `out`; returns rank 0's lines.
fn train_ddp(nproc: usize, extra: &[&str], out: &std::path::Path) -> Vec<String> {
    let mut args = vec![
        "--device",
        "cpu",
        "scripts/train_digits_ddp.rhai",
        "--epochs",
        "2",
    ];
    args.extend_from_slice(extra);
    args.push("--out");
    args.push(out.to_str().unwrap());
    let o = if nproc == 1 {
        Command::new(env!("CARGO_BIN_EXE_kiln"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .args(&args)
            .env_remove("KILN_DEVICE")
            .env_remove("KILN_WORLD_SIZE")
            .env_remove("KILN_DIST_BACKEND")
            .env("KILN_PROGRESS", "off")
            .output()
            .expect("run kiln")
    } else {
        let n = nproc.to_string();
        let mut all = vec!["--nproc", &n];
        all.extend_from_slice(&args);
        launch(&all)
    };
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    if nproc == 1 {
        out.lines().map(str::to_string).collect()
    } else {
        assert!(rank_lines(&out, 1).is_empty(), "{out}");
        rank_lines(&out, 0)
    }
}

#[test]
fn ddp_reducer_matches_all_reduce_grads_and_one_process() {
    let dir = scratch("reducer");
    for (nproc, batch) in [(2, "64"), (3, "48")] {
        let one = dir.join(format!("one-{batch}.safetensors"));
        let red = dir.join(format!("red-{nproc}.safetensors"));
        let each = dir.join(format!("each-{nproc}.safetensors"));
        let lines = train_ddp(1, &["--batch", batch], &one);
        assert_eq!(lines[1], "gradients: reducer, 1 bucket(s) of [9610] elements");
        // a bucket of 0.02 MiB holds the last three parameters, not the first
        let lines = train_ddp(nproc, &["--batch", batch, "--bucket-mb", "0.02"], &red);
        assert_eq!(
            lines[1], "gradients: reducer, 2 bucket(s) of [1418, 8192] elements",
            "{lines:?}"
        );
        let lines = train_ddp(nproc, &["--batch", batch, "--sync", "all_reduce"], &each);
        assert_eq!(lines[1], "gradients: all_reduce_grads");
        // the same collectives' results, reduced in rank order: the same bits
        assert_eq!(max_weight_diff(&red, &each), 0.0, "{nproc} ranks");
        let diff = max_weight_diff(&one, &red);
        assert!(diff < 1e-4, "{nproc} ranks: the weights differ by {diff}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

const REDUCER: &str = r#"
import "ddp" as ddp;
fn loss_of(x, w1, b1, w2) {
    (x.matmul(w1) + b1).relu().matmul(w2).pow(2).mean()
}
fn grads(params) {
    params.map(|p| if type_of(p.grad) == "()" { () } else { p.grad.clone() })
}
fn max_diff(a, b) {
    let m = 0.0;
    for i in 0..a.len() {
        if type_of(a[i]) != type_of(b[i]) { return -1.0; }
        if type_of(a[i]) != "()" {
            let d = (a[i] - b[i]).abs().max().item();
            if d > m { m = d; }
        }
    }
    m
}
seed(1);
let w1 = randn([5, 4]).requires_grad(true);
let b1 = randn([4]).requires_grad(true);
let unused = ones([2]).requires_grad(true);
let w2 = randn([4, 3]).requires_grad(true);
let params = [w1, b1, unused, w2];
// copies outside the reducer, for ddp::all_reduce_grads
let copies = params.map(|p| p.detach().clone().requires_grad(true));
// 13 floats a bucket: [w2], [unused, b1], [w1]
let red = ddp::reducer(params, #{bucket_mb: 52.0 / 1048576.0});
print(`${type_of(red)} ${red.num_buckets} ${red.bucket_sizes}`);
seed(10 + dist::rank());
let x = randn([6, 5]);
for step in 0..2 {
    for p in params { p.zero_grad(); }
    loss_of(x, w1, b1, w2).backward();
    let plain = grads(params);
    red.wait();
    let reduced = grads(params);
    for p in copies { p.zero_grad(); }
    loss_of(x, copies[0], copies[1], copies[3]).backward();
    ddp::all_reduce_grads(copies);
    print(`step ${step}: vs all_reduce_grads ${max_diff(reduced, grads(copies))} vs plain ${max_diff(reduced, plain)} unused ${type_of(unused.grad)}`);
}
loss_of(x, w1, b1, w2).backward();
try { loss_of(x, w1, b1, w2).backward(); } catch (e) { print(e); }
red.wait();
dist::barrier();
print("done");
"#;

/// The numbers after "vs all_reduce_grads" and "vs plain" in a step line.
fn step_diffs(line: &str) -> (f64, f64) {
    let num = |key: &str| -> f64 {
        let rest = &line[line.find(key).unwrap_or_else(|| panic!("{line}")) + key.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (num("vs all_reduce_grads "), num("vs plain "))
}

#[test]
fn reducer_grads_equal_all_reduce_grads_on_every_rank() {
    let dir = scratch("reducer-grads");
    let script = dir.join("r.rhai");
    std::fs::write(&script, REDUCER).unwrap();
    let double = "reducer: parameter 3 got a second gradient in one round (backward() ran again before wait()); call wait() after each backward()";
    for n in [2, 3] {
        let o = launch(&[
            "--nproc",
            &n.to_string(),
            "--device",
            "cpu",
            script.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
        let out = stdout(&o);
        for r in 0..n {
            let lines = rank_lines(&out, r);
            assert_eq!(
                lines.len(),
                5,
                "rank {r} of {n}:
{out}"
            );
            assert_eq!(lines[0], "Reducer 3 [12, 6, 20]");
            for line in &lines[1..3] {
                let (each, plain) = step_diffs(line);
                assert_eq!(each, 0.0, "{line}");
                // the ranks' data differ: the average is not this rank's gradient
                assert!(plain > 1e-3, "{line}");
                assert!(line.ends_with("unused ()"), "{line}");
            }
            assert!(lines[3].contains(double), "{}", lines[3]);
            assert_eq!(lines[4], "done");
        }
    }
    // one process, the whole path forced: the gradients of plain backward
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["--device", "cpu", script.to_str().unwrap()])
        .env_remove("KILN_DEVICE")
        .env_remove("KILN_WORLD_SIZE")
        .env("KILN_DIST_BACKEND", "host")
        .output()
        .expect("run kiln");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    for line in &lines[1..3] {
        assert_eq!(step_diffs(line), (0.0, 0.0), "{line}");
        assert!(line.ends_with("unused ()"), "{line}");
    }
    assert!(lines[3].contains(double), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `kiln script | head -1`: the closed pipe ends the script quietly, with no
/// panic from a failed `print`.
#[test]
fn closed_stdout_ends_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["--device", "cpu", "-e", "for i in 0..100000000 { print(i); }"])
        .env_remove("KILN_DEVICE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kiln");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "0\n");
    // the reader is dropped: stdout is closed
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.status.success() || err.is_empty(), "{err}");
}

/// Errors raised inside module functions (`linalg::`, `cuda::`) carry the
/// call's line and column, as other functions' errors do.
#[test]
fn module_function_errors_have_positions() {
    let o = kiln(&[
        "--device",
        "cpu",
        "-e",
        "let x = 1;\nlet a = linalg::inv(ones([2, 3]));",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    // the position of the function's name, as Rhai gives for a function not found
    assert!(err.contains("<eval>:2:17:"), "{err}");
    assert!(err.contains("inv: expects square matrices"), "{err}");
    let o = kiln(&[
        "--device",
        "cpu",
        "-e",
        "let x = 1;\n\nlet g = cuda::graph(|| 1);",
    ]);
    let err = stderr(&o);
    assert!(err.contains("<eval>:3:15:"), "{err}");
    assert!(err.contains("cuda::graph: this engine runs on the cpu"), "{err}");
}
