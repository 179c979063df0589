//! Why a world cannot run on the parallel engine.

use dcsim_engine::Time;

/// Why a world cannot run on the engine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The scenario uses a feature that the engine's runs do not support yet.
    #[error(
        "{feature} cannot run on the parallel engine yet: it reads the whole network at an \
         instant, or is not split between parts yet (ADR 0010, item 5); run without it, or \
         on one thread"
    )]
    Unsupported {
        /// The scenario key of the feature.
        feature: &'static str,
    },
    /// The network has no split of the kind asked for.
    #[error("the network cannot be split into {parts} parts: {reason}")]
    Unsplittable {
        /// The number of parts asked for.
        parts: usize,
        /// Why not.
        reason: String,
    },
    /// A flow's two ends are in different parts, and its transport or its stop time
    /// needs them in one.
    #[error(
        "flow {flow} (host {src} to host {dst}) has its ends in different parts, and its \
         transport (only TCP's sender knows alone when a flow has finished) or its stop \
         time (which both ends share) needs them in one (ADR 0010, item 3); keep both \
         ends of such flows in one part, or run on one thread"
    )]
    Crossing {
        /// The flow.
        flow: u32,
        /// Its source host.
        src: u32,
        /// Its destination host.
        dst: u32,
    },
    /// The receiver's part of a flow whose ends run in different parts handled an event
    /// of the flow at or after the finish that the sender's part decided, which one thread
    /// would have handled as a straggler (a retransmission that reached the receiver
    /// less than a look-ahead after the last acknowledgment reached the sender), or the
    /// receiver was not idle then. The split run cannot give the one-thread outputs and
    /// stopped; the world cannot run again.
    #[error(
        "flow {flow}: the sender's part finished it at {finish:?}, and the receiver's part \
         had handled an event of it at {at:?}, which one thread would have handled after \
         the finish: this run cannot be split exactly (ADR 0010, item 3); run it on one \
         thread"
    )]
    Uncertain {
        /// The flow.
        flow: u32,
        /// The finish, decided by the sender's part.
        finish: Time,
        /// The receiver's event.
        at: Time,
    },
    /// A run split between threads keeps every flow in memory to the end (on one thread
    /// finished flows leave it), and the scenario's flows would not fit.
    #[error(
        "a run split between threads keeps every flow in memory until the end: about \
         {flows} flows need about {need_mb} MB, more than the {limit_mb} MB available (on \
         one thread, finished flows leave memory)"
    )]
    TooManyFlows {
        /// The flows the scenario expects.
        flows: u64,
        /// The memory they need, MB.
        need_mb: u64,
        /// The memory available, MB.
        limit_mb: u64,
    },
    /// The world has already run, or began a run that failed.
    #[error("the world has already run")]
    AlreadyRun,
    /// The engine refused the run.
    #[error("parallel engine: {0}")]
    Engine(#[from] dcsim_engine::parallel::ParallelError),
}
