//! The text stream under the CSV parser. As bytes stream in from the file
//! (or its decompressor) it refuses binary input (a NUL byte), keeps a
//! window of recent bytes to number the lines of records for error
//! messages, and checks what the load costs as it grows: the table parsed so
//! far plus the record being read must fit the memory budget and the
//! machine ([`Gauge`]); the text itself must fit the budget, and must not
//! outgrow the table it yields by more than [`TEXT_PER_TABLE_BYTE`] (past
//! [`TEXT_FREE`]). So an endless input or a decompression bomb stops while
//! it streams, whatever it holds.

use crate::core::memory;
use crate::io::{Decode, Gauge};
use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

/// Recent bytes kept for line numbers; a record (or run of blank and
/// comment lines) longer than half of this is numbered approximately.
const WINDOW: usize = 1 << 20;
/// Text read before the text-to-table ratio applies.
pub(super) const TEXT_FREE: u64 = 64 << 20;
/// Most bytes of text per byte of table (cells and the tensor to be) past [`TEXT_FREE`].
pub(super) const TEXT_PER_TABLE_BYTE: u64 = 256;

/// The state the stream shares with the parser.
#[derive(Debug)]
pub(super) struct Track {
    op: &'static str,
    delimiter: u8,
    comment: Option<u8>,
    /// Recent bytes: those from `head` on run from offset `base` of the
    /// text to `fed` (the ones before `head` are forgotten, and dropped in bulk).
    window: Vec<u8>,
    head: usize,
    base: u64,
    /// Line breaks before `base`.
    newlines: u64,
    /// Bytes of text read so far.
    fed: u64,
    /// Where the record being read starts (the end of the last one).
    record_start: u64,
    /// Delimiters read in all, and when the last record ended (counting
    /// the reader's lookahead too: an estimate).
    delims: u64,
    delims_at_record: u64,
    /// Bytes the parsed table takes and will take (its cells and the tensor).
    table: usize,
    gauge: Gauge,
}

impl Track {
    /// Nothing read yet.
    pub(super) fn new(op: &'static str, delimiter: u8, comment: Option<u8>) -> Rc<RefCell<Track>> {
        Rc::new(RefCell::new(Track {
            op,
            delimiter,
            comment,
            window: vec![],
            head: 0,
            base: 0,
            newlines: 0,
            fed: 0,
            record_start: 0,
            delims: 0,
            delims_at_record: 0,
            table: 0,
            gauge: Gauge::new(op),
        }))
    }

    /// Takes in the next bytes of text.
    fn take(&mut self, chunk: &[u8]) -> Result<(), Decode> {
        // `contains` is a fast memchr
        if chunk.contains(&0) {
            let i = chunk.iter().position(|&b| b == 0).unwrap_or(0);
            return Err(Decode::Format(format!(
                "byte {} is a NUL byte: this is not a text file",
                self.fed + i as u64 + 1
            )));
        }
        let d = self.delimiter;
        self.delims += chunk.iter().filter(|&&b| b == d).count() as u64;
        self.fed += chunk.len() as u64;
        self.window.extend_from_slice(chunk);
        if self.recent().len() > WINDOW {
            self.forget(self.recent().len() - WINDOW / 2);
        }
        self.check()
    }

    /// The bytes from `base` on.
    fn recent(&self) -> &[u8] {
        &self.window[self.head..]
    }

    /// Forgets the first `n` recent bytes, counting their line breaks.
    fn forget(&mut self, n: usize) {
        let n = n.min(self.recent().len());
        self.newlines += newlines(&self.recent()[..n]);
        self.head += n;
        self.base += n as u64;
        if self.head > self.window.len() / 2 && self.head > 1 << 16 {
            self.window.drain(..self.head);
            self.head = 0;
        }
    }

    /// Fails when the load would need more memory than it may have, or the
    /// text is far out of proportion to the table.
    fn check(&mut self) -> Result<(), Decode> {
        let table = self.table as u64;
        if self.fed > TEXT_FREE && self.fed / TEXT_PER_TABLE_BYTE > table {
            return Err(Decode::Format(format!(
                "{} bytes of text hold only {table} bytes of table; a numeric table is not this \
                 sparse (is the file a decompression bomb?)",
                self.fed
            )));
        }
        // the text counts against the budget as if it were held
        memory::check(self.op, usize::try_from(self.fed).unwrap_or(usize::MAX))?;
        // the csv reader holds the record being read: its bytes (up to twice
        // over while its buffer grows) and one end offset per field
        let pending = self.fed.saturating_sub(self.record_start);
        let fields = self.delims - self.delims_at_record + 1;
        let record = pending
            .saturating_mul(3)
            .saturating_add(fields.saturating_mul(16));
        let bytes = usize::try_from(record)
            .unwrap_or(usize::MAX)
            .saturating_add(self.window.len())
            .saturating_add(self.table);
        Ok(self.gauge.need(bytes)?)
    }

    /// Makes the table's cost `bytes`, or fails (and leaves it) when that
    /// does not fit.
    pub(super) fn reserve_table(&mut self, bytes: usize) -> Result<(), Decode> {
        let before = self.table;
        self.table = bytes;
        let r = self.check();
        if r.is_err() {
            self.table = before;
        }
        r
    }

    /// The line of the record that the reader started at `position` and
    /// ended at `end`: past the blank and comment lines it skipped first.
    /// Forgets the text before `end`.
    pub(super) fn line_of(&mut self, position: u64, end: u64) -> u64 {
        let from = usize::try_from(position.saturating_sub(self.base))
            .unwrap_or(usize::MAX)
            .min(self.recent().len());
        let start = skip_blank_lines(self.recent(), from, self.comment);
        let line = 1 + self.newlines + newlines(&self.recent()[..start]);
        let done = usize::try_from(end.saturating_sub(self.base)).unwrap_or(usize::MAX);
        self.forget(done);
        self.record_start = end;
        self.delims_at_record = self.delims;
        line
    }
}

fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Where content begins from byte `at`: past the blank and comment lines
/// the reader skips.
fn skip_blank_lines(bytes: &[u8], mut at: usize, comment: Option<u8>) -> usize {
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

/// A reader that passes its bytes through a [`Track`].
pub(super) struct Feed<R> {
    inner: R,
    track: Rc<RefCell<Track>>,
}

impl<R> Feed<R> {
    /// `inner`'s bytes, tracked by `track`.
    pub(super) fn new(inner: R, track: Rc<RefCell<Track>>) -> Feed<R> {
        Feed { inner, track }
    }
}

impl<R: Read> Read for Feed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.track
            .borrow_mut()
            .take(&buf[..n])
            .map_err(io::Error::other)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_lines_past_blank_and_comment_lines() {
        let t = Track::new("t", b',', Some(b'#'));
        let mut t = t.borrow_mut();
        t.take(b"1,2\n\n# note\n\r\n3,4\n").unwrap();
        assert_eq!(t.line_of(0, 4), 1);
        assert_eq!(t.line_of(4, 18), 5);
        assert_eq!(t.base, 18);
        assert_eq!(t.newlines, 5);
    }

    #[test]
    fn refuses_nul_bytes() {
        let t = Track::new("t", b',', None);
        let e = t.borrow_mut().take(b"1,2\n\0").unwrap_err().to_string();
        assert_eq!(e, "byte 5 is a NUL byte: this is not a text file");
    }

    #[test]
    fn the_window_stays_bounded() {
        let t = Track::new("t", b',', None);
        let mut t = t.borrow_mut();
        let blank = vec![b'\n'; 64 << 10];
        for _ in 0..64 {
            t.take(&blank).unwrap();
        }
        assert!(t.recent().len() <= WINDOW && t.window.len() <= 2 * WINDOW);
        t.take(b"7\n").unwrap();
        let end = t.fed;
        assert_eq!(t.line_of(0, end), (64 << 16) + 1);
    }
}
