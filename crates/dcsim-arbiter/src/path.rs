//! Path assignment for a two-tier Clos network (ToRs and spines).
//!
//! The packets allocated in one timeslot form a bipartite multigraph between source ToRs and
//! destination ToRs (one edge per packet that leaves its ToR). Giving every edge a spine so
//! that no ToR-to-spine or spine-to-ToR link carries two packets in the slot is an edge
//! colouring with one colour per spine. By König's edge-colouring theorem a bipartite
//! multigraph of maximum degree `D` can be coloured with `D` colours, so a Clos with at least
//! as many spines as hosts per ToR (full bisection, unit host links) always succeeds.
//!
//! Algorithm (the constructive proof of König's theorem): colour edges one at a time. For edge
//! `(u, v)` take a colour free at both ends if there is one. Otherwise take `a` free at `u` and
//! `b` free at `v`, and swap `a` and `b` along the path that starts at `v` and alternates edges
//! coloured `a` and `b`; in a bipartite graph that path cannot reach `u`, so afterwards `a` is
//! free at both ends. Free colours are bit masks (find-first-set), so the common case is O(1);
//! a recolouring costs the length of the alternating path, at most `2 x tors` edges.
//!
//! [`verify_paths`] checks a result independently (it counts link uses in a map).

use std::collections::HashMap;

use crate::types::NodeId;

/// A two-tier Clos network: host `h` is attached to ToR `h / hosts_per_tor`; every ToR has one
/// link (one packet per timeslot) to every spine and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Clos {
    /// Number of ToR switches.
    pub tors: u32,
    /// Number of spine switches (at most 64).
    pub spines: u32,
    /// Hosts under each ToR.
    pub hosts_per_tor: u32,
}

impl Clos {
    /// ToR of host `h`.
    #[inline]
    pub fn tor_of(&self, h: NodeId) -> u32 {
        h.0 / self.hosts_per_tor
    }

    /// Number of hosts.
    pub fn hosts(&self) -> u32 {
        self.tors * self.hosts_per_tor
    }
}

/// The route of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Path {
    /// Source and destination share a ToR: no spine.
    Local,
    /// Up to this spine and down.
    Spine(u32),
}

/// Why a timeslot could not be routed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The topology is unusable.
    #[error("bad Clos topology: {0}")]
    Topology(&'static str),
    /// A host outside the topology.
    #[error("host {0:?} is not in the topology")]
    UnknownHost(NodeId),
    /// More packets leave or enter one ToR in the slot than there are spines.
    #[error(
        "ToR {tor} has {degree} packets crossing the spine layer but there are {spines} spines"
    )]
    Overloaded {
        /// The ToR.
        tor: u32,
        /// Packets it sends (or receives) through spines in the slot.
        degree: u32,
        /// Spines available.
        spines: u32,
    },
}

/// A rule a routed timeslot breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathViolation {
    /// Different numbers of packets and paths.
    #[error("{packets} packets but {paths} paths")]
    Length {
        /// Packets.
        packets: usize,
        /// Paths.
        paths: usize,
    },
    /// A packet that leaves its ToR has no spine, or a local packet has one, or a spine is out
    /// of range.
    #[error("packet {index} has the wrong kind of path {path:?}")]
    WrongPath {
        /// Index of the packet.
        index: usize,
        /// Its path.
        path: Path,
    },
    /// Two packets share a ToR-to-spine link.
    #[error("uplink ToR {tor} -> spine {spine} carries two packets")]
    Uplink {
        /// The ToR.
        tor: u32,
        /// The spine.
        spine: u32,
    },
    /// Two packets share a spine-to-ToR link.
    #[error("downlink spine {spine} -> ToR {tor} carries two packets")]
    Downlink {
        /// The spine.
        spine: u32,
        /// The ToR.
        tor: u32,
    },
}

const NONE: u32 = u32::MAX;

/// Assigns spines to the packets of one timeslot at a time, reusing its buffers.
#[derive(Clone, Debug)]
pub struct PathAssigner {
    clos: Clos,
    all: u64,
    /// Per vertex (source ToRs, then destination ToRs): colours in use.
    used: Vec<u64>,
    /// `at[v * spines + c]`: the edge coloured `c` at vertex `v`, or `NONE`.
    at: Vec<u32>,
    /// Per edge: its two vertices and its colour.
    edges: Vec<(u32, u32, u32)>,
    path: Vec<u32>,
    /// Per vertex: packets crossing the spine layer in the slot being routed.
    degree: Vec<u32>,
    /// ToR of every host: a table, because a division per packet end cost more than the
    /// colouring itself.
    tor: Vec<u32>,
}

impl PathAssigner {
    /// An assigner for `clos`.
    pub fn new(clos: Clos) -> Result<Self, PathError> {
        if clos.tors == 0 || clos.hosts_per_tor == 0 {
            return Err(PathError::Topology(
                "tors and hosts_per_tor must be positive",
            ));
        }
        if clos.spines == 0 || clos.spines > 64 {
            return Err(PathError::Topology("spines must be between 1 and 64"));
        }
        let all = if clos.spines == 64 {
            !0
        } else {
            (1u64 << clos.spines) - 1
        };
        let vertices = 2 * clos.tors as usize;
        Ok(Self {
            clos,
            all,
            used: vec![0; vertices],
            at: vec![NONE; vertices * clos.spines as usize],
            edges: Vec::new(),
            path: Vec::new(),
            degree: vec![0; vertices],
            tor: (0..clos.hosts()).map(|h| clos.tor_of(NodeId(h))).collect(),
        })
    }

    /// Routes one timeslot: `packets` are `(source host, destination host)`, each host at most
    /// once per direction (what the allocator guarantees with unit links; with multi-link
    /// hosts a ToR's packets must still not exceed the spines). Writes one path per packet to
    /// `paths` (cleared first; left empty on an error, after which the assigner stays usable).
    pub fn assign(
        &mut self,
        packets: &[(NodeId, NodeId)],
        paths: &mut Vec<Path>,
    ) -> Result<(), PathError> {
        paths.clear();
        self.reset();
        let t = self.clos.tors;
        self.degree.fill(0);
        // One pass builds the edges (uncoloured) and the degrees; colouring starts only
        // when every ToR is known to fit.
        for &(s, d) in packets {
            let (Some(&ts), Some(&td)) = (self.tor.get(s.index()), self.tor.get(d.index())) else {
                paths.clear();
                let unknown = if s.0 >= self.clos.hosts() { s } else { d };
                return Err(PathError::UnknownHost(unknown));
            };
            if ts == td {
                paths.push(Path::Local);
                continue;
            }
            let (u, v) = (ts, t + td);
            self.degree[u as usize] += 1;
            self.degree[v as usize] += 1;
            self.edges.push((u, v, NONE));
            paths.push(Path::Spine(NONE));
        }
        if let Some((i, &deg)) = self
            .degree
            .iter()
            .enumerate()
            .find(|&(_, &deg)| deg > self.clos.spines)
        {
            paths.clear();
            return Err(PathError::Overloaded {
                tor: i as u32 % t,
                degree: deg,
                spines: self.clos.spines,
            });
        }
        for e in 0..self.edges.len() as u32 {
            self.colour(e);
        }
        // Recolouring may change earlier edges, so read the colours at the end.
        let mut next = 0;
        for p in paths.iter_mut() {
            if let Path::Spine(c) = p {
                *c = self.edges[next].2;
                next += 1;
            }
        }
        Ok(())
    }

    fn colour(&mut self, e: u32) {
        let (u, v, _) = self.edges[e as usize];
        let free_u = !self.used[u as usize] & self.all;
        let free_v = !self.used[v as usize] & self.all;
        let both = free_u & free_v;
        if both != 0 {
            self.set(e, both.trailing_zeros());
            return;
        }
        // Degrees were checked, so each end has a free colour.
        let a = free_u.trailing_zeros();
        let b = free_v.trailing_zeros();
        // Walk from v along a, b, a, ... and collect the path.
        self.path.clear();
        let (mut x, mut c) = (v, a);
        loop {
            let f = self.at[self.slot(x, c)];
            if f == NONE {
                break;
            }
            self.path.push(f);
            let (p, q, _) = self.edges[f as usize];
            x = if p == x { q } else { p };
            debug_assert_ne!(x, u, "alternating path reached u: graph not bipartite");
            c = if c == a { b } else { a };
        }
        // Swap a and b along the path: clear every path edge, then re-add with the other
        // colour (two steps, so no edge overwrites a neighbour still to be moved).
        let path = std::mem::take(&mut self.path);
        for &f in &path {
            self.unset(f);
        }
        for &f in &path {
            let old = self.edges[f as usize].2;
            self.set(f, if old == a { b } else { a });
        }
        self.path = path;
        self.set(e, a);
    }

    #[inline]
    fn slot(&self, v: u32, c: u32) -> usize {
        v as usize * self.clos.spines as usize + c as usize
    }

    fn set(&mut self, e: u32, c: u32) {
        let (u, v, _) = self.edges[e as usize];
        for x in [u, v] {
            debug_assert_eq!(self.used[x as usize] >> c & 1, 0);
            self.used[x as usize] |= 1 << c;
            let s = self.slot(x, c);
            self.at[s] = e;
        }
        self.edges[e as usize].2 = c;
    }

    /// Removes edge `e`'s colour but remembers it in `edges` (read by `colour`).
    fn unset(&mut self, e: u32) {
        let (u, v, c) = self.edges[e as usize];
        for x in [u, v] {
            self.used[x as usize] &= !(1 << c);
            let s = self.slot(x, c);
            self.at[s] = NONE;
        }
    }

    fn reset(&mut self) {
        for i in 0..self.edges.len() {
            let (u, v, c) = self.edges[i];
            if c == NONE {
                continue; // a slot refused before colouring
            }
            for x in [u, v] {
                let s = self.slot(x, c);
                self.at[s] = NONE;
                self.used[x as usize] = 0;
            }
        }
        self.edges.clear();
    }
}

/// Checks one routed timeslot independently: every packet that leaves its ToR has a spine in
/// range, local packets have none, and no ToR-spine or spine-ToR link carries two packets.
pub fn verify_paths(
    clos: &Clos,
    packets: &[(NodeId, NodeId)],
    paths: &[Path],
) -> Result<(), PathViolation> {
    if packets.len() != paths.len() {
        return Err(PathViolation::Length {
            packets: packets.len(),
            paths: paths.len(),
        });
    }
    let mut up: HashMap<(u32, u32), ()> = HashMap::new();
    let mut down: HashMap<(u32, u32), ()> = HashMap::new();
    for (index, (&(s, d), &path)) in packets.iter().zip(paths).enumerate() {
        let (ts, td) = (s.0 / clos.hosts_per_tor, d.0 / clos.hosts_per_tor);
        match path {
            Path::Local if ts == td => {}
            Path::Spine(spine) if ts != td && spine < clos.spines => {
                if up.insert((ts, spine), ()).is_some() {
                    return Err(PathViolation::Uplink { tor: ts, spine });
                }
                if down.insert((spine, td), ()).is_some() {
                    return Err(PathViolation::Downlink { spine, tor: td });
                }
            }
            _ => return Err(PathViolation::WrongPath { index, path }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(u32, u32)]) -> Vec<(NodeId, NodeId)> {
        v.iter().map(|&(s, d)| (NodeId(s), NodeId(d))).collect()
    }

    #[test]
    fn full_permutation_needs_recolouring_and_verifies() {
        // 2 ToRs x 2 hosts, 2 spines: both hosts of ToR 0 send to ToR 1 and back.
        let clos = Clos {
            tors: 2,
            spines: 2,
            hosts_per_tor: 2,
        };
        let mut a = PathAssigner::new(clos).unwrap();
        let pk = pairs(&[(0, 2), (2, 0), (1, 3), (3, 1)]);
        let mut paths = Vec::new();
        a.assign(&pk, &mut paths).unwrap();
        verify_paths(&clos, &pk, &paths).unwrap();
    }

    #[test]
    fn local_packets_use_no_spine() {
        let clos = Clos {
            tors: 2,
            spines: 1,
            hosts_per_tor: 2,
        };
        let mut a = PathAssigner::new(clos).unwrap();
        let pk = pairs(&[(0, 1), (2, 0)]);
        let mut paths = Vec::new();
        a.assign(&pk, &mut paths).unwrap();
        assert_eq!(paths, vec![Path::Local, Path::Spine(0)]);
    }

    #[test]
    fn too_few_spines_is_an_error() {
        let clos = Clos {
            tors: 2,
            spines: 1,
            hosts_per_tor: 2,
        };
        let mut a = PathAssigner::new(clos).unwrap();
        let err = a
            .assign(&pairs(&[(0, 2), (1, 3)]), &mut Vec::new())
            .unwrap_err();
        assert!(matches!(
            err,
            PathError::Overloaded {
                tor: 0,
                degree: 2,
                spines: 1
            }
        ));
    }

    #[test]
    fn refused_slot_leaves_the_assigner_usable() {
        let clos = Clos {
            tors: 2,
            spines: 1,
            hosts_per_tor: 2,
        };
        let mut a = PathAssigner::new(clos).unwrap();
        let mut paths = Vec::new();
        assert!(a.assign(&pairs(&[(0, 2), (1, 3)]), &mut paths).is_err());
        assert!(paths.is_empty(), "nothing routed on an error");
        assert!(matches!(
            a.assign(&pairs(&[(0, 1), (0, 5)]), &mut paths),
            Err(PathError::UnknownHost(NodeId(5)))
        ));
        assert!(paths.is_empty(), "nothing routed on an error");
        let pk = pairs(&[(1, 3), (2, 0)]);
        a.assign(&pk, &mut paths).unwrap();
        assert_eq!(paths, vec![Path::Spine(0), Path::Spine(0)]);
        verify_paths(&clos, &pk, &paths).unwrap();
    }

    #[test]
    fn verifier_catches_shared_uplink() {
        let clos = Clos {
            tors: 2,
            spines: 2,
            hosts_per_tor: 2,
        };
        let pk = pairs(&[(0, 2), (1, 3)]);
        let err = verify_paths(&clos, &pk, &[Path::Spine(1), Path::Spine(1)]).unwrap_err();
        assert_eq!(err, PathViolation::Uplink { tor: 0, spine: 1 });
    }
}
