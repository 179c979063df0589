//! The `dcsim` binary: results on disk, and one clear message with exit code 2 for bad
//! input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "cli/disk_full.rs"]
mod disk_full;
#[path = "cli/sweep.rs"]
mod sweep;
#[path = "cli/trace.rs"]
mod trace;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dcsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcsim"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run dcsim")
}

/// A new, empty scratch folder under the system temp dir, removed when the guard is dropped
/// (at the end of the test, passed or failed).
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("dcsim-test-{name}-"))
        .tempdir()
        .unwrap()
}

fn write(dir: &Path, text: &str) -> String {
    let p = dir.join("s.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const GOOD: &str = "[sim]\nduration = \"2ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\n[[flows]]\nsrc = 0\ndst = 2\n";

#[test]
fn run_writes_every_result_file_and_output_is_byte_identical() {
    let dir = tmp("run");
    let d = dir.path();
    let f = write(
        d,
        &format!(
            "{GOOD}[output.timeseries]\nevery = \"100us\"\nflows = \"all\"\ncwnd = true\nports = [\"left->right\"]\n"
        ),
    );
    for out in ["a", "b"] {
        let o = dcsim(&[
            "run",
            &f,
            "--out",
            d.join(out).to_str().unwrap(),
            "--seed",
            "3",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for file in ["flows.csv", "ports.csv", "timeseries.csv"] {
        let a = std::fs::read(d.join("a").join(file)).unwrap();
        assert_eq!(
            a,
            std::fs::read(d.join("b").join(file)).unwrap(),
            "{file} differs between runs"
        );
        assert!(a.len() > 40);
    }
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("a/summary.json")).unwrap()).unwrap();
    assert_eq!(s["seed"], 3);
    assert_eq!(s["resolved_scenario"]["topology"]["pairs"], 2);
    let header = std::fs::read_to_string(d.join("a/flows.csv")).unwrap();
    assert!(header.starts_with(
        "flow_id,src,dst,transport,size_bytes,start_ns,end_ns,fct_ns,unloaded_fct_ns,slowdown,"
    ));
    assert!(
        !std::fs::read_dir(d.join("a")).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp"))
    );
}

/// Runs `file` into `dir/one` on one thread and into `dir/two` with `--threads 2`, both
/// successfully; returns what the second printed on stderr.
fn one_and_two_threads(file: &str, dir: &Path) -> String {
    let mut said = String::new();
    for (out, threads) in [("one", "1"), ("two", "2")] {
        let o = dcsim(&[
            "run",
            file,
            "--out",
            dir.join(out).to_str().unwrap(),
            "--threads",
            threads,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        said = String::from_utf8_lossy(&o.stderr).into_owned();
    }
    said
}

/// A run split between threads keeps every flow to the end: where the scenario's flows
/// would not fit in memory that way (82,000 one-packet flows against 20 MB), `--threads 2`
/// says so and runs on one thread, whose finished flows leave memory.
#[test]
fn threads_fall_back_to_one_where_a_split_run_would_not_fit() {
    let dir = tmp("threads-memory");
    let d = dir.path();
    let f = write(
        d,
        "[sim]\nduration = \"20ms\"\n[topology]\nkind = \"fat-tree\"\nk = 4\n\
         [transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n[[generators]]\npattern = { kind = \
         \"poisson\", load = 0.3, load_relative_to = \"host-links\", flow_size = { fixed = \
         \"1460B\" } }\n",
    );
    let o = Command::new(env!("CARGO_BIN_EXE_dcsim"))
        .args([
            "run",
            &f,
            "--out",
            d.join("out").to_str().unwrap(),
            "--threads",
            "2",
        ])
        .env("DCSIM_MAX_MEMORY_MB", "20")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("keeps every flow in memory until the end")
            && err.contains("running on one thread"),
        "{err}"
    );
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("out/summary.json")).unwrap()).unwrap();
    assert!(
        s["memory"]["flows_left_table"].as_u64().unwrap() > 50_000,
        "{}",
        s["memory"]
    );
}

/// `--threads 2` on a k = 4 fat-tree (4 pods) with DCTCP flows from every host to a host
/// two pods on, half of them 200 KB: the tables of one thread, and a note saying it ran
/// on two threads. On a dumbbell, which has no pods: a note, and a run on one thread.
#[test]
fn threads_split_a_fat_tree_and_fall_back_with_a_note() {
    let dir = tmp("threads");
    let d = dir.path();
    let mut text = String::from(
        "[sim]\nduration = \"2ms\"\n[topology]\nkind = \"fat-tree\"\nk = 4\n\
         [transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n",
    );
    for h in 0..16 {
        let size = if h % 2 == 0 { "200KB" } else { "inf" };
        text.push_str(&format!(
            "[[flows]]\nsrc = {h}\ndst = {}\nsize = \"{size}\"\nstart = \"{}ns\"\n",
            (h + 9) % 16,
            137 * h
        ));
    }
    let fat = write(d, &text);
    let dumbbell = d.join("dumbbell.toml");
    std::fs::write(&dumbbell, GOOD).unwrap();
    for (file, split) in [(fat.as_str(), true), (dumbbell.to_str().unwrap(), false)] {
        let said = one_and_two_threads(file, d);
        assert_eq!(said.contains("on 2 threads"), split, "{said}");
        assert_eq!(said.contains("note: not split"), !split, "{said}");
        for table in ["flows.csv", "ports.csv", "buckets.csv"] {
            assert_eq!(
                std::fs::read(d.join("one").join(table)).unwrap(),
                std::fs::read(d.join("two").join(table)).unwrap(),
                "{file}: {table}"
            );
        }
        let flows = std::fs::read_to_string(d.join("two/flows.csv")).unwrap();
        // The 200 KB flows between pods, each end in its own part, complete.
        let completed = flows
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|c| c[4] == "200000" && !c[6].is_empty())
            .count();
        assert!(!split || completed == 8, "{flows}");
    }
    let o = dcsim(&["run", &fat, "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}

/// A split run that stops part-way (a retransmission reached a receiver after the finish
/// that the sender's part decided, before the receiver's part heard of it) is run again
/// on one thread: a note, and the tables of one thread.
#[test]
fn threads_rerun_on_one_thread_a_run_that_stops_part_way() {
    let dir = tmp("threads-stop");
    let d = dir.path();
    // The 8-pod fat-tree of the library's split tests: long and 300 KB flows inside pods
    // and between pods, then 48 flows of 1 KB between the halves, each sent again (a 5 us
    // timeout) before its acknowledgment can return.
    let mut text = String::from(
        "[sim]\nduration = \"4ms\"\nwarmup = \"1ms\"\nseed = 11\n[topology]\n\
         kind = \"fat-tree\"\npreset = \"xpass\"\n[queue]\nkind = \"ecn\"\n\
         buffer = \"250pkts\"\nmark_threshold = \"65pkts\"\n[transport]\nkind = \"tcp\"\n\
         cc = \"dctcp\"\nmin_rto = \"5us\"\ninit_rto = \"5us\"\n",
    );
    let mut flows: Vec<(u32, u32)> = (0..192u32)
        .flat_map(|h| {
            let pod = h / 24;
            [
                (h, 24 * pod + (h % 24 + 7) % 24),
                (h, 24 * (pod ^ 1) + (h % 24 + 5) % 24),
            ]
        })
        .collect();
    flows.extend((0..192u32).step_by(4).map(|h| (h, (h + 53) % 192)));
    for (i, (src, dst)) in flows.into_iter().enumerate() {
        let (size, start) = if i % 3 == 0 {
            ("300KB", 37 * (i % 50))
        } else {
            ("inf", 0)
        };
        text.push_str(&format!(
            "[[flows]]\nsrc = {src}\ndst = {dst}\nsize = \"{size}\"\nstart = \"{start}us\"\n"
        ));
    }
    for h in 0..48u32 {
        text.push_str(&format!(
            "[[flows]]\nsrc = {}\ndst = {}\nsize = \"1KB\"\nstart = \"{}us\"\n",
            h * 4,
            (h * 4 + 100) % 192,
            1000 + 13 * h
        ));
    }
    let f = write(d, &text);
    let said = one_and_two_threads(&f, d);
    assert!(
        said.contains("one thread would have handled after"),
        "{said}"
    );
    assert!(said.contains("note: running on one thread"), "{said}");
    assert!(!said.contains("on 2 threads;"), "{said}");
    for table in ["flows.csv", "ports.csv"] {
        assert_eq!(
            std::fs::read(d.join("one").join(table)).unwrap(),
            std::fs::read(d.join("two").join(table)).unwrap(),
            "{table}"
        );
    }
}

#[test]
fn check_show_and_list_work_on_the_examples() {
    for f in [
        "scenarios/dctcp-dumbbell.toml",
        "scenarios/tcp-incast.toml",
        "scenarios/dctcp-fattree-permutation.toml",
    ] {
        let o = dcsim(&["check", f]);
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = dcsim(&["show", f]);
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("[topology]") && text.contains("min_rto"),
            "{text}"
        );
    }
    let o = dcsim(&["list"]);
    let text = String::from_utf8(o.stdout).unwrap();
    for word in ["dumbbell", "fat-tree", "dctcp", "red", "permutation"] {
        assert!(text.contains(word), "list lacks {word}");
    }
    // Every file in scenarios/ is listed (the list is compiled in, so a new file must be
    // added to it).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            assert!(text.contains(&name), "dcsim list lacks scenarios/{name}");
        }
    }
}

/// Every kind of bad input: one line naming the place, exit code 2, no panic.
#[test]
fn bad_input_gets_one_clear_message_and_exit_code_2() {
    let dir = tmp("bad");
    let d = dir.path();
    let cases: &[(&str, &str)] = &[
        (
            "[sim]\nduration = \"2ms\"\nbogus = 1\n[topology]\nkind = \"star\"\n",
            "unknown field `bogus`",
        ),
        (
            "[topology]\nkind = \"dumbbell\"\nbottleneck = { rate = \"10Gbs\", delay = \"1us\" }\n",
            "unknown rate unit \"Gbs\"",
        ),
        (
            "[topology]\nkind = \"star\"\nhosts = 4\n[[flows]]\nsrc = 0\ndst = 7\nsize = \"1MB\"\n",
            "flows[0].dst: host 7 is out of range",
        ),
        (
            "[topology]\nkind = \"star\"\n[[flows]]\nsrc = 0\ndst = 1\nsize = \"-5MB\"\n",
            "cannot be negative",
        ),
        (
            "[topology]\nkind = \"star\"\nhost_link = { rate = \"0Gbps\", delay = \"1us\" }\n",
            "rate 0",
        ),
        (
            "[topology]\nkind = \"hypercube\"\n",
            "unknown variant `hypercube`",
        ),
        ("[topology\nkind = \"star\"\n", "line 1"),
        (
            "[sim]\nduration = \"1s\"\n[topology]\nkind = \"star\"\n[controller]\nkind = \"sdn-ecn\"\nprobe = \"1s\"\n",
            "unknown field `probe`",
        ),
        (
            "[topology]\nkind = \"star\"\n[controller]\nkind = \"sdn-ecn\"\n",
            "controller: needs sim.duration",
        ),
        (
            "[sim]\nduration = \"1s\"\n[topology]\nkind = \"star\"\n[controller]\nkind = \"sdn-ecn\"\nexempt = [\"web\"]\n",
            "controller.exempt: no transport named \"web\"",
        ),
        (
            "[sim]\nduration = \"1s\"\n[topology]\nkind = \"star\"\n[controller]\nkind = \"sdn-ecn\"\nthreshold = 75\n",
            "controller.threshold: 75 is not a utilization",
        ),
        (
            "[topology]\nkind = \"star\"\n[transport]\nkind = \"fastpass\"\n",
            "needs topology.kind = \"leaf-spine\"",
        ),
        (
            "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nhosts_per_leaf = 4\nspines = 2\n[transport]\nkind = \"fastpass\"\n",
            "Fastpass needs a full-bisection fabric",
        ),
        (
            "[topology]\nkind = \"leaf-spine\"\nleaves = 2\nhosts_per_leaf = 2\nspines = 2\n[transport]\nkind = \"fastpass\"\nbatch_slots = 100\n",
            "batch_slots: 100 is not 8, 16, 32, 64, 128, 256 or 512",
        ),
        (
            "[topology]\nkind = \"star\"\n[queue]\nkind = \"droptail\"\nbuffer = \"1000B\"\n",
            "queue.buffer: 1000 B cannot hold one full frame (1538 B on the wire)",
        ),
        (
            "name = \"../../x\"\n[topology]\nkind = \"star\"\n",
            "name: \"../../x\" cannot be a results folder name",
        ),
        (
            "[topology]\nkind = \"fat-tree\"\npreset = \"xpass\"\nk = 8\n",
            "topology.k: only with preset = \"k-ary\"",
        ),
        (
            "[topology]\nkind = \"star\"\nhost_link = { rate = \"10Gbps\", delay = \"18446744073709551615ps\" }\n",
            "link delays must be at most 1s",
        ),
        (
            "[sim]\nduration = \"1ms\"\n[topology]\nkind = \"star\"\n[output.timeseries]\nevery = \"1ns\"\n",
            "output.timeseries.every: 1ns is shorter than 100ns",
        ),
        (
            "[topology]\nkind = \"star\"\nhosts = 4\n[output.trace]\nhosts = [4]\n",
            "output.trace.hosts: host 4 does not exist (hosts are 0..4)",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.trace]\nports = [\"a->b\"]\n",
            "output.trace.ports: no port \"a->b\"",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.trace]\nhosts = [0]\nstart = \"2ms\"\nend = \"1ms\"\n",
            "output.trace.end: 1ms is not after output.trace.start (2ms)",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.trace]\nhosts = [0]\nmax_bytes = \"100B\"\n",
            "output.trace.max_bytes: 100B is less than 1000B",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.trace]\n",
            "output.trace: names no hosts and no ports",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.trace]\nhost = [0]\n",
            "unknown field `host`",
        ),
        (
            "[topology]\nkind = \"star\"\n[output.events]\nflows = \"none\"\n",
            "output.events.flows: \"none\" logs nothing",
        ),
        (
            "[topology]\nkind = \"star\"\n[[flows]]\nsrc = 0\ndst = 1\nsize = \"1MB\"\n[output.events]\nflows = [1]\n",
            "output.events.flows: flow 1 does not exist (1 flows)",
        ),
        (
            "[sim]\nduration = \"10s\"\n[topology]\nkind = \"star\"\n[output.timeseries]\nevery = \"100ns\"\nports = [\"switches\"]\n",
            "sample less often or fewer flows and ports",
        ),
        (
            "[topology]\nkind = \"parking-lot\"\nbottlenecks = 10000000\n",
            "switches x 10000001 edge switches",
        ),
        (
            "[sim]\nduration = \"1s\"\n[topology]\nkind = \"star\"\nhosts = 16\n[[generators]]\npattern = { kind = \"poisson\", load = 1e6, load_relative_to = \"host-links\", flow_size = { cdf = \"websearch\" } }\n",
            "lower the load or set max_flows / until",
        ),
        (
            "[topology]\nkind = \"star\"\nhosts = 16\n[[generators]]\npattern = { kind = \"shuffle\", tasks_per_host = 1000000000, bytes_per_pair = \"50KB\" }\n",
            "tasks_per_host: 16 hosts x 1000000000 tasks",
        ),
        (
            "[topology]\nkind = \"star\"\nhosts = 16\n[[generators]]\npattern = { kind = \"shuffle\", tasks_per_host = 10000, bytes_per_pair = \"50KB\" }\n",
            "lower the load or set max_flows / until",
        ),
    ];
    for (text, want) in cases {
        let f = write(d, text);
        let o = dcsim(&["run", &f, "--out", d.join("out").to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(want),
            "for {text:?} expected {want:?} in: {err}"
        );
        assert!(
            err.starts_with("error: ") && err.contains("s.toml"),
            "{err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{err}"
        );
    }
    // A line of a megabyte in a parse error is cut short.
    let f = write(
        d,
        &format!(
            "[topology]\nkind = \"star\"\nhosts = {}\n",
            "x".repeat(1_000_000)
        ),
    );
    let o = dcsim(&["check", &f]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stderr.len() < 2_000, "{} bytes of error", o.stderr.len());
    // An --out under a file fails before the simulation, with nothing written.
    std::fs::write(d.join("afile"), "x").unwrap();
    let f = write(d, GOOD);
    let o = dcsim(&["run", &f, "--out", d.join("afile/x").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot write results to") && !err.contains("simulated"),
        "{err}"
    );
    let o = dcsim(&["run", "no/such/file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no/such/file.toml: cannot read the file"));
    let f = write(d, GOOD);
    let o = dcsim(&["run", &f, "--set", "flows[5].size=1MB"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--set flows[5].size=1MB: flows has only 1 entries")
    );
    assert!(
        !d.join("out").exists(),
        "a failed run must not create results"
    );
}

/// `dcsim list | head`: a reader that goes away before the output is written is not an
/// error (it used to panic on the broken pipe). The read end is closed at once, before the
/// child can write.
#[test]
fn list_and_show_into_a_closed_pipe_exit_quietly() {
    for args in [vec!["list"], vec!["show", "scenarios/dctcp-dumbbell.toml"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dcsim"))
            .args(&args)
            .current_dir(root())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run dcsim");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait for dcsim");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `dcsim example NAME` prints a built-in example exactly as shipped in scenarios/, with
/// or without `.toml`; `--out` writes it and never overwrites; an unknown name lists the
/// examples and exits 2.
#[test]
fn example_prints_writes_and_refuses_to_overwrite() {
    let shipped = std::fs::read_to_string(root().join("scenarios/pulser-incast.toml")).unwrap();
    for name in ["pulser-incast", "pulser-incast.toml"] {
        let o = dcsim(&["example", name]);
        assert!(o.status.success());
        assert_eq!(String::from_utf8(o.stdout).unwrap(), shipped);
    }
    let dir = tmp("example");
    let d = dir.path();
    let file = d.join("p.toml").display().to_string();
    assert!(
        dcsim(&["example", "pulser-incast", "--out", &file])
            .status
            .success()
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), shipped);
    let again = dcsim(&["example", "dctcp-dumbbell", "--out", &file]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not overwriting"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        shipped,
        "untouched"
    );
    let bad = dcsim(&["example", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("dctcp-dumbbell"));
    // The written file runs anywhere.
    assert!(dcsim(&["check", &file]).status.success());
}

/// `dcsim check` says what the generators will produce, not "0 flows" for a scenario that
/// generates thousands.
#[test]
fn check_describes_what_generators_produce() {
    let o = dcsim(&["check", "scenarios/websearch-star.toml"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("0 flows listed"), "{text}");
    assert!(
        text.contains("generator poisson") && text.contains("up to 3000 flows"),
        "{text}"
    );
    assert!(text.contains("load 0.5 of the host links"), "{text}");
    let o = dcsim(&["check", "scenarios/tcp-incast.toml"]);
    assert!(
        String::from_utf8(o.stdout)
            .unwrap()
            .contains("generator incast, 32 flows")
    );
}

/// Results folders are committed whole: a second run into the folder of another replaces
/// it entirely (no file of the first is left beside the second's summary), and a run
/// killed at any moment leaves the folder complete (the old run or the new one, as its
/// manifest verifies) with no temporary folder behind once the next run has committed.
#[test]
fn results_folders_are_replaced_whole_and_survive_kill_9() {
    let dir = tmp("commit");
    let d = dir.path();
    let out = d.join("R");
    let o = dcsim(&[
        "run",
        "scenarios/dctcp-dumbbell.toml",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    let o = dcsim(&[
        "run",
        "scenarios/tcp-incast.toml",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("\"scenario\": \"tcp-incast\""));
    let files: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!files.iter().any(|f| f == "timeseries.csv"), "{files:?}");
    assert!(dcsim_metrics_verify(&out));
    // Kill runs of the fat-tree permutation at spread-out moments.
    for ms in [5u64, 40, 120, 300, 600, 900, 1300, 2000] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dcsim"))
            .args(["run", "scenarios/dctcp-fattree-permutation.toml", "--out"])
            .arg(&out)
            .arg("--quiet")
            .current_dir(root())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(ms));
        let _ = child.kill();
        let _ = child.wait();
        // Complete, or (killed between its two renames) absent with a complete folder
        // aside that the next run puts back.
        let aside = std::fs::read_dir(d).unwrap().any(|e| {
            let e = e.unwrap();
            e.file_name().to_string_lossy().starts_with(".R.") && dcsim_metrics_verify(&e.path())
        });
        assert!(
            dcsim_metrics_verify(&out) || (!out.exists() && aside),
            "after a kill at {ms} ms"
        );
    }
    let o = dcsim(&[
        "run",
        "scenarios/tcp-incast.toml",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success());
    let left: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["R"], "temporary folders or locks left");
    dir.close().unwrap();
}

/// A run into a folder that another process is writing is refused before it simulates
/// (the lock is taken at the start and held until the commit), and the folder is left as
/// it was. The run asked for would take minutes.
#[test]
fn a_second_writer_is_refused_before_it_simulates() {
    let dir = tmp("busy");
    let d = dir.path();
    let out = d.join("R");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("mine.txt"), "kept").unwrap();
    // pid 1 is always alive.
    std::fs::write(d.join(".R.lock"), "1").unwrap();
    let started = std::time::Instant::now();
    let o = dcsim(&[
        "run",
        "scenarios/dctcp-fattree-permutation.toml",
        "--set",
        "sim.duration=2s",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("process 1 is writing the same results folder") && err.contains(".R.lock"),
        "{err}"
    );
    assert!(took.as_secs() < 20, "refused only after {took:?}");
    assert_eq!(
        std::fs::read_to_string(out.join("mine.txt")).unwrap(),
        "kept"
    );
    dir.close().unwrap();
}

/// The manifest check of a results folder, done by hand so the test does not trust the
/// code it tests: every listed file has its listed size.
fn dcsim_metrics_verify(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
        return false;
    };
    let m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = m.as_object().unwrap();
    m.contains_key("summary.json")
        && m.iter().all(|(f, v)| {
            std::fs::metadata(dir.join(f)).is_ok_and(|md| Some(md.len()) == v["bytes"].as_u64())
        })
}

/// Completion scripts and man pages come from the CLI definition, so they name every
/// command and option as they are.
#[test]
fn completions_and_man_pages_cover_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let o = dcsim(&["completions", shell]);
        assert!(o.status.success(), "{shell}");
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("repro") && text.contains("format"), "{shell}");
    }
    assert_eq!(dcsim(&["completions", "tcsh"]).status.code(), Some(2));
    let dir = tmp("man");
    let d = dir.path();
    let o = dcsim(&["man", "--out", d.to_str().unwrap()]);
    assert!(o.status.success());
    for page in ["dcsim.1", "dcsim-run.1", "dcsim-sweep.1", "dcsim-repro.1"] {
        let text = std::fs::read_to_string(d.join(page)).unwrap();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let run = std::fs::read_to_string(d.join("dcsim-run.1")).unwrap();
    assert!(run.contains("format") && run.contains("Override a scenario value"));
}

fn dcsim_without_matplotlib(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dcsim"))
        .args(args)
        .current_dir(root())
        .env("DCSIM_PYTHON", "/nonexistent/python")
        .output()
        .expect("run dcsim")
}

/// `dcsim plot` writes the figures of a run (specifications always; pictures when
/// matplotlib is there) and `dcsim report` one page for a run, a sweep or a reproduction;
/// anything else is refused with exit code 2.
#[test]
fn plot_and_report_cover_runs_sweeps_and_reproductions() {
    let dir = tmp("report");
    let d = dir.path();
    let run = d.join("run");
    let o = dcsim(&[
        "run",
        "scenarios/websearch-star.toml",
        "--out",
        run.to_str().unwrap(),
        "-q",
        "--set",
        "generators[0].pattern.max_flows=200",
        "--set",
        "output.timeseries.every=\"500us\"",
        "--set",
        "output.timeseries.flows=[0,1]",
        "--set",
        "output.timeseries.ports=[\"sw->h0\"]",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = dcsim_without_matplotlib(&["plot", run.to_str().unwrap()]);
    assert!(o.status.success());
    // A Parquet-only folder is named as such, not "no such file".
    let pq = d.join("pq");
    let o = dcsim(&[
        "run",
        "scenarios/dctcp-dumbbell.toml",
        "--format",
        "parquet",
        "-q",
        "--out",
        pq.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for cmd in ["plot", "report"] {
        let o = dcsim_without_matplotlib(&[cmd, pq.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && err.contains("holds Parquet files only"),
            "{cmd}: {err}"
        );
    }
    let spec = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(run.join("plots").join(name)).unwrap()).unwrap()
    };
    let ts = spec("timeseries.json");
    let titles: Vec<&str> = ts["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["queue length per port", "goodput per flow"]);
    assert_eq!(ts["panels"][0]["xlabel"], "simulated time (ms)");
    let fct = spec("fct.json");
    let cdf = &fct["panels"][0]["series"][0]["y"];
    assert_eq!(cdf.as_array().unwrap().last().unwrap(), 1.0);
    assert_eq!(spec("links.json")["panels"][0]["ymin"], 0.0);

    let o = dcsim_without_matplotlib(&["report", run.to_str().unwrap()]);
    assert!(o.status.success());
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("<h2>Summary</h2>") && page.contains("FCT and slowdown per flow size"));
    assert!(page.contains("matplotlib was not found") && page.contains("Resolved scenario"));

    let sw = d.join("sweep");
    let o = dcsim(&[
        "sweep",
        "scenarios/websearch-star.toml",
        "--vary",
        "generators[0].pattern.load=0.3,0.5",
        "--set",
        "generators[0].pattern.max_flows=100",
        "--out",
        sw.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        dcsim_without_matplotlib(&["report", sw.to_str().unwrap()])
            .status
            .success()
    );
    let page = std::fs::read_to_string(sw.join("report.html")).unwrap();
    assert!(
        page.contains("Index: parameters and headline results per run")
            && page.contains("load=0.5_seed=1")
    );
    assert!(
        sw.join("plots/sweep_load.json").exists(),
        "the sweep's figure against its load"
    );
    // The sweep's points side by side, as `dcsim compare` draws them.
    assert!(page.contains("Points side by side"), "{page}");
    assert!(
        sw.join("compare/buckets.csv").exists()
            && sw.join("compare/plots/fct_buckets.json").exists()
    );

    // A reproduction's page has its claims and checks as tables, with their verdicts.
    let rp = d.join("repro");
    let o = dcsim(&[
        "repro",
        "xpass-credit-queue",
        "--quick",
        "--out",
        rp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        dcsim_without_matplotlib(&["report", rp.to_str().unwrap()])
            .status
            .success()
    );
    let page = std::fs::read_to_string(rp.join("report.html")).unwrap();
    assert!(
        page.contains("<h2>Claims</h2>")
            && page.contains("<th>verdict</th>")
            && page.contains("cannot decide")
            && page.contains("<h2>Checks</h2>"),
        "{page}"
    );

    let o = dcsim_without_matplotlib(&["report", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a run, sweep or reproduction folder"));

    // `dcsim compare`: a run beside the sweep's two runs, named (the sweep's by their
    // points); one row per run.
    let cmp = d.join("cmp");
    let o = dcsim_without_matplotlib(&[
        "compare",
        run.to_str().unwrap(),
        sw.to_str().unwrap(),
        "--name",
        "DCTCP, 200 flows",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("DCTCP, 200 flows") && text.contains("\nload=0.3 "),
        "{text}"
    );
    let runs = std::fs::read_to_string(cmp.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 4, "{runs}");
    assert!(cmp.join("plots/fct_buckets.json").exists() && cmp.join("report.html").exists());
    let o = dcsim_without_matplotlib(&[
        "compare",
        run.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("this is a results folder"));
}

/// `dcsim check` (and `run`) warns about what is legal but almost certainly wrong, on
/// stderr, with exit code 0; the example scenarios get no warning.
#[test]
fn check_warns_about_legal_but_wrong_settings() {
    for (file, sets, want) in [
        (
            "scenarios/websearch-star.toml",
            vec!["queue.buffer=\"50pkts\""],
            "queue.mark_threshold (65pkts) is at or above queue.buffer (50pkts)",
        ),
        (
            "scenarios/websearch-star.toml",
            vec!["generators[0].pattern.load=1.5"],
            "generators[0]: load 1.5 is at or above the capacity",
        ),
        (
            "scenarios/dctcp-dumbbell.toml",
            vec!["flows[1].start=\"10s\""],
            "flows[1] starts at or after the end of the run",
        ),
        // 4 racks of 8: 24 of 31 destinations leave the rack (77 %), so a ToR-uplink load
        // of 0.6 puts 0.46 on them; 0.7 of the host links puts 1.08 on 2:1 uplinks.
        (
            "scenarios/websearch-leafspine.toml",
            vec![
                "generators[0].pattern.load_relative_to=\"tor-uplinks\"",
                "generators[0].pattern.load=0.6",
            ],
            "generators[0]: load 0.6 of the ToR uplinks counts every flow, but only 77 % of flows leave their rack, so the uplinks carry about 0.46",
        ),
        (
            "scenarios/websearch-leafspine.toml",
            vec!["generators[0].pattern.load=0.7"],
            "generators[0]: load 0.7 of the host links offers the ToR uplinks about 1.08 of their capacity",
        ),
    ] {
        let mut args = vec!["check", file];
        for s in &sets {
            args.extend(["--set", s]);
        }
        let o = dcsim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert!(err.contains(&format!("warning: {want}")), "{sets:?}: {err}");
    }
    for f in std::fs::read_dir(root().join("scenarios")).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "toml") {
            let o = dcsim(&["check", f.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                o.status.success() && !err.contains("warning"),
                "{}: {err}",
                f.display()
            );
        }
    }
}

/// What would not fit is refused before it is built, with exit code 2: an incast of 2^31
/// senders (it aborted on a 103 GB allocation), 10^8 pairs between two hosts (4.7 GB were
/// allocated before the refusal), a time series of every generator flow every 100 ns, and
/// a fabric beyond the process's address-space limit (`ulimit -v` was ignored, and the run
/// aborted on its first large allocation).
#[test]
fn what_would_not_fit_is_refused_before_it_is_built() {
    let d = tmp("fit");
    let file = |name: &str, body: &str| {
        let p = d.path().join(name);
        std::fs::write(
            &p,
            format!("schema_version = 1\n[sim]\nduration = \"1us\"\n{body}"),
        )
        .unwrap();
        p.to_str().unwrap().to_string()
    };
    let star = "[topology]\nkind = \"star\"\nhosts = 16\n";
    let incast = file(
        "incast.toml",
        &format!(
            "{star}[[generators]]\npattern = {{ kind = \"incast\", receiver = 0, senders = 2147483648, size = \"1KB\" }}\n"
        ),
    );
    let o = dcsim(&["check", &incast]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("generators: about 2.147e9 flows"), "{err}");
    let pairs = file(
        "pairs.toml",
        &format!(
            "{star}[[generators]]\npattern = {{ kind = \"pairs\", count = 100000000, src = 1, dst = 2, src_step = 0, dst_step = 0, size = \"1KB\" }}\n"
        ),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_dcsim"))
        .args(["check", &pairs])
        .env("DCSIM_MAX_MEMORY_MB", "1000")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("generators: about 1.000e8 flows"), "{err}");
    // Every flow sampled every 100 ns for a second: the generator's 3,000 flows count (about
    // half the run each), 1.5e10 samples; they counted as none.
    let o = dcsim(&[
        "check",
        "scenarios/websearch-star.toml",
        "--set",
        "sim.duration=1s",
        "--set",
        r#"output.timeseries={every="100ns", flows="all"}"#,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("output.timeseries: about 1.500e10 samples"),
        "{err}"
    );
    // k = 64: about 557 MB to build, more than 4/5 of a 600 MB address space.
    let fabric = file(
        "fabric.toml",
        "[topology]\nkind = \"fat-tree\"\nk = 64\n[[flows]]\nsrc = 0\ndst = 1\nsize = \"1KB\"\n",
    );
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 600000 && exec {} run {fabric} --out {}",
            env!("CARGO_BIN_EXE_dcsim"),
            d.path().join("out").display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("more than the 0.5 GB available"), "{err}");
}

/// `dcsim check --estimate` times a run the probe finishes and extrapolates one it does
/// not; a budget out of range is refused.
#[test]
fn check_estimates_the_wall_time() {
    let o = dcsim(&["check", "scenarios/dctcp-dumbbell.toml", "--estimate", "60"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("estimate: ") && text.contains("ran it to the end"),
        "{text}"
    );
    // 100 simulated seconds of a fat-tree do not fit in 0.3 s of wall time.
    let o = dcsim(&[
        "check",
        "scenarios/dctcp-fattree-permutation.toml",
        "--set",
        "sim.duration=\"100s\"",
        "--estimate",
        "0.3",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        text.contains("on this machine") && text.contains("of the simulated time"),
        "{text}"
    );
    // A run that ends when its generator's flows are done is measured in bytes delivered.
    let o = dcsim(&[
        "check",
        "scenarios/websearch-star.toml",
        "--set",
        "generators[0].pattern.max_flows=1000000",
        "--estimate",
        "0.3",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("of the bytes"), "{text}");
    let o = dcsim(&["check", "scenarios/dctcp-dumbbell.toml", "--estimate", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--estimate: 0 s"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `dcsim repro NAME --plan` runs nothing and lists the runs with what the folder holds:
/// every run to run in a new folder, every run complete after the experiment has run.
#[test]
fn repro_plan_lists_the_runs_and_what_is_complete() {
    let d = tmp("plan");
    let out = d.path().join("cq");
    let out = out.to_str().unwrap();
    let plan = |args: &[&str]| {
        let o = dcsim(
            &[
                &[
                    "repro",
                    "xpass-credit-queue",
                    "--quick",
                    "--plan",
                    "--out",
                    out,
                ],
                args,
            ]
            .concat(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let before = plan(&[]);
    let runs = before.lines().filter(|l| l.ends_with("\tto run")).count();
    assert!(
        runs > 1 && before.contains(&format!("{runs} runs in")),
        "{before}"
    );
    // --estimate probes each run to do (here briefly) and sums them up for --jobs.
    let estimate = |args: &[&str]| {
        let o = dcsim(
            &[
                &[
                    "repro",
                    "xpass-credit-queue",
                    "--quick",
                    "--jobs",
                    "2",
                    "--out",
                    out,
                    "--estimate",
                    "0.2",
                ],
                args,
            ]
            .concat(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let est = estimate(&[]);
    let probed = est
        .lines()
        .filter(|l| l.contains("\tabout ") || l.contains("ran it to the end"))
        .count();
    assert_eq!(probed, runs, "{est}");
    assert!(
        est.contains(&format!("{runs} runs to run")) && est.contains("with --jobs 2 about"),
        "{est}"
    );
    assert!(
        !Path::new(out).join("result.json").exists(),
        "a plan runs nothing"
    );
    let o = dcsim(&["repro", "xpass-credit-queue", "--quick", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = plan(&[]);
    assert!(
        after.contains(&format!("{runs} complete, 0 to run")),
        "{after}"
    );
    let fresh = plan(&["--fresh"]);
    assert!(
        fresh.contains(&format!("0 complete, {runs} to run")),
        "{fresh}"
    );
    let est = estimate(&[]);
    assert!(
        est.lines().filter(|l| l.ends_with("\tcomplete")).count() == runs
            && est.contains("0 runs to run"),
        "{est}"
    );
    let o = dcsim(&["repro", "no-such-thing", "--plan"]);
    assert_eq!(o.status.code(), Some(2));
}
