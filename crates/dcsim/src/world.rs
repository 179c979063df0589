//! The world: every component of one simulation, owned in one place, and the event loop.

use std::ops::ControlFlow;
use std::time::Instant;

use dcsim_control::{BuildCx, FIRST_CONTROL_FLOW, ServiceCx, ServiceEvent, Services};
use dcsim_engine::{Dur, RngTree, SchedStats, Schedule, Scheduler, Time, Upcoming, splitmix};
use dcsim_metrics::SampleSpill;
use dcsim_net::{
    FlowId, HostId, NetCx, NetEvent, Network, PacketId, PacketPool, PortId, PortStats, RouteId,
    Shaper,
};
use dcsim_transport::{FlowCx, FlowEvent, FlowInfo, FlowSpec, Flows};
use dcsim_workload::FlowSource;

use crate::events::EventLog;
use crate::samplers::{Occupancy, Sampler};
use crate::trace::Tracer;
use crate::unloaded::unloaded_fct;

use crate::scenario::{ConfigError, Release, Scenario};

/// Every event of a simulation: the sum of the layers' events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Network layer.
    Net(NetEvent),
    /// Transport layer.
    Flow(FlowEvent),
    /// Take the periodic samples.
    Sample,
    /// Start the measurement window (end of warm-up).
    WindowStart,
    /// Create the flows of generator `i` that start now.
    Generate(u32),
    /// An event of a control-plane service (`dcsim_control`).
    Service(ServiceEvent),
    /// Sample the switch ports' queue lengths (`output.queue_occupancy`).
    QueueSample,
    /// In a run split between threads only, each part's first event: the part declares
    /// the generators' events that other parts will hand over to it (`dcsim::split`).
    Declare,
}

const _: () = assert!(size_of::<Event>() <= 16, "events must stay small");

impl From<NetEvent> for Event {
    fn from(e: NetEvent) -> Self {
        Self::Net(e)
    }
}
impl From<FlowEvent> for Event {
    fn from(e: FlowEvent) -> Self {
        Self::Flow(e)
    }
}
impl From<ServiceEvent> for Event {
    fn from(e: ServiceEvent) -> Self {
        Self::Service(e)
    }
}

/// What the world's handlers create their events on: the [`Scheduler`] of a one-thread
/// run, or a part's output in a run split between threads (`crate::split`).
pub(crate) trait WorldSched:
    Schedule<Event> + Schedule<NetEvent> + Schedule<FlowEvent> + Schedule<ServiceEvent>
{
    /// Whether no event is pending: samplers stop then in a run without an end.
    fn is_idle(&self) -> bool;
    /// Whether flow `f`, due to start, starts here: in a part of a split run, only the
    /// flows whose source host is in the part.
    fn starts_here(&self, _f: FlowId) -> bool {
        true
    }
}

impl WorldSched for Scheduler<Event> {
    #[inline]
    fn is_idle(&self) -> bool {
        self.is_empty()
    }
}

/// Progress of a running simulation, reported every 65,536 events.
#[derive(Clone, Copy, Debug)]
pub struct RunProgress {
    /// Simulated time reached.
    pub now: Time,
    /// End of the run, if it has a fixed duration.
    pub end: Option<Time>,
    /// Events processed.
    pub events: u64,
    /// Flows finished so far, and in total.
    pub flows_done: (u64, u64),
}

/// Figures of a finished run.
#[derive(Clone, Copy, Debug)]
pub struct RunStats {
    /// Simulated time at the end.
    pub sim_end: Time,
    /// Events processed (including stale ones).
    pub events: u64,
    /// Packets that crossed a link.
    pub packet_hops: u64,
    /// Wall-clock seconds of the event loop.
    pub wall_seconds: f64,
    /// Scheduler counters.
    pub sched: SchedStats,
}

pub(crate) struct Window {
    pub start: Time,
    pub port_base: Vec<PortStats>,
    pub flow_base: Vec<u64>,
}

/// One simulation: network, flows, scheduler and packet pool. `Send`, and independent of
/// any other world, so simulations can run on several threads at once.
pub struct World {
    pub(crate) scenario: Scenario,
    /// Lazy flow sources of the generators, with their transport.
    pub(crate) sources: Vec<(FlowSource, u32)>,
    /// In a copy of the world that runs a part of a split run: the generators' flows,
    /// added to the flow table before the run ([`World::planned_flows`]), per generator
    /// in order; the generators' events start them instead of drawing from `sources`.
    pub(crate) replay: Option<Vec<std::collections::VecDeque<FlowId>>>,
    pub(crate) sched: Scheduler<Event>,
    pub(crate) pool: PacketPool,
    pub(crate) net: Network,
    pub(crate) flows: Flows,
    pub(crate) end: Option<Time>,
    pub(crate) window: Window,
    pub(crate) sampler: Option<Sampler>,
    pub(crate) stats: Option<RunStats>,
    /// The control-plane services the scenario brings in.
    pub(crate) services: Services,
    pub(crate) occupancy: Option<Occupancy>,
    pub(crate) tracer: Option<Tracer>,
    pub(crate) event_log: Option<Box<EventLog>>,
    /// Where the temporary files of the results go (`None`: the system's temporary
    /// folder): [`World::spill_time_series_in`].
    pub(crate) spill_dir: Option<std::path::PathBuf>,
    /// Whether [`World::retire_finished_flows`] has decided.
    retire_checked: bool,
    /// How long a finished flow stays in the table, or `None` to keep every flow.
    retire_grace: Option<Dur>,
    pub(crate) events: u64,
    pub(crate) wall_seconds: f64,
    /// Whether a split run took the events out of `sched` (`crate::split`): the world
    /// cannot run again, even if that run failed.
    pub(crate) spent: bool,
    /// The parallel engine's figures of a split run on threads.
    pub(crate) parallel: Option<dcsim_engine::parallel::ParallelStats>,
    /// The parts of the nodes in a split run.
    pub(crate) partition: Option<crate::partition::Partition>,
}

/// Pending events from which [`World::run_until`] prefetches the next arrival's packet.
const PREFETCH_MIN_PENDING: usize = 64;

/// How long a finished flow stays in the flow table before it leaves ([`Flows::retire_finished`]):
/// past the last straggler of nearly any flow (a round trip and a full queue or two at
/// datacenter rates), so that stragglers after it, which are kept one by one, are rare; and
/// short, since every flow that finished within it is still in memory (7,000 at 7 million
/// flows a second).
const RETIRE_GRACE: Dur = Dur::from_ms(1);

/// Pending events from which the event loop looks two events ahead
/// ([`Network::prefetch_arrival_and_next_hop`]). Measured in alternating pairs of `dcsim
/// bench --quick`: 1.30x faster per hop on the k = 24 fat-tree (18,000 pending events).
/// With the look-ahead on for them, the k = 8 fat-tree (700; its ports fit in the L2
/// cache, so the extra instructions buy nothing) was 7 % slower, and it is still 3.6 %
/// slower with the look-ahead that also prefetches a host's NIC and flow. With those, the k = 16
/// fat-tree (5,300) is 4.5 % faster with it (12 pairs; before, from 5 % slower to 18 %
/// faster depending on the hour, and the threshold was 8,192), a k = 12 permutation no
/// slower (5 pairs of `dcsim run`), and a short xpass-fattree DCTCP run unchanged.
const DEEP_PREFETCH_MIN_PENDING: usize = 2048;

impl World {
    /// Builds the world of a scenario: the network, every flow's start event, samplers.
    pub fn new(scenario: Scenario) -> Result<Self, ConfigError> {
        let spec = &scenario.spec;
        let rng = RngTree::new(spec.sim.seed);
        let (queue, nic) = scenario.ports();
        let shaper = spec
            .ports
            .as_ref()
            .map(|p| Shaper {
                jitter: p.jitter.lateness(),
                release_at_start: p.release == Release::Start,
            })
            .filter(|s| !s.jitter.is_zero() || s.release_at_start)
            .map(|s| (s, &rng));
        let mut net = Network::with_jitter(&scenario.graph, spec.routing, shaper, |p| {
            if p.on_host {
                nic.build(&rng, u64::from(p.id.0), p.rate)
            } else {
                queue.build(&rng, u64::from(p.id.0), p.rate)
            }
        })
        .map_err(|e| ConfigError {
            source: scenario.source.clone(),
            message: format!("topology: {e}"),
        })?;
        for t in &scenario.transports {
            net.enable(t.needs().telemetry);
        }

        let mut sched = Scheduler::new();
        let mut flows = Flows::new(scenario.transports.clone(), scenario.graph.hosts.len(), rng);
        for f in &scenario.flows {
            let id = flows.add(*f);
            sched.schedule(f.start, Event::Flow(FlowEvent::Start(id)));
        }
        let warmup = Time::from_dur(spec.sim.warmup);
        if warmup > Time::ZERO {
            sched.schedule(warmup, Event::WindowStart);
        }
        let sampler = spec.output.timeseries.as_ref().map(|ts| {
            let first = if ts.offset > Dur::ZERO {
                ts.offset
            } else {
                ts.every
            };
            sched.schedule(Time::from_dur(first), Event::Sample);
            Sampler::new(ts, &net, &scenario.graph, flows.len())
        });
        let n_ports = net.ports().len();
        // The control-plane services, built here so that their first events and the routes
        // they intern keep their places in the run's order.
        let transport_index = |name: &str| scenario.transport_index(name);
        let services = Services::build(&mut BuildCx {
            transports: &scenario.transports,
            transport_index: &transport_index,
            controller: spec.controller.as_ref(),
            topology: &spec.topology,
            net: &mut net,
            flows: &mut flows,
            rng: &rng,
            sched: &mut sched,
        })
        .map_err(|message| ConfigError {
            source: scenario.source.clone(),
            message,
        })?;
        let occupancy = spec.output.queue_occupancy.map(|every| {
            sched.schedule(Time::from_dur(every), Event::QueueSample);
            Occupancy::new(&net, every)
        });
        let tracer = spec
            .output
            .trace
            .as_ref()
            .map(|t| Tracer::new(t, &mut net, &scenario.graph));
        let event_log = spec
            .output
            .events
            .as_ref()
            .map(|e| Box::new(EventLog::new(e)));
        let n_flows = flows.len();
        let sources = scenario.sources()?;
        for (i, (s, _)) in sources.iter().enumerate() {
            if let Some(t) = s.peek_start() {
                sched.schedule(Time::from_dur(t), Event::Generate(i as u32));
            }
        }
        Ok(Self {
            sources,
            replay: None,
            end: spec.sim.duration.map(Time::from_dur),
            window: Window {
                start: Time::ZERO,
                port_base: vec![PortStats::default(); n_ports],
                flow_base: vec![0; n_flows],
            },
            scenario,
            sched,
            pool: PacketPool::new(),
            net,
            flows,
            sampler,
            stats: None,
            services,
            occupancy,
            tracer,
            event_log,
            spill_dir: None,
            retire_checked: false,
            retire_grace: Some(RETIRE_GRACE),
            events: 0,
            wall_seconds: 0.0,
            spent: false,
            parallel: None,
            partition: None,
        })
    }

    /// The scenario this world runs.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }
    /// The scenario's traffic patterns, with the index of their transport.
    pub fn sources(&self) -> &[(FlowSource, u32)] {
        &self.sources
    }
    /// Whether the world has run, or began a run that stopped: it cannot run again (a new
    /// world from [`World::scenario`] can).
    pub fn is_spent(&self) -> bool {
        self.spent || self.stats.is_some() || self.events > 0
    }
    /// The network.
    pub fn net(&self) -> &Network {
        &self.net
    }
    /// The flows.
    pub fn flows(&self) -> &Flows {
        &self.flows
    }
    /// The packet pool.
    pub fn pool(&self) -> &PacketPool {
        &self.pool
    }

    /// Runs to the end of the scenario (its duration, or until nothing is left to do),
    /// calling `progress` every 65,536 events.
    pub fn run(&mut self, progress: &mut dyn FnMut(&RunProgress)) -> RunStats {
        self.run_until(self.end.unwrap_or(Time::MAX), progress);
        self.finish()
    }

    /// Processes every event up to and including time `t` (not beyond the scenario's end).
    /// Can be called repeatedly with increasing times; [`World::finish`] closes the run.
    pub fn run_until(&mut self, t: Time, progress: &mut dyn FnMut(&RunProgress)) {
        let _ = self.run_until_stopped(t, &mut |p| {
            progress(p);
            ControlFlow::Continue(())
        });
    }

    /// [`World::run`], except that `progress` may stop the run by returning
    /// [`ControlFlow::Break`] (an interrupt from Python, a deadline): then the world is left
    /// part-way and `None` is returned.
    pub fn run_interruptible(
        &mut self,
        progress: &mut dyn FnMut(&RunProgress) -> ControlFlow<()>,
    ) -> Option<RunStats> {
        match self.run_until_stopped(self.end.unwrap_or(Time::MAX), progress) {
            ControlFlow::Continue(()) => Some(self.finish()),
            ControlFlow::Break(()) => None,
        }
    }

    fn run_until_stopped(
        &mut self,
        t: Time,
        progress: &mut dyn FnMut(&RunProgress) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let wall = Instant::now();
        self.retire_finished_flows();
        let end = t.min(self.end.unwrap_or(Time::MAX));
        // The handlers take the scheduler as an argument ([`WorldSched`]), so that a split
        // run can hand them a part's output instead: it is out of `self` for the loop.
        let mut sched = std::mem::replace(&mut self.sched, Scheduler::new());
        let (flow, events) = self.event_loop(&mut sched, end, progress);
        self.sched = sched;
        self.collect_trace(self.sched.now());
        self.events += events;
        self.wall_seconds += wall.elapsed().as_secs_f64();
        flow
    }

    /// Handles the events of `sched` up to `end`; returns how it stopped and the number of
    /// events handled.
    fn event_loop(
        &mut self,
        sched: &mut Scheduler<Event>,
        end: Time,
        progress: &mut dyn FnMut(&RunProgress) -> ControlFlow<()>,
    ) -> (ControlFlow<()>, u64) {
        let mut flow = ControlFlow::Continue(());
        let mut events: u64 = 0;
        while let Some((now, ev)) = sched.pop_until(end) {
            // With more than a few dozen pending events, the packet of the next arrival is
            // rarely still in the L1 cache: start loading it now (fat-tree benchmark +5 %;
            // below the threshold the check costs more than it saves). With thousands, the
            // ports no longer fit in the L2 cache either: look two events ahead, so that the
            // next arrival's packet is in cache in time to find the port it will leave by.
            self.prefetch(sched);
            self.dispatch(sched, now, ev);
            events += 1;
            if events & 0xFFFF == 0 {
                // A packet trace takes the network's copies here and at the end of the call:
                // at most one copy per event, so the network holds at most 65,536 (5 MB).
                self.collect_trace(now);
                flow = progress(&RunProgress {
                    now,
                    end: self.end,
                    events: self.events + events,
                    flows_done: (self.flows.completed(), self.flows.len() as u64),
                });
                if flow.is_break() {
                    break;
                }
            }
        }
        (flow, events)
    }

    /// Ends the run at the scenario's end (or the last event of a drained run) and returns
    /// its figures.
    pub fn finish(&mut self) -> RunStats {
        let sim_end = self.end.unwrap_or_else(|| self.sched.now());
        let stats = RunStats {
            sim_end,
            events: self.events,
            packet_hops: self.net.hops(),
            wall_seconds: self.wall_seconds,
            sched: self.sched.stats(),
        };
        self.stats = Some(stats);
        stats
    }

    /// The run loop's look-ahead, from [`PREFETCH_MIN_PENDING`] pending events on (on the
    /// world's scheduler or a part's heap in a split run). Two events ahead, a packet that
    /// will reach a host also has its flow's entry prefetched, as well as the host's NIC.
    /// In 12 alternating pairs of `bench --quick` at k = 24, per hop: the NIC alone 1.05×
    /// faster, the flow's entry on top of it 1.10×, both against neither 1.07× (in another
    /// hour).
    #[inline]
    pub(crate) fn prefetch<U: Upcoming<Event>>(&self, sched: &U) {
        let pending = sched.pending();
        if pending < PREFETCH_MIN_PENDING {
            return;
        }
        if pending >= DEEP_PREFETCH_MIN_PENDING {
            let (next, after) = sched.likely_next_two();
            if let Some(Event::Net(NetEvent::LinkArrive(p, pkt))) = next
                && self
                    .net
                    .prefetch_arrival_and_next_hop(p, pkt, &self.pool)
                    .is_some()
                && let Some(p) = self.pool.peek(pkt)
            {
                self.flows.prefetch_flow(p.flow);
            }
            if let Some(Event::Net(NetEvent::LinkArrive(p, pkt))) = after {
                self.net.prefetch_arrival_early(p, pkt, &self.pool);
            }
        } else if let Some(Event::Net(NetEvent::LinkArrive(p, pkt))) = sched.likely_next() {
            self.net.prefetch_arrival(p, pkt, &self.pool);
        }
    }

    /// Logs what changed in flow `f` (`[output.events]`), if it is logged.
    #[inline(never)]
    fn log_flow(&mut self, now: Time, f: FlowId) {
        if let Some(log) = &mut self.event_log
            && log.wants(f)
        {
            log.observe(now, f, &self.flows);
        }
    }

    /// Writes the packet-trace records that can no longer be overtaken.
    #[inline(never)]
    fn collect_trace(&mut self, now: Time) {
        if let Some(t) = &mut self.tracer {
            t.collect(now, &mut self.net, &self.flows, false);
        }
    }

    #[inline]
    pub(crate) fn dispatch<S: WorldSched>(&mut self, sched: &mut S, now: Time, ev: Event) {
        match ev {
            Event::Net(NetEvent::LinkArrive(p, _)) => {
                let mut cx = NetCx {
                    now,
                    pool: &mut self.pool,
                    sched,
                };
                if let Some((host, pkt)) = self.net.on_link_arrive(p, &mut cx) {
                    if self.pool.get(pkt).flow.0 >= FIRST_CONTROL_FLOW {
                        self.on_control_packet(sched, host, pkt, now);
                        return;
                    }
                    let logged = match &mut self.event_log {
                        Some(log) => log.arrival(now, self.pool.get(pkt)),
                        None => None,
                    };
                    let mut fcx = FlowCx {
                        now,
                        pool: &mut self.pool,
                        net: &mut self.net,
                        sched,
                    };
                    self.flows.on_packet(host, pkt, &mut fcx);
                    self.services.after_delivery(&mut ServiceCx {
                        now,
                        net: &mut self.net,
                        flows: &mut self.flows,
                        pool: &mut self.pool,
                        sched,
                    });
                    if let Some(f) = logged {
                        self.log_flow(now, f);
                    }
                }
            }
            Event::Net(NetEvent::PortReady(p)) => {
                let mut cx = NetCx {
                    now,
                    pool: &mut self.pool,
                    sched,
                };
                if let Some(host) = self.net.on_port_ready(p, &mut cx) {
                    let mut fcx = FlowCx {
                        now,
                        pool: &mut self.pool,
                        net: &mut self.net,
                        sched,
                    };
                    self.flows.on_nic_ready(host, &mut fcx);
                }
            }
            Event::Flow(FlowEvent::Timer(f, key, generation)) => {
                let mut fcx = FlowCx {
                    now,
                    pool: &mut self.pool,
                    net: &mut self.net,
                    sched,
                };
                self.flows.on_timer(f, key, generation, &mut fcx);
                if self.event_log.is_some() {
                    self.log_flow(now, f);
                }
            }
            other => self.dispatch_rare(sched, now, other),
        }
    }

    /// Events that are not per packet: kept out of [`World::dispatch`] so that the packet
    /// path stays small enough to inline.
    #[inline(never)]
    fn dispatch_rare<S: WorldSched>(&mut self, sched: &mut S, now: Time, ev: Event) {
        match ev {
            Event::Flow(FlowEvent::Start(f)) => self.start_flow(sched, f, now),
            Event::Sample => self.sample(sched, now),
            Event::Service(e) => self.services.on_event(
                e,
                &mut ServiceCx {
                    now,
                    net: &mut self.net,
                    flows: &mut self.flows,
                    pool: &mut self.pool,
                    sched,
                },
            ),
            Event::QueueSample => self.sample_queues(sched, now),
            Event::Generate(i) => self.generate(sched, i as usize, now),
            Event::WindowStart => self.begin_window(now),
            // Handled by the split run's part before it reaches the world.
            Event::Declare => {}
            Event::Net(_) | Event::Flow(FlowEvent::Timer(..)) => {
                unreachable!("per-packet events are dispatched inline")
            }
        }
    }

    /// A control-plane service's packet arrived at `host`.
    #[cold]
    #[inline(never)]
    fn on_control_packet<S: WorldSched>(
        &mut self,
        sched: &mut S,
        host: HostId,
        pkt: PacketId,
        now: Time,
    ) {
        let packet = *self.pool.get(pkt);
        self.pool.free(pkt);
        self.services.on_packet(
            host,
            &packet,
            &mut ServiceCx {
                now,
                net: &mut self.net,
                flows: &mut self.flows,
                pool: &mut self.pool,
                sched,
            },
        );
    }

    /// Creates and starts every flow of source `i` that starts at `now`, then schedules the
    /// source's next start: one pending event per source, so memory stays flat however
    /// many flows a pattern makes.
    fn generate<S: WorldSched>(&mut self, sched: &mut S, i: usize, now: Time) {
        if self.replay.is_some() {
            self.replay_generator(sched, i, now);
            return;
        }
        loop {
            let (src, transport) = &mut self.sources[i];
            let Some(spec) = due_flow(src, *transport, now) else {
                break;
            };
            let id = self.flows.add(spec);
            self.start_flow(sched, id, now);
        }
        if let Some(start) = self.sources[i].0.peek_start() {
            sched.at(Time::from_dur(start), Event::Generate(i as u32));
        }
    }

    /// [`World::generate`] in a part of a split run: starts the planned flows of generator
    /// `i` that start now (the split sends the event to the part of their source hosts)
    /// and creates the event of its next start, in the order a run that draws them does.
    fn replay_generator<S: WorldSched>(&mut self, sched: &mut S, i: usize, now: Time) {
        loop {
            let Some(queue) = self.replay.as_mut().map(|r| &mut r[i]) else {
                return;
            };
            let Some(&f) = queue.front() else {
                return;
            };
            let start = self.flows.spec(f).start;
            if start > now {
                sched.at(start, Event::Generate(i as u32));
                return;
            }
            queue.pop_front();
            // Earlier starts were the generator's events in other parts, and so are flows
            // of this start from sources in other parts.
            if start == now && sched.starts_here(f) {
                self.start_flow(sched, f, now);
            }
        }
    }

    /// Every flow that the generators will add to the flow table in a run of this world,
    /// in the order they will add them (after the flows listed in the scenario, so the
    /// `k`-th is flow `listed + k`), each with the index of its generator. A run adds them
    /// as it goes, each generator's next flow when its start comes; this replays the
    /// generators (from their own seeded streams, which nothing in the run draws from)
    /// in that order: by start, and at equal starts in the order the run's scheduler
    /// would take the generators' events, which depends only on the generators' own
    /// earlier starts. Flows after the run's end are left out, as the run leaves them.
    ///
    /// # Errors
    /// If a generator cannot be built (as when the world was built).
    pub fn planned_flows(&self) -> Result<Vec<(FlowSpec, u32)>, ConfigError> {
        let mut sources = self.scenario.sources()?;
        let end = self.end.unwrap_or(Time::MAX);
        // The generators' events alone: numbered among themselves as the run numbers
        // them among all events, which keeps their order (the run's first events are
        // scheduled in the order of the generators, and each creates its next last).
        let mut sched: Scheduler<u32> = Scheduler::new();
        for (i, (s, _)) in sources.iter().enumerate() {
            if let Some(t) = s.peek_start() {
                sched.schedule(Time::from_dur(t), i as u32);
            }
        }
        let mut planned = Vec::new();
        while let Some((now, i)) = sched.pop_until(end) {
            let (src, transport) = &mut sources[i as usize];
            while let Some(spec) = due_flow(src, *transport, now) {
                planned.push((spec, i));
            }
            if let Some(t) = src.peek_start() {
                sched.schedule(Time::from_dur(t), i);
            }
        }
        Ok(planned)
    }

    /// Starts flow `f`: picks its routes (per-flow ECMP by a hash of its number), computes
    /// its unloaded completion time, hands both to its transport, then tells the control-plane
    /// services.
    ///
    /// # Panics
    /// If a transport that needs symmetric routes got routes that are not each other's
    /// reverse (the scenario check rejects such routing, so this is a bug).
    fn start_flow<S: WorldSched>(&mut self, sched: &mut S, f: FlowId, now: Time) {
        let (info, ideal) = self.flow_info(f);
        let mut fcx = FlowCx {
            now,
            pool: &mut self.pool,
            net: &mut self.net,
            sched,
        };
        self.flows.on_start(f, &info, ideal, &mut fcx);
        self.services.on_flow_start(
            &info,
            &mut ServiceCx {
                now,
                net: &mut self.net,
                flows: &mut self.flows,
                pool: &mut self.pool,
                sched,
            },
        );
        self.log_flow(now, f);
    }

    /// What flow `f`'s ends are opened with (its routes, interned if new, and its hosts'
    /// link rates), and its unloaded completion time if it has a size.
    pub(crate) fn flow_info(&mut self, f: FlowId) -> (FlowInfo, Option<Dur>) {
        let spec = *self.flows.spec(f);
        let transport = self.flows.transport_of(f);
        let format = transport.packet_format();
        let key = splitmix(u64::from(f.0));
        let (fwd, rev) = self.net.flow_routes(key, spec.src, spec.dst);
        let ideal = spec.size_bytes.map(|size| {
            let route = if fwd == RouteId::NONE {
                self.net.ecmp_route(key, spec.src, spec.dst)
            } else {
                fwd
            };
            unloaded_fct(
                self.net.path_links(route),
                size,
                format.payload_bytes,
                format.full_wire_bytes,
            )
        });
        assert!(
            transport.needs().symmetric_routes.is_none() || self.net.is_reverse(fwd, rev),
            "flow {f}: {} needs symmetric routes",
            transport.name()
        );
        let info = FlowInfo {
            flow: f,
            src: spec.src,
            dst: spec.dst,
            fwd,
            rev,
            size_bytes: spec.size_bytes,
            stop: spec.stop,
            src_link: self.net.port(self.net.nic(spec.src)).rate(),
            dst_link: self.net.port(self.net.nic(spec.dst)).rate(),
            telemetry: self.net.telemetry(),
        };
        (info, ideal)
    }

    fn begin_window(&mut self, now: Time) {
        if let Some(o) = &mut self.occupancy {
            for t in &mut o.tiers {
                t.1.reset();
            }
        }
        self.window.start = now;
        for (i, base) in self.window.port_base.iter_mut().enumerate() {
            *base = self
                .net
                .port_mut(PortId::new(i))
                .begin_window(now, &mut self.pool);
        }
        // A flow that has left the table finished before the window: nothing of it is in
        // the window.
        self.window.flow_base = (0..self.flows.len())
            .map(|i| {
                self.flows
                    .delivered_bytes_if_present(FlowId::new(i))
                    .unwrap_or(u64::MAX)
            })
            .collect();
    }

    /// Lets finished flows leave the flow table ([`Flows::retire_finished`]), so that a run
    /// of any number of flows holds only those running, when nothing in the run asks for a
    /// finished flow by number ([`Scenario::keeps_finished_flows`]). Once per world, before its first event; a world split between threads
    /// keeps its flows.
    fn retire_finished_flows(&mut self) {
        if self.retire_checked {
            return;
        }
        self.retire_checked = true;
        let Some(grace) = self.retire_grace else {
            return;
        };
        if self.scenario.keeps_finished_flows {
            return;
        }
        debug_assert!(
            self.services.is_empty() && self.tracer.is_none() && self.event_log.is_none(),
            "the scenario's keeps_finished_flows missed a part that reads finished flows"
        );
        let file = match &self.spill_dir {
            Some(d) => tempfile::tempfile_in(d),
            None => tempfile::tempfile(),
        };
        // Without a file the flows stay: the run needs more memory, nothing else changes.
        if let Ok(file) = file {
            self.flows.retire_finished(file, grace);
        }
    }

    /// How long a finished flow stays in the flow table before it leaves for a file (by
    /// default 1 ms of simulated time), or `None` to keep every flow in the table, so
    /// that [`World::flows`] can still tell each one's spec and record after the run.
    /// Results are the same either way. Call before the run.
    pub fn keep_finished_flows_for(&mut self, grace: Option<Dur>) {
        self.retire_grace = grace;
    }

    /// Puts the temporary files of the time series, the packet traces and the event log
    /// in `dir` (by default the system's temporary folder, which may be in memory): the
    /// command line puts them beside the results. Call before the run.
    pub fn spill_time_series_in(&mut self, dir: &std::path::Path) {
        self.spill_dir = Some(dir.to_path_buf());
        if let Some(s) = self.sampler.as_mut() {
            s.spill = SampleSpill::new(Some(dir.to_path_buf()));
        }
        if let Some(t) = self.tracer.as_mut() {
            t.write_in(dir);
        }
        if let Some(e) = self.event_log.as_mut() {
            e.spill = SampleSpill::new(Some(dir.to_path_buf()));
        }
    }

    /// [`World::spill_time_series_in`] the folder that will hold the results folder
    /// `out`, so the temporary files are on the results' disk.
    pub fn spill_time_series_beside(&mut self, out: &std::path::Path) {
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
        self.spill_time_series_in(parent.unwrap_or(std::path::Path::new(".")));
    }
}

/// The next flow of `src` if it starts at `now` (not later: a source's starts never
/// decrease, and its event comes at its next start), as a flow of transport `transport`.
fn due_flow(src: &mut FlowSource, transport: u32, now: Time) -> Option<FlowSpec> {
    let start = src.peek_start().map(Time::from_dur)?;
    if start > now {
        return None;
    }
    let f = src.next().expect("peeked");
    Some(FlowSpec {
        src: HostId(f.src),
        dst: HostId(f.dst),
        size_bytes: f.size_bytes,
        start,
        stop: f.stop.map(Time::from_dur),
        transport,
    })
}

impl World {
    /// Samples the queue-occupancy histograms and schedules the next sample.
    pub(crate) fn sample_queues<S: WorldSched>(&mut self, sched: &mut S, now: Time) {
        let Some(o) = self.occupancy.as_mut() else {
            return;
        };
        let next = o.record(&mut self.net, &mut self.pool, now);
        self.sample_again(sched, next, Event::QueueSample);
    }

    /// Samples the time series and schedules the next sample.
    pub(crate) fn sample<S: WorldSched>(&mut self, sched: &mut S, now: Time) {
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        let next = s.record(&self.flows, &mut self.net, &mut self.pool, now);
        self.sample_again(sched, next, Event::Sample);
    }

    /// Schedules a sampler's next sample at `next`, unless the run is drained (nothing else
    /// is left to happen) or ends before it.
    fn sample_again<S: WorldSched>(&self, sched: &mut S, next: Time, ev: Event) {
        if !sched.is_idle() && self.end.is_none_or(|e| next <= e) {
            sched.at(next, ev);
        }
    }
}
