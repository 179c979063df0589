//! `--vary` arguments, their cross product, and the folder name of each run.

use std::collections::BTreeSet;

use dcsim::metrics::digest;

use crate::SweepError;

/// The key path of the master seed; varying it replaces the `seed=` part of folder names.
pub const SEED_PATH: &str = "sim.seed";

/// The path of the axis of named variants (`--variant NAME:SET,...`).
pub const VARIANT_PATH: &str = "variant";

/// One `--vary PATH=V1,V2,...`: a scenario key path and the values it takes, in order; or
/// the named variants, each a set of overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    /// The key path, as `--set` takes it (`transport.cc`, `generators[0].pattern.load`), or
    /// [`VARIANT_PATH`].
    pub path: String,
    /// The values, as written (trimmed), or the variants' names.
    pub values: Vec<String>,
    /// For the variants: each one's overrides, in `--set` form (empty for a `--vary`).
    pub overrides: Vec<Vec<String>>,
}

impl Axis {
    /// The overrides that give value `v` of this axis, in `--set` form.
    pub fn sets(&self, v: usize) -> Vec<String> {
        match self.overrides.get(v) {
            Some(o) => o.clone(),
            None => vec![format!("{}={}", self.path, self.values[v])],
        }
    }

    /// Parses the `--variant NAME:PATH=VALUE,PATH=VALUE...` arguments into one axis (None
    /// without any). Names are unique, and a name's overrides are split at commas outside
    /// quotes, `{}` and `[]` as `--vary` values are.
    pub fn variants(args: &[String]) -> Result<Option<Self>, SweepError> {
        if args.is_empty() {
            return Ok(None);
        }
        let mut axis = Self {
            path: VARIANT_PATH.to_string(),
            values: Vec::new(),
            overrides: Vec::new(),
        };
        for arg in args {
            let bad = |why: &str| SweepError::new(format!("--variant {arg}: {why}"));
            let Some((name, list)) = arg.split_once(':') else {
                return Err(bad("expected NAME:PATH=VALUE,... (no `:` found)"));
            };
            let name = name.trim();
            if name.is_empty() || sanitize(name) != name {
                return Err(bad(
                    "the name must be non-empty letters, digits, `.`, `_`, `+` or `-` (it \
                     names the runs' folders and the plots' series)",
                ));
            }
            if axis.values.iter().any(|v| v == name) {
                return Err(bad(&format!(
                    "the name {name} is given twice; give all its overrides in one --variant"
                )));
            }
            let sets: Vec<String> = split_top_level(list)
                .into_iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if let Some(s) = sets.iter().find(|s| !s.contains('=')) {
                return Err(bad(&format!("{s:?} is not PATH=VALUE")));
            }
            axis.values.push(name.to_string());
            axis.overrides.push(sets);
        }
        Ok(Some(axis))
    }

    /// Parses one `--vary` argument. The list is split at commas outside quotes, `{}` and
    /// `[]`, so inline tables and arrays can be values.
    pub fn parse(arg: &str) -> Result<Self, SweepError> {
        let bad = |why: &str| SweepError::new(format!("--vary {arg}: {why}"));
        let Some((path, list)) = arg.split_once('=') else {
            return Err(bad("expected PATH=V1,V2,... (no `=` found)"));
        };
        let path = path.trim();
        if path.is_empty() {
            return Err(bad("the key path before `=` is empty"));
        }
        if list.trim().is_empty() {
            return Err(bad("the list of values after `=` is empty"));
        }
        let values: Vec<String> = split_top_level(list)
            .into_iter()
            .map(|v| v.trim().to_string())
            .collect();
        if values.iter().any(String::is_empty) {
            return Err(bad(
                "empty value in the list (two commas in a row, or one at an end)",
            ));
        }
        let mut seen = BTreeSet::new();
        for v in &values {
            if !seen.insert(v.as_str()) {
                return Err(bad(&format!("the value {v} is listed twice")));
            }
        }
        Ok(Self {
            path: path.to_string(),
            values,
            overrides: Vec::new(),
        })
    }
}

/// Parses the `--variant` arguments (the outermost axis, if any) and every `--vary`
/// argument, and rejects a path varied twice.
pub fn parse_axes(variants: &[String], args: &[String]) -> Result<Vec<Axis>, SweepError> {
    let mut axes: Vec<Axis> = Axis::variants(variants)?.into_iter().collect();
    for a in args {
        axes.push(Axis::parse(a)?);
    }
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.path == a.path) {
            return Err(SweepError::new(format!(
                "--vary {}: the path is varied twice; give all its values in one --vary",
                a.path
            )));
        }
    }
    Ok(axes)
}

/// Splits at commas that are not inside quotes, braces or brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' && q == '"' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The cross product of the axes: one list of `(axis index, value index)` per point, the
/// first axis outermost. No axes give one empty point.
pub fn cross(axes: &[Axis]) -> Vec<Vec<usize>> {
    let mut points = vec![Vec::new()];
    for axis in axes {
        points = points
            .into_iter()
            .flat_map(|p| {
                (0..axis.values.len()).map(move |v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    points
}

/// Longest value label before it is cut and given a hash.
const MAX_VALUE_CHARS: usize = 32;

/// Replaces every run of characters other than ASCII letters, digits, `.`, `_`, `+` and
/// `-` by one `-`, dropping such runs at either end (a leading minus sign stays). An empty
/// result becomes `x`.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
            if gap && !out.is_empty() && !out.ends_with('-') && c != '-' {
                out.push('-');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    if out.is_empty() { "x".into() } else { out }
}

/// The label of one value in a folder name: its [`canonical`] form sanitized, and cut with
/// a hash of that form if long (so a table written `{kind="tcp",cc="dctcp"}` on the command
/// line and `{ "cc" = "dctcp", "kind" = "tcp" }` by the Python package names one folder).
fn value_label(v: &str) -> String {
    let c = canonical(v);
    let s = sanitize(&c);
    if s.len() <= MAX_VALUE_CHARS {
        return s;
    }
    let h = digest(&[c.as_bytes()]);
    format!("{}-{:08x}", &s[..MAX_VALUE_CHARS - 9], h >> 32)
}

/// A value as `--set` reads it, in one spelling: what two ways of writing the same value
/// (spaces, quoted or bare keys, key order, `1e-3` or `0.001`, a bare word or a quoted
/// string) both become. Runs are the same point when their values are the same here.
pub fn canonical(v: &str) -> String {
    match v.trim().parse::<toml_edit::Value>() {
        Ok(value) => canonical_value(&value),
        // `--set` takes what is not a TOML value as a string.
        Err(_) => canonical_value(&toml_edit::Value::from(v.trim())),
    }
}

fn canonical_value(v: &toml_edit::Value) -> String {
    use toml_edit::Value;
    let key = |k: &str| {
        if !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            k.to_string()
        } else {
            Value::from(k).to_string().trim().to_string()
        }
    };
    match v {
        Value::String(s) => Value::from(s.value().as_str())
            .to_string()
            .trim()
            .to_string(),
        Value::Integer(i) => i.value().to_string(),
        Value::Float(f) => format!("{:?}", f.value()),
        Value::Boolean(b) => b.value().to_string(),
        Value::Datetime(d) => d.value().to_string(),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(canonical_value).collect();
            format!("[{}]", items.join(", "))
        }
        Value::InlineTable(t) => {
            let mut items: Vec<(String, String)> = t
                .iter()
                .map(|(k, v)| (key(k), canonical_value(v)))
                .collect();
            items.sort();
            let items: Vec<String> = items.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            if items.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", items.join(", "))
            }
        }
    }
}

/// Folder-name labels of every axis: the key and one label per value.
///
/// The key is the shortest dotted suffix of the path that is unique among the axes (and is
/// not `seed`, which the seed part uses, unless the axis is `sim.seed` itself). Value
/// labels that collide within an axis, ignoring case, get their 1-based position appended.
pub fn labels(axes: &[Axis]) -> Vec<(String, Vec<String>)> {
    let segs: Vec<Vec<&str>> = axes.iter().map(|a| a.path.split('.').collect()).collect();
    let suffix = |i: usize, n: usize| segs[i][segs[i].len() - n.min(segs[i].len())..].join(".");
    let keys: Vec<String> = (0..axes.len())
        .map(|i| {
            if axes[i].path == SEED_PATH {
                return "seed".to_string();
            }
            let mut n = 1;
            loop {
                let k = suffix(i, n);
                let clash = k == "seed"
                    || (0..axes.len())
                        .any(|j| j != i && suffix(j, n) == k && axes[j].path != SEED_PATH);
                if !clash || n >= segs[i].len() {
                    return sanitize(&k);
                }
                n += 1;
            }
        })
        .collect();
    axes.iter()
        .zip(keys)
        .map(|(a, key)| {
            let mut vals: Vec<String> = a.values.iter().map(|v| value_label(v)).collect();
            let lower: Vec<String> = vals.iter().map(|v| v.to_lowercase()).collect();
            for (i, v) in vals.iter_mut().enumerate() {
                if lower.iter().filter(|l| **l == lower[i]).count() > 1 {
                    *v = format!("{v}-{}", i + 1);
                }
            }
            (key, vals)
        })
        .collect()
}

/// The folder name of one run: `key=value` per axis then `seed=S`, joined by `_`. With
/// `sim.seed` among the axes its value is the seed and there is no separate seed part.
pub fn folder_name(labels: &[(String, Vec<String>)], point: &[usize], seed: Option<u64>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .zip(point)
        .map(|((k, vals), &v)| format!("{k}={}", vals[v]))
        .collect();
    if let Some(s) = seed {
        parts.push(format!("seed={s}"));
    }
    parts.join("_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(s: &str) -> Axis {
        Axis::parse(s).unwrap()
    }

    #[test]
    fn values_split_at_top_level_commas_only() {
        let a =
            axis(r#"topology.bottleneck={ rate = "10Gbps", delay = "1us" }, { rate = "4,0Gbps" }"#);
        assert_eq!(a.path, "topology.bottleneck");
        assert_eq!(
            a.values,
            [
                r#"{ rate = "10Gbps", delay = "1us" }"#,
                r#"{ rate = "4,0Gbps" }"#
            ]
        );
        assert_eq!(axis("x=[1, 2],[3]").values, ["[1, 2]", "[3]"]);
        assert_eq!(
            axis(" transport.cc = dctcp , reno ").values,
            ["dctcp", "reno"]
        );
        assert_eq!(axis("a='x,y',z").values, ["'x,y'", "z"]);
    }

    #[test]
    fn malformed_vary_arguments_are_rejected_with_the_argument_named() {
        for (arg, want) in [
            ("transport.cc", "no `=`"),
            ("transport.cc=", "list of values after `=` is empty"),
            ("transport.cc=  ", "list of values after `=` is empty"),
            ("=1,2", "key path before `=` is empty"),
            ("a=1,,2", "empty value"),
            ("a=1,2,", "empty value"),
            ("a=1,2,1", "the value 1 is listed twice"),
        ] {
            let e = Axis::parse(arg).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(arg.trim()), "{arg}: {e}");
        }
        let e = parse_axes(&[], &["a.b=1".into(), "c=2".into(), "a.b=3".into()]).unwrap_err();
        assert!(
            e.to_string().contains("a.b: the path is varied twice"),
            "{e}"
        );
    }

    /// Named variants: one axis, outermost, each name giving its own overrides; the usual
    /// mistakes named.
    #[test]
    fn variants_are_one_axis_of_named_overrides() {
        let args = [
            r#"dctcp:transport.cc="dctcp""#.to_string(),
            r#"xpass: transport.kind=expresspass, queue={ kind = "credit-shaper", credit_buffer = "4pkts" }"#
                .to_string(),
        ];
        let axes = parse_axes(&args, &["generators[0].pattern.load=0.3,0.5".into()]).unwrap();
        assert_eq!(axes[0].path, VARIANT_PATH);
        assert_eq!(axes[0].values, ["dctcp", "xpass"]);
        assert_eq!(axes[0].sets(0), [r#"transport.cc="dctcp""#]);
        assert_eq!(
            axes[0].sets(1),
            [
                "transport.kind=expresspass",
                r#"queue={ kind = "credit-shaper", credit_buffer = "4pkts" }"#
            ]
        );
        assert_eq!(axes[1].sets(1), ["generators[0].pattern.load=0.5"]);
        assert_eq!(
            labels(&axes)[0],
            ("variant".into(), vec!["dctcp".into(), "xpass".into()])
        );
        for (arg, want) in [
            ("dctcp", "no `:`"),
            (":transport.cc=dctcp", "the name must be"),
            ("a b:transport.cc=dctcp", "the name must be"),
            ("x:transport.cc", "is not PATH=VALUE"),
        ] {
            let e = Axis::variants(&[arg.to_string()]).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains(arg), "{arg}: {e}");
        }
        let twice = ["a:x=1".to_string(), "a:y=2".to_string()];
        let e = Axis::variants(&twice).unwrap_err().to_string();
        assert!(e.contains("the name a is given twice"), "{e}");
        let e = parse_axes(&["a:x=1".into()], &["variant=1".into()]).unwrap_err();
        assert!(e.to_string().contains("varied twice"), "{e}");
    }

    #[test]
    fn cross_product_nests_the_first_axis_outermost() {
        let axes = [axis("a=1,2"), axis("b=x,y,z")];
        let p = cross(&axes);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], [0, 0]);
        assert_eq!(p[1], [0, 1]);
        assert_eq!(p[3], [1, 0]);
        assert_eq!(p[5], [1, 2]);
        assert_eq!(cross(&[]), vec![Vec::<usize>::new()]);
        assert_eq!(
            cross(&[axis("a=1,2,3"), axis("b=1,2"), axis("c=1,2")]).len(),
            12
        );
    }

    /// The spellings of one value that the command line and the Python package write are
    /// one canonical value; different values stay different.
    #[test]
    fn canonical_forms_join_the_spellings_of_one_value() {
        let same = [
            (
                r#"{kind="tcp",cc="dctcp"}"#,
                r#"{ "kind" = "tcp", "cc" = "dctcp" }"#,
            ),
            (
                r#"{cc = {kind="dctcp", g=0.0625}}"#,
                r#"{ "cc" = { "g" = 0.0625, "kind" = "dctcp" } }"#,
            ),
            ("dctcp", r#""dctcp""#),
            ("1e-3", "0.001"),
            ("[1,2]", "[1, 2]"),
            (r#"{"a b" = 1}"#, r#"{ 'a b' = 1 }"#),
        ];
        for (a, b) in same {
            assert_eq!(canonical(a), canonical(b), "{a} | {b}");
        }
        assert_eq!(
            canonical(r#"{kind="tcp",cc="dctcp"}"#),
            r#"{ cc = "dctcp", kind = "tcp" }"#
        );
        for (a, b) in [
            ("1", "1.0"),
            ("\"1\"", "1"),
            ("{a=1}", "{a=2}"),
            ("[1,2]", "[2,1]"),
        ] {
            assert_ne!(canonical(a), canonical(b), "{a} | {b}");
        }
        // A long table value names the same folder however it is spelt.
        let long = r#"{kind="tcp",cc={kind="cubic",c=0.4,beta=0.7,fast_convergence=true},profile="linux"}"#;
        let spaced = r#"{ "kind" = "tcp", "cc" = { "kind" = "cubic", "c" = 0.4, "beta" = 0.7, "fast_convergence" = true }, "profile" = "linux" }"#;
        assert!(sanitize(long).len() > MAX_VALUE_CHARS);
        assert_eq!(value_label(long), value_label(spaced));
    }

    #[test]
    fn sanitize_keeps_readable_characters_only() {
        assert_eq!(sanitize("0.5"), "0.5");
        assert_eq!(sanitize("dctcp"), "dctcp");
        assert_eq!(sanitize("-1e+3"), "-1e+3");
        assert_eq!(
            sanitize(r#"{ kind = "dctcp", g = 0.1 }"#),
            "kind-dctcp-g-0.1"
        );
        assert_eq!(sanitize("a/b\\c:d*e?f\"g<h>i|j k"), "a-b-c-d-e-f-g-h-i-j-k");
        assert_eq!(sanitize("{}"), "x");
        assert_eq!(sanitize("a - b"), "a-b");
        assert_eq!(sanitize("flows[0]"), "flows-0");
        let long = "x".repeat(100);
        let l = value_label(&long);
        assert_eq!(l.len(), MAX_VALUE_CHARS);
        assert_ne!(
            l,
            value_label(&format!("{long}y")),
            "long values stay distinct"
        );
    }

    #[test]
    fn keys_are_the_shortest_unique_suffix() {
        let axes = [
            axis("transport.cc=dctcp,reno"),
            axis("topology.host_link.rate=10Gbps"),
            axis("topology.bottleneck.rate=1Gbps"),
            axis("generators[0].pattern.seed=1"),
        ];
        let keys: Vec<String> = labels(&axes).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            ["cc", "host_link.rate", "bottleneck.rate", "pattern.seed"]
        );
        let keys: Vec<String> = labels(&[axis("sim.seed=1,2"), axis("a.seed=3")])
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(keys, ["seed", "a.seed"]);
    }

    #[test]
    fn folder_names_are_readable_and_unique() {
        let axes = [
            axis("generators[0].pattern.load=0.5,0.7"),
            axis("transport.cc=dctcp,reno"),
        ];
        let l = labels(&axes);
        assert_eq!(
            folder_name(&l, &[0, 0], Some(1)),
            "load=0.5_cc=dctcp_seed=1"
        );
        assert_eq!(folder_name(&l, &[1, 1], Some(7)), "load=0.7_cc=reno_seed=7");
        assert_eq!(folder_name(&[], &[], Some(3)), "seed=3");
        let l = labels(&[axis("sim.seed=4,5")]);
        assert_eq!(folder_name(&l, &[1], None), "seed=5");

        // Values that sanitize to the same label (or differ only in case) stay distinct.
        let axes = [axis("f.size=1MB,1mb,1 MB,\"1 MB\",2MB")];
        let l = labels(&axes);
        assert_eq!(l[0].1, ["1MB-1", "1mb-2", "1-MB-3", "1-MB-4", "2MB"]);
        let names: BTreeSet<String> = cross(&axes)
            .iter()
            .map(|p| folder_name(&l, p, Some(0)).to_lowercase())
            .collect();
        assert_eq!(names.len(), 5);
    }
}
