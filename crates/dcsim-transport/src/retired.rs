//! Flows that have left the flow table: the spec and final record of every retired flow,
//! at a fixed place in a file (flow `i` at `i` x [`RECORD`] bytes), so that the table can
//! free them while a run goes on and results still read every flow in order at its end.
//!
//! Records are gathered in memory and written in batches, each sorted by flow and in runs
//! of neighbouring flows; a write error is kept and returned when the records are read.

use std::fs::File;
use std::io;

use dcsim_engine::{Dur, Time};
use dcsim_net::{FlowId, HostId};

use crate::flows::FlowSpec;
use crate::record::{FlowRecord, MAX_FLOW_COUNTERS};

/// Bytes of one flow in the file.
pub(crate) const RECORD: usize = 16 + 8 * 8 + 8 * MAX_FLOW_COUNTERS;

/// Records written at once.
const BATCH: usize = 1024;

/// The file of retired flows.
pub(crate) struct Retired {
    file: File,
    pending: Vec<(u32, [u8; RECORD])>,
    error: Option<io::Error>,
    /// Flows written (or pending).
    count: u64,
}

fn opt<T>(flags: &mut u8, bit: u8, v: Option<T>, f: impl Fn(T) -> u64) -> u64 {
    match v {
        Some(v) => {
            *flags |= 1 << bit;
            f(v)
        }
        None => 0,
    }
}

/// One flow as bytes: src, dst, transport, the flags of the optional fields; then size,
/// start, stop, end, unloaded FCT, delivered bytes, bytes sent at stop, retransmits and
/// the counters, little-endian.
fn encode(spec: &FlowSpec, r: &FlowRecord) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    let mut flags = 0u8;
    let words = [
        opt(&mut flags, 0, spec.size_bytes, |v| v),
        spec.start.as_ps(),
        opt(&mut flags, 1, spec.stop, Time::as_ps),
        opt(&mut flags, 2, r.end, Time::as_ps),
        opt(&mut flags, 3, r.unloaded_fct, Dur::as_ps),
        r.delivered_bytes,
        opt(&mut flags, 4, r.sent_bytes_at_stop, |v| v),
        r.retransmits,
    ];
    out[0..4].copy_from_slice(&spec.src.0.to_le_bytes());
    out[4..8].copy_from_slice(&spec.dst.0.to_le_bytes());
    out[8..12].copy_from_slice(&spec.transport.to_le_bytes());
    out[12] = flags;
    for (k, w) in words.iter().chain(&r.counters).enumerate() {
        out[16 + 8 * k..24 + 8 * k].copy_from_slice(&w.to_le_bytes());
    }
    out
}

fn decode(b: &[u8]) -> (FlowSpec, FlowRecord) {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let word = |k: usize| u64::from_le_bytes(b[16 + 8 * k..24 + 8 * k].try_into().expect("8"));
    let flags = b[12];
    let has = |bit: u8| flags >> bit & 1 == 1;
    let spec = FlowSpec {
        src: HostId(u32_at(0)),
        dst: HostId(u32_at(4)),
        size_bytes: has(0).then(|| word(0)),
        start: Time(word(1)),
        stop: has(1).then(|| Time(word(2))),
        transport: u32_at(8),
    };
    let record = FlowRecord {
        end: has(2).then(|| Time(word(3))),
        unloaded_fct: has(3).then(|| Dur(word(4))),
        delivered_bytes: word(5),
        sent_bytes_at_stop: has(4).then(|| word(6)),
        retransmits: word(7),
        counters: std::array::from_fn(|k| word(8 + k)),
    };
    (spec, record)
}

impl Retired {
    pub(crate) fn new(file: File) -> Self {
        Self {
            file,
            pending: Vec::with_capacity(BATCH),
            error: None,
            count: 0,
        }
    }

    /// Flows retired so far.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Keeps flow `f`'s spec and final record.
    pub(crate) fn put(&mut self, f: FlowId, spec: &FlowSpec, r: &FlowRecord) {
        self.pending.push((f.0, encode(spec, r)));
        self.count += 1;
        if self.pending.len() == BATCH {
            self.flush();
        }
    }

    /// Writes the pending records, each run of neighbouring flows in one write.
    pub(crate) fn flush(&mut self) {
        self.pending.sort_unstable_by_key(|p| p.0);
        let mut buf = Vec::with_capacity(self.pending.len() * RECORD);
        let mut i = 0;
        while i < self.pending.len() && self.error.is_none() {
            let first = self.pending[i].0;
            buf.clear();
            let mut j = i;
            while j < self.pending.len() && self.pending[j].0 == first + (j - i) as u32 {
                buf.extend_from_slice(&self.pending[j].1);
                j += 1;
            }
            if let Err(e) = write_all_at(&self.file, &buf, u64::from(first) * RECORD as u64) {
                self.error = Some(io::Error::new(
                    e.kind(),
                    format!("the file of finished flows: {e}"),
                ));
            }
            i = j;
        }
        self.pending.clear();
    }

    /// A reader of the records, by increasing flow, after the pending ones are written.
    ///
    /// # Errors
    /// A write failed.
    pub(crate) fn reader(&mut self) -> io::Result<Reader<'_>> {
        self.flush();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        Ok(Reader {
            file: &self.file,
            block: Vec::new(),
            first: 0,
        })
    }
}

/// Reads records forward in blocks of 4,096 flows.
pub(crate) struct Reader<'a> {
    file: &'a File,
    block: Vec<u8>,
    /// The flow of the block's first record.
    first: u64,
}

impl Reader<'_> {
    const FLOWS: u64 = 4096;

    /// The record of flow `f`, which must not come before the one read last.
    pub(crate) fn get(&mut self, f: FlowId) -> io::Result<(FlowSpec, FlowRecord)> {
        let i = u64::from(f.0);
        let loaded = self.block.len() as u64 / RECORD as u64;
        if self.block.is_empty() || i < self.first || i >= self.first + loaded {
            self.first = i;
            self.block.resize(Self::FLOWS as usize * RECORD, 0);
            let n = read_up_to(self.file, &mut self.block, i * RECORD as u64)?;
            self.block.truncate(n - n % RECORD);
            if self.block.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the file of finished flows ends before flow {f}"),
                ));
            }
        }
        let at = (i - self.first) as usize * RECORD;
        Ok(decode(&self.block[at..at + RECORD]))
    }
}

#[cfg(unix)]
fn write_all_at(f: &File, buf: &[u8], pos: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, pos)
}

#[cfg(windows)]
fn write_all_at(f: &File, mut buf: &[u8], mut pos: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_write(f, buf, pos) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                pos += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, pos)
}

#[cfg(windows)]
fn read_at(f: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, pos)
}

fn read_up_to(f: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match read_at(f, &mut buf[got..], pos + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(i: u32) -> (FlowSpec, FlowRecord) {
        let some = i.is_multiple_of(2);
        (
            FlowSpec {
                src: HostId(i),
                dst: HostId(i + 1),
                size_bytes: some.then_some(u64::from(i) * 1000),
                start: Time(u64::from(i) * 7),
                stop: (!some).then_some(Time(9)),
                transport: i % 3,
            },
            FlowRecord {
                end: some.then_some(Time(u64::MAX - 1)),
                unloaded_fct: (!some).then_some(Dur(5)),
                delivered_bytes: u64::from(i) << 33,
                sent_bytes_at_stop: some.then_some(3),
                retransmits: 11,
                counters: [1, 2, u64::from(i), u64::MAX],
            },
        )
    }

    /// Flows retired in any order (more than a batch, with gaps filled later) read back in
    /// order, every field and its absence intact.
    #[test]
    fn flows_read_back_in_order_as_they_went_in() {
        let mut r = Retired::new(tempfile::tempfile().unwrap());
        let n = 5_000u32;
        let order: Vec<u32> = (0..n)
            .map(|i| ((u64::from(i) * 2_654_435_761) % u64::from(n)) as u32)
            .collect();
        let mut seen = vec![false; n as usize];
        for &i in order.iter().filter(|&&i| i % 5 != 0) {
            let (s, rec) = flow(i);
            r.put(FlowId(i), &s, &rec);
            seen[i as usize] = true;
        }
        for i in (0..n).filter(|i| !seen[*i as usize]) {
            let (s, rec) = flow(i);
            r.put(FlowId(i), &s, &rec);
        }
        assert_eq!(r.count(), u64::from(n));
        let mut rd = r.reader().unwrap();
        for i in 0..n {
            assert_eq!(rd.get(FlowId(i)).unwrap(), flow(i), "flow {i}");
        }
        assert!(rd.get(FlowId(n)).is_err());
    }
}
