//! The flow table: specs, per-flow connection state (built at flow start, dropped when the
//! flow is finished) and the records that results are made from.
//!
//! The table dispatches each event to the end of the flow it concerns: a packet to the
//! endpoint on the host where it arrived, a timer to the end whose timer it is. It owns
//! what is common to every transport: the per-host waiting lists for NIC room, completion
//! and finishing, counters.

use std::collections::VecDeque;
use std::fs::File;
use std::io;

use dcsim_engine::{Dur, RngTree, Time};
use dcsim_net::{FlowId, HostId, Packet, PacketExt, PacketId};

use crate::endpoint::{
    EndpointCx, FlowCx, FlowInfo, FlowShared, Grant, Receiver, Sched, Sender, Side, TimerKey,
    Transport,
};
use crate::record::FlowRecord;
use crate::retired::Retired;
use crate::{Conn, HostStates, TransportSpec, with_pair};

/// A flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Bytes to deliver; `None` for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time.
    pub start: Time,
    /// Time after which no new data is sent, if any.
    pub stop: Option<Time>,
    /// Index of the transport in the flow table's transport list.
    pub transport: u32,
}

/// Both ends of one flow of transport `T`, and what they share.
pub(crate) struct Pair<T: Transport> {
    tx: T::Sender,
    rx: T::Receiver,
    shared: FlowShared,
}

impl<T: Transport> Pair<T> {
    pub(crate) fn new(tx: T::Sender, rx: T::Receiver, size_bytes: Option<u64>) -> Self {
        Self {
            tx,
            rx,
            shared: FlowShared {
                limit_bytes: size_bytes.unwrap_or(u64::MAX),
                grant: None,
            },
        }
    }

    /// Runs one handler of the end `side` of flow `f`, on `host`, and returns the flow's
    /// progress afterwards (see [`Pair::progress`]). Inlined into each call site, where
    /// `ev` is a constant, so only the arm that can run is compiled there.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the dispatch of the flow table only
    fn handle<S: Sched>(
        &mut self,
        f: FlowId,
        side: Side,
        host: HostId,
        h: &mut T::Host,
        stale: &mut u64,
        cx: &mut FlowCx<'_, S>,
        ev: Ev<'_>,
    ) -> Progress {
        let mut ecx = EndpointCx::new(cx, host, f, side, stale, &mut self.shared, h);
        match (side, ev) {
            (Side::Sender, Ev::Start) => self.tx.on_start(&mut ecx),
            (Side::Sender, Ev::Packet(p, ext)) => {
                ecx.ext = ext;
                self.tx.on_packet(p, &mut ecx);
            }
            (Side::Sender, Ev::Timer(k, g)) => self.tx.on_timer(k, g, &mut ecx),
            (Side::Sender, Ev::NicReady) => self.tx.on_nic_ready(&mut ecx),
            (Side::Sender, Ev::Wake) => self.tx.on_wake(&mut ecx),
            (Side::Receiver, Ev::Packet(p, ext)) => {
                ecx.ext = ext;
                self.rx.on_packet(p, &mut ecx);
            }
            (Side::Receiver, Ev::Timer(k, g)) => self.rx.on_timer(k, g, &mut ecx),
            (Side::Receiver, Ev::Start | Ev::NicReady | Ev::Wake) => {
                debug_assert!(false, "receivers neither start nor wait for the NIC")
            }
        }
        self.progress()
    }

    #[inline]
    fn progress(&self) -> Progress {
        let completed = self.rx.is_complete();
        let done = self.tx.is_done();
        Progress {
            completed,
            finished: completed && done && self.rx.is_idle(),
            nic_blocked: self.tx.is_nic_blocked() && !done,
            done,
            sender_finishes: T::SENDER_FINISHES,
        }
    }

    /// Swaps the receiving ends of two copies of one flow (a run split between threads
    /// gathers each end from the part that ran it).
    pub(crate) fn swap_receiver(&mut self, other: &mut Self) {
        std::mem::swap(&mut self.rx, &mut other.rx);
    }

    fn fold_into(&self, r: &mut FlowRecord, long_lived: bool) {
        T::record(&self.tx, &self.rx, r);
        r.delivered_bytes = self.rx.delivered_bytes();
        if long_lived {
            let limit = self.shared.limit_bytes;
            r.sent_bytes_at_stop = (limit != u64::MAX).then_some(limit);
        }
    }

    fn delivered_bytes(&self) -> u64 {
        self.rx.delivered_bytes()
    }

    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        T::sample(&self.tx, &self.rx, out);
    }
}

/// Where a flow stands after an event.
#[derive(Clone, Copy)]
struct Progress {
    /// The receiver holds every byte.
    completed: bool,
    /// Both ends are finished: the connection can be dropped.
    finished: bool,
    /// The sender waits for room in its NIC queue.
    nic_blocked: bool,
    /// The sender is done.
    done: bool,
    /// The transport's [`Transport::SENDER_FINISHES`].
    sender_finishes: bool,
}

/// An event for one end of a flow.
#[derive(Clone, Copy)]
enum Ev<'a> {
    Start,
    /// A packet, and its options beside the header if it has them.
    Packet(&'a Packet, Option<&'a PacketExt>),
    Timer(usize, u32),
    NicReady,
    Wake,
}

struct Flow {
    spec: FlowSpec,
    record: FlowRecord,
    conn: Option<Box<Conn>>,
    waiting_nic: bool,
    /// In a copy of the flow table that runs one end of the flow only (a run split
    /// between threads, [`Flows::run_one_end`]): that end.
    only: Option<Side>,
    /// In the copy that runs the receiver only: the time of the latest event after the
    /// receiver held every byte that one thread would not have handled the same way after
    /// the finish (a packet, or a timer that was not stale).
    live_after_complete: Option<Time>,
    /// Whether the flow has left the table ([`Flows::retire_finished`]): its entry stays
    /// until the rest of its page leaves too, but no longer counts.
    retired: bool,
}

/// Flows of the table per page: a page whose flows have all retired is freed.
const PAGE_BITS: u32 = 8;
const PAGE: usize = 1 << PAGE_BITS;

/// What the table keeps of flows that left it ([`Flows::retire_finished`]).
struct Retire {
    store: Retired,
    /// How long a finished flow stays in the table.
    grace: Dur,
    /// Finished flows not yet retired, by the time they finished.
    finished: VecDeque<(FlowId, Time)>,
    /// Packets that reached retired flows, for their records (ExpressPass counts a credit
    /// that arrives after the finish as wasted), applied when the records are read; kept
    /// only if some transport of the table counts them.
    late: Vec<Packet>,
    keep_late: bool,
    /// Bytes the retired flows delivered.
    delivered_bytes: u64,
}

/// Flow `f` in `pages`, unless it has left the table (a function of the pages alone, so
/// that the table's other fields stay free to borrow beside it).
#[inline]
fn slot_mut(pages: &mut [Vec<Flow>], f: FlowId) -> Option<&mut Flow> {
    pages
        .get_mut(f.index() >> PAGE_BITS)?
        .get_mut(f.index() & (PAGE - 1))
        .filter(|fl| !fl.retired)
}

#[cold]
#[inline(never)]
fn gone(f: FlowId) -> ! {
    panic!("flow {f} has finished and left the flow table")
}

/// All flows of a simulation.
pub struct Flows {
    transports: Vec<TransportSpec>,
    /// The flows by number, [`PAGE`] to a page; a page whose flows have all left is empty
    /// (a vector of pages rather than of boxes: one load fewer on every packet's way).
    pages: Vec<Vec<Flow>>,
    /// Per page, its flows that have left.
    page_retired: Vec<u16>,
    len: usize,
    /// The latest start of any flow.
    latest_start: Time,
    /// Set when finished flows leave the table ([`Flows::retire_finished`]).
    retire: Option<Box<Retire>>,
    /// Per host: flows waiting for room in the NIC queue, in the order they blocked.
    nic_waiters: Vec<Vec<FlowId>>,
    hosts: HostStates,
    rng: RngTree,
    completed: u64,
    active: u64,
    delivered_pkts: u64,
    stale_timers: u64,
    /// Flows completed since the facade last took them ([`Flows::take_completed`]), kept
    /// only when [`Flows::track_completions`] asked for it.
    just_completed: Vec<FlowId>,
    track_completed: bool,
    /// Flows whose sender alone this copy runs, finished since the facade last took them
    /// ([`Flows::take_finished_ends`]), with the time of the finish.
    finished_ends: Vec<(FlowId, Time)>,
}

impl Flows {
    /// A flow table for `hosts` hosts using the given transports (flows refer to them by
    /// index); flows that need randomness draw from `rng`'s streams.
    pub fn new(transports: Vec<TransportSpec>, hosts: usize, rng: RngTree) -> Self {
        Self {
            transports,
            pages: Vec::new(),
            page_retired: Vec::new(),
            len: 0,
            latest_start: Time::ZERO,
            retire: None,
            nic_waiters: vec![Vec::new(); hosts],
            hosts: HostStates::new(hosts),
            rng,
            completed: 0,
            active: 0,
            delivered_pkts: 0,
            stale_timers: 0,
            just_completed: Vec::new(),
            track_completed: false,
            finished_ends: Vec::new(),
        }
    }

    /// Keeps the flows that complete for [`Flows::take_completed`] (the Ideal scheme's
    /// oracle needs them; nothing else does).
    pub fn track_completions(&mut self) {
        self.track_completed = true;
    }

    /// Hands flow `f` (if it is still running) what a control-plane service granted it,
    /// and wakes its sender to act on it: the one way a central scheduler (the Ideal
    /// scheme's oracle, the Fastpass arbiter) reaches a flow.
    pub fn grant<S: Sched>(&mut self, f: FlowId, grant: Grant, cx: &mut FlowCx<'_, S>) {
        let Some(fl) = slot_mut(&mut self.pages, f) else {
            return;
        };
        let src = fl.spec.src;
        let Some(conn) = fl.conn.as_deref_mut() else {
            return;
        };
        with_pair!(conn, |p| p.shared.grant = Some(grant));
        let stale = &mut self.stale_timers;
        let progress = with_pair!(conn, self.hosts, src, |p, h| p.handle(
            f,
            Side::Sender,
            src,
            h,
            stale,
            cx,
            Ev::Wake
        ));
        self.after(f, progress, cx.now);
    }

    /// The flows completed since the last call, in completion order (the buffer is kept).
    pub fn take_completed(&mut self, out: &mut Vec<FlowId>) {
        out.clear();
        out.append(&mut self.just_completed);
    }

    /// Takes over from `other`, a copy of this table that ran another part of a split run,
    /// the flows `owned` chooses (both of whose ends ran in that part: their specs,
    /// connections and records), and adds its counters of completions, running flows,
    /// delivered packets and stale timers, which counted only the events of its part.
    /// Both tables must hold the same flows.
    ///
    /// # Panics
    /// If the tables hold different flows.
    pub fn take_flows_from(&mut self, other: &mut Self, mut owned: impl FnMut(FlowId) -> bool) {
        assert_eq!(self.len, other.len, "tables of different flows");
        for i in 0..self.len {
            let f = FlowId::new(i);
            let (mine, theirs) = (self.flow_mut(f), other.flow_mut(f));
            assert_eq!(mine.spec, theirs.spec, "tables of different flows");
            if owned(f) {
                std::mem::swap(mine, theirs);
            }
        }
        self.completed += other.completed;
        self.active += other.active;
        self.delivered_pkts += other.delivered_pkts;
        self.stale_timers += other.stale_timers;
    }

    /// Adds a flow; the caller schedules [`crate::FlowEvent::Start`] at its start time.
    pub fn add(&mut self, spec: FlowSpec) -> FlowId {
        if self.len.is_multiple_of(PAGE) {
            self.pages.push(Vec::with_capacity(PAGE));
            self.page_retired.push(0);
        }
        self.latest_start = self.latest_start.max(spec.start);
        let page = self.pages.last_mut();
        page.expect("a page was added above if the last was full")
            .push(Flow {
                spec,
                record: FlowRecord::default(),
                conn: None,
                waiting_nic: false,
                only: None,
                live_after_complete: None,
                retired: false,
            });
        self.len += 1;
        FlowId::new(self.len - 1)
    }

    /// Flow `f`, unless it has left the table.
    #[inline]
    fn get(&self, f: FlowId) -> Option<&Flow> {
        self.pages
            .get(f.index() >> PAGE_BITS)?
            .get(f.index() & (PAGE - 1))
            .filter(|fl| !fl.retired)
    }

    #[inline]
    fn get_mut(&mut self, f: FlowId) -> Option<&mut Flow> {
        slot_mut(&mut self.pages, f)
    }

    /// Flow `f`, which must not have left the table.
    #[inline]
    fn flow(&self, f: FlowId) -> &Flow {
        self.get(f).unwrap_or_else(|| gone(f))
    }

    #[inline]
    fn flow_mut(&mut self, f: FlowId) -> &mut Flow {
        self.get_mut(f).unwrap_or_else(|| gone(f))
    }

    /// Number of flows (those that left the table included).
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are no flows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The latest start of any flow (zero without flows).
    pub fn latest_start(&self) -> Time {
        self.latest_start
    }
    /// Whether flow `f` has finished and left the table ([`Flows::retire_finished`]).
    pub fn is_retired(&self, f: FlowId) -> bool {
        f.index() < self.len && self.get(f).is_none()
    }
    /// The spec of flow `f`.
    ///
    /// # Panics
    /// If the flow has left the table ([`Flows::is_retired`]).
    pub fn spec(&self, f: FlowId) -> &FlowSpec {
        &self.flow(f).spec
    }
    /// The transports.
    pub fn transports(&self) -> &[TransportSpec] {
        &self.transports
    }
    /// The transport of flow `f`.
    ///
    /// # Panics
    /// If the flow has left the table.
    pub fn transport_of(&self, f: FlowId) -> &TransportSpec {
        &self.transports[self.flow(f).spec.transport as usize]
    }
    /// The record of flow `f`, with live counters folded in.
    ///
    /// # Panics
    /// If the flow has left the table.
    pub fn record(&self, f: FlowId) -> FlowRecord {
        let fl = self.flow(f);
        let mut r = fl.record;
        if let Some(c) = &fl.conn {
            with_pair!(&**c, |p| p.fold_into(&mut r, fl.spec.size_bytes.is_none()));
        }
        r
    }
    /// Bytes delivered in order to the receiver of `f`.
    ///
    /// # Panics
    /// If the flow has left the table.
    pub fn delivered_bytes(&self, f: FlowId) -> u64 {
        Self::delivered_by(self.flow(f))
    }

    fn delivered_by(fl: &Flow) -> u64 {
        match fl.conn.as_deref() {
            Some(c) => with_pair!(c, |p| p.delivered_bytes()),
            None => fl.record.delivered_bytes,
        }
    }

    /// Bytes delivered in order to the receivers of every flow, those that left the table
    /// included.
    pub fn delivered_bytes_total(&self) -> u64 {
        let live: u64 = self
            .pages
            .iter()
            .flatten()
            .filter(|fl| !fl.retired)
            .map(Self::delivered_by)
            .sum();
        live + self.retire.as_ref().map_or(0, |r| r.delivered_bytes)
    }

    /// Bytes delivered to the receiver of `f` so far, or `None` if the flow has left the
    /// table.
    pub fn delivered_bytes_if_present(&self, f: FlowId) -> Option<u64> {
        self.get(f).map(Self::delivered_by)
    }
    /// Sender and receiver state of `f` for samplers, while it runs: `(kind, value)` pairs
    /// (`cwnd_bytes`, `alpha` for TCP; `credit_rate_gbps`, `w` for ExpressPass).
    pub fn sample(&self, f: FlowId) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        self.sample_into(f, &mut out);
        out
    }

    /// [`Flows::sample`] into `out` (cleared first), for a caller that keeps the buffer.
    pub fn sample_into(&self, f: FlowId, out: &mut Vec<(&'static str, f64)>) {
        out.clear();
        if let Some(c) = self.get(f).and_then(|fl| fl.conn.as_deref()) {
            with_pair!(c, |p| p.sample(out));
        }
    }
    /// Flows whose receiver has every byte.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// Flows started and not yet finished.
    pub fn active(&self) -> u64 {
        self.active
    }
    /// Packets consumed by endpoints.
    pub fn delivered_pkts(&self) -> u64 {
        self.delivered_pkts
    }
    /// Timer events that were stale when they fired.
    pub fn stale_timers(&self) -> u64 {
        self.stale_timers
    }

    /// From now on, a flow that has finished leaves the table when another finishes at
    /// least `grace` after it: its spec and final record go to `file` (an empty temporary
    /// file), and its memory is freed with the rest of its page. [`Flows::for_each_record`] reads every flow back.
    ///
    /// Only for a table whose finished flows nobody asks for by number: their spec,
    /// record and bytes delivered panic once they have left. Packets that still reach a
    /// flow after it left are kept (one per straggler, if some transport of the table
    /// counts stragglers: [`Transport::COUNTS_STRAGGLERS`]) and folded into its record
    /// when it is read; the grace makes them rare.
    pub fn retire_finished(&mut self, file: File, grace: Dur) {
        debug_assert!(self.retire.is_none(), "retiring already");
        self.retire = Some(Box::new(Retire {
            store: Retired::new(file),
            grace,
            finished: VecDeque::new(),
            late: Vec::new(),
            keep_late: self.transports.iter().any(TransportSpec::counts_stragglers),
            delivered_bytes: 0,
        }));
    }

    /// Flows that have left the table so far.
    pub fn retired(&self) -> u64 {
        self.retire.as_ref().map_or(0, |r| r.store.count())
    }

    /// Retires the flows that finished at least the grace before `now`.
    fn retire_due(&mut self, now: Time) {
        let Some(r) = self.retire.as_deref_mut() else {
            return;
        };
        while let Some(&(f, at)) = r.finished.front() {
            if at + r.grace > now {
                break;
            }
            r.finished.pop_front();
            let i = f.index() >> PAGE_BITS;
            let fl = &mut self.pages[i][f.index() & (PAGE - 1)];
            debug_assert!(fl.conn.is_none() && !fl.retired);
            r.store.put(f, &fl.spec, &fl.record);
            r.delivered_bytes += fl.record.delivered_bytes;
            fl.retired = true;
            self.page_retired[i] += 1;
            if usize::from(self.page_retired[i]) == PAGE {
                self.pages[i] = Vec::new();
            }
        }
    }

    /// Calls `each` with every flow's number, spec and record (live counters folded in),
    /// in order of number: those in the table from it, those that left it from their file.
    ///
    /// # Errors
    /// The file of the flows that left could not be written or read.
    pub fn for_each_record(
        &mut self,
        mut each: impl FnMut(FlowId, &FlowSpec, FlowRecord),
    ) -> io::Result<()> {
        let mut retire = self.retire.take();
        let result = (|| {
            // Sorted in place (stable: a flow's stragglers in arrival order) and read, not
            // taken, so that the records read the same every time.
            let (late, mut reader) = match retire.as_deref_mut() {
                Some(r) => {
                    r.late.sort_by_key(|p| p.flow.0);
                    (r.late.as_slice(), Some(r.store.reader()?))
                }
                None => (&[][..], None),
            };
            let mut late = late.iter().peekable();
            for i in 0..self.len {
                let f = FlowId::new(i);
                if self.get(f).is_some() {
                    each(f, &self.flow(f).spec, self.record(f));
                    continue;
                }
                let reader = reader.as_mut().unwrap_or_else(|| gone(f));
                let (spec, mut rec) = reader.get(f)?;
                while let Some(p) = late.next_if(|p| p.flow == f) {
                    self.transports[spec.transport as usize].on_straggler(p, &mut rec);
                }
                each(f, &spec, rec);
            }
            Ok(())
        })();
        self.retire = retire;
        result
    }

    /// Handles [`crate::FlowEvent::Start`]: opens both ends of the flow with the routes and
    /// link rates in `info` (chosen by the caller) and starts the sender. `unloaded_fct` is
    /// recorded for results.
    pub fn on_start<S: Sched>(
        &mut self,
        f: FlowId,
        info: &FlowInfo,
        unloaded_fct: Option<Dur>,
        cx: &mut FlowCx<'_, S>,
    ) {
        let fl = slot_mut(&mut self.pages, f).unwrap_or_else(|| gone(f));
        let src = fl.spec.src;
        fl.record.unloaded_fct = unloaded_fct;
        let mut conn = self.transports[fl.spec.transport as usize].open(info, &self.rng);
        self.active += 1;
        let stale = &mut self.stale_timers;
        let progress = with_pair!(&mut conn, self.hosts, src, |p, h| p.handle(
            f,
            Side::Sender,
            src,
            h,
            stale,
            cx,
            Ev::Start
        ));
        self.flow_mut(f).conn = Some(Box::new(conn));
        self.after(f, progress, cx.now);
    }

    /// Starts loading what a packet of flow `f` reaching its host will read first: the
    /// flow's entry (its endpoints' address, the hosts it runs between). For a loop that
    /// knows the next event's packet.
    #[inline]
    pub fn prefetch_flow(&self, f: FlowId) {
        if let Some(fl) = self.get(f) {
            dcsim_engine::prefetch::prefetch(&fl.conn);
            dcsim_engine::prefetch::prefetch(&fl.spec);
        }
    }

    /// Handles a packet that reached host `host` for its flow. Frees it.
    #[inline]
    pub fn on_packet<S: Sched>(&mut self, host: HostId, pkt: PacketId, cx: &mut FlowCx<'_, S>) {
        self.delivered_pkts += 1;
        let p = *cx.pool.get(pkt);
        // Options beside the header (TCP's SACK blocks), only for packets that carry them.
        let ext = if p.ip.has_ext() {
            cx.pool.ext(pkt).copied()
        } else {
            None
        };
        cx.pool.free(pkt);
        let f = p.flow;
        let Some(fl) = slot_mut(&mut self.pages, f) else {
            // A straggler for a flow that has left the table: kept for its record.
            if let Some(r) = self.retire.as_deref_mut().filter(|r| r.keep_late) {
                r.late.push(p);
            }
            return;
        };
        if fl.only.is_some() && fl.record.end.is_some() {
            fl.live_after_complete = Some(cx.now);
        }
        let Some(conn) = fl.conn.as_deref_mut() else {
            // A straggler for a finished flow: a duplicate ACK, or a credit that was in
            // flight when the receiver stopped.
            self.transports[fl.spec.transport as usize].on_straggler(&p, &mut fl.record);
            return;
        };
        let side = if host == fl.spec.dst {
            Side::Receiver
        } else {
            Side::Sender
        };
        let stale = &mut self.stale_timers;
        let progress = with_pair!(conn, self.hosts, host, |pr, h| pr.handle(
            f,
            side,
            host,
            h,
            stale,
            cx,
            Ev::Packet(&p, ext.as_ref())
        ));
        self.after(f, progress, cx.now);
    }

    /// Handles [`crate::FlowEvent::Timer`].
    pub fn on_timer<S: Sched>(
        &mut self,
        f: FlowId,
        key: TimerKey,
        generation: u32,
        cx: &mut FlowCx<'_, S>,
    ) {
        let Some(fl) = slot_mut(&mut self.pages, f) else {
            self.stale_timers += 1;
            return;
        };
        let Some(conn) = fl.conn.as_deref_mut() else {
            self.stale_timers += 1;
            return;
        };
        // In a receiver's copy, a timer after the receiver held every byte: one thread
        // would have counted it as stale after the finish, which it does here too only if
        // it is stale.
        let watch = fl.only.is_some() && fl.record.end.is_some();
        let stale_before = self.stale_timers;
        let side = key.side();
        let host = match side {
            Side::Sender => fl.spec.src,
            Side::Receiver => fl.spec.dst,
        };
        let stale = &mut self.stale_timers;
        let progress = with_pair!(conn, self.hosts, host, |p, h| p.handle(
            f,
            side,
            host,
            h,
            stale,
            cx,
            Ev::Timer(key.kind(), generation)
        ));
        if watch && self.stale_timers == stale_before {
            self.flow_mut(f).live_after_complete = Some(cx.now);
        }
        self.after(f, progress, cx.now);
    }

    /// Host `host`'s NIC queue has drained: let its waiting senders continue, in the order
    /// they blocked.
    pub fn on_nic_ready<S: Sched>(&mut self, host: HostId, cx: &mut FlowCx<'_, S>) {
        // Index-based, because a flow that blocks again re-registers at the end of the same
        // list while we walk it; the handled prefix is drained afterwards (no allocation).
        // Once one flow blocks again the NIC is full, and the flows behind it would only
        // block too: stop there, so a wake-up costs the flows it lets send, not every
        // waiter (thousands per host in a shuffle). The order stays round-robin.
        let n = self.nic_waiters[host.index()].len();
        let mut done = 0;
        while done < n {
            let f = self.nic_waiters[host.index()][done];
            done += 1;
            let Some(fl) = slot_mut(&mut self.pages, f) else {
                continue;
            };
            fl.waiting_nic = false;
            if let Some(conn) = fl.conn.as_deref_mut() {
                let stale = &mut self.stale_timers;
                let progress = with_pair!(conn, self.hosts, host, |p, h| p.handle(
                    f,
                    Side::Sender,
                    host,
                    h,
                    stale,
                    cx,
                    Ev::NicReady
                ));
                self.after(f, progress, cx.now);
                if progress.nic_blocked {
                    break;
                }
            }
        }
        self.nic_waiters[host.index()].drain(..done);
    }

    /// Books what an event did to flow `f`: NIC waiting, completion, finishing. Most
    /// events do none of these, and return here, inlined, without a call or finding the
    /// flow's entry again (2.6 % fewer instructions on the dumbbell benchmark).
    #[inline]
    fn after(&mut self, f: FlowId, p: Progress, now: Time) {
        if p.nic_blocked || p.completed || p.finished || p.done {
            self.book(f, p, now);
        }
    }

    /// [`Flows::after`] for an event that did something to book.
    #[inline(never)]
    fn book(&mut self, f: FlowId, p: Progress, now: Time) {
        let fl = slot_mut(&mut self.pages, f).unwrap_or_else(|| gone(f));
        if p.nic_blocked && !fl.waiting_nic {
            fl.waiting_nic = true;
            self.nic_waiters[fl.spec.src.index()].push(f);
        }
        if let Some(side) = fl.only {
            self.after_one_end(f, side, p, now);
            return;
        }
        debug_assert!(
            !p.sender_finishes || !p.done || p.finished,
            "flow {f}: the sender is done, but the receiver does not hold every byte or is \
             not idle: the transport's SENDER_FINISHES is wrong"
        );
        if p.completed && fl.record.end.is_none() {
            fl.record.end = Some(now);
            self.completed += 1;
            if self.track_completed {
                self.just_completed.push(f);
            }
        }
        if p.finished
            && let Some(c) = fl.conn.take()
        {
            with_pair!(&*c, |p| p
                .fold_into(&mut fl.record, fl.spec.size_bytes.is_none()));
            self.active -= 1;
            if let Some(r) = self.retire.as_deref_mut() {
                r.finished.push_back((f, now));
                self.retire_due(now);
            }
        }
    }

    /// [`Flows::after`] for a flow of which this copy runs one end: the sender's copy
    /// finishes the flow when the sender is done ([`Transport::SENDER_FINISHES`]) and
    /// keeps the finish for the receiver's copy; the receiver's copy records the
    /// completion and keeps its connection until it hears of the finish
    /// ([`Flows::end_finished_elsewhere`]).
    #[cold]
    #[inline(never)]
    fn after_one_end(&mut self, f: FlowId, side: Side, p: Progress, now: Time) {
        let fl = slot_mut(&mut self.pages, f).unwrap_or_else(|| gone(f));
        match side {
            Side::Sender => {
                if p.done
                    && let Some(c) = fl.conn.take()
                {
                    // The receiver's part of the record comes from the receiver's copy.
                    with_pair!(&*c, |p| p
                        .fold_into(&mut fl.record, fl.spec.size_bytes.is_none()));
                    self.active -= 1;
                    self.finished_ends.push((f, now));
                }
            }
            Side::Receiver => {
                if p.completed && fl.record.end.is_none() {
                    fl.record.end = Some(now);
                    self.completed += 1;
                }
            }
        }
    }

    /// Whether flow `f` can run its two ends in different copies of the flow table
    /// ([`Flows::run_one_end`]): its transport's sender alone knows when it has finished
    /// ([`Transport::SENDER_FINISHES`]), and it has no stop time (which the two ends
    /// share).
    pub fn can_run_ends_apart(&self, f: FlowId) -> bool {
        let fl = self.flow(f);
        self.transports[fl.spec.transport as usize].sender_finishes() && fl.spec.stop.is_none()
    }

    /// Makes this copy of the flow table run only the `side` end of flow `f`
    /// ([`Flows::can_run_ends_apart`]), before the run; another copy runs the other end.
    /// The sender's copy starts the flow as usual and finishes it when the sender is done
    /// ([`Flows::take_finished_ends`]). The receiver's copy opens the receiver now, with
    /// `info` (what the sender's copy will open it with), and never counts the flow as
    /// running.
    pub fn run_one_end(&mut self, f: FlowId, side: Side, info: &FlowInfo) {
        debug_assert!(self.can_run_ends_apart(f));
        let fl = slot_mut(&mut self.pages, f).unwrap_or_else(|| gone(f));
        fl.only = Some(side);
        if side == Side::Receiver {
            let conn = self.transports[fl.spec.transport as usize].open(info, &self.rng);
            fl.conn = Some(Box::new(conn));
        }
    }

    /// Whether flows whose sender alone this copy runs have finished since
    /// [`Flows::take_finished_ends`] last took them.
    #[inline]
    pub fn has_finished_ends(&self) -> bool {
        !self.finished_ends.is_empty()
    }

    /// Takes the flows whose sender alone this copy runs that have finished, each with the
    /// time of its finish, for the copies that run their receivers
    /// ([`Flows::end_finished_elsewhere`]).
    pub fn take_finished_ends(&mut self) -> std::vec::Drain<'_, (FlowId, Time)> {
        self.finished_ends.drain(..)
    }

    /// In the copy that runs the receiver of flow `f` alone: the sender's copy finished
    /// the flow at `at`. Drops the receiver, keeping what it delivered, so that later
    /// packets and timers of the flow are stragglers, as on one thread.
    ///
    /// # Errors
    /// If this copy has already handled an event of the flow at or after `at` that one
    /// thread would have handled as a straggler (a packet, or a timer that was not
    /// stale), or the receiver is not complete and idle (one thread would not have
    /// finished the flow at `at`): the time of that event, or `at`. The run then differs
    /// from the one-thread run, and must stop.
    pub fn end_finished_elsewhere(&mut self, f: FlowId, at: Time) -> Result<(), Time> {
        let fl = self.flow_mut(f);
        debug_assert_eq!(fl.only, Some(Side::Receiver));
        if let Some(t) = fl.live_after_complete.filter(|&t| t >= at) {
            return Err(t);
        }
        let Some(c) = fl.conn.take() else {
            return Err(at);
        };
        let (complete, idle, delivered) = with_pair!(&*c, |p| (
            p.rx.is_complete(),
            p.rx.is_idle(),
            p.delivered_bytes()
        ));
        if !(complete && idle) {
            return Err(at);
        }
        fl.record.delivered_bytes = delivered;
        Ok(())
    }

    /// Gathers flow `f`, whose sender this copy ran and whose receiver `other` ran, into
    /// this copy: the receiver's end (if both are still open), its completion time and the
    /// bytes it delivered. Counters are not touched ([`Flows::take_flows_from`] adds
    /// them).
    pub fn take_receiver_from(&mut self, other: &mut Self, f: FlowId) {
        let (mine, theirs) = (self.flow_mut(f), other.flow_mut(f));
        debug_assert_eq!(mine.spec, theirs.spec, "tables of different flows");
        if let (Some(a), Some(b)) = (mine.conn.as_deref_mut(), theirs.conn.as_deref_mut()) {
            a.swap_receiver(b);
        }
        mine.record.end = theirs.record.end;
        mine.record.delivered_bytes = match theirs.conn.as_deref() {
            Some(c) => with_pair!(c, |p| p.delivered_bytes()),
            None => theirs.record.delivered_bytes,
        };
        mine.only = None;
    }
}
