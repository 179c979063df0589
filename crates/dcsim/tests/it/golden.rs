//! Every example scenario gives the digest recorded in `scenarios/digests.json`.
//!
//! The same file is compared by `tools/digests.py` against CI's optimised build and, in
//! `.ci/extended`, the release and profile-guided builds: results do not depend on how the
//! simulator was compiled. A change meant to alter results updates the file
//! (`tools/digests.py BIN --update`) in the same commit.

use std::collections::BTreeMap;

use crate::{root, run};

#[test]
fn every_example_scenario_gives_its_recorded_digest() {
    let golden = root().join("scenarios/digests.json");
    let text = std::fs::read_to_string(&golden).expect("scenarios/digests.json");
    let want: BTreeMap<String, String> = serde_json::from_str(&text).expect("a JSON object");
    let mut names: Vec<String> = std::fs::read_dir(root().join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| {
            let p = e.expect("a folder entry").path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        want.keys().cloned().collect::<Vec<_>>(),
        "scenarios/digests.json names every example scenario, and only those"
    );
    // One thread per scenario: the test takes about as long as the longest run.
    let got: BTreeMap<String, String> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|n| {
                s.spawn(move || {
                    let r = run(&format!("scenarios/{n}.toml"), &[]);
                    (n.clone(), r.digest().to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let differ: Vec<String> = got
        .iter()
        .filter(|(n, d)| want[*n] != **d)
        .map(|(n, d)| format!("{n}: recorded {}, now {d}", want[n]))
        .collect();
    assert!(
        differ.is_empty(),
        "results changed (update scenarios/digests.json with tools/digests.py if meant):\n{}",
        differ.join("\n")
    );
}
