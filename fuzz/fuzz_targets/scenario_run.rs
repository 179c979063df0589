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
    if let Ok(scenario) = spec.build("fuzz.toml") {
        dcsim_fuzz::run_bounded(scenario);
    }
});
