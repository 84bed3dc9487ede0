//! The `kiln` command: run a script file, evaluate an expression with `-e`,
//! start the interactive session ([`repl`]), or run a script as a
//! data-parallel group of processes with `kiln launch` ([`launch`]). A thin
//! layer over the library's [`kiln::Interpreter`].

use anyhow::Result;
use clap::Parser;
use kiln::{Device, Interpreter};
use std::path::PathBuf;
use std::process::ExitCode;

mod launch;
mod repl;

/// kiln: tensor programs in Rhai, computed in Rust.
#[derive(Parser, Debug)]
#[command(
    name = "kiln",
    version,
    about,
    long_about = None,
    after_help = "Data-parallel runs: kiln launch --nproc N SCRIPT [ARGS...] (see kiln launch --help)."
)]
struct Cli {
    /// Evaluate this code instead of a file.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    eval: Option<String>,
    /// Default device for new tensors: cpu or cuda (also KILN_DEVICE).
    #[arg(long, value_name = "DEVICE")]
    device: Option<String>,
    /// Keep no REPL history (by default it is kept in KILN_HISTORY,
    /// $XDG_DATA_HOME/kiln/history or ~/.kiln_history).
    #[arg(long)]
    no_history: bool,
    /// Script to run; with none (and no -e), start the REPL.
    file: Option<PathBuf>,
    /// Arguments for the script (`args()` / `ARGS`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn main() -> ExitCode {
    // `kiln script.rhai | head`: a closed stdout ends the process quietly, as
    // for other command-line tools, instead of a failed write
    // SAFETY: sets the default disposition of one signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // `kiln launch ...` is handled before the normal command line, so that
    // `kiln FILE.rhai` stays as it is (a script file named `launch` runs as
    // `kiln ./launch`).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "launch") {
        let mut rest = argv;
        rest.remove(0);
        rest[0] = "kiln launch".into();
        return launch::main(rest);
    }
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
        None => {
            let history = if cli.no_history {
                None
            } else {
                repl::default_history_path()
            };
            repl::run(kiln, repl::Options { history })
        }
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
