//! What an experiment concludes.
//!
//! - **Claims**: the paper's statements the experiment tests, each with the metric
//!   measured, its value and the bound the claim sets. The full form gives each a verdict,
//!   REPRODUCED or DIFFERS; a quick form is too small to decide one (a 99th percentile of a
//!   few hundred flows, seconds instead of minutes), so it reports the value and says so.
//! - **Checks**: what must hold in any form, whatever the paper says: every flow
//!   completes, ExpressPass loses no data packet, an oracle matches its theory. A failed
//!   check fails `dcsim repro` (exit code 1) and CI.
//!
//! Both go into result.json (`claims`, `checks`) and are printed one line each.

use std::fmt;

use serde::Serialize;
use serde_json::{Value, json};

/// The bound a claim or a check sets on a measured value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// At most this.
    AtMost(f64),
    /// At least this.
    AtLeast(f64),
    /// Within `[low, high]`.
    Between(f64, f64),
}

impl Bound {
    /// Whether `v` is within the bound (a value that is not a number never is).
    pub fn holds(self, v: f64) -> bool {
        match self {
            Self::AtMost(b) => v <= b,
            Self::AtLeast(b) => v >= b,
            Self::Between(lo, hi) => (lo..=hi).contains(&v),
        }
    }
}

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AtMost(b) => write!(f, "≤ {}", num(*b)),
            Self::AtLeast(b) => write!(f, "≥ {}", num(*b)),
            Self::Between(lo, hi) => write!(f, "in [{}, {}]", num(*lo), num(*hi)),
        }
    }
}

/// The number at `path` in `r` (`None` where there is none, or a null).
pub fn at(r: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(r, |v, k| v.get(k))?.as_f64()
}

/// The numbers at `path` in `r` under every key of the object at `path[..i]` (`"*"` marks
/// `i`), with their keys: `each(r, &["jain", "expresspass", "*"])`.
pub fn each<'a>(r: &'a Value, path: &[&str]) -> Vec<(&'a str, Option<f64>)> {
    let Some(i) = path.iter().position(|k| *k == "*") else {
        return Vec::new();
    };
    let Some(Value::Object(m)) = path[..i].iter().try_fold(r, |v, k| v.get(k)) else {
        return Vec::new();
    };
    m.iter()
        .map(|(k, v)| (k.as_str(), at(v, &path[i + 1..])))
        .collect()
}

/// The smallest and the largest of `xs`, `None` if any is missing or there are none.
pub fn min_max(xs: impl IntoIterator<Item = Option<f64>>) -> Option<(f64, f64)> {
    let mut out: Option<(f64, f64)> = None;
    for x in xs {
        let x = x?;
        out = Some(out.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
    }
    out
}

/// A number as a reader wants it: four significant digits, no trailing zeros.
pub(crate) fn num(v: f64) -> String {
    num_sig(v, 4)
}

/// A measured value beside the bound it is judged by (as the bound prints): [`num`], with
/// more digits where it would otherwise read as one of the bound's numbers although it
/// differs from it (0.99998 against "≥ 1" is shown as 0.99998, not 1).
pub(crate) fn num_beside(v: f64, bound: &str) -> String {
    let edges: Vec<&str> = bound
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter(|e| !e.is_empty())
        .collect();
    let mut sig = 4;
    loop {
        let s = num_sig(v, sig);
        let clash = edges
            .iter()
            .any(|e| *e == s && e.parse::<f64>().is_ok_and(|b| b.total_cmp(&v).is_ne()));
        if !clash || sig >= 12 {
            return s;
        }
        sig += 1;
    }
}

/// `v` with `sig` significant digits, no trailing zeros.
fn num_sig(v: f64, sig: i32) -> String {
    if v.is_nan() {
        return "missing".into();
    }
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (sig - 1 - v.abs().log10().floor() as i32).clamp(0, sig + 2) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A claim of a paper that an experiment tests.
#[derive(Clone, Debug)]
pub struct Claim {
    /// A short key (`small-flow-p99/websearch/10g`).
    pub id: String,
    /// The claim, with the paper and figure or section it comes from.
    pub paper: &'static str,
    /// What was measured, with its unit.
    pub metric: String,
    /// The value measured.
    pub measured: f64,
    /// What the claim says of it.
    pub bound: Bound,
}

/// Something that must hold in any form of an experiment.
#[derive(Clone, Debug)]
pub struct Check {
    /// A short key.
    pub id: String,
    /// What is checked, with its unit.
    pub what: String,
    /// The value measured.
    pub measured: f64,
    /// The bound it must be within.
    pub bound: Bound,
}

impl Check {
    /// Whether the check holds.
    pub fn passed(&self) -> bool {
        self.bound.holds(self.measured)
    }
}

/// The claims and checks of one experiment run.
#[derive(Clone, Debug, Default)]
pub struct Verdicts {
    /// The claims, in the order the experiment states them.
    pub claims: Vec<Claim>,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

/// A claim's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The measured value is within the claim's bound (full form).
    Reproduced,
    /// It is not (full form).
    Differs,
    /// A quick form: too small to decide.
    Undecided,
}

impl Verdict {
    /// As result.json and the printed line write it.
    pub fn text(self) -> &'static str {
        match self {
            Self::Reproduced => "REPRODUCED",
            Self::Differs => "DIFFERS",
            Self::Undecided => "smoke test (quick form): cannot decide",
        }
    }
}

impl Verdicts {
    /// A claim's verdict: decided only in the full form.
    pub fn verdict(c: &Claim, quick: bool) -> Verdict {
        if quick {
            Verdict::Undecided
        } else if c.bound.holds(c.measured) {
            Verdict::Reproduced
        } else {
            Verdict::Differs
        }
    }

    /// The checks that failed.
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.passed())
    }

    /// result.json's `claims` and `checks`.
    pub fn to_json(&self, quick: bool) -> (Value, Value) {
        let claims = self
            .claims
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "paper": c.paper,
                    "metric": c.metric,
                    "measured": c.measured,
                    "bound": c.bound.to_string(),
                    "verdict": Self::verdict(c, quick).text(),
                })
            })
            .collect();
        let checks = self
            .checks
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "what": c.what,
                    "measured": c.measured,
                    "bound": c.bound.to_string(),
                    "passed": c.passed(),
                })
            })
            .collect();
        (Value::Array(claims), Value::Array(checks))
    }

    /// Adds a claim; a value the result does not hold (`None`) is recorded as missing
    /// and decides nothing (DIFFERS in the full form).
    pub fn claim(
        &mut self,
        id: impl Into<String>,
        paper: &'static str,
        metric: impl Into<String>,
        measured: Option<f64>,
        bound: Bound,
    ) {
        self.claims.push(Claim {
            id: id.into(),
            paper,
            metric: metric.into(),
            measured: measured.unwrap_or(f64::NAN),
            bound,
        });
    }

    /// Adds a check; a value the result does not hold (`None`) fails it.
    pub fn check(
        &mut self,
        id: impl Into<String>,
        what: impl Into<String>,
        measured: Option<f64>,
        bound: Bound,
    ) {
        self.checks.push(Check {
            id: id.into(),
            what: what.into(),
            measured: measured.unwrap_or(f64::NAN),
            bound,
        });
    }

    /// One line per claim and per check, for the terminal.
    pub fn lines(&self, quick: bool) -> Vec<String> {
        let mut out = Vec::new();
        for c in &self.claims {
            out.push(format!(
                "claim {}: {} = {} (claim: {}): {}",
                c.id,
                c.metric,
                num_beside(c.measured, &c.bound.to_string()),
                c.bound,
                Self::verdict(c, quick).text()
            ));
        }
        for c in &self.checks {
            out.push(format!(
                "check {}: {} = {} (must be {}): {}",
                c.id,
                c.what,
                num_beside(c.measured, &c.bound.to_string()),
                c.bound,
                if c.passed() { "ok" } else { "FAILED" }
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_decide_and_print() {
        assert!(Bound::AtMost(1.0).holds(1.0) && !Bound::AtMost(1.0).holds(1.01));
        assert!(Bound::AtLeast(0.9).holds(0.95) && !Bound::AtLeast(0.9).holds(f64::NAN));
        assert!(Bound::Between(1.6, 2.4).holds(2.0) && !Bound::Between(1.6, 2.4).holds(2.5));
        assert_eq!(Bound::Between(1.6, 2.4).to_string(), "in [1.6, 2.4]");
        assert_eq!(num(0.27501415), "0.275");
        assert_eq!(num(1364.0), "1364");
        assert_eq!(num(0.000012345), "0.000012");
        // Beside its bound a value is never shown as the bound it misses.
        assert_eq!(num_beside(0.9999791572478456, "≥ 1"), "0.99998");
        assert_eq!(num_beside(1.0000123, "≤ 1"), "1.00001");
        assert_eq!(num_beside(1.0, "≥ 1"), "1");
        assert_eq!(num_beside(0.48, "≤ 1"), "0.48");
        assert_eq!(num_beside(2.4000001, "in [1.6, 2.4]"), "2.4000001");
        let v = Verdicts {
            claims: vec![Claim {
                id: "p99".into(),
                paper: "smaller tail",
                metric: "ratio".into(),
                measured: 0.48,
                bound: Bound::AtMost(1.0),
            }],
            checks: vec![Check {
                id: "loss".into(),
                what: "data drops".into(),
                measured: 1.0,
                bound: Bound::AtMost(0.0),
            }],
        };
        assert_eq!(Verdicts::verdict(&v.claims[0], false), Verdict::Reproduced);
        assert_eq!(Verdicts::verdict(&v.claims[0], true), Verdict::Undecided);
        assert_eq!(v.failed().count(), 1);
        assert!(
            v.lines(false)[1].ends_with("FAILED"),
            "{:?}",
            v.lines(false)
        );
    }
}
