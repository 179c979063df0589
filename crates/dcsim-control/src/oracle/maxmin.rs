//! Max-min fair rates over shared links (water-filling), kept up to date as flows come and
//! go: the allocation an ideal transport with a global view would give (the Ideal
//! scheme).
//!
//! Progressive filling: the level rises from zero; a link whose fair share (remaining
//! capacity over the flows not yet fixed) the level reaches fixes its unfixed flows at that
//! share, which leaves its other links. The links wait in a heap keyed by their share;
//! fixing a flow only raises the shares of its other links, so a link that comes up with a
//! share that has risen since is queued again at its new share.
//!
//! A change re-fills only the links whose filling it alters. Every flow remembers its rate
//! and the link that fixed it (its bottleneck). A change repeats the filling, level by
//! level, on a set of *touched* links only, starting with the links of the flow that came
//! or went; every other link is known to fill as before, so its flows are taken at their
//! old rates when the level passes them, without being visited. A link is touched when one
//! of its flows deviates from the old filling, which can happen in two ways only: a touched
//! link fixes the flow below its old rate, or the level passes the flow's old rate while
//! its bottleneck is touched and has not fixed it (its rate will rise). Either way all the
//! flow's links join. On a fabric where every flow shares some link with most others the
//! change then follows the flows whose rates actually move, not every flow it could reach.
//!
//! A new rate within 10⁻¹² of the old one counts as the old one (the same rate computed
//! through other sums), so rounding neither touches links nor re-paces senders. `work`
//! counts the links and flow entries visited; a property test checks the result after every
//! change against plain water-filling from scratch.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flow's handle in a [`MaxMin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub u32);

/// A flow's links, inline up to [`INLINE`], so that following a flow to its links reads
/// no other allocation.
#[derive(Clone, Debug)]
enum Route {
    Inline(u8, [u32; INLINE]),
    Long(Box<[u32]>),
}

/// Links held inline: a three-tier fat-tree's longest route crosses six egress ports.
const INLINE: usize = 6;

impl Route {
    fn new(links: &[u32]) -> Self {
        if links.len() <= INLINE {
            let mut a = [0; INLINE];
            a[..links.len()].copy_from_slice(links);
            Self::Inline(links.len() as u8, a)
        } else {
            Self::Long(links.into())
        }
    }

    fn links(&self) -> &[u32] {
        match self {
            Self::Inline(n, a) => &a[..usize::from(*n)],
            Self::Long(b) => b,
        }
    }
}

impl Default for Route {
    fn default() -> Self {
        Self::Inline(0, [0; INLINE])
    }
}

/// What a recomputation reads of every flow on a link it touches, side by side.
#[derive(Clone, Copy, Debug, Default)]
struct Hot {
    rate: f64,
    /// `4·epoch + state` (below).
    mark: u64,
    /// The link that fixed its rate.
    bottleneck: u32,
}

/// Rates this close (relatively) are the same rate.
const SAME: f64 = 1e-12;

/// A flow's state within one recomputation ([`Hot::mark`] holds `4·epoch + state`; below
/// `4·epoch` the flow is untouched: its old rate stands when the level passes it).
const WAITING: u64 = 0; // on a touched link, unfixed, its old rate not yet reached
const DEVIATING: u64 = 1; // unfixed past its old rate (or new): its rate will change
const FIXED: u64 = 2; // fixed by a touched link
const PASSED: u64 = 3; // fixed at its old rate by its untouched bottleneck

/// Heap entries: `level bits << 64 | kind << 32 | index`; at one level links fill before
/// flows' old rates pass.
const LINK: u128 = 0;
const PASS: u128 = 1 << 32;

fn key(level: f64, kind: u128, index: u32) -> u128 {
    u128::from(level.to_bits()) << 64 | kind | u128::from(index)
}

/// Max-min fair rates of a changing set of flows over links of fixed capacity.
#[derive(Clone, Debug, Default)]
pub struct MaxMin {
    caps: Vec<f64>,
    on_link: Vec<Vec<u32>>,
    /// Per slot: the flow's links while it is present.
    flows: Vec<Option<Route>>,
    free: Vec<u32>,
    // Scratch, reused across changes.
    /// Per link: the epoch in which it was last touched.
    mark_link: Vec<u64>,
    /// Per flow (by slot): its rate and state.
    hot: Vec<Hot>,
    epoch: u64,
    remaining: Vec<f64>,
    unfixed: Vec<u32>,
    heap: BinaryHeap<Reverse<u128>>,
    changed: Vec<(Slot, f64)>,
    /// Links and flows visited by recomputations so far (the work done).
    pub work: u64,
    /// Recomputations so far (one per arrival or departure).
    pub changes: u64,
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
        if self.flows[s.0 as usize].is_some() {
            self.hot[s.0 as usize].rate
        } else {
            0.0
        }
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
        let flow = Route::new(links);
        let id = match self.free.pop() {
            Some(id) => {
                self.flows[id as usize] = Some(flow);
                id
            }
            None => {
                self.flows.push(Some(flow));
                self.hot.push(Hot::default());
                (self.flows.len() - 1) as u32
            }
        };
        for &l in links {
            self.on_link[l as usize].push(id);
        }
        self.begin();
        // The newcomer deviates from the start (it had no rate).
        self.hot[id as usize] = Hot {
            rate: f64::INFINITY,
            mark: 4 * self.epoch + DEVIATING,
            bottleneck: links[0],
        };
        self.refill(links);
        (Slot(id), &self.changed)
    }

    /// Removes flow `s`; returns every other flow whose rate changed.
    pub fn remove(&mut self, s: Slot) -> &[(Slot, f64)] {
        let f = self.flows[s.0 as usize].take().expect("a present flow");
        for &l in f.links() {
            let v = &mut self.on_link[l as usize];
            let i = v
                .iter()
                .position(|&x| x == s.0)
                .expect("listed on its links");
            v.swap_remove(i);
        }
        self.free.push(s.0);
        self.begin();
        self.refill(f.links());
        &self.changed
    }

    fn begin(&mut self) {
        self.changes += 1;
        self.epoch += 1;
        self.changed.clear();
        self.heap.clear();
    }

    fn state(&self, f: u32) -> Option<u64> {
        let m = self.hot[f as usize].mark;
        (m >= 4 * self.epoch).then_some(m & 3)
    }

    fn set_state(&mut self, f: u32, state: u64) {
        self.hot[f as usize].mark = 4 * self.epoch + state;
    }

    /// Flow `f`'s links, taken out while the caller changes the rest (put them back).
    fn take_route(&mut self, f: u32) -> Route {
        std::mem::take(self.flows[f as usize].as_mut().expect("listed flows exist"))
    }

    fn touched(&self, l: u32) -> bool {
        self.mark_link[l as usize] == self.epoch
    }

    /// Repeats the filling from level zero on the links `seeds` and those it touches.
    fn refill(&mut self, seeds: &[u32]) {
        for &l in seeds {
            self.touch(l, 0);
        }
        while let Some(Reverse(key)) = self.heap.pop() {
            let (bits, index) = ((key >> 64) as u64, key as u32);
            if key & PASS == 0 {
                self.fill(index, bits, key);
            } else {
                self.pass(index, key);
            }
        }
    }

    /// Link `l` joins the touched links while the level is at `now` (a heap key): its
    /// flows already fixed count as load, the others as unfixed, and each untouched one of
    /// those waits for the level to pass its old rate.
    fn touch(&mut self, l: u32, now: u128) {
        if self.touched(l) {
            return;
        }
        self.mark_link[l as usize] = self.epoch;
        let mut remaining = self.caps[l as usize];
        let mut unfixed = 0;
        let on = std::mem::take(&mut self.on_link[l as usize]);
        self.work += 1 + on.len() as u64;
        for &f in &on {
            let rate = self.hot[f as usize].rate;
            match self.state(f) {
                Some(FIXED | PASSED) => remaining -= rate,
                Some(WAITING | DEVIATING) => unfixed += 1,
                _ => {
                    let pass = key(passed_at(rate), PASS, f);
                    if pass < now {
                        // Its untouched bottleneck fixed it when the level passed.
                        self.set_state(f, PASSED);
                        remaining -= rate;
                    } else {
                        self.set_state(f, WAITING);
                        self.heap.push(Reverse(pass));
                        unfixed += 1;
                    }
                }
            }
        }
        self.on_link[l as usize] = on;
        self.remaining[l as usize] = remaining;
        self.unfixed[l as usize] = unfixed;
        self.push_link(l);
    }

    /// The level reaches link `l`'s share: it fixes its unfixed flows there.
    fn fill(&mut self, l: u32, bits: u64, now: u128) {
        if self.unfixed[l as usize] == 0 {
            return; // done
        }
        if self.share(l).to_bits() != bits {
            // Its share has risen since it was pushed: it waits at its new share.
            self.push_link(l);
            return;
        }
        let share = f64::from_bits(bits);
        // Taken out while its flows are fixed (nothing below reads this link's list).
        let on = std::mem::take(&mut self.on_link[l as usize]);
        self.work += on.len() as u64;
        for &f in &on {
            let Some(was @ (WAITING | DEVIATING)) = self.state(f) else {
                continue; // fixed already
            };
            self.set_state(f, FIXED);
            let route = self.take_route(f);
            let hot = &mut self.hot[f as usize];
            hot.bottleneck = l;
            let moved = (hot.rate - share).abs() > SAME * share; // a new flow's rate is infinite
            if moved {
                hot.rate = share;
                self.changed.push((Slot(f), share));
            }
            let rate = hot.rate;
            for &m in route.links() {
                if self.touched(m) {
                    self.remaining[m as usize] -= rate;
                    self.unfixed[m as usize] -= 1;
                } else if moved {
                    // Fixed below its old rate (a deviating flow's links are all touched).
                    debug_assert_eq!(was, WAITING);
                    self.touch(m, now);
                }
            }
            self.flows[f as usize] = Some(route);
        }
        self.on_link[l as usize] = on;
    }

    /// The level passes flow `f`'s old rate with `f` still unfixed.
    fn pass(&mut self, f: u32, now: u128) {
        if self.state(f) != Some(WAITING) {
            return;
        }
        self.work += 1;
        let Hot {
            rate, bottleneck, ..
        } = self.hot[f as usize];
        let route = self.take_route(f);
        if self.touched(bottleneck) {
            // Its bottleneck no longer fixes it here: its rate will rise.
            self.set_state(f, DEVIATING);
            for &m in route.links() {
                self.touch(m, now);
            }
        } else {
            // Its bottleneck fills as before and fixed it at its old rate.
            self.set_state(f, PASSED);
            for &m in route.links() {
                if self.touched(m) {
                    self.remaining[m as usize] -= rate;
                    self.unfixed[m as usize] -= 1;
                }
            }
        }
        self.flows[f as usize] = Some(route);
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
            self.heap.push(Reverse(key(self.share(l), LINK, l)));
        }
    }
}

/// The level at which an untouched flow of old rate `rate` counts as passed: just above
/// it, so that a touched link filling at the same rate (through other sums) comes first.
fn passed_at(rate: f64) -> f64 {
    rate * (1.0 + SAME)
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
    /// nobody else's rate, and the work done is that one link and flow.
    #[test]
    fn recomputation_is_limited_to_the_component() {
        let mut m = MaxMin::new(vec![1.0; 100]);
        for l in 0..99 {
            m.add(&[l]);
        }
        let before = m.work;
        let (s, changed) = m.add(&[99]);
        assert_eq!(changed, &[(s, 1.0)]);
        // The link joins (1), its flow listed (1), the link fills it (1).
        assert_eq!(m.work - before, 3, "one link and one flow visited");
    }

    /// A change re-fills only the links whose filling moves. A newcomer on link 0 halves
    /// the rate of flow `a` there; `a` also crosses link 1, which it shares with `b`; `b`
    /// is held by link 2 with ten others, and link 2 fills as before: its flows are never
    /// visited (a bound by rate alone would re-fill all of them, being faster than the
    /// newcomer). And a flow held to 0.1 elsewhere is not re-filled when the newcomer
    /// leaves.
    #[test]
    fn links_that_fill_as_before_are_not_visited() {
        let mut m = MaxMin::new(vec![1.0, 100.0, 11.0]);
        let (a, _) = m.add(&[0, 1]);
        let (b, _) = m.add(&[1, 2]);
        for _ in 0..10 {
            m.add(&[2]);
        }
        assert!(close(m.rate(a), 1.0) && close(m.rate(b), 1.0));
        let before = m.work;
        let (s, changed) = m.add(&[0]);
        let mut moved: Vec<Slot> = changed.iter().map(|c| c.0).collect();
        moved.sort_unstable();
        assert_eq!(moved, vec![a, s]);
        assert!(close(m.rate(a), 0.5) && close(m.rate(s), 0.5));
        // Link 0 joins with its 2 flows (3), fills them (2); `a` moved, so link 1 joins
        // with its 2 flows (3); `b`'s old rate passes with its bottleneck, link 2,
        // untouched (1); link 1 has nothing left to fill.
        assert_eq!(m.work - before, 9, "link 2 and its flows were not visited");

        let mut m = MaxMin::new(vec![10.0, 1.0]);
        let (held, _) = m.add(&[0, 1]);
        for _ in 0..9 {
            m.add(&[1]);
        }
        assert!(close(m.rate(held), 0.1));
        let (s, changed) = m.add(&[0]);
        assert_eq!(changed.len(), 1);
        assert!(close(changed[0].1, 9.9) && changed[0].0 == s);
        let before = m.work;
        assert!(m.remove(s).is_empty());
        // Link 0 joins with the held flow (2), whose old rate passes (1).
        assert_eq!(m.work - before, 3, "link 1 and its flows were not visited");
    }

    /// Max-min rates by progressive filling from scratch, the plain way (the reference).
    fn water_fill(caps: &[f64], flows: &[Vec<u32>]) -> Vec<f64> {
        let mut rate = vec![f64::NAN; flows.len()];
        let mut remaining = caps.to_vec();
        loop {
            let unfixed = |l: usize| {
                flows
                    .iter()
                    .enumerate()
                    .filter(|(i, f)| rate[*i].is_nan() && f.contains(&(l as u32)))
                    .count()
            };
            let Some((l, share)) = (0..caps.len())
                .filter(|&l| unfixed(l) > 0)
                .map(|l| (l, remaining[l].max(0.0) / unfixed(l) as f64))
                .min_by(|x, y| x.1.total_cmp(&y.1))
            else {
                return rate;
            };
            for (i, f) in flows.iter().enumerate() {
                if rate[i].is_nan() && f.contains(&(l as u32)) {
                    rate[i] = share;
                    for &m in f {
                        remaining[m as usize] -= share;
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// On random links and flows, after every one of random arrivals and departures:
        /// the flows reported changed are exactly those whose rate moved (any other keeps
        /// its rate bit for bit), no link carries
        /// more than its capacity, every flow has a bottleneck (a full link on which no
        /// flow gets more), and the rates equal plain water-filling from scratch.
        #[test]
        fn rates_are_max_min_fair_and_incremental_equals_scratch(
            caps in proptest::collection::vec(1u32..100, 1..16),
            ops in proptest::collection::vec((0u8..3, proptest::collection::vec(0u32..16, 1..10)), 1..80),
        ) {
            let caps: Vec<f64> = caps.into_iter().map(f64::from).collect();
            let n = caps.len() as u32;
            let mut m = MaxMin::new(caps.clone());
            let mut live: Vec<(Slot, Vec<u32>)> = Vec::new();
            for (op, links) in ops {
                let before: Vec<f64> = live.iter().map(|(s, _)| m.rate(*s)).collect();
                let changed: Vec<Slot> = if op > 0 || live.is_empty() {
                    let mut links: Vec<u32> = links.into_iter().map(|l| l % n).collect();
                    links.sort_unstable();
                    links.dedup();
                    let (s, changed) = m.add(&links);
                    let changed = changed.iter().map(|c| c.0).collect();
                    live.push((s, links));
                    changed
                } else {
                    let i = links[0] as usize % live.len();
                    let (s, _) = live[i];
                    let changed = m.remove(s).iter().map(|c| c.0).collect();
                    live[i].1.clear(); // gone: skipped below, then dropped
                    changed
                };
                for (k, (s, links)) in live.iter().enumerate().take(before.len()) {
                    if links.is_empty() {
                        continue;
                    }
                    // Reported exactly when its rate moved (senders re-pace on reports).
                    let moved = before[k].to_bits() != m.rate(*s).to_bits();
                    prop_assert_eq!(moved, changed.contains(s),
                        "flow {:?}: {} to {}", s, before[k], m.rate(*s));
                }
                live.retain(|(_, links)| !links.is_empty());
                let reference = water_fill(&caps, &live.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>());
                for (k, (s, _)) in live.iter().enumerate() {
                    prop_assert!(close(m.rate(*s), reference[k]), "{} vs {}", m.rate(*s), reference[k]);
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
        }
    }
}
