//! Max-min fair rates over shared links (water-filling), kept up to date as flows come and
//! go: the allocation an ideal transport with a global view would give (the Ideal
//! scheme).
//!
//! Progressive filling: the link with the smallest fair share (remaining capacity / flows
//! not yet fixed) fixes its flows at that share, which leaves the other links they cross;
//! repeat. The links wait in a heap keyed by their share; fixing a flow only raises the
//! shares of its other links (theirs was at least the one fixed), so each fixed flow pushes
//! its links again and stale entries are skipped when they pop.
//!
//! A change re-fills only what it can reach. Filling fixes flows in increasing order of
//! rate, and a change on some links alters nothing below the first level at which one of
//! those links would fix a flow: for a departure that is the departed flow's rate (every
//! link it crossed had its bottleneck level at or above it); for an arrival, the lowest
//! level at which one of its links, given one more flow, would be full. Flows below that
//! floor keep their rates and count as fixed load. The rest is re-filled starting from the
//! changed links and following only flows at or above the floor: on a fabric where every
//! flow shares some link with every other, a start or completion usually touches the flows
//! near its own rate, not the whole network. `work` counts the links and flow entries
//! visited; a test checks the result against filling from scratch.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    rates_scratch: Vec<f64>,
    /// Links by (share bits, link): the smallest first.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
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
        let floor = links
            .iter()
            .map(|&l| self.first_level_with_one_more(l))
            .fold(f64::INFINITY, f64::min);
        let flow = Flow {
            links: links.to_vec(),
            // Above every floor until it is fixed.
            rate: f64::INFINITY,
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
        self.recompute(links, floor);
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
        // Every link of the departed flow had a bottleneck level at or above its rate, so
        // filling without it follows the old filling up to that rate.
        self.recompute(&f.links, f.rate);
        &self.changed
    }

    /// The level at which link `l` would first bottleneck its flows if one more flow
    /// crossed it, all else as now: with the present rates r₁ ≤ … ≤ rₙ of its flows, the
    /// first k with c_k = (capacity − r₁ − … − r_k) / (n − k + 1) ≤ r_{k+1} gives c_k.
    /// Below that level, filling with the newcomer fixes the same flows at the same rates
    /// as the present allocation: no link of the newcomer's is reached sooner.
    fn first_level_with_one_more(&mut self, l: u32) -> f64 {
        let rates = &mut self.rates_scratch;
        rates.clear();
        rates.extend(self.on_link[l as usize].iter().map(|&f| {
            self.flows[f as usize]
                .as_ref()
                .expect("listed flows exist")
                .rate
        }));
        rates.sort_unstable_by(f64::total_cmp);
        self.work += rates.len() as u64;
        let n = rates.len();
        let mut used = 0.0;
        for (k, &r) in rates.iter().enumerate() {
            let c = (self.caps[l as usize] - used) / (n - k + 1) as f64;
            if c <= r {
                return c;
            }
            used += r;
        }
        self.caps[l as usize] - used
    }

    /// Re-fills the flows that a change on the links `seeds` can reach: starting from
    /// those links, the flows whose present rate is at least `floor` (slightly lowered
    /// against rounding), their links, and so on. Flows below the floor keep their rates
    /// and count as fixed load on their links. Fills `changed`.
    fn recompute(&mut self, seeds: &[u32], floor: f64) {
        let floor = floor * (1.0 - 1e-9);
        self.changed.clear();
        self.epoch += 1;
        let e = 2 * self.epoch;
        self.comp_links.clear();
        self.comp_flows.clear();
        for &l in seeds {
            if self.mark_link[l as usize] != e {
                self.mark_link[l as usize] = e;
                self.comp_links.push(l);
            }
        }
        let mut i = 0;
        while i < self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            i += 1;
            self.work += 1 + self.on_link[l].len() as u64;
            for &f in &self.on_link[l] {
                if self.mark_flow[f as usize] == e {
                    continue;
                }
                let flow = self.flows[f as usize].as_ref().expect("listed flows exist");
                if flow.rate < floor {
                    continue; // below the change: its rate stands
                }
                self.mark_flow[f as usize] = e;
                self.comp_flows.push(f);
                for &m in &flow.links {
                    if self.mark_link[m as usize] != e {
                        self.mark_link[m as usize] = e;
                        self.comp_links.push(m);
                    }
                }
            }
        }
        self.heap.clear();
        for i in 0..self.comp_links.len() {
            let l = self.comp_links[i] as usize;
            let mut remaining = self.caps[l];
            let mut unfixed = 0;
            for &f in &self.on_link[l] {
                if self.mark_flow[f as usize] == e {
                    unfixed += 1;
                } else {
                    remaining -= self.flows[f as usize].as_ref().expect("listed").rate;
                }
            }
            self.remaining[l] = remaining;
            self.unfixed[l] = unfixed;
            self.push_link(l as u32);
        }
        // Progressive filling.
        let fixed = e + 1;
        let mut left = self.comp_flows.len();
        while left > 0 {
            let Reverse((bits, l)) = self.heap.pop().expect("unfixed flows sit on some link");
            if self.unfixed[l as usize] == 0 || self.share(l).to_bits() != bits {
                continue; // stale: the link's share has risen since, or it is done
            }
            let share = f64::from_bits(bits);
            for k in 0..self.on_link[l as usize].len() {
                let f = self.on_link[l as usize][k];
                if self.mark_flow[f as usize] != e {
                    continue; // fixed already, or below the floor
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
                for i in 0..flow.links.len() {
                    let m = self.flows[f as usize].as_ref().expect("listed").links[i];
                    if m != l && self.unfixed[m as usize] > 0 {
                        self.push_link(m);
                    }
                }
            }
        }
    }

    /// The fair share of link `l`: what remains over the flows not yet fixed (never
    /// negative, so its bits order like its value).
    fn share(&self, l: u32) -> f64 {
        let r = self.remaining[l as usize];
        let r = if r > 0.0 { r } else { 0.0 };
        r / f64::from(self.unfixed[l as usize])
    }

    fn push_link(&mut self, l: u32) {
        if self.unfixed[l as usize] > 0 {
            self.heap.push(Reverse((self.share(l).to_bits(), l)));
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

    /// A change re-fills only flows at or above its floor: a newcomer on a link whose only
    /// other flow is held to 0.1 elsewhere takes the rest of the link, and the ten flows of
    /// that other link are never visited.
    #[test]
    fn slower_flows_are_not_refilled() {
        let mut m = MaxMin::new(vec![10.0, 1.0]);
        let (held, _) = m.add(&[0, 1]);
        for _ in 0..9 {
            m.add(&[1]);
        }
        assert!(close(m.rate(held), 0.1));
        let before = m.work;
        let (s, changed) = m.add(&[0]);
        assert_eq!(changed.len(), 1);
        assert!(close(changed[0].1, 9.9) && changed[0].0 == s);
        // Link 0's one flow when finding the floor; then link 0 and its two flows.
        assert_eq!(
            m.work - before,
            1 + 3,
            "link 1 and its flows were not visited"
        );
        // Its departure re-fills nothing below its own rate either.
        let before = m.work;
        assert!(m.remove(s).is_empty());
        assert_eq!(m.work - before, 2, "link 0 and the held flow");
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
