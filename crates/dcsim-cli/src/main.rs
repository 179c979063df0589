//! The `dcsim` command: run, check and show scenarios, list what exists, benchmark.
//!
//! Thin by design: argument parsing and presentation only; everything else is in the
//! `dcsim` library. Progress and summaries go to stderr, data to files. Exit codes: 0
//! success, 1 run failure, 2 usage or configuration error.
#![forbid(unsafe_code)]

mod bench;
mod list;
mod sweep;

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use dcsim::estimate::Estimate;
use dcsim::{ConfigError, Results, ScenarioSpec, World};
use dcsim_columnar::Format;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// dcsim: a fast, deterministic packet-level simulator for datacenter transports.
#[derive(Parser)]
#[command(name = "dcsim", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario and write its results.
    Run {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Results directory (default: results/<scenario name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Master seed (overrides sim.seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario value: --set topology.pairs=4 --set flows[0].size=1MB
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
        /// Table files: csv, parquet (Arrow types, units in the schema metadata) or both.
        #[arg(long, default_value = "csv", value_parser = clap::value_parser!(Format))]
        format: Format,
        /// Split the network by pods between this many threads, with results identical to
        /// one thread's (ADR 0010). A scenario that cannot be split runs on one thread,
        /// with a note saying why.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        threads: u16,
    },
    /// Run a scenario over the cross product of --vary values and seeds, in parallel,
    /// resumably; writes one folder per run and index.csv (docs/sweep.md).
    Sweep(sweep::Args),
    /// Validate a scenario without running it.
    Check {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Override a scenario value.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Also say how long the run will take on this machine: it runs for SECONDS of
        /// wall time (default 4) and extrapolates.
        #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "4")]
        estimate: Option<f64>,
    },
    /// Print the fully resolved scenario, every default filled in.
    Show {
        /// Scenario file (TOML).
        file: PathBuf,
        /// Override a scenario value.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
    },
    /// List topologies, transports, congestion controllers, queue disciplines, traffic
    /// patterns and example scenarios.
    List,
    /// Draw a run's figures into RUN_DIR/plots: queues, goodput and windows over time (when
    /// sampled), the FCT distribution and slowdown per flow size, links per tier.
    Plot {
        /// A results folder of `dcsim run`.
        dir: PathBuf,
        /// Only these flows in the time panels (default: every sampled flow).
        #[arg(long, value_delimiter = ',')]
        flows: Vec<u32>,
    },
    /// Write DIR/report.html: one self-contained page (figures embedded, tables, the
    /// parameters that ran) for a run, a sweep or a reproduction folder.
    Report {
        /// A folder of `dcsim run`, `dcsim sweep` or `dcsim repro`.
        dir: PathBuf,
    },
    /// Put runs side by side in OUT (runs.csv, buckets.csv, plots/, report.html): FCT and
    /// slowdown per flow size (median and p99 with 95 % intervals), FCT distributions, a
    /// port's queue over time and queues per tier, on shared axes. Runs of `dcsim run`, the
    /// kernel twin's folders and folders of runs (a reproduction, a sweep) alike.
    Compare {
        /// Results folders: a run, or a folder whose runs/ or subfolders hold runs.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Name of a run in the figures and tables, in the order of the runs (repeat).
        #[arg(long = "name")]
        names: Vec<String>,
        /// The port whose sampled queue is compared, as `node->peer` (default: the first
        /// port every run sampled).
        #[arg(long)]
        port: Option<String>,
        /// Output folder.
        #[arg(long, default_value = "results/compare")]
        out: PathBuf,
    },
    /// Print a shell completion script: `dcsim completions bash > ~/.local/share/bash-completion/completions/dcsim`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Write man pages (dcsim.1 and one per command) into a folder:
    /// `dcsim man --out ~/.local/share/man/man1`.
    Man {
        /// Folder for the pages (created if missing).
        #[arg(long, default_value = "man")]
        out: PathBuf,
    },
    /// Print a built-in example scenario (names: `dcsim list`), or write it to a file, so
    /// an installed dcsim runs its examples anywhere.
    Example {
        /// Example name, with or without `.toml`, e.g. dctcp-dumbbell.
        name: String,
        /// Write it to this file instead (refused if the file exists).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Reproduce a paper experiment (see `dcsim list`): data, result.json and plots, and
    /// a line for each claim tested (REPRODUCED or DIFFERS; the quick form cannot decide)
    /// and each check. Exits 1 if a check fails.
    Repro {
        /// Experiment name, e.g. xpass-convergence.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        name: Option<String>,
        /// Every experiment, one after the other, each in OUT/NAME (default OUT:
        /// results/repro, or results/repro-quick).
        #[arg(long)]
        all: bool,
        /// The short form (seconds to a few minutes; a smoke test that decides no claim).
        #[arg(long)]
        quick: bool,
        /// Output folder (default: results/repro/NAME, or NAME-quick).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Independent runs executed in parallel (default: the number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run every run again instead of reusing complete runs of the same scenario
        /// found in the output folder.
        #[arg(long)]
        fresh: bool,
        /// Print the whole result.json to stdout (it is always written to the folder).
        #[arg(long)]
        json: bool,
        /// Run nothing: list the experiment's runs and which of them the output folder
        /// already holds complete (what a resumed or distributed run has left to do).
        #[arg(long, conflicts_with_all = ["all", "json"])]
        plan: bool,
        /// Run nothing: say how long the runs still to do will take on this machine, each
        /// probed for SECONDS of wall time (default 2), and in all with --jobs.
        #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "2",
              conflicts_with_all = ["all", "json", "plan"])]
        estimate: Option<f64>,
    },
    /// Print the claims and checks of experiments' result.json files as a Markdown table
    /// (the table of docs/reproductions.md is made this way from docs/results/).
    Verdicts {
        /// result.json files (or archived copies, NAME.json), experiment folders, or
        /// folders of them (default: results/repro, where `dcsim repro --all` writes).
        paths: Vec<PathBuf>,
        /// Write into this Markdown file instead of printing: the table between its lines
        /// `<!-- verdicts: ... -->` and `<!-- end of verdicts -->`, a summary (claims
        /// reproduced per experiment) between `<!-- verdict summary: ... -->` and
        /// `<!-- end of verdict summary -->`.
        #[arg(long, value_name = "FILE")]
        into: Option<PathBuf>,
    },
    /// Stress-benchmark the Fastpass-style arbiter: the highest load each allocator
    /// architecture sustains in real time (docs/arbiter.md).
    ArbiterBench {
        /// Node counts.
        #[arg(long, value_delimiter = ',', default_values_t = [256u32, 1024, 4096])]
        nodes: Vec<u32>,
        /// Architectures: serial, pipelined, parallel, shuffle, ring (default all).
        #[arg(long = "arch", value_delimiter = ',')]
        arch: Vec<String>,
        /// Thread counts.
        #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
        threads: Vec<usize>,
        /// Arbiter time replayed per measured run, ms.
        #[arg(long, default_value_t = 50.0)]
        duration_ms: f64,
        /// Runs per trial (median wall time).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Independent searches per row (median reported).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Measure at this offered load (fraction of the ceiling) instead of searching.
        #[arg(long)]
        load: Option<f64>,
        /// Workload seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write the full report as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Allocate with baseline instructions even where the CPU has a fast BMI2 `pdep`
        /// (same schedules; for comparing machines).
        #[arg(long)]
        portable_pass: bool,
        /// A few-second configuration (CI).
        #[arg(long)]
        quick: bool,
    },
    /// Run the fixed benchmark scenarios and print speed figures.
    Bench {
        /// Shorter runs (for CI).
        #[arg(long)]
        quick: bool,
        /// Repetitions of each scenario (the median is reported).
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Also the k = 32 fat-tree (8,192 hosts; several GB and minutes).
        #[arg(long)]
        large: bool,
        /// Only the rows whose name contains one of these (e.g. --only k16,k24).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Also write the rows as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run {
            file,
            out,
            seed,
            sets,
            quiet,
            format,
            threads,
        } => run(&file, out, seed, sets, quiet, format, threads.into()),
        Cmd::Sweep(args) => sweep::run(args),
        Cmd::Check {
            file,
            sets,
            estimate,
        } => match estimate.map(dcsim::estimate::budget).transpose() {
            Err(e) => {
                eprintln!("error: --estimate: {e}");
                ExitCode::from(2)
            }
            Ok(budget) => check(&file, &sets, budget),
        },
        Cmd::Show { file, sets } => match load(&file, &sets) {
            Ok(s) => emit(&s.to_toml()),
            Err(e) => config_error(&e),
        },
        Cmd::List => emit(&list::text()),
        Cmd::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "dcsim", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
        Cmd::Man { out } => man(&out),
        Cmd::Plot { dir, flows } => match dcsim_report::plot_run(&dir, &flows) {
            Ok((plots, drawn)) => {
                let out = dir.join("plots");
                if drawn {
                    for p in &plots {
                        println!("{}", out.join(format!("{}.png", p.file)).display());
                    }
                } else if plots.is_empty() {
                    eprintln!(
                        "nothing to plot: no samples, completed flows or ports in {}",
                        dir.display()
                    );
                } else {
                    eprintln!(
                        "plot specifications in {} (not drawn, see the note above)",
                        out.display()
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Report { dir } => match dcsim_report::report(&dir) {
            Ok(page) => {
                println!("{}", page.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Compare {
            dirs,
            names,
            port,
            out,
        } => match dcsim_report::compare(&dcsim_report::CompareOptions {
            dirs,
            names,
            out,
            port,
        }) {
            Ok(text) => {
                print!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Cmd::Example { name, out } => example(&name, out),
        Cmd::Bench {
            quick,
            repeat,
            large,
            only,
            json,
        } => bench::run(&bench::Options {
            quick,
            repeat: repeat.max(1),
            large,
            only,
            json,
        }),
        Cmd::Verdicts { paths, into } => verdicts(paths, into.as_deref()),
        Cmd::Repro {
            name,
            all,
            quick,
            out,
            jobs,
            fresh,
            json,
            plan,
            estimate,
        } => {
            let jobs =
                jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            match name {
                Some(name) if plan => repro_plan(&name, quick, out, fresh),
                Some(name) if estimate.is_some() => {
                    repro_estimate(&name, quick, out, fresh, jobs, estimate.unwrap_or(2.0))
                }
                Some(name) if !all => repro(&name, quick, out, jobs, fresh, json),
                _ => repro_all(quick, out, jobs, fresh),
            }
        }
        Cmd::ArbiterBench {
            nodes,
            arch,
            threads,
            duration_ms,
            runs,
            repeats,
            load,
            seed,
            json,
            portable_pass,
            quick,
        } => {
            let mut cfg = dcsim_arbiter_bench::bench::BenchConfig {
                nodes,
                threads,
                duration_ms,
                runs,
                repeats,
                load,
                seed,
                quick,
                portable_pass,
                ..Default::default()
            };
            if !arch.is_empty() {
                match arch
                    .iter()
                    .map(|a| a.parse())
                    .collect::<Result<Vec<_>, _>>()
                {
                    Ok(a) => cfg.architectures = a,
                    Err(_) => {
                        eprintln!(
                            "error: --arch: expected serial, pipelined, parallel, shuffle or ring, got {arch:?}"
                        );
                        return ExitCode::from(2);
                    }
                }
            }
            arbiter_bench(&cfg, json)
        }
    }
}

/// Writes `text` to standard output. A reader that has gone away (`dcsim list | head`) is
/// not an error: the output was wanted only that far.
fn emit(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: writing to standard output: {e}");
            ExitCode::from(1)
        }
    }
}

/// `dcsim example NAME [--out FILE]`.
fn example(name: &str, out: Option<PathBuf>) -> ExitCode {
    let Some(text) = list::example(name) else {
        let names: Vec<&str> = list::EXAMPLES
            .iter()
            .map(|(f, _)| f.trim_end_matches(".toml"))
            .collect();
        eprintln!(
            "error: no example {name:?}; the examples are: {}",
            names.join(", ")
        );
        return ExitCode::from(2);
    };
    let Some(path) = out else {
        return emit(text);
    };
    if path.exists() {
        eprintln!(
            "error: {} exists; not overwriting it (choose another --out)",
            path.display()
        );
        return ExitCode::from(2);
    }
    match dcsim::metrics::atomic_write(&path, text.as_bytes()) {
        Ok(()) => {
            println!("wrote {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", path.display());
            ExitCode::from(1)
        }
    }
}

fn arbiter_bench(cfg: &dcsim_arbiter_bench::bench::BenchConfig, json: Option<PathBuf>) -> ExitCode {
    let report = match dcsim_arbiter_bench::bench::run(cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.table());
    if let Some(path) = json {
        let mut text = serde_json::to_vec_pretty(&report).unwrap_or_default();
        text.push(b'\n');
        if let Err(e) = dcsim::metrics::atomic_write(&path, &text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

/// The folder of experiment `name`: `out`, or results/repro/NAME (NAME-quick).
fn repro_out(name: &str, quick: bool, out: Option<PathBuf>) -> PathBuf {
    out.unwrap_or_else(|| {
        Path::new("results/repro").join(if quick {
            format!("{name}-quick")
        } else {
            name.to_string()
        })
    })
}

/// What `--plan` and `--estimate` look at: experiment `name`'s folder, its runs planned
/// as one job would; an unknown name is an error (exit 2).
fn plan_options(
    name: &str,
    quick: bool,
    out: Option<PathBuf>,
    fresh: bool,
) -> Result<dcsim_repro::Options, ExitCode> {
    if let Err(e) = dcsim_repro::experiment(name) {
        eprintln!("error: {e}");
        return Err(ExitCode::from(2));
    }
    Ok(dcsim_repro::Options {
        quick,
        out: repro_out(name, quick, out),
        jobs: 1,
        fresh,
        siblings: None,
    })
}

/// `dcsim repro NAME --plan`: the experiment's runs, each complete or to run.
fn repro_plan(name: &str, quick: bool, out: Option<PathBuf>, fresh: bool) -> ExitCode {
    let opts = match plan_options(name, quick, out, fresh) {
        Ok(o) => o,
        Err(code) => return code,
    };
    match dcsim_repro::plan(name, &opts) {
        Ok(None) => {
            println!("{name} runs the other ExpressPass experiments; plan each of them");
            ExitCode::SUCCESS
        }
        Ok(Some(runs)) => {
            for r in &runs {
                let state = if r.complete { "complete" } else { "to run" };
                println!("{}\t{state}", r.name);
            }
            let done = runs.iter().filter(|r| r.complete).count();
            println!(
                "{name}: {} runs in {}, {done} complete, {} to run",
                runs.len(),
                opts.out.display(),
                runs.len() - done
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `dcsim repro NAME --estimate`: each run still to do, probed, and the whole with `jobs`.
fn repro_estimate(
    name: &str,
    quick: bool,
    out: Option<PathBuf>,
    fresh: bool,
    jobs: usize,
    seconds: f64,
) -> ExitCode {
    use dcsim::estimate::human_seconds;
    let opts = match plan_options(name, quick, out, fresh) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let budget = match dcsim::estimate::budget(seconds) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: --estimate: {e}");
            return ExitCode::from(2);
        }
    };
    let runs = match dcsim_repro::estimate(name, &opts, budget) {
        Ok(Some(runs)) => runs,
        Ok(None) => {
            println!("{name} runs the other ExpressPass experiments; estimate each of them");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut times = Vec::new();
    let mut unknown = 0;
    for r in &runs {
        match &r.estimate {
            None => println!("{}	complete", r.name),
            Some(Ok(e)) => {
                println!("{}	{e}", r.name);
                times.push(e.seconds);
            }
            Some(Err(e)) => {
                println!("{}	no estimate: {e}", r.name);
                unknown += 1;
            }
        }
    }
    // Longest first, each to the job that frees first (how --jobs hands runs out, near
    // enough: it takes them in the experiment's order).
    times.sort_by(|a, b| b.total_cmp(a));
    let mut free = vec![0.0f64; jobs.max(1)];
    for t in &times {
        let j = (0..free.len())
            .min_by(|&a, &b| free[a].total_cmp(&free[b]))
            .unwrap_or(0);
        free[j] += t;
    }
    let wall = free.iter().copied().fold(0.0, f64::max);
    let total: f64 = times.iter().sum();
    let longest = times.first().copied().unwrap_or(0.0);
    print!(
        "{name}: {} runs to run, {} of run time; with --jobs {jobs} about {} (the longest run {})",
        times.len() + unknown,
        human_seconds(total),
        human_seconds(wall),
        human_seconds(longest)
    );
    if unknown > 0 {
        print!(", not counting {unknown} run(s) without an estimate");
    }
    println!();
    ExitCode::SUCCESS
}

fn repro(
    name: &str,
    quick: bool,
    out: Option<PathBuf>,
    jobs: usize,
    fresh: bool,
    json: bool,
) -> ExitCode {
    if let Err(e) = dcsim_repro::experiment(name) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    let out = repro_out(name, quick, out);
    let opts = dcsim_repro::Options {
        quick,
        out,
        jobs,
        fresh,
        siblings: None,
    };
    match run_one(name, &opts) {
        Some(o) => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&o.result).unwrap_or_default()
                );
            }
            if o.failed_checks() > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        None => ExitCode::from(1),
    }
}

/// Runs one experiment, prints its claims and checks and where its results are; `None`
/// (with the error printed) if it could not run.
fn run_one(name: &str, opts: &dcsim_repro::Options) -> Option<dcsim_repro::Outcome> {
    let wall = std::time::Instant::now();
    match dcsim_repro::run(name, opts) {
        Ok(o) => {
            for line in o.lines() {
                println!("{name}: {line}");
            }
            eprintln!(
                "{name}: done in {:.1} s; result.json, CSV data and plots in {}",
                wall.elapsed().as_secs_f64(),
                opts.out.display()
            );
            let failed = o.failed_checks();
            if failed > 0 {
                eprintln!("error: {name}: {failed} check(s) failed (lines marked FAILED above)");
            }
            Some(o)
        }
        Err(e) => {
            eprintln!("error: {name}: {e}");
            None
        }
    }
}

/// `dcsim verdicts`: the claims of experiments' results as a Markdown table, printed or
/// written into a file between its markers.
fn verdicts(paths: Vec<PathBuf>, into: Option<&Path>) -> ExitCode {
    use dcsim_repro::table;
    let paths = if paths.is_empty() {
        vec![PathBuf::from("results/repro")]
    } else {
        paths
    };
    let results = match table::read(&paths) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(file) = into else {
        print!("{}", table::markdown(&results));
        return ExitCode::SUCCESS;
    };
    let written = std::fs::read_to_string(file)
        .map_err(|e| e.to_string())
        .and_then(|doc| table::fill(&doc, &results))
        .and_then(|doc| {
            dcsim::metrics::atomic_write(file, doc.as_bytes()).map_err(|e| e.to_string())
        });
    match written {
        Ok(()) => {
            eprintln!(
                "the verdicts of {} experiment(s) written into {}",
                results.len(),
                file.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            ExitCode::from(1)
        }
    }
}

/// `dcsim repro --all`: every experiment in `out/NAME`; xpass-zero-loss reads the
/// microbenchmarks' folders there. Goes on after a failure; exits 1 if any experiment
/// failed to run or failed a check.
fn repro_all(quick: bool, out: Option<PathBuf>, jobs: usize, fresh: bool) -> ExitCode {
    let root = out.unwrap_or_else(|| {
        PathBuf::from(if quick {
            "results/repro-quick"
        } else {
            "results/repro"
        })
    });
    let mut bad = Vec::new();
    for e in dcsim_repro::EXPERIMENTS {
        let opts = dcsim_repro::Options {
            quick,
            out: root.join(e.name),
            jobs,
            fresh,
            siblings: Some(root.clone()),
        };
        if run_one(e.name, &opts).is_none_or(|o| o.failed_checks() > 0) {
            bad.push(e.name);
        }
    }
    if bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("error: failed: {}", bad.join(", "));
        ExitCode::from(1)
    }
}

/// Writes dcsim.1 and a page per command (dcsim-run.1, ...) into `out`.
fn man(out: &Path) -> ExitCode {
    let cmd = <Cli as clap::CommandFactory>::command();
    let written = std::fs::create_dir_all(out).and_then(|()| clap_mangen::generate_to(cmd, out));
    match written {
        Ok(()) => {
            eprintln!(
                "man pages in {}; read one with man -l {}",
                out.display(),
                out.join("dcsim.1").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write man pages to {}: {e}", out.display());
            ExitCode::from(1)
        }
    }
}

fn load(file: &Path, sets: &[String]) -> Result<dcsim::Scenario, ConfigError> {
    ScenarioSpec::load(file, sets)?.build(&file.display().to_string())
}

/// One line per traffic generator of `s`: what it will produce (its flow count when
/// known, else its arrival rate, caps and load).
fn generators(sources: &[(dcsim::workload::FlowSource, u32)]) -> Vec<String> {
    sources
        .iter()
        .map(|(src, _)| {
            let i = src.info();
            let mut parts = vec![i.kind.to_string()];
            if let Some(size) = &i.size {
                parts.push(format!("sizes {size}"));
            }
            match (i.flows, i.limits.max_flows, i.flows_per_s, i.limits.until) {
                (Some(n), ..) => parts.push(format!("{n} flows")),
                (None, Some(n), ..) => parts.push(format!("up to {n} flows")),
                (None, None, Some(r), Some(t)) => {
                    parts.push(format!("about {:.0} flows before {t}", r * t.as_secs_f64()))
                }
                _ => parts.push("no end of its own (the run's duration ends it)".into()),
            }
            if let Some(r) = i.flows_per_s {
                parts.push(format!("{r:.0} flows/s"));
            }
            if let Some(q) = i.queries_per_s {
                parts.push(format!("{q:.0} queries/s"));
            }
            if let Some(l) = &i.load {
                let basis = match l.relative_to {
                    dcsim::workload::LoadBasis::HostLinks => "the host links",
                    dcsim::workload::LoadBasis::TorUplinks => "the ToR uplinks",
                };
                parts.push(format!(
                    "load {} of {basis} ({:.0} Gb/s)",
                    l.load,
                    l.capacity_bps / 1e9
                ));
            }
            parts.join(", ")
        })
        .collect()
}

/// What a scenario may legally say but almost certainly does not mean: an ECN threshold
/// at or above its buffer (DCTCP would never see a mark before drops), an offered load at
/// or above the capacity it is relative to, explicit flows that start after the run ends.
fn warnings(s: &dcsim::Scenario, sources: &[(dcsim::workload::FlowSource, u32)]) -> Vec<String> {
    use dcsim::net::qdisc::{Amount, QdiscSpec};
    let mut out = Vec::new();
    // Packets as full frames, as buffers given in bytes are.
    let bytes = |a: Amount| match a {
        Amount::Bytes(b) => b,
        Amount::Packets(p) => p * u64::from(dcsim::net::wire::MAX_WIRE_BYTES),
    };
    let (queue, nic) = s.ports();
    for (key, q) in [("queue", queue), ("nic", nic)] {
        if let QdiscSpec::Ecn(c) = q
            && bytes(c.mark_threshold) >= bytes(c.buffer)
        {
            out.push(format!(
                "{key}.mark_threshold ({}) is at or above {key}.buffer ({}): the queue drops before it marks, so ECN senders never see a mark",
                c.mark_threshold, c.buffer
            ));
        }
    }
    let uplinks = s.source_params.tor_uplink_capacity.map(|r| r.bps() as f64);
    for (i, (src, _)) in sources.iter().enumerate() {
        let info = src.info();
        let Some(l) = info.load else { continue };
        if l.load >= 1.0 {
            out.push(format!(
                "generators[{i}]: load {} is at or above the capacity it is relative to: queues and flow times grow without bound",
                l.load
            ));
            continue;
        }
        // What reaches the ToR uplinks: the flows that leave their rack.
        let (Some(share), Some(cap)) = (info.leaving_rack, uplinks) else {
            continue;
        };
        let realised = l.offered_bps * share / cap;
        let tor = l.relative_to == dcsim::workload::LoadBasis::TorUplinks;
        if tor && share < 0.95 {
            out.push(format!(
                "generators[{i}]: load {} of the ToR uplinks counts every flow, but only {:.0} % of flows leave their rack, so the uplinks carry about {realised:.2}; destinations = \"inter-rack\" puts the whole load on them (docs/workloads.md)",
                l.load,
                share * 100.0
            ));
        } else if !tor && realised >= 1.0 {
            out.push(format!(
                "generators[{i}]: load {} of the host links offers the ToR uplinks about {realised:.2} of their capacity ({:.0} % of flows leave their rack): they saturate, queues and flow times grow without bound",
                l.load,
                share * 100.0
            ));
        }
    }
    if let Some(end) = s.spec.sim.duration {
        let late: Vec<String> = s
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.start >= dcsim::engine::Time::ZERO + end)
            .map(|(i, _)| format!("flows[{i}]"))
            .take(5)
            .collect();
        if !late.is_empty() {
            let (verb, they) = if late.len() == 1 {
                ("starts", "it never runs")
            } else {
                ("start", "they never run")
            };
            out.push(format!(
                "{} {verb} at or after the end of the run ({end}): {they}",
                late.join(", ")
            ));
        }
    }
    out
}

/// `dcsim check FILE`: validates, describes the generators and the ports' disciplines,
/// warns, and with a probe `budget` says how long the run will take.
fn check(file: &Path, sets: &[String], budget: Option<Duration>) -> ExitCode {
    let (s, sources) = match load(file, sets).and_then(|s| {
        let sources = s.sources()?;
        Ok((s, sources))
    }) {
        Ok(x) => x,
        Err(e) => return config_error(&e),
    };
    let links = s.graph.links.len();
    let switches = s.graph.nodes.len() - s.graph.hosts.len();
    println!(
        "{}: ok: {} hosts, {switches} switches, {links} links, {} flows listed",
        file.display(),
        s.graph.hosts.len(),
        s.flows.len()
    );
    for g in generators(&sources) {
        println!("  generator {g}");
    }
    for n in &s.port_notes {
        println!("  {n}");
    }
    for w in warnings(&s, &sources) {
        eprintln!("warning: {w}");
    }
    match budget.map(|b| Estimate::of(s, b)) {
        None => ExitCode::SUCCESS,
        Some(Ok(e)) => {
            println!("  estimate: {e}");
            ExitCode::SUCCESS
        }
        Some(Err(e)) => config_error(&e),
    }
}

fn config_error(e: &ConfigError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}

/// Whether results can be committed to `out`: its parent folder exists (or is created) and
/// takes a new file, and `out` is not a file.
fn writable_parent(out: &Path) -> std::io::Result<()> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    if std::fs::symlink_metadata(out).is_ok_and(|m| !m.is_dir()) {
        return Err(std::io::Error::other("it exists and is not a folder"));
    }
    let probe = parent.join(format!(".dcsim-probe-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

fn run(
    file: &Path,
    out: Option<PathBuf>,
    seed: Option<u64>,
    mut sets: Vec<String>,
    quiet: bool,
    format: Format,
    threads: usize,
) -> ExitCode {
    if let Some(s) = seed {
        sets.push(format!("sim.seed={s}"));
    }
    let scenario = match load(file, &sets) {
        Ok(s) => s,
        Err(e) => return config_error(&e),
    };
    let out = out.unwrap_or_else(|| Path::new("results").join(&scenario.name));
    // Find an unwritable --out before simulating, not after.
    if let Err(e) = writable_parent(&out) {
        eprintln!("error: cannot write results to {}: {e}", out.display());
        return ExitCode::from(1);
    }
    // Held until the results are committed: a second run into the same folder is refused
    // now, not after its simulation.
    let _lock = match dcsim::metrics::DirLock::take(&out) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot write results to {}: {e}", out.display());
            return ExitCode::from(1);
        }
    };
    let mut world = match World::new(scenario) {
        Ok(w) => w,
        Err(e) => return config_error(&e),
    };
    // The generators as the world built them: a pattern is built once.
    for w in warnings(world.scenario(), world.sources()) {
        eprintln!("warning: {w}");
    }
    world.spill_time_series_beside(&out);
    let mut split = None;
    if threads > 1 {
        let bar = progress_bar(&world, quiet);
        bar.set_message(format!("on {threads} threads (no progress shown)"));
        let result = world.run_split(dcsim::split::Engine::Threads, threads);
        bar.finish_and_clear();
        match result {
            Ok(stats) => split = Some(stats),
            Err(e) => {
                if !quiet {
                    eprintln!("note: not split between {threads} threads: {e}");
                    eprintln!("note: running on one thread");
                }
                if world.is_spent() {
                    // It began on the threads and stopped: start again from the scenario.
                    world = match World::new(world.scenario().clone()) {
                        Ok(w) => w,
                        Err(e) => return config_error(&e),
                    };
                    world.spill_time_series_beside(&out);
                }
            }
        }
    }
    let stats = match split {
        Some(stats) => stats,
        None => {
            let bar = progress_bar(&world, quiet);
            let stats = world.run(&mut |p| {
                match p.end {
                    Some(_) => bar.set_position(p.now.as_ns()),
                    None => bar.set_position(p.flows_done.0),
                }
                bar.set_message(format!("{:.1} M events", p.events as f64 / 1e6));
            });
            bar.finish_and_clear();
            stats
        }
    };
    let results = Results::collect(&mut world);
    if let Err(e) = dcsim_columnar::write_results(&results, &out, format, &[]) {
        eprintln!("error: cannot write results to {}: {e}", out.display());
        return ExitCode::from(1);
    }
    if !quiet {
        eprintln!("{}", results.brief());
        eprintln!("{}", results.port_table(4));
        eprintln!(
            "simulated {:.3} ms in {:.2} s{}; results in {}",
            stats.sim_end.as_secs_f64() * 1e3,
            stats.wall_seconds,
            if split.is_some() {
                format!(" on {threads} threads")
            } else {
                String::new()
            },
            out.display()
        );
    }
    ExitCode::SUCCESS
}

fn progress_bar(world: &World, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let spec = &world.scenario().spec;
    // With a duration, the share of simulated time done gives an estimate of the time left;
    // a run that ends when its flows are done has no fixed total to measure against.
    let (len, what, left) = match spec.sim.duration {
        Some(d) => (d.as_ns(), "simulated time", ", about {eta} left"),
        None => (world.flows().len() as u64, "flows done", ""),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{bar:40}} {{percent:>3}}% of {what}  {{msg}}  [{{elapsed_precise}}{left}]"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
