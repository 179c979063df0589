//! Finished flows leave the flow table for a file while a run goes on; results are the
//! same as when every flow stays.

use dcsim::{Results, ScenarioSpec, World};
use dcsim_engine::Dur;

use crate::root;

/// Runs `file` with finished flows kept for `grace` (`None`: kept throughout).
fn run_keeping(file: &str, sets: &[&str], grace: Option<Dur>) -> Results {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let spec = ScenarioSpec::load(&root().join(file), &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut world = World::new(spec.build(file).unwrap_or_else(|e| panic!("{e}"))).unwrap();
    world.keep_finished_flows_for(grace);
    world.run(&mut |_| {});
    Results::collect(&mut world)
}

/// Flows that leave the table at once (the most stragglers after they left: ExpressPass
/// credits still in flight, TCP's last ACKs) and after a short grace give the files and
/// summary of a run that keeps every flow: web-search flows over TCP and ExpressPass
/// (with a warm-up that starts after some flows left), and incasts with timeouts.
#[test]
fn results_are_the_same_whether_finished_flows_stay_or_leave() {
    let cases: &[(&str, &[&str])] = &[
        ("scenarios/websearch-leafspine.toml", &[]),
        (
            "scenarios/websearch-leafspine.toml",
            &["transport.kind=\"expresspass\"", "sim.warmup=\"3ms\""],
        ),
        ("scenarios/xpass-incast.toml", &[]),
        ("scenarios/tcp-incast.toml", &[]),
    ];
    for &(file, sets) in cases {
        let kept = run_keeping(file, sets, None);
        assert_eq!(kept.summary["memory"]["flows_left_table"], 0, "{file}");
        for grace in [Dur::ZERO, Dur::from_us(50)] {
            let left = run_keeping(file, sets, Some(grace));
            let what = format!("{file} {sets:?} grace {grace:?}");
            assert_eq!(left.digest(), kept.digest(), "{what}");
            let comparable = |r: &Results| {
                let mut s = r.summary.as_object().unwrap().clone();
                for k in ["wall_seconds", "events_per_second", "memory"] {
                    s.remove(k);
                }
                s
            };
            assert_eq!(comparable(&left), comparable(&kept), "{what}");
            assert_eq!(left.flows().unwrap().len(), kept.flows().unwrap().len());
            let n = left.summary["memory"]["flows_left_table"].as_u64().unwrap();
            let done = kept.summary["flows_completed"].as_u64().unwrap();
            assert!(
                n > 0 && n <= done,
                "{what}: {n} flows left, {done} completed"
            );
        }
    }
}
