//! Valid-looking scenarios run for a bounded time: an input that parses and passes the
//! check runs up to 200 µs of simulated time (at most 2 million events), and must neither
//! panic nor break packet conservation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(spec) = dcsim::ScenarioSpec::parse(text, "fuzz.toml", &[]) else {
        return;
    };
    let Ok(scenario) = spec.build("fuzz.toml") else {
        return;
    };
    let Ok(mut world) = dcsim::World::new(scenario) else {
        return;
    };
    let mut events = 0u64;
    let horizon = dcsim::engine::Time::from_dur(dcsim::engine::Dur::from_us(200));
    let step = dcsim::engine::Dur::from_us(10);
    let mut t = dcsim::engine::Time::ZERO;
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
});
