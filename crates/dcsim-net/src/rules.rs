//! Flow-matching rules that set CE on the packets of chosen flows at a switch egress port,
//! the way an OpenFlow rule with a `set_field(ip_ecn = CE)` action does: installed by a
//! controller (the SDN ECN controller of the central-control thesis), each with a hard
//! timeout (removed that long after installation) and an idle timeout (removed when no
//! packet has matched for that long), either optional.
//!
//! A rule acts on the packets of its flow that leave through its port, before the queue
//! discipline sees them; only ECN-capable packets are marked (a switch does not put CE on a
//! packet whose transport did not ask for ECN), the others pass unchanged. Rules cost
//! nothing on the packet path while none is installed: `MarkRules::any` is checked first.

use dcsim_engine::{Dur, Time};

use crate::packet::{Ecn, Packet};
use crate::{FlowId, PortId};

/// One installed rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkRule {
    /// The flow it matches.
    pub flow: FlowId,
    /// Removed at this time (hard timeout), or `Time::MAX`.
    pub hard_until: Time,
    /// Removed when no packet matched for this long (idle timeout).
    pub idle: Option<Dur>,
    /// The last match (or the installation).
    pub last_hit: Time,
}

impl MarkRule {
    fn expired(&self, now: Time) -> bool {
        now >= self.hard_until || self.idle.is_some_and(|d| now >= self.last_hit + d)
    }
}

/// The rules of every port.
#[derive(Clone, Debug, Default)]
pub struct MarkRules {
    per_port: Vec<Vec<MarkRule>>,
    /// Rules present (some may have expired and wait to be swept).
    live: usize,
    /// Packets set to CE by a rule.
    pub marked: u64,
    /// Rules installed (a re-installation of a present rule counts again).
    pub installed: u64,
}

impl MarkRules {
    pub(crate) fn new(ports: usize) -> Self {
        Self {
            per_port: vec![Vec::new(); ports],
            ..Self::default()
        }
    }

    /// Whether any rule is present.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.live != 0
    }

    /// Installs (or refreshes) the rule for `flow` at `port` at time `now`.
    pub(crate) fn install(
        &mut self,
        port: PortId,
        flow: FlowId,
        now: Time,
        hard: Option<Dur>,
        idle: Option<Dur>,
    ) {
        self.sweep(port, now);
        let rule = MarkRule {
            flow,
            hard_until: hard.map_or(Time::MAX, |d| now + d),
            idle,
            last_hit: now,
        };
        let rules = &mut self.per_port[port.index()];
        self.installed += 1;
        if let Some(r) = rules.iter_mut().find(|r| r.flow == flow) {
            *r = rule;
        } else {
            rules.push(rule);
            self.live += 1;
        }
    }

    /// Removes the expired rules of `port`.
    fn sweep(&mut self, port: PortId, now: Time) {
        let rules = &mut self.per_port[port.index()];
        let before = rules.len();
        rules.retain(|r| !r.expired(now));
        self.live -= before - rules.len();
    }

    /// Applies the rules of `port` to `pkt` leaving through it at `now`; returns whether
    /// the packet was marked.
    #[inline]
    pub(crate) fn apply(&mut self, port: PortId, pkt: &mut Packet, now: Time) -> bool {
        let rules = &mut self.per_port[port.index()];
        let Some(i) = rules.iter().position(|r| r.flow == pkt.flow) else {
            return false;
        };
        if rules[i].expired(now) {
            rules.swap_remove(i);
            self.live -= 1;
            return false;
        }
        rules[i].last_hit = now;
        if pkt.ip.ecn() != Ecn::Ect {
            return false;
        }
        pkt.ip.set_ecn(Ecn::Ce);
        self.marked += 1;
        true
    }

    /// The rules present at `port` and not expired at `now`.
    pub fn active(&self, port: PortId, now: Time) -> impl Iterator<Item = &MarkRule> {
        self.per_port[port.index()]
            .iter()
            .filter(move |r| !r.expired(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Class, IpBits, RateStamp};
    use crate::{HostId, RouteId};

    fn pkt(flow: u32, ip: IpBits) -> Packet {
        Packet {
            seq: 0,
            ack: 0,
            sent_at: Time::ZERO,
            echo: Time::ZERO,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: FlowId(flow),
            route: RouteId::NONE,
            dst: HostId::new(0),
            next: PortId::NONE,
            payload_bytes: 1460,
            wire_bytes: 1538,
            hop: 0,
            class: Class::Data,
            ip,
            flags: 0,
        }
    }

    /// A rule marks the ECT packets of its flow at its port only, never a non-ECT packet,
    /// and stops at its hard timeout.
    #[test]
    fn marks_its_flow_until_the_hard_timeout() {
        let mut r = MarkRules::new(2);
        let (p0, p1) = (PortId::new(0), PortId::new(1));
        assert!(!r.any());
        r.install(p0, FlowId(7), Time::ZERO, Some(Dur::from_ms(10)), None);
        assert!(r.any());
        let t = Time::from_dur(Dur::from_ms(5));
        let mut a = pkt(7, IpBits::ECT);
        assert!(r.apply(p0, &mut a, t));
        assert_eq!(a.ip.ecn(), Ecn::Ce);
        let mut other = pkt(8, IpBits::ECT);
        assert!(!r.apply(p0, &mut other, t), "another flow");
        let mut elsewhere = pkt(7, IpBits::ECT);
        assert!(!r.apply(p1, &mut elsewhere, t), "another port");
        let mut plain = pkt(7, IpBits::NOT_ECT);
        assert!(!r.apply(p0, &mut plain, t), "not ECN-capable");
        assert_eq!(plain.ip.ecn(), Ecn::NotEct);
        let mut late = pkt(7, IpBits::ECT);
        assert!(!r.apply(p0, &mut late, Time::from_dur(Dur::from_ms(10))));
        assert!(!r.any(), "the expired rule is gone");
        assert_eq!((r.marked, r.installed), (1, 1));
    }

    /// The idle timeout runs from the last match; re-installing refreshes a rule instead of
    /// adding a second one.
    #[test]
    fn idle_timeout_runs_from_the_last_match() {
        let mut r = MarkRules::new(1);
        let p = PortId::new(0);
        let ms = |m| Time::from_dur(Dur::from_ms(m));
        r.install(p, FlowId(1), ms(0), None, Some(Dur::from_ms(3)));
        assert!(r.apply(p, &mut pkt(1, IpBits::ECT), ms(2)));
        assert!(
            r.apply(p, &mut pkt(1, IpBits::ECT), ms(4)),
            "3 ms after the last match"
        );
        assert!(
            !r.apply(p, &mut pkt(1, IpBits::ECT), ms(8)),
            "idle for 4 ms"
        );
        r.install(p, FlowId(1), ms(9), Some(Dur::from_ms(1)), None);
        r.install(p, FlowId(1), ms(9), Some(Dur::from_ms(5)), None);
        assert_eq!(r.active(p, ms(12)).count(), 1, "refreshed, not added");
        assert_eq!(r.active(p, ms(14)).count(), 0);
    }
}
