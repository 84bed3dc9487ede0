//! The session's `:` commands (`:help`, `:time`, `:profile`, `:mem`,
//! `:device`, `:load`, `:vars`, `:quit`) and the plain words `help`, `quit` and `exit`: how a
//! line is recognized as one, and what each does.

use super::{display, Flow, Session};
use kiln::script::registry::{catalog, Category};
use kiln::{Device, Tensor};
use rhai::INT;
use std::path::PathBuf;
use std::time::Instant;

/// A session command.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// `:help [NAME]`: the commands and the API by group, or NAME's signatures.
    Help(Option<String>),
    /// `:time EXPR`: runs EXPR and prints its wall time.
    Time(String),
    /// `:profile EXPR`: runs EXPR under the op profiler and prints its table.
    Profile(String),
    /// `:mem`: allocator statistics.
    Mem,
    /// `:device [cpu|cuda]`: shows or sets the default device.
    Device(Option<String>),
    /// `:load FILE`: runs a file into the session.
    Load(String),
    /// `:vars`: the session's variables and functions.
    Vars,
    /// `:quit`, `:exit`, `quit`, `exit`.
    Quit,
}

/// Recognizes a command: `None` when `line` is script source, `Some(Err)`
/// for an unknown or malformed `:` command.
pub fn parse(line: &str) -> Option<Result<Command, String>> {
    let line = line.trim();
    match line {
        "help" => return Some(Ok(Command::Help(None))),
        "quit" | "exit" => return Some(Ok(Command::Quit)),
        _ => {}
    }
    let rest = line.strip_prefix(':')?;
    let (name, arg) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest, ""),
    };
    let arg = (!arg.is_empty()).then(|| arg.to_string());
    let cmd = match name {
        "help" | "h" | "?" => Command::Help(arg),
        "time" | "t" => match arg {
            Some(expr) => Command::Time(expr),
            None => return Some(Err(":time needs an expression, e.g. :time a @ b".into())),
        },
        "profile" | "p" => match arg {
            Some(expr) => Command::Profile(expr),
            None => {
                return Some(Err(
                    ":profile needs an expression, e.g. :profile (a @ b).sum()".into()
                ))
            }
        },
        "mem" | "memory" => Command::Mem,
        "device" | "d" => Command::Device(arg),
        "load" | "l" => match arg {
            Some(file) => Command::Load(file),
            None => return Some(Err(":load needs a file name".into())),
        },
        "vars" | "v" => Command::Vars,
        "quit" | "q" | "exit" => Command::Quit,
        _ => return Some(Err(format!("unknown command :{name} (:help lists them)"))),
    };
    Some(Ok(cmd))
}

/// Runs a command in the session.
pub fn run(session: &mut Session, cmd: Command) -> Flow {
    match cmd {
        Command::Help(None) => help(),
        Command::Help(Some(name)) => help_for(session, &name),
        Command::Time(expr) => time(session, &expr),
        Command::Profile(expr) => profile(session, &expr),
        Command::Mem => mem(session),
        Command::Device(arg) => device(session, arg.as_deref()),
        Command::Load(file) => load(session, &file),
        Command::Vars => vars(session),
        Command::Quit => return Flow::Quit,
    }
    Flow::Continue
}

/// The session's own text for `:help`: how input works and the commands.
const HELP: &str = "\
Type Rhai statements; the value of an expression is printed. Variables
(`let`) and functions (`fn`) persist. An unfinished statement continues
at the `... ` prompt; a blank line runs it as it is. Tab completes names,
`module::` members and tensor methods after `.`.

Commands:
  :help [NAME]       this text, or the doc and signatures of function NAME
  :time EXPR         run EXPR and print its wall time (after a device sync)
  :profile EXPR      run EXPR and print calls, host and GPU time per function
  :mem               allocator statistics
  :device [cpu|cuda] show or set the default device
  :load FILE         run a script file in this session
  :vars              variables (type, and shape/dtype/device of tensors)
  :quit              leave (also quit, exit, Ctrl-D)
Ctrl-C interrupts a running script, or clears the line being typed.
`let g = cuda::graph(|| ...)` records a block's GPU work once; `g.replay()`
runs it again with one launch (`:help cuda::graph`; docs/API.md, CUDA graphs).";

/// The last lines of the API listing: the stdlib, which is Rhai source.
const STDLIB: &str = "import \"nn\" as nn;  nn::linear nn::mse nn::cross_entropy ...";

/// Where the names of a listed group start, and the width they wrap at.
const NAMES_AT: usize = 15;
const WIDTH: usize = 78;

/// Prints the session's help and the script API by group, from the catalog
/// the API was registered with.
fn help() {
    println!("{HELP}");
    println!();
    println!("The tensor API by group (:help NAME shows a function's doc and signatures;");
    println!("docs/API.md has the details):");
    for category in Category::ALL {
        let mut names: Vec<String> = Vec::new();
        for entry in catalog().iter().filter(|e| e.category == category) {
            let name = entry.display_name();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        print!("{}", wrap(category.name(), &names));
    }
    print!("{}", wrap("stdlib", &[STDLIB.to_string()]));
}

/// `label` and `names`, the names wrapped into lines of at most [`WIDTH`]
/// characters that start at column [`NAMES_AT`].
fn wrap(label: &str, names: &[String]) -> String {
    let mut out = format!("  {label:<width$}", width = NAMES_AT - 2);
    let mut column = NAMES_AT;
    for (i, name) in names.iter().enumerate() {
        let len = name.chars().count();
        if i > 0 && column + 1 + len > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(NAMES_AT));
            column = NAMES_AT;
        } else if i > 0 {
            out.push(' ');
            column += 1;
        }
        out.push_str(name);
        column += len;
    }
    out.push('\n');
    out
}

/// One overload found by `:help NAME`: its signature as shown and its doc lines.
struct Overload {
    signature: String,
    doc: Vec<String>,
}

/// Prints the doc and signatures of every function named `name` (also
/// `module::name`, and the property `.name`), from the engine's metadata.
fn help_for(session: &Session, name: &str) {
    let Ok(state) = session.state.try_borrow() else {
        return;
    };
    let name = name.trim_start_matches('.');
    let mut found = match state.kiln.engine().gen_fn_metadata_to_json(true) {
        Ok(json) => overloads(&json, name),
        Err(e) => {
            eprintln!("error: cannot read the function metadata: {e}");
            Vec::new()
        }
    };
    if let Some(sig) = state.functions.get(name) {
        found.push(Overload {
            signature: format!("fn {sig}  (defined in this session)"),
            doc: Vec::new(),
        });
    }
    if found.is_empty() {
        println!("no function named {name}");
    }
    print!("{}", format_overloads(&found));
}

/// The overloads named `name` (`module::name` for one module's) in `json`,
/// the engine's function metadata (`Engine::gen_fn_metadata_to_json`), in
/// a stable order.
fn overloads(json: &str, name: &str) -> Vec<Overload> {
    let Ok(root) = serde_json::from_str::<serde_json::Value>(json) else {
        return Vec::new();
    };
    // `cuda::synchronize` asks for that module's function only
    let (in_module, name) = match name.rsplit_once("::") {
        Some((m, n)) => (Some(m), n),
        None => (None, name),
    };
    let mut found: Vec<(String, u64, Overload)> = Vec::new();
    let mut scan = |module: Option<&str>, functions: &serde_json::Value| {
        if in_module.is_some() && in_module != module {
            return;
        }
        for f in functions.as_array().into_iter().flatten() {
            let Some(fname) = f["name"].as_str() else {
                continue;
            };
            let prop = fname.strip_prefix("get$").or_else(|| fname.strip_prefix("set$"));
            if fname != name && prop != Some(name) {
                continue;
            }
            let signature = f["signature"].as_str().unwrap_or(fname);
            let signature = match module {
                Some(m) => format!("{m}::{signature}"),
                None => signature.to_string(),
            };
            let doc = f["docComments"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str())
                .flat_map(doc_lines)
                .collect();
            let overload = Overload {
                signature: display_signature(&tidy_signature(&signature)),
                doc,
            };
            let key = format!("{}{fname}", module.unwrap_or(""));
            found.push((key, f["numParams"].as_u64().unwrap_or(0), overload));
        }
    };
    scan(None, &root["functions"]);
    for (m, module) in root["modules"].as_object().into_iter().flatten() {
        scan(Some(m), &module["functions"]);
    }
    found.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    found.into_iter().map(|(_, _, o)| o).collect()
}

/// The text of a doc comment (`/// ...` lines or a `/** ... */` block),
/// one item per line, without the comment markers.
fn doc_lines(comment: &str) -> Vec<String> {
    let body = comment
        .trim()
        .strip_prefix("/**")
        .and_then(|b| b.strip_suffix("*/"))
        .unwrap_or(comment);
    body.lines()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("///").or_else(|| l.strip_prefix('*')).unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l).trim_end().to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// A signature as a script writes the call: properties as `t.name` and
/// `t.name = v`, without Rhai's `&mut` marks.
fn display_signature(sig: &str) -> String {
    let sig = sig.replace("&mut ", "");
    let property = |rest: &str, setter: bool| -> Option<String> {
        let (prop, rest) = rest.split_once('(')?;
        let (params, ret) = rest.split_once(')')?;
        let mut params = params.split(", ");
        let this = params.next()?.split(':').next()?.trim().to_string();
        Some(if setter {
            format!("{this}.{prop} = {}", params.collect::<Vec<_>>().join(", "))
        } else {
            format!("{this}.{prop}{ret}")
        })
    };
    let shown = match (sig.strip_prefix("get$"), sig.strip_prefix("set$")) {
        (Some(rest), _) => property(rest, false),
        (_, Some(rest)) => property(rest, true),
        _ => None,
    };
    shown.unwrap_or(sig)
}

/// The overloads, each group of consecutive ones that share a doc shown as
/// their signatures and then the doc, indented.
fn format_overloads(found: &[Overload]) -> String {
    let mut out = String::new();
    for (i, o) in found.iter().enumerate() {
        out.push_str(&format!("  {}\n", o.signature));
        let last_of_group = found.get(i + 1).is_none_or(|next| next.doc != o.doc);
        if last_of_group {
            for line in &o.doc {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

/// A signature as a script user reads it: `Result<T, E>` returns shown as
/// `T`, Rust paths cut to their last segment (`kiln::tensor::Tensor` →
/// `Tensor`), the `module::` of the name kept.
fn tidy_signature(sig: &str) -> String {
    let Some((name, rest)) = sig.split_once('(') else {
        return sig.to_string();
    };
    let mut rest = rest.to_string();
    while let Some(i) = rest.find("Result<") {
        let start = rest[..i]
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |j| j + 1);
        let inner = i + "Result<".len();
        let (mut depth, mut comma, mut end) = (0usize, None, None);
        for (k, c) in rest[inner..].char_indices() {
            match c {
                '<' => depth += 1,
                '>' if depth == 0 => {
                    end = Some(inner + k);
                    break;
                }
                '>' => depth -= 1,
                ',' if depth == 0 && comma.is_none() => comma = Some(inner + k),
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let ok = rest[inner..comma.unwrap_or(end)].trim().to_string();
        rest.replace_range(start..=end, &ok);
    }
    let mut out = String::new();
    let mut word = String::new();
    for c in rest.chars().chain(std::iter::once('\0')) {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        let last = word.rsplit("::").next().unwrap_or("");
        out.push_str(if word.ends_with(':') { &word } else { last });
        word.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    format!("{name}({out}")
}

/// Evaluates a script expression on the session's engine, outside its scope.
fn query<T: Clone + Send + Sync + 'static>(session: &Session, code: &str) -> Option<T> {
    let state = session.state.try_borrow().ok()?;
    // on the session's engine: its CUDA stream (for `cuda::synchronize()`),
    // budget and modes
    let _run = state.kiln.runtime().enter();
    state.kiln.engine().eval::<T>(code).ok()
}

fn current_device(session: &Session) -> Option<Device> {
    let state = session.state.try_borrow().ok()?;
    Some(state.kiln.runtime().device())
}

fn time(session: &mut Session, expr: &str) {
    let on_cuda = matches!(current_device(session), Some(Device::Cuda(_)));
    let start = Instant::now();
    let value = session.execute(expr, "<repl>", expr);
    if on_cuda {
        let _ = query::<()>(session, "cuda::synchronize()");
    }
    let wall = start.elapsed();
    if let Some(v) = value {
        session.echo(&v);
        let sync = if on_cuda {
            ", after cuda::synchronize()"
        } else {
            ""
        };
        println!("wall time: {}{sync}", display::duration(wall));
    }
}

/// Runs `expr` with the op profiler on (as `profile(|| expr)`) and prints
/// its value and the table.
fn profile(session: &mut Session, expr: &str) {
    let recording = match kiln::profiler::Session::start() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return;
        }
    };
    let value = session.execute(expr, "<repl>", expr);
    match recording.finish() {
        Ok(report) => {
            if let Some(v) = value {
                session.echo(&v);
            }
            println!("{}", report.table(report.default_sort(), 30));
        }
        Err(e) => eprintln!("error: the profile failed: {e}"),
    }
}

fn mem(session: &Session) {
    let device = current_device(session).unwrap_or(Device::Cpu);
    let cuda = query::<bool>(session, "cuda::is_available()").unwrap_or(false);
    if cuda {
        let allocated = query::<INT>(session, "cuda::memory_allocated()").unwrap_or(0);
        let reserved = query::<INT>(session, "cuda::memory_reserved()").unwrap_or(0);
        let name = query::<String>(session, "cuda::device_name()").unwrap_or_default();
        println!("cuda:0 ({name}) caching allocator:");
        println!("  allocated  {}", display::bytes(allocated.max(0) as u64));
        println!("  reserved   {}", display::bytes(reserved.max(0) as u64));
        println!("  (cuda::empty_cache() returns reserved, unused memory to the driver)");
    } else {
        println!("no CUDA device: the CPU backend allocates from the system heap and keeps no allocator statistics");
    }
    if device == Device::Cpu {
        let (count, bytes) = tensors_in_scope(session);
        println!(
            "device cpu: {count} tensor variable(s) hold {}",
            display::bytes(bytes)
        );
    }
}

/// How many tensors the session's variables hold and their size in bytes
/// (views counted at their own size).
fn tensors_in_scope(session: &Session) -> (usize, u64) {
    let Ok(mut state) = session.state.try_borrow_mut() else {
        return (0, 0);
    };
    let mut count = 0;
    let mut bytes = 0u64;
    for (_, _, v) in state.kiln.scope_mut().iter_raw() {
        if let Some(t) = v.read_lock::<Tensor>() {
            count += 1;
            bytes += (t.numel() * t.dtype().size_in_bytes()) as u64;
        }
    }
    (count, bytes)
}

fn device(session: &Session, arg: Option<&str>) {
    let Ok(state) = session.state.try_borrow() else {
        return;
    };
    let runtime = state.kiln.runtime();
    if let Some(name) = arg {
        match Device::parse(name).and_then(|d| runtime.set_device(d)) {
            Ok(()) => println!("default device: {}", runtime.device()),
            Err(e) => eprintln!("error: {e}"),
        }
        return;
    }
    println!("default device: {}", runtime.device());
    drop(state);
    if query::<bool>(session, "cuda::is_available()").unwrap_or(false) {
        let info = query::<rhai::Map>(session, "cuda::device_info()").unwrap_or_default();
        let field = |k: &str| info.get(k).map(|v| v.to_string()).unwrap_or_default();
        println!(
            "cuda: available ({}, compute capability {}); kernels: {} (SASS in this build: {})",
            field("name"),
            field("compute_capability"),
            field("kernels"),
            field("sass")
        );
    } else {
        println!("cuda: not available");
    }
}

fn load(session: &mut Session, file: &str) {
    let file = file.trim_matches(|c| c == '"' || c == '\'');
    let path = match (file.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(file),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return;
        }
    };
    let name = path.display().to_string();
    if let Some(v) = session.execute(&text, &name, &text) {
        session.echo(&v);
    }
}

fn vars(session: &Session) {
    let Ok(mut state) = session.state.try_borrow_mut() else {
        return;
    };
    // `iter_raw` runs from the newest entry; list the oldest first.
    let mut entries: Vec<(String, bool, rhai::Dynamic)> = state
        .kiln
        .scope_mut()
        .iter_raw()
        .map(|(n, c, v)| (n.to_string(), c, v.clone()))
        .collect();
    entries.reverse();
    let engine = state.kiln.engine();
    let mut rows: Vec<(String, String, String)> = Vec::new();
    for (name, constant, value) in &entries {
        let (constant, value) = (*constant, value);
        if name == "ARGS" && value.read_lock::<rhai::Array>().is_some_and(|a| a.is_empty()) {
            continue;
        }
        let (ty, detail) = if let Some(t) = value.read_lock::<Tensor>() {
            let shape: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
            (
                "Tensor".to_string(),
                format!("[{}] {} {}", shape.join(", "), t.dtype().name(), t.device()),
            )
        } else {
            let mut text = display::echo(engine, value).unwrap_or_else(|| "()".into());
            if text.chars().count() > 60 {
                text = text.chars().take(57).collect::<String>() + "...";
            }
            (display::type_name(engine, value), text)
        };
        let name = if constant {
            format!("{name} (const)")
        } else {
            name.to_string()
        };
        rows.push((name, ty, detail));
    }
    if rows.is_empty() && state.functions.is_empty() {
        println!("no variables");
        return;
    }
    let w0 = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
    for (name, ty, detail) in rows {
        println!("{name:<w0$}  {ty:<w1$}  {detail}");
    }
    for sig in state.functions.values() {
        println!("fn {sig}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_commands() {
        assert_eq!(parse("let x = 1"), None);
        assert_eq!(parse("x.help"), None);
        assert_eq!(parse(" help "), Some(Ok(Command::Help(None))));
        assert_eq!(parse("exit"), Some(Ok(Command::Quit)));
        assert_eq!(parse(":q"), Some(Ok(Command::Quit)));
        assert_eq!(
            parse(":help zeros"),
            Some(Ok(Command::Help(Some("zeros".into()))))
        );
        assert_eq!(parse(":time  a @ b "), Some(Ok(Command::Time("a @ b".into()))));
        assert_eq!(
            parse(":profile (a @ b).sum()"),
            Some(Ok(Command::Profile("(a @ b).sum()".into())))
        );
        assert!(matches!(parse(":profile"), Some(Err(_))));
        assert_eq!(
            parse(":device cuda"),
            Some(Ok(Command::Device(Some("cuda".into()))))
        );
        assert_eq!(parse(":device"), Some(Ok(Command::Device(None))));
        assert_eq!(
            parse(":load a b.rhai"),
            Some(Ok(Command::Load("a b.rhai".into())))
        );
        assert!(matches!(parse(":time"), Some(Err(_))));
        assert!(matches!(parse(":load"), Some(Err(_))));
        assert!(matches!(parse(":frobnicate"), Some(Err(_))));
    }

    #[test]
    fn help_for_a_name_reads_the_metadata() {
        let kiln = kiln::Interpreter::with_device(Device::Cpu).unwrap();
        let json = kiln.engine().gen_fn_metadata_to_json(true).unwrap();
        let text = format_overloads(&overloads(&json, "softmax"));
        let doc = catalog().iter().find(|e| e.name == "softmax").unwrap().doc;
        // the global form first, then the module forms (special::softmax)
        let global = format!("  softmax(t: Tensor, dim: i64) -> Tensor\n      {doc}\n");
        assert!(text.starts_with(&global), "{text}");
        assert!(text.contains("special::softmax"), "{text}");
        // overloads that share a doc show it once, after them
        let text = format_overloads(&overloads(&json, "flatten"));
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().last().unwrap().starts_with("      "), "{text}");
        // properties, module functions by either name
        let text = format_overloads(&overloads(&json, "grad"));
        assert!(text.contains("  t.grad -> Dynamic\n"), "{text}");
        assert!(text.contains("  t.grad = g: Dynamic\n"), "{text}");
        for name in ["synchronize", "cuda::synchronize"] {
            let text = format_overloads(&overloads(&json, name));
            assert!(text.starts_with("  cuda::synchronize()\n      "), "{text}");
        }
        assert!(overloads(&json, "dist::synchronize").is_empty());
        assert!(overloads(&json, "no_such_function").is_empty());
    }

    #[test]
    fn reads_doc_comments() {
        assert_eq!(doc_lines("/// one line"), vec!["one line"]);
        assert_eq!(doc_lines("/// a\n///   b\n///"), vec!["a", "  b"]);
        assert_eq!(doc_lines("/** a\n * b\n */"), vec!["a", "b"]);
    }

    #[test]
    fn wraps_the_listing() {
        let names: Vec<String> = (0..30).map(|i| format!("name{i}")).collect();
        let text = wrap("math", &names);
        assert!(text.starts_with("  math         name0 name1 "), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert!(text.lines().skip(1).all(|l| l.starts_with(&" ".repeat(NAMES_AT))));
        assert_eq!(text.split_whitespace().count(), 31);
    }

    #[test]
    fn tidies_signatures() {
        let sig = "zeros(_: types::dynamic::Dynamic, _: map) -> core::result::Result<kiln::tensor::Tensor,alloc::boxed::Box<rhai::types::error::EvalAltResult>>";
        assert_eq!(tidy_signature(sig), "zeros(_: Dynamic, _: map) -> Tensor");
        assert_eq!(
            tidy_signature("cuda::is_available() -> bool"),
            "cuda::is_available() -> bool"
        );
        assert_eq!(
            tidy_signature("cat(_: Array, _: i64) -> Result<Tensor, Box<EvalAltResult>>"),
            "cat(_: Array, _: i64) -> Tensor"
        );
    }
}
