//! The session's `:` commands (`:help`, `:time`, `:mem`, `:device`, `:load`,
//! `:vars`, `:quit`) and the plain words `help`, `quit` and `exit`: how a
//! line is recognized as one, and what each does.

use super::{display, Flow, Session};
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
        Command::Help(None) => println!("{HELP}"),
        Command::Help(Some(name)) => help_for(session, &name),
        Command::Time(expr) => time(session, &expr),
        Command::Mem => mem(session),
        Command::Device(arg) => device(session, arg.as_deref()),
        Command::Load(file) => load(session, &file),
        Command::Vars => vars(session),
        Command::Quit => return Flow::Quit,
    }
    Flow::Continue
}

const HELP: &str = "\
Type Rhai statements; the value of an expression is printed. Variables
(`let`) and functions (`fn`) persist. An unfinished statement continues
at the `... ` prompt; a blank line runs it as it is. Tab completes names,
`module::` members and tensor methods after `.`.

Commands:
  :help [NAME]       this text, or the signatures of function NAME
  :time EXPR         run EXPR and print its wall time (after a device sync)
  :mem               allocator statistics
  :device [cpu|cuda] show or set the default device
  :load FILE         run a script file in this session
  :vars              variables (type, and shape/dtype/device of tensors)
  :quit              leave (also quit, exit, Ctrl-D)
Ctrl-C interrupts a running script, or clears the line being typed.

The tensor API (docs/API.md has the details):
  creation    tensor zeros ones empty full arange linspace eye rand randn
              randint randperm seed zeros_like ones_like full_like rand_like
              randn_like
  properties  .shape .dtype .device .ndim .numel .T .grad .requires_grad
              .is_leaf .grad_fn size dim len is_contiguous shares_storage
  operators   + - * / % ** @ == != < <= > >= & | ^  (in place: += -= *= /=)
              t[i]  t[a..b]  t[i] = x
  views       reshape view flatten t transpose permute squeeze unsqueeze
              expand expand_as broadcast_to narrow slice select contiguous
              clone detach cat stack
  indexing    index_select gather index_add scatter_add
  math        abs neg exp log log2 log1p expm1 sqrt rsqrt sin cos tan tanh
              sigmoid relu gelu silu erf floor ceil round sign square
              reciprocal pow clamp maximum minimum where add_ sub_ mul_ div_
  reductions  sum prod mean variance std all any max min argmax argmin
  nn          matmul mm bmm dot softmax log_softmax layer_norm
  autograd    requires_grad backward zero_grad detach no_grad enable_grad
              is_grad_enabled
  values      item to_list print
  devices     to to_dtype float double half bfloat16 long int cpu cuda
              default_device set_default_device
  runtime     time args cuda::is_available cuda::synchronize
              cuda::memory_allocated cuda::memory_reserved cuda::empty_cache
              cuda::set_allow_tf32 cuda::allow_tf32
  dist        dist::rank dist::world_size dist::all_reduce dist::broadcast
              dist::all_gather dist::barrier dist::all_reduce_coalesced
              dist::reducer (red.wait)  (kiln launch --nproc N FILE)
  stdlib      import \"nn\" as nn;  nn::linear nn::mse nn::cross_entropy ...";

/// Prints the registered signatures of `name` (and `module::name`).
fn help_for(session: &Session, name: &str) {
    let Ok(state) = session.state.try_borrow() else {
        return;
    };
    let name = name.trim_start_matches('.');
    let mut found: Vec<String> = state
        .kiln
        .engine()
        .gen_fn_signatures(false)
        .into_iter()
        .filter(|sig| {
            let n = sig.split('(').next().unwrap_or("");
            n == name || n.rsplit("::").next() == Some(name)
        })
        .map(|sig| tidy_signature(&sig))
        .collect();
    if let Some(sig) = state.functions.get(name) {
        found.push(format!("fn {sig}  (defined in this session)"));
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        println!("no function named {name}");
    }
    for sig in found {
        println!("  {sig}");
    }
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
        let name = query::<String>(session, "cuda::device_name()").unwrap_or_default();
        println!("cuda: available ({name})");
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
