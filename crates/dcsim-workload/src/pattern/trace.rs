//! Trace replay: flows read from a CSV file, one per line.
//!
//! Columns are `start_ns,src,dst,size_bytes`; further columns (such as a class) are
//! ignored. An optional header line naming the first four columns may come first; blank
//! lines and everything after a `#` are ignored. Rows must be sorted by `start_ns`, hosts
//! must exist and differ, and sizes are at least 1 byte.
//!
//! The file is checked completely when the source is built (so every error surfaces before
//! the run, naming the line), and then streamed again during the run, one line per flow:
//! memory stays flat however long the trace.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use dcsim_engine::Dur;
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::source::{FlowGenerator, FlowSource, SourceCx, SourceInfo, limits};
use crate::GenFlow;

/// Replays a CSV trace `start_ns,src,dst,size_bytes` (see the `trace` section of
/// `docs/workloads.md`). Lazy, streamed from the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The CSV file; a relative path is taken from the scenario's directory.
    pub file: String,
    /// Added to every start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Most flows to replay.
    #[serde(default)]
    pub max_flows: Option<u64>,
    /// No flow starts at or after this time.
    #[serde(default)]
    pub until: Option<Dur>,
}

impl Pattern for TraceSpec {
    const NAME: &'static str = "trace";
    const ABOUT: &'static str = "replay flows from a CSV file start_ns,src,dst,size_bytes";

    /// Checks the whole file and opens it for streaming. Errors are `"field: message"`.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        let p = Path::new(&self.file);
        let full = match cx.base_dir {
            Some(d) if p.is_relative() => d.join(p),
            _ => p.to_path_buf(),
        };
        let (g, count) =
            TraceGen::open(&full, cx.hosts, self.start).map_err(|e| format!("file: {e}"))?;
        let info = SourceInfo {
            kind: "trace",
            flows: Some(count),
            ..SourceInfo::default()
        };
        Ok(FlowSource::new(
            Box::new(g),
            limits(self.max_flows, self.until)?,
            info,
        ))
    }
}

/// The expected header.
const HEADER: [&str; 4] = ["start_ns", "src", "dst", "size_bytes"];

/// Streams a checked trace.
struct TraceGen {
    rows: Rows,
    offset: Dur,
    hosts: u32,
    prev: u64,
    /// Set when the file no longer matches what was checked: the trace ends there.
    broken: bool,
}

impl TraceGen {
    /// Checks the whole file against `hosts`, then opens it for streaming. Every start is
    /// shifted by `offset`. Returns the generator and the number of flows. Errors are
    /// `file:line: reason`.
    fn open(path: &Path, hosts: u32, offset: Dur) -> Result<(Self, u64), String> {
        let mut rows = Rows::open(path)?;
        let mut count = 0u64;
        let mut prev = 0u64;
        while let Some((line, r)) = rows.next_row()? {
            let at = |reason: String| format!("{}:{line}: {reason}", rows.name);
            for (h, what) in [(r.src, "src"), (r.dst, "dst")] {
                if h >= hosts {
                    return Err(at(format!(
                        "{what} host {h} is out of range (the topology has {hosts} hosts)"
                    )));
                }
            }
            if r.src == r.dst {
                return Err(at(format!("src and dst are both host {}", r.src)));
            }
            if r.start_ns < prev {
                return Err(at(format!(
                    "start_ns {} is before {prev} on an earlier line; sort the trace by start time",
                    r.start_ns
                )));
            }
            if start_of(r.start_ns, offset).is_none() {
                return Err(at(format!("start_ns {} is too large", r.start_ns)));
            }
            prev = r.start_ns;
            count += 1;
        }
        Ok((
            Self {
                rows: Rows::open(path)?,
                offset,
                hosts,
                prev: 0,
                broken: false,
            },
            count,
        ))
    }
}

impl FlowGenerator for TraceGen {
    /// Rows are checked again as they stream: a file changed on disk after the check ends
    /// the trace at the first row that no longer passes, with a warning, instead of
    /// feeding the simulation a host that does not exist.
    fn next_flow(&mut self) -> Option<GenFlow> {
        if self.broken {
            return None;
        }
        let bad = |this: &mut Self, why: String| {
            eprintln!(
                "warning: {} changed on disk after it was checked ({why}); the trace ends here",
                this.rows.name
            );
            this.broken = true;
            None
        };
        let (line, r) = match self.rows.next_row() {
            Ok(row) => row?,
            Err(e) => return bad(self, e),
        };
        let start = start_of(r.start_ns, self.offset);
        if r.src >= self.hosts || r.dst >= self.hosts || r.src == r.dst || r.start_ns < self.prev {
            return bad(self, format!("line {line}"));
        }
        let Some(start) = start else {
            return bad(self, format!("line {line}"));
        };
        self.prev = r.start_ns;
        Some(GenFlow {
            src: r.src,
            dst: r.dst,
            size_bytes: Some(r.size_bytes),
            start,
            stop: None,
        })
    }
}

fn start_of(start_ns: u64, offset: Dur) -> Option<Dur> {
    start_ns
        .checked_mul(1000)
        .and_then(|ps| ps.checked_add(offset.as_ps()))
        .map(Dur::from_ps)
}

#[derive(Clone, Copy)]
struct Row {
    start_ns: u64,
    src: u32,
    dst: u32,
    size_bytes: u64,
}

/// Line-by-line reader that skips comments, blank lines and the header. Not the csv
/// crate: it skips blank lines without counting them, so errors after a blank line named
/// the wrong line (tried 2026-11-25; `malformed_traces_name_the_line`), and it has no
/// comment after data on a line; rows here are plain numbers without quoting.
/// The longest line a trace may have (a row is four numbers and a comment).
const MAX_LINE_BYTES: usize = 4096;

struct Rows {
    name: String,
    reader: BufReader<File>,
    buf: String,
    line: usize,
    seen_content: bool,
}

impl Rows {
    fn open(path: &Path) -> Result<Self, String> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
        Ok(Self {
            name,
            reader: BufReader::new(f),
            buf: String::new(),
            line: 0,
            seen_content: false,
        })
    }

    /// The next data row and its 1-based line number; `None` at the end.
    fn next_row(&mut self) -> Result<Option<(usize, Row)>, String> {
        loop {
            self.buf.clear();
            // A line is read up to a bound, so a file without line ends (/dev/zero) is an
            // error at once rather than a line as long as memory.
            let n = (&mut self.reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_line(&mut self.buf)
                .map_err(|e| format!("{}:{}: cannot read: {e}", self.name, self.line + 1))?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            if n > MAX_LINE_BYTES {
                return Err(format!(
                    "{}:{}: a line longer than {MAX_LINE_BYTES} bytes; is this a trace file?",
                    self.name, self.line
                ));
            }
            let at = |reason: String| format!("{}:{}: {reason}", self.name, self.line);
            let content = self.buf.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let cols: Vec<&str> = content.split(',').map(str::trim).collect();
            let first_content = !self.seen_content;
            self.seen_content = true;
            if first_content && cols[0].parse::<u64>().is_err() {
                if cols.len() >= 4
                    && cols[..4]
                        .iter()
                        .zip(HEADER)
                        .all(|(c, h)| c.eq_ignore_ascii_case(h))
                {
                    continue;
                }
                return Err(at(format!(
                    "expected the header {} or a data row",
                    HEADER.join(",")
                )));
            }
            if cols.len() < 4 {
                return Err(at(format!(
                    "expected 4 columns ({}), found {}",
                    HEADER.join(","),
                    cols.len()
                )));
            }
            let int = |i: usize| -> Result<u64, String> {
                cols[i].parse::<u64>().map_err(|_| {
                    at(format!(
                        "{} {:?} is not a non-negative integer",
                        HEADER[i], cols[i]
                    ))
                })
            };
            let host = |i: usize| -> Result<u32, String> {
                u32::try_from(int(i)?)
                    .map_err(|_| at(format!("{} is not a host number", HEADER[i])))
            };
            let row = Row {
                start_ns: int(0)?,
                src: host(1)?,
                dst: host(2)?,
                size_bytes: int(3)?,
            };
            if row.size_bytes == 0 {
                return Err(at("size_bytes must be at least 1".into()));
            }
            return Ok(Some((self.line, row)));
        }
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::GeneratorSpec;

    /// A scratch folder for one test's trace files, removed when the guard is dropped (at
    /// the end of the test, passed or failed).
    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("dcsim-trace-")
            .tempdir()
            .unwrap()
    }

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn spec(p: &Path) -> GeneratorSpec {
        GeneratorSpec::Trace(TraceSpec {
            file: p.display().to_string(),
            start: Dur::from_us(1),
            max_flows: None,
            until: None,
        })
    }

    #[test]
    fn trace_replays_in_order_with_offset() {
        let dir = scratch();
        let p = write(
            &dir,
            "ok.csv",
            "start_ns,src,dst,size_bytes,class\n# comment\n0,1,2,1000,0\n\n500,2,1,20,1\n\
             500,0,3,7\n",
        );
        let rng = RngTree::new(0);
        let s = spec(&p).source(&SourceCx::new(4, &rng, 0)).unwrap();
        assert_eq!(s.info().flows, Some(3));
        assert_eq!(s.peek_start(), Some(Dur::from_us(1)));
        let f: Vec<GenFlow> = s.collect();
        assert_eq!(f.len(), 3);
        assert_eq!(
            (f[1].src, f[1].dst, f[1].size_bytes, f[1].start),
            (2, 1, Some(20), Dur::from_ns(1500))
        );
        assert_eq!(f[2].dst, 3);
    }

    /// A trace edited after its check (a host out of range, a self-loop) ends at that row
    /// instead of panicking or simulating it. The file is long enough that the edited row
    /// is read after the edit, not from the reader's first buffer.
    #[test]
    fn a_trace_changed_after_its_check_ends_there() {
        let rows = |bad: &str| -> String {
            let mut t: String = (0..5000).map(|i| format!("{i},0,1,5\n")).collect();
            t += bad;
            t += "6000,2,3,5\n";
            t
        };
        let rng = RngTree::new(0);
        let dir = scratch();
        for (name, bad) in [("edit.csv", "5000,1,9,5\n"), ("self.csv", "5000,2,2,5\n")] {
            let p = write(&dir, name, &rows("5000,1,2,5\n"));
            let s = spec(&p).source(&SourceCx::new(4, &rng, 0)).unwrap();
            std::fs::write(&p, rows(bad)).unwrap();
            assert_eq!(s.count(), 5000, "{name}: ends before the edited row");
        }
    }

    #[test]
    fn malformed_traces_name_the_line() {
        let cases = [
            ("h.csv", "start,src\n1,0,1,5\n", ":1: expected the header"),
            ("c.csv", "0,0,1,5\n1,0,1\n", ":2: expected 4 columns"),
            ("n.csv", "0,0,1,5\n1,0,x,5\n", ":2: dst \"x\" is not"),
            (
                "o.csv",
                "0,0,1,5\n\n1,0,9,5\n",
                ":3: dst host 9 is out of range",
            ),
            ("s.csv", "0,2,2,5\n", ":1: src and dst are both host 2"),
            ("z.csv", "0,0,1,0\n", ":1: size_bytes must be at least 1"),
            (
                "u.csv",
                "10,0,1,5\n5,0,1,5\n",
                ":2: start_ns 5 is before 10",
            ),
            ("neg.csv", "-1,0,1,5\n", ":1: expected the header"),
        ];
        let rng = RngTree::new(0);
        let dir = scratch();
        for (name, text, want) in cases {
            let p = write(&dir, name, text);
            let e = spec(&p).source(&SourceCx::new(4, &rng, 0)).unwrap_err();
            assert!(e.starts_with("file: "), "{e}");
            assert!(e.contains(&format!("{name}{want}")), "{e} (wanted {want})");
        }
        let e = spec(Path::new("/no/such/trace.csv"))
            .source(&SourceCx::new(4, &rng, 0))
            .unwrap_err();
        assert!(e.contains("/no/such/trace.csv: cannot read"), "{e}");
        // A file without line ends is refused at its first 4 KB, not read into memory
        // whole (the check once ran out of memory on /dev/zero).
        let e = spec(Path::new("/dev/zero"))
            .source(&SourceCx::new(4, &rng, 0))
            .unwrap_err();
        assert!(
            e.contains("/dev/zero:1: a line longer than 4096 bytes"),
            "{e}"
        );
    }
}
