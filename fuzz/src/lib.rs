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
}
