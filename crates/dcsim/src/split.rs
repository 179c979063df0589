//! A world run on the exact-order parallel engine (`dcsim_engine::parallel`, ADR 0009 and
//! ADR 0010), the first step of splitting the network between threads.
//!
//! The world's handlers create their events on whatever they are given (`WorldSched`):
//! the [`Scheduler`] of [`World::run`], or here a part's output ([`Out`]). This module runs
//! a whole world as the one part of the engine's reference order ([`run_sequential`]) or
//! of its threads ([`run_parallel`]), and its tests check that both give the flow and port
//! tables of the one-thread run byte for byte. What it measures is what the engine's
//! parts cost the real network before any split: their heaps, the buffer every
//! new event goes through, the windows and their numbering. The network is not split yet:
//! one part holds all of it, so a run on threads uses one.

use std::time::Instant;

#[cfg(doc)]
use dcsim_engine::Scheduler;
use dcsim_engine::parallel::{Ahead, Out, Part, run_parallel, run_sequential};
use dcsim_engine::{Dur, SchedStats, Schedule, Time};

use crate::world::{Event, RunStats, World, WorldSched};

/// Which of the engine's runs a world goes through ([`World::run_on_engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// [`run_sequential`]: the engine's reference order, on the calling thread.
    Reference,
    /// [`run_parallel`]: one thread per part, in windows of half the look-ahead (the
    /// shortest link delay).
    Threads,
}

/// Why a world cannot run on the engine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The scenario uses a feature that the engine's runs do not support yet.
    #[error(
        "{feature} cannot run on the parallel engine yet: it reads the whole network at an \
         instant (ADR 0010, item 5); run without it, or on one thread"
    )]
    Unsupported {
        /// The scenario key of the feature.
        feature: &'static str,
    },
    /// The world has already run.
    #[error("the world has already run")]
    AlreadyRun,
    /// The engine refused the run.
    #[error("parallel engine: {0}")]
    Engine(#[from] dcsim_engine::parallel::ParallelError),
}

/// A world as one part of the engine's run.
struct WorldPart<'w> {
    world: &'w mut World,
    /// Its index among the parts.
    part: usize,
    /// The time of the last event handled.
    last: Time,
}

impl Part for WorldPart<'_> {
    type Event = Event;
    type Message = ();

    #[inline]
    fn handle(&mut self, now: Time, ev: Event, out: &mut Out<Event>) {
        self.last = now;
        let mut sched = PartSched {
            out,
            part: self.part,
        };
        self.world.dispatch(&mut sched, now, ev);
    }

    #[inline]
    fn prefetch(&self, upcoming: &Ahead<'_, Event>) {
        self.world.prefetch(upcoming);
    }
}

/// A part's output as the world's handlers see it: every event for the part itself.
struct PartSched<'a> {
    out: &'a mut Out<Event>,
    part: usize,
}

impl<E: Into<Event>> Schedule<E> for PartSched<'_> {
    #[inline]
    fn now(&self) -> Time {
        self.out.now()
    }
    #[inline]
    fn at(&mut self, at: Time, ev: E) {
        self.out.schedule(self.part, at, ev.into());
    }
}

impl WorldSched for PartSched<'_> {
    fn is_idle(&self) -> bool {
        // Only the samplers ask, and `run_on_engine` refuses them: a part cannot see whether
        // the other parts have events pending.
        unreachable!("a sampler ran on the parallel engine")
    }
}

impl World {
    /// Runs the whole world on the exact-order parallel engine, as its one part, instead
    /// of its own scheduler: the same events in the same order, so the same flow and port
    /// tables as [`World::run`]. Then [`crate::Results::collect`] works as after a run.
    /// In the figures, `sched` counts only the events handled (`pops`): the engine keeps
    /// no other scheduler counter.
    ///
    /// # Errors
    /// If the scenario asks for a time series, queue occupancy or a packet trace (they
    /// read the whole network at instants, or collect as the run goes), if the world has
    /// run, or if the engine refuses the run.
    pub fn run_on_engine(&mut self, engine: Engine) -> Result<RunStats, SplitError> {
        if self.stats.is_some() || self.events > 0 {
            return Err(SplitError::AlreadyRun);
        }
        let refused = [
            (self.sampler.is_some(), "output.timeseries"),
            (self.occupancy.is_some(), "output.queue_occupancy"),
            (self.tracer.is_some(), "output.trace"),
        ];
        if let Some((_, feature)) = refused.iter().find(|r| r.0) {
            return Err(SplitError::Unsupported { feature });
        }
        let end = self.end.unwrap_or(Time::MAX);
        // The events the world was built with, in the scheduler's order: the engine numbers
        // them in the order given, which keeps their ties as the scheduler breaks them.
        let mut init = Vec::with_capacity(self.sched.len());
        while let Some((t, ev)) = self.sched.pop_until(Time::MAX) {
            init.push((0, t, ev));
        }
        let lookahead = self
            .net
            .ports()
            .iter()
            .map(|p| p.delay())
            .min()
            .unwrap_or(Dur::ZERO)
            .max(Dur(2));
        let wall = Instant::now();
        let mut parts = [WorldPart {
            world: self,
            part: 0,
            last: Time::ZERO,
        }];
        let events = match engine {
            Engine::Reference => run_sequential(&mut parts, &init, end, None),
            Engine::Threads => run_parallel(&mut parts, &init, end, lookahead, None)?.events,
        };
        let last = parts[0].last;
        self.wall_seconds += wall.elapsed().as_secs_f64();
        self.events += events;
        let stats = RunStats {
            sim_end: self.end.unwrap_or(last),
            events: self.events,
            packet_hops: self.net.hops(),
            wall_seconds: self.wall_seconds,
            sched: SchedStats {
                pops: events,
                ..SchedStats::default()
            },
        };
        self.stats = Some(stats);
        Ok(stats)
    }
}
