//! `--set PATH=VALUE` overrides on the example scenarios: the first byte picks a scenario,
//! each further line of the input is one override (at most 8), and the result is parsed
//! and checked as `dcsim check FILE --set ...` does. No panic, no hang; a failure is one
//! non-empty message (the file's own error, or the override to blame).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

macro_rules! scenarios {
    ($($dir:literal / $file:literal),* $(,)?) => {
        [$((
            concat!($dir, "/", $file),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../", $dir, "/", $file)),
        )),*]
    };
}

/// `(path, text)` of every scenario in `scenarios/` and `validation/`.
const SCENARIOS: [(&str, &str); 14] = scenarios![
    "scenarios" / "dctcp-dumbbell.toml",
    "scenarios" / "dctcp-fattree-permutation.toml",
    "scenarios" / "dx-dumbbell.toml",
    "scenarios" / "fastpass-leafspine.toml",
    "scenarios" / "hull-dumbbell.toml",
    "scenarios" / "pulser-incast.toml",
    "scenarios" / "rcp-dumbbell.toml",
    "scenarios" / "sdn-ecn-star.toml",
    "scenarios" / "tcp-incast.toml",
    "scenarios" / "websearch-star.toml",
    "scenarios" / "xpass-dumbbell.toml",
    "scenarios" / "xpass-incast.toml",
    "validation" / "shuffle-medium-dctcp.toml",
    "validation" / "shuffle-medium-xpass.toml",
];

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
