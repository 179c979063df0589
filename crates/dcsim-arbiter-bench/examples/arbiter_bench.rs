//! Allocator stress benchmark: finds the highest load each architecture sustains.
//!
//! ```text
//! cargo run --release -p dcsim-arbiter-bench --example arbiter_bench -- --quick
//! cargo run --release -p dcsim-arbiter-bench --example arbiter_bench -- \
//!     --nodes 1024 --arch serial,ring,pipelined --threads 1,2 --json out.json
//! ```
//!
//! Prints one row per node count, architecture and thread count (sustained Tbps, fraction of
//! the N x 10 Gbps ceiling, what limited it, latency percentiles, Jain fairness) and writes
//! the full report as JSON with `--json`. `--quick` finishes in a few seconds.

use dcsim_arbiter::Fairness;
use dcsim_arbiter_bench::bench::{self, BenchConfig};

fn main() {
    let mut cfg = BenchConfig::default();
    let mut json = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--nodes" => cfg.nodes = list(&value()),
            "--arch" => cfg.architectures = list(&value()),
            "--threads" => cfg.threads = list(&value()),
            "--seed" => cfg.seed = parse(&value()),
            "--duration-ms" => cfg.duration_ms = parse(&value()),
            "--runs" => cfg.runs = parse(&value()),
            "--repeats" => cfg.repeats = parse(&value()),
            "--batch-slots" => cfg.batch_slots = parse(&value()),
            "--load" => cfg.load = Some(parse(&value())),
            "--resolution" => cfg.resolution = parse(&value()),
            "--fairness" => cfg.fairness = fairness(&value()),
            "--parallel-rounds" => cfg.parallel_rounds = parse(&value()),
            "--max-growth" => cfg.max_growth = parse(&value()),
            "--max-retries" => cfg.max_retries = parse(&value()),
            "--sample-every" => cfg.sample_every = parse(&value()),
            "--contention-load" => cfg.contention_load = Some(parse(&value())),
            "--no-contention" => cfg.contention_load = None,
            "--portable-pass" => cfg.portable_pass = true,
            "--json" => json = Some(value()),
            "--quick" => cfg.quick = true,
            "--help" | "-h" => usage(""),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    let report = bench::run(&cfg).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    print!("{}", report.table());
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report).expect("report serialises");
        std::fs::write(&path, text).unwrap_or_else(|e| {
            eprintln!("error: cannot write {path}: {e}");
            std::process::exit(1);
        });
    }
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse()
        .unwrap_or_else(|_| usage(&format!("bad value {s:?}")))
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').map(parse).collect()
}

/// `batch`, or `rr:<quantum>:<rounds>` for round-robin.
fn fairness(s: &str) -> Fairness {
    match s.split(':').collect::<Vec<_>>()[..] {
        ["batch"] => Fairness::Batch,
        ["rr", q, r] => Fairness::RoundRobin {
            quantum_slots: parse(q),
            rounds: parse(r),
        },
        _ => usage("--fairness is batch or rr:<quantum>:<rounds>"),
    }
}

fn usage(msg: &str) -> ! {
    if !msg.is_empty() {
        eprintln!("error: {msg}");
    }
    eprintln!(
        "usage: arbiter_bench [--quick] [--nodes 256,1024,4096] \
         [--arch serial,pipelined,parallel,shuffle,ring] [--threads 1,2] [--duration-ms 50] \
         [--runs 3] [--repeats 3] [--seed 1] [--batch-slots 64] [--load F] [--resolution F] \
         [--fairness batch|rr:Q:R] [--parallel-rounds 2] [--max-growth 0.01] \
         [--max-retries 5] [--sample-every 16] [--contention-load 0.8 | --no-contention] \
         [--portable-pass] [--json FILE]"
    );
    std::process::exit(2);
}
