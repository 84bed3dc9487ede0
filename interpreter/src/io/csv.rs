//! Numeric CSV tables: a file (plain or gzip-compressed, detected by its
//! magic bytes or a `.gz` name) becomes a 2-D tensor of rows × columns.
//!
//! Parsing uses the `csv` crate, which handles quoted fields, CRLF line ends
//! and reports the line of each record; cells are trimmed and read as
//! numbers here, so an error names the file, line and column. Blank lines
//! are skipped. The header row is skipped when `header` is true; when it is
//! not given, a first row with any cell that is not a number is taken as the
//! header (empty cells do not count). `columns` picks and orders columns by index (negative counts from
//! the end) or, with a header, by name; only the picked columns must be
//! numeric, so a text column can be left out. Every row must have as many
//! fields as the first.
//!
//! Integer dtypes take integers (`3`, `3.0`, `3e2`) within the dtype's range:
//! `300` or `-1` for u8, `3000000000` for i32 are errors naming the line and
//! column, as NumPy and PyTorch refuse them, not wrapped values.
//!
//! The text is parsed as it streams in (see `feed`), never held whole: the
//! table's cells and the record being read are checked against the memory
//! budget as they grow, and the text against the budget and the table it
//! yields, so a huge or endless input, or a gzip bomb, stops early.

use super::{Decode, FileAccess};
use crate::core::error::{Error, Result};
use crate::core::{DType, Device, HostValues};
use crate::tensor::Tensor;
use feed::{Feed, Track};
use std::cell::RefCell;
use std::io::Read;
use std::path::Path;

mod feed;

/// A column picked by `columns`.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// By 0-based position; negative counts from the end.
    Index(i64),
    /// By header name.
    Name(String),
}

/// How to read a CSV file.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvOptions {
    /// Whether the first row is a header; `None` detects it.
    pub header: Option<bool>,
    /// The field separator.
    pub delimiter: u8,
    /// Lines starting with this byte are skipped.
    pub comment: Option<u8>,
    /// The columns to keep, in order; `None` keeps all.
    pub columns: Option<Vec<Column>>,
    /// The dtype of the tensor.
    pub dtype: DType,
}

impl Default for CsvOptions {
    /// Header detected, comma-separated, all columns, f32.
    fn default() -> Self {
        CsvOptions {
            header: None,
            delimiter: b',',
            comment: None,
            columns: None,
            dtype: DType::F32,
        }
    }
}

/// A parsed table: column names (empty without a header) and values.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvTable {
    /// The header names of the kept columns; empty when the file has no header.
    pub header: Vec<String>,
    /// Number of data rows.
    pub rows: usize,
    /// Number of kept columns.
    pub cols: usize,
    /// The cells, row-major: floats for float dtypes, ints or bools otherwise.
    pub values: HostValues,
}

impl CsvTable {
    /// The table as a `[rows, cols]` tensor of `dtype` on `device`.
    pub fn to_tensor(&self, dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::from_host(&self.values, &[self.rows, self.cols], dtype, device)
    }
}

const OP: &str = "load_csv";

/// Reads the CSV file at `path`; returns the table's header names and its tensor.
pub fn load(
    files: &FileAccess,
    path: &Path,
    opts: &CsvOptions,
    device: Device,
) -> Result<(Vec<String>, Tensor)> {
    let src = files.open(OP, path, true)?;
    let table = read(src.reader, opts).map_err(|e| e.into_error(OP, path))?;
    Ok((table.header.clone(), table.to_tensor(opts.dtype, device)?))
}

/// True for a cell that reads as a number (or `true`/`false` for bool tables).
fn is_value(cell: &[u8], dtype: DType) -> bool {
    std::str::from_utf8(cell).is_ok_and(|s| {
        s.parse::<f64>().is_ok()
            || (dtype == DType::Bool && (s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false")))
    })
}

fn text(cell: &[u8]) -> String {
    String::from_utf8_lossy(cell).into_owned()
}

/// One cell converted for `dtype`, or why it cannot be.
fn cell_value(cell: &[u8], dtype: DType) -> std::result::Result<Cell, String> {
    let s = std::str::from_utf8(cell).map_err(|_| "the cell is not valid UTF-8".to_string())?;
    if s.is_empty() {
        return Err("empty cell".into());
    }
    let not_number = || format!("cannot read \"{s}\" as a number");
    match dtype {
        DType::Bool => match s.to_ascii_lowercase().as_str() {
            "true" => Ok(Cell::Bool(true)),
            "false" => Ok(Cell::Bool(false)),
            _ => s
                .parse::<f64>()
                .map(|f| Cell::Bool(f != 0.0))
                .map_err(|_| not_number()),
        },
        d if d.is_int() => {
            let (lo, hi) = d.int_range().unwrap_or((i64::MIN, i64::MAX));
            let out_of_range = || format!("{s} is out of range for dtype {d} ({lo} to {hi})");
            let i = match s.parse::<i64>() {
                Ok(i) => i,
                Err(_) => {
                    let f = s.parse::<f64>().map_err(|_| not_number())?;
                    if f.fract() != 0.0 || !f.is_finite() {
                        return Err(format!("\"{s}\" is not an integer (dtype {dtype})"));
                    }
                    // every integral f64 in [-2^63, 2^63) converts to i64 exactly
                    let two_63 = -(i64::MIN as f64);
                    if !(-two_63..two_63).contains(&f) {
                        return Err(out_of_range());
                    }
                    f as i64
                }
            };
            if i < lo || i > hi {
                return Err(out_of_range());
            }
            Ok(Cell::Int(i))
        }
        _ => s.parse::<f64>().map(Cell::Float).map_err(|_| not_number()),
    }
}

enum Cell {
    Bool(bool),
    Int(i64),
    Float(f64),
}

/// Resolves `columns` against the row width and header into 0-based indices.
fn resolve(
    columns: &[Column],
    width: usize,
    header: Option<&[String]>,
) -> std::result::Result<Vec<usize>, String> {
    columns
        .iter()
        .map(|c| match c {
            Column::Index(i) => {
                let j = if *i < 0 { *i + width as i64 } else { *i };
                if j < 0 || j >= width as i64 {
                    Err(format!("column {i} is out of range for rows of {width} fields"))
                } else {
                    Ok(j as usize)
                }
            }
            Column::Name(n) => match header {
                Some(h) => h
                    .iter()
                    .position(|x| x == n)
                    .ok_or_else(|| format!("no column named \"{n}\" (the header has {})", h.join(", "))),
                None => Err(format!(
                    "column \"{n}\" is picked by name, but the file has no header"
                )),
            },
        })
        .collect()
}

/// Parses CSV text into a table; the error names the line and column.
pub fn parse(bytes: &[u8], opts: &CsvOptions) -> std::result::Result<CsvTable, Decode> {
    read(bytes, opts)
}

/// A growing column of cells whose cost (with the tensor it will become)
/// is reserved on the [`Track`] before it grows.
fn push<T>(v: &mut Vec<T>, x: T, dtype: DType, track: &RefCell<Track>) -> std::result::Result<(), Decode> {
    if v.len() == v.capacity() {
        let cost = |n: usize| n.saturating_mul(std::mem::size_of::<T>() + dtype.size_in_bytes());
        let cap = v.capacity();
        let mut t = track.borrow_mut();
        let doubled = cap.saturating_mul(2).max(1024);
        let new_cap = if t.reserve_table(cost(doubled)).is_ok() {
            doubled
        } else {
            let step = cap.saturating_add((cap / 16).max(64));
            t.reserve_table(cost(step))?;
            step
        };
        v.try_reserve_exact(new_cap - v.len()).map_err(|e| {
            Decode::Kiln(Error::OutOfMemory {
                op: OP,
                bytes: cost(new_cap),
                device: "cpu".into(),
                why: e.to_string(),
            })
        })?;
    }
    v.push(x);
    Ok(())
}

/// The error of the csv reader: a read error (which may carry the
/// [`Track`]'s verdict) or malformed text.
fn csv_error(e: ::csv::Error) -> Decode {
    if !matches!(e.kind(), ::csv::ErrorKind::Io(_)) {
        return Decode::Format(e.to_string());
    }
    match e.into_kind() {
        ::csv::ErrorKind::Io(io) => Decode::from(io),
        kind => Decode::Format(format!("{kind:?}")),
    }
}

/// Parses the CSV text `r` streams into a table.
fn read(r: impl Read, opts: &CsvOptions) -> std::result::Result<CsvTable, Decode> {
    let track = Track::new(OP, opts.delimiter, opts.comment);
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(opts.delimiter)
        .comment(opts.comment)
        .trim(::csv::Trim::All)
        .from_reader(Feed::new(r, track.clone()));
    let mut rec = ::csv::ByteRecord::new();
    let mut header: Option<Vec<String>> = None;
    let mut width: Option<(usize, u64)> = None;
    let mut picked: Option<Vec<usize>> = None;
    let (mut floats, mut ints, mut bools) = (vec![], vec![], vec![]);
    let mut rows = 0;
    let mut first = true;
    while reader.read_byte_record(&mut rec).map_err(csv_error)? {
        // number lines from byte offsets: the reader's own count skips blank lines
        let position = rec.position().map_or(0, |p| p.byte());
        let line = track.borrow_mut().line_of(position, reader.position().byte());
        let (w, first_line) = *width.get_or_insert((rec.len(), line));
        if rec.len() != w {
            return Err(Decode::Format(format!(
                "line {line} has {} fields, expected {w} as on line {first_line}",
                rec.len()
            )));
        }
        if first {
            first = false;
            let is_header = opts
                .header
                .unwrap_or_else(|| !rec.iter().all(|c| c.is_empty() || is_value(c, opts.dtype)));
            if is_header {
                header = Some(rec.iter().map(text).collect());
                continue;
            }
        }
        let cols = match &picked {
            Some(c) => c,
            None => picked.insert(match &opts.columns {
                Some(c) => resolve(c, w, header.as_deref())?,
                None => (0..w).collect(),
            }),
        };
        for &j in cols.iter() {
            let cell = rec.get(j).unwrap_or_default();
            let value = cell_value(cell, opts.dtype)
                .map_err(|m| Decode::Format(format!("line {line}, column {}: {m}", j + 1)))?;
            match value {
                Cell::Bool(b) => push(&mut bools, b, opts.dtype, &track)?,
                Cell::Int(i) => push(&mut ints, i, opts.dtype, &track)?,
                Cell::Float(f) => push(&mut floats, f, opts.dtype, &track)?,
            }
        }
        rows += 1;
    }
    let picked = match picked {
        Some(p) => p,
        // no data rows: the columns still resolve against the header
        None => match &opts.columns {
            Some(c) => resolve(c, width.map_or(0, |w| w.0), header.as_deref())?,
            None => (0..width.map_or(0, |w| w.0)).collect(),
        },
    };
    let header = header
        .map(|h| {
            picked
                .iter()
                .map(|&j| h.get(j).cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    let values = match opts.dtype {
        DType::Bool => HostValues::Bool(bools),
        d if d.is_int() => HostValues::Int(ints),
        _ => HostValues::Float(floats),
    };
    Ok(CsvTable {
        header,
        rows,
        cols: picked.len(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Error;
    use crate::core::MemoryBudget;
    use std::io::Write;
    use std::sync::Arc;

    fn table(s: &str, opts: &CsvOptions) -> std::result::Result<CsvTable, String> {
        parse(s.as_bytes(), opts).map_err(|e| e.to_string())
    }

    fn floats(t: &CsvTable) -> Vec<f64> {
        match &t.values {
            HostValues::Float(v) => v.clone(),
            other => panic!("expected floats, got {other:?}"),
        }
    }

    #[test]
    fn reads_a_plain_table() {
        let t = table("1,2,3\n4,5,6\n", &CsvOptions::default()).unwrap();
        assert_eq!((t.rows, t.cols), (2, 3));
        assert!(t.header.is_empty());
        assert_eq!(floats(&t), vec![1., 2., 3., 4., 5., 6.]);
    }

    #[test]
    fn detects_and_skips_a_header() {
        let t = table("a, b\n1, 2.5\r\n\n-3e2,nan\n", &CsvOptions::default()).unwrap();
        assert_eq!(t.header, vec!["a", "b"]);
        assert_eq!((t.rows, t.cols), (2, 2));
        let v = floats(&t);
        assert_eq!(&v[..3], &[1., 2.5, -300.]);
        assert!(v[3].is_nan());
        // iris-like: numbers and names in the first row
        let t = table("150,4,setosa\n5.1,3.5,0\n", &CsvOptions::default()).unwrap();
        assert_eq!(t.header, vec!["150", "4", "setosa"]);
        assert_eq!(t.rows, 1);
    }

    #[test]
    fn header_option_overrides_detection() {
        let opts = CsvOptions {
            header: Some(true),
            ..CsvOptions::default()
        };
        let t = table("10,20\n1,2\n", &opts).unwrap();
        assert_eq!(t.header, vec!["10", "20"]);
        assert_eq!(floats(&t), vec![1., 2.]);
        let opts = CsvOptions {
            header: Some(false),
            ..CsvOptions::default()
        };
        let e = table("x,y\n1,2\n", &opts).unwrap_err();
        assert_eq!(e, "line 1, column 1: cannot read \"x\" as a number");
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = table("1,2,3\n4,five,6\n", &CsvOptions::default()).unwrap_err();
        assert_eq!(e, "line 2, column 2: cannot read \"five\" as a number");
        let e = table("1,2,3\n4,5\n", &CsvOptions::default()).unwrap_err();
        assert_eq!(e, "line 2 has 2 fields, expected 3 as on line 1");
        let e = table("1,2\n\n3,\n", &CsvOptions::default()).unwrap_err();
        assert_eq!(e, "line 3, column 2: empty cell");
    }

    #[test]
    fn picks_columns_by_index_and_name() {
        let src = "x,y,name\n1,2,a\n3,4,b\n";
        let opts = CsvOptions {
            columns: Some(vec![Column::Index(1), Column::Name("x".into())]),
            ..CsvOptions::default()
        };
        let t = table(src, &opts).unwrap();
        assert_eq!(t.header, vec!["y", "x"]);
        assert_eq!(floats(&t), vec![2., 1., 4., 3.]);
        let opts = CsvOptions {
            columns: Some(vec![Column::Index(-1)]),
            ..CsvOptions::default()
        };
        assert!(table(src, &opts).unwrap_err().contains("cannot read \"a\""));
        let opts = CsvOptions {
            columns: Some(vec![Column::Name("z".into())]),
            ..CsvOptions::default()
        };
        assert!(table(src, &opts).unwrap_err().contains("no column named \"z\""));
        let opts = CsvOptions {
            columns: Some(vec![Column::Index(3)]),
            ..CsvOptions::default()
        };
        assert!(table(src, &opts).unwrap_err().contains("out of range"));
    }

    #[test]
    fn other_delimiters_comments_and_quotes() {
        let opts = CsvOptions {
            delimiter: b';',
            comment: Some(b'#'),
            ..CsvOptions::default()
        };
        let t = table("# a comment\n\"1\";2\n3;\" 4 \"\n", &opts).unwrap();
        assert_eq!(floats(&t), vec![1., 2., 3., 4.]);
        let e = table("1;2\n# note\n\n3;x\n", &opts).unwrap_err();
        assert_eq!(e, "line 4, column 2: cannot read \"x\" as a number");
    }

    #[test]
    fn integer_and_bool_dtypes() {
        let opts = CsvOptions {
            dtype: DType::I64,
            ..CsvOptions::default()
        };
        let t = table("9007199254740993,2.0\n-1,0\n", &opts).unwrap();
        assert_eq!(t.values, HostValues::Int(vec![9007199254740993, 2, -1, 0]));
        assert!(table("1.5\n", &opts).unwrap_err().contains("not an integer"));
        let opts = CsvOptions {
            dtype: DType::Bool,
            ..CsvOptions::default()
        };
        let t = table("true,0\nFALSE,2\n", &opts).unwrap();
        assert_eq!(t.values, HostValues::Bool(vec![true, false, false, true]));
    }

    #[test]
    fn empty_inputs() {
        let t = table("", &CsvOptions::default()).unwrap();
        assert_eq!((t.rows, t.cols), (0, 0));
        let t = table("a,b\n", &CsvOptions::default()).unwrap();
        assert_eq!((t.rows, t.cols), (0, 2));
        assert_eq!(t.to_tensor(DType::F32, Device::Cpu).unwrap().shape(), &[0, 2]);
    }

    #[test]
    fn loads_gzip_by_magic_and_by_name() {
        let dir = std::env::temp_dir().join(format!("kiln-csv-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::default());
        gz.write_all(b"a,b\n1,2\n3,4\n").unwrap();
        let gz = gz.finish().unwrap();
        let files = FileAccess::default();
        for name in ["t.csv.gz", "t.csv"] {
            let p = dir.join(name);
            std::fs::write(&p, &gz).unwrap();
            let (h, t) = load(&files, &p, &CsvOptions::default(), Device::Cpu).unwrap();
            assert_eq!(h, vec!["a", "b"]);
            assert_eq!(t.shape(), &[2, 2]);
            assert_eq!(t.to_host().unwrap(), HostValues::Float(vec![1., 2., 3., 4.]));
        }
        let p = dir.join("bad.csv.gz");
        std::fs::write(&p, b"1,2\n").unwrap();
        let e = load(&files, &p, &CsvOptions::default(), Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.csv.gz") && e.contains("gzip"), "{e}");
        let p = dir.join("ragged.csv");
        std::fs::write(&p, b"1,2\n3\n").unwrap();
        let e = load(&files, &p, &CsvOptions::default(), Device::Cpu)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("load_csv: '")
                && e.ends_with("ragged.csv': line 2 has 1 fields, expected 2 as on line 1"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_the_digits_data_set() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/digits.csv.gz");
        let (header, t) = load(&FileAccess::default(), &path, &CsvOptions::default(), Device::Cpu).unwrap();
        assert!(header.is_empty());
        assert_eq!(t.shape(), &[1797, 65]);
        let HostValues::Float(v) = t.to_host().unwrap() else {
            panic!("expected floats")
        };
        assert_eq!(&v[..8], &[0., 0., 5., 13., 9., 1., 0., 0.]);
        assert!(v.iter().all(|&x| (0.0..=16.0).contains(&x) && x.fract() == 0.0));
        // the last column holds the labels 0..9, each digit about 180 times
        let labels: Vec<f64> = v.chunks(65).map(|r| r[64]).collect();
        assert_eq!(&labels[..3], &[0., 1., 2.]);
        for d in 0..10 {
            let n = labels.iter().filter(|&&l| l == d as f64).count();
            assert!((170..=190).contains(&n), "digit {d}: {n}");
        }
    }

    #[test]
    fn disabled_access_is_an_error() {
        let files = FileAccess::new(false);
        let e = load(&files, Path::new("x.csv"), &CsvOptions::default(), Device::Cpu).unwrap_err();
        assert_eq!(e, Error::FilesDisabled { op: "load_csv" });
    }

    fn ints(src: &str, dtype: DType) -> std::result::Result<HostValues, String> {
        let opts = CsvOptions {
            dtype,
            ..CsvOptions::default()
        };
        table(src, &opts).map(|t| t.values)
    }

    #[test]
    fn integers_out_of_the_dtypes_range_are_errors() {
        assert_eq!(
            ints("1,255,0\n", DType::U8).unwrap(),
            HostValues::Int(vec![1, 255, 0])
        );
        assert_eq!(
            ints("1,300\n", DType::U8).unwrap_err(),
            "line 1, column 2: 300 is out of range for dtype u8 (0 to 255)"
        );
        assert_eq!(
            ints("1\n\n-1\n", DType::U8).unwrap_err(),
            "line 3, column 1: -1 is out of range for dtype u8 (0 to 255)"
        );
        assert_eq!(
            ints("2.56e2\n", DType::U8).unwrap_err(),
            "line 1, column 1: 2.56e2 is out of range for dtype u8 (0 to 255)"
        );
        assert_eq!(ints("255.0\n", DType::U8).unwrap(), HostValues::Int(vec![255]));
        assert_eq!(
            ints("2147483647,-2147483648\n", DType::I32).unwrap(),
            HostValues::Int(vec![2147483647, -2147483648])
        );
        assert_eq!(
            ints("0,3000000000\n", DType::I32).unwrap_err(),
            "line 1, column 2: 3000000000 is out of range for dtype i32 (-2147483648 to 2147483647)"
        );
        assert_eq!(
            ints("9223372036854775807\n", DType::I64).unwrap(),
            HostValues::Int(vec![i64::MAX])
        );
        for big in ["9223372036854775808", "1e19", "-9.3e18"] {
            let e = ints(&format!("{big}\n"), DType::I64).unwrap_err();
            assert!(
                e.ends_with("is out of range for dtype i64 (-9223372036854775808 to 9223372036854775807)"),
                "{e}"
            );
        }
        assert!(ints("inf\n", DType::I64).unwrap_err().contains("not an integer"));
    }

    /// A reader that counts the bytes it hands out.
    struct Counted<R> {
        inner: R,
        n: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl<R: Read> Read for Counted<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let k = self.inner.read(buf)?;
            self.n.fetch_add(k, std::sync::atomic::Ordering::Relaxed);
            Ok(k)
        }
    }

    /// Parses `r` under a budget of `limit` bytes; the error and the bytes read.
    fn read_under_budget(r: impl Read, limit: usize) -> (Decode, usize) {
        let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let budget = Arc::new(MemoryBudget::new(limit));
        let _scope = budget.enter();
        let r = Counted {
            inner: r,
            n: n.clone(),
        };
        let e = read(r, &CsvOptions::default()).unwrap_err();
        (e, n.load(std::sync::atomic::Ordering::Relaxed))
    }

    #[test]
    fn a_gzip_bomb_stops_while_it_streams() {
        // 1 GiB of text: one 1 MiB gzip member, 1024 times over
        let row = b"0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n";
        let mut gz = flate2::write::GzEncoder::new(vec![], flate2::Compression::best());
        gz.write_all(&row.repeat((1 << 20) / row.len())).unwrap();
        let member = gz.finish().unwrap();
        let bomb = member.repeat(1024);
        assert!(bomb.len() < 4 << 20, "{} bytes", bomb.len());
        let (e, n) = read_under_budget(flate2::read::MultiGzDecoder::new(bomb.as_slice()), 4 << 20);
        assert!(
            matches!(e, Decode::Kiln(Error::MemoryLimit { op: "load_csv", .. })),
            "{e}"
        );
        // the table of 12-byte cells filled the budget after ~1/3 MiB of cells
        assert!(n < 2 << 20, "{n} bytes read");
        // through the loader, by name and magic
        let p = std::env::temp_dir().join(format!("kiln-csv-bomb-{}.csv.gz", std::process::id()));
        std::fs::write(&p, &bomb).unwrap();
        let budget = Arc::new(MemoryBudget::new(4 << 20));
        let scope = budget.enter();
        let e = load(&FileAccess::default(), &p, &CsvOptions::default(), Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::MemoryLimit { op: "load_csv", .. }), "{e}");
        drop(scope);
        assert_eq!(budget.in_use(), 0);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn endless_text_stops_early() {
        // one endless field: the record being read outgrows the budget
        let (e, n) = read_under_budget(std::io::repeat(b'1'), 4 << 20);
        assert!(matches!(e, Decode::Kiln(Error::MemoryLimit { .. })), "{e}");
        assert!(n < 4 << 20, "{n} bytes read");
        // endless blank lines cost nothing to hold, but the text counts against the budget
        let (e, n) = read_under_budget(std::io::repeat(b'\n'), 4 << 20);
        assert!(matches!(e, Decode::Kiln(Error::MemoryLimit { .. })), "{e}");
        assert!(n <= (4 << 20) + (64 << 10), "{n} bytes read");
        // and without a budget, text out of all proportion to its table is refused
        let blank_then_row = std::io::repeat(b'\n')
            .take(feed::TEXT_FREE + 1)
            .chain(&b"1\n"[..]);
        let e = read(blank_then_row, &CsvOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("decompression bomb"), "{e}");
        // NUL bytes: not text at all
        let e = load(
            &FileAccess::default(),
            Path::new("/dev/zero"),
            &CsvOptions::default(),
            Device::Cpu,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "load_csv: '/dev/zero': byte 1 is a NUL byte: this is not a text file"
        );
    }

    #[test]
    fn a_table_that_fits_the_budget_loads() {
        let src = format!("a,b\n{}", "1.5,2\n".repeat(10_000));
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let _scope = budget.enter();
        let t = parse(src.as_bytes(), &CsvOptions::default()).unwrap();
        assert_eq!((t.rows, t.cols), (10_000, 2));
        let tensor = t.to_tensor(DType::F32, Device::Cpu).unwrap();
        assert_eq!(budget.in_use(), 80_000 + Tensor::handle_bytes(2));
        drop(tensor);
        // 20 000 cells cost 12 bytes each while parsing: 240 kB do not fit in 200 kB
        let small = Arc::new(MemoryBudget::new(200_000));
        let _inner = small.enter();
        let e = parse(src.as_bytes(), &CsvOptions::default()).unwrap_err();
        assert!(matches!(e, Decode::Kiln(Error::MemoryLimit { .. })), "{e}");
    }
}
