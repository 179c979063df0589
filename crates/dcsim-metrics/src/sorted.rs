//! Values met in any order and read back in ascending order, with bounded memory: an
//! external merge sort. Up to a chunk of values is held in memory; a full chunk is sorted
//! and written to an unnamed temporary file as a run, and reading merges the runs. Each
//! value carries a small tag (which groups it belongs to), so one sorted pass serves every
//! group: a group's values in ascending order are a subsequence of the whole.
//!
//! This is what lets a run of any number of flows report exact percentiles, and means
//! summed in ascending order as [`crate::Distribution::of`] sums them, without holding one
//! value per flow.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use crate::spill::read_at;

/// Bytes of one value on disk: the value's bits, then its tag.
const RECORD: usize = 10;

/// Values held in memory before a run is written: 1 Mi values, 16 MiB.
pub const DEFAULT_CHUNK: usize = 1 << 20;

/// An `f64` as a `u64` whose unsigned order is [`f64::total_cmp`]'s order.
fn ordered(v: f64) -> u64 {
    let b = v.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// A sorter of tagged values: push in any order, then [`ExternalSort::for_each_sorted`].
pub struct ExternalSort {
    chunk: usize,
    dir: Option<PathBuf>,
    buf: Vec<(f64, u16)>,
    file: Option<BufWriter<File>>,
    /// Offset and length (in values) of each run in the file.
    runs: Vec<(u64, u64)>,
    written: u64,
    error: Option<io::Error>,
}

impl ExternalSort {
    /// A sorter that holds at most `chunk` values (at least one) in memory and writes its
    /// runs to a temporary file in `dir` (`None`: the system's temporary folder).
    pub fn new(chunk: usize, dir: Option<PathBuf>) -> Self {
        Self {
            chunk: chunk.max(1),
            dir,
            buf: Vec::new(),
            file: None,
            runs: Vec::new(),
            written: 0,
            error: None,
        }
    }

    /// Adds value `v` with tag `tag`.
    pub fn push(&mut self, v: f64, tag: u16) {
        if self.buf.len() == self.chunk {
            self.spill();
        }
        self.buf.push((v, tag));
    }

    fn sort_buf(&mut self) {
        self.buf.sort_unstable_by_key(|&(v, t)| (ordered(v), t));
    }

    /// Writes the values in memory as one sorted run.
    fn spill(&mut self) {
        self.sort_buf();
        if self.error.is_none()
            && let Err(e) = self.write_run()
        {
            self.error = Some(e);
        }
        self.buf.clear();
    }

    fn write_run(&mut self) -> io::Result<()> {
        if self.file.is_none() {
            let f = match &self.dir {
                Some(d) => tempfile::tempfile_in(d),
                None => tempfile::tempfile(),
            };
            let f = f.map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("flow statistics: cannot create a temporary file: {e}"),
                )
            })?;
            self.file = Some(BufWriter::with_capacity(1 << 16, f));
        }
        let w = self.file.as_mut().expect("created above");
        for &(v, t) in &self.buf {
            w.write_all(&v.to_bits().to_le_bytes())?;
            w.write_all(&t.to_le_bytes())?;
        }
        self.runs.push((self.written, self.buf.len() as u64));
        self.written += self.buf.len() as u64;
        Ok(())
    }

    /// Calls `f` with every value and its tag in ascending order ([`f64::total_cmp`]),
    /// and empties the sorter.
    ///
    /// # Errors
    /// A temporary file could not be written or read.
    pub fn for_each_sorted(&mut self, mut f: impl FnMut(f64, u16)) -> io::Result<()> {
        // A run that could not be written: what is left in memory is not every value.
        if let Some(e) = self.error.take() {
            self.buf = Vec::new();
            return Err(e);
        }
        if self.runs.is_empty() {
            self.sort_buf();
            for &(v, t) in &self.buf {
                f(v, t);
            }
            self.buf = Vec::new();
            return Ok(());
        }
        if !self.buf.is_empty() {
            self.spill();
        }
        self.buf = Vec::new();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let file = self
            .file
            .take()
            .expect("runs were written")
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        let mut runs: Vec<RunReader<'_>> = self
            .runs
            .drain(..)
            .map(|(start, len)| RunReader::new(&file, start, len))
            .collect();
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (i, r) in runs.iter_mut().enumerate() {
            if let Some((v, t)) = r.next()? {
                heap.push(Reverse((ordered(v), t, i)));
            }
        }
        while let Some(Reverse((key, t, i))) = heap.pop() {
            let v = if key >> 63 == 1 {
                f64::from_bits(key & !(1 << 63))
            } else {
                f64::from_bits(!key)
            };
            f(v, t);
            if let Some((v, t)) = runs[i].next()? {
                heap.push(Reverse((ordered(v), t, i)));
            }
        }
        self.written = 0;
        Ok(())
    }
}

/// One sorted run of the file, read in blocks.
struct RunReader<'a> {
    file: &'a File,
    /// Byte offset of the next block.
    pos: u64,
    /// Values not yet read into the block.
    left: u64,
    block: Vec<u8>,
    at: usize,
}

impl<'a> RunReader<'a> {
    const BLOCK: usize = RECORD * 4096;

    fn new(file: &'a File, start: u64, len: u64) -> Self {
        Self {
            file,
            pos: start * RECORD as u64,
            left: len,
            block: Vec::new(),
            at: 0,
        }
    }

    fn next(&mut self) -> io::Result<Option<(f64, u16)>> {
        if self.at == self.block.len() {
            if self.left == 0 {
                return Ok(None);
            }
            let n = (self.left as usize).min(Self::BLOCK / RECORD);
            self.block.resize(n * RECORD, 0);
            let mut got = 0;
            while got < self.block.len() {
                match read_at(self.file, &mut self.block[got..], self.pos + got as u64)? {
                    0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                    k => got += k,
                }
            }
            self.pos += got as u64;
            self.left -= n as u64;
            self.at = 0;
        }
        let r = &self.block[self.at..self.at + RECORD];
        self.at += RECORD;
        let bits = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
        Ok(Some((
            f64::from_bits(bits),
            u16::from_le_bytes([r[8], r[9]]),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(values: &[(f64, u16)], chunk: usize) -> Vec<(f64, u16)> {
        let mut s = ExternalSort::new(chunk, None);
        for &(v, t) in values {
            s.push(v, t);
        }
        let mut out = Vec::new();
        s.for_each_sorted(|v, t| out.push((v, t))).unwrap();
        out
    }

    /// Whatever the chunk (everything in memory, runs of one value, runs of uneven
    /// length), the values come back in total order with their tags.
    #[test]
    fn merges_runs_into_total_order() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut values: Vec<(f64, u16)> = (0..10_007)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x % 1000) as f64 / 7.0 - 20.0, (x >> 40) as u16)
            })
            .collect();
        values.extend([(0.0, 1), (-0.0, 2), (f64::INFINITY, 3), (1e-300, 4)]);
        let mut want = values.clone();
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for chunk in [1, 2, 999, 4096, 1 << 20] {
            let got = sorted(&values, chunk);
            assert_eq!(got.len(), want.len(), "chunk {chunk}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((g.0.to_bits(), g.1), (w.0.to_bits(), w.1), "chunk {chunk}");
            }
        }
        assert!(sorted(&[], 3).is_empty());
    }

    /// Runs that cannot be written (no folder for the file) are an error when the values
    /// are read, not a sorted part of them.
    #[test]
    fn a_run_that_cannot_be_written_is_an_error() {
        let mut s = ExternalSort::new(1, Some(PathBuf::from("/nonexistent/dcsim")));
        for v in [3.0, 1.0, 2.0] {
            s.push(v, 0);
        }
        let mut seen = 0;
        assert!(s.for_each_sorted(|_, _| seen += 1).is_err());
        assert_eq!(seen, 0);
    }

    #[test]
    fn the_key_orders_as_total_cmp() {
        let v = [
            f64::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-310,
            3.0,
            f64::INFINITY,
        ];
        for w in v.windows(2) {
            assert!(ordered(w[0]) < ordered(w[1]), "{w:?}");
        }
    }
}
