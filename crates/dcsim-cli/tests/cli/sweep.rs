//! `dcsim sweep`: folders, index, resume, determinism across --jobs, errors (docs/sweep.md).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::{dcsim, tmp};

/// Two host pairs, a few hundred short Poisson flows in 1.5 ms: a run takes milliseconds
/// and the seed changes the result.
const SCENARIO: &str = "[sim]\nduration = \"2ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\n\
[transport]\nkind = \"tcp\"\n[[generators]]\npattern = { kind = \"poisson\", load = 0.3, \
load_relative_to = \"host-links\", flow_size = { fixed = \"20KB\" }, until = \"1500us\" }\n";

const VARY: [&str; 4] = [
    "--vary",
    "transport.cc=dctcp,reno",
    "--vary",
    "generators[0].pattern.load=0.3,0.6",
];

/// The scratch folder (removed when the guard is dropped), the scenario file in it and
/// the sweep's output folder.
fn setup(name: &str) -> (tempfile::TempDir, String, String) {
    let d = tmp(name);
    let f = d.path().join("s.toml");
    std::fs::write(&f, SCENARIO).unwrap();
    let out = d.path().join("out").display().to_string();
    (d, f.display().to_string(), out)
}

fn sweep(file: &str, out: &str, extra: &[&str]) -> (Output, String) {
    let mut args = vec!["sweep", file, "--out", out];
    args.extend(VARY);
    args.extend(extra);
    let o = dcsim(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o, err)
}

fn summaries(out: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !p.ends_with(dcsim_sweep::DATASET))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (
                name,
                std::fs::read(p.join("summary.json")).unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

fn index(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap()
}

#[test]
fn sweep_runs_the_cross_product_and_resumes() {
    let (_d, f, out) = setup("sweep-resume");
    let outp = Path::new(&out);
    let (o, err) = sweep(&f, &out, &["--jobs", "2"]);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("running 4 on 2 jobs"), "{err}");
    let first = summaries(outp);
    let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "cc=dctcp_load=0.3_seed=0",
            "cc=dctcp_load=0.6_seed=0",
            "cc=reno_load=0.3_seed=0",
            "cc=reno_load=0.6_seed=0"
        ]
    );
    for (n, s) in &first {
        assert!(!s.is_empty(), "{n} has no summary.json");
        let point: Value =
            serde_json::from_slice(&std::fs::read(outp.join(n).join("point.json")).unwrap())
                .unwrap();
        assert_eq!(point["seed"], 0);
        assert_eq!(point["params"].as_object().unwrap().len(), 2);
        assert!(outp.join(n).join("flows.csv").is_file());
    }
    let csv = std::fs::read_to_string(outp.join("index.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    assert!(
        lines[0].starts_with(
            "transport.cc,generators[0].pattern.load,seed,status,flows_total,flows_completed,fct_mean_us,"
        ) && lines[0].ends_with(",digest,run"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("dctcp,0.3,0,ok,"), "{}", lines[1]);
    assert!(
        lines[1].ends_with(",cc=dctcp_load=0.3_seed=0"),
        "{}",
        lines[1]
    );
    let ix = index(outp);
    assert_eq!(ix["runs"].as_array().unwrap().len(), 4);
    assert!(ix["runs"][3]["flows_total"].as_u64().unwrap() > 0);
    // Every headline pointer finds its key in a real summary.json (a renamed key would
    // otherwise silently empty a column). A cell is null only where the summary says null:
    // Jain's index without long flows, statistics of a bucket without completed flows.
    let run0: Value = serde_json::from_slice(
        &std::fs::read(
            outp.join(ix["runs"][0]["run"].as_str().unwrap())
                .join("summary.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for (name, pointer) in dcsim_sweep::HEADLINE {
        let v = run0.pointer(pointer);
        assert!(v.is_some(), "column {name}: no {pointer} in summary.json");
        assert_eq!(&ix["runs"][0][*name], v.unwrap(), "column {name}");
        if v.unwrap().is_null() {
            let bucket = name.rsplit('_').next().unwrap();
            assert!(
                *name == "jain_fairness" || run0["fct_buckets"][bucket]["completed"] == 0,
                "column {name} is empty"
            );
        }
    }
    assert!(err.contains("index.csv"), "{err}");

    // Again: everything is skipped, nothing is rewritten (wall_seconds would differ).
    let (o, err) = sweep(&f, &out, &[]);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("skipped 4 runs already complete"), "{err}");
    assert!(!err.contains("running"), "{err}");
    assert_eq!(summaries(outp), first);

    // An interrupted run (no summary.json) is redone, and only it.
    let gone = outp.join(&first[1].0).join("summary.json");
    std::fs::remove_file(&gone).unwrap();
    std::fs::write(outp.join(&first[1].0).join("stale.txt"), "x").unwrap();
    let (o, err) = sweep(&f, &out, &[]);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("skipped 3 runs") && err.contains("re-running 1 run left incomplete"),
        "{err}"
    );
    let after = summaries(outp);
    for i in [0, 2, 3] {
        assert_eq!(after[i], first[i], "{} was run again", first[i].0);
    }
    assert!(gone.is_file());
    assert!(!outp.join(&first[1].0).join("stale.txt").exists());

    // A comment does not change the resolved scenario; a changed value does.
    std::fs::write(&f, format!("# a comment\n{SCENARIO}")).unwrap();
    let (_, err) = sweep(&f, &out, &[]);
    assert!(err.contains("skipped 4 runs"), "{err}");
    let (o, err) = sweep(&f, &out, &["--set", "sim.duration=1800us"]);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("re-running 4 runs whose scenario or parameters changed"),
        "{err}"
    );
}

#[test]
fn sweep_results_do_not_depend_on_jobs() {
    let (d, f, _) = setup("sweep-jobs");
    let mut digests = Vec::new();
    for jobs in ["1", "2"] {
        let out = d.path().join(format!("out{jobs}")).display().to_string();
        let (o, err) = sweep(&f, &out, &["--jobs", jobs, "--seeds", "2", "--quiet"]);
        assert!(o.status.success(), "{err}");
        assert!(err.is_empty(), "--quiet printed: {err}");
        let ix = index(Path::new(&out));
        let d: Vec<(String, String)> = ix["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["run"].as_str().unwrap().to_string(),
                    r["digest"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(d.len(), 8);
        digests.push(d);
    }
    assert_eq!(digests[0], digests[1]);
    assert_eq!(digests[0][0].0, "cc=dctcp_load=0.3_seed=0");
    assert_eq!(digests[0][1].0, "cc=dctcp_load=0.3_seed=1");
    assert_ne!(digests[0][0].1, digests[0][1].1, "the seed changes the run");
}

#[test]
fn sweep_bad_arguments_exit_2_and_name_the_value() {
    let (d, f, out) = setup("sweep-bad");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--vary", "transport.cc=dctcp,bogus"],
            "--vary transport.cc=bogus: ",
        ),
        (
            &["--vary", "generators[0].pattern.load=0.3,-0.5"],
            "--vary generators[0].pattern.load=-0.5: ",
        ),
        (
            &["--vary", "transport.cc"],
            "--vary transport.cc: expected PATH=V1,V2",
        ),
        (
            &["--vary", "transport.cc="],
            "list of values after `=` is empty",
        ),
        (
            &[
                "--vary",
                "transport.cc=reno",
                "--vary",
                "transport.cc=dctcp",
            ],
            "the path is varied twice",
        ),
        (&["--vary", "transport.ccc=reno"], "unknown field `ccc`"),
        (&["--seeds", "0"], "--seeds 0"),
        // Planned before anything runs: refused at once, not after minutes of planning.
        (
            &["--seeds", "100000000"],
            "100000000 runs (100000000 seeds): at most 1000000 in one sweep",
        ),
        (
            &["--column", "x=fct_us"],
            "--column x=fct_us: a JSON pointer",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["sweep", f.as_str(), "--out", out.as_str()];
        all.extend(*args);
        let o = dcsim(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(want),
            "{args:?}: expected {want:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        !d.path().join("out").exists(),
        "a rejected sweep must write nothing"
    );
}

#[test]
fn sweep_failed_run_does_not_stop_the_others() {
    let (_d, f, out) = setup("sweep-fail");
    let outp = Path::new(&out);
    std::fs::create_dir_all(outp).unwrap();
    // A file where a run's folder should be: that run cannot write its results.
    std::fs::write(outp.join("cc=reno_load=0.3_seed=0"), "in the way").unwrap();
    let (o, err) = sweep(
        &f,
        &out,
        &["--column", "p999=/fct_us/p999", "--column", "nope=/no/such"],
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: run cc=reno_load=0.3_seed=0 failed: cannot write results")
            && err.contains("exists and is not a folder"),
        "{err}"
    );
    assert!(err.contains("1 run of 4 failed"), "{err}");
    let ix = index(outp);
    let status: Vec<&str> = ix["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(status[0], "ok");
    assert!(
        status[2].starts_with("failed: cannot write results") && status[2].contains("not a folder"),
        "{status:?}"
    );
    // The file in the way is left as it was.
    assert_eq!(
        std::fs::read_to_string(outp.join("cc=reno_load=0.3_seed=0")).unwrap(),
        "in the way"
    );
    assert_eq!(status.iter().filter(|s| **s == "ok").count(), 3);
    assert!(ix["runs"][0]["p999"].as_f64().unwrap() > 0.0);
    assert!(ix["runs"][0]["nope"].is_null());
    let csv = std::fs::read_to_string(outp.join("index.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",p999,nope,run"));

    // Out of the way, the same command runs only the failed run.
    std::fs::remove_file(outp.join("cc=reno_load=0.3_seed=0")).unwrap();
    let (o, err) = sweep(&f, &out, &[]);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("skipped 3 runs") && err.contains("running 1 on"),
        "{err}"
    );
}

/// `--plot PATH` writes a plot specification of the headline columns against the varied
/// values (one series per value of the other varied path), and a path that is not varied
/// is refused before anything runs.
#[test]
fn sweep_plot_draws_results_against_a_varied_path() {
    let (_d, file, out) = setup("sweep-plot");
    let (o, err) = sweep(
        &file,
        &out,
        &[
            "--plot",
            "generators[0].pattern.load",
            "--quiet",
            "--seeds",
            "2",
        ],
    );
    assert!(o.status.success(), "{err}");
    let spec = Path::new(&out).join("plots/sweep_load.json");
    let plot: Value = serde_json::from_slice(&std::fs::read(&spec).unwrap()).unwrap();
    let panel = &plot["panels"][0];
    // Labels in words, axes from zero, seeds averaged with their confidence interval.
    assert_eq!(panel["title"], "mean slowdown (mean, 95 % CI over seeds)");
    assert_eq!(panel["xlabel"], "offered load (fraction of link capacity)");
    assert_eq!(panel["ymin"], 0.0);
    let err = panel["err"].as_array().unwrap();
    assert!(
        err.iter()
            .flat_map(|e| e.as_array().unwrap())
            .all(|h| h.as_f64().unwrap() > 0.0)
    );
    let series = panel["series"].as_array().unwrap();
    let labels: Vec<&str> = series
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["cc=dctcp", "cc=reno"]);
    assert_eq!(series[0]["x"], serde_json::json!([0.3, 0.6]));

    let (o, err) = sweep(&file, &out, &["--plot", "transport.mss"]);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--plot transport.mss: not a varied path"),
        "{err}"
    );
}
