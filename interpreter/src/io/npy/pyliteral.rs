//! The Python literals of a `.npy` header (`{'descr': '<f4', 'fortran_order':
//! False, 'shape': (2, 3), }`): strings, integers, `True`, `False`, `None`,
//! tuples, lists and dicts, parsed by a small recursive-descent parser whose
//! nesting depth is bounded, so a hostile header cannot exhaust the stack.

/// Deepest nesting of brackets the parser follows.
const MAX_DEPTH: usize = 8;

/// Parses `text`, one literal with only whitespace around it.
pub(super) fn parse(text: &str) -> Result<Py, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.skip_ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the header dict at byte {}", p.i));
    }
    Ok(v)
}

/// The Python literals a header may hold.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Py {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<Py>),
    List(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

/// A recursive-descent parser over the header text, bounded in depth.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!(
                "malformed header: expected '{}' at byte {}",
                c as char, self.i
            ))
        }
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Py, String> {
        if depth > MAX_DEPTH {
            return Err("malformed header: nested too deeply".into());
        }
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut entries = vec![];
                while self.peek() != Some(b'}') {
                    // duplicate keys are kept in order; the reader takes the last, as a Python dict does
                    let Py::Str(key) = self.value(depth + 1)? else {
                        return Err(format!(
                            "malformed header: dict key at byte {} is not a string",
                            self.i
                        ));
                    };
                    self.expect(b':')?;
                    entries.push((key, self.value(depth + 1)?));
                    if self.peek() != Some(b',') {
                        break;
                    }
                    self.i += 1;
                }
                self.expect(b'}')?;
                Ok(Py::Dict(entries))
            }
            Some(open @ (b'(' | b'[')) => {
                self.i += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let mut items = vec![];
                while self.peek() != Some(close) {
                    items.push(self.value(depth + 1)?);
                    if self.peek() != Some(b',') {
                        break;
                    }
                    self.i += 1;
                }
                self.expect(close)?;
                Ok(if open == b'(' {
                    Py::Tuple(items)
                } else {
                    Py::List(items)
                })
            }
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                while self.s.get(self.i).is_some_and(|&c| c != q) {
                    self.i += 1;
                }
                if self.i >= self.s.len() {
                    return Err("malformed header: unterminated string".into());
                }
                let s = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                self.i += 1;
                Ok(Py::Str(s))
            }
            Some(c) if c.is_ascii_digit() || c == b'-' => {
                let start = self.i;
                self.i += 1;
                while self.s.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
                    self.i += 1;
                }
                // Python 2 headers wrote longs as `3L`
                let digits = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                digits
                    .parse()
                    .map(Py::Int)
                    .map_err(|_| format!("malformed header: bad integer '{digits}'"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.i += 1;
                }
                match &self.s[start..self.i] {
                    b"True" => Ok(Py::Bool(true)),
                    b"False" => Ok(Py::Bool(false)),
                    b"None" => Ok(Py::None),
                    w => Err(format!(
                        "malformed header: unexpected word '{}'",
                        String::from_utf8_lossy(w)
                    )),
                }
            }
            Some(c) => Err(format!(
                "malformed header: unexpected '{}' at byte {}",
                c as char, self.i
            )),
            None => Err("malformed header: it ends early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals() {
        let v = parse("{'a': (1, -2,), \"b\": [True, None], 'c': 3L, 'a': False}").unwrap();
        assert_eq!(
            v,
            Py::Dict(vec![
                ("a".into(), Py::Tuple(vec![Py::Int(1), Py::Int(-2)])),
                ("b".into(), Py::List(vec![Py::Bool(true), Py::None])),
                ("c".into(), Py::Int(3)),
                ("a".into(), Py::Bool(false)),
            ])
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "(".repeat(100_000);
        assert_eq!(parse(&deep).unwrap_err(), "malformed header: nested too deeply");
        let ok = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_ok());
        let over = format!("{}1{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert!(parse(&over).is_err());
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in ["", "{", "{'a' 1}", "{1: 2}", "'open", "(1 2)", "Nope", "{}x", "@"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
