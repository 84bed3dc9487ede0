//! The interactive session driven through a pseudo-terminal, as a person
//! would use it: multi-line input, value echo, completion, errors with a
//! caret, a line of invalid UTF-8, Ctrl-C on a running loop, history across
//! sessions, imports that last, and the `:` commands. Every wait has a generous timeout and none assumes a timing.

use rexpect::reader::Options;
use rexpect::session::PtySession;
use std::path::{Path, PathBuf};
use std::process::Command;

const TIMEOUT_MS: u64 = 20_000;

/// A folder of its own for each test (history files, scripts).
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kiln-repl-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `kiln --device cpu` on a pty with `history` as its history file
/// and waits for the first prompt.
fn start(history: &Path) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["--device", "cpu"])
        .env("KILN_HISTORY", history)
        .env("TERM", "xterm")
        .env_remove("KILN_DEVICE");
    let options = Options::new()
        .timeout_ms(Some(TIMEOUT_MS))
        .strip_ansi_escape_codes(true);
    let mut p = rexpect::spawn_with_options(cmd, options).expect("start kiln on a pty");
    p.exp_string(">>> ").expect("first prompt");
    p
}

/// Types `text` and Enter.
fn enter(p: &mut PtySession, text: &str) {
    p.send(text).unwrap();
    p.send("\r").unwrap();
    p.flush().unwrap();
}

/// Types a line, then waits for `output` and the next prompt.
fn run(p: &mut PtySession, text: &str, output: &str) {
    enter(p, text);
    p.exp_string(output)
        .unwrap_or_else(|e| panic!("after `{text}`, expected `{output}`: {e}"));
    p.exp_string(">>> ")
        .unwrap_or_else(|e| panic!("no prompt after `{text}`: {e}"));
}

/// Leaves with Ctrl-D and waits for the process to end.
fn quit(mut p: PtySession) {
    p.send_control('d').unwrap();
    p.exp_eof().expect("kiln exits on Ctrl-D");
}

#[test]
fn multi_line_function_and_value_echo() {
    let dir = temp_dir("multiline");
    let mut p = start(&dir.join("history"));
    enter(&mut p, "fn twice(x) {");
    p.exp_string("... ").unwrap();
    enter(&mut p, "    x * 2");
    p.exp_string("... ").unwrap();
    run(&mut p, "}", "");
    run(&mut p, "twice(21)", "42");
    run(&mut p, "let t = ones([2, 3]);", "");
    run(&mut p, "t", "tensor([[1., 1., 1.],");
    run(&mut p, "twice(t).sum()", "tensor(12.)");
    run(&mut p, "1.5 * 2", "3.0");
    // A bracket left open continues too, and the value comes after the last line.
    enter(&mut p, "[1, 2,");
    p.exp_string("... ").unwrap();
    run(&mut p, "3]", "[1, 2, 3]");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn tab_completion() {
    let dir = temp_dir("completion");
    let mut p = start(&dir.join("history"));
    // `zeros` lists zeros and zeros_like (`zer` alone stops at `zero`: zero_grad).
    p.send("zeros\t").unwrap();
    p.flush().unwrap();
    p.exp_string("zeros_like").unwrap();
    run(&mut p, "([2])", "tensor([0., 0.])");
    run(&mut p, "let t = tensor([[1.0, 1.0]]);", "");
    // (`softm` alone stops there: softmax and softmin)
    p.send("t.softma\t").unwrap();
    p.flush().unwrap();
    p.exp_string("softmax").unwrap();
    run(&mut p, "(-1)", "tensor([[0.5000, 0.5000]])");
    // Two members start with `is_`: both are listed, the line stays.
    p.send("cuda::is_\t").unwrap();
    p.flush().unwrap();
    p.exp_string("is_available").unwrap();
    p.exp_string("is_idle").unwrap();
    p.send("a\t").unwrap();
    p.flush().unwrap();
    p.exp_string("cuda::is_available").unwrap();
    enter(&mut p, "()");
    p.exp_regex("true|false").unwrap();
    p.exp_string(">>> ").unwrap();
    // An import lasts for the session, and its members complete.
    run(&mut p, "import \"nn\" as nn;", "");
    p.send("nn::ms\t").unwrap();
    p.flush().unwrap();
    p.exp_string("nn::mse").unwrap();
    run(&mut p, "(ones([2]), zeros([2]))", "tensor(1.)");
    // Script variables complete too.
    run(&mut p, "let my_long_name = 5;", "");
    p.send("my_lo\t").unwrap();
    p.flush().unwrap();
    p.exp_string("my_long_name").unwrap();
    run(&mut p, " + 1", "6");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn error_with_caret_then_a_working_line() {
    let dir = temp_dir("error");
    let mut p = start(&dir.join("history"));
    enter(&mut p, "ones([2]) + ones([3])");
    p.exp_string("error: <repl>:1:11: add: shapes [2] and [3]")
        .unwrap();
    p.exp_string("    ones([2]) + ones([3])\r\n              ^")
        .unwrap();
    p.exp_string(">>> ").unwrap();
    enter(&mut p, "let a = ;");
    p.exp_string("error: <repl>:1:").unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "1 + 1", "2");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn invalid_utf8_at_the_prompt_skips_the_line() {
    use std::io::Write;
    let dir = temp_dir("utf8");
    let mut p = start(&dir.join("history"));
    run(&mut p, "let x = 40;", "");
    // an unfinished statement, then a byte that is no UTF-8
    enter(&mut p, "fn f(t) {");
    p.exp_string("... ").unwrap();
    let mut tty = p.process().get_file_handle().unwrap();
    tty.write_all(b"t \xff").unwrap();
    tty.flush().unwrap();
    p.exp_string(
        "error: invalid UTF-8 in the input; the line is skipped (with the unfinished input before it)",
    )
    .unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "x + 2", "42");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ctrl_c_interrupts_a_loop_and_the_session_survives() {
    let dir = temp_dir("interrupt");
    let mut p = start(&dir.join("history"));
    run(&mut p, "let kept = 41;", "");
    // The output is built from two halves so that it cannot be matched by
    // the echo of the typed line: once it shows, the loop is running.
    enter(&mut p, "print(\"loop\" + \"ing\"); loop {}");
    p.exp_string("looping").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("interrupted").unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "kept + 1", "42");
    // Ctrl-C at the prompt clears the line being typed.
    p.send("this is not run").unwrap();
    p.send_control('c').unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "kept", "41");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn history_persists_across_sessions() {
    let dir = temp_dir("history");
    let history = dir.join("history");
    let mut p = start(&history);
    enter(&mut p, "fn f(x) {");
    p.exp_string("... ").unwrap();
    run(&mut p, "x + 1 }", "");
    run(&mut p, "1000 + 234", "1234");
    enter(&mut p, ":quit");
    p.exp_eof().unwrap();
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.contains("1000 + 234"), "{saved}");
    // A multi-line input is kept as one entry (newlines escaped).
    assert!(saved.contains(r"fn f(x) {\nx + 1 }"), "{saved}");
    assert!(!saved.contains(":quit"), "{saved}");

    let mut p = start(&history);
    // Up recalls the last input of the earlier session; Enter runs it again.
    p.send("\x1b[A").unwrap();
    p.flush().unwrap();
    p.exp_string("1000 + 234").unwrap();
    run(&mut p, "", "1234");
    quit(p);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn commands() {
    let dir = temp_dir("commands");
    let mut p = start(&dir.join("history"));
    run(&mut p, "let t = ones([2, 3]);", "");
    enter(&mut p, ":vars");
    p.exp_regex(r"t\s+Tensor\s+\[2, 3\] f32 cpu").unwrap();
    p.exp_string(">>> ").unwrap();
    enter(&mut p, ":time (t @ t.t()).sum()");
    p.exp_string("tensor(12.)").unwrap();
    p.exp_string("wall time: ").unwrap();
    p.exp_string(">>> ").unwrap();
    enter(&mut p, ":profile (t @ t.t()).sum()");
    p.exp_string("tensor(12.)").unwrap();
    p.exp_regex(r"Name\s+Calls\s+Host self").unwrap();
    p.exp_regex(r"@\s+1 ").unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, ":device", "default device: cpu");
    enter(&mut p, ":device cuda");
    p.exp_regex("default device: cuda:0|not available").unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, ":device cpu", "default device: cpu");
    run(&mut p, ":mem", "tensor variable");
    run(&mut p, ":help", ":time EXPR");
    run(&mut p, ":help softmax", "softmax along dim");
    run(&mut p, ":frobnicate", "unknown command :frobnicate");

    let script = dir.join("lib.rhai");
    std::fs::write(&script, "fn from_file(a) {\n    a + 100\n}\nlet loaded = 5;\n").unwrap();
    run(&mut p, &format!(":load {}", script.display()), "");
    run(&mut p, "from_file(loaded)", "105");
    let bad = dir.join("bad.rhai");
    std::fs::write(&bad, "let ok = 1;\nok + ones([2]) + ones([3])\n").unwrap();
    enter(&mut p, &format!(":load {}", bad.display()));
    p.exp_string("bad.rhai:2:").unwrap();
    p.exp_string("    ok + ones([2]) + ones([3])").unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "help", ":vars");
    enter(&mut p, "exit");
    p.exp_eof().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn no_history_flag_writes_no_file() {
    let dir = temp_dir("nohistory");
    let history = dir.join("history");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["--device", "cpu", "--no-history"])
        .env("KILN_HISTORY", &history)
        .env("TERM", "xterm");
    let options = Options::new()
        .timeout_ms(Some(TIMEOUT_MS))
        .strip_ansi_escape_codes(true);
    let mut p = rexpect::spawn_with_options(cmd, options).unwrap();
    p.exp_string(">>> ").unwrap();
    run(&mut p, "2 + 2", "4");
    quit(p);
    assert!(!history.exists());
    std::fs::remove_dir_all(&dir).ok();
}
