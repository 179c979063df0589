//! The `shuffle` pattern: all-to-all transfers between the tasks of a host set (lazy,
//! finite).

use dcsim_engine::{ByteSize, Dur};
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::host_set;
use super::source::{FlowGenerator, FlowSource, Limits, SourceCx, SourceInfo, jitter_of, one};
use crate::GenFlow;

/// All-to-all shuffle: each of `hosts` hosts runs `tasks_per_host` tasks, and every task
/// sends `bytes_per_pair` to every task on the other hosts, so each host sends and
/// receives `tasks²·(hosts − 1)` flows (2496 for the xpass-shuffle set-up of 40 hosts
/// and 8 tasks). Lazy, finite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShuffleSpec {
    /// First host of the set (default 0).
    #[serde(default)]
    pub first: u32,
    /// Hosts in the set (default: all from `first`).
    #[serde(default)]
    pub hosts: Option<u32>,
    /// Tasks per host (default 1).
    #[serde(default = "one")]
    pub tasks_per_host: u32,
    /// Bytes each task sends to each task on another host.
    pub bytes_per_pair: ByteSize,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Each sending task starts a uniform random time in `[0, jitter]` after `start`
    /// (default 0).
    #[serde(default)]
    pub jitter: Dur,
}

impl Pattern for ShuffleSpec {
    const NAME: &'static str = "shuffle";
    const ABOUT: &'static str = concat!(
        "all-to-all: every task sends bytes_per_pair to every task on the other ",
        "hosts",
    );

    /// Checks the parameters and builds the source. Errors are `"field: message"`.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        let (first, n) = host_set(self.first, self.hosts, cx.hosts, 2)?;
        if self.tasks_per_host == 0 {
            return Err("tasks_per_host: must be at least 1".into());
        }
        if self.bytes_per_pair.bytes() == 0 {
            return Err("bytes_per_pair: a flow must carry at least 1 byte".into());
        }
        let t = u64::from(self.tasks_per_host);
        // The source keeps one entry (16 B) per sending task.
        const MAX_TASKS: u64 = 100_000_000;
        if u64::from(n) * t > MAX_TASKS {
            return Err(format!(
                "tasks_per_host: {n} hosts x {t} tasks = {} sending tasks, more than {MAX_TASKS}",
                u64::from(n) * t
            ));
        }
        let total = (u64::from(n) * t).saturating_mul(u64::from(n - 1) * t);
        let info = SourceInfo {
            kind: "shuffle",
            size: Some(format!("fixed {} B", self.bytes_per_pair.bytes())),
            mean_size_bytes: Some(self.bytes_per_pair.bytes() as f64),
            flows: Some(total),
            ..SourceInfo::default()
        };
        let g = ShuffleGen::new(
            first,
            n,
            self.tasks_per_host,
            self.bytes_per_pair,
            self.start,
            self.jitter,
            cx,
        );
        Ok(FlowSource::new(Box::new(g), Limits::default(), info))
    }
}

/// All-to-all shuffle: every task sends `bytes` to every task on the other hosts. A sending
/// task starts at `start` plus a uniform jitter in `[0, jitter]` and opens all its flows at
/// once; tasks are sorted by start time. Destinations are visited from the next host on
/// (`src + 1, src + 2, …` modulo the set), so simultaneous senders do not all begin with the
/// same receiver. O(hosts × tasks) memory, independent of the (hosts × tasks)² flows.
struct ShuffleGen {
    /// `(start_ps, host position)` per sending task, sorted by start.
    tasks: Vec<(u64, u32)>,
    task: usize,
    peer: u32,
    dst_task: u32,
    first: u32,
    n: u32,
    tasks_per_host: u32,
    bytes: u64,
}

impl ShuffleGen {
    fn new(
        first: u32,
        n: u32,
        tasks_per_host: u32,
        bytes: ByteSize,
        start: Dur,
        jitter: Dur,
        cx: &SourceCx<'_>,
    ) -> Self {
        let mut r = cx.stream("shuffle.jitter");
        let mut tasks: Vec<(u64, u32)> = (0..n)
            .flat_map(|h| (0..tasks_per_host).map(move |_| h))
            .map(|h| (start.saturating_add(jitter_of(jitter, &mut r)).as_ps(), h))
            .collect();
        tasks.sort_by_key(|&(t, _)| t);
        Self {
            tasks,
            task: 0,
            peer: 1,
            dst_task: 0,
            first,
            n,
            tasks_per_host,
            bytes: bytes.bytes(),
        }
    }
}

impl FlowGenerator for ShuffleGen {
    fn next_flow(&mut self) -> Option<GenFlow> {
        let &(start, h) = self.tasks.get(self.task)?;
        let dst = (h + self.peer) % self.n;
        self.dst_task += 1;
        if self.dst_task == self.tasks_per_host {
            self.dst_task = 0;
            self.peer += 1;
            if self.peer == self.n {
                self.peer = 1;
                self.task += 1;
            }
        }
        Some(GenFlow {
            src: self.first + h,
            dst: self.first + dst,
            size_bytes: Some(self.bytes),
            start: Dur::from_ps(start),
            stop: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::pattern::testutil::{assert_ordered_and_distinct, spec};

    /// xpass-shuffle (the ExpressPass paper's shuffle): 40 hosts × 8 tasks, 1 MB per task pair: each host
    /// sends and receives 2496 flows, 99,840 in all.
    #[test]
    fn shuffle_matches_the_xpass_setup() {
        let g = spec(
            "kind = \"shuffle\"\ntasks_per_host = 8\nbytes_per_pair = \"1MB\"\njitter = \"10us\"\n",
        );
        let rng = RngTree::new(8);
        let src = g.source(&SourceCx::new(40, &rng, 0)).unwrap();
        assert_eq!(src.info().flows, Some(99_840));
        let flows: Vec<GenFlow> = src.collect();
        assert_eq!(flows.len(), 99_840);
        assert_ordered_and_distinct(&flows, 40);
        let (mut sent, mut recv) = ([0u32; 40], [0u32; 40]);
        for f in &flows {
            sent[f.src as usize] += 1;
            recv[f.dst as usize] += 1;
            assert_eq!(f.size_bytes, Some(1_000_000));
        }
        assert!(sent.iter().chain(&recv).all(|&c| c == 2496));
    }
}
