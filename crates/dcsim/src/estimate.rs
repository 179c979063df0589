//! How long a run will take on this machine, said before it runs (`dcsim check --estimate`,
//! `dcsim repro NAME --estimate`): the scenario runs for a short wall-clock budget, and the
//! rate of its second half is extrapolated to what remains.
//!
//! What "the whole run" is depends on how the run ends: at its duration (the share is of
//! simulated time), or when its flows are done: of the bytes delivered, against the listed
//! flows' sizes and each generator's expected flows ([`Scenario::flows_of`]) times its mean
//! size (of flows started where a mean is unknown). Bytes, not flows: a probe starts many
//! large flows whose bytes mostly come later, so counting flows started would make a run
//! of heavy-tailed sizes look far shorter than it is. A run that finishes within the
//! budget is timed, not estimated. The second half of the probe is used because a network
//! starts empty: the first microseconds cost less than the steady state. A load that builds
//! up more slowly than the probe lasts (a long warm-up, flows that start late) makes the
//! figure low; the result says how much of the run it saw.

use std::fmt;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::{ConfigError, Scenario, World};

/// What a run's progress is measured in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Basis {
    /// Simulated time, to the run's duration.
    SimTime,
    /// Flows started, to the flows the run will have (where a generator's mean flow size
    /// is unknown).
    Flows,
    /// Bytes delivered, to the bytes its flows will carry.
    Bytes,
}

/// A run's expected wall time on this machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    /// The whole run, seconds: building, simulating, and writing nothing (results take
    /// little beside a long run).
    pub seconds: f64,
    /// Building the network and flows, seconds.
    pub build_seconds: f64,
    /// Seconds the probe simulated for.
    pub probe_seconds: f64,
    /// The share of the run the probe covered (1 when it finished the run).
    pub covered: f64,
    /// What the share is of; `None` when the probe finished the run.
    pub basis: Option<Basis>,
    /// Events per second in the probe's second half.
    pub events_per_second: f64,
    /// Flows the run will have ([`Scenario::expected_flows`]).
    pub flows: f64,
}

impl Estimate {
    /// Runs `scenario` for about `budget` of wall time and extrapolates. Fails with the
    /// reason when the run's end cannot be told in advance (long-lived listed flows
    /// without a duration) or the probe saw no progress.
    pub fn of(scenario: Scenario, budget: Duration) -> Result<Self, ConfigError> {
        let name = scenario.name.clone();
        let error = |message: String| ConfigError {
            source: name.clone(),
            message,
        };
        let sources = scenario.sources()?;
        let flows = scenario.expected_flows(&sources);
        let generated = !sources.is_empty();
        // The bytes the run will carry: the listed flows' sizes and each generator's flows
        // times its mean size (`None` if some are unknown or unbounded).
        let listed = scenario
            .flows
            .iter()
            .map(|f| f.size_bytes.map(|b| b as f64))
            .sum::<Option<f64>>();
        let bytes = sources.iter().fold(listed, |total, (s, _)| {
            Some(total? + scenario.flows_of(s)? * s.info().mean_size_bytes?)
        });
        let (basis, whole) = if let Some(d) = scenario.spec.sim.duration {
            (Basis::SimTime, d.as_ps() as f64)
        } else if let Some(bytes) = bytes {
            (Basis::Bytes, bytes)
        } else if generated {
            (Basis::Flows, flows)
        } else {
            return Err(error(
                "cannot estimate: the run has long-lived flows and no sim.duration, so its end \
                 is not known in advance"
                    .into(),
            ));
        };
        let built = Instant::now();
        let mut world = World::new(scenario)?;
        let build_seconds = built.elapsed().as_secs_f64();
        let progress = |w: &World| match basis {
            Basis::SimTime => w.sched.now().as_ps() as f64,
            Basis::Flows => w.flows().len() as f64,
            Basis::Bytes => w.flows().delivered_bytes_total() as f64,
        };
        // Two halves: the rate of the second is the one extrapolated.
        let start = Instant::now();
        let mut marks = [(0.0, 0.0, 0u64); 2];
        for (half, mark) in marks.iter_mut().enumerate() {
            let until = budget.mul_f64((half + 1) as f64 / 2.0);
            let done = world
                .run_interruptible(&mut |_| {
                    if start.elapsed() >= until {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .is_some();
            if done {
                let seconds = start.elapsed().as_secs_f64();
                return Ok(Self {
                    seconds: build_seconds + seconds,
                    build_seconds,
                    probe_seconds: seconds,
                    covered: 1.0,
                    basis: None,
                    events_per_second: world.events as f64 / seconds.max(1e-9),
                    flows,
                });
            }
            *mark = (
                start.elapsed().as_secs_f64(),
                progress(&world),
                world.events,
            );
        }
        let [(w1, p1, e1), (w2, p2, e2)] = marks;
        let covered = (p2 / whole).min(1.0);
        // Wall seconds per unit of progress: the second half's, else the whole probe's.
        let per_unit = if p2 > p1 {
            (w2 - w1) / (p2 - p1)
        } else if p2 > 0.0 {
            w2 / p2
        } else {
            return Err(error(format!(
                "cannot estimate: {w2:.1} s of simulation made no measurable progress; give \
                 the probe longer"
            )));
        };
        Ok(Self {
            seconds: build_seconds + w2 + (whole - p2).max(0.0) * per_unit,
            build_seconds,
            probe_seconds: w2,
            covered,
            basis: Some(basis),
            events_per_second: (e2 - e1) as f64 / (w2 - w1).max(1e-9),
            flows,
        })
    }
}

/// The wall time a probe may take, from seconds as a user gives them: 0.1 s to an hour.
pub fn budget(seconds: f64) -> Result<Duration, String> {
    if seconds.is_finite() && (0.1..=3600.0).contains(&seconds) {
        Ok(Duration::from_secs_f64(seconds))
    } else {
        Err(format!("{seconds} s: give between 0.1 and 3600 seconds"))
    }
}

/// A duration in seconds as people say it: `40 s`, `12 min`, `3.4 h`.
pub fn human_seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1} days", s / 86_400.0)
    }
}

impl fmt::Display for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen = match self.basis {
            None => {
                return write!(
                    f,
                    "{} (the probe ran it to the end)",
                    human_seconds(self.seconds)
                );
            }
            Some(Basis::SimTime) => "of the simulated time",
            Some(Basis::Flows) => "of the flows",
            Some(Basis::Bytes) => "of the bytes",
        };
        write!(
            f,
            "about {} on this machine ({:.1} s of simulation covered {:.2} % {seen}, at {:.2} M events/s",
            human_seconds(self.seconds),
            self.probe_seconds,
            self.covered * 100.0,
            self.events_per_second / 1e6
        )?;
        if self.build_seconds >= 1.0 {
            write!(f, "; building took {:.1} s", self.build_seconds)?;
        }
        write!(f, ")")
    }
}
