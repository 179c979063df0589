//! The part of every node of a network in a run split between parts: the whole network as
//! one part, or the pods of a fat-tree (and of other networks with a tier above the edge
//! switches) spread over the parts, evenly by hosts or by the bytes of their flows.

use std::collections::VecDeque;

use dcsim_net::{HostId, Network, NodeId};

use crate::split_error::SplitError;

/// The part of every node of a network, for a run split between parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub(crate) node_part: Vec<u32>,
    pub(crate) parts: usize,
}

impl Partition {
    /// The whole network as one part.
    pub fn whole(net: &Network) -> Self {
        Self {
            node_part: vec![0; net.num_nodes()],
            parts: 1,
        }
    }

    /// Splits `net` into `parts` parts by pods. A node's tier is its distance in links from
    /// the nearest host; without the top tier (a fat-tree's core, a leaf-spine's spines),
    /// the network falls apart into pods, which go to the parts in the order of their
    /// first node, as many hosts to each part as whole pods allow. The top tier's switches
    /// are dealt out in order, an equal share to each part. Every link between two parts
    /// then leads to or from the top tier.
    ///
    /// # Errors
    /// If `parts` is zero, the network has no tier above its edge switches, or it has
    /// fewer pods than `parts`.
    pub fn by_pods(net: &Network, parts: usize) -> Result<Self, SplitError> {
        let pods = Pods::find(net, parts)?;
        let total: u64 = pods.hosts.iter().sum::<u64>().max(1);
        let k = parts as u64;
        let mut before = 0;
        let pod_part: Vec<u32> = pods
            .hosts
            .iter()
            .map(|&hosts| {
                let part = ((before + hosts / 2) * k / total).min(k - 1);
                before += hosts;
                part as u32
            })
            .collect();
        pods.partition(&pod_part, parts)
    }

    /// Splits `net` into `parts` parts by pods, as [`Partition::by_pods`], but with the
    /// pods given out to even the parts' loads (`host_load`: an estimate of each host's
    /// work, such as the bytes its flows carry, by host number; entries beyond the
    /// network's hosts are ignored, missing ones count as zero): the heaviest pods first, each to the
    /// lightest part, then single pods moved, and pairs swapped, from the heaviest part to
    /// the lightest while that lightens the heaviest. A part's pods need not be
    /// neighbours. Any split gives the same outputs; only the time differs.
    ///
    /// # Errors
    /// As [`Partition::by_pods`].
    pub fn by_pod_load(net: &Network, parts: usize, host_load: &[u64]) -> Result<Self, SplitError> {
        let pods = Pods::find(net, parts)?;
        let loads = pods.loads(net, host_load);
        let mut order: Vec<usize> = (0..loads.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(loads[i]), i));
        let mut pod_part = vec![0u32; loads.len()];
        let mut part_load = vec![0u128; parts];
        let mut part_pods = vec![0usize; parts];
        for &i in &order {
            // The lightest part, the one with fewest pods among equals, the first among those.
            let q = (0..parts)
                .min_by_key(|&q| (part_load[q], part_pods[q], q))
                .expect("at least one part");
            pod_part[i] = q as u32;
            part_load[q] += loads[i];
            part_pods[q] += 1;
        }
        // Moves and swaps between the heaviest and the lightest part, while they help.
        for _ in 0..loads.len() * loads.len() {
            let heavy = (0..parts).max_by_key(|&q| (part_load[q], std::cmp::Reverse(q)));
            let light = (0..parts).min_by_key(|&q| (part_load[q], q));
            let (Some(h), Some(l)) = (heavy, light) else {
                break;
            };
            let gap = part_load[h] - part_load[l];
            // The change of load that helps most: as near half the gap as can be.
            let mut best: Option<(u128, usize, Option<usize>)> = None;
            let mut consider = |delta: u128, i: usize, j: Option<usize>| {
                if delta > 0 && delta < gap {
                    let miss = (2 * delta).abs_diff(gap);
                    if best.is_none_or(|b| miss < b.0) {
                        best = Some((miss, i, j));
                    }
                }
            };
            for i in (0..loads.len()).filter(|&i| pod_part[i] as usize == h) {
                if part_pods[h] > 1 {
                    consider(loads[i], i, None);
                }
                for j in (0..loads.len()).filter(|&j| pod_part[j] as usize == l) {
                    if loads[i] > loads[j] {
                        consider(loads[i] - loads[j], i, Some(j));
                    }
                }
            }
            let Some((_, i, j)) = best else { break };
            pod_part[i] = l as u32;
            part_load[h] -= loads[i];
            part_load[l] += loads[i];
            match j {
                Some(j) => {
                    pod_part[j] = h as u32;
                    part_load[l] -= loads[j];
                    part_load[h] += loads[j];
                }
                None => {
                    part_pods[h] -= 1;
                    part_pods[l] += 1;
                }
            }
        }
        pods.partition(&pod_part, parts)
    }

    /// The largest load of a part, summed over its hosts (`host_load` as in
    /// [`Partition::by_pod_load`]).
    pub fn heaviest(&self, net: &Network, host_load: &[u64]) -> u128 {
        let mut load = vec![0u128; self.parts];
        for (h, &w) in host_load.iter().enumerate().take(net.num_hosts()) {
            load[self.part_of(net.host_node(HostId::new(h)))] += u128::from(w);
        }
        load.into_iter().max().unwrap_or(0)
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// The part of node `n`.
    pub fn part_of(&self, n: NodeId) -> usize {
        self.node_part[n.index()] as usize
    }
}

/// A network's pods: what is left connected without its top tier of switches.
struct Pods {
    /// Per node: its pod (`usize::MAX` for the top tier).
    pod: Vec<usize>,
    /// Per pod: its hosts.
    hosts: Vec<u64>,
    /// Per node: its tier, its distance in links from the nearest host.
    tier: Vec<u32>,
    /// The top tier.
    top: u32,
}

impl Pods {
    /// The pods of `net`, to be split into `parts` parts.
    ///
    /// # Errors
    /// If `parts` is zero, the network has no tier above its edge switches, or it has
    /// fewer pods than `parts`.
    fn find(net: &Network, parts: usize) -> Result<Self, SplitError> {
        let fail = |reason: String| SplitError::Unsplittable { parts, reason };
        if parts == 0 {
            return Err(fail("a run needs at least one part".into()));
        }
        let n = net.num_nodes();
        let mut links: Vec<Vec<usize>> = vec![Vec::new(); n];
        for p in net.ports() {
            links[p.node().index()].push(p.peer_node().index());
        }
        let mut tier = vec![u32::MAX; n];
        let mut queue: VecDeque<usize> = (0..net.num_hosts())
            .map(|h| net.host_node(HostId::new(h)).index())
            .collect();
        for &h in &queue {
            tier[h] = 0;
        }
        while let Some(v) = queue.pop_front() {
            for &w in &links[v] {
                if tier[w] == u32::MAX {
                    tier[w] = tier[v] + 1;
                    queue.push_back(w);
                }
            }
        }
        let top = match tier.iter().copied().filter(|&t| t != u32::MAX).max() {
            Some(t) if t >= 2 => t,
            _ => {
                return Err(fail(
                    "it has no tier of switches above its edge switches".into(),
                ));
            }
        };
        let mut pod = vec![usize::MAX; n];
        let mut hosts: Vec<u64> = Vec::new();
        for first in 0..n {
            if tier[first] >= top || pod[first] != usize::MAX {
                continue;
            }
            let (id, mut count) = (hosts.len(), 0);
            pod[first] = id;
            queue.push_back(first);
            while let Some(v) = queue.pop_front() {
                count += u64::from(tier[v] == 0);
                for &w in &links[v] {
                    if tier[w] < top && pod[w] == usize::MAX {
                        pod[w] = id;
                        queue.push_back(w);
                    }
                }
            }
            hosts.push(count);
        }
        if hosts.len() < parts {
            return Err(fail(format!(
                "it has {} pods below its top tier",
                hosts.len()
            )));
        }
        Ok(Self {
            pod,
            hosts,
            tier,
            top,
        })
    }

    /// Each pod's load, summed over its hosts.
    fn loads(&self, net: &Network, host_load: &[u64]) -> Vec<u128> {
        let mut loads = vec![0u128; self.hosts.len()];
        for (h, &w) in host_load.iter().enumerate().take(net.num_hosts()) {
            loads[self.pod[net.host_node(HostId::new(h)).index()]] += u128::from(w);
        }
        loads
    }

    /// The partition that gives pod `i` to part `pod_part[i]`, and the top tier's
    /// switches out in order, an equal share to each part.
    ///
    /// # Errors
    /// If a part has no pod.
    fn partition(&self, pod_part: &[u32], parts: usize) -> Result<Partition, SplitError> {
        for q in 0..parts as u32 {
            if !pod_part.contains(&q) {
                return Err(SplitError::Unsplittable {
                    parts,
                    reason: format!("its pods are too uneven to give part {q} any of them"),
                });
            }
        }
        let n = self.pod.len();
        let mut node_part = vec![0; n];
        for v in 0..n {
            if self.pod[v] != usize::MAX {
                node_part[v] = pod_part[self.pod[v]];
            }
        }
        let tops: Vec<usize> = (0..n).filter(|&v| self.tier[v] == self.top).collect();
        for (j, &v) in tops.iter().enumerate() {
            node_part[v] = (j * parts / tops.len()) as u32;
        }
        Ok(Partition { node_part, parts })
    }
}
