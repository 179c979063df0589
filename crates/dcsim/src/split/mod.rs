//! A world run on the exact-order parallel engine (`dcsim_engine::parallel`, ADR 0009 and
//! ADR 0010): whole, as the engine's one part, or split by pods between parts.
//!
//! The world's handlers create their events on whatever they are given (`WorldSched`):
//! the [`Scheduler`] of [`World::run`], or here a part's output ([`Out`]), which sends
//! each event to the part that handles it ([`Partition`]: an arrival to the part of the
//! node the link leads to, a port's wake-up to its own node's, a flow's start and timers
//! to the part of the end's host). Each part is a whole copy of the world, built from the
//! same scenario, that handles only the events of its own nodes and flows; after the run,
//! the first takes over the others' ports and flows, so [`crate::Results::collect`] reads
//! one world as after [`World::run`]. The tests check that the flow and port tables are
//! those of the one-thread run byte for byte.
//!
//! What is split so far: fat-trees (and other networks with a tier above the edge
//! switches) by pods: evenly by hosts, or, when the flows' bytes (listed and planned) are
//! uneven between pods, by those bytes ([`Partition::by_pod_load`]), since a run takes
//! as long as its busiest part. Packets cross between parts on the links to and from the top tier:
//! the sending part sends a copy of each packet it puts on such a link, and the arrival
//! events are created where one thread creates them, late if need be, in a slot reserved
//! by the handler that should have created them (`dcsim_net::Crossed`; ADR 0010, items 1
//! and 2). A flow whose ends are in different parts runs each end in its host's part
//! (item 3), if its transport's sender alone knows when it has finished (TCP) and it has
//! no stop time: the sender's part finishes it and tells the receiver's part, which stops
//! the run ([`SplitError::Uncertain`]) if it has already handled an event of the flow
//! that one thread would have handled as a straggler; other flows between parts are
//! refused before the run, by name. Routes are interned in every part in the order of the
//! flows, so that a route's number means the same in every part.
//!
//! Flow generators are replayed in every part (ADR 0010, item 5): each part adds the
//! flows they will make to its flow table before the run, under the numbers one thread
//! gives them ([`World::planned_flows`]); a generator's event goes to the part of the
//! sources of the flows it starts, and its next start, if it is in another part sooner
//! than the look-ahead, is handed over to that part, which declared it in a first event
//! of its own.

use std::collections::VecDeque;
use std::time::Instant;

#[cfg(doc)]
use dcsim_engine::Scheduler;
use dcsim_engine::parallel::{
    Ahead, Late, Out, ParallelStats, Part, Slot, run_parallel, run_sequential,
};
use dcsim_engine::{Dur, SchedStats, Schedule, Time, splitmix};
use dcsim_net::{Crossed, FlowId, HostId, NetEvent, Network, PortId, RoutingMode};
use dcsim_transport::endpoint::Side;
use dcsim_transport::{FlowEvent, FlowSpec, Flows};

use crate::world::{Event, RunStats, World, WorldSched};

pub use crate::partition::Partition;
pub use crate::split_error::SplitError;

/// Which of the engine's runs a world goes through ([`World::run_on_engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// [`run_sequential`]: the engine's reference order, on the calling thread.
    Reference,
    /// [`run_parallel`]: one thread per part, in windows of the look-ahead (the shortest
    /// delay of a link between parts).
    Threads,
}

/// Which part handles each event.
struct Router {
    /// Whether there is one part: every event is its.
    whole: bool,
    /// Per port: the part of the node its link leads to (where its arrivals are handled).
    arrive: Vec<u32>,
    /// Per port: the part of its own node (where its wake-ups are handled).
    ready: Vec<u32>,
    /// Per flow: the parts of its source and its destination host.
    ends: Vec<[u32; 2]>,
    /// Per generator: each start of its flows (in order) and the parts of their sources,
    /// in the order of the flows.
    starts: Vec<Vec<(Time, Vec<u32>)>>,
}

impl Router {
    fn new(
        partition: &Partition,
        net: &Network,
        flows: &Flows,
        starts: Vec<Vec<(Time, Vec<u32>)>>,
    ) -> Self {
        let host = |h: HostId| partition.node_part[net.host_node(h).index()];
        Self {
            whole: partition.parts == 1,
            arrive: net
                .ports()
                .iter()
                .map(|p| partition.node_part[p.peer_node().index()])
                .collect(),
            ready: net
                .ports()
                .iter()
                .map(|p| partition.node_part[p.node().index()])
                .collect(),
            ends: (0..flows.len())
                .map(|i| {
                    let spec = flows.spec(FlowId::new(i));
                    [host(spec.src), host(spec.dst)]
                })
                .collect(),
            starts,
        }
    }

    /// The part that handles generator `i`'s event at `at`: the part of the sources of
    /// its flows that start then (`None` if none is planned then: after the run's end).
    fn generator_part(&self, i: u32, at: Time) -> Option<usize> {
        Some(*self.generator_parts(i, at)?.first()? as usize)
    }

    /// The parts of the sources of generator `i`'s flows that start at `at`, in the order
    /// of the flows.
    fn generator_parts(&self, i: u32, at: Time) -> Option<&[u32]> {
        let starts = self.starts.get(i as usize)?;
        let k = starts.binary_search_by_key(&at, |s| s.0).ok()?;
        Some(&starts[k].1)
    }

    /// The part that handles `ev`, or `None` for an event that every part handles (the
    /// start of the measurement window).
    #[inline(always)]
    fn part_of(&self, at: Time, ev: &Event) -> Option<usize> {
        if self.whole {
            // Flows created as the run goes have no entry in `ends`.
            return Some(0);
        }
        let part = match *ev {
            Event::Net(NetEvent::LinkArrive(p, _)) => self.arrive[p.index()],
            Event::Net(NetEvent::PortReady(p)) => self.ready[p.index()],
            Event::Flow(FlowEvent::Timer(f, key, _)) => match key.side() {
                Side::Sender => self.ends[f.index()][0],
                Side::Receiver => self.ends[f.index()][1],
            },
            Event::Flow(FlowEvent::Start(f)) => self.ends[f.index()][0],
            Event::WindowStart => return None,
            Event::Generate(i) => return Some(self.generator_part(i, at).unwrap_or(0)),
            // Refused before a run with more than one part (`World::run_split`).
            _ => 0,
        };
        Some(part as usize)
    }
}

/// A world as one part of the engine's run. The parts lie side by side, and each writes
/// `last` on every event from its own thread: each has lines of its own (two, for the
/// processors that fetch lines in pairs), or the writes would pull one line to and fro
/// between the cores.
#[repr(align(128))]
struct WorldPart<'w> {
    world: &'w mut World,
    router: &'w Router,
    /// Its index.
    part: usize,
    /// The run's look-ahead: a generator's next event for another part sooner than this
    /// is handed over.
    lookahead: Dur,
    /// The generators' events that other parts will hand over to it.
    expected: &'w [Expected],
    /// The time of the last event handled.
    last: Time,
    /// Why the part stopped the run, if it did.
    error: Option<SplitError>,
}

/// What one part tells another.
enum Message {
    /// A copy of a packet put on a link between them.
    Copy(Crossed),
    /// The sender's part finished a flow, whose receiver the other part runs, at a time.
    Finished(FlowId, Time),
}

impl Part for WorldPart<'_> {
    type Event = Event;
    type Message = Message;

    #[inline]
    fn handle(&mut self, now: Time, ev: Event, out: &mut Out<Event, Message>) {
        self.last = now;
        if let Event::Declare = ev {
            for x in self.expected {
                out.expect(
                    x.from,
                    x.created_at,
                    u64::from(x.generator),
                    x.at,
                    Event::Generate(x.generator),
                );
            }
            return;
        }
        let mut sched = PartSched {
            out,
            router: self.router,
            part: self.part,
            lookahead: self.lookahead,
        };
        self.world.dispatch(&mut sched, now, ev);
        if self.world.net.has_copies() {
            for c in self.world.net.take_copies() {
                out.send(
                    self.router.arrive[c.port().index()] as usize,
                    Message::Copy(c),
                );
            }
        }
        if self.world.flows.has_finished_ends() {
            for (f, at) in self.world.flows.take_finished_ends() {
                out.send(
                    self.router.ends[f.index()][1] as usize,
                    Message::Finished(f, at),
                );
            }
        }
    }

    fn receive(&mut self, msg: &Message, late: &mut Late<Event>) {
        let w = &mut *self.world;
        match *msg {
            Message::Copy(ref c) => {
                if let Some((at, ev, a, b)) = w.net.take_copy(c, &mut w.pool) {
                    late.schedule_as_later_of(at, Event::Net(ev), a, b);
                }
            }
            Message::Finished(f, finish) => {
                if let Err(at) = w.flows.end_finished_elsewhere(f, finish) {
                    self.error.get_or_insert(SplitError::Uncertain {
                        flow: f.0,
                        finish,
                        at,
                    });
                    late.halt();
                }
            }
        }
    }

    #[inline]
    fn prefetch(&self, upcoming: &Ahead<'_, Event>) {
        self.world.prefetch(upcoming);
    }
}

/// A copy of the world that runs one part, on lines of its own: each thread writes its
/// world's counters and buffers on every event (see [`WorldPart`]).
#[repr(align(128))]
struct Lines(World);

/// A part's output as the world's handlers see it: each event for the part that handles
/// it.
struct PartSched<'a> {
    out: &'a mut Out<Event, Message>,
    router: &'a Router,
    part: usize,
    lookahead: Dur,
}

impl<E: Into<Event>> Schedule<E> for PartSched<'_> {
    #[inline]
    fn now(&self) -> Time {
        self.out.now()
    }
    #[inline]
    fn at(&mut self, at: Time, ev: E) {
        let ev = ev.into();
        if let Event::Generate(i) = ev {
            // A generator's next start: created by the part that handles its current
            // start last (at a start with sources in several parts, each part handles the
            // event for its own, in order), in the part of its flows' sources, handed over
            // if that is another part and sooner than the look-ahead (that part expects
            // it). Past the end of the run (no planned flow starts then), kept here.
            let now = self.out.now();
            if self
                .router
                .generator_parts(i, now)
                .is_some_and(|parts| parts.last() != Some(&(self.part as u32)))
            {
                return;
            }
            let part = self.router.generator_part(i, at).unwrap_or(self.part);
            if part != self.part && at < self.out.now() + self.lookahead {
                self.out.hand_over(part, u64::from(i));
            } else {
                self.out.schedule(part, at, ev);
            }
            return;
        }
        // Only the set-up creates an event for every part.
        let part = self.router.part_of(at, &ev).unwrap_or(0);
        self.out.schedule(part, at, ev);
    }
    #[inline]
    fn reserve(&mut self) -> Option<Slot> {
        Some(self.out.reserve())
    }
}

impl WorldSched for PartSched<'_> {
    fn is_idle(&self) -> bool {
        // Only the samplers ask, and `run_split` refuses them: a part cannot see whether
        // the other parts have events pending.
        unreachable!("a sampler ran on the parallel engine")
    }
    fn starts_here(&self, f: FlowId) -> bool {
        self.router.ends[f.index()][0] as usize == self.part
    }
}

impl World {
    /// Runs the whole world on the exact-order parallel engine, as its one part, instead
    /// of its own scheduler: the same events in the same order, so the same flow and port
    /// tables as [`World::run`] ([`World::run_split`] with one part).
    ///
    /// # Errors
    /// If the scenario asks for a time series, queue occupancy or a packet trace (they
    /// read the whole network at instants, or collect as the run goes), if the world has
    /// run, or if the engine refuses the run.
    pub fn run_on_engine(&mut self, engine: Engine) -> Result<RunStats, SplitError> {
        self.run_split(engine, 1)
    }

    /// Runs the world split by pods into `parts` parts ([`Partition::by_pod_load`] if that
    /// promises a heaviest part lighter by more than 1/32 of the load and the run accepts
    /// it, else [`Partition::by_pods`]; one part is the whole world; [`World::partition`]
    /// tells which) on the exact-order parallel engine: the same events in the same
    /// order as [`World::run`], so the same flow and port tables. Each further part is a
    /// copy of the world, built again from its scenario. Then [`crate::Results::collect`]
    /// works as after a run. In the figures, `sched` counts only the events handled
    /// (`pops`: the engine keeps no other scheduler counter), the start of the measurement
    /// window, which every part handles, counts once, and the peak of packets alive is
    /// the sum of the parts' peaks.
    ///
    /// # Errors
    /// As [`World::run_on_engine`], and with more than one part: if the scenario uses a
    /// feature that is not split yet (the Ideal oracle, an SDN controller, Fastpass, the
    /// event log, packet spraying, a generator that starts flows in different parts at
    /// one time after its first start, or hands an event over from time zero), if the
    /// network has no split by pods ([`SplitError::Unsplittable`]), or
    /// if a flow's two ends are in different parts and its transport or stop time needs
    /// them in one ([`SplitError::Crossing`]). Nothing has run then, and the world can
    /// still run. Once the engine has begun, the world cannot run again
    /// ([`World::is_spent`]), even if the run stopped: because the receiver's part of a
    /// flow could not know of its finish in time ([`SplitError::Uncertain`]), or because
    /// the engine refused it.
    pub fn run_split(&mut self, engine: Engine, parts: usize) -> Result<RunStats, SplitError> {
        if self.is_spent() {
            return Err(SplitError::AlreadyRun);
        }
        let mut refused = vec![
            (self.sampler.is_some(), "output.timeseries"),
            (self.occupancy.is_some(), "output.queue_occupancy"),
            (self.tracer.is_some(), "output.trace"),
        ];
        if parts > 1 {
            let service = self.services.unsplittable();
            refused.extend([
                (service.is_some(), service.unwrap_or_default()),
                (self.event_log.is_some(), "output.events"),
                (
                    self.net.routing_mode() == RoutingMode::Spray,
                    "routing.mode = \"spray\"",
                ),
            ]);
        }
        if let Some((_, feature)) = refused.iter().find(|r| r.0) {
            return Err(SplitError::Unsupported { feature });
        }
        // Every part keeps its flows to the end: refused, before anything is built, where a
        // run on one thread (whose finished flows leave memory) is what fits.
        if parts > 1 {
            let flows = self.scenario.expected_flows(&self.sources);
            let need = flows * crate::scenario::FLOW_BYTES;
            if let Some(limit) = crate::scenario::memory_limit()
                && need > limit as f64
            {
                return Err(SplitError::TooManyFlows {
                    flows: flows as u64,
                    need_mb: (need / 1e6) as u64,
                    limit_mb: limit / 1_000_000,
                });
            }
        }
        // A network that cannot be split is refused before anything else is worked out.
        let even = if parts > 1 {
            Some(Partition::by_pods(&self.net, parts)?)
        } else {
            None
        };
        // The generators' flows, added to every part's flow table before the run under the
        // numbers the run gives them (ADR 0010, item 5).
        let planned = if parts > 1 && !self.sources.is_empty() {
            self.planned_flows().map_err(|e| SplitError::Unsplittable {
                parts,
                reason: e.to_string(),
            })?
        } else {
            Vec::new()
        };
        // The pods evenly by hosts, and, if it promises a lighter heaviest part by more
        // than 1/32, first the pods given out by the flows' bytes: a part's time is what
        // its busiest part takes. The even split is kept for a run that refuses the other
        // (a generator whose flows in each part must start together may).
        let candidates = if let Some(even) = even {
            let load = self.host_load(&planned);
            let balanced = Partition::by_pod_load(&self.net, parts, &load)?;
            if balanced.heaviest(&self.net, &load) * 33 < even.heaviest(&self.net, &load) * 32 {
                vec![balanced, even]
            } else {
                vec![even]
            }
        } else {
            vec![Partition::whole(&self.net)]
        };
        // Every check before the world changes: a refused world can still run.
        let mut refusal = None;
        let mut chosen = None;
        for partition in candidates {
            let delays = |between: bool| {
                self.net
                    .ports()
                    .iter()
                    .filter(|p| {
                        !between || partition.part_of(p.node()) != partition.part_of(p.peer_node())
                    })
                    .map(|p| p.delay())
                    .min()
            };
            let lookahead = delays(true)
                .or_else(|| delays(false))
                .unwrap_or(Dur::ZERO)
                .max(Dur(2));
            let checked = if parts > 1 {
                self.check_ends(&partition, &planned)
            } else {
                Ok(Vec::new())
            }
            .and_then(|apart| {
                let generators = Generators::new(
                    &partition,
                    &self.net,
                    &planned,
                    self.sources.len(),
                    lookahead,
                )?;
                Ok((apart, generators))
            });
            match checked {
                Ok((apart, generators)) => {
                    chosen = Some((partition, lookahead, apart, generators));
                    break;
                }
                Err(e) => refusal = Some(e),
            }
        }
        let Some((partition, lookahead, apart, generators)) = chosen else {
            return Err(refusal.expect("a partition was tried"));
        };
        if parts > 1 {
            self.partition = Some(partition.clone());
        }
        if parts > 1 {
            self.replay_planned(&planned);
            self.intern_routes();
        }
        let router = Router::new(&partition, &self.net, &self.flows, generators.starts);
        // Each copy is built on a thread of its own, so that its memory comes from that
        // thread's arena of the allocator, away from this world's and the other copies'
        // (two parts' buffers side by side could share the cache line between them).
        let (scenario, planned) = (&self.scenario, &planned);
        let mut copies: Vec<Lines> = std::thread::scope(|s| {
            let builders: Vec<_> = (1..parts)
                .map(|_| {
                    s.spawn(|| {
                        let mut w = Self::new(scenario.clone())
                            .expect("a scenario that was built once builds again");
                        // Its events are this world's, which go to the engine once (below).
                        w.sched = dcsim_engine::Scheduler::new();
                        w.spent = true;
                        w.replay_planned(planned);
                        w.intern_routes();
                        Lines(w)
                    })
                })
                .collect();
            builders
                .into_iter()
                .map(|b| b.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        self.spent = true;
        let crossing = |net: &Network, p: PortId| {
            let port = net.port(p);
            partition.part_of(port.node()) != partition.part_of(port.peer_node())
        };
        if parts > 1 {
            for w in std::iter::once(&mut *self).chain(copies.iter_mut().map(|w| &mut w.0)) {
                let marks: Vec<bool> = (0..w.net.ports().len())
                    .map(|p| crossing(&w.net, PortId::new(p)))
                    .collect();
                w.net.split_links(|p| marks[p.index()]);
            }
        }
        // Each end of a flow whose ends are in different parts runs in its own part only.
        for &f in &apart {
            for (q, side) in router.ends[f.index()]
                .into_iter()
                .zip([Side::Sender, Side::Receiver])
            {
                let w = if q == 0 {
                    &mut *self
                } else {
                    &mut copies[q as usize - 1].0
                };
                let (info, _) = w.flow_info(f);
                w.flows.run_one_end(f, side, &info);
            }
        }
        let end = self.end.unwrap_or(Time::MAX);
        // The events the world was built with, in the scheduler's order: the engine numbers
        // them in the order given, which keeps their ties as the scheduler breaks them. An
        // event for every part goes to each, one after another: their numbers take the
        // place of the one, so every other event keeps its order.
        let mut init = Vec::with_capacity(self.sched.len() + parts);
        // First, if generators hand events over between parts, each part's declaration of
        // those it will receive: numbered before every other event, they shift all the
        // other numbers alike and change no order.
        let declared = if generators.handovers { parts } else { 0 };
        init.extend((0..declared).map(|q| (q, Time::ZERO, Event::Declare)));
        // Duplicates of events handled by several parts.
        let mut shared = 0u64;
        while let Some((t, ev)) = self.sched.pop_until(Time::MAX) {
            if let Event::Generate(i) = ev
                && let Some(parts) = router.generator_parts(i, t)
                && parts.len() > 1
            {
                // A first start with sources in several parts: each handles it for its
                // own, in the order of the flows, under consecutive numbers.
                shared += parts.len() as u64 - 1;
                init.extend(parts.iter().map(|&q| (q as usize, t, ev)));
                continue;
            }
            match router.part_of(t, &ev) {
                Some(q) => init.push((q, t, ev)),
                None => {
                    shared += parts as u64 - 1;
                    init.extend((0..parts).map(|q| (q, t, ev)));
                }
            }
        }
        let wall = Instant::now();
        let mut parallel = None;
        let (events, last) = {
            let mut worlds = vec![WorldPart {
                world: &mut *self,
                router: &router,
                part: 0,
                lookahead,
                expected: &generators.expected[0],
                last: Time::ZERO,
                error: None,
            }];
            worlds.extend(copies.iter_mut().enumerate().map(|(i, w)| WorldPart {
                world: &mut w.0,
                router: &router,
                part: i + 1,
                lookahead,
                expected: &generators.expected[i + 1],
                last: Time::ZERO,
                error: None,
            }));
            let events = match engine {
                Engine::Reference => Ok(run_sequential(&mut worlds, &init, end, None)),
                Engine::Threads => {
                    run_parallel(&mut worlds, &init, end, lookahead, None).map(|stats| {
                        parallel = Some(stats);
                        stats.events
                    })
                }
            };
            // A part that stopped the run says why better than the engine can.
            if let Some(e) = worlds.iter_mut().find_map(|w| w.error.take()) {
                return Err(e);
            }
            let last = worlds.iter().map(|w| w.last).max().unwrap_or(Time::ZERO);
            (events?, last)
        };
        let events = events - shared - declared as u64;
        // The generators have given what the parts replayed (their counts go in the
        // summary).
        for &(_, i) in planned {
            self.sources[i as usize].0.next();
        }
        let sim_end = self.end.unwrap_or(last);
        // A flow whose ends ran apart gathers in its sender's part, which hands it on below
        // with the flows that ran whole there.
        for &f in &apart {
            let [a, b] = router.ends[f.index()].map(|q| q as usize);
            let (wa, wb) = two_worlds(self, &mut copies, a, b);
            wa.flows.take_receiver_from(&mut wb.flows, f);
            if let (Some(base), Some(&theirs)) = (
                wa.window.flow_base.get_mut(f.index()),
                wb.window.flow_base.get(f.index()),
            ) {
                *base = theirs;
            }
        }
        for (i, w) in copies.iter_mut().enumerate() {
            self.take_part(&mut w.0, i + 1, &partition, &router, sim_end);
        }
        self.wall_seconds += wall.elapsed().as_secs_f64();
        self.events += events;
        let stats = RunStats {
            sim_end,
            events: self.events,
            packet_hops: self.net.hops(),
            wall_seconds: self.wall_seconds,
            sched: SchedStats {
                pops: events,
                ..SchedStats::default()
            },
        };
        self.stats = Some(stats);
        self.parallel = parallel;
        Ok(stats)
    }

    /// The engine's figures of the last run on its threads ([`Engine::Threads`]): windows,
    /// events and copies sent between parts, late events, and the time the parts spent
    /// handling, numbering and renumbering.
    pub fn parallel_stats(&self) -> Option<ParallelStats> {
        self.parallel
    }

    /// The parts of the nodes in the last split run (from [`World::run_split`] with more
    /// than one part, once the run has begun).
    pub fn partition(&self) -> Option<&Partition> {
        self.partition.as_ref()
    }

    /// An estimate of each host's work in the run, for [`Partition::by_pod_load`]: the
    /// bytes of the flows it sends or receives, listed and `planned`, and 3,000 more per
    /// flow (its first packets and their acknowledgments). A flow without a size counts as
    /// one byte per nanosecond from its start to its stop or the run's end (as if at
    /// 8 Gb/s), and as 1 GB in a run without an end.
    fn host_load(&self, planned: &[(FlowSpec, u32)]) -> Vec<u64> {
        let mut load = vec![0u64; self.net.num_hosts()];
        let listed = (0..self.flows.len()).map(|i| *self.flows.spec(FlowId::new(i)));
        for spec in listed.chain(planned.iter().map(|p| p.0)) {
            let bytes = spec
                .size_bytes
                .unwrap_or_else(|| match spec.stop.or(self.end) {
                    Some(until) => until.0.saturating_sub(spec.start.0) / 1000,
                    None => 1 << 30,
                });
            let w = bytes.saturating_add(3000);
            for h in [spec.src, spec.dst] {
                if let Some(l) = load.get_mut(h.index()) {
                    *l = l.saturating_add(w);
                }
            }
        }
        load
    }

    /// Finds the flows, listed and `planned`, whose ends are in different parts, and
    /// checks that each can run its ends apart ([`Flows::can_run_ends_apart`]).
    fn check_ends(
        &self,
        partition: &Partition,
        planned: &[(FlowSpec, u32)],
    ) -> Result<Vec<FlowId>, SplitError> {
        let mut apart = Vec::new();
        let listed = (0..self.flows.len()).map(|i| *self.flows.spec(FlowId::new(i)));
        for (i, spec) in listed.chain(planned.iter().map(|p| p.0)).enumerate() {
            let part = |h: HostId| partition.part_of(self.net.host_node(h));
            if part(spec.src) != part(spec.dst) {
                let transport = &self.flows.transports()[spec.transport as usize];
                if !transport.sender_finishes() || spec.stop.is_some() {
                    return Err(SplitError::Crossing {
                        flow: i as u32,
                        src: spec.src.0,
                        dst: spec.dst.0,
                    });
                }
                apart.push(FlowId::new(i));
            }
        }
        Ok(apart)
    }

    /// Adds the generators' flows to the flow table, as the run would add them, and makes
    /// the generators' events start them from there.
    fn replay_planned(&mut self, planned: &[(FlowSpec, u32)]) {
        if planned.is_empty() {
            return;
        }
        let mut replay = vec![VecDeque::new(); self.sources.len()];
        for &(spec, i) in planned {
            replay[i as usize].push_back(self.flows.add(spec));
        }
        self.replay = Some(replay);
    }

    /// Interns the routes of every flow, in the order of the flows (as their starts will,
    /// which then find them): every part's copy of the network does the same, so a
    /// route's number names the same route in every part (a packet that crosses between
    /// parts keeps its route's number).
    fn intern_routes(&mut self) {
        for i in 0..self.flows.len() {
            let spec = *self.flows.spec(FlowId::new(i));
            self.net.flow_routes(splitmix(i as u64), spec.src, spec.dst);
        }
    }

    /// Takes over the ports and flows of part `part`, which `w` ran, and adds its counts.
    fn take_part(
        &mut self,
        w: &mut Self,
        part: usize,
        partition: &Partition,
        router: &Router,
        end: Time,
    ) {
        let owned: Vec<PortId> = (0..w.net.ports().len())
            .map(PortId::new)
            .filter(|&p| partition.part_of(w.net.port(p).node()) == part)
            .collect();
        for &p in &owned {
            // With its own packet pool, which the one that collects the results is not.
            w.net.port_mut(p).settle(end, &mut w.pool);
            std::mem::swap(
                &mut self.window.port_base[p.index()],
                &mut w.window.port_base[p.index()],
            );
        }
        self.net
            .take_ports_from(&mut w.net, |p| owned.binary_search(&p).is_ok());
        let flows = |f: FlowId| router.ends[f.index()][0] as usize == part;
        let based = w.window.flow_base.len().min(self.window.flow_base.len());
        for i in 0..based {
            if flows(FlowId::new(i)) {
                self.window.flow_base[i] = w.window.flow_base[i];
            }
        }
        self.flows.take_flows_from(&mut w.flows, flows);
        self.pool.add_counts(&w.pool);
    }
}

/// The worlds of parts `a` and `b` (different): `first` is part 0's, `copies[i]` part
/// `i + 1`'s.
fn two_worlds<'a>(
    first: &'a mut World,
    copies: &'a mut [Lines],
    a: usize,
    b: usize,
) -> (&'a mut World, &'a mut World) {
    assert_ne!(a, b, "two different parts");
    match (a, b) {
        (0, b) => (first, &mut copies[b - 1].0),
        (a, 0) => (&mut copies[a - 1].0, first),
        (a, b) if a < b => {
            let (low, high) = copies.split_at_mut(b - 1);
            (&mut low[a - 1].0, &mut high[0].0)
        }
        (a, b) => {
            let (low, high) = copies.split_at_mut(a - 1);
            (&mut high[0].0, &mut low[b - 1].0)
        }
    }
}

/// A generator's event that one part hands over to another ([`Out::hand_over`]): the next
/// start of generator `generator`, at `at`, created by part `from`'s handler of the start
/// before, at `created_at`, less than the look-ahead before.
struct Expected {
    from: usize,
    created_at: Time,
    at: Time,
    generator: u32,
}

/// How the generators' events go between the parts of a split run.
struct Generators {
    /// Per generator: each start of its flows and the parts of their sources, in the
    /// order of the flows.
    starts: Vec<Vec<(Time, Vec<u32>)>>,
    /// Per part: the events other parts will hand over to it.
    expected: Vec<Vec<Expected>>,
    /// Whether any part expects one.
    handovers: bool,
}

impl Generators {
    /// From the `planned` flows of `generators` generators, split by `partition`, with
    /// the run's `lookahead`.
    ///
    /// # Errors
    /// If a generator starts flows from sources in different parts at one time (its event
    /// starts them all), or hands an event over from time zero (which no part can expect:
    /// it declares what it expects at time zero).
    fn new(
        partition: &Partition,
        net: &Network,
        planned: &[(FlowSpec, u32)],
        generators: usize,
        lookahead: Dur,
    ) -> Result<Self, SplitError> {
        let mut starts: Vec<Vec<(Time, Vec<u32>)>> = vec![Vec::new(); generators];
        for (spec, i) in planned {
            let part = partition.part_of(net.host_node(spec.src)) as u32;
            let list = &mut starts[*i as usize];
            match list.last_mut() {
                Some((t, parts)) if *t == spec.start => {
                    if parts.last() != Some(&part) {
                        parts.push(part);
                    }
                }
                _ => list.push((spec.start, vec![part])),
            }
        }
        // Sources in several parts at one start: the parts handle the generator's event one
        // after another, each for its own flows, which keeps the flows' order only if each
        // part's flows are together, and only at the generator's first start, whose event
        // the set-up creates for each part (a later one would have to be created several
        // times by the handler before it).
        for list in &starts {
            for (k, (_, parts)) in list.iter().enumerate() {
                let mut seen = parts.clone();
                seen.sort_unstable();
                seen.dedup();
                if parts.len() > 1 && (k > 0 || seen.len() < parts.len()) {
                    return Err(SplitError::Unsupported {
                        feature: "a generator that starts flows in different parts at one \
                                  time (but its first, with each part's sources together)",
                    });
                }
            }
        }
        let mut expected: Vec<Vec<Expected>> = (0..partition.parts()).map(|_| Vec::new()).collect();
        for (i, list) in starts.iter().enumerate() {
            for w in list.windows(2) {
                // Created by the last part of one start, handled by the first of the next.
                let (t1, t2) = (w[0].0, w[1].0);
                let (p1, p2) = (*w[0].1.last().expect("a part"), w[1].1[0]);
                if p1 != p2 && t2 < t1 + lookahead {
                    if t1 == Time::ZERO {
                        return Err(SplitError::Unsupported {
                            feature: "a generator whose flow at time zero is followed, \
                                      sooner than the look-ahead, by one in another part",
                        });
                    }
                    expected[p2 as usize].push(Expected {
                        from: p1 as usize,
                        created_at: t1,
                        at: t2,
                        generator: i as u32,
                    });
                }
            }
        }
        let handovers = expected.iter().any(|e| !e.is_empty());
        Ok(Self {
            starts,
            expected,
            handovers,
        })
    }
}
