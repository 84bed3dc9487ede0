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

use super::{format_error, FileAccess};
use crate::error::Result;
use crate::tensor::{DType, Device, HostValues, Tensor};
use std::path::Path;

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
    let bytes = files.read(OP, path)?;
    let bytes = super::gunzip_if_compressed(OP, path, bytes)?;
    let table = parse(&bytes, opts).map_err(|msg| format_error(OP, path, msg))?;
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
            if let Ok(i) = s.parse::<i64>() {
                return Ok(Cell::Int(i));
            }
            let f = s.parse::<f64>().map_err(|_| not_number())?;
            if f.fract() != 0.0 || !f.is_finite() || f.abs() > 9.2e18 {
                return Err(format!("\"{s}\" is not an integer (dtype {dtype})"));
            }
            Ok(Cell::Int(f as i64))
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

/// Where the record read from byte `at` begins: past the blank and comment
/// lines the reader skipped.
fn record_start(bytes: &[u8], mut at: usize, comment: Option<u8>) -> usize {
    loop {
        match bytes.get(at) {
            Some(b'\r' | b'\n') => at += 1,
            Some(&c) if Some(c) == comment => {
                at = bytes[at..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |i| at + i + 1)
            }
            _ => return at.min(bytes.len()),
        }
    }
}

/// Parses CSV text into a table; the error names the line and column.
pub fn parse(bytes: &[u8], opts: &CsvOptions) -> std::result::Result<CsvTable, String> {
    let mut reader = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(opts.delimiter)
        .comment(opts.comment)
        .trim(::csv::Trim::All)
        .from_reader(bytes);
    let mut records = reader.byte_records();
    let mut header: Option<Vec<String>> = None;
    let mut width: Option<(usize, u64)> = None;
    let mut picked: Option<Vec<usize>> = None;
    let (mut floats, mut ints, mut bools) = (vec![], vec![], vec![]);
    let mut rows = 0;
    let mut first = true;
    let (mut line, mut seen) = (1u64, 0usize);
    for rec in records.by_ref() {
        let rec = rec.map_err(|e| e.to_string())?;
        // count lines from byte offsets: the reader's own count skips blank lines
        let at = record_start(
            bytes,
            rec.position().map_or(0, |p| p.byte() as usize),
            opts.comment,
        );
        line += bytes[seen..at].iter().filter(|&&b| b == b'\n').count() as u64;
        seen = at;
        let (w, first_line) = *width.get_or_insert((rec.len(), line));
        if rec.len() != w {
            return Err(format!(
                "line {line} has {} fields, expected {w} as on line {first_line}",
                rec.len()
            ));
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
            match cell_value(cell, opts.dtype).map_err(|m| format!("line {line}, column {}: {m}", j + 1))? {
                Cell::Bool(b) => bools.push(b),
                Cell::Int(i) => ints.push(i),
                Cell::Float(f) => floats.push(f),
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
    use crate::error::Error;
    use std::io::Write;

    fn table(s: &str, opts: &CsvOptions) -> std::result::Result<CsvTable, String> {
        parse(s.as_bytes(), opts)
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
}
