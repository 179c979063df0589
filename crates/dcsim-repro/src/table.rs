//! The verdict table of the documentation, made from experiments' result.json files and
//! never written by hand: one row per claim with its measured value, bound and verdict,
//! and one per experiment without a result, in the order `dcsim list` gives.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::EXPERIMENTS;
use crate::verdict::num_beside;

/// The result.json files found at `paths`: each path is a result.json file (or an archived
/// copy, `NAME.json`), an experiment's folder, or a folder of experiments' folders (as
/// `dcsim repro --all` writes). Each is returned with the experiment it names.
///
/// # Errors
/// A path that does not exist, a file that is not a result.json of a known experiment, or
/// two results of one experiment.
pub fn read(paths: &[PathBuf]) -> Result<Vec<(String, Value)>, String> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_file() {
            files.push(p.clone());
        } else if p.join("result.json").is_file() {
            files.push(p.join("result.json"));
        } else if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("{}: {e}", p.display()))?
                .flatten()
                .map(|e| e.path())
                .filter_map(|e| {
                    if e.join("result.json").is_file() {
                        Some(e.join("result.json"))
                    } else if e.extension().is_some_and(|x| x == "json") {
                        Some(e)
                    } else {
                        None
                    }
                })
                .collect();
            if found.is_empty() {
                return Err(format!(
                    "{}: no result.json in it or in its folders",
                    p.display()
                ));
            }
            found.sort();
            files.extend(found);
        } else {
            return Err(format!("{}: no such file or folder", p.display()));
        }
    }
    let mut out: Vec<(String, Value)> = Vec::new();
    for f in files {
        let v = read_one(&f)?;
        let name = v["experiment"].as_str().unwrap_or_default().to_string();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!(
                "{}: a second result of {name}; give one per experiment",
                f.display()
            ));
        }
        out.push((name, v));
    }
    Ok(out)
}

fn read_one(f: &Path) -> Result<Value, String> {
    let text = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
    let v: Value = serde_json::from_slice(&text)
        .map_err(|e| format!("{}: not a result.json: {e}", f.display()))?;
    let name = v["experiment"].as_str().ok_or_else(|| {
        format!(
            "{}: not a result.json of `dcsim repro` (it names no experiment)",
            f.display()
        )
    })?;
    if !EXPERIMENTS.iter().any(|e| e.name == name) {
        return Err(format!("{}: no experiment named {name:?}", f.display()));
    }
    if !v["claims"].is_array() || !v["checks"].is_array() {
        return Err(format!(
            "{}: {name}'s result has no claims and checks (written before they were stated; run it again)",
            f.display()
        ));
    }
    Ok(v)
}

/// A cell's text: the `|` of Markdown escaped, on one line.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The Markdown table of the claims of `results` (from [`read`]), and below it the checks
/// that each experiment ran and passed. Experiments without a result are listed as such.
pub fn markdown(results: &[(String, Value)]) -> String {
    let mut s = String::from(
        "| experiment | the paper's claim | what is measured | measured | bound | verdict |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut checks =
        String::from("| experiment | form | checks passed | checks failed |\n|---|---|---|---|\n");
    for e in EXPERIMENTS {
        let Some((_, r)) = results.iter().find(|(n, _)| n == e.name) else {
            s.push_str(&format!(
                "| {} | | | | | no result of its full form since its claims were stated |\n",
                e.name
            ));
            continue;
        };
        let quick = r["quick"].as_bool().unwrap_or(true);
        let form = if quick {
            "quick (decides nothing)"
        } else {
            "full"
        };
        let claims = r["claims"].as_array().map_or(&[][..], Vec::as_slice);
        if claims.is_empty() {
            s.push_str(&format!("| {} | (checks only) | | | | |\n", e.name));
        }
        // Grouped by the paper's statement, in the order each first appears, so that each
        // statement is shown once.
        let paper_of = |c: &Value| c["paper"].as_str().unwrap_or_default().to_string();
        let mut papers: Vec<String> = Vec::new();
        for c in claims {
            if !papers.contains(&paper_of(c)) {
                papers.push(paper_of(c));
            }
        }
        let mut grouped: Vec<&Value> = claims.iter().collect();
        grouped.sort_by_key(|c| papers.iter().position(|p| *p == paper_of(c)));
        let mut last_paper = "";
        for c in grouped {
            let paper = c["paper"].as_str().unwrap_or_default();
            let shown = if paper == last_paper { "" } else { paper };
            last_paper = paper;
            let measured = c["measured"].as_f64().map_or("missing".into(), |v| {
                num_beside(v, c["bound"].as_str().unwrap_or_default())
            });
            let verdict = if quick {
                "cannot decide (quick form)".to_string()
            } else {
                format!("**{}**", c["verdict"].as_str().unwrap_or("?"))
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                e.name,
                cell(shown),
                cell(c["metric"].as_str().unwrap_or_default()),
                measured,
                cell(c["bound"].as_str().unwrap_or_default()),
                verdict
            ));
        }
        let all = r["checks"].as_array().map_or(&[][..], Vec::as_slice);
        let failed: Vec<&str> = all
            .iter()
            .filter(|c| c["passed"].as_bool() != Some(true))
            .map(|c| c["id"].as_str().unwrap_or("?"))
            .collect();
        checks.push_str(&format!(
            "| {} | {form} | {} of {} | {} |\n",
            e.name,
            all.len() - failed.len(),
            all.len(),
            if failed.is_empty() {
                "none".to_string()
            } else {
                cell(&failed.join(", "))
            }
        ));
    }
    s.push('\n');
    s.push_str(&checks);
    s
}

/// One experiment per row: how many of its claims the full form reproduced, and which
/// differ (the claim's key, the value and the bound).
pub fn summary(results: &[(String, Value)]) -> String {
    let mut s = String::from(
        "| experiment | claims reproduced | claims that differ (measured; bound) |\n|---|---|---|\n",
    );
    for e in EXPERIMENTS {
        let Some((_, r)) = results.iter().find(|(n, _)| n == e.name) else {
            s.push_str(&format!("| {} | no full result yet | |\n", e.name));
            continue;
        };
        let claims = r["claims"].as_array().map_or(&[][..], Vec::as_slice);
        if claims.is_empty() {
            s.push_str(&format!("| {} | (checks only) | |\n", e.name));
            continue;
        }
        if r["quick"].as_bool().unwrap_or(true) {
            s.push_str(&format!("| {} | quick form: decides nothing | |\n", e.name));
            continue;
        }
        let differ: Vec<String> = claims
            .iter()
            .filter(|c| c["verdict"].as_str() != Some("REPRODUCED"))
            .map(|c| {
                format!(
                    "{} ({}; {})",
                    c["id"].as_str().unwrap_or("?"),
                    c["measured"].as_f64().map_or("missing".into(), |v| {
                        num_beside(v, c["bound"].as_str().unwrap_or_default())
                    }),
                    c["bound"].as_str().unwrap_or_default()
                )
            })
            .collect();
        s.push_str(&format!(
            "| {} | {} of {} | {} |\n",
            e.name,
            claims.len() - differ.len(),
            claims.len(),
            cell(&differ.join(", "))
        ));
    }
    s
}

/// What a pair of markers in a Markdown file holds: the whole table or the summary.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    /// [`markdown`].
    Table,
    /// [`summary`].
    Summary,
}

impl Part {
    /// The line before the generated text.
    pub fn begin(self) -> &'static str {
        match self {
            Self::Table => {
                "<!-- verdicts: made by `dcsim verdicts`; edit the results, not this table -->"
            }
            Self::Summary => {
                "<!-- verdict summary: made by `dcsim verdicts`; edit the results, not this table -->"
            }
        }
    }

    /// The line after it.
    pub fn end(self) -> &'static str {
        match self {
            Self::Table => "<!-- end of verdicts -->",
            Self::Summary => "<!-- end of verdict summary -->",
        }
    }

    /// The text of this part for `results`.
    pub fn text(self, results: &[(String, Value)]) -> String {
        match self {
            Self::Table => markdown(results),
            Self::Summary => summary(results),
        }
    }
}

/// `doc` with the text between the markers of every [`Part`] it has replaced by that
/// part's text for `results`.
///
/// # Errors
/// The file has no markers, or a part's end marker is missing or before its start.
pub fn fill(doc: &str, results: &[(String, Value)]) -> Result<String, String> {
    let mut out = doc.to_string();
    let mut any = false;
    for part in [Part::Table, Part::Summary] {
        let Some(b) = out.find(part.begin()) else {
            continue;
        };
        let body = b + part.begin().len();
        let Some(e) = out[body..].find(part.end()).map(|e| body + e) else {
            return Err(format!("{} has no {} below it", part.begin(), part.end()));
        };
        out = format!("{}\n\n{}\n{}", &out[..body], part.text(results), &out[e..]);
        any = true;
    }
    if any {
        Ok(out)
    } else {
        Err(format!(
            "no generated table to replace: the file needs the lines {} and {} (or {} and {})",
            Part::Table.begin(),
            Part::Table.end(),
            Part::Summary.begin(),
            Part::Summary.end()
        ))
    }
}

/// The text of `part` in a Markdown file, as [`fill`] writes it.
pub fn between_markers(doc: &str, part: Part) -> Option<&str> {
    let b = doc.find(part.begin())? + part.begin().len();
    let e = b + doc[b..].find(part.end())?;
    doc.get(b..e)
        .map(|t| t.strip_prefix("\n\n").unwrap_or(t))
        .map(|t| t.strip_suffix('\n').unwrap_or(t))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_row_per_claim_and_a_row_for_each_experiment_without_a_result() {
        let r = json!({
            "experiment": "dx-queue", "quick": false,
            "claims": [
                {"id": "a", "paper": "DX | 2017", "metric": "m1", "measured": 5.4321, "bound": "≥ 5.33", "verdict": "REPRODUCED"},
                {"id": "b", "paper": "DX | 2017", "metric": "m2", "measured": 1.2, "bound": "≥ 1.6", "verdict": "DIFFERS"}
            ],
            "checks": [{"id": "c1", "passed": true}, {"id": "c2", "passed": false}]
        });
        let t = markdown(&[("dx-queue".into(), r.clone())]);
        assert!(
            t.contains("| dx-queue | DX \\| 2017 | m1 | 5.432 | ≥ 5.33 | **REPRODUCED** |"),
            "{t}"
        );
        assert!(
            t.contains("| dx-queue |  | m2 | 1.2 | ≥ 1.6 | **DIFFERS** |"),
            "{t}"
        );
        assert!(t.contains("| dx-queue | full | 1 of 2 | c2 |"), "{t}");
        let sum = summary(&[("dx-queue".into(), r)]);
        assert!(
            sum.contains("| dx-queue | 1 of 2 | b (1.2; ≥ 1.6) |"),
            "{sum}"
        );
        assert!(sum.contains("| sdn-ecn | no full result yet | |"), "{sum}");
        let doc = format!(
            "a\n{}\nold\n{}\nb\n",
            Part::Summary.begin(),
            Part::Summary.end()
        );
        let filled = fill(&doc, &[]).unwrap();
        assert!(filled.starts_with("a\n<!-- verdict summary") && filled.ends_with("-->\nb\n"));
        assert!(!filled.contains("old") && filled.contains("| sdn-ecn | no full result yet"));
        assert!(
            fill("no markers", &[])
                .unwrap_err()
                .contains("needs the lines")
        );
        for e in EXPERIMENTS.iter().filter(|e| e.name != "dx-queue") {
            assert!(
                t.contains(&format!(
                    "| {} | | | | | no result of its full form",
                    e.name
                )),
                "{}",
                e.name
            );
        }
    }

    /// The table of docs/reproductions.md is the one the archived full results make, and
    /// every archived result is a full form filed under its experiment's name.
    #[test]
    fn the_docs_table_is_made_from_the_archived_full_results() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let archive = root.join("docs/results");
        let results = read(std::slice::from_ref(&archive)).unwrap();
        for (name, r) in &results {
            assert_eq!(
                r["quick"],
                Value::Bool(false),
                "{name}: a quick form archived"
            );
            assert!(
                archive.join(format!("{name}.json")).is_file(),
                "{name}: archived under another name"
            );
        }
        for (file, part) in [
            ("docs/reproductions.md", Part::Table),
            ("README.md", Part::Summary),
        ] {
            let doc = std::fs::read_to_string(root.join(file)).unwrap();
            let shown = between_markers(&doc, part).expect("the file has the markers");
            assert!(
                shown == part.text(&results),
                "{file}'s table is not the one docs/results makes; run \
                 `dcsim verdicts docs/results --into {file}`"
            );
            let again = fill(&doc, &results).unwrap();
            assert!(again == doc, "{file}: filling it again changes it");
        }
    }

    #[test]
    fn a_quick_result_decides_nothing_and_bad_files_are_refused() {
        let r = json!({"experiment": "dx-queue", "quick": true,
            "claims": [{"paper": "p", "metric": "m", "measured": 1.0, "bound": "≤ 2", "verdict": "smoke"}],
            "checks": []});
        let t = markdown(&[("dx-queue".into(), r)]);
        assert!(
            t.contains("| 1 | ≤ 2 | cannot decide (quick form) |"),
            "{t}"
        );
        assert!(
            t.contains("| dx-queue | quick (decides nothing) | 0 of 0 | none |"),
            "{t}"
        );
        let dir = tempfile::Builder::new()
            .prefix("dcsim-table-")
            .tempdir()
            .unwrap();
        let f = dir.path().join("x.json");
        std::fs::write(&f, r#"{"experiment": "nope", "claims": [], "checks": []}"#).unwrap();
        let e = read(std::slice::from_ref(&f)).unwrap_err();
        assert!(e.contains("no experiment named \"nope\""), "{e}");
        std::fs::write(&f, r#"{"experiment": "dx-queue"}"#).unwrap();
        let e = read(std::slice::from_ref(&f)).unwrap_err();
        assert!(e.contains("no claims and checks"), "{e}");
        let ok = r#"{"experiment": "dx-queue", "quick": false, "claims": [], "checks": []}"#;
        std::fs::write(&f, ok).unwrap();
        std::fs::write(dir.path().join("y.json"), ok).unwrap();
        let e = read(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(e.contains("a second result of dx-queue"), "{e}");
        let e = read(&[dir.path().join("missing")]).unwrap_err();
        assert!(e.contains("no such file or folder"), "{e}");
    }
}
