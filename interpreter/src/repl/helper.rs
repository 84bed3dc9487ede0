//! The line editor's helper: completion (globals, script variables and
//! functions, `module::` members, tensor methods after `.`, `:` commands and
//! file names after `:load`), matching-bracket highlighting, and the check
//! that tells a complete input from one that continues on the next line.

use super::display::is_identifier;
use super::Shared;
use rhai::{Engine, LexError, ParseErrorType};
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::{CmdKind, Highlighter, MatchingBracketHighlighter};
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// What the parser makes of an input.
#[derive(Debug, PartialEq, Eq)]
pub enum Parse {
    /// It parses.
    Complete,
    /// It stops in the middle of something (an open bracket, a trailing
    /// operator, an unterminated string): more lines should follow.
    Incomplete,
    /// A syntax error before the end: running it reports the error.
    Invalid,
}

/// Parses `source` with `engine` (without running it) and says whether it is
/// complete: an error is "incomplete" when the parser ran out of input, that
/// is, when it is reported past the last non-blank character.
pub fn parse(engine: &Engine, source: &str) -> Parse {
    let err = match engine.compile(source) {
        Ok(_) => return Parse::Complete,
        Err(e) => e,
    };
    let at_end = match (err.position().line(), err.position().position()) {
        (Some(line), col) => past_end(source, line, col.unwrap_or(1)),
        (None, _) => false,
    };
    match err.err_type() {
        ParseErrorType::UnexpectedEOF | ParseErrorType::BadInput(LexError::UnterminatedString) => {
            Parse::Incomplete
        }
        _ if at_end => Parse::Incomplete,
        _ => Parse::Invalid,
    }
}

/// True when 1-based (`line`, `column`) lies after the last non-blank
/// character of `source`.
fn past_end(source: &str, line: usize, column: usize) -> bool {
    let Some((last_line, text)) = source
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .last()
    else {
        return true;
    };
    let last_line = last_line + 1;
    let last_col = text.trim_end().chars().count();
    line > last_line || (line == last_line && column > last_col)
}

/// The `import "path" as name;` statements at the top level of `source`
/// (not inside a block or a function), as (path, name) pairs. An engine
/// forgets imports when a run ends; the session keeps these ones.
pub fn top_level_imports(source: &str) -> Vec<(String, String)> {
    let chars: Vec<char> = source.chars().collect();
    let mut found = Vec::new();
    let mut depth = 0usize;
    let mut statement_start = true;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
                continue;
            }
            '"' | '`' | '\'' => {
                i = skip_quoted(&chars, i);
                statement_start = false;
                continue;
            }
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth = depth.saturating_sub(1);
                statement_start = c == '}';
                i += 1;
                continue;
            }
            ';' => {
                statement_start = true;
                i += 1;
                continue;
            }
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if word == "import" && depth == 0 && statement_start {
                    if let Some((path, alias, end)) = import_tail(&chars, i) {
                        found.push((path, alias));
                        i = end;
                    }
                }
                statement_start = false;
                continue;
            }
            _ => {}
        }
        statement_start = false;
        i += 1;
    }
    found
}

/// The index just past the quoted literal that starts at `start`.
fn skip_quoted(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' && quote != '`' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// After the `import` keyword at `i`: `"path" as name`, with where it ends.
fn import_tail(chars: &[char], mut i: usize) -> Option<(String, String, usize)> {
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if chars.get(i) != Some(&'"') {
        return None;
    }
    let end = skip_quoted(chars, i);
    let path: String = chars.get(i + 1..end.checked_sub(1)?)?.iter().collect();
    i = end;
    skip_ws(&mut i);
    if chars.get(i..i + 2) != Some(&['a', 's'][..]) {
        return None;
    }
    i += 2;
    skip_ws(&mut i);
    let start = i;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    let alias: String = chars[start..i].iter().collect();
    (is_identifier(&alias) && start > end).then_some((path, alias, i))
}

/// The session's commands, for completion after `:`.
pub const COMMANDS: [&str; 8] = [
    ":help", ":time", ":mem", ":device", ":load", ":vars", ":quit", ":exit",
];

/// Rhai keywords offered beside the functions.
const KEYWORDS: [&str; 22] = [
    "let", "const", "fn", "if", "else", "while", "loop", "for", "in", "do", "until", "break", "continue",
    "return", "throw", "try", "catch", "switch", "import", "as", "true", "false",
];

/// The names the engine knows, read once from its function signatures.
#[derive(Debug, Default)]
pub struct Names {
    /// Global functions (the kiln API and Rhai's standard library).
    pub globals: BTreeSet<String>,
    /// Methods and properties of a Tensor.
    pub methods: BTreeSet<String>,
    /// Static modules (`cuda`) and their members.
    pub modules: BTreeMap<String, BTreeSet<String>>,
}

impl Names {
    /// Reads the names from `engine`'s registered functions.
    pub fn from_engine(engine: &Engine) -> Names {
        let mut names = Names::default();
        for sig in engine.gen_fn_signatures(true) {
            let Some((name, rest)) = sig.split_once('(') else {
                continue;
            };
            let on_tensor = first_param_is_tensor(rest);
            if let Some((module, member)) = name.split_once("::") {
                if is_identifier(member) {
                    names
                        .modules
                        .entry(module.to_string())
                        .or_default()
                        .insert(member.to_string());
                }
            } else if let Some(prop) = name.strip_prefix("get$") {
                if on_tensor && is_identifier(prop) {
                    names.methods.insert(prop.to_string());
                }
            } else if is_identifier(name) {
                // In-place methods (`add_`, `zero_`) are offered after `.` only.
                if !(on_tensor && name.ends_with('_')) {
                    names.globals.insert(name.to_string());
                }
                if on_tensor {
                    names.methods.insert(name.to_string());
                }
            }
        }
        names
    }
}

/// True when a signature's parameter list (after the `(`) starts with a Tensor.
fn first_param_is_tensor(params: &str) -> bool {
    let first = params.split([',', ')']).next().unwrap_or("");
    let ty = first.split_once(':').map_or(first, |(_, t)| t);
    ty.trim()
        .trim_start_matches("&mut ")
        .trim_start_matches('&')
        .trim()
        == "Tensor"
}

/// Completion, highlighting and validation for the session's line editor.
pub struct KilnHelper {
    state: Shared,
    names: Names,
    files: FilenameCompleter,
    brackets: MatchingBracketHighlighter,
}

impl KilnHelper {
    /// A helper reading the session's variables and functions from `state`.
    pub fn new(state: Shared) -> KilnHelper {
        let names = match state.try_borrow() {
            Ok(s) => Names::from_engine(s.kiln.engine()),
            Err(_) => Names::default(),
        };
        KilnHelper {
            state,
            names,
            files: FilenameCompleter::new(),
            brackets: MatchingBracketHighlighter::new(),
        }
    }

    /// The completions of the text before the cursor: where the replaced word
    /// starts, and the candidates.
    pub fn candidates(&self, before: &str) -> (usize, Vec<String>) {
        if let Some(rest) = before.strip_prefix(':') {
            if !rest.contains(char::is_whitespace) {
                let found = COMMANDS.iter().filter(|c| c.starts_with(before));
                return (0, found.map(|c| c.to_string()).collect());
            }
        }
        let start = before
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let (head, word) = before.split_at(start);
        let mut found = BTreeSet::new();
        let mut add = |names: &mut dyn Iterator<Item = &str>| {
            for n in names {
                if n.starts_with(word) {
                    found.insert(n.to_string());
                }
            }
        };
        if let Some(module) = head.strip_suffix("::") {
            let module = trailing_identifier(module);
            if let Some(members) = self.names.modules.get(module) {
                add(&mut members.iter().map(String::as_str));
            }
            if let Ok(state) = self.state.try_borrow() {
                if let Some(members) = state.modules.get(module) {
                    add(&mut members.iter().map(String::as_str));
                }
            }
        } else if head.ends_with('.') && !head.ends_with("..") {
            add(&mut self.names.methods.iter().map(String::as_str));
        } else {
            add(&mut KEYWORDS.iter().copied());
            add(&mut self.names.globals.iter().map(String::as_str));
            let modules: Vec<String> = self.names.modules.keys().map(|m| format!("{m}::")).collect();
            add(&mut modules.iter().map(String::as_str));
            if let Ok(mut state) = self.state.try_borrow_mut() {
                let imported: Vec<String> = state.modules.keys().map(|m| format!("{m}::")).collect();
                add(&mut imported.iter().map(String::as_str));
                let functions: Vec<String> = state.functions.keys().cloned().collect();
                add(&mut functions.iter().map(String::as_str));
                let vars: Vec<String> = state
                    .kiln
                    .scope_mut()
                    .iter_raw()
                    .map(|(n, _, _)| n.to_string())
                    .collect();
                add(&mut vars.iter().map(String::as_str));
            }
        }
        (start, found.into_iter().collect())
    }
}

/// The identifier at the end of `s` (`cuda` in `x + cuda`).
fn trailing_identifier(s: &str) -> &str {
    let start = s
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &s[start..]
}

impl Completer for KilnHelper {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, ctx: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = line.get(..pos).unwrap_or(line);
        if let Some(rest) = before.strip_prefix(":load ") {
            let offset = before.len() - rest.len();
            let (start, found) = self.files.complete(rest, rest.len(), ctx)?;
            return Ok((start + offset, found));
        }
        let (start, found) = self.candidates(before);
        let pairs = found
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for KilnHelper {
    type Hint = String;
}

impl Highlighter for KilnHelper {
    fn highlight<'l>(&self, line: &'l str, pos: usize) -> Cow<'l, str> {
        self.brackets.highlight(line, pos)
    }

    fn highlight_char(&self, line: &str, pos: usize, kind: CmdKind) -> bool {
        self.brackets.highlight_char(line, pos, kind)
    }
}

impl Validator for KilnHelper {
    /// A single line is judged by the session, which continues it at a `... `
    /// prompt. A buffer of several lines (a block recalled from history) is
    /// edited in place: while it is incomplete, Enter adds a line to it; an
    /// empty last line runs it as it is.
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if !input.contains('\n') || input.ends_with('\n') {
            return Ok(ValidationResult::Valid(None));
        }
        let incomplete = match self.state.try_borrow() {
            Ok(s) => parse(s.kiln.engine(), input) == Parse::Incomplete,
            Err(_) => false,
        };
        Ok(if incomplete {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for KilnHelper {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn state_modules(h: &KilnHelper) {
        let members = ["mse".to_string(), "linear".to_string()].into_iter().collect();
        h.state.borrow_mut().modules.insert("nn".into(), members);
    }

    fn engine() -> kiln::Interpreter {
        kiln::Interpreter::with_device(kiln::Device::Cpu).unwrap()
    }

    #[test]
    fn incomplete_inputs_continue() {
        let k = engine();
        let e = k.engine();
        for src in [
            "fn f(x) {",
            "fn f(x) {\n  x * 2",
            "let a = [1, 2,",
            "print(1,",
            "(1 +",
            "1 +",
            "let s = \"abc",
            "let t = ones([2]) @",
            "if true {",
            "let m = #{a: 1,",
        ] {
            assert_eq!(parse(e, src), Parse::Incomplete, "{src:?}");
        }
        for src in ["let a = ;", "1 + )", "let = 3", "fn (x) { }"] {
            assert_eq!(parse(e, src), Parse::Invalid, "{src:?}");
        }
        for src in [
            "1 + 2",
            "ones([2]) @ ones([2])",
            "fn f(x) {\n  x * 2\n}",
            "// a comment",
        ] {
            assert_eq!(parse(e, src), Parse::Complete, "{src:?}");
        }
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let state = Rc::new(RefCell::new(super::super::State::new(engine())));
        let h = KilnHelper::new(state.clone());
        for src in [
            "import",
            "import \"",
            "import \"a\" as",
            "import \"é\" as ü",
            "'",
            "\"\\",
            "`",
            "/*",
            "::",
            ".",
            "a..b.",
            "ß.ö::ü",
            "}}}]])",
            ":load ",
            ":",
            "日本語.sof",
        ] {
            let _ = top_level_imports(src);
            let _ = parse(state.borrow().kiln.engine(), src);
            for (i, _) in src.char_indices().chain(std::iter::once((src.len(), ' '))) {
                let _ = h.candidates(&src[..i]);
            }
        }
    }

    #[test]
    fn finds_top_level_imports() {
        let src = "import \"nn\" as nn;\nlet s = \"import \\\"x\\\" as y;\"; // import \"c\" as c;\n\
                   fn f() { import \"inner\" as inner; }\nif true { import \"b\" as b; }\n\
                   /* import \"d\" as d; */ import \"my/lib\" as lib";
        let got = top_level_imports(src);
        assert_eq!(
            got,
            vec![("nn".into(), "nn".into()), ("my/lib".into(), "lib".into())]
        );
        assert!(top_level_imports("import \"x\";").is_empty());
        assert!(top_level_imports("let y = x.import").is_empty());
    }

    #[test]
    fn completion() {
        let state = Rc::new(RefCell::new(super::super::State::new(engine())));
        state.borrow_mut().kiln.scope_mut().push("my_tensor", 1_i64);
        state
            .borrow_mut()
            .functions
            .insert("my_fn".into(), "my_fn()".into());
        let h = KilnHelper::new(state);
        let (start, c) = h.candidates("let z = zer");
        assert_eq!(start, 8);
        assert!(c.contains(&"zeros".to_string()), "{c:?}");
        assert!(c.contains(&"zeros_like".to_string()), "{c:?}");
        assert!(c.iter().all(|n| n.starts_with("zer")), "{c:?}");
        let (_, c) = h.candidates("let z = zeros");
        assert!(c.iter().all(|n| n.starts_with("zeros")), "{c:?}");
        let (start, c) = h.candidates("t.softm");
        assert_eq!(
            (start, c),
            (2, vec!["softmax".to_string(), "softmin".to_string()])
        );
        let (_, c) = h.candidates("t.softma");
        assert_eq!(c, vec!["softmax".to_string()]);
        let (_, c) = h.candidates("t.sha");
        assert!(c.contains(&"shape".to_string()), "{c:?}");
        let (_, c) = h.candidates("cuda::is_");
        assert_eq!(
            c,
            vec![
                "is_available".to_string(),
                "is_capturing".to_string(),
                "is_idle".to_string()
            ]
        );
        let (_, c) = h.candidates("cu");
        assert!(c.contains(&"cuda::".to_string()), "{c:?}");
        let (_, c) = h.candidates("my_");
        assert_eq!(c, vec!["my_fn".to_string(), "my_tensor".to_string()]);
        let (start, c) = h.candidates(":ti");
        assert_eq!((start, c), (0, vec![":time".to_string()]));
        state_modules(&h);
        let (_, c) = h.candidates("nn::ms");
        assert_eq!(c, vec!["mse".to_string()]);
        let (_, c) = h.candidates("x.");
        assert!(c.contains(&"matmul".to_string()) && !c.contains(&"zeros".to_string()));
    }
}
