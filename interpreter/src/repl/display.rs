//! How the session shows things: the echo of a value (tensors exactly as
//! `print` shows them, never a Rust type path), script errors with a caret
//! under the offending position, byte counts and durations.

use kiln::{ScriptError, Tensor};
use rhai::{Dynamic, Engine};
use std::fmt::Write;
use std::time::Duration;

/// The echo of a value, or `None` for `()` (statements echo nothing).
pub fn echo(engine: &Engine, value: &Dynamic) -> Option<String> {
    if value.is_unit() {
        return None;
    }
    let mut out = String::new();
    repr(engine, value, &mut out);
    Some(out)
}

/// Writes `value` as a script would write it: strings quoted, arrays and maps
/// element by element, tensors through their `Display` (what `print` uses).
fn repr(engine: &Engine, value: &Dynamic, out: &mut String) {
    if let Some(t) = value.read_lock::<Tensor>() {
        let _ = write!(out, "{}", *t);
    } else if let Some(s) = value.read_lock::<rhai::ImmutableString>() {
        let _ = write!(out, "{:?}", s.as_str());
    } else if let Some(a) = value.read_lock::<rhai::Array>() {
        out.push('[');
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            repr(engine, v, out);
        }
        out.push(']');
    } else if let Some(m) = value.read_lock::<rhai::Map>() {
        out.push_str("#{");
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            if is_identifier(k) {
                out.push_str(k);
            } else {
                let _ = write!(out, "{:?}", k.as_str());
            }
            out.push_str(": ");
            repr(engine, v, out);
        }
        out.push('}');
    } else if value.is_variant() {
        // A type registered by an embedder: its script name, not a Rust path.
        let _ = write!(out, "<{}>", engine.map_type_name(value.type_name()));
    } else {
        let _ = write!(out, "{value}");
    }
}

/// True for a plain identifier (`a`, `_x1`), which a map key needs no quotes for.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The script name of a value's type (`Tensor`, `i64`, `array`).
pub fn type_name(engine: &Engine, value: &Dynamic) -> String {
    engine.map_type_name(value.type_name()).to_string()
}

/// An error as `error: SOURCE:LINE:COL: message`, then the offending line
/// of `text` (the source that was run) with a `^` under the column.
pub fn error(err: &ScriptError, text: Option<&str>) -> String {
    let mut out = format!("error: {err}");
    if let (Some(text), Some(line)) = (text, err.line) {
        if let Some(caret) = caret(text, line, err.column.unwrap_or(1)) {
            out.push('\n');
            out.push_str(&caret);
        }
    }
    out
}

/// The 1-based `line` of `text`, indented, and a caret under 1-based `column`
/// (at the end of the line when the column is past it); `None` when the line
/// does not exist.
pub fn caret(text: &str, line: usize, column: usize) -> Option<String> {
    let src = text.lines().nth(line.checked_sub(1)?)?;
    let width = src.chars().count();
    let mut marker: String = src
        .chars()
        .take(column.saturating_sub(1).min(width))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    marker.push('^');
    Some(format!("    {src}\n    {marker}"))
}

/// A byte count with a binary unit: `0 B`, `1.5 KiB`, `2.0 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A duration with a unit that fits it: `850 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} µs", s * 1e6)
    } else {
        format!("{} ns", d.as_nanos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_column() {
        assert_eq!(caret("x + y", 1, 3).unwrap(), "    x + y\n      ^");
        assert_eq!(caret("a\n\tb c", 2, 4).unwrap(), "    \tb c\n    \t  ^");
        assert_eq!(caret("ab", 1, 9).unwrap(), "    ab\n      ^");
        assert!(caret("ab", 3, 1).is_none());
        assert!(caret("ab", 0, 1).is_none());
    }

    #[test]
    fn values() {
        let e = Engine::new();
        assert_eq!(echo(&e, &Dynamic::UNIT), None);
        assert_eq!(echo(&e, &Dynamic::from(3_i64)).unwrap(), "3");
        assert_eq!(echo(&e, &Dynamic::from("a\"b")).unwrap(), "\"a\\\"b\"");
        let arr: rhai::Array = vec![Dynamic::from(1_i64), Dynamic::from("x")];
        assert_eq!(echo(&e, &Dynamic::from(arr)).unwrap(), "[1, \"x\"]");
        let mut m = rhai::Map::new();
        m.insert("a".into(), Dynamic::from(1.5_f64));
        m.insert("b c".into(), Dynamic::from(true));
        assert_eq!(echo(&e, &Dynamic::from(m)).unwrap(), "#{a: 1.5, \"b c\": true}");
        #[derive(Clone)]
        struct Thing;
        let mut e = Engine::new();
        e.register_type_with_name::<Thing>("Thing");
        assert_eq!(echo(&e, &Dynamic::from(Thing)).unwrap(), "<Thing>");
    }

    #[test]
    fn units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(duration(Duration::from_nanos(850)), "850 ns");
        assert_eq!(duration(Duration::from_micros(4560)), "4.560 ms");
        assert_eq!(duration(Duration::from_millis(1234)), "1.234 s");
    }
}
