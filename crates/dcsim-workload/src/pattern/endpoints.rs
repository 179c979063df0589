//! Choosing hosts, shared by the patterns: host-set and host-number checks,
//! [`Destinations`] and the per-flow draw of a source and a destination, and derangements.
//!
//! Like [`source`](super::source), this module knows no individual pattern.

use dcsim_engine::Rng;
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::source::SourceCx;

/// Where flows of a Poisson pattern go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destinations {
    /// Uniform over the pattern's hosts other than the source.
    #[default]
    Uniform,
    /// Uniform over the pattern's hosts outside the source's rack.
    InterRack,
    /// A fixed random derangement: each source always sends to the same host, and every
    /// host receives from exactly one source.
    Permutation,
}

/// Host `h` of a topology of `hosts` hosts, checked (the eager patterns' rule). Errors are
/// `"field: message"`.
pub(crate) fn check_host(h: u64, hosts: u32, field: &str) -> Result<u32, String> {
    if h >= u64::from(hosts) {
        Err(format!(
            "{field}: host {h} is out of range (the topology has {hosts} hosts, 0..{})",
            hosts - 1
        ))
    } else {
        Ok(h as u32)
    }
}

/// The host set `first..first+n` of a pattern, checked against the topology.
pub(crate) fn host_set(
    first: u32,
    hosts: Option<u32>,
    total: u32,
    min: u32,
) -> Result<(u32, u32), String> {
    if first >= total {
        return Err(format!(
            "first: host {first} is out of range (the topology has {total} hosts)"
        ));
    }
    let n = hosts.unwrap_or(total - first);
    if u64::from(first) + u64::from(n) > u64::from(total) {
        return Err(format!(
            "hosts: hosts {first}..{} exceed the topology's {total} hosts",
            u64::from(first) + u64::from(n)
        ));
    }
    if n < min {
        return Err(format!(
            "hosts: the pattern needs at least {min} hosts, not {n}"
        ));
    }
    Ok((first, n))
}

/// A uniformly random permutation of `0..n` with no fixed point (rejection sampling of
/// Fisher–Yates shuffles; the expected number of tries is e ≈ 2.72).
pub(crate) fn derangement(n: usize, r: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    loop {
        for i in (1..n).rev() {
            let j = r.random_range(0..=i);
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &j)| i != j) {
            return p;
        }
        p.sort_unstable();
    }
}

/// Source and destination choice for flows among hosts `first..first+n`.
#[derive(Clone, Debug)]
pub(crate) struct Endpoints {
    first: u32,
    n: u32,
    mode: DstMode,
    src_rng: Rng,
    dst_rng: Rng,
}

#[derive(Clone, Debug)]
enum DstMode {
    Uniform,
    InterRack { per_rack: u32 },
    Permutation(Vec<u32>),
}

impl Endpoints {
    /// Endpoints for the pattern `kind` (which labels the random streams `"<kind>.src"`,
    /// `"<kind>.dst"` and `"<kind>.perm"`). Errors are `"field: message"`.
    pub(crate) fn new(
        kind: &str,
        first: u32,
        n: u32,
        d: Destinations,
        per_rack: Option<u32>,
        cx: &SourceCx<'_>,
    ) -> Result<Self, String> {
        let mode = match d {
            Destinations::Uniform => DstMode::Uniform,
            Destinations::InterRack => {
                let per_rack = per_rack.ok_or(
                    "hosts_per_rack: \"inter-rack\" destinations need the rack size (state \
                     hosts_per_rack, or use a topology with racks)",
                )?;
                if per_rack == 0 {
                    return Err("hosts_per_rack: must be at least 1".into());
                }
                if first / per_rack == (first + n - 1) / per_rack {
                    return Err(format!(
                        "destinations: hosts {first}..{} are all in one rack of {per_rack}, so \
                         no flow can leave its rack",
                        first + n
                    ));
                }
                DstMode::InterRack { per_rack }
            }
            Destinations::Permutation => {
                let mut r = cx.stream(&format!("{kind}.perm"));
                let p = derangement(n as usize, &mut r);
                DstMode::Permutation(
                    p.into_iter()
                        .map(|j| u32::try_from(j).expect("j < n, which is a u32"))
                        .collect(),
                )
            }
        };
        Ok(Self {
            first,
            n,
            mode,
            src_rng: cx.stream(&format!("{kind}.src")),
            dst_rng: cx.stream(&format!("{kind}.dst")),
        })
    }

    /// The expected share of flows whose destination is in another rack than the source,
    /// with racks of `per_rack` consecutive hosts (None without racks): what a load
    /// relative to the ToR uplinks puts on them. Exact for the mode; O(n).
    pub(crate) fn leaving_rack(&self, per_rack: Option<u32>) -> Option<f64> {
        let per_rack = u64::from(per_rack.filter(|&r| r > 0)?);
        let (first, n) = (u64::from(self.first), u64::from(self.n));
        let rack = |h: u64| (first + h) / per_rack;
        // Hosts of the set in host h's rack.
        let mates = |h: u64| {
            let lo = (rack(h) * per_rack).max(first);
            let hi = ((rack(h) + 1) * per_rack).min(first + n);
            hi - lo
        };
        let share = match &self.mode {
            DstMode::InterRack { .. } => 1.0,
            DstMode::Uniform => {
                (0..n)
                    .map(|h| (n - mates(h)) as f64 / (n - 1) as f64)
                    .sum::<f64>()
                    / n as f64
            }
            DstMode::Permutation(p) => {
                (0..n)
                    .filter(|&h| rack(h) != rack(u64::from(p[h as usize])))
                    .count() as f64
                    / n as f64
            }
        };
        Some(share)
    }

    /// A source uniform over the set and a distinct destination by the mode. O(1).
    pub(crate) fn draw(&mut self) -> (u32, u32) {
        let s = self.src_rng.random_range(0..self.n);
        let d = match &self.mode {
            DstMode::Uniform => {
                let k = self.dst_rng.random_range(0..self.n - 1);
                if k >= s { k + 1 } else { k }
            }
            DstMode::InterRack { per_rack } => {
                // The source's rack, as a block of positions [lo, hi) within the set.
                let abs = u64::from(self.first + s);
                let rack_lo = abs / u64::from(*per_rack) * u64::from(*per_rack);
                let set_hi = u64::from(self.first) + u64::from(self.n);
                let lo = rack_lo.max(u64::from(self.first)) - u64::from(self.first);
                let hi = (rack_lo + u64::from(*per_rack)).min(set_hi) - u64::from(self.first);
                let (lo, hi) = (to_u32(lo), to_u32(hi));
                let k = self.dst_rng.random_range(0..self.n - (hi - lo));
                if k >= lo { k + (hi - lo) } else { k }
            }
            DstMode::Permutation(p) => p[s as usize],
        };
        (self.first + s, self.first + d)
    }
}

fn to_u32(x: u64) -> u32 {
    u32::try_from(x).expect("a position within a host set of at most u32::MAX hosts")
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::pattern::testutil::cx;

    /// The share of flows leaving their rack: exact for uniform destinations (24 of 31
    /// others in racks of 8; a set that starts mid-rack counts only its own members), 1 for
    /// inter-rack ones, and for a permutation what its draws do; unknown without racks.
    #[test]
    fn the_share_leaving_the_rack_is_what_the_draws_do() {
        let rng = RngTree::new(7);
        let cx = cx(32, &rng);
        let ends = |first, n, d| Endpoints::new("t", first, n, d, Some(8), &cx).unwrap();
        let share = |e: &Endpoints| e.leaving_rack(Some(8)).unwrap();
        assert!((share(&ends(0, 32, Destinations::Uniform)) - 24.0 / 31.0).abs() < 1e-12);
        // Hosts 4..20: racks hold 4, 8 and 4 of them.
        let want = (4.0 * 12.0 + 8.0 * 8.0 + 4.0 * 12.0) / 15.0 / 16.0;
        assert!((share(&ends(4, 16, Destinations::Uniform)) - want).abs() < 1e-12);
        assert!((share(&ends(0, 32, Destinations::InterRack)) - 1.0).abs() < f64::EPSILON);
        let mut p = ends(0, 32, Destinations::Permutation);
        let leaving = (0..3200)
            .map(|_| p.draw())
            .filter(|(s, d)| s / 8 != d / 8)
            .count() as f64;
        assert!((leaving / 3200.0 - share(&p)).abs() < 0.03, "{leaving}");
        assert_eq!(ends(0, 32, Destinations::Uniform).leaving_rack(None), None);
    }
}
