//! `dcsim sweep`: the command line over `dcsim-sweep` (docs/sweep.md).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dcsim_sweep::{Plan, SweepError, SweepSpec};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Rows of the index shown on the terminal at the end.
const TABLE_ROWS: usize = 40;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Scenario file (TOML).
    file: PathBuf,
    /// A key path and its values: --vary transport.cc=dctcp,reno (repeatable; the runs
    /// are the cross product).
    #[arg(long, value_name = "PATH=V1,V2,...")]
    vary: Vec<String>,
    /// A named set of overrides, one series of the sweep: --variant
    /// xpass:transport.kind=expresspass (repeatable; the variants are one axis, crossed
    /// with the --vary paths; the name labels folders, index rows and plots).
    #[arg(long, value_name = "NAME:PATH=VALUE,...")]
    variant: Vec<String>,
    /// Run every point with N seeds: sim.seed, sim.seed+1, ...
    #[arg(long, value_name = "N")]
    seeds: Option<u64>,
    /// Runs executed at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Output folder (default: results/sweep/<scenario name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Override a scenario value in every run.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Extra index column from each run's summary.json: --column p999=/fct_us/p999
    #[arg(long = "column", value_name = "NAME=/json/pointer")]
    columns: Vec<String>,
    /// Plot headline results against this varied path (numeric values; repeatable):
    /// plots/sweep_<path>.png and .svg.
    #[arg(long, value_name = "PATH")]
    plot: Vec<String>,
    /// Print nothing but errors.
    #[arg(long, short)]
    quiet: bool,
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn exit(e: &SweepError) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(match e {
        SweepError::Config(_) => 2,
        SweepError::Io(_) => 1,
    })
}

pub(crate) fn run(a: Args) -> ExitCode {
    let spec = SweepSpec {
        file: a.file,
        vary: a.vary,
        variants: a.variant,
        seeds: a.seeds,
        sets: a.sets,
        out: a.out,
        columns: a.columns,
        text: None,
    };
    let mut plan = match Plan::new(&spec) {
        Ok(p) => p,
        Err(e) => return exit(&e),
    };
    if let Some(x) = a
        .plot
        .iter()
        .find(|x| !plan.axes.iter().any(|ax| &ax.path == *x))
    {
        let varied: Vec<&str> = plan.axes.iter().map(|ax| ax.path.as_str()).collect();
        return exit(&SweepError::Config(format!(
            "--plot {x}: not a varied path (varied: {})",
            varied.join(", ")
        )));
    }
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let c = plan.counts();
    if !a.quiet {
        let seeds = plan.seeds.map_or(String::new(), |n| {
            format!(" x {}", plural(n as usize, "seed"))
        });
        let shape: Vec<String> = plan
            .axes
            .iter()
            .map(|x| x.values.len().to_string())
            .collect();
        eprintln!(
            "sweep {}: {} ({}{seeds}) in {}",
            plan.scenario,
            plural(c.total, "run"),
            if shape.is_empty() {
                "1".into()
            } else {
                shape.join(" x ")
            },
            plan.out.display()
        );
        if c.complete > 0 {
            eprintln!("  skipped {} already complete", plural(c.complete, "run"));
        }
        if c.changed > 0 {
            eprintln!(
                "  re-running {} whose scenario or parameters changed since they ran",
                plural(c.changed, "run")
            );
        }
        if c.incomplete > 0 {
            eprintln!(
                "  re-running {} left incomplete by an earlier sweep",
                plural(c.incomplete, "run")
            );
        }
        if c.to_run() > 0 {
            eprintln!("  running {} on {jobs} jobs", c.to_run());
        }
    }
    let bar = progress_bar(c.to_run() as u64, a.quiet);
    let failed = AtomicUsize::new(0);
    let done = |_: &str, err: Option<&str>| {
        if err.is_some() {
            let n = failed.fetch_add(1, Ordering::Relaxed) + 1;
            bar.set_message(format!("{n} failed"));
        }
        bar.inc(1);
    };
    let res = plan.execute(jobs, &done);
    bar.finish_and_clear();
    if let Err(e) = res {
        return exit(&e);
    }
    // Failed runs first, so they are reported even if the index cannot be written.
    for r in &plan.runs {
        if let Some(e) = &r.error {
            eprintln!("error: run {} failed: {e}", r.name);
        }
    }
    let index = match plan.write_index() {
        Ok(ix) => ix,
        Err(e) => return exit(&e),
    };
    if !a.quiet {
        eprint!(
            "{}",
            index.table(TABLE_ROWS, &plan.columns[dcsim_sweep::HEADLINE.len()..])
        );
        eprintln!("index: {}", plan.out.join("index.csv").display());
    }
    for x in &a.plot {
        match dcsim_sweep::plot_against(&index, x, &plan.out) {
            // Name the picture only if it was drawn (without matplotlib a note says how).
            Ok((p, true)) if !a.quiet => eprintln!(
                "plot: {}",
                plan.out
                    .join("plots")
                    .join(format!("{}.png", p.file))
                    .display()
            ),
            Ok(_) => {}
            Err(e) => return exit(&e),
        }
    }
    let failed = index.failed();
    if failed > 0 {
        eprintln!(
            "error: {} of {} failed; run the same command again to retry them",
            plural(failed, "run"),
            c.total
        );
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    if quiet || len == 0 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs  ETA {eta}  {msg}  [{elapsed_precise}]",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
