//! The `incast` pattern: many senders to one receiver at once (eager).

use dcsim_engine::Dur;
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::check_host;
use super::source::{FlowSource, SourceCx, jitter_of};
use crate::{FlowSize, GenFlow};

/// `senders` hosts each send `size` to `receiver` at `start` (plus jitter). Senders are
/// `first_sender..first_sender+senders`, skipping the receiver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IncastSpec {
    /// The receiving host.
    pub receiver: u32,
    /// Number of senders (default: every other host).
    #[serde(default)]
    pub senders: Option<u32>,
    /// First sender (default 0).
    #[serde(default)]
    pub first_sender: u32,
    /// Bytes per sender.
    pub size: FlowSize,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
    #[serde(default)]
    pub jitter: Dur,
}

impl Pattern for IncastSpec {
    const NAME: &'static str = "incast";
    const ABOUT: &'static str = "many senders to one receiver at once, optional start jitter";

    /// The flows, in sender order. Errors are `"field: message"`.
    fn flows(&self, cx: &SourceCx<'_>) -> Result<Vec<GenFlow>, String> {
        let (hosts, receiver) = (cx.hosts, self.receiver);
        check_host(u64::from(receiver), hosts, "receiver")?;
        let n = self.senders.unwrap_or(hosts - 1);
        if n == 0 {
            return Err("senders: must be at least 1".into());
        }
        // Hosts from first_sender on, the receiver apart: refused before any flow is built.
        let first = u64::from(self.first_sender);
        let eligible = u64::from(hosts).saturating_sub(first)
            - u64::from(u64::from(receiver) >= first && receiver < hosts);
        if u64::from(n) > eligible {
            return Err(format!(
                "senders: {n} senders from host {first} need {n} hosts besides the receiver; \
                 the topology has {eligible} (of {hosts} hosts)"
            ));
        }
        let mut r = cx.stream("incast");
        let mut out = Vec::with_capacity(n as usize);
        let mut h = u64::from(self.first_sender);
        while out.len() < n as usize {
            if h == u64::from(receiver) {
                h += 1;
                continue;
            }
            let s = check_host(h, hosts, "senders")?;
            out.push(GenFlow {
                src: s,
                dst: receiver,
                size_bytes: self.size.0,
                start: self.start + jitter_of(self.jitter, &mut r),
                stop: None,
            });
            h += 1;
        }
        Ok(out)
    }

    /// The flows as a source sorted by start.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        Ok(FlowSource::eager("incast", self.flows(cx)?))
    }

    fn planned_flows(&self, hosts: u32) -> Option<u64> {
        Some(u64::from(self.senders.unwrap_or(hosts.saturating_sub(1))))
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::GeneratorSpec;

    #[test]
    fn incast_skips_the_receiver() {
        let g = GeneratorSpec::Incast(IncastSpec {
            receiver: 0,
            senders: None,
            first_sender: 0,
            size: FlowSize(Some(64_000)),
            start: Dur::ZERO,
            jitter: Dur::from_us(1),
        });
        let f = g.expand(9, &RngTree::new(0), 0).unwrap();
        assert_eq!(f.len(), 8);
        assert!(
            f.iter()
                .all(|x| x.dst == 0 && x.src != 0 && x.start <= Dur::from_us(1))
        );
    }
}
