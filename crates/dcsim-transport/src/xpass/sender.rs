//! The ExpressPass sender: requests credits, sends one data packet per credit, stops the
//! credits when done, resends NACKed ranges.

use dcsim_engine::{Dur, Time, TimerTable};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, IpBits, Packet, RateStamp};

use super::{
    FLAG_CREDIT, FLAG_NACK, FLAG_REQUEST, FLAG_STOP, FLAG_XDATA, XpassParams, XpassStats, control,
};
use crate::endpoint::{EndpointCx, FlowInfo, Sched, Sender};
use crate::ranges::insert_range;

const T_REQ: usize = 0;
const T_STOP: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendState {
    Requested,
    Sending,
    Stopped,
}

/// The sending end of an ExpressPass flow.
pub struct XpassSender {
    flow: FlowInfo,
    p: XpassParams,
    state: SendState,
    req_backoff: u32,
    next_seq: u64,
    retx: Vec<(u64, u64)>,
    request_sent_at: Time,
    rtt: Option<Dur>,
    stop_sent_at: Time,
    ecs_checked_at: Time,
    credits_this_rtt: u64,
    last_credit_at: Time,
    timers: TimerTable<2>,
    stats: XpassStats,
}

impl XpassSender {
    /// The sender of `flow` with parameters `p`.
    pub fn new(p: XpassParams, flow: &FlowInfo) -> Self {
        Self {
            flow: *flow,
            p,
            state: SendState::Requested,
            req_backoff: 0,
            next_seq: 0,
            retx: Vec::new(),
            request_sent_at: Time::ZERO,
            rtt: None,
            stop_sent_at: Time::ZERO,
            ecs_checked_at: Time::ZERO,
            credits_this_rtt: 0,
            last_credit_at: Time::ZERO,
            timers: TimerTable::default(),
            stats: XpassStats::default(),
        }
    }

    /// Counters (credits received and wasted, retransmissions, requests).
    pub fn stats(&self) -> XpassStats {
        self.stats
    }

    fn has_data(&self, limit: u64) -> bool {
        !self.retx.is_empty() || self.next_seq < limit
    }

    fn send_request<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let size = cx.shared.limit_bytes;
        let left =
            size.saturating_sub(self.next_seq) + self.retx.iter().map(|r| r.1 - r.0).sum::<u64>();
        let pkts = left.div_ceil(u64::from(TCP_MSS_BYTES));
        cx.send(control(
            &self.flow,
            true,
            cx.now(),
            FLAG_REQUEST,
            size,
            pkts,
        ));
        self.stats.requests += 1;
        self.state = SendState::Requested;
        self.request_sent_at = cx.now();
        // Exponential backoff while no credit comes back: when thousands of flows start at
        // once, their first credits are mostly dropped, and fixed 100 µs retries would fill
        // the data queues with requests.
        let wait = self.p.rto.saturating_mul(1 << self.req_backoff.min(6));
        self.req_backoff += 1;
        cx.arm_in(&mut self.timers, T_REQ, wait);
    }

    fn on_credit<S: Sched, H>(&mut self, c: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        let now = cx.now();
        self.stats.credits_received += 1;
        self.credits_this_rtt += 1;
        self.last_credit_at = now;
        if self.state == SendState::Requested {
            self.timers.cancel(T_REQ);
            self.req_backoff = 0;
            self.rtt = Some(now - self.request_sent_at);
            self.ecs_checked_at = now;
            self.state = SendState::Sending;
        }
        let size = cx.shared.limit_bytes;
        if !self.has_data(size) {
            self.stats.credits_wasted += 1;
            // Nothing (left) to send: stop the credits. Either no stop went out yet (a
            // long-lived flow stopped before its first credit), or it got lost and credits
            // still arrive long after it.
            let rtt = self.rtt.unwrap_or(self.p.rto);
            if self.state != SendState::Stopped || now >= self.stop_sent_at + rtt * 2 {
                self.send_stop(cx);
            }
            return;
        }
        // One data packet per credit: retransmissions first.
        let (seq, len) = if let Some(r) = self.retx.first_mut() {
            let len = (r.1 - r.0).min(u64::from(TCP_MSS_BYTES));
            let seq = r.0;
            r.0 += len;
            if r.0 >= r.1 {
                self.retx.remove(0);
            }
            self.stats.retransmits += 1;
            (seq, len)
        } else {
            let len = (size - self.next_seq).min(u64::from(TCP_MSS_BYTES));
            let seq = self.next_seq;
            self.next_seq += len;
            (seq, len)
        };
        let len = len as u32;
        cx.send(Packet {
            seq,
            ack: c.seq,
            sent_at: now,
            echo: c.sent_at,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: self.flow.flow,
            route: self.flow.fwd,
            dst: self.flow.dst,
            next: dcsim_net::PortId::NONE,
            payload_bytes: dcsim_net::bytes16(len),
            wire_bytes: dcsim_net::bytes16(wire_bytes(len + TCP_IP_HEADER_BYTES)),
            hop: 0,
            class: Class::Data,
            ip: IpBits::NOT_ECT,
            flags: FLAG_XDATA,
        });
        if !self.has_data(size) {
            self.send_stop(cx);
        } else if self.p.ecs && self.state == SendState::Sending {
            self.early_credit_stop(cx);
        }
    }

    /// ECS (ns2-xpass, April 2018): once per sender RTT, if the credits of the last RTT
    /// cover the packets left, stop now; the credits in flight will carry the rest.
    fn early_credit_stop<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let Some(rtt) = self.rtt else { return };
        if cx.now() < self.ecs_checked_at + rtt {
            return;
        }
        self.ecs_checked_at = cx.now();
        let left = (cx.shared.limit_bytes - self.next_seq).div_ceil(u64::from(TCP_MSS_BYTES));
        if self.credits_this_rtt >= left {
            self.send_stop(cx);
        }
        self.credits_this_rtt = 0;
    }

    fn send_stop<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let size = cx.shared.limit_bytes;
        cx.send(control(&self.flow, true, cx.now(), FLAG_STOP, size, 0));
        self.state = SendState::Stopped;
        self.stop_sent_at = cx.now();
        if self.has_data(size) {
            // Early stop: if the credits in flight fall short, ask again after 2 RTTs.
            let rtt = self.rtt.unwrap_or(self.p.rto);
            cx.arm_in(&mut self.timers, T_REQ, rtt * 2);
        } else {
            self.timers.cancel(T_REQ);
        }
    }

    fn on_nack<S: Sched, H>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        let (from, to) = (p.seq, p.ack.min(self.next_seq));
        if from < to {
            insert_range(&mut self.retx, from, to);
        }
        if !self.has_data(cx.shared.limit_bytes) {
            return;
        }
        // Ask for credits again if stopped, or if credits have ceased while sending: a
        // request lost after a stop, with a stray credit from before the stop switching
        // the sender back to sending, would otherwise leave both ends waiting for ever
        // (the receiver not crediting, the sender waiting for credits). A duplicate
        // request to a receiver that is crediting is ignored.
        let rtt = self.rtt.unwrap_or(self.p.rto);
        let starved = self.state == SendState::Sending
            && cx.now().saturating_since(self.last_credit_at) >= self.p.rto.max(rtt * 2);
        if self.state == SendState::Stopped || starved {
            self.send_request(cx);
        }
    }
}

impl Sender for XpassSender {
    type Host = ();

    /// The sender asks for credits.
    fn on_start<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        if let Some(t) = self.flow.stop {
            let at = t.max(cx.now());
            cx.arm(&mut self.timers, T_STOP, at);
        }
        self.send_request(cx);
    }

    fn on_packet<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, ()>) {
        match p.flags {
            FLAG_CREDIT => self.on_credit(p, cx),
            FLAG_NACK => self.on_nack(p, cx),
            _ => debug_assert!(false, "ExpressPass sender got packet flags {}", p.flags),
        }
    }

    fn on_timer<S: Sched>(&mut self, kind: usize, generation: u32, cx: &mut EndpointCx<'_, S, ()>) {
        match cx.due(&mut self.timers, kind, generation) {
            // A lost request, or an early stop whose credits fell short.
            Some(T_REQ)
                if self.has_data(cx.shared.limit_bytes) && self.state != SendState::Sending =>
            {
                self.send_request(cx);
            }
            // Stop time of a long-lived flow: no new data from now on.
            Some(T_STOP) if cx.shared.limit_bytes == u64::MAX => {
                cx.shared.limit_bytes = self.next_seq;
                if self.state != SendState::Requested && !self.has_data(self.next_seq) {
                    self.send_stop(cx);
                }
            }
            _ => {}
        }
    }

    fn is_done(&self) -> bool {
        self.state == SendState::Stopped
    }
}
