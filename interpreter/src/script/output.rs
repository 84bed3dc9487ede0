//! Where an engine's text output goes besides `print`: the host's callbacks
//! (`Outputs`), read by the `progress(n)` bar when it is made.
//!
//! A host that sends `print` somewhere of its own
//! ([`Interpreter::on_print`](crate::Interpreter::on_print)) gets the
//! progress lines there too, unless it gave progress a callback of its own
//! ([`Interpreter::on_progress_output`](crate::Interpreter::on_progress_output),
//! [`Runtime::set_progress_output`](super::Runtime::set_progress_output)).
//! With neither, progress is drawn on the process's stderr (a bar on a
//! terminal, plain lines otherwise), as the `kiln` command does.

use crate::progress::{Mode, Progress};
use std::fmt;
use std::sync::{Arc, RwLock};

/// A host callback that takes one line of text (without its newline).
pub type OutputFn = Arc<dyn Fn(&str) + Send + Sync>;

/// The host's output callbacks of one engine.
#[derive(Default)]
pub(crate) struct Outputs {
    print: RwLock<Option<OutputFn>>,
    progress: RwLock<Option<OutputFn>>,
}

impl fmt::Debug for Outputs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |slot: &RwLock<Option<OutputFn>>| slot.read().map(|s| s.is_some()).unwrap_or(false);
        f.debug_struct("Outputs")
            .field("print", &set(&self.print))
            .field("progress", &set(&self.progress))
            .finish()
    }
}

fn store(slot: &RwLock<Option<OutputFn>>, f: Option<OutputFn>) {
    match slot.write() {
        Ok(mut s) => *s = f,
        Err(p) => *p.into_inner() = f,
    }
}

fn load(slot: &RwLock<Option<OutputFn>>) -> Option<OutputFn> {
    match slot.read() {
        Ok(s) => s.clone(),
        Err(p) => p.into_inner().clone(),
    }
}

impl Outputs {
    /// The host's `print` callback (progress falls back to it).
    pub(crate) fn set_print(&self, f: Option<OutputFn>) {
        store(&self.print, f);
    }

    /// The host's progress callback.
    pub(crate) fn set_progress(&self, f: Option<OutputFn>) {
        store(&self.progress, f);
    }

    /// Where progress lines go: the progress callback, else the print
    /// callback, else `None` (the process's stderr).
    pub(crate) fn progress_sink(&self) -> Option<OutputFn> {
        load(&self.progress).or_else(|| load(&self.print))
    }

    /// A progress counter shown as `mode` says: on stderr when the host set
    /// no callback, else as plain lines through the callback (a live bar
    /// needs a terminal, so `Mode::Bar` writes plain lines there).
    pub(crate) fn progress(&self, total: u64, desc: &str, mode: Mode) -> Progress {
        match self.progress_sink() {
            None => Progress::new(total, desc, mode),
            Some(f) => {
                let mode = if mode == Mode::Bar { Mode::Plain } else { mode };
                Progress::with_sink(total, desc, mode, Box::new(move |line| f(line)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn collector() -> (OutputFn, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l = lines.clone();
        (
            Arc::new(move |s: &str| l.lock().unwrap().push(s.to_string())),
            lines,
        )
    }

    #[test]
    fn progress_goes_to_its_callback_else_to_print() {
        let out = Outputs::default();
        assert!(out.progress_sink().is_none());
        let (print, printed) = collector();
        out.set_print(Some(print));
        out.progress(2, "a", Mode::Bar).inc(2);
        let (progress, shown) = collector();
        out.set_progress(Some(progress));
        out.progress(1, "b", Mode::Plain).inc(1);
        out.progress(1, "c", Mode::Off).inc(1);
        let printed = printed.lock().unwrap();
        assert_eq!(printed.len(), 1, "{printed:?}");
        assert!(printed[0].starts_with("a: 2/2 (100%)"), "{}", printed[0]);
        let shown = shown.lock().unwrap();
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(shown[0].starts_with("b: 1/1 (100%)"), "{}", shown[0]);
    }
}
