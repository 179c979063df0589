//! Flow traces (`kind = "trace"`, CSV `start_ns,src,dst,size_bytes`) on arbitrary bytes,
//! through the pattern's own file reader on a 16-host network. Every input gives flows or
//! one error, never a panic or a hang; the flows that stream out are those the check
//! counted, between two different existing hosts, at least 1 byte each, in start order.
#![no_main]

use dcsim::engine::{Dur, RngTree};
use dcsim::workload::{GeneratorSpec, SourceCx, TraceSpec};
use libfuzzer_sys::fuzz_target;

const HOSTS: u32 = 16;

/// The trace file of one input, removed when dropped: at the end of every input, early
/// return or not. A crash aborts the process without dropping it and leaves the file of
/// the crashing input (libFuzzer saves that input as an artifact anyway).
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fuzz_target!(|data: &[u8]| {
    // The reader takes a file: one per fuzzing process, rewritten for every input and
    // removed after it.
    let scratch =
        Scratch(std::env::temp_dir().join(format!("dcsim-fuzz-trace-{}.csv", std::process::id())));
    let path = &scratch.0;
    std::fs::write(path, data).expect("write the trace file");
    let spec = GeneratorSpec::Trace(TraceSpec {
        file: path.display().to_string(),
        start: Dur::from_us(1),
        max_flows: None,
        until: None,
    });
    let rng = RngTree::new(1);
    let Ok(src) = spec.source(&SourceCx::new(HOSTS, &rng, 0)) else {
        return;
    };
    let counted = src.info().flows;
    let mut n = 0u64;
    let mut prev = Dur::ZERO;
    for f in src {
        assert!(f.src < HOSTS && f.dst < HOSTS && f.src != f.dst, "{f:?}");
        assert!(
            f.size_bytes.is_some_and(|b| b >= 1) && f.start >= prev,
            "{f:?}"
        );
        prev = f.start;
        n += 1;
    }
    assert_eq!(Some(n), counted, "flows streamed and flows counted");
});
