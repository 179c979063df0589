//! `dcsim bench`: speed on fixed scenarios. A benchmark prints figures; it never fails on
//! a time budget.
//!
//! The fat-tree rows are DCTCP permutations (one long flow per host) on k-ary fat-trees of
//! growing size with the settings of the htsim anchor's twin scenario (10 Gb/s, 1 µs
//! links, 500-packet buffers, K = 15), so the per-hop cost can be followed as the fabric
//! grows and compared with htsim side by side (`validation/htsim-side-by-side.sh`).

use std::path::PathBuf;
use std::process::ExitCode;

use dcsim::{Results, ScenarioSpec, World};
use serde_json::json;

/// What to run.
pub(crate) struct Options {
    pub quick: bool,
    pub repeat: u32,
    pub large: bool,
    pub only: Vec<String>,
    pub json: Option<PathBuf>,
}

const DUMBBELL: &str = r#"
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
"#;

/// A DCTCP permutation on a k-ary fat-tree, as the htsim anchor's fat-tree mode.
fn fat_tree(k: u32) -> String {
    format!(
        r#"
    [topology]
    kind = "fat-tree"
    k = {k}
    [queue]
    kind = "ecn"
    buffer = "500pkts"
    mark_threshold = "15pkts"
    [transport]
    kind = "tcp"
    cc = "dctcp"
    [[generators]]
    pattern = {{ kind = "permutation" }}
"#
    )
}

/// How this binary was built: "pgo" from `tools/pgo/build.sh` (which sets `DCSIM_BUILD`),
/// else "release" or "debug". Figures of different builds are not comparable.
const BUILD: &str = match option_env!("DCSIM_BUILD") {
    Some(b) => b,
    None if cfg!(debug_assertions) => "debug",
    None => "release",
};

/// The rows: (name, scenario text, duration, quick duration, only with --large).
fn scenarios() -> Vec<(&'static str, String, &'static str, &'static str, bool)> {
    vec![
        (
            "dumbbell-2flow-dctcp-10g",
            DUMBBELL.to_string(),
            "1s",
            "100ms",
            false,
        ),
        (
            "fattree-k8-permutation-dctcp",
            fat_tree(8),
            "50ms",
            "5ms",
            false,
        ),
        (
            "fattree-k16-permutation-dctcp",
            fat_tree(16),
            "10ms",
            "1ms",
            false,
        ),
        (
            "fattree-k24-permutation-dctcp",
            fat_tree(24),
            "4ms",
            "0.4ms",
            false,
        ),
        (
            "fattree-k32-permutation-dctcp",
            fat_tree(32),
            "2ms",
            "0.2ms",
            true,
        ),
    ]
}

/// Peak resident memory of the process since the last reset, MB (Linux).
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Resets the peak so that each row reports its own (Linux: `clear_refs` 5); false where
/// that is not possible, and then the peak is of the whole process so far.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub(crate) fn run(o: &Options) -> ExitCode {
    println!(
        "{:<32} {:>8} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "scenario",
        "hosts",
        "events",
        "M ev/s",
        "M hops/s",
        "ns/hop",
        "ev/hop",
        "peak MB",
        "stale %"
    );
    let mut rows = Vec::new();
    for (name, text, dur, quick_dur, large) in scenarios() {
        if (large && !o.large)
            || (!o.only.is_empty() && !o.only.iter().any(|w| name.contains(w.as_str())))
        {
            continue;
        }
        let duration = if o.quick { quick_dur } else { dur };
        let sets = vec![format!("sim.duration=\"{duration}\"")];
        let mut runs = Vec::new();
        let mut hosts = 0;
        let per_row = reset_peak();
        for _ in 0..o.repeat {
            let spec = match ScenarioSpec::parse(&text, name, &sets).and_then(|s| s.build(name)) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(1);
                }
            };
            hosts = spec.graph.hosts.len();
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
        let peak = peak_rss_mb();
        runs.sort_by(|a, b| a.0.wall_seconds.total_cmp(&b.0.wall_seconds));
        let (st, _) = runs[runs.len() / 2];
        let w = st.wall_seconds.max(1e-9);
        let hops = st.packet_hops.max(1) as f64;
        let row = json!({
            "scenario": name,
            "hosts": hosts,
            "sim_ms": st.sim_end.as_secs_f64() * 1e3,
            "events": st.events,
            "packet_hops": st.packet_hops,
            "wall_seconds": st.wall_seconds,
            "m_events_per_s": st.events as f64 / w / 1e6,
            "m_hops_per_s": hops / w / 1e6,
            "ns_per_hop": w * 1e9 / hops,
            "events_per_hop": st.events as f64 / hops,
            "peak_mb": peak,
            "peak_is_per_row": per_row,
            "peak_pending_events": st.sched.peak_len,
            "stale_fraction": st.sched.stale as f64 / st.sched.pops.max(1) as f64,
        });
        println!(
            "{:<32} {:>8} {:>11} {:>8.2} {:>9.2} {:>9.1} {:>9.3} {:>9} {:>7.2}%",
            name,
            hosts,
            st.events,
            st.events as f64 / w / 1e6,
            hops / w / 1e6,
            w * 1e9 / hops,
            st.events as f64 / hops,
            peak.map_or("?".into(), |m| format!("{m:.0}")),
            100.0 * st.sched.stale as f64 / st.sched.pops.max(1) as f64,
        );
        rows.push(row);
    }
    println!(
        "median of {} run(s) each, single thread, {BUILD} build; ns/hop: wall time per packet crossing a link; peak MB: resident memory{}",
        o.repeat,
        if reset_peak() {
            " of each row"
        } else {
            " of the process so far"
        }
    );
    if let Some(path) = &o.json {
        let doc = json!({
            "dcsim_version": env!("CARGO_PKG_VERSION"),
            "build": BUILD,
            "quick": o.quick,
            "repeat": o.repeat,
            "rows": rows,
        });
        let mut bytes = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        bytes.push(b'\n');
        if let Err(e) = dcsim::metrics::atomic_write(path, &bytes) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
