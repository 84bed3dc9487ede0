//! The `kiln` command: run a script file, evaluate an expression with `-e`,
//! or start the REPL. A thin layer over the library's [`kiln::Interpreter`].

use anyhow::Result;
use clap::Parser;
use kiln::{Device, Interpreter};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// kiln: tensor programs in Rhai, computed in Rust.
#[derive(Parser, Debug)]
#[command(name = "kiln", version, about, long_about = None)]
struct Cli {
    /// Evaluate this code instead of a file.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    eval: Option<String>,
    /// Default device for new tensors: cpu or cuda (also KILN_DEVICE).
    #[arg(long, value_name = "DEVICE")]
    device: Option<String>,
    /// Script to run; with none (and no -e), start the REPL.
    file: Option<PathBuf>,
    /// Arguments for the script (`args()` / `ARGS`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let mut kiln = match cli.device.or_else(|| std::env::var("KILN_DEVICE").ok()) {
        Some(s) => Interpreter::with_device(Device::parse(&s)?)?,
        None => Interpreter::new(),
    };
    let mut args = cli.args;
    if let Some(code) = cli.eval {
        // With -e, a FILE position is just the first script argument.
        if let Some(f) = cli.file {
            args.insert(0, f.display().to_string());
        }
        kiln.set_args(args);
        return Ok(report(kiln.run(&code, "<eval>").map(|_| ())));
    }
    kiln.set_args(args);
    match cli.file {
        Some(path) => Ok(report(kiln.run_file(&path).map(|_| ()))),
        None => repl(&mut kiln),
    }
}

fn report(r: std::result::Result<(), kiln::ScriptError>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A minimal line-by-line REPL: variables and functions persist, results
/// that are not `()` are printed, errors are reported and the session goes on.
fn repl(kiln: &mut Interpreter) -> Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!(
            "kiln {} — Rhai tensor scripting. Ctrl-D to exit.",
            env!("CARGO_PKG_VERSION")
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut failed = false;
    loop {
        if interactive {
            print!(">>> ");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match kiln.run(&line, "<repl>") {
            Ok(v) if v.is_unit() => {}
            Ok(v) => println!("{v}"),
            Err(e) => {
                failed = true;
                eprintln!("error: {e}");
            }
        }
    }
    Ok(if failed && !interactive {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
