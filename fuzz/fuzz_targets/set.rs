//! `--set PATH=VALUE` overrides on the example scenarios: the first byte picks a scenario,
//! each further line of the input is one override (at most 8), and the result is parsed
//! and checked as `dcsim check FILE --set ...` does. No panic, no hang; a failure is one
//! non-empty message (the file's own error, or the override to blame).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Ok(sets) = std::str::from_utf8(rest) else {
        return;
    };
    let sets: Vec<String> = sets.lines().take(8).map(str::to_string).collect();
    let (path, text) = SCENARIOS[usize::from(sel) % SCENARIOS.len()];
    let result = dcsim::ScenarioSpec::parse_file_text(text, Path::new(path), &sets)
        .and_then(|spec| spec.build(path));
    if let Err(e) = result {
        assert!(!e.message.trim().is_empty(), "empty message for {sets:?}");
    }
});
