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
//! its bottleneck is touched and has not fixed it (its rate will rise). Either way the
//! flow's links join. On a fabric where every flow shares some link with most others the
//! change then follows the flows whose rates actually move, not every flow it could reach.
//!
//! A link with room to spare (its flows' rates sum to less than its capacity) is no flow's
//! bottleneck, so it joins only if the flows rising across it could fill it. It keeps the
//! rates of its rising flows and its room; with `d` of them rising from old rates summing
//! to `r`, and room `R` left, it cannot fill below the level `(R + r) / d` (its untouched
//! flows only take more room as the level passes them), so it is looked at again when the
//! level reaches that and joins then if any of them is still rising. A flow slowed down
//! gives room back to it. On a leaf-spine at 80 % load most of the links a change reaches
//! have room to spare (the hosts' links); leaving them out cuts the work to a third.
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

/// A link whose load is below its capacity by more than this (relatively) has room to
/// spare: it limits no flow (a bottleneck's load is its capacity but for rounding).
const SPARE: f64 = 1e-9;

/// A flow's state within one recomputation ([`Hot::mark`] holds `4·epoch + state`; below
/// `4·epoch` the flow is untouched: its old rate stands when the level passes it).
const WAITING: u64 = 0; // on a touched link, unfixed, its old rate not yet reached
const DEVIATING: u64 = 1; // unfixed past its old rate (or new): its rate will change
const FIXED: u64 = 2; // fixed by a touched link
const PASSED: u64 = 3; // fixed at its old rate by its untouched bottleneck

/// Heap entries: `level bits << 64 | kind << 32 | index`; at one level links fill, then
/// links with room to spare are looked at, then flows' old rates pass.
const LINK: u128 = 0;
const ROOM: u128 = 1 << 32;
const PASS: u128 = 2 << 32;
const KIND: u128 = 3 << 32;

fn key(level: f64, kind: u128, index: u32) -> u128 {
    u128::from(level.to_bits()) << 64 | kind | u128::from(index)
}

/// A link's capacity and its part in the current recomputation, side by side.
#[derive(Clone, Copy, Debug, Default)]
struct Link {
    cap: f64,
    /// The epoch in which it was last touched.
    mark: u64,
    /// Capacity less the rates of its flows fixed so far in that epoch.
    remaining: f64,
    /// Its flows not yet fixed in that epoch.
    unfixed: u32,
    /// The sum of its flows' rates before this epoch, in [`units`]: exact, so that
    /// adding and taking away the same rates leaves no drift over a long run.
    load: i128,
    /// The load below which it has room to spare, in units.
    spare_below: i128,
    /// Left out with room to spare: the epoch in which `room`, `rising` and `from` were
    /// last set.
    spare_epoch: u64,
    /// Capacity less the load, less what its flows fixed so far took more (plus what they
    /// gave back).
    room: f64,
    /// Its flows rising (deviating) and not yet fixed, and their old rates' sum.
    rising: u32,
    from: f64,
}

/// Max-min fair rates of a changing set of flows over links of fixed capacity.
#[derive(Clone, Debug, Default)]
pub struct MaxMin {
    links: Vec<Link>,
    on_link: Vec<Vec<u32>>,
    /// Per slot: the flow's links while it is present.
    flows: Vec<Option<Route>>,
    free: Vec<u32>,
    // Scratch, reused across changes.
    /// Per flow (by slot): its rate and state.
    hot: Vec<Hot>,
    epoch: u64,
    heap: BinaryHeap<Reverse<u128>>,
    changed: Vec<(Slot, f64)>,
    /// Every flow fixed in this epoch, with its rate before.
    fixed: Vec<(u32, f64)>,
    seeds: Vec<u32>,
    /// Links and flows visited by recomputations so far (the work done).
    pub work: u64,
    /// Recomputations so far (one per arrival or departure).
    pub changes: u64,
}

impl MaxMin {
    /// Links of the given capacities (any unit of rate), no flows.
    pub fn new(capacities: Vec<f64>) -> Self {
        Self {
            on_link: vec![Vec::new(); capacities.len()],
            links: capacities
                .into_iter()
                .map(|cap| Link {
                    cap,
                    spare_below: units(cap * (1.0 - SPARE)),
                    ..Link::default()
                })
                .collect(),
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
        // The newcomer deviates from the start (it had no rate: it rises from zero).
        self.hot[id as usize] = Hot {
            rate: f64::INFINITY,
            mark: 4 * self.epoch + DEVIATING,
            bottleneck: links[0],
        };
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        for &l in links {
            if self.spare(l) {
                self.rise(l, 0.0);
            } else {
                seeds.push(l);
            }
        }
        self.refill(&seeds);
        self.seeds = seeds;
        self.end();
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
        // A link with room to spare limits no flow: a departure there changes nothing.
        let mut seeds = std::mem::take(&mut self.seeds);
        seeds.clear();
        seeds.extend(f.links().iter().filter(|&&l| !self.spare(l)));
        self.refill(&seeds);
        self.seeds = seeds;
        self.end();
        let rate = units(self.hot[s.0 as usize].rate);
        for &l in f.links() {
            self.links[l as usize].load -= rate;
        }
        &self.changed
    }

    fn begin(&mut self) {
        self.changes += 1;
        self.epoch += 1;
        self.changed.clear();
        self.heap.clear();
        self.fixed.clear();
    }

    /// Takes the new rates into the links' loads.
    fn end(&mut self) {
        for &(f, before) in &self.fixed {
            let now = self.hot[f as usize].rate;
            if now.to_bits() == before.to_bits() {
                continue;
            }
            let delta = units(now) - units(before);
            let route = self.flows[f as usize].as_ref().expect("listed flows exist");
            for &m in route.links() {
                self.links[m as usize].load += delta;
            }
        }
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
        self.links[l as usize].mark == self.epoch
    }

    /// Whether link `l`, untouched, had room to spare before this change (its flows'
    /// rates below its capacity).
    fn spare(&self, l: u32) -> bool {
        let link = &self.links[l as usize];
        link.load < link.spare_below
    }

    /// Link `l`, left out with room to spare, as of this epoch.
    fn spare_link(&mut self, l: u32) -> &mut Link {
        let epoch = self.epoch;
        let link = &mut self.links[l as usize];
        if link.spare_epoch != epoch {
            link.spare_epoch = epoch;
            // Less a rounding's worth, so that its level stays a lower bound.
            link.room = link.cap * (1.0 - SAME) - float(link.load) / UNIT;
            link.rising = 0;
            link.from = 0.0;
        }
        link
    }

    /// A flow across link `l` (left out) rises from its old rate `from`: the link is
    /// looked at again when the level reaches the lowest at which it could fill.
    fn rise(&mut self, l: u32, from: f64) {
        let link = self.spare_link(l);
        link.rising += 1;
        link.from += from;
        let at = room_level(link);
        self.heap.push(Reverse(key(at, ROOM, l)));
    }

    /// The level reaches the entry `now` of link `l`, left out: it joins if it could fill
    /// from here on, with flows still rising across it.
    fn recheck(&mut self, l: u32, now: u128) {
        if self.touched(l) {
            return;
        }
        let link = self.spare_link(l);
        if link.rising == 0 {
            return;
        }
        let at = key(room_level(link), ROOM, l);
        if at > now {
            self.heap.push(Reverse(at)); // its flows took less room than it was pushed with
            return;
        }
        self.touch(l, now);
    }

    /// Repeats the filling from level zero on the links `seeds` and those it touches.
    fn refill(&mut self, seeds: &[u32]) {
        for &l in seeds {
            self.touch(l, 0);
        }
        while let Some(Reverse(key)) = self.heap.pop() {
            let (bits, index) = ((key >> 64) as u64, key as u32);
            match key & KIND {
                LINK => self.fill(index, bits, key),
                ROOM => self.recheck(index, key),
                _ => self.pass(index, key),
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
        self.links[l as usize].mark = self.epoch;
        let mut remaining = self.links[l as usize].cap;
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
        let link = &mut self.links[l as usize];
        link.remaining = remaining;
        link.unfixed = unfixed;
        self.push_link(l);
    }

    /// The level reaches link `l`'s share: it fixes its unfixed flows there.
    fn fill(&mut self, l: u32, bits: u64, now: u128) {
        if self.links[l as usize].unfixed == 0 {
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
            let before = hot.rate;
            self.fixed.push((f, before));
            hot.bottleneck = l;
            let moved = (before - share).abs() > SAME * share; // a new flow's rate is infinite
            if moved {
                hot.rate = share;
                self.changed.push((Slot(f), share));
            }
            let rate = hot.rate;
            for &m in route.links() {
                let link = &mut self.links[m as usize];
                if link.mark == self.epoch {
                    link.remaining -= rate;
                    link.unfixed -= 1;
                } else if self.spare(m) {
                    // Left out: what the flow takes more of its room, or gives back.
                    let link = self.spare_link(m);
                    if was == DEVIATING {
                        let from = if before.is_finite() { before } else { 0.0 };
                        link.rising -= 1;
                        link.from -= from;
                        link.room -= rate - from;
                    } else {
                        link.room += before - rate;
                    }
                } else if moved {
                    // Fixed below its old rate (a deviating flow's full links are all
                    // touched).
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
                if self.touched(m) {
                    continue;
                }
                if self.spare(m) {
                    self.rise(m, rate);
                } else {
                    self.touch(m, now);
                }
            }
        } else {
            // Its bottleneck fills as before and fixed it at its old rate.
            self.set_state(f, PASSED);
            for &m in route.links() {
                let link = &mut self.links[m as usize];
                if link.mark == self.epoch {
                    link.remaining -= rate;
                    link.unfixed -= 1;
                }
            }
        }
        self.flows[f as usize] = Some(route);
    }

    /// The fair share of link `l`: what remains over the flows not yet fixed (never
    /// negative, so its bits order like its value).
    fn share(&self, l: u32) -> f64 {
        let Link {
            remaining: r,
            unfixed,
            ..
        } = self.links[l as usize];
        let r = if r > 0.0 { r } else { 0.0 };
        r / f64::from(unfixed)
    }

    fn push_link(&mut self, l: u32) {
        if self.links[l as usize].unfixed > 0 {
            self.heap.push(Reverse(key(self.share(l), LINK, l)));
        }
    }
}

/// Rates in loads are counted in whole units of 2⁻⁶⁴ (of the rates' unit): exactly, for
/// any rate above 2⁻¹¹ (its 53 bits then fall above the unit); a link's load (about its
/// capacity at most) fits 128 bits up to 9·10¹⁸ (in bits per second, 9 Eb/s).
const UNIT: f64 = 18_446_744_073_709_551_616.0;

/// A rate (not negative) in whole [`UNIT`]s, truncated; a newcomer's infinite rate before
/// it has one counts none. Taken from the float's bits: the general conversion to 128
/// bits is a library call, several times slower on the oracle's path.
fn units(rate: f64) -> i128 {
    if !rate.is_finite() || rate <= 0.0 {
        return 0;
    }
    let bits = rate.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let (mant, exp) = if exp == 0 {
        (bits & ((1 << 52) - 1), -1074) // subnormal
    } else {
        (bits & ((1 << 52) - 1) | 1 << 52, exp - 1075)
    };
    // rate · 2⁶⁴ = mant · 2^(exp + 64)
    let shift = exp + 64;
    if shift >= 0 {
        i128::from(mant) << shift.min(74)
    } else if shift > -64 {
        i128::from(mant >> -shift)
    } else {
        0
    }
}

/// A load in units as a float, from its two halves (the general conversion is a library
/// call; this one may round twice, within the margin `spare_link` leaves).
fn float(units: i128) -> f64 {
    let high = (units >> 64) as i64;
    let low = units as u64;
    high as f64 * UNIT + low as f64
}

/// The lowest level at which a link left out with room to spare could fill: its rising
/// flows all at that level take exactly its room.
fn room_level(link: &Link) -> f64 {
    let level = (link.room + link.from) / f64::from(link.rising);
    if level > 0.0 { level } else { 0.0 }
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
        // Link 0 joins with its 2 flows (3), fills them (2); `a` moved down, but link 1
        // (2 of its 100 used) has room to spare, limits no flow and stays out, and so
        // does link 2, reached only through it.
        assert_eq!(
            m.work - before,
            5,
            "links 1 and 2 and their flows were not visited"
        );

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

    /// Rates counted in units of 2⁻⁶⁴ from their bits agree with the general conversion.
    #[test]
    fn units_agree_with_the_general_conversion() {
        for r in [
            1.0,
            0.5,
            1.0 / 3.0,
            1e-3,
            1e-30,
            7.25e9,
            1e10 / 21.0,
            4.0e17,
            0.0,
        ] {
            assert_eq!(units(r), (r * UNIT) as i128, "{r}");
        }
        assert_eq!(units(f64::INFINITY), 0);
    }

    /// A link with room to spare joins only if the flows rising across it could fill it.
    /// Flow `x` shares link 0 (capacity 1) with `y` and also crosses link 1 alone; when `y`
    /// leaves, `x` rises to 1 if link 1 has room for that, and is held by link 1 if not.
    #[test]
    fn a_link_with_room_to_spare_joins_only_if_its_rising_flows_could_fill_it() {
        for (cap1, want, visited) in [(2.0, 1.0, false), (0.8, 0.8, true)] {
            let mut m = MaxMin::new(vec![1.0, cap1]);
            let (x, _) = m.add(&[0, 1]);
            let (y, _) = m.add(&[0]);
            assert!(close(m.rate(x), 0.5) && close(m.rate(y), 0.5));
            let before = m.work;
            let changed = m.remove(y).to_vec();
            assert_eq!(changed.len(), 1);
            assert!(close(m.rate(x), want), "link 1 of {cap1}: {}", m.rate(x));
            // Link 0 joins with `x` (2) and `x`'s old rate passes (1); then link 0 fills it
            // (1), or link 1 joins (2) and fills it first (1).
            let work = if visited { 6 } else { 4 };
            assert_eq!(m.work - before, work, "link 1 of {cap1}");
        }
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
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// On random links and flows, after every one of random arrivals and departures:
        /// the flows reported changed are exactly those whose rate moved (any other keeps
        /// its rate bit for bit), no link carries
        /// more than its capacity, every flow has a bottleneck (a full link on which no
        /// flow gets more), and the rates equal plain water-filling from scratch.
        #[test]
        fn rates_are_max_min_fair_and_incremental_equals_scratch(
            caps in proptest::collection::vec(1u32..100, 1..16),
            ops in proptest::collection::vec((0u8..3, proptest::collection::vec(0u32..16, 1..10)), 1..120),
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
