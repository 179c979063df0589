//! Output that is written to disk while a run goes on instead of held in memory: the
//! time series. A spill is an unnamed temporary file (gone with the process, however it
//! ends) that becomes `timeseries.csv` when the results are committed.

use std::fs::File;
use std::io::{self, BufWriter, Read};
use std::path::PathBuf;

use serde::Serialize;

/// The header of `timeseries.csv` (the fields of [`crate::SampleRow`]).
pub const SAMPLE_HEADER: &[&str] = &["time_ns", "kind", "id", "value"];

/// The content of one file of a results folder: bytes in memory, or an open file read
/// from its start (a spilled time series, or a file of a folder read back).
#[derive(Clone, Copy, Debug)]
pub enum Body<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// The whole of a file, read by position (its cursor is not moved).
    File(&'a File),
}

impl<'a> From<&'a [u8]> for Body<'a> {
    fn from(b: &'a [u8]) -> Self {
        Self::Bytes(b)
    }
}

impl<'a> Body<'a> {
    /// A reader of the content from its start.
    pub fn reader(self) -> impl Read + 'a {
        BodyReader { body: self, pos: 0 }
    }

    /// Feeds the content to `f` in pieces of at most 64 KiB (bytes in one piece).
    ///
    /// # Errors
    /// A read error, or the first error `f` returns.
    pub fn for_each_chunk(self, mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        match self {
            Self::Bytes(b) => f(b),
            Self::File(_) => {
                let mut r = self.reader();
                let mut buf = vec![0u8; 1 << 16];
                loop {
                    match r.read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(n) => f(&buf[..n])?,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

struct BodyReader<'a> {
    body: Body<'a>,
    pos: u64,
}

impl Read for BodyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.body {
            Body::Bytes(b) => {
                let rest = b.get(self.pos as usize..).unwrap_or(&[]);
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                n
            }
            Body::File(f) => read_at(f, buf, self.pos)?,
        };
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
pub(crate) fn read_at(f: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, pos)
}

#[cfg(windows)]
pub(crate) fn read_at(f: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, pos)
}

/// Time-series samples, written as CSV rows to a temporary file as they are taken, so a
/// run holds none of them in memory however many it takes. The file is created at the
/// first sample, in the folder given (beside the results, so that it is on their disk,
/// not in a `/tmp` that may be memory) or else the system's temporary folder. A write
/// error is kept and returned by [`SampleSpill::finish`]; samples after it are dropped.
pub struct SampleSpill {
    dir: Option<PathBuf>,
    w: Option<csv::Writer<BufWriter<File>>>,
    error: Option<io::Error>,
    rows: u64,
}

#[derive(Serialize)]
struct Row<'a> {
    time_ns: u64,
    kind: &'a str,
    id: &'a str,
    value: f64,
}

impl SampleSpill {
    /// A spill that will create its file in `dir` (`None`: the system's temporary folder).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            w: None,
            error: None,
            rows: 0,
        }
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn writer(&mut self) -> Option<&mut csv::Writer<BufWriter<File>>> {
        if self.w.is_none() && self.error.is_none() {
            let f = match &self.dir {
                Some(d) => tempfile::tempfile_in(d),
                None => tempfile::tempfile(),
            };
            match f {
                Ok(f) => self.w = Some(csv::Writer::from_writer(BufWriter::new(f))),
                Err(e) => {
                    let place = self.dir.as_ref().map_or_else(
                        || std::env::temp_dir().display().to_string(),
                        |d| d.display().to_string(),
                    );
                    self.error = Some(io::Error::new(
                        e.kind(),
                        format!("time series: cannot create a temporary file in {place}: {e}"),
                    ));
                }
            }
        }
        self.w.as_mut().filter(|_| self.error.is_none())
    }

    /// Appends one sample (a row of `timeseries.csv`).
    pub fn push(&mut self, time_ns: u64, kind: &str, id: &str, value: f64) {
        let Some(w) = self.writer() else { return };
        let row = Row {
            time_ns,
            kind,
            id,
            value,
        };
        match w.serialize(row) {
            Ok(()) => self.rows += 1,
            Err(e) => self.error = Some(csv_error(e)),
        }
    }

    /// The finished file (header only if nothing was sampled), ready to be read from its
    /// start; the spill is empty afterwards.
    ///
    /// # Errors
    /// The first error met while writing.
    pub fn finish(&mut self) -> io::Result<File> {
        if self.rows == 0
            && let Some(w) = self.writer()
            && let Err(e) = w.write_record(SAMPLE_HEADER)
        {
            self.error = Some(csv_error(e));
        }
        if let Some(e) = self.error.take() {
            self.w = None;
            return Err(e);
        }
        let w = self
            .w
            .take()
            .ok_or_else(|| io::Error::other("time series already taken"))?;
        let buf = w
            .into_inner()
            .map_err(|e| io::Error::other(e.to_string()))?;
        buf.into_inner().map_err(|e| e.into_error())
    }
}

fn csv_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        k => io::Error::other(format!("{k:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SampleRow, to_csv};
    use std::borrow::Cow;

    /// The spilled file is byte for byte what serializing the rows in memory gives, empty
    /// or not, and reads back whole through a reader and in pieces.
    #[test]
    fn a_spill_is_the_csv_of_its_rows() {
        let rows: Vec<SampleRow> = (0..5000)
            .map(|i| SampleRow {
                time_ns: i * 1000,
                kind: Cow::Borrowed(if i % 2 == 0 {
                    "queue_bytes"
                } else {
                    "cwnd_bytes"
                }),
                id: format!("s{}->h{}", i % 3, i % 7),
                value: i as f64 / 3.0,
            })
            .collect();
        for n in [0, 1, rows.len()] {
            let mut s = SampleSpill::new(None);
            for r in &rows[..n] {
                s.push(r.time_ns, &r.kind, &r.id, r.value);
            }
            let f = s.finish().unwrap();
            let mut back = Vec::new();
            Body::File(&f).reader().read_to_end(&mut back).unwrap();
            assert_eq!(back, to_csv(&rows[..n], SAMPLE_HEADER).unwrap(), "{n} rows");
            let mut pieces = Vec::new();
            Body::File(&f)
                .for_each_chunk(|c| {
                    pieces.extend_from_slice(c);
                    Ok(())
                })
                .unwrap();
            assert_eq!(pieces, back);
        }
    }

    /// A folder where no file can be made: the error names it, once, at the end.
    #[test]
    fn a_spill_that_cannot_be_written_says_where() {
        let mut s = SampleSpill::new(Some(PathBuf::from("/nonexistent/dcsim")));
        s.push(1, "queue_bytes", "a", 1.0);
        let e = s.finish().unwrap_err();
        assert!(e.to_string().contains("/nonexistent/dcsim"), "{e}");
    }
}
