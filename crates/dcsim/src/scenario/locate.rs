//! Pointing a scenario error at the offending key or value, and suggesting the key meant.
//!
//! serde reads a table whose `kind` picks the variant (`[topology]`, `[queue]`,
//! `[transport]`) through a buffer that forgets positions, so the toml crate can only place
//! an error inside it at the table's header. The message names what is wrong (`unknown field
//! `mark_thresh``, `invalid "10Gbs"`), so the token is looked up in that table's text and
//! the error shown at its line and column instead; an unknown name gets the nearest valid
//! one as a suggestion.

use std::ops::Range;

/// The error as the toml crate words it, with the location moved to the offending token
/// when the crate could only give the enclosing table, and a suggestion for a misspelt
/// key or variant.
pub(super) fn describe(text: &str, e: &toml::de::Error) -> String {
    let mut message = with_suggestion(e.message().trim_end());
    let Some(span) = e.span() else {
        return message;
    };
    if message == "duplicate key"
        && let Some(said) = duplicate_key(text, span.clone())
    {
        message = said;
    }
    let at = token(e.message())
        .and_then(|t| find_in_table(text, span.clone(), &t))
        .unwrap_or(span);
    render(text, at, &message)
}

/// `duplicate key` said in full: which key, and the line where it was first set (a table
/// header given twice, or a key given twice in one table). None if the span is not a key.
fn duplicate_key(text: &str, span: Range<usize>) -> Option<String> {
    let key = text.get(span.clone())?.trim();
    if key.is_empty() {
        return None;
    }
    let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next()?;
    let first = if line.trim_start().starts_with('[') {
        let header = header_of(line)?;
        let mut at = 0;
        text[..line_start].split_inclusive('\n').find_map(|l| {
            let here = at;
            at += l.len();
            (header_of(l) == Some(header)).then_some(here)
        })
    } else {
        let table = text[..line_start]
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .rfind(|&i| text[i..].trim_start().starts_with('['))
            .unwrap_or(0);
        find_key(&text[table..line_start], key)
            .map(|r| table + r.start)
            .or_else(|| {
                // Set as a table of its own before: `[output.timeseries]`, then
                // `timeseries = ...` under `[output]`.
                let parent = header_of(&text[table..]).map_or("", |h| h.trim_matches(['[', ']']));
                let dotted = if parent.is_empty() {
                    key.to_string()
                } else {
                    format!("{parent}.{key}")
                };
                let mut at = 0;
                text[..line_start].split_inclusive('\n').find_map(|l| {
                    let here = at;
                    at += l.len();
                    header_of(l)
                        .is_some_and(|h| h.trim_matches(['[', ']']) == dotted)
                        .then_some(here)
                })
            })
    };
    Some(match first {
        Some(at) => format!(
            "duplicate key `{key}`: it is first set at line {}",
            text[..at].matches('\n').count() + 1
        ),
        None => format!("duplicate key `{key}`"),
    })
}

/// The header of a line that opens a table (`[sim]` of `[sim]  # comment`).
fn header_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if !t.starts_with('[') {
        return None;
    }
    let end = if t.starts_with("[[") {
        t.find("]]")? + 2
    } else {
        t.find(']')? + 1
    };
    Some(&t[..end])
}

/// What to look for: the key of an unknown field (`mark_thresh =`), a rejected quoted value
/// (`"10Gbs"`), the variant named (`"dctpc"`) or a rejected number.
fn token(message: &str) -> Option<Token> {
    let between = |s: &str, open: char, close: char| -> Option<String> {
        let a = s.find(open)? + open.len_utf8();
        let b = s[a..].find(close)? + a;
        Some(s[a..b].to_string())
    };
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return between(rest, '`', '`').map(Token::Key);
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return between(rest, '`', '`').map(Token::Quoted);
    }
    if let Some(rest) = message.strip_prefix("invalid ")
        && rest.starts_with('"')
    {
        return between(rest, '"', '"').map(Token::Quoted);
    }
    if let Some(i) = message.find("string \"") {
        return between(&message[i..], '"', '"').map(Token::Quoted);
    }
    for kind in ["integer `", "float `"] {
        if let Some(i) = message.find(kind) {
            return between(&message[i..], '`', '`').map(Token::Value);
        }
    }
    None
}

enum Token {
    /// A key, found as `key =` at the start of a line or after `{` / `,`.
    Key(String),
    /// A string value, found with its quotes.
    Quoted(String),
    /// A bare value, found after `=`.
    Value(String),
}

/// The first occurrence of the token in the table that starts at `span`: from the span to the
/// next table header. None if it is not there (then the span stands).
fn find_in_table(text: &str, span: Range<usize>, t: &Token) -> Option<Range<usize>> {
    if matches!(t, Token::Key(k) | Token::Quoted(k) | Token::Value(k) if k.is_empty()) {
        return None; // an empty key (`""`) is found everywhere and nowhere
    }
    let start = span.start.min(text.len());
    let body_from = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let end = next_header(text, body_from).max(span.end.min(text.len()));
    let table = &text[start..end];
    let found = match t {
        Token::Key(k) => find_key(table, k),
        Token::Quoted(v) => {
            let q = format!("\"{v}\"");
            table.find(&q).map(|i| i..i + q.len())
        }
        Token::Value(v) => find_after_equals(table, v),
    }?;
    Some(start + found.start..start + found.end)
}

/// Start of the next line that opens a table (`[name]` or `[[name]]`) at or after `from`.
fn next_header(text: &str, from: usize) -> usize {
    let mut at = from;
    for line in text[from..].split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            return at;
        }
        at += line.len();
    }
    text.len()
}

fn find_key(table: &str, key: &str) -> Option<Range<usize>> {
    if key.is_empty() {
        return None;
    }
    let mut from = 0;
    while let Some(i) = table[from..].find(key).map(|i| i + from) {
        let before = table[..i].trim_end_matches([' ', '\t']);
        let after = table[i + key.len()..].trim_start_matches([' ', '\t']);
        let starts = before.is_empty() || before.ends_with(['\n', '{', ',']);
        if starts && after.starts_with('=') {
            return Some(i..i + key.len());
        }
        from = i + key.len();
    }
    None
}

fn find_after_equals(table: &str, value: &str) -> Option<Range<usize>> {
    if value.is_empty() {
        return None;
    }
    let mut from = 0;
    while let Some(i) = table[from..].find(value).map(|i| i + from) {
        let before = table[..i].trim_end_matches([' ', '\t']);
        let next = table[i + value.len()..].chars().next();
        if before.ends_with('=') && !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
            return Some(i..i + value.len());
        }
        from = i + value.len();
    }
    None
}

/// `unknown field `mark_thresh`, expected `buffer` or `mark_threshold`` → the same, then
/// `; did you mean `mark_threshold`?` when one valid name is close.
pub(super) fn with_suggestion(message: &str) -> String {
    let unknown = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.strip_prefix(p));
    let Some(rest) = unknown else {
        return message.to_string();
    };
    let Some(end) = rest.find('`') else {
        return message.to_string();
    };
    let bad = &rest[..end];
    if bad.is_empty() {
        return message.to_string();
    }
    let Some(expected) = rest.find("expected ").map(|i| &rest[i..]) else {
        return message.to_string();
    };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let best = names
        .iter()
        .map(|n| (strsim::damerau_levenshtein(bad, n), *n))
        .min();
    match best {
        Some((d, n)) if d > 0 && (d <= 2 || n.starts_with(bad) || bad.starts_with(n)) => {
            format!("{message}; did you mean `{n}`?")
        }
        _ => message.to_string(),
    }
}

/// The toml crate's layout: `TOML parse error at line L, column C`, the line, a caret line,
/// the message.
/// A check's message (`flows[0].dst: host 7 is out of range`) shown at the value it names
/// in the scenario's text: the key path before the first `": "` is looked up in the text,
/// down to the deepest table or value written there. A path that a `--set` override changed
/// (the value is not the text's), or that the text does not have, leaves the message as it
/// is.
pub(crate) fn at_key_path(origin: &super::Origin, message: String) -> String {
    let Some(o) = &origin.0 else {
        return message;
    };
    let (text, overridden) = (&o.0, &o.1);
    let Some((path, _)) = message.split_once(": ") else {
        return message;
    };
    let is_path = !path.is_empty()
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.[]".contains(c));
    let touches = |p: &String| {
        let (a, b) = (p.as_str(), path);
        let under = |long: &str, short: &str| {
            long.strip_prefix(short)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        under(a, b) || under(b, a)
    };
    if !is_path || overridden.iter().any(touches) {
        return message;
    }
    let Ok(doc) = toml_edit::Document::parse(text.as_str()) else {
        return message;
    };
    let segs: Vec<&str> = path.split('.').collect();
    // Nothing of the path in the text: no place to show (not the whole file).
    let top = segs[0].split('[').next().unwrap_or("");
    if !doc.as_table().contains_key(top) {
        return message;
    }
    match span_of(doc.as_item(), &segs) {
        Some(at) => render(text, at, &message).replacen("TOML parse error at", "at", 1),
        None => message,
    }
}

/// The span of the deepest item on the key path `segs` (`["a", "b[2]", "c"]`) that `item`
/// has: the value if the whole path is there, else the header of the last table on it (for
/// a missing key).
fn span_of(item: &toml_edit::Item, segs: &[&str]) -> Option<Range<usize>> {
    use toml_edit::{Item, Value};
    let Some((seg, rest)) = segs.split_first() else {
        return item.span();
    };
    let (key, index) = match seg.split_once('[') {
        Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
        None => (*seg, None),
    };
    let here = item.span();
    let Some(next) = item.as_table_like().and_then(|t| t.get(key)) else {
        return here;
    };
    // An element of an array: a table of `[[key]]`, or a value of `key = [...]` (spans
    // are kept by the copy).
    let element = match (index, next) {
        (None, _) => None,
        (Some(i), Item::ArrayOfTables(a)) => a.get(i).map(|t| Item::Table(t.clone())),
        (Some(i), Item::Value(Value::Array(a))) => a.get(i).map(|v| Item::Value(v.clone())),
        (Some(_), _) => return next.span().or(here),
    };
    let found = match (&element, index) {
        (Some(e), _) => span_of(e, rest),
        (None, Some(_)) => next.span(),
        (None, None) => span_of(next, rest),
    };
    found.or(here)
}

fn render(text: &str, at: Range<usize>, message: &str) -> String {
    let start = at.start.min(text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..start].matches('\n').count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("");
    let col = text[line_start..start].chars().count() + 1;
    let width = text[start..at.end.min(text.len()).max(start)]
        .lines()
        .next()
        .map_or(1, |s| s.chars().count().max(1));
    let gutter = " ".repeat(line_no.to_string().len());
    format!(
        "TOML parse error at line {line_no}, column {col}\n{gutter} |\n{line_no} | {line}\n{gutter} | {}{}\n{message}",
        " ".repeat(col - 1),
        "^".repeat(width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        let e = toml::from_str::<crate::ScenarioSpec>(text).unwrap_err();
        describe(text, &e)
    }

    const FILE: &str = "schema_version = 1\n[sim]\nduration = \"10ms\"\n\n[topology]\nkind = \"dumbbell\"\npairs = 2\nhost_link = { rate = \"10Gbs\", delay = \"1us\" }\n\n[queue]\nkind = \"ecn\"\nbuffer = \"250pkts\"\nmark_thresh = \"65pkts\"\n";

    #[test]
    fn errors_inside_kind_tables_point_at_the_value() {
        let e = error(FILE);
        assert!(
            e.starts_with("TOML parse error at line 13, column 1"),
            "{e}"
        );
        assert!(e.contains("\n   | ^^^^^^^^^^^\n"), "{e}");
        assert!(e.ends_with("did you mean `mark_threshold`?"), "{e}");
        let fixed = FILE.replace("mark_thresh", "mark_threshold");
        let e = error(&fixed);
        assert!(
            e.starts_with("TOML parse error at line 8, column 22"),
            "{e}"
        );
        assert!(e.contains(" ^^^^^^^\ninvalid"), "{e}");
        let e = error(
            &fixed
                .replace("10Gbs", "10Gbps")
                .replace("pairs = 2", "pairs = -2"),
        );
        assert!(e.starts_with("TOML parse error at line 7, column 9"), "{e}");
    }

    /// A key or table given twice is named, with the line where it was first set.
    #[test]
    fn a_duplicate_key_is_named_with_its_first_line() {
        let e = error("[sim]\nduration = \"1ms\"\nseed = 1\nseed = 2\n");
        assert!(
            e.contains("line 4") && e.ends_with("duplicate key `seed`: it is first set at line 3"),
            "{e}"
        );
        let e = error("[sim]  # first\nseed = 1\n[topology]\nkind = \"star\"\n[sim]\nseed = 2\n");
        assert!(
            e.ends_with("duplicate key `sim`: it is first set at line 1"),
            "{e}"
        );
        let e = error("[output.timeseries]\nevery = \"1ms\"\n[output]\ntimeseries = 3\n");
        assert!(
            e.ends_with("duplicate key `timeseries`: it is first set at line 1"),
            "{e}"
        );
    }

    /// An empty key name (`""=""`, found by the fuzzer) is looked up nowhere: searching
    /// for the empty string once looped forever.
    #[test]
    fn an_empty_key_does_not_hang_the_lookup() {
        let e = error("\"\"=\"\"\n");
        assert!(
            e.contains("unknown field ``") && !e.contains("did you mean"),
            "{e}"
        );
        assert_eq!(find_key("a = 1\n", ""), None);
    }

    #[test]
    fn suggestions_only_for_near_misses() {
        assert!(
            with_suggestion("unknown variant `dctpc`, expected one of `reno`, `dctcp`")
                .ends_with("did you mean `dctcp`?")
        );
        assert_eq!(
            with_suggestion("unknown field `zzz`, expected `buffer` or `mark_threshold`"),
            "unknown field `zzz`, expected `buffer` or `mark_threshold`"
        );
    }

    /// A check's message at the value its key path names; at the table of a missing key;
    /// unchanged for a path an override set, or without a text.
    #[test]
    fn check_messages_point_at_the_value_their_key_path_names() {
        let text = "[topology]\nkind = \"star\"\n[[flows]]\nsrc = 0\ndst = 1\n[[flows]]\nsrc = 0\ndst = 7\n[output.trace]\nports = [\"a->b\", \"x->y\"]\n";
        let origin = |sets: &[&str]| {
            super::super::Origin(Some(std::sync::Arc::new((
                text.to_string(),
                sets.iter().map(|s| (*s).to_string()).collect(),
            ))))
        };
        let at = |path: &str, sets: &[&str]| at_key_path(&origin(sets), format!("{path}: bad"));
        let m = at("flows[1].dst", &[]);
        assert!(m.starts_with("at line 8, column 7\n"), "{m}");
        assert!(m.ends_with("flows[1].dst: bad"), "{m}");
        let m = at("output.trace.ports[1]", &[]);
        assert!(m.starts_with("at line 10, column 18\n"), "{m}");
        // A missing key: its table's header.
        let m = at("flows[0].size", &[]);
        assert!(m.starts_with("at line 3, column 1\n"), "{m}");
        // Set by an override (the key, a table above it or a key under it): the text's
        // value is not the one refused.
        for set in ["flows[1].dst", "flows", "flows[1]"] {
            assert_eq!(at("flows[1].dst", &[set]), "flows[1].dst: bad");
        }
        assert!(at("flows[1].dst", &["flows[0].dst"]).starts_with("at line 8"));
        // Not a key path, or not in the text.
        assert_eq!(at("no such", &[]), "no such: bad");
        assert_eq!(at("controller.threshold", &[]), "controller.threshold: bad");
        assert_eq!(
            at_key_path(&super::super::Origin(None), "flows[1].dst: bad".into()),
            "flows[1].dst: bad"
        );
    }
}
