//! The `permutation` pattern: every host of a set sends one flow to another host of the set
//! (eager).

use dcsim_engine::Dur;
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::{check_host, derangement};
use super::source::{FlowSource, SourceCx, jitter_of};
use crate::{FlowSize, GenFlow};

/// Every host (or every host in `first..first+hosts`) sends one flow to a distinct
/// host of the same set, by a random derangement (no host sends to itself).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermutationSpec {
    /// First host of the set (default 0).
    #[serde(default)]
    pub first: u32,
    /// Hosts in the set (default: all from `first`).
    #[serde(default)]
    pub hosts: Option<u32>,
    /// Size of each flow (default `inf`).
    #[serde(default)]
    pub size: FlowSize,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
    #[serde(default)]
    pub jitter: Dur,
}

impl Pattern for PermutationSpec {
    const NAME: &'static str = "permutation";
    const ABOUT: &'static str = "every host sends one flow to a distinct host (random derangement)";

    /// The flows, in sender order. Errors are `"field: message"`.
    fn flows(&self, cx: &SourceCx<'_>) -> Result<Vec<GenFlow>, String> {
        let first = self.first;
        let n = self.hosts.unwrap_or(cx.hosts.saturating_sub(first));
        check_host(
            u64::from(first) + u64::from(n.max(1)) - 1,
            cx.hosts,
            "hosts",
        )?;
        if n < 2 {
            return Err("hosts: a permutation needs at least 2 hosts".into());
        }
        let mut r = cx.stream("permutation");
        let perm = derangement(n as usize, &mut r);
        Ok(perm
            .iter()
            .enumerate()
            .map(|(i, &j)| GenFlow {
                src: first + i as u32,
                dst: first + j as u32,
                size_bytes: self.size.0,
                start: self.start + jitter_of(self.jitter, &mut r),
                stop: None,
            })
            .collect())
    }

    /// The flows as a source sorted by start.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        Ok(FlowSource::eager("permutation", self.flows(cx)?))
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::GeneratorSpec;

    #[test]
    fn permutation_is_a_derangement_and_reproducible() {
        let g = GeneratorSpec::Permutation(PermutationSpec {
            first: 0,
            hosts: None,
            size: FlowSize(None),
            start: Dur::ZERO,
            jitter: Dur::ZERO,
        });
        let a = g.expand(128, &RngTree::new(5), 0).unwrap();
        let b = g.expand(128, &RngTree::new(5), 0).unwrap();
        assert_eq!(a, b);
        let mut dsts: Vec<u32> = a.iter().map(|f| f.dst).collect();
        assert!(a.iter().all(|f| f.src != f.dst));
        dsts.sort_unstable();
        assert_eq!(dsts, (0..128).collect::<Vec<_>>());
    }

    #[test]
    fn eager_kinds_become_sorted_sources() {
        let g = GeneratorSpec::Permutation(PermutationSpec {
            first: 0,
            hosts: None,
            size: FlowSize(Some(1000)),
            start: Dur::ZERO,
            jitter: Dur::from_us(5),
        });
        let rng = RngTree::new(11);
        let eager = g.expand(32, &rng, 0).unwrap();
        let lazy: Vec<GenFlow> = g.source(&SourceCx::new(32, &rng, 0)).unwrap().collect();
        let mut sorted = eager.clone();
        sorted.sort_by_key(|f| f.start);
        assert_eq!(lazy, sorted);
    }
}
