//! What the parallel engine costs dcsim's network, and what a split gains: a scenario run
//! on its own scheduler (`World::run`) and on the engine's reference order and its threads
//! (`World::run_split`, as one part or split by pods into `--parts N`), in alternating
//! rounds, with the wall time per event of each and a check that all three give the same
//! digest.
//!
//! ```text
//! cargo run --release -p dcsim --example enginecost -- SCENARIO [ROUNDS] [--set KEY=VALUE]...
//!     [--only scheduler|reference|threads] [--parts N]
//! ```
//!
//! Outputs the engine refuses (time series, queue occupancy, packet traces) are dropped.

use std::process::ExitCode;
use std::time::Instant;

use dcsim::split::Engine;
use dcsim::{Results, ScenarioSpec, World};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut rounds = 3usize;
    let mut sets = Vec::new();
    let mut only: Option<String> = None;
    let mut parts = 1usize;
    while let Some(a) = args.next() {
        if a == "--only" {
            only = args.next();
        } else if a == "--parts" {
            let Some(n) = args.next().and_then(|n| n.parse().ok()) else {
                eprintln!("--parts needs a number");
                return ExitCode::FAILURE;
            };
            parts = n;
        } else if a == "--set" {
            let Some(s) = args.next() else {
                eprintln!("--set needs KEY=VALUE");
                return ExitCode::FAILURE;
            };
            sets.push(s);
        } else if file.is_none() {
            file = Some(a);
        } else if let Ok(n) = a.parse() {
            rounds = n;
        } else {
            eprintln!("unexpected argument {a:?}");
            return ExitCode::FAILURE;
        }
    }
    let Some(file) = file else {
        eprintln!(
            "usage: enginecost SCENARIO [ROUNDS] [--set KEY=VALUE]... \
             [--only scheduler|reference|threads] [--parts N]"
        );
        return ExitCode::FAILURE;
    };
    let build = || -> Result<World, String> {
        let mut spec =
            ScenarioSpec::load(std::path::Path::new(&file), &sets).map_err(|e| e.to_string())?;
        spec.output.timeseries = None;
        spec.output.queue_occupancy = None;
        spec.output.trace = None;
        let scenario = spec.build(&file).map_err(|e| e.to_string())?;
        World::new(scenario).map_err(|e| e.to_string())
    };
    println!("round  scheduler ns/ev  reference ns/ev  threads ns/ev  events  same digest");
    for round in 0..rounds {
        let mut figures = Vec::new();
        let mut digests = Vec::new();
        let mut events = 0;
        let mut engine_figures = String::new();
        for (name, engine) in [
            ("scheduler", None),
            ("reference", Some(Engine::Reference)),
            ("threads", Some(Engine::Threads)),
        ] {
            if only.as_deref().is_some_and(|o| o != name) {
                figures.push(f64::NAN);
                continue;
            }
            let mut w = match build() {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            let trip = dcsim::engine::parallel::line_round_trip(20_000);
            let start = Instant::now();
            let stats = match engine {
                None => w.run(&mut |_| {}),
                Some(e) => match w.run_split(e, parts) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("{e}");
                        return ExitCode::FAILURE;
                    }
                },
            };
            let secs = start.elapsed().as_secs_f64();
            events = stats.events;
            if let Some(p) = w.parallel_stats() {
                let per = |s: f64| s * 1e9 / p.events.max(1) as f64;
                engine_figures = format!(
                    "threads: {} windows, {} events and {} copies sent between parts, {} late; \
                     ns per event summed over the parts: handling {:.1} (busiest part {:.1}), \
                     numbering {:.1}, renumbering {:.1}, waiting {:.1}; a cache line's round \
                     trip between two threads before the run {trip:.0} ns",
                    p.windows,
                    p.crossings,
                    p.messages,
                    p.late,
                    per(p.handle_seconds),
                    per(p.busiest_handle_seconds),
                    per(p.numbering_seconds),
                    per(p.renumber_seconds),
                    per(p.waiting_seconds)
                );
            }
            figures.push(secs * 1e9 / stats.events.max(1) as f64);
            digests.push(Results::collect(&mut w).digest().to_string());
        }
        let same = digests.windows(2).all(|d| d[0] == d[1]);
        println!(
            "{round:>5}  {:>15.1}  {:>15.1}  {:>13.1}  {events:>6}  {same}",
            figures[0], figures[1], figures[2]
        );
        if !engine_figures.is_empty() {
            println!("       {engine_figures}");
        }
        if !same {
            eprintln!("digests differ: {digests:?}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
