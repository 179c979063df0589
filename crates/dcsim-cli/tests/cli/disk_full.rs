//! A full disk while results are committed (docs/output.md: "A results folder is committed
//! whole"). A tmpfs cannot be mounted here, so the full disk is a file-size limit
//! (RLIMIT_FSIZE, `ulimit -f`): a write past it fails with EFBIG ("File too large") as a
//! write to a full disk fails with ENOSPC. The child ignores SIGXFSZ (whose default action
//! would kill it instead), and an ignored signal stays ignored across `exec`. Standard
//! output and error are pipes, which the limit does not apply to.

#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use super::{dcsim, dcsim_metrics_verify, root, tmp};

/// `dcsim ARGS` with files limited to `blocks` blocks of 512 bytes (`ulimit -f` in a POSIX
/// sh; bash outside POSIX mode counts 1024, which the limits below allow for).
fn dcsim_limited(blocks: u32, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks} || exit 99; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_dcsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run sh")
}

/// Every file of the folder `dir` (results folders are flat) and its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            assert!(e.file_type().unwrap().is_file(), "{:?}", e.path());
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn digest(dir: &Path) -> String {
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    s["digest"].as_str().unwrap().to_string()
}

/// The failed run said one thing, clearly: exit code 1, one line naming the folder and the
/// error, no panic, nothing on stdout.
fn assert_one_clear_error(o: &Output, out: &Path, what: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(99), "{what}: ulimit -f failed: {err}");
    assert_eq!(o.status.code(), Some(1), "{what}: {:?} {err}", o.status);
    assert_eq!(err.lines().count(), 1, "{what}: not one message: {err}");
    assert!(
        err.starts_with(&format!(
            "error: cannot write results to {}: ",
            out.display()
        )) && err.contains("File too large"),
        "{what}: {err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{what}: {err}"
    );
    assert!(o.stdout.is_empty(), "{what}");
}

/// The example writes ~75 KB of timeseries.csv after four small CSV files; a mark threshold
/// of 40 packets instead of 65 gives a different run with files of about the same sizes.
const SCENARIO: &str = "scenarios/dctcp-dumbbell.toml";
const OTHER: &str = "queue.mark_threshold=40pkts";

/// Run A is committed; run B into the same folder fails partway through writing its files
/// (limits of 1, 4 and 64 blocks: its second file, ports.csv of ~1.1 KB, or its fifth,
/// timeseries.csv of ~74 KB). Each time the folder is still A byte for byte, its manifest
/// verifies, and nothing is left beside it (no temporary folder, old folder or lock). The
/// same run B without the limit then commits, with a digest other than A's.
#[test]
fn a_run_that_fills_the_disk_leaves_the_old_folder_whole_and_nothing_beside_it() {
    let dir = tmp("disk-full-run");
    let d = dir.path();
    let out = d.join("R");
    let out_s = out.to_str().unwrap();
    let o = dcsim(&["run", SCENARIO, "--out", out_s, "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = snapshot(&out);
    assert!(a.contains_key("manifest.json") && a.contains_key("timeseries.csv"));
    assert!(dcsim::metrics::verify_dir(&out) && dcsim_metrics_verify(&out));

    // Run B without a limit, elsewhere: what it writes, so the limits fall in its files.
    let probe_dir = tmp("disk-full-probe");
    let probe = probe_dir.path();
    let o = dcsim(&[
        "run",
        SCENARIO,
        "--out",
        probe.join("B").to_str().unwrap(),
        "--quiet",
        "--set",
        OTHER,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = snapshot(&probe.join("B"));
    let b_digest = digest(&probe.join("B"));
    assert_ne!(b_digest, digest(&out), "run B must differ from run A");
    probe_dir.close().unwrap();
    let largest = b.values().map(Vec::len).max().unwrap();
    // Files are written in this order; the first fits under every limit, so each limit
    // fails the commit in the middle of the results, not at the lock (a process id, a few
    // bytes) or before the run.
    let order = [
        "flows.csv",
        "ports.csv",
        "buckets.csv",
        "tiers.csv",
        "timeseries.csv",
    ];
    assert!(order.iter().all(|f| b.contains_key(*f)), "{:?}", b.keys());
    assert!(b["flows.csv"].len() < 512, "{}", b["flows.csv"].len());

    for blocks in [1u32, 4, 64] {
        assert!(
            (blocks as usize) * 1024 < largest,
            "a limit of {blocks} blocks fits every file of run B ({largest} bytes at most)"
        );
        let o = dcsim_limited(
            blocks,
            &["run", SCENARIO, "--out", out_s, "--quiet", "--set", OTHER],
        );
        assert_one_clear_error(&o, &out, &format!("ulimit -f {blocks}"));
        assert!(
            snapshot(&out) == a,
            "ulimit -f {blocks}: the folder is no longer run A"
        );
        assert!(dcsim::metrics::verify_dir(&out), "ulimit -f {blocks}");
        assert_eq!(
            names(d),
            ["R"],
            "ulimit -f {blocks}: temporary folders or locks left"
        );
    }

    let o = dcsim(&["run", SCENARIO, "--out", out_s, "--quiet", "--set", OTHER]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dcsim::metrics::verify_dir(&out));
    assert_eq!(digest(&out), b_digest);
    let mut now = snapshot(&out);
    let mut b = b;
    // summary.json holds the wall-clock time: compare the rest byte for byte.
    for s in [&mut now, &mut b] {
        s.remove("summary.json");
        s.remove("manifest.json");
    }
    assert!(now == b, "run B committed after the failures is not run B");
    assert_eq!(names(d), ["R"]);
    dir.close().unwrap();
}

/// A disk that is full before the writer has written its process id into the lock (the
/// empty lock file is created, the write of a few bytes fails). What docs/output.md says:
/// the folder stays whole, and a failed writer's lock does not outlive it ("locks ... of
/// writers that died are cleared by the next write"), so the next run succeeds.
#[test]
fn a_disk_full_at_the_lock_leaves_no_lock_behind() {
    let dir = tmp("disk-full-lock");
    let d = dir.path();
    let out = d.join("R");
    let out_s = out.to_str().unwrap();
    let o = dcsim(&["run", SCENARIO, "--out", out_s, "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a = snapshot(&out);
    let o = dcsim_limited(
        0,
        &["run", SCENARIO, "--out", out_s, "--quiet", "--set", OTHER],
    );
    assert_one_clear_error(&o, &out, "ulimit -f 0");
    assert!(snapshot(&out) == a, "the folder is no longer run A");
    // The failed writer's lock is removed with the error (it once stayed, empty, and
    // refused the next writer for 10 s).
    assert_eq!(names(d), ["R"], "temporary folders or locks left");
    // At once (not 10 s later, when an empty lock counts as stale) the next run commits.
    let o = dcsim(&["run", SCENARIO, "--out", out_s, "--quiet", "--set", OTHER]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dcsim::metrics::verify_dir(&out));
    assert_eq!(names(d), ["R"]);
    dir.close().unwrap();
}

/// A sweep whose run commits and index fail for a full disk (docs/sweep.md): exit code 1
/// with the reason, no panic; every run folder is still its earlier complete run byte for
/// byte; no temporary file, folder or lock is left anywhere in DIR; the index files are
/// each whole; the same command without the limit then runs the two runs and commits them.
#[test]
fn a_sweep_that_fills_the_disk_keeps_its_complete_runs() {
    let dir = tmp("disk-full-sweep");
    let d = dir.path();
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        "[sim]\nduration = \"2ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\n\
         [transport]\nkind = \"tcp\"\n[[generators]]\npattern = { kind = \"poisson\", \
         load = 0.3, load_relative_to = \"host-links\", flow_size = { fixed = \"20KB\" }, \
         until = \"1500us\" }\n",
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let out = d.join("out");
    let out_s = out.to_str().unwrap();
    let sweep = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "sweep",
            f,
            "--out",
            out_s,
            "--vary",
            "transport.cc=dctcp,reno",
            "--quiet",
        ];
        args.extend(extra);
        args.into_iter().map(String::from).collect()
    };
    let args = sweep(&[]);
    let o = dcsim(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = ["cc=dctcp_seed=0", "cc=reno_seed=0"];
    let before: Vec<_> = runs.iter().map(|r| snapshot(&out.join(r))).collect();
    for s in &before {
        // flows.csv (~10 KB) does not fit under the limit of 4 blocks.
        assert!(s["flows.csv"].len() > 4 * 1024, "{}", s["flows.csv"].len());
    }
    let index_before: Vec<_> = ["index.csv", "index.json"]
        .iter()
        .map(|i| std::fs::read(out.join(i)).unwrap())
        .collect();

    // A changed scenario: both runs are done again and their commits fail.
    let args = sweep(&["--set", "sim.duration=1800us"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = dcsim_limited(4, &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{:?} {err}", o.status);
    assert!(
        err.starts_with("error: ") && err.contains("File too large"),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    for (r, s) in runs.iter().zip(&before) {
        assert!(
            snapshot(&out.join(r)) == *s,
            "{r} is no longer its earlier run"
        );
        assert!(dcsim::metrics::verify_dir(&out.join(r)), "{r}");
    }
    // Each index file is whole: the old one or a new one (each is written atomically).
    for (i, old) in ["index.csv", "index.json"].iter().zip(&index_before) {
        let now = std::fs::read(out.join(i)).unwrap();
        if now != *old {
            assert!(now.ends_with(b"\n"), "{i} cut short");
            if *i == "index.json" {
                serde_json::from_slice::<serde_json::Value>(&now).unwrap();
            } else {
                assert_eq!(now.iter().filter(|b| **b == b'\n').count(), 3, "{i}");
            }
        }
    }
    assert_eq!(dot_files(d), Vec::<String>::new(), "leftovers");

    let o = dcsim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ix: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap();
    let status: Vec<&str> = ix["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["ok", "ok"]);
    for (r, s) in runs.iter().zip(&before) {
        assert!(dcsim::metrics::verify_dir(&out.join(r)), "{r}");
        assert!(snapshot(&out.join(r)) != *s, "{r} was not run again");
    }
    assert_eq!(dot_files(d), Vec::<String>::new(), "leftovers");
    dir.close().unwrap();
}

/// Every name beginning with a dot under `dir`, at any depth: temporary files and
/// folders, old folders and locks.
fn dot_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().into_string().unwrap();
        if name.starts_with('.') {
            found.push(e.path().display().to_string());
        } else if e.file_type().unwrap().is_dir() {
            found.extend(dot_files(&e.path()));
        }
    }
    found
}
