//! A progress bar for long loops, independent of Rhai: a count toward a
//! total, the rate, live metrics (`loss=0.123`) and a message. On a terminal
//! it draws an `indicatif` bar on stderr; otherwise (piped output, logs, CI)
//! it writes a plain line to stderr at each tenth of the total and when it
//! finishes, without escape codes. `KILN_PROGRESS=bar|plain|off` overrides
//! the choice.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A live bar (on a terminal).
    Bar,
    /// Occasional plain lines.
    Plain,
    /// Nothing.
    Off,
}

impl Mode {
    /// The mode for this process: `KILN_PROGRESS` when set, else a bar when stderr is a terminal.
    pub fn detect() -> Mode {
        match std::env::var("KILN_PROGRESS").as_deref() {
            Ok("bar") => Mode::Bar,
            Ok("plain") => Mode::Plain,
            Ok("off") | Ok("0") => Mode::Off,
            _ if std::io::stderr().is_terminal() => Mode::Bar,
            _ => Mode::Plain,
        }
    }

    /// Parses `"bar"`, `"plain"`, `"off"` (or `"auto"`).
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "auto" => Some(Mode::detect()),
            "bar" => Some(Mode::Bar),
            "plain" => Some(Mode::Plain),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}

type Sink = Box<dyn FnMut(&str) + Send>;

struct State {
    total: u64,
    pos: u64,
    desc: String,
    metrics: Vec<(String, String)>,
    message: String,
    start: Instant,
    /// Tenths of the total already reported in plain mode.
    reported: u64,
    finished: bool,
    bar: Option<ProgressBar>,
    sink: Sink,
    mode: Mode,
}

/// A progress counter toward `total`; shared handles may tick it from anywhere.
pub struct Progress {
    state: Mutex<State>,
}

/// Formats a metric value with four significant digits (`0.1234`, `12.35`, `1.235e-5`).
pub fn format_metric(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&mag) {
        return format!("{x:.3e}");
    }
    let s = format!("{x:.*}", (3 - mag).max(0) as usize);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn format_rate(pos: u64, secs: f64) -> String {
    if pos == 0 || secs <= 0.0 {
        return "? it/s".into();
    }
    let r = pos as f64 / secs;
    if r >= 1.0 {
        format!("{} it/s", format_metric(r))
    } else {
        format!("{} s/it", format_metric(1.0 / r))
    }
}

impl State {
    fn suffix(&self) -> String {
        let mut parts: Vec<String> = self.metrics.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !self.message.is_empty() {
            parts.push(self.message.clone());
        }
        parts.join(", ")
    }

    fn line(&self) -> String {
        let secs = self.start.elapsed().as_secs_f64();
        let pct = (self.pos.min(self.total) as u128 * 100)
            .checked_div(self.total as u128)
            .map_or(String::new(), |p| format!(" ({p}%)"));
        let desc = if self.desc.is_empty() {
            String::new()
        } else {
            format!("{}: ", self.desc)
        };
        let mut l = format!(
            "{desc}{}/{}{pct} {secs:.1}s, {}",
            self.pos,
            self.total,
            format_rate(self.pos, secs)
        );
        let s = self.suffix();
        if !s.is_empty() {
            l.push_str(", ");
            l.push_str(&s);
        }
        l
    }

    fn update(&mut self) {
        if self.finished {
            return;
        }
        match self.mode {
            Mode::Bar => {
                if let Some(b) = &self.bar {
                    b.set_position(self.pos);
                    b.set_message(self.suffix());
                }
            }
            Mode::Plain if self.total > 0 => {
                let tenth = ((self.pos.min(self.total) as u128 * 10) / self.total as u128) as u64;
                if tenth > self.reported && tenth < 10 {
                    self.reported = tenth;
                    let l = self.line();
                    (self.sink)(&l);
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        match self.mode {
            Mode::Bar => {
                if let Some(b) = &self.bar {
                    b.set_position(self.pos);
                    b.finish_with_message(self.suffix());
                }
            }
            Mode::Plain => {
                let l = self.line();
                (self.sink)(&l);
            }
            Mode::Off => {}
        }
        self.finished = true;
    }
}

impl Progress {
    /// A progress counter shown as `mode` says, with plain lines going to stderr.
    pub fn new(total: u64, desc: &str, mode: Mode) -> Progress {
        Progress::with_sink(total, desc, mode, Box::new(|l| eprintln!("{l}")))
    }

    /// A progress counter whose plain lines go to `sink` (for tests and embedders).
    pub fn with_sink(total: u64, desc: &str, mode: Mode, sink: Sink) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template =
                "{prefix}{bar:30.cyan/blue} {pos}/{len} [{elapsed_precise}<{eta_precise}, {per_sec}] {msg}";
            b.set_style(
                ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            if !desc.is_empty() {
                b.set_prefix(format!("{desc}: "));
            }
            b
        });
        Progress {
            state: Mutex::new(State {
                total,
                pos: 0,
                desc: desc.to_string(),
                metrics: vec![],
                message: String::new(),
                start: Instant::now(),
                reported: 0,
                finished: false,
                bar,
                sink,
                mode,
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut s)
    }

    /// Advances the count by `k`.
    pub fn inc(&self, k: u64) {
        self.with(|s| {
            s.pos = s.pos.saturating_add(k);
            s.update();
        });
    }

    /// Sets the count to `pos`.
    pub fn set_position(&self, pos: u64) {
        self.with(|s| {
            s.pos = pos;
            s.update();
        });
    }

    /// Sets (or adds) the live metric `name` to an already formatted value.
    pub fn set_metric(&self, name: &str, value: String) {
        self.with(|s| {
            match s.metrics.iter_mut().find(|(k, _)| k == name) {
                Some(m) => m.1 = value,
                None => s.metrics.push((name.to_string(), value)),
            }
            s.update();
        });
    }

    /// Sets the free-text message shown after the metrics.
    pub fn set_message(&self, msg: &str) {
        self.with(|s| {
            s.message = msg.to_string();
            s.update();
        });
    }

    /// Ends the bar (or writes the final plain line); later calls do nothing.
    pub fn finish(&self) {
        self.with(State::finish);
    }

    /// The current count.
    pub fn position(&self) -> u64 {
        self.with(|s| s.pos)
    }

    /// The total.
    pub fn total(&self) -> u64 {
        self.with(|s| s.total)
    }

    /// Seconds since the counter was made.
    pub fn elapsed(&self) -> f64 {
        self.with(|s| s.start.elapsed().as_secs_f64())
    }
}

impl Drop for Progress {
    /// An unfinished counter finishes when its last handle goes away.
    fn drop(&mut self) {
        self.with(State::finish);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn captured(total: u64) -> (Progress, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(vec![]));
        let l = lines.clone();
        let sink: Sink = Box::new(move |s| l.lock().unwrap().push(s.to_string()));
        (Progress::with_sink(total, "train", Mode::Plain, sink), lines)
    }

    #[test]
    fn plain_mode_reports_each_tenth_and_the_end() {
        let (p, lines) = captured(100);
        for i in 0..100 {
            p.inc(1);
            p.set_metric("loss", format_metric(1.0 / (i + 1) as f64));
        }
        p.finish();
        p.finish();
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 10, "{lines:?}");
        assert!(lines[0].starts_with("train: 10/100 (10%) "), "{}", lines[0]);
        // the tenth tick comes before the metric of that step
        assert!(lines[0].ends_with(", loss=0.1111"), "{}", lines[0]);
        assert!(lines[9].starts_with("train: 100/100 (100%) "), "{}", lines[9]);
        assert!(lines[9].ends_with("loss=0.01"), "{}", lines[9]);
        assert!(lines.iter().all(|l| !l.contains('\x1b')));
    }

    #[test]
    fn big_steps_and_messages() {
        let (p, lines) = captured(10);
        p.inc(7);
        p.set_message("epoch 1");
        drop(p);
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("train: 7/10 (70%)"));
        assert!(lines[1].ends_with(", epoch 1"), "{}", lines[1]);
    }

    #[test]
    fn zero_total_reports_only_the_end() {
        let (p, lines) = captured(0);
        p.inc(3);
        p.finish();
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("train: 3/0 "), "{}", lines[0]);
    }

    #[test]
    fn metrics_keep_four_significant_digits() {
        assert_eq!(format_metric(0.123), "0.123");
        assert_eq!(format_metric(0.123456), "0.1235");
        assert_eq!(format_metric(12.3456), "12.35");
        assert_eq!(format_metric(1234.0), "1234");
        assert_eq!(format_metric(2.0), "2");
        assert_eq!(format_metric(1.5e-7), "1.500e-7");
        assert_eq!(format_metric(0.0), "0");
    }
}
