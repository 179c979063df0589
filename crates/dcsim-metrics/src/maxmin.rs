//! Max-min fair rates over shared links (water-filling), kept up to date as flows come and
//! go: the allocation an ideal transport with a global view would give (issue 18's Ideal
//! scheme).
//!
//! A change recomputes only the connected component of the changed flow: the links it
//! crosses, the flows on them, their links, and so on. Within a component, progressive
//! filling: the link with the smallest fair share (remaining capacity / flows not yet
//! fixed) fixes its flows at that share, which leaves the other links they cross; repeat.

/// A flow's handle in a [`MaxMin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub u32);

#[derive(Clone, Debug)]
struct Flow {
    links: Vec<u32>,
    rate: f64,
}

/// Max-min fair rates of a changing set of flows over links of fixed capacity.
#[derive(Clone, Debug, Default)]
pub struct MaxMin {
    caps: Vec<f64>,
    on_link: Vec<Vec<u32>>,
    flows: Vec<Option<Flow>>,
    free: Vec<u32>,
    // Scratch, reused across changes.
    /// Per link and per flow: `2·epoch` when in the current component, `2·epoch + 1` when
    /// also fixed (flows).
    mark_link: Vec<u64>,
    mark_flow: Vec<u64>,
    epoch: u64,
    comp_links: Vec<u32>,
    comp_flows: Vec<u32>,
    remaining: Vec<f64>,
    unfixed: Vec<u32>,
    changed: Vec<(Slot, f64)>,
    /// Links and flows visited by recomputations so far (the work done).
    pub work: u64,
}

impl MaxMin {
    /// Links of the given capacities (any unit of rate), no flows.
    pub fn new(capacities: Vec<f64>) -> Self {
        let n = capacities.len();
        Self {
            on_link: vec![Vec::new(); n],
            mark_link: vec![0; n],
            remaining: vec![0.0; n],
            unfixed: vec![0; n],
            caps: capacities,
            ..Self::default()
        }
    }

    /// The current rate of `s`.
    pub fn rate(&self, s: Slot) -> f64 {
        self.flows[s.0 as usize].as_ref().map_or(0.0, |f| f.rate)
    }

    /// Flows present.
    pub fn len(&self) -> usize {
        self.flows.len() - self.free.len()
    }

    /// Whether no flow is present.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a flow across `links` (at least one, each a valid index); returns its slot and
    /// every flow whose rate changed (the new one included), with its new rate.
    pub fn add(&mut self, links: &[u32]) -> (Slot, &[(Slot, f64)]) {
        assert!(!links.is_empty(), "a flow crosses at least one link");
        let flow = Flow {
            links: links.to_vec(),
            rate: f64::NAN,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.flows[id as usize] = Some(flow);
                id
            }
            None => {
                self.flows.push(Some(flow));
                self.mark_flow.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        for &l in links {
            self.on_link[l as usize].push(id);
        }
        self.recompute(links.to_vec());
        (Slot(id), &self.changed)
    }

    /// Removes flow `s`; returns every other flow whose rate changed.
    pub fn remove(&mut self, s: Slot) -> &[(Slot, f64)] {
        let f = self.flows[s.0 as usize].take().expect("a present flow");
        for &l in &f.links {
            let v = &mut self.on_link[l as usize];
            let i = v
                .iter()
                .position(|&x| x == s.0)
                .expect("listed on its links");
            v.swap_remove(i);
        }
        self.free.push(s.0);
        self.recompute(f.links);
        &self.changed
    }

    /// Recomputes the component reachable from `seeds`; fills `changed`.
    fn recompute(&mut self, seeds: Vec<u32>) {
        self.changed.clear();
        self.epoch += 1;
        let e = 2 * self.epoch;
        self.comp_links.clear();
        self.comp_flows.clear();
        for l in seeds {
            if self.mark_link[l as usize] != e {
                self.mark_link[l as usize] = e;
                self.comp_links.push(l);
            }
        }
        let mut i = 0;
        while i < self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            i += 1;
            for &f in &self.on_link[l] {
                if self.mark_flow[f as usize] == e {
                    continue;
                }
                self.mark_flow[f as usize] = e;
                self.comp_flows.push(f);
                let flow = self.flows[f as usize].as_ref().expect("listed flows exist");
                for &m in &flow.links {
                    if self.mark_link[m as usize] != e {
                        self.mark_link[m as usize] = e;
                        self.comp_links.push(m);
                    }
                }
            }
        }
        self.work += (self.comp_links.len() + self.comp_flows.len()) as u64;
        for &l in &self.comp_links {
            self.remaining[l as usize] = self.caps[l as usize];
            self.unfixed[l as usize] = self.on_link[l as usize].len() as u32;
        }
        // Progressive filling.
        let fixed = e + 1;
        let mut left = self.comp_flows.len();
        while left > 0 {
            let mut best: Option<(f64, u32)> = None;
            for &l in &self.comp_links {
                let n = self.unfixed[l as usize];
                if n == 0 {
                    continue;
                }
                let share = self.remaining[l as usize].max(0.0) / f64::from(n);
                if best.is_none_or(|(s, _)| share < s) {
                    best = Some((share, l));
                }
            }
            let (share, l) = best.expect("unfixed flows sit on some link");
            for k in 0..self.on_link[l as usize].len() {
                let f = self.on_link[l as usize][k];
                if self.mark_flow[f as usize] == fixed {
                    continue;
                }
                self.mark_flow[f as usize] = fixed;
                left -= 1;
                let flow = self.flows[f as usize].as_mut().expect("listed flows exist");
                // Changed at all (bit for bit): the caller re-paces exactly these flows.
                if flow.rate.to_bits() != share.to_bits() {
                    flow.rate = share;
                    self.changed.push((Slot(f), share));
                }
                for &m in &flow.links {
                    self.remaining[m as usize] -= share;
                    self.unfixed[m as usize] -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// The parking lot: one flow across both links and one on each gets half of each link.
    #[test]
    fn parking_lot_shares_equally() {
        let mut m = MaxMin::new(vec![10.0, 10.0]);
        let (long, _) = m.add(&[0, 1]);
        assert!(close(m.rate(long), 10.0));
        let (a, changed) = m.add(&[0]);
        assert_eq!(changed.len(), 2);
        let (b, _) = m.add(&[1]);
        for s in [long, a, b] {
            assert!(close(m.rate(s), 5.0));
        }
        // The long flow leaves: each short flow gets its whole link.
        let changed = m.remove(long).to_vec();
        assert_eq!(changed.len(), 2);
        assert!(close(m.rate(a), 10.0) && close(m.rate(b), 10.0));
    }

    /// Two bottlenecks of different size: the flow limited by the small link leaves the
    /// rest of the big one to the others (1 and 2 units: 0.5, 0.5 on the first; 0.75 each
    /// for the two flows that have the second to themselves).
    #[test]
    fn a_flow_limited_elsewhere_leaves_its_share() {
        let mut m = MaxMin::new(vec![1.0, 2.0]);
        let (f0, _) = m.add(&[0, 1]);
        let (f1, _) = m.add(&[0]);
        let (f2, _) = m.add(&[1]);
        let (f3, _) = m.add(&[1]);
        assert!(close(m.rate(f0), 0.5) && close(m.rate(f1), 0.5));
        assert!(close(m.rate(f2), 0.75) && close(m.rate(f3), 0.75));
    }

    /// The ExpressPass multi-bottleneck structure: flow 0 and N flows share the sender's
    /// link; the N flows also share an upstream link of the same capacity. Max-min gives
    /// every flow 1/(N + 1) of the link.
    #[test]
    fn multi_bottleneck_gives_one_over_n_plus_one() {
        for n in [1u32, 2, 4, 8, 16, 64] {
            let mut m = MaxMin::new(vec![1.0, 1.0]);
            let (f0, _) = m.add(&[0]);
            let others: Vec<Slot> = (0..n).map(|_| m.add(&[0, 1]).0).collect();
            let want = 1.0 / f64::from(n + 1);
            assert!(close(m.rate(f0), want), "n {n}: {}", m.rate(f0));
            assert!(others.iter().all(|&s| close(m.rate(s), want)));
        }
    }

    /// Changes stay in their component: a flow on links no other flow touches changes
    /// nobody else's rate, and the work done is that component's size.
    #[test]
    fn recomputation_is_limited_to_the_component() {
        let mut m = MaxMin::new(vec![1.0; 100]);
        for l in 0..99 {
            m.add(&[l]);
        }
        let before = m.work;
        let (s, changed) = m.add(&[99]);
        assert_eq!(changed, &[(s, 1.0)]);
        assert_eq!(m.work - before, 2, "one link and one flow visited");
    }

    proptest! {
        /// On random links and flows, after random arrivals and departures: no link carries
        /// more than its capacity, every flow has a bottleneck (a full link on which no
        /// flow gets more), and the incremental rates equal a recomputation from scratch.
        #[test]
        fn rates_are_max_min_fair_and_incremental_equals_scratch(
            caps in proptest::collection::vec(1u32..100, 1..12),
            ops in proptest::collection::vec((any::<bool>(), proptest::collection::vec(0u32..12, 1..4)), 1..60),
        ) {
            let caps: Vec<f64> = caps.into_iter().map(f64::from).collect();
            let n = caps.len() as u32;
            let mut m = MaxMin::new(caps.clone());
            let mut live: Vec<(Slot, Vec<u32>)> = Vec::new();
            for (add, links) in ops {
                if add || live.is_empty() {
                    let mut links: Vec<u32> = links.into_iter().map(|l| l % n).collect();
                    links.sort_unstable();
                    links.dedup();
                    let (s, _) = m.add(&links);
                    live.push((s, links));
                } else {
                    let (s, _) = live.remove(links[0] as usize % live.len());
                    m.remove(s);
                }
            }
            let mut load = vec![0.0; caps.len()];
            for (s, links) in &live {
                for &l in links {
                    load[l as usize] += m.rate(*s);
                }
            }
            for (l, &c) in caps.iter().enumerate() {
                prop_assert!(load[l] <= c * (1.0 + 1e-9), "link {l}: {} over {c}", load[l]);
            }
            for (s, links) in &live {
                let r = m.rate(*s);
                let bottleneck = links.iter().any(|&l| {
                    close(load[l as usize], caps[l as usize])
                        && live
                            .iter()
                            .filter(|(_, o)| o.contains(&l))
                            .all(|(t, _)| m.rate(*t) <= r * (1.0 + 1e-9))
                });
                prop_assert!(bottleneck, "flow {s:?} at {r} has no bottleneck");
            }
            let mut fresh = MaxMin::new(caps.clone());
            for (_, links) in &live {
                fresh.add(links);
            }
            for (i, (s, _)) in live.iter().enumerate() {
                let t = Slot(i as u32);
                prop_assert!(close(m.rate(*s), fresh.rate(t)), "{} vs {}", m.rate(*s), fresh.rate(t));
            }
        }
    }
}
