//! The `pairs` pattern: a fixed list of sender–receiver pairs with a join/leave schedule
//! (eager).

use dcsim_engine::Dur;
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::check_host;
use super::source::{FlowSource, SourceCx, one};
use crate::{FlowSize, GenFlow};

/// `count` flows from host `src + i·src_step` to host `dst + i·dst_step`; flow i starts
/// at `start + i·start_every` and, if `stop` is set, stops at `stop + j·stop_every`
/// where j is its position in the leave order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairsSpec {
    /// Number of flows.
    pub count: u32,
    /// First sender.
    pub src: u32,
    /// First receiver.
    pub dst: u32,
    /// Sender step (default 1).
    #[serde(default = "one")]
    pub src_step: u32,
    /// Receiver step (default 1).
    #[serde(default = "one")]
    pub dst_step: u32,
    /// Size of each flow (default `inf`).
    #[serde(default)]
    pub size: FlowSize,
    /// Start of the first flow (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Gap between starts (default 0).
    #[serde(default)]
    pub start_every: Dur,
    /// Stop time of the first flow to leave, if the flows leave.
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Gap between stops (default 0).
    #[serde(default)]
    pub stop_every: Dur,
    /// Leave order (default `fifo`).
    #[serde(default)]
    pub leave_order: LeaveOrder,
}

/// Order in which staggered flows leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LeaveOrder {
    /// The first to join is the first to leave.
    #[default]
    Fifo,
    /// The last to join is the first to leave.
    Lifo,
}

impl Pattern for PairsSpec {
    const NAME: &'static str = "pairs";
    const ABOUT: &'static str = concat!(
        "count flows src+i*src_step -> dst+i*dst_step, staggered starts, ",
        "join/leave schedule",
    );

    /// The flows, in pair order. Errors are `"field: message"`.
    fn flows(&self, cx: &SourceCx<'_>) -> Result<Vec<GenFlow>, String> {
        let hosts = cx.hosts;
        // Both ends move linearly with i: the last pair is the farthest, so its hosts are
        // checked before any flow is built.
        if let Some(last) = u64::from(self.count).checked_sub(1) {
            check_host(
                u64::from(self.src) + last * u64::from(self.src_step),
                hosts,
                "src",
            )?;
            check_host(
                u64::from(self.dst) + last * u64::from(self.dst_step),
                hosts,
                "dst",
            )?;
        }
        let mut out = Vec::with_capacity(self.count as usize);
        for i in 0..u64::from(self.count) {
            let s = check_host(
                u64::from(self.src) + i * u64::from(self.src_step),
                hosts,
                "src",
            )?;
            let d = check_host(
                u64::from(self.dst) + i * u64::from(self.dst_step),
                hosts,
                "dst",
            )?;
            if s == d {
                return Err(format!("dst: flow {i} would send from host {s} to itself"));
            }
            let j = match self.leave_order {
                LeaveOrder::Fifo => i,
                LeaveOrder::Lifo => u64::from(self.count) - 1 - i,
            };
            out.push(GenFlow {
                src: s,
                dst: d,
                size_bytes: self.size.0,
                start: self.start + self.start_every * i,
                stop: self.stop.map(|t| t + self.stop_every * j),
            });
        }
        Ok(out)
    }

    /// The flows as a source sorted by start.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        Ok(FlowSource::eager("pairs", self.flows(cx)?))
    }

    fn planned_flows(&self, _hosts: u32) -> Option<u64> {
        Some(u64::from(self.count))
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::GeneratorSpec;

    #[test]
    fn pairs_join_and_leave_on_schedule() {
        let g = GeneratorSpec::Pairs(PairsSpec {
            count: 3,
            src: 0,
            dst: 3,
            src_step: 1,
            dst_step: 1,
            size: FlowSize(None),
            start: Dur::ZERO,
            start_every: Dur::from_ms(10),
            stop: Some(Dur::from_ms(50)),
            stop_every: Dur::from_ms(10),
            leave_order: LeaveOrder::Lifo,
        });
        let f = g.expand(6, &RngTree::new(0), 0).unwrap();
        assert_eq!(
            f.iter()
                .map(|x| x.start.as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [0, 10, 20]
        );
        assert_eq!(
            f.iter()
                .map(|x| x.stop.unwrap().as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [70, 60, 50]
        );
        assert!(
            g.expand(5, &RngTree::new(0), 0)
                .unwrap_err()
                .starts_with("dst: host 5 is out of range")
        );
    }
}
