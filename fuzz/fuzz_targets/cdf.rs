//! Flow-size CDF tables on arbitrary bytes: the first byte picks the format (dcsim, HPCC,
//! ns-2) and the unit (bytes or packets), the rest is the file's text. Every input gives a
//! distribution or one error, never a panic or a hang; a table that parses draws sizes
//! within its range: at least 1 byte and the smallest size, at most `max_bytes`.
#![no_main]

use dcsim::engine::RngTree;
use dcsim::workload::{CdfFormat, EmpiricalCdf};
use libfuzzer_sys::fuzz_target;

const FORMATS: [CdfFormat; 3] = [CdfFormat::Dcsim, CdfFormat::Hpcc, CdfFormat::Ns2];
/// Bytes per table unit: tables in bytes, in packets, and a unit that saturates large sizes.
const UNITS: [u64; 4] = [1, 1460, 9000, 1 << 40];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = FORMATS[usize::from(sel % 3)];
    let unit = UNITS[usize::from(sel / 3 % 4)];
    let Ok(cdf) = EmpiricalCdf::parse(text, format, unit, "fuzz.cdf") else {
        return;
    };
    // `quantile` is non-decreasing and zero draws are redrawn.
    let (lo, hi) = (cdf.quantile(0.0).max(1), cdf.max_bytes());
    let mut r = RngTree::new(1).stream("fuzz-cdf", 0);
    for _ in 0..8 {
        let s = cdf.sample(&mut r);
        assert!(lo <= s && s <= hi, "sample {s} outside [{lo}, {hi}]");
    }
    let _ = cdf.cdf(hi);
});
