//! Helpers shared by the patterns' unit tests.

use dcsim_engine::{Rate, RngTree};

use super::{GeneratorSpec, SourceCx};
use crate::GenFlow;

/// Parses a pattern from its scenario form (`kind = "..."` and the fields).
pub(super) fn spec(s: &str) -> GeneratorSpec {
    toml::from_str(s).unwrap_or_else(|e| panic!("{e}\n{s}"))
}

/// A context for `hosts` hosts with 10 Gb/s host links, generator index 0.
pub(super) fn cx(hosts: u32, rng: &RngTree) -> SourceCx<'_> {
    SourceCx {
        host_link: Some(Rate::from_gbps(10)),
        ..SourceCx::new(hosts, rng, 0)
    }
}

/// Starts never decrease; every flow has distinct endpoints below `hosts` and a size.
pub(super) fn assert_ordered_and_distinct(flows: &[GenFlow], hosts: u32) {
    for w in flows.windows(2) {
        assert!(w[0].start <= w[1].start, "{:?} then {:?}", w[0], w[1]);
    }
    for f in flows {
        assert!(f.src != f.dst && f.src < hosts && f.dst < hosts, "{f:?}");
        assert!(f.size_bytes.is_some_and(|b| b > 0));
    }
}
