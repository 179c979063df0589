//! A world run on the exact-order parallel engine gives the one-thread run's outputs.

use dcsim::split::{Engine, SplitError};
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
    for k in ["wall_seconds", "events_per_second", "scheduler"] {
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
