//! `kiln launch`: runs a script as N processes of one data-parallel group.
//! It picks a free port on 127.0.0.1 and starts N copies of this binary with
//! `KILN_RANK`, `KILN_WORLD_SIZE`, `KILN_DIST_ADDR` and `NCCL_NVLS_ENABLE=0`
//! set (and `CUDA_VISIBLE_DEVICES` with `--gpus`), prefixes their output
//! lines with `[rank R]`, and waits. When a rank fails, it reports
//! `rank R failed: exit code C`, ends the other ranks (after up to 3 s to
//! finish and report on their own) and exits non-zero.

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

/// Run a script as a data-parallel group of processes.
#[derive(Parser, Debug)]
#[command(
    name = "kiln launch",
    version,
    about = "Run a script as a data-parallel group of processes (ranks 0..N over 127.0.0.1)",
    long_about = None
)]
pub struct Launch {
    /// Number of processes (ranks); by default one per GPU of `--gpus`, else 1.
    #[arg(long, value_name = "N")]
    nproc: Option<usize>,
    /// GPUs to spread the ranks over: rank R sees only GPU R mod N (as its
    /// cuda:0) through CUDA_VISIBLE_DEVICES, picked from the parent's
    /// CUDA_VISIBLE_DEVICES list when that is set.
    #[arg(long, value_name = "N")]
    gpus: Option<usize>,
    /// Default device of every rank: cpu or cuda (passed as --device).
    #[arg(long, value_name = "DEVICE")]
    device: Option<String>,
    /// Pass the ranks' output through as it is, without `[rank R]` prefixes.
    #[arg(long)]
    no_prefix: bool,
    /// Script to run on every rank.
    file: PathBuf,
    /// Arguments for the script (`args()` / `ARGS`), the same on every rank.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Parses `kiln launch ...` (`argv` starts with the program name).
pub fn main(argv: Vec<std::ffi::OsString>) -> ExitCode {
    let launch = Launch::parse_from(argv);
    match run(launch) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kiln launch: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// The GPU list rank `rank` sees with `--gpus n`.
fn visible_gpu(rank: usize, n: usize, parent: Option<&str>) -> String {
    let slot = rank % n.max(1);
    let listed: Vec<&str> = parent
        .map(|p| p.split(',').map(str::trim).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    listed
        .get(slot)
        .map_or_else(|| slot.to_string(), |s| s.to_string())
}

fn run(l: Launch) -> Result<ExitCode> {
    let nproc = l.nproc.or(l.gpus).unwrap_or(1);
    if nproc == 0 {
        bail!("--nproc must be at least 1");
    }
    if l.gpus == Some(0) {
        bail!("--gpus must be at least 1");
    }
    let exe = std::env::current_exe().context("cannot find the kiln binary")?;
    let addr = format!("127.0.0.1:{}", free_port()?);
    let parent_gpus = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let mut children: Vec<Option<Child>> = Vec::new();
    let mut pumps: Vec<JoinHandle<()>> = Vec::new();
    for rank in 0..nproc {
        let mut cmd = Command::new(&exe);
        if let Some(d) = &l.device {
            cmd.arg("--device").arg(d);
        }
        cmd.arg(&l.file)
            .args(&l.args)
            .env("KILN_RANK", rank.to_string())
            .env("KILN_WORLD_SIZE", nproc.to_string())
            .env("KILN_DIST_ADDR", &addr)
            .env("NCCL_NVLS_ENABLE", "0")
            .stdin(Stdio::null());
        if let Some(n) = l.gpus {
            cmd.env(
                "CUDA_VISIBLE_DEVICES",
                visible_gpu(rank, n, parent_gpus.as_deref()),
            );
            cmd.env("KILN_LOCAL_RANK", rank.to_string());
        }
        if !l.no_prefix {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                stop(&mut children);
                bail!("cannot start rank {rank}: {e}");
            }
        };
        if let Some(out) = child.stdout.take() {
            pumps.push(pump(out, rank, false));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(pump(err, rank, true));
        }
        children.push(Some(child));
    }
    let failure = wait_all(&mut children);
    if failure.is_some() {
        stop(&mut children);
    }
    for p in pumps {
        let _ = p.join();
    }
    match failure {
        None => Ok(ExitCode::SUCCESS),
        Some((rank, status)) => {
            let what = match status.code() {
                Some(c) => format!("exit code {c}"),
                None => signal_text(&status),
            };
            eprintln!("kiln launch: rank {rank} failed: {what}; the other ranks were stopped");
            let code = status.code().filter(|&c| (1..=255).contains(&c)).unwrap_or(1);
            Ok(ExitCode::from(code as u8))
        }
    }
}

#[cfg(unix)]
fn signal_text(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    status
        .signal()
        .map_or_else(|| "no exit code".to_string(), |s| format!("killed by signal {s}"))
}

#[cfg(not(unix))]
fn signal_text(_status: &ExitStatus) -> String {
    "no exit code".to_string()
}

/// Waits until every rank has exited successfully, or the first one fails.
fn wait_all(children: &mut [Option<Child>]) -> Option<(usize, ExitStatus)> {
    loop {
        let mut running = 0;
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(child) = slot else { continue };
            match child.try_wait() {
                Ok(Some(status)) => {
                    *slot = None;
                    if !status.success() {
                        return Some((rank, status));
                    }
                }
                Ok(None) => running += 1,
                Err(_) => {
                    // cannot observe it: treat as failed
                    let status = child.wait().ok()?;
                    *slot = None;
                    if !status.success() {
                        return Some((rank, status));
                    }
                }
            }
        }
        if running == 0 {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long the other ranks get to finish on their own (and report their
/// own view of the failure) after one has failed, before they are killed.
const GRACE: Duration = Duration::from_secs(3);

/// Reaps the ranks still running: those that end within [`GRACE`] on their
/// own, then the rest killed.
fn stop(children: &mut [Option<Child>]) {
    let deadline = std::time::Instant::now() + GRACE;
    while std::time::Instant::now() < deadline {
        for slot in children.iter_mut() {
            if slot.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_)))) {
                *slot = None;
            }
        }
        if children.iter().all(Option::is_none) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for child in children.iter_mut().flatten() {
        let _ = child.kill();
    }
    for slot in children.iter_mut() {
        if let Some(mut child) = slot.take() {
            let _ = child.wait();
        }
    }
}

/// Copies a rank's output to ours, line by line, with a `[rank R] ` prefix.
fn pump(src: impl Read + Send + 'static, rank: usize, is_err: bool) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(src);
        let prefix = format!("[rank {rank}] ");
        let mut line = Vec::new();
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    let _ = if is_err {
                        let mut e = std::io::stderr().lock();
                        e.write_all(prefix.as_bytes()).and_then(|_| e.write_all(&line))
                    } else {
                        let mut o = std::io::stdout().lock();
                        o.write_all(prefix.as_bytes())
                            .and_then(|_| o.write_all(&line))
                            .and_then(|_| o.flush())
                    };
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::visible_gpu;

    #[test]
    fn gpus_wrap_and_follow_the_parent_list() {
        assert_eq!(visible_gpu(0, 2, None), "0");
        assert_eq!(visible_gpu(3, 2, None), "1");
        assert_eq!(visible_gpu(1, 2, Some("4, 6")), "6");
        assert_eq!(visible_gpu(2, 3, Some("4,6")), "2");
    }
}
