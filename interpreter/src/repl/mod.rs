//! The interactive session that `kiln` starts when given no script.
//!
//! On a terminal: a line editor (rustyline) with persistent history,
//! multi-line input at a `... ` prompt, the value of every expression echoed,
//! completion, `:` commands, and Ctrl-C that interrupts a running script
//! without ending the session. With piped input: a plain line reader that
//! runs each complete statement. A line that is not valid UTF-8 is reported
//! and skipped (with any unfinished statement it belongs to); the session
//! goes on with the next line. Completion, validation and highlighting
//! live in [`helper`], the `:` commands in [`commands`], and how values and
//! errors are shown in [`display`].

mod commands;
mod display;
mod helper;

use anyhow::Result;
use helper::{KilnHelper, Parse};
use kiln::Interpreter;
use rhai::{Dynamic, Scope};
use rustyline::config::{CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::Editor;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How the session is set up.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where history is kept; `None` keeps none.
    pub history: Option<PathBuf>,
}

/// The history file: `KILN_HISTORY` when set (empty: none), else
/// `$XDG_DATA_HOME/kiln/history`, else `~/.kiln_history`.
pub fn default_history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KILN_HISTORY") {
        return (!p.is_empty()).then(|| PathBuf::from(p));
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("kiln").join("history"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".kiln_history"))
}

/// The interpreter and what the session learned about it, shared between the
/// session and the editor's helper (which reads it for completion).
pub struct State {
    /// The interpreter the session runs in.
    pub kiln: Interpreter,
    /// Functions the session defined: name → `name(params)`.
    pub functions: BTreeMap<String, String>,
    /// Modules the session imported: name → its functions.
    pub modules: BTreeMap<String, BTreeSet<String>>,
}

impl State {
    /// The state of a new session over `kiln`.
    pub fn new(kiln: Interpreter) -> State {
        State {
            kiln,
            functions: BTreeMap::new(),
            modules: BTreeMap::new(),
        }
    }
}

/// The shared [`State`].
pub type Shared = Rc<RefCell<State>>;

/// Runs the session until end of input or `:quit`. With piped input, exits
/// with failure when any input failed.
pub fn run(kiln: Interpreter, options: Options) -> Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    let mut session = Session::new(kiln);
    if interactive {
        session.interactive(options)?;
        Ok(ExitCode::SUCCESS)
    } else {
        session.piped()?;
        Ok(if session.failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        })
    }
}

/// What to do after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next input.
    Continue,
    /// End the session.
    Quit,
}

/// A running session.
pub struct Session {
    state: Shared,
    interrupt: Arc<AtomicBool>,
    failed: bool,
}

impl Session {
    fn new(kiln: Interpreter) -> Session {
        Session {
            state: Rc::new(RefCell::new(State::new(kiln))),
            interrupt: Arc::new(AtomicBool::new(false)),
            failed: false,
        }
    }

    /// Makes Ctrl-C stop a running script: the signal interrupts the
    /// engine's run, which Rhai code checks between operations and native ops
    /// every few milliseconds. While a line is read the terminal is in raw
    /// mode, so Ctrl-C reaches the editor as a key, not a signal.
    fn install_interrupt(&mut self) {
        let flag = self.interrupt.clone();
        let stop = self.state.borrow().kiln.interrupt_handle();
        if let Err(e) = ctrlc::set_handler(move || {
            flag.store(true, Ordering::SeqCst);
            stop.interrupt();
        }) {
            eprintln!("warning: Ctrl-C will not interrupt scripts: {e}");
        }
    }

    fn interactive(&mut self, options: Options) -> Result<()> {
        self.install_interrupt();
        let config = Config::builder()
            .completion_type(CompletionType::List)
            .completion_show_all_if_ambiguous(true)
            .history_ignore_space(true)
            .history_ignore_dups(true)?
            .max_history_size(10_000)?
            .auto_add_history(false)
            .build();
        let mut rl: Editor<KilnHelper, FileHistory> = Editor::with_config(config)?;
        rl.set_helper(Some(KilnHelper::new(self.state.clone())));
        let history = options.history;
        if let Some(path) = &history {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                let _ = std::fs::create_dir_all(dir);
            }
            if path.exists() {
                if let Err(e) = rl.load_history(path) {
                    eprintln!("warning: cannot read history {}: {e}", path.display());
                }
            }
        }
        let device = self.state.borrow().kiln.runtime().device();
        println!(
            "kiln {} on {device}. :help for help, Ctrl-D to exit.",
            env!("CARGO_PKG_VERSION")
        );
        let mut pending = String::new();
        let mut history_warned = false;
        loop {
            let prompt = if pending.is_empty() { ">>> " } else { "... " };
            let line = match rl.readline(prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => {
                    pending.clear();
                    continue;
                }
                Err(ReadlineError::Eof) => break,
                Err(ReadlineError::Io(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                    let dropped = if pending.is_empty() {
                        ""
                    } else {
                        " (with the unfinished input before it)"
                    };
                    eprintln!("error: invalid UTF-8 in the input; the line is skipped{dropped}");
                    pending.clear();
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let Some(source) = self.accumulate(&mut pending, &line, true) else {
                continue;
            };
            let quit = matches!(commands::parse(&source), Some(Ok(commands::Command::Quit)));
            if !quit {
                let _ = rl.add_history_entry(source.as_str());
            }
            if let Some(path) = history.as_ref().filter(|_| !quit) {
                if let Err(e) = rl.append_history(path) {
                    if !history_warned {
                        eprintln!("warning: cannot write history {}: {e}", path.display());
                        history_warned = true;
                    }
                }
            }
            if self.input(&source) == Flow::Quit {
                break;
            }
        }
        Ok(())
    }

    fn piped(&mut self) -> Result<()> {
        let mut pending = String::new();
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        let mut number = 0usize;
        loop {
            bytes.clear();
            if stdin.read_until(b'\n', &mut bytes)? == 0 {
                break;
            }
            number += 1;
            let line = match input_line(&bytes) {
                Ok(line) => line,
                Err(e) => {
                    self.failed = true;
                    let dropped = if pending.trim().is_empty() {
                        ""
                    } else {
                        " (with the unfinished input before it)"
                    };
                    eprintln!("error: line {number}: {e}; the line is skipped{dropped}");
                    pending.clear();
                    continue;
                }
            };
            let Some(source) = self.accumulate(&mut pending, line, false) else {
                continue;
            };
            if self.input(&source) == Flow::Quit {
                return Ok(());
            }
        }
        if !pending.trim().is_empty() {
            self.input(&pending);
        }
        Ok(())
    }

    /// Adds `line` to the `pending` input and returns the input to run once it
    /// is complete: a command, a statement that parses, or one with a syntax
    /// error before its end. On a terminal, a blank line runs what is pending.
    fn accumulate(&self, pending: &mut String, line: &str, blank_runs: bool) -> Option<String> {
        if pending.is_empty() {
            if line.trim().is_empty() {
                return None;
            }
            if commands::parse(line).is_some() {
                return Some(line.to_string());
            }
        } else {
            pending.push('\n');
        }
        pending.push_str(line);
        let blank = line.trim().is_empty();
        let parse = match self.state.try_borrow() {
            Ok(s) => helper::parse(s.kiln.engine(), pending),
            Err(_) => Parse::Invalid,
        };
        if parse == Parse::Incomplete && !(blank && blank_runs) {
            return None;
        }
        Some(std::mem::take(pending))
    }

    /// Runs one complete input: a command or script source.
    fn input(&mut self, source: &str) -> Flow {
        match commands::parse(source) {
            Some(Ok(cmd)) => commands::run(self, cmd),
            Some(Err(msg)) => {
                eprintln!("error: {msg}");
                Flow::Continue
            }
            None => {
                if let Some(v) = self.execute(source, "<repl>", source) {
                    self.echo(&v);
                }
                Flow::Continue
            }
        }
    }

    /// Runs `source` (named `name`; `text` is what error carets point into)
    /// and returns its value, or reports why it failed.
    fn execute(&mut self, source: &str, name: &str, text: &str) -> Option<Dynamic> {
        let Ok(mut state) = self.state.try_borrow_mut() else {
            eprintln!("error: the session is busy");
            return None;
        };
        let state = &mut *state;
        let compiled = match state.kiln.engine().compile(source) {
            Ok(ast) => {
                for f in ast.iter_functions() {
                    let sig = format!("{}({})", f.name, f.params.join(", "));
                    state.functions.insert(f.name.to_string(), sig);
                }
                true
            }
            Err(_) => false,
        };
        self.interrupt.store(false, Ordering::SeqCst);
        let result = state.kiln.run(source, name);
        let interrupted = self.interrupt.swap(false, Ordering::SeqCst);
        compact(state.kiln.scope_mut());
        if compiled {
            keep_imports(state, source);
        }
        match result {
            Ok(v) => Some(v),
            Err(_) if interrupted => {
                eprintln!("interrupted");
                None
            }
            Err(e) => {
                self.failed = true;
                eprintln!("{}", display::error(&e, Some(text)));
                None
            }
        }
    }

    /// Prints a value unless it is `()`.
    fn echo(&self, value: &Dynamic) {
        if let Ok(s) = self.state.try_borrow() {
            if let Some(text) = display::echo(s.kiln.engine(), value) {
                println!("{text}");
            }
        }
    }
}

/// One line of piped input as text, without its line ending (`\n` or `\r\n`).
fn input_line(bytes: &[u8]) -> std::result::Result<&str, String> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let len = e.error_len().unwrap_or(bytes.len() - at);
        let shown: Vec<String> = bytes[at..at + len].iter().map(|b| format!("0x{b:02x}")).collect();
        format!("invalid UTF-8 (byte {} of the line: {})", at + 1, shown.join(" "))
    })
}

/// Registers the modules that `source` imports at its top level on the
/// engine, so that the next inputs still see them (an engine forgets a
/// script's imports when the run ends).
fn keep_imports(state: &mut State, source: &str) {
    for (path, alias) in helper::top_level_imports(source) {
        let engine = state.kiln.engine();
        // resolving runs the module's top level: on the session's engine
        let run = state.kiln.runtime().enter();
        let resolved = engine
            .module_resolver()
            .resolve(engine, None, &path, rhai::Position::NONE);
        drop(run);
        let Ok(module) = resolved else {
            continue;
        };
        let members = module
            .gen_fn_signatures_with_mapper(std::borrow::Cow::Borrowed)
            .filter_map(|sig| sig.split('(').next().map(str::to_string))
            .collect();
        state.modules.insert(alias.clone(), members);
        state.kiln.engine_mut().register_static_module(alias, module);
    }
}

/// Drops variables shadowed by a later `let` of the same name, so that
/// redefining a variable at the prompt frees what it held.
fn compact(scope: &mut Scope<'static>) {
    let mut seen = HashSet::new();
    if scope.iter_raw().all(|(n, _, _)| seen.insert(n.to_string())) {
        return;
    }
    // `iter_raw` runs from the newest entry: keep each name's first.
    let mut seen = HashSet::new();
    let mut keep: Vec<(String, bool, Dynamic)> = scope
        .iter_raw()
        .filter(|(n, _, _)| seen.insert(n.to_string()))
        .map(|(n, c, v)| (n.to_string(), c, v.clone()))
        .collect();
    keep.reverse();
    scope.clear();
    for (name, constant, value) in keep {
        if constant {
            scope.push_constant_dynamic(name, value);
        } else {
            scope.push_dynamic(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_lines_lose_their_ending_and_invalid_bytes_are_named() {
        assert_eq!(input_line(b"1 + 1\n"), Ok("1 + 1"));
        assert_eq!(input_line(b"x\r\n"), Ok("x"));
        assert_eq!(input_line(b"last"), Ok("last"));
        assert_eq!(input_line("é\n".as_bytes()), Ok("é"));
        assert_eq!(
            input_line(b"ab\xff c\n"),
            Err("invalid UTF-8 (byte 3 of the line: 0xff)".to_string())
        );
        // a sequence cut short by the end of the line
        assert_eq!(
            input_line(b"a\xe2\x82\n"),
            Err("invalid UTF-8 (byte 2 of the line: 0xe2 0x82)".to_string())
        );
    }

    #[test]
    fn compact_keeps_the_last_binding() {
        let mut s = Scope::new();
        s.push("a", 1_i64);
        s.push("b", 2_i64);
        s.push("a", 3_i64);
        compact(&mut s);
        let got: Vec<(String, i64)> = s
            .iter()
            .map(|(n, _, v)| (n.to_string(), v.as_int().unwrap()))
            .collect();
        assert_eq!(got, vec![("b".into(), 2), ("a".into(), 3)]);
    }
}
