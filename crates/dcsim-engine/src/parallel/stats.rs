//! The figures of a parallel run ([`ParallelStats`]) and the clock that times its phases.

#[cfg(doc)]
use super::Part;

/// Figures of a parallel run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ParallelStats {
    /// Events handled.
    pub events: u64,
    /// Windows run.
    pub windows: u64,
    /// Events sent from one part to another.
    pub crossings: u64,
    /// Messages sent from one part to another.
    pub messages: u64,
    /// Events created by [`Part::receive`] in a reserved slot.
    pub late: u64,
    /// Wall-clock seconds the parts spent numbering their events, summed over the parts.
    pub numbering_seconds: f64,
    /// Wall-clock seconds the parts spent handling events, summed over the parts.
    pub handle_seconds: f64,
    /// Wall-clock seconds the busiest part spent handling events: what the run takes at
    /// the least, however the rest is shared out. Far above half of `handle_seconds` on
    /// two parts, it says that one part had more to do than the other.
    pub busiest_handle_seconds: f64,
    /// Wall-clock seconds the parts spent renumbering their pending events and taking in
    /// the events sent to them, summed over the parts.
    pub renumber_seconds: f64,
    /// Wall-clock seconds the parts spent handing their windows' logs over, waiting at the
    /// barrier for the other parts and choosing the next window, summed over the parts:
    /// mostly the waits of the parts that finished their windows first.
    pub waiting_seconds: f64,
}

/// The wall clock read once between phases: each reading ends one phase's time and starts
/// the next one's.
pub(super) struct Clock(std::time::Instant);

impl Clock {
    pub(super) fn new() -> Self {
        Self(std::time::Instant::now())
    }
    /// Seconds since the last reading.
    pub(super) fn lap(&mut self) -> f64 {
        let now = std::time::Instant::now();
        let secs = now.duration_since(self.0).as_secs_f64();
        self.0 = now;
        secs
    }
}
