//! Specifications of plug-in families, as written in scenario files.
//!
//! A plug-in (a congestion controller, a queue discipline, a transport) is named by its
//! *kind* and configured by a table of parameters. A scenario writes either the bare name,
//! which takes every default (`cc = "dctcp"`), or a table tagged by `kind`
//! (`cc = { kind = "dctcp", g = 0.03 }`). Each family's registry (a macro in the crate that
//! owns the family) generates a spec enum with one variant per registered kind; the two
//! functions here are its `Serialize` and `Deserialize`, so that every family parses,
//! reports errors and prints the same way.
//!
//! Parsing buffers the value as a [`toml::Value`] (the `kind` key may come after the
//! parameters), then deserializes the parameters of the named kind from it, so that an
//! unknown or mistyped parameter is reported by the kind's own configuration type.

use serde::de::{self, Deserialize, Deserializer};
use serde::{Serialize, Serializer};

/// One registered kind of a plug-in family, as `dcsim list` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// The name scenarios use (`kind = "..."`).
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
}

/// Serializes a spec of kind `kind` as a table whose first key is `kind`, followed by the
/// fields of `params` (a struct; an empty one for a kind without parameters).
pub fn serialize_tagged<P: Serialize, S: Serializer>(
    kind: &'static str,
    params: &P,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Tagged<'a, P> {
        kind: &'static str,
        #[serde(flatten)]
        params: &'a P,
    }
    Tagged { kind, params }.serialize(s)
}

/// Deserializes a bare kind name (every parameter at its default) or a table tagged by
/// `kind`, one of `names`; `build` makes the value of a kind from its parameters (a table
/// without `kind`).
pub fn deserialize_tagged<'de, T, D: Deserializer<'de>>(
    d: D,
    names: &'static [&'static str],
    build: impl FnOnce(&str, toml::Value) -> Result<T, toml::de::Error>,
) -> Result<T, D::Error> {
    let (kind, params) = match toml::Value::deserialize(d)? {
        toml::Value::String(name) => (name, toml::Value::Table(toml::Table::new())),
        toml::Value::Table(mut t) => match t.remove("kind") {
            Some(toml::Value::String(name)) => (name, toml::Value::Table(t)),
            Some(other) => {
                return Err(de::Error::custom(format!(
                    "kind: expected a name ({}), got a {}",
                    one_of(names),
                    other.type_str()
                )));
            }
            None => return Err(de::Error::missing_field("kind")),
        },
        other => {
            return Err(de::Error::custom(format!(
                "expected a name ({}) or a table with `kind`, got a {}",
                one_of(names),
                other.type_str()
            )));
        }
    };
    if !names.contains(&kind.as_str()) {
        return Err(de::Error::unknown_variant(&kind, names));
    }
    build(&kind, params).map_err(|e| de::Error::custom(e.message()))
}

/// `"a"`, `"b"` or `"c"`.
fn one_of(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [a] => format!("\"{a}\""),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|n| format!("\"{n}\"")).collect();
            format!("{} or \"{last}\"", init.join(", "))
        }
    }
}

/// Deserializes a kind's parameters from the table [`deserialize_tagged`] hands over.
pub fn params<T: de::DeserializeOwned>(v: toml::Value) -> Result<T, toml::de::Error> {
    T::deserialize(v)
}

/// Parameters of a kind that has none: an empty table, and nothing else, is accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields, default)]
    struct Gain {
        g: f64,
        name: Option<String>,
    }

    #[derive(Debug, PartialEq)]
    enum Spec {
        Plain(NoParams),
        Gain(Gain),
    }
    const NAMES: &[&str] = &["plain", "gain"];

    impl Serialize for Spec {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Self::Plain(p) => serialize_tagged("plain", p, s),
                Self::Gain(p) => serialize_tagged("gain", p, s),
            }
        }
    }
    impl<'de> Deserialize<'de> for Spec {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            deserialize_tagged(d, NAMES, |kind, v| match kind {
                "plain" => params(v).map(Self::Plain),
                _ => params(v).map(Self::Gain),
            })
        }
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Doc {
        x: Spec,
    }

    fn parse(s: &str) -> Result<Spec, String> {
        toml::from_str::<Doc>(s)
            .map(|d| d.x)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bare_names_and_tagged_tables_parse_and_print_kind_first() {
        assert_eq!(parse("x = \"plain\"").unwrap(), Spec::Plain(NoParams {}));
        assert_eq!(parse("x = \"gain\"").unwrap(), Spec::Gain(Gain::default()));
        let g = parse("x = { g = 0.5, kind = \"gain\" }").unwrap();
        assert_eq!(g, Spec::Gain(Gain { g: 0.5, name: None }));
        let text = toml::to_string(&Doc { x: g }).unwrap();
        assert_eq!(text, "[x]\nkind = \"gain\"\ng = 0.5\n");
        let json = serde_json::to_string(&Spec::Plain(NoParams {})).unwrap();
        assert_eq!(json, r#"{"kind":"plain"}"#);
    }

    #[test]
    fn errors_name_the_kind_or_the_parameter() {
        let e = parse("x = \"fast\"").unwrap_err();
        assert!(
            e.contains("unknown variant `fast`, expected `plain` or `gain`"),
            "{e}"
        );
        let e = parse("x = { kind = \"gain\", gg = 1 }").unwrap_err();
        assert!(e.contains("unknown field `gg`"), "{e}");
        let e = parse("x = { kind = \"plain\", g = 1 }").unwrap_err();
        assert!(e.contains("unknown field `g`"), "{e}");
        let e = parse("x = { g = 1 }").unwrap_err();
        assert!(e.contains("missing field `kind`"), "{e}");
        let e = parse("x = 3").unwrap_err();
        assert!(e.contains("expected a name (\"plain\" or \"gain\")"), "{e}");
        let e = parse("x = { kind = \"gain\", g = \"fast\" }").unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
    }
}
