//! Integration tests, compiled into one binary: scenario physics, conservation,
//! determinism. The command-line tests are in `crates/dcsim-cli/tests` (they need the
//! binary).

mod conservation;
mod determinism;
mod doc_keys;
mod events;
mod fastpass;
mod golden;
mod memory;
mod processor_sharing;
mod scenario;
mod split;
mod trace;

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a scenario file from the repository with overrides.
pub fn run(file: &str, sets: &[&str]) -> dcsim::Results {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    dcsim::run_file(&root().join(file), &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs scenario text.
pub fn run_text(text: &str) -> (dcsim::World, dcsim::Results) {
    let spec = dcsim::ScenarioSpec::parse(text, "test", &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut world =
        dcsim::World::new(spec.build("test").unwrap_or_else(|e| panic!("{e}"))).unwrap();
    world.run(&mut |_| {});
    let r = dcsim::Results::collect(&mut world);
    (world, r)
}
