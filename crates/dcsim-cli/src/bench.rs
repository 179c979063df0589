//! `dcsim bench`: speed on fixed scenarios. A benchmark prints figures; it never fails on
//! a time budget.

use std::process::ExitCode;

use dcsim::{Results, ScenarioSpec, World};

/// The benchmark scenarios: (name, scenario text, duration, quick duration).
const SCENARIOS: &[(&str, &str, &str, &str)] = &[
    (
        "dumbbell-2flow-dctcp-10g",
        r#"
        [topology]
        kind = "dumbbell"
        pairs = 2
        [transport]
        kind = "tcp"
        cc = "dctcp"
        [[flows]]
        src = 0
        dst = 2
        [[flows]]
        src = 1
        dst = 3
        "#,
        "1s",
        "100ms",
    ),
    (
        "fattree-k8-permutation-dctcp-10g",
        r#"
        [topology]
        kind = "fat-tree"
        k = 8
        [transport]
        kind = "tcp"
        cc = "dctcp"
        [[generators]]
        pattern = { kind = "permutation" }
        "#,
        "50ms",
        "5ms",
    ),
];

fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

pub(crate) fn run(quick: bool, repeat: u32) -> ExitCode {
    println!(
        "{:<34} {:>12} {:>10} {:>14} {:>12} {:>10} {:>10}",
        "scenario", "events", "M ev/s", "M pkt-hops/s", "sim s/wall s", "heap peak", "stale %"
    );
    for (name, text, dur, quick_dur) in SCENARIOS {
        let duration = if quick { quick_dur } else { dur };
        let sets = vec![format!("sim.duration={duration}")];
        let mut runs = Vec::new();
        for _ in 0..repeat {
            let spec = match ScenarioSpec::parse(text, name, &sets).and_then(|s| s.build(name)) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(1);
                }
            };
            let mut world = match World::new(spec) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(1);
                }
            };
            let st = world.run(&mut |_| {});
            let r = Results::collect(&mut world);
            runs.push((st, r.summary["data_drops"].as_u64().unwrap_or(0)));
        }
        runs.sort_by(|a, b| a.0.wall_seconds.total_cmp(&b.0.wall_seconds));
        let (st, _) = runs[runs.len() / 2];
        let w = st.wall_seconds.max(1e-9);
        println!(
            "{:<34} {:>12} {:>10.2} {:>14.2} {:>12.4} {:>10} {:>9.2}%",
            name,
            st.events,
            st.events as f64 / w / 1e6,
            st.packet_hops as f64 / w / 1e6,
            st.sim_end.as_secs_f64() / w,
            st.sched.peak_len,
            100.0 * st.sched.stale as f64 / st.sched.pops.max(1) as f64,
        );
    }
    if let Some(mb) = peak_rss_mb() {
        println!("peak memory (VmHWM) of the whole benchmark process: {mb:.1} MB");
    }
    println!(
        "median of {repeat} run(s) each; single thread; release build recommended (cargo run --release -p dcsim-cli -- bench)"
    );
    ExitCode::SUCCESS
}
