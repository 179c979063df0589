//! What the fuzz targets share: the bounded run of a checked scenario and its conservation
//! check (`scenario_run`, `structured`).

use dcsim::engine::{Dur, Time};

/// Runs `scenario` for at most 200 µs of simulated time, in steps of 10 µs, stopping after
/// the step in which it passes 2 million events; then asserts that packets are conserved
/// (created = delivered + dropped + in the network). A scenario the world refuses is
/// skipped: that is an error message, not a bug.
pub fn run_bounded(scenario: dcsim::Scenario) {
    let Ok(mut world) = dcsim::World::new(scenario) else {
        return;
    };
    let mut events = 0u64;
    let horizon = Time::from_dur(Dur::from_us(200));
    let step = Dur::from_us(10);
    let mut t = Time::ZERO;
    while t < horizon && events < 2_000_000 {
        t += step;
        world.run_until(t, &mut |p| events = p.events);
    }
    world.finish();
    let r = dcsim::Results::collect(&mut world);
    let s = &r.summary;
    let n = |k: &str| s[k].as_u64().unwrap_or(0);
    assert_eq!(
        n("packets_created"),
        n("packets_delivered") + n("packets_dropped") + n("packets_in_network"),
        "conservation"
    );
    if let Some(e) = s["event_log"].as_object() {
        assert!(e["rows"].as_u64().unwrap() <= 1000, "event log over max_rows");
    }
    // A trace of one host sees each packet-hop at most once (its NIC's link and its edge
    // switch's link to it), and writes every file it names within its bound.
    if let Some(traces) = s["packet_traces"].as_array()
        && traces.len() == 1
    {
        let t = &traces[0];
        let seen = t["packets"].as_u64().unwrap() + t["packets_over_max_bytes"].as_u64().unwrap();
        assert!(seen <= n("packet_hops"), "trace: {seen} packets, {} hops", n("packet_hops"));
        let max = s["resolved_scenario"]["output"]["trace"]["max_bytes"].as_str().unwrap();
        let max: dcsim::engine::ByteSize = max.parse().unwrap();
        assert!(t["bytes"].as_u64().unwrap() <= max.0.max(24), "trace over max_bytes");
        let files = r.files_with(None, b"{}").expect("trace written");
        assert!(files.iter().any(|(name, _)| *name == t["file"].as_str().unwrap()));
    }
}
