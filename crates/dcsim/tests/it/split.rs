//! A world run on the exact-order parallel engine gives the one-thread run's outputs.

use dcsim::net::HostId;
use dcsim::split::{Engine, Partition, SplitError};
use dcsim::{Results, ScenarioSpec, World};

use crate::root;

/// The world of a scenario file, without the outputs the engine refuses.
fn world(file: &str, sets: &[&str]) -> World {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let path = root().join(file);
    let mut spec = ScenarioSpec::load(&path, &sets).unwrap_or_else(|e| panic!("{e}"));
    spec.output.timeseries = None;
    spec.output.queue_occupancy = None;
    spec.output.trace = None;
    World::new(spec.build(file).unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// The summary without what depends on the wall clock or the scheduler used.
fn comparable(r: &Results) -> serde_json::Map<String, serde_json::Value> {
    let mut s = r.summary.as_object().unwrap().clone();
    for k in ["wall_seconds", "events_per_second", "scheduler", "memory"] {
        s.remove(k);
    }
    if let Some(fp) = s.get_mut("fastpass").and_then(|f| f.as_object_mut()) {
        fp.retain(|k, _| !k.starts_with("arbiter_compute"));
    }
    s
}

/// The keys of the summary whose values differ.
fn differences(
    a: &serde_json::Map<String, serde_json::Value>,
    b: &serde_json::Map<String, serde_json::Value>,
) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: {:?} != {:?}", a.get(k), b.get(k)))
        .collect()
}

fn same_outputs(file: &str, sets: &[&str]) {
    let mut one = world(file, sets);
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    assert!(
        want.summary["events"].as_u64().unwrap() > 1000,
        "{file}: too short"
    );
    for engine in [Engine::Reference, Engine::Threads] {
        let mut w = world(file, sets);
        w.run_on_engine(engine)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let got = Results::collect(&mut w);
        assert_eq!(got.digest(), want.digest(), "{file} on {engine:?}");
        let diff = differences(&comparable(&got), &comparable(&want));
        assert!(diff.is_empty(), "{file} on {engine:?}: {diff:?}");
    }
}

#[test]
fn every_example_scenario_gives_the_one_thread_outputs() {
    let cases: &[(&str, &[&str])] = &[
        (
            "scenarios/dctcp-dumbbell.toml",
            &["sim.duration=20ms", "sim.warmup=5ms"],
        ),
        (
            "scenarios/dctcp-fattree-permutation.toml",
            &["sim.duration=3ms", "sim.warmup=1ms"],
        ),
        (
            "scenarios/dx-dumbbell.toml",
            &["sim.duration=20ms", "sim.warmup=5ms"],
        ),
        (
            "scenarios/fastpass-leafspine.toml",
            &["sim.duration=3ms", "sim.warmup=1ms"],
        ),
        (
            "scenarios/hull-dumbbell.toml",
            &["sim.duration=20ms", "sim.warmup=5ms"],
        ),
        (
            "scenarios/pulser-incast.toml",
            &["sim.duration=10ms", "sim.warmup=2ms"],
        ),
        (
            "scenarios/rcp-dumbbell.toml",
            &["sim.duration=10ms", "sim.warmup=2ms"],
        ),
        (
            "scenarios/sdn-ecn-star.toml",
            &["sim.duration=5s", "sim.warmup=1s"],
        ),
        ("scenarios/tcp-incast.toml", &[]),
        (
            "scenarios/websearch-star.toml",
            &["generators[0].pattern.max_flows=300"],
        ),
        (
            "scenarios/xpass-dumbbell.toml",
            &["sim.duration=5ms", "sim.warmup=1ms"],
        ),
        ("scenarios/xpass-incast.toml", &[]),
    ];
    for (file, sets) in cases {
        same_outputs(file, sets);
    }
}

#[test]
fn a_time_series_is_refused_by_name() {
    let sets = vec!["sim.duration=1ms".to_string(), "sim.warmup=0ms".to_string()];
    let path = root().join("scenarios/dctcp-dumbbell.toml");
    let spec = ScenarioSpec::load(&path, &sets).unwrap();
    assert!(spec.output.timeseries.is_some());
    let mut w = World::new(spec.build("dumbbell").unwrap()).unwrap();
    let err = w.run_on_engine(Engine::Reference).unwrap_err();
    assert_eq!(
        err,
        SplitError::Unsupported {
            feature: "output.timeseries"
        }
    );
    assert!(err.to_string().contains("output.timeseries"), "{err}");
}

#[test]
fn a_world_runs_once() {
    let mut w = world("scenarios/tcp-incast.toml", &[]);
    w.run(&mut |_| {});
    assert_eq!(
        w.run_on_engine(Engine::Reference).unwrap_err(),
        SplitError::AlreadyRun
    );
}

/// The network of the split tests: the 192-host ExpressPass fat-tree (8 pods of 24
/// hosts) with ECN queues and DCTCP.
const PODS_NET: &str = r#"[topology]
kind = "fat-tree"
preset = "xpass"
[routing]
mode = "symmetric-ecmp"
[queue]
kind = "ecn"
buffer = "250pkts"
mark_threshold = "65pkts"
[transport]
kind = "tcp"
cc = "dctcp"
"#;

/// A 192-host fat-tree (8 pods of 24 hosts) with DCTCP flows: in each pod, every host
/// sends to the host 7 places on (some under the same ToR, most through an aggregation
/// switch), and to a host of the other pod of its pair (pods 0 and 1, 2 and 3, ...:
/// through a core switch); every third flow 300 KB starting at a spread of times, the
/// others long-lived. Plus `extra` flows as `(src, dst)`.
fn pods_scenario(extra: &[(u32, u32)]) -> World {
    pods_scenario_with(extra, "", &[])
}

/// [`pods_scenario`], with `tail` added to the scenario's text, and `sets` (`KEY=VALUE`).
fn pods_scenario_with(extra: &[(u32, u32)], tail: &str, sets: &[&str]) -> World {
    let mut text = format!(
        "schema_version = 1\n[sim]\nduration = \"4ms\"\nwarmup = \"1ms\"\nseed = 11\n{PODS_NET}"
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
    flows.extend_from_slice(extra);
    for (i, (src, dst)) in flows.into_iter().enumerate() {
        let (size, start) = if i % 3 == 0 {
            ("\"300KB\"", format!("\"{}us\"", 37 * (i % 50)))
        } else {
            ("\"inf\"", "\"0us\"".to_string())
        };
        text.push_str(&format!(
            "[[flows]]\nsrc = {src}\ndst = {dst}\nsize = {size}\nstart = {start}\n"
        ));
    }
    text.push_str(tail);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = ScenarioSpec::parse(&text, "pods", &sets).unwrap_or_else(|e| panic!("{e}"));
    World::new(spec.build("pods").unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// Compares a split run of `make`'s world in `parts` parts on `engine` with the one-thread
/// run `want`.
fn same_split_outputs(make: &dyn Fn() -> World, want: &Results, parts: usize, engine: Engine) {
    let mut w = make();
    w.run_split(engine, parts)
        .unwrap_or_else(|e| panic!("{parts} parts on {engine:?}: {e}"));
    let got = Results::collect(&mut w);
    assert_eq!(got.digest(), want.digest(), "{parts} parts on {engine:?}");
    let (mut got, mut want) = (comparable(&got), comparable(want));
    // The sum of the parts' peaks: at least the whole network's.
    let peak = |s: &mut serde_json::Map<String, serde_json::Value>| {
        s.remove("peak_packets").unwrap().as_u64().unwrap()
    };
    assert!(
        peak(&mut got) >= peak(&mut want),
        "{parts} parts on {engine:?}"
    );
    let diff = differences(&got, &want);
    assert!(diff.is_empty(), "{parts} parts on {engine:?}: {diff:?}");
}

/// Every fourth host also sends to a host two pods on: in two parts of four pods, half of
/// these flows have their ends in different parts, in four parts all of them.
fn flows_two_pods_on() -> Vec<(u32, u32)> {
    (0..192u32)
        .step_by(4)
        .map(|h| (h, (h + 48 + 5) % 192))
        .collect()
}

#[test]
fn flows_with_ends_in_different_parts_give_the_one_thread_outputs() {
    let extra = flows_two_pods_on();
    let make = || pods_scenario(&extra);
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    // Of the flows apart, the 300 KB ones finish (the sender's part tells the receiver's),
    // the others run to the end.
    let first = 384;
    let finished = (first..first + extra.len())
        .filter(|&i| i % 3 == 0 && want.flows().unwrap()[i].end_ns.is_some())
        .count();
    assert!(finished >= 4, "{finished} flows apart finished");
    for (parts, engine) in [
        (2, Engine::Reference),
        (2, Engine::Threads),
        (4, Engine::Reference),
    ] {
        same_split_outputs(&make, &want, parts, engine);
    }
}

/// Ports with timing noise: each draws from its own stream where its part runs it, and the
/// late arrivals cross between parts as they are (the look-ahead, the shortest link delay,
/// only grows with lateness).
#[test]
fn ports_with_jitter_split_give_the_one_thread_outputs() {
    let extra = flows_two_pods_on();
    let make = || pods_scenario_with(&extra, "[ports]\njitter = \"2us\"\n", &[]);
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    let mut exact = pods_scenario(&extra);
    exact.run(&mut |_| {});
    assert_ne!(
        Results::collect(&mut exact).digest(),
        want.digest(),
        "the noise changed nothing"
    );
    for (parts, engine) in [(2, Engine::Reference), (2, Engine::Threads)] {
        same_split_outputs(&make, &want, parts, engine);
    }
}

#[test]
fn a_fat_tree_split_by_pods_gives_the_one_thread_outputs() {
    let mut one = pods_scenario(&[]);
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    let completed = want.summary["flows_completed"].as_u64().unwrap();
    assert!(completed > 30, "{completed} flows completed");
    // Four threads on the machine's two cores would spin more than they work: four parts
    // run on the reference order only (the engine's own tests run four parts on threads).
    for (parts, engine) in [
        (2, Engine::Reference),
        (2, Engine::Threads),
        (4, Engine::Reference),
    ] {
        {
            let mut w = pods_scenario(&[]);
            w.run_split(engine, parts)
                .unwrap_or_else(|e| panic!("{parts} parts on {engine:?}: {e}"));
            let got = Results::collect(&mut w);
            assert_eq!(got.digest(), want.digest(), "{parts} parts on {engine:?}");
            let (mut got, mut want) = (comparable(&got), comparable(&want));
            // The sum of the parts' peaks: at least the whole network's.
            let peak = |s: &mut serde_json::Map<String, serde_json::Value>| {
                s.remove("peak_packets").unwrap().as_u64().unwrap()
            };
            assert!(
                peak(&mut got) >= peak(&mut want),
                "{parts} parts on {engine:?}"
            );
            let diff = differences(&got, &want);
            assert!(diff.is_empty(), "{parts} parts on {engine:?}: {diff:?}");
        }
    }
}

#[test]
fn the_pods_are_given_out_to_even_the_parts_loads() {
    let w = pods_scenario(&[]);
    let net = w.net();
    // Each pod's share of the bytes (per mille, at both ends) in the first 1,000 flows of
    // the xpass-fattree data-mining run, where half the pods in order carry 61 %.
    let pod_load = [106u64, 96, 42, 143, 287, 151, 51, 123];
    let host_load: Vec<u64> = (0..192).map(|h| pod_load[h / 24]).collect();
    let total: u128 = host_load.iter().map(|&w| u128::from(w)).sum();
    let even = Partition::by_pods(net, 2).unwrap();
    assert_eq!(even.heaviest(net, &host_load) * 1000 / total, 612);
    let balanced = Partition::by_pod_load(net, 2, &host_load).unwrap();
    let heaviest = balanced.heaviest(net, &host_load);
    assert!(heaviest * 1000 / total <= 505, "{heaviest} of {total}");
    // In four parts, the heaviest pod alone is a quarter and more.
    let four = Partition::by_pod_load(net, 4, &host_load).unwrap();
    assert_eq!(four.heaviest(net, &host_load), 24 * 287);
    for q in 0..4 {
        assert!(
            (0..192).any(|h| four.part_of(net.host_node(HostId::new(h))) == q),
            "part {q} has no host"
        );
    }
}

#[test]
fn a_split_by_load_gives_the_one_thread_outputs() {
    // A flow more from every host of pods 0 and 1 to another of its pod (two in three
    // long-lived) makes them the heaviest: split evenly by hosts, both would be in the
    // first part.
    let extra: Vec<(u32, u32)> = (0..48u32)
        .map(|i| (i, 24 * (i / 24) + (i % 24 + 11) % 24))
        .collect();
    let make = || pods_scenario(&extra);
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    for engine in [Engine::Reference, Engine::Threads] {
        same_split_outputs(&make, &want, 2, engine);
        let mut w = make();
        w.run_split(engine, 2).unwrap();
        let net = w.net();
        let partition = w.partition().expect("a split run");
        let part = |h: usize| partition.part_of(net.host_node(HostId::new(h)));
        assert_ne!(part(0), part(24), "pods 0 and 1 in one part on {engine:?}");
    }
}

#[test]
fn a_flow_between_parts_with_a_stop_time_is_refused_by_name_before_the_run() {
    let mut w = pods_scenario_with(
        &[],
        "[[flows]]\nsrc = 3\ndst = 100\nsize = \"inf\"\nstop = \"2ms\"\n",
        &[],
    );
    let err = w.run_split(Engine::Threads, 2).unwrap_err();
    assert_eq!(
        err,
        SplitError::Crossing {
            flow: 384,
            src: 3,
            dst: 100
        }
    );
    assert!(
        err.to_string().contains("flow 384 (host 3 to host 100)"),
        "{err}"
    );
    // A flow inside pods, but between parts' halves of the core: none here, so the first
    // refusal is the one above. Too many parts for the pods:
    let mut w = pods_scenario(&[]);
    let err = w.run_split(Engine::Threads, 9).unwrap_err();
    assert!(
        matches!(err, SplitError::Unsplittable { parts: 9, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("8 pods"), "{err}");
    // A refused world has not run: it still runs on one thread, and on the engine.
    assert!(w.run_split(Engine::Threads, 2).is_ok());
}

/// [`pods_scenario`] with the flows of [`flows_two_pods_on`], and 48 flows of 1 KB between
/// parts from 1 ms on, under a retransmission timeout of 5 µs: each is sent again before
/// its acknowledgment can come back, and the copies still on the way reach the receiver
/// after the sender has finished the flow: on one thread, stragglers.
fn spurious_scenario() -> World {
    let tail: String = (0..48u32)
        .map(|h| {
            format!(
                "[[flows]]\nsrc = {}\ndst = {}\nsize = \"1KB\"\nstart = \"{}us\"\n",
                h * 4,
                (h * 4 + 100) % 192,
                1000 + 13 * h
            )
        })
        .collect();
    pods_scenario_with(
        &flows_two_pods_on(),
        &tail,
        &["transport.min_rto=5us", "transport.init_rto=5us"],
    )
}

#[test]
fn stragglers_after_a_finish_decided_in_another_part_are_exact_or_stop_the_run() {
    let mut one = spurious_scenario();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    // The reference order hands each message over right after the handler that sent it:
    // the receiver's part hears of every finish before any later event, and its
    // stragglers are the one-thread run's.
    for parts in [2, 4] {
        same_split_outputs(&spurious_scenario, &want, parts, Engine::Reference);
    }
    // On threads, the receiver's part hears of a finish at the start of the next window,
    // and here one straggler came before that: the run stops rather than differ.
    let mut w = spurious_scenario();
    match w.run_split(Engine::Threads, 2) {
        Err(SplitError::Uncertain { flow, finish, at }) => {
            assert!(at >= finish, "{at:?} < {finish:?}");
            assert!((432..480).contains(&flow), "flow {flow}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        w.run_split(Engine::Threads, 2).unwrap_err(),
        SplitError::AlreadyRun
    );
}

/// The flows a world's generators will add, known before the run (ADR 0010, item 5: every
/// part of a split run must number the flows alike): the one-thread run adds the very
/// same, in the same order, on every example scenario with generators and on two
/// generators whose flows start together.
#[test]
fn the_flows_generators_will_make_are_known_before_the_run() {
    let two = "schema_version = 1\n[sim]\nduration = \"3ms\"\nseed = 5\n[topology]\n\
               kind = \"fat-tree\"\nk = 4\n[transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n\
               [[generators]]\npattern = { kind = \"permutation\", size = \"100KB\" }\n\
               [[generators]]\npattern = { kind = \"pairs\", count = 6, src = 1, dst = 9, \
               size = \"50KB\", start_every = \"250us\" }\n\
               [[generators]]\npattern = { kind = \"poisson\", load = 0.3, load_relative_to = \"host-links\", \
               flow_size = { cdf = \"websearch\" }, max_flows = 40 }\n\
               [[flows]]\nsrc = 2\ndst = 3\nsize = \"20KB\"\n";
    let spec = ScenarioSpec::parse(two, "two", &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut worlds = vec![(
        "three generators".to_string(),
        World::new(spec.build("two").unwrap()).unwrap(),
    )];
    for (file, sets) in [
        (
            "scenarios/dctcp-fattree-permutation.toml",
            &["sim.duration=1ms", "sim.warmup=0ms"][..],
        ),
        ("scenarios/fastpass-leafspine.toml", &["sim.duration=2ms"]),
        ("scenarios/pulser-incast.toml", &["sim.duration=12ms"]),
        ("scenarios/tcp-incast.toml", &[]),
        (
            "scenarios/websearch-star.toml",
            &["generators[0].pattern.max_flows=300"],
        ),
        ("scenarios/xpass-incast.toml", &[]),
    ] {
        worlds.push((file.to_string(), world(file, sets)));
    }
    for (name, mut w) in worlds {
        let planned = w.planned_flows().unwrap();
        let listed = w.scenario().flows.len();
        // Every flow's spec is read after the run.
        w.keep_finished_flows_for(None);
        w.run(&mut |_| {});
        let flows = w.flows();
        let made: Vec<_> = (listed..flows.len())
            .map(|i| *flows.spec(dcsim_transport::FlowId::new(i)))
            .collect();
        let want: Vec<_> = planned.iter().map(|p| p.0).collect();
        assert!(!made.is_empty(), "{name}: no flows generated");
        assert_eq!(want, made, "{name}");
    }
}

/// The 8-pod fat-tree with DCTCP and the generator `pattern`.
fn generator_scenario(pattern: &str) -> World {
    let text = format!(
        "schema_version = 1\n[sim]\nduration = \"3ms\"\nwarmup = \"500us\"\nseed = 3\n\
         {PODS_NET}[[generators]]\npattern = {pattern}\n"
    );
    let spec = ScenarioSpec::parse(&text, "generated", &[]).unwrap_or_else(|e| panic!("{e}"));
    World::new(spec.build("generated").unwrap_or_else(|e| panic!("{e}"))).unwrap()
}

/// A Poisson workload, as the full `xpass-fattree` run has: flows from a generator, nearly
/// all between pods, some of the generator's next starts handed from one part to the
/// other sooner than the look-ahead.
const POISSON: &str = r#"{ kind = "poisson", load = 0.6, load_relative_to = "tor-uplinks", flow_size = { cdf = "websearch" }, max_flows = 2000 }"#;

#[test]
fn a_poisson_workload_split_by_pods_gives_the_one_thread_outputs() {
    let make = || generator_scenario(POISSON);
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    let completed = want.summary["flows_completed"].as_u64().unwrap();
    assert!(completed > 40, "{completed} flows completed");
    for (parts, engine) in [
        (2, Engine::Reference),
        (2, Engine::Threads),
        (4, Engine::Reference),
    ] {
        same_split_outputs(&make, &want, parts, engine);
    }
}

#[test]
fn generators_whose_flows_start_together_split_when_each_part_s_are_together() {
    // Every host's flow starts at time 0, the sources in order: each part starts its own.
    let make = || {
        world(
            "scenarios/dctcp-fattree-permutation.toml",
            &["sim.duration=3ms", "sim.warmup=1ms"],
        )
    };
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    for (parts, engine) in [
        (2, Engine::Reference),
        (2, Engine::Threads),
        (4, Engine::Reference),
    ] {
        same_split_outputs(&make, &want, parts, engine);
    }
    // Incast queries whose responses start together, from responders in any order of the
    // parts, after the first query: refused by name before the run.
    let queries = r#"{ kind = "partition-aggregate", degree = 12, response_size = { fixed = "20KB" }, queries = { every = "200us" } }"#;
    let mut w = generator_scenario(queries);
    let err = w.run_split(Engine::Threads, 2).unwrap_err();
    assert!(
        err.to_string()
            .contains("starts flows in different parts at one time"),
        "{err}"
    );
    // Refused, the world has not changed: it runs on one thread as if never split.
    w.run(&mut |_| {});
    let mut fresh = generator_scenario(queries);
    fresh.run(&mut |_| {});
    assert_eq!(
        Results::collect(&mut w).digest(),
        Results::collect(&mut fresh).digest()
    );
    // With the responses spread over 2 µs, the starts differ: split.
    let spread = r#"{ kind = "partition-aggregate", degree = 12, response_size = { fixed = "20KB" }, queries = { every = "200us" }, jitter = "2us" }"#;
    let make = || generator_scenario(spread);
    let mut one = make();
    one.run(&mut |_| {});
    let want = Results::collect(&mut one);
    same_split_outputs(&make, &want, 2, Engine::Threads);
}
