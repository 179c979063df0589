//! The scenario parser and validator on arbitrary text: any input is either a scenario or
//! one error, never a panic or an abort. Run with `DCSIM_MAX_MEMORY_MB` below the fuzzer's
//! RSS limit, so that the validator's memory estimate refuses what would not fit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = dcsim::ScenarioSpec::parse(text, "fuzz.toml", &[]) {
        let _ = spec.build("fuzz.toml");
    }
});
