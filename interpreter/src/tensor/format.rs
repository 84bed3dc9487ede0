//! `Display` for tensors, following PyTorch's printing rules: one format for
//! all elements (integers shown as `1.`, fixed with 4 decimals, or scientific
//! when magnitudes are far apart), right-aligned columns, lines wrapped at 80
//! characters, and tensors above 1000 elements summarised with `...` keeping
//! 3 items at each edge. dtype and device are shown when not the defaults.

use super::{DType, Device, HostValues, Tensor};
use std::fmt;

const EDGE: usize = 3;
const THRESHOLD: usize = 1000;
const LINE_WIDTH: usize = 80;

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&render(self))
    }
}

/// Formats a float the way Python's `'{:.4e}'` does (`1.0000e+05`).
fn sci(x: f64) -> String {
    let s = format!("{x:.4e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = match e.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', e),
            };
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

fn special(x: f64) -> Option<String> {
    if x.is_nan() {
        Some("nan".into())
    } else if x.is_infinite() {
        Some(if x > 0.0 { "inf" } else { "-inf" }.into())
    } else {
        None
    }
}

/// Formats float values with one shared mode, as PyTorch's `_Formatter`.
fn format_floats(v: &[f64]) -> Vec<String> {
    let finite: Vec<f64> = v.iter().cloned().filter(|x| x.is_finite()).collect();
    let int_mode = finite.iter().all(|x| x.fract() == 0.0);
    let nz: Vec<f64> = finite.iter().map(|x| x.abs()).filter(|&x| x != 0.0).collect();
    let (mx, mn) = (
        nz.iter().cloned().fold(f64::MIN, f64::max),
        nz.iter().cloned().fold(f64::MAX, f64::min),
    );
    let sci_mode = !nz.is_empty()
        && if int_mode {
            mx / mn > 1000.0 || mx > 1e8
        } else {
            mx / mn > 1000.0 || mx > 1e8 || mn < 1e-4
        };
    v.iter()
        .map(|&x| {
            special(x).unwrap_or_else(|| {
                if sci_mode {
                    sci(x)
                } else if int_mode {
                    format!("{x:.0}.")
                } else {
                    format!("{x:.4}")
                }
            })
        })
        .collect()
}

fn format_values(v: &HostValues) -> Vec<String> {
    match v {
        HostValues::Bool(b) => b
            .iter()
            .map(|&x| if x { "True" } else { "False" }.to_string())
            .collect(),
        HostValues::Int(i) => i.iter().map(|x| x.to_string()).collect(),
        HostValues::Float(f) => format_floats(f),
    }
}

/// The width every element is padded to: PyTorch measures floats over their
/// non-zero finite values only (so `nan`, `inf`, `-0.` do not widen a column).
fn column_width(values: &HostValues, strings: &[String]) -> usize {
    let measured = match values {
        HostValues::Float(f) => strings
            .iter()
            .zip(f)
            .filter(|(_, x)| x.is_finite() && **x != 0.0)
            .map(|(s, _)| s.len())
            .max(),
        _ => strings.iter().map(|s| s.len()).max(),
    };
    measured.unwrap_or(1).max(1)
}

/// Keeps the first and last `EDGE` items of every dim longer than `2 * EDGE`.
fn summarize(t: &Tensor) -> crate::core::error::Result<(Tensor, Vec<bool>)> {
    let mut t = t.clone();
    let mut cut = vec![false; t.ndim()];
    for (d, c) in cut.iter_mut().enumerate() {
        let n = t.shape()[d];
        if n > 2 * EDGE {
            let head = t.narrow(d as i64, 0, EDGE as i64)?;
            let tail = t.narrow(d as i64, (n - EDGE) as i64, EDGE as i64)?;
            t = Tensor::cat(&[head, tail], d as i64)?;
            *c = true;
        }
    }
    Ok((t, cut))
}

fn render(t: &Tensor) -> String {
    let prefix = "tensor(";
    let mut suffix = String::new();
    if t.device() != Device::Cpu {
        suffix.push_str(&format!(", device='{}'", t.device()));
    }
    let default_dtype = matches!(t.dtype(), DType::F32 | DType::I64 | DType::Bool);
    if t.numel() == 0 {
        if t.ndim() != 1 {
            suffix.push_str(&format!(", size={:?}", t.shape()));
        }
        if t.dtype() != DType::F32 {
            suffix.push_str(&format!(", dtype={}", t.dtype()));
        }
        return format!("{prefix}[]{suffix})");
    }
    if !default_dtype {
        suffix.push_str(&format!(", dtype={}", t.dtype()));
    }
    let (small, cut) = if t.numel() > THRESHOLD {
        summarize(t).unwrap_or_else(|_| (t.clone(), vec![false; t.ndim()]))
    } else {
        (t.clone(), vec![false; t.ndim()])
    };
    let host = match small.to_host() {
        Ok(h) => h,
        Err(e) => return format!("<tensor of shape {:?} on {}: {e}>", t.shape(), t.device()),
    };
    let strings = format_values(&host);
    let width = column_width(&host, &strings);
    let padded: Vec<String> = strings.iter().map(|s| format!("{s:>width$}")).collect();
    let body = if t.ndim() == 0 {
        strings[0].clone()
    } else {
        nested(&padded, small.shape(), &cut, prefix.len(), width)
    };
    format!("{prefix}{body}{suffix})")
}

/// Renders row-major strings with `shape` as nested brackets.
fn nested(v: &[String], shape: &[usize], cut: &[bool], indent: usize, width: usize) -> String {
    let n = shape[0];
    if shape.len() == 1 {
        let mut items: Vec<String> = v.to_vec();
        if cut[0] {
            items.insert(EDGE, " ...".into());
        }
        let per_line = ((LINE_WIDTH.saturating_sub(indent)) / (width + 2)).max(1);
        let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
        return format!("[{}]", lines.join(&format!(",\n{}", " ".repeat(indent + 1))));
    }
    let inner = crate::core::shape::numel(&shape[1..]);
    let mut parts: Vec<String> = (0..n)
        .map(|i| {
            nested(
                &v[i * inner..(i + 1) * inner],
                &shape[1..],
                &cut[1..],
                indent + 1,
                width,
            )
        })
        .collect();
    if cut[0] {
        parts.insert(EDGE, "...".into());
    }
    let sep = format!(",{}{}", "\n".repeat(shape.len() - 1), " ".repeat(indent + 1));
    format!("[{}]", parts.join(&sep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_modes() {
        assert_eq!(format_floats(&[1.0, 2.0]), vec!["1.", "2."]);
        assert_eq!(format_floats(&[1.5, 2.0]), vec!["1.5000", "2.0000"]);
        assert_eq!(format_floats(&[1e-5, 1.0]), vec!["1.0000e-05", "1.0000e+00"]);
        assert_eq!(format_floats(&[f64::NAN, 1.0]), vec!["nan", "1."]);
        assert_eq!(sci(123456.0), "1.2346e+05");
    }
}
