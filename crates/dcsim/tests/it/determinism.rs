//! Same scenario and seed, byte-identical results; different seeds, different results.

use crate::run;

#[test]
fn same_seed_gives_identical_outputs_in_one_process() {
    let sets = ["sim.duration=20ms", "sim.warmup=5ms"];
    let a = run("scenarios/dctcp-fattree-permutation.toml", &sets);
    let b = run("scenarios/dctcp-fattree-permutation.toml", &sets);
    assert_eq!(a.digest(), b.digest());
    let mut sa = a.summary.clone();
    let mut sb = b.summary.clone();
    for s in [&mut sa, &mut sb] {
        s.as_object_mut().unwrap().remove("wall_seconds");
        s.as_object_mut().unwrap().remove("events_per_second");
        s.as_object_mut().unwrap().remove("memory");
    }
    assert_eq!(sa, sb);
}

#[test]
fn a_different_seed_changes_the_permutation() {
    let a = run(
        "scenarios/dctcp-fattree-permutation.toml",
        &["sim.duration=2ms", "sim.warmup=1ms"],
    );
    let b = run(
        "scenarios/dctcp-fattree-permutation.toml",
        &["sim.duration=2ms", "sim.warmup=1ms", "sim.seed=2"],
    );
    assert_ne!(a.digest(), b.digest());
}

#[test]
fn parallel_runs_match_serial_runs() {
    let serial = run("scenarios/tcp-incast.toml", &[]).digest().to_string();
    let handles: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| run("scenarios/tcp-incast.toml", &[]).digest().to_string()))
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), serial);
    }
}

/// ExpressPass draws credit jitter and sizes from per-flow streams: same seed, same bytes;
/// another seed, another run.
#[test]
fn xpass_runs_are_deterministic_and_seeded() {
    let sets = [
        "sim.duration=8ms",
        "sim.warmup=2ms",
        "transport.credit_size=[76, 92]",
    ];
    let a = run("scenarios/xpass-dumbbell.toml", &sets);
    let b = run("scenarios/xpass-dumbbell.toml", &sets);
    assert_eq!(a.digest(), b.digest());
    let mut other = sets.to_vec();
    other.push("sim.seed=9");
    assert_ne!(
        run("scenarios/xpass-dumbbell.toml", &other).digest(),
        a.digest()
    );
}

/// Results written and read back are the same results (a repro reuses complete runs this
/// way): every row, the buckets, the tiers, the samples and the summary.
#[test]
fn written_results_load_back_unchanged() {
    let r = run(
        "scenarios/websearch-star.toml",
        &[
            "generators[0].pattern.max_flows=200",
            "output.timeseries={ every = \"1ms\", flows = [0, 1] }",
        ],
    );
    let guard = tempfile::Builder::new()
        .prefix("dcsim-load-")
        .tempdir()
        .unwrap();
    let dir = guard.path().join("results");
    r.write(&dir).unwrap();
    let l = dcsim::Results::load(&dir).unwrap();
    guard.close().unwrap();
    assert_eq!(l.summary, r.summary);
    assert_eq!(
        format!("{:?}", l.flows().unwrap()),
        format!("{:?}", r.flows().unwrap())
    );
    assert_eq!(format!("{:?}", l.ports), format!("{:?}", r.ports));
    assert_eq!(format!("{:?}", l.buckets), format!("{:?}", r.buckets));
    assert_eq!(format!("{:?}", l.tiers), format!("{:?}", r.tiers));
    assert!(r.samples().unwrap().is_some_and(|s| !s.is_empty()));
    assert_eq!(
        format!("{:?}", l.samples().unwrap()),
        format!("{:?}", r.samples().unwrap())
    );
    assert_eq!(l.digest(), r.digest());
}

/// A run that mixes transports has each transport's counters in columns of its own, empty
/// for the other transport's flows, totalled per transport in the summary, and read back
/// unchanged.
#[test]
fn per_transport_counters_have_their_own_columns() {
    let r = run(
        "scenarios/xpass-dumbbell.toml",
        &[
            "sim.duration=3ms",
            "sim.warmup=1ms",
            "transports.tcp={ kind = \"tcp\", cc = \"dctcp\" }",
            "flows[1].transport=tcp",
            "flows[1].start=0ms",
        ],
    );
    let cols = [
        "timeouts",
        "loss_probes",
        "rwnd_limited",
        "sndbuf_limited",
        "credits_sent",
        "credits_wasted",
    ];
    let xp = &r.flows().unwrap()[0];
    let tcp = &r.flows().unwrap()[1];
    assert_eq!(
        (xp.transport.as_str(), tcp.transport.as_str()),
        ("expresspass", "dctcp")
    );
    assert!(xp.counters["credits_sent"] > 0 && !xp.counters.contains_key("timeouts"));
    assert!(tcp.counters.contains_key("timeouts") && !tcp.counters.contains_key("credits_sent"));
    let totals = &r.summary["by_transport"];
    assert_eq!(
        totals["expresspass"]["credits_sent"],
        xp.counters["credits_sent"]
    );
    assert_eq!(totals["tcp"]["timeouts"], tcp.counters["timeouts"]);
    let guard = tempfile::Builder::new()
        .prefix("dcsim-counters-")
        .tempdir()
        .unwrap();
    let dir = guard.path().join("results");
    r.write(&dir).unwrap();
    let text = std::fs::read_to_string(dir.join("flows.csv")).unwrap();
    let l = dcsim::Results::load(&dir).unwrap();
    guard.close().unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - cols.len()..],
        cols,
        "TCP's columns first (registration order)"
    );
    assert_eq!(
        format!("{:?}", l.flows().unwrap()),
        format!("{:?}", r.flows().unwrap())
    );
}

/// DX with timestamp errors, HULL (random pacer association) and RCP (jittered first
/// update) draw from seeded streams: same seed, same bytes; another seed, another run.
#[test]
fn dx_hull_rcp_runs_are_deterministic_and_seeded() {
    for (file, sets) in [
        (
            "scenarios/dx-dumbbell.toml",
            &["transport.cc={ kind = \"dx\", threshold = \"10us\", \
                 measurement = { kind = \"timestamps\", stack_delay = \"2us\" } }"][..],
        ),
        ("scenarios/hull-dumbbell.toml", &[][..]),
        ("scenarios/rcp-dumbbell.toml", &[][..]),
    ] {
        let mut sets: Vec<&str> = sets.to_vec();
        sets.extend(["sim.duration=8ms", "sim.warmup=2ms"]);
        let a = run(file, &sets);
        let b = run(file, &sets);
        assert_eq!(a.digest(), b.digest(), "{file}");
        sets.push("sim.seed=5");
        assert_ne!(run(file, &sets).digest(), a.digest(), "{file}");
    }
}

/// The incast protocols are deterministic too: Pulser's EIN ports and senders, ICTCP's
/// per-host receive windows and the Ideal scheme's oracle give byte-identical results for a
/// seed, in parallel as serially.
#[test]
fn incast_protocols_are_deterministic() {
    let pulser = || {
        run("scenarios/pulser-incast.toml", &[])
            .digest()
            .to_string()
    };
    let ictcp = || {
        run(
            "scenarios/tcp-incast.toml",
            &["transport.ictcp={}", "transport.cc=cubic"],
        )
        .digest()
        .to_string()
    };
    let ideal = || {
        run(
            "scenarios/websearch-star.toml",
            &[r#"transport={kind="ideal"}"#],
        )
        .digest()
        .to_string()
    };
    let (p, i, o) = (pulser(), ictcp(), ideal());
    let threads: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || (pulser(), ictcp(), ideal())))
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), (p.clone(), i.clone(), o.clone()));
    }
}

/// A run with the SDN ECN controller (probes, delayed rules, timeouts) is byte-identical
/// for a seed, in parallel as serially.
#[test]
fn controller_runs_are_deterministic() {
    let go = || run("scenarios/sdn-ecn-star.toml", &[]).digest().to_string();
    let a = go();
    let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(go)).collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), a);
    }
}
