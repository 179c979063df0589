//! Per-owner timers with lazy cancel and lazy re-arm.
//!
//! A [`TimerTable`] holds, for each of `N` timer kinds, the wanted deadline and the time
//! of the one event already in the scheduler for it, plus a generation counter that the
//! event carries.
//!
//! - **Cancel is lazy**: it clears the deadline; the pending event later pops, finds no
//!   deadline and is dropped as stale. Nothing is searched.
//! - **Re-arm is lazy**: moving a deadline *later* (the retransmission timer on every ACK)
//!   only updates the table; when the old event pops early, [`TimerTable::on_fire`] says
//!   to reschedule at the new deadline. Only a deadline that moves *earlier* than the
//!   pending event needs a new event, and it bumps the generation so the old one is stale.
//!
//! So a timer costs one heap entry per firing, not one per re-arm.

use crate::Time;

/// What to do with a timer event that just popped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerFire {
    /// The timer is due now: run its handler. The deadline has been cleared.
    Fire,
    /// The deadline moved later: schedule the event again at this time, same generation.
    Reschedule(Time),
    /// A cancelled or superseded event: drop it.
    Stale,
}

/// Timers of one owner (for example one flow), indexed by kind `0..N`.
#[derive(Clone, Debug)]
pub struct TimerTable<const N: usize> {
    deadline: [Time; N],
    pending: [Time; N],
    generation: [u32; N],
}

impl<const N: usize> Default for TimerTable<N> {
    fn default() -> Self {
        Self {
            deadline: [Time::MAX; N],
            pending: [Time::MAX; N],
            generation: [0; N],
        }
    }
}

impl<const N: usize> TimerTable<N> {
    /// Arms timer `kind` for `at`. Returns `Some(generation)` when the caller must schedule
    /// an event at `at` carrying that generation; `None` when the already pending event
    /// fires no later than `at` and will be rescheduled lazily.
    #[inline]
    pub fn set(&mut self, kind: usize, at: Time) -> Option<u32> {
        self.deadline[kind] = at;
        if self.pending[kind] <= at {
            return None;
        }
        if self.pending[kind] != Time::MAX {
            // The pending event would fire too late: supersede it.
            self.generation[kind] = self.generation[kind].wrapping_add(1);
        }
        self.pending[kind] = at;
        Some(self.generation[kind])
    }

    /// Disarms timer `kind`. Any pending event becomes stale.
    #[inline]
    pub fn cancel(&mut self, kind: usize) {
        self.deadline[kind] = Time::MAX;
    }

    /// Disarms every timer.
    pub fn cancel_all(&mut self) {
        self.deadline = [Time::MAX; N];
    }

    /// The deadline of timer `kind`, if armed.
    #[inline]
    pub fn deadline(&self, kind: usize) -> Option<Time> {
        let d = self.deadline[kind];
        (d != Time::MAX).then_some(d)
    }

    /// Decides what an event for `kind` with `generation`, popped at `now`, means.
    /// On [`TimerFire::Reschedule`] the caller schedules the same event again at the time
    /// given.
    #[inline]
    pub fn on_fire(&mut self, kind: usize, generation: u32, now: Time) -> TimerFire {
        if generation != self.generation[kind] || self.pending[kind] != now {
            return TimerFire::Stale;
        }
        let d = self.deadline[kind];
        if d == Time::MAX {
            self.pending[kind] = Time::MAX;
            return TimerFire::Stale;
        }
        if d > now {
            self.pending[kind] = d;
            return TimerFire::Reschedule(d);
        }
        self.pending[kind] = Time::MAX;
        self.deadline[kind] = Time::MAX;
        TimerFire::Fire
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::Scheduler;

    /// Drives a table through a scheduler the way a transport does.
    fn run(ops: &[(u8, u64)]) -> (Vec<Time>, Vec<Option<Time>>) {
        let mut s: Scheduler<u32> = Scheduler::new();
        let mut t: TimerTable<1> = TimerTable::default();
        let mut fired = Vec::new();
        let mut model: Option<Time> = None; // what the deadline should be
        let mut expected = Vec::new();
        for &(op, dt) in ops {
            // Let time advance to now + dt, firing what is due.
            let until = Time(s.now().0 + dt);
            while let Some(pt) = s.peek_time() {
                if pt > until {
                    break;
                }
                let (now, g) = s.pop().unwrap();
                match t.on_fire(0, g, now) {
                    TimerFire::Fire => {
                        fired.push(now);
                        expected.push(model.take());
                    }
                    TimerFire::Reschedule(at) => s.schedule(at, g),
                    TimerFire::Stale => s.note_stale(),
                }
            }
            let now = s.now();
            match op % 3 {
                0 | 1 => {
                    let at = Time(now.0 + 1 + dt * u64::from(op));
                    if let Some(g) = t.set(0, at) {
                        s.schedule(at, g);
                    }
                    model = Some(at);
                }
                _ => {
                    t.cancel(0);
                    model = None;
                }
            }
        }
        while let Some((now, g)) = s.pop() {
            match t.on_fire(0, g, now) {
                TimerFire::Fire => {
                    fired.push(now);
                    expected.push(model.take());
                }
                TimerFire::Reschedule(at) => s.schedule(at, g),
                TimerFire::Stale => {}
            }
        }
        (fired, expected)
    }

    proptest! {
        /// A timer fires exactly at its latest deadline, and a cancelled timer never fires.
        #[test]
        fn timer_fires_at_latest_deadline_only(ops in proptest::collection::vec((0u8..6, 0u64..20), 1..100)) {
            let (fired, expected) = run(&ops);
            for (f, e) in fired.iter().zip(&expected) {
                prop_assert_eq!(Some(*f), *e);
            }
        }
    }

    #[test]
    fn moving_deadline_later_needs_no_new_event() {
        let mut t: TimerTable<2> = TimerTable::default();
        assert_eq!(t.set(0, Time(10)), Some(0));
        assert_eq!(t.set(0, Time(20)), None);
        assert_eq!(t.on_fire(0, 0, Time(10)), TimerFire::Reschedule(Time(20)));
        assert_eq!(t.on_fire(0, 0, Time(20)), TimerFire::Fire);
        // Moving earlier supersedes the pending event.
        assert_eq!(t.set(1, Time(50)), Some(0));
        assert_eq!(t.set(1, Time(30)), Some(1));
        assert_eq!(t.on_fire(1, 1, Time(30)), TimerFire::Fire);
        assert_eq!(t.on_fire(1, 0, Time(50)), TimerFire::Stale);
    }
}
