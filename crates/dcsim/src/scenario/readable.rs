//! A scenario error as its reader should see it: in TOML's words instead of serde's
//! (`an array`, not `sequence`; `a table`, not `struct OutputSpec`), with echoed values and
//! quoted lines cut to a readable length and numbers of hundreds of digits written in
//! exponent form.

/// The longest echoed value kept whole, in characters.
const VALUE: usize = 40;
/// The longest quoted line of the file kept whole, in characters; the caret line under it
/// is cut at the same column, so the carets still point where they did.
const SOURCE_LINE: usize = 120;
/// The longest line of a message kept whole, in characters.
const LINE: usize = 300;
/// A number written with more digits than this is shown in exponent form.
const DIGITS: usize = 21;

/// `msg` made readable, line by line.
pub(crate) fn readable(msg: &str) -> String {
    msg.lines()
        .map(|l| {
            if is_source_line(l) {
                cut(l, SOURCE_LINE)
            } else {
                cut(&short_numbers(&short_values(&toml_words(l))), LINE)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A line of the toml crate's layout that quotes the file: `12 | text`, or a gutter `   |`
/// with carets.
fn is_source_line(l: &str) -> bool {
    let t = l.trim_start();
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &t[digits..];
    rest == " |" || rest.starts_with(" | ") || (digits == 0 && (t == "|" || t.starts_with("| ")))
}

/// `l` cut to `max` characters, saying how much was left out.
fn cut(l: &str, max: usize) -> String {
    match l.char_indices().nth(max) {
        Some((i, _)) => format!("{}… ({} more bytes)", &l[..i], l.len() - i),
        None => l.to_string(),
    }
}

/// serde's names of what it read or wanted, in the words of TOML and of the docs.
fn toml_words(l: &str) -> String {
    const PLAIN: [(&str, &str); 14] = [
        ("invalid type: sequence", "invalid type: an array"),
        ("invalid type: map", "invalid type: a table"),
        ("invalid type: floating point", "invalid type: a number"),
        ("invalid type: integer", "invalid type: an integer"),
        ("invalid type: boolean", "invalid type: a boolean"),
        ("invalid type: string", "invalid type: a string"),
        ("invalid value: integer", "invalid value: the integer"),
        ("invalid value: floating point", "invalid value: the number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
        ("expected variant identifier", "expected a name in quotes"),
        ("expected field identifier", "expected a key name"),
        ("invalid length", "wrong number of elements"),
        ("elements in sequence", "elements in the array"),
    ];
    let mut s = l.to_string();
    for (from, to) in PLAIN {
        s = s.replace(from, to);
    }
    // `expected struct OutputSpec`, `expected internally tagged enum QdiscSpec`,
    // `expected u64`: names of the code, not of the file.
    for (from, to) in [
        (
            "expected internally tagged enum ",
            "expected a table with a `kind`",
        ),
        ("expected struct variant ", "expected a table"),
        ("expected tuple struct ", "expected an array"),
        ("expected struct ", "expected a table"),
        ("expected enum ", "expected one of its names in quotes"),
    ] {
        while let Some(i) = s.find(from) {
            let name_end = s[i + from.len()..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .map_or(s.len(), |j| i + from.len() + j);
            s.replace_range(i..name_end, to);
        }
    }
    for (ty, words) in [
        ("u64", "a non-negative integer"),
        ("u32", "a non-negative integer below 2^32"),
        ("u16", "a non-negative integer below 65536"),
        ("u8", "a non-negative integer below 256"),
        ("usize", "a non-negative integer"),
        ("i64", "an integer"),
        ("i32", "an integer between -2^31 and 2^31"),
        ("f64", "a number"),
        ("f32", "a number"),
    ] {
        let from = format!("expected {ty}");
        let mut at = 0;
        while let Some(i) = s[at..].find(&from).map(|i| i + at) {
            let end = i + from.len();
            if s[end..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                at = end;
                continue;
            }
            let to = format!("expected {words}");
            s.replace_range(i..end, &to);
            at = i + to.len();
        }
    }
    s
}

/// Values the message echoes between quotes or backquotes, cut to [`VALUE`] characters.
fn short_values(l: &str) -> String {
    let mut out = String::with_capacity(l.len());
    let mut rest = l;
    while let Some(open) = rest.find(['"', '`']) {
        let q = &rest[open..=open];
        let Some(len) = rest[open + 1..].find(q) else {
            break;
        };
        let inner = &rest[open + 1..open + 1 + len];
        out.push_str(&rest[..=open]);
        match inner.char_indices().nth(VALUE) {
            Some((i, _)) => {
                out.push_str(&inner[..i]);
                out.push('…');
            }
            None => out.push_str(inner),
        }
        out.push_str(q);
        rest = &rest[open + 2 + len..];
    }
    out.push_str(rest);
    out
}

/// Runs of more than [`DIGITS`] digits (with a sign, a point and an exponent), as Rust
/// prints a large `f64` in full, written in exponent form (`1e300`).
fn short_numbers(l: &str) -> String {
    let b = l.as_bytes();
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_digit() || b[j] == b'.') {
            j += 1;
        }
        let digits = b[i..j].iter().filter(|c| c.is_ascii_digit()).count();
        if digits > DIGITS
            && let Ok(v) = l[i..j].parse::<f64>()
        {
            out.push_str(&l[copied..i]);
            out.push_str(&format!("{v:e}"));
            copied = j;
        }
        i = j;
    }
    out.push_str(&l[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_words_become_toml_words() {
        assert_eq!(
            readable("invalid type: map, expected a sequence"),
            "invalid type: a table, expected an array"
        );
        assert_eq!(
            readable("invalid type: integer `3`, expected struct OutputSpec"),
            "invalid type: an integer `3`, expected a table"
        );
        assert_eq!(
            readable("invalid type: sequence, expected variant identifier"),
            "invalid type: an array, expected a name in quotes"
        );
        assert_eq!(
            readable("invalid value: integer `-5`, expected u64"),
            "invalid value: the integer `-5`, expected a non-negative integer"
        );
        assert_eq!(
            readable("invalid type: string \"x\", expected internally tagged enum QdiscSpec"),
            "invalid type: a string \"x\", expected a table with a `kind`"
        );
        // A word that only starts like a type is left alone.
        assert_eq!(readable("expected u64s"), "expected u64s");
    }

    #[test]
    fn long_values_and_numbers_are_cut() {
        let long = "x".repeat(300);
        let m = readable(&format!("unknown field `{long}`, expected `a` or `b`"));
        assert_eq!(
            m,
            format!(
                "unknown field `{}…`, expected `a` or `b`",
                "x".repeat(VALUE)
            )
        );
        let m = readable(&format!("invalid \"{long}\": not a rate"));
        assert!(m.ends_with("…\": not a rate") && m.len() < 80, "{m}");
        let big = format!("{}", 1e300_f64);
        assert!(big.len() > 300);
        assert_eq!(
            readable(&format!("g: must be in (0, 1], got {big}")),
            "g: must be in (0, 1], got 1e300"
        );
        // Ordinary numbers stay as written.
        assert_eq!(
            readable("at most 9223372036854775807, got 65.5"),
            "at most 9223372036854775807, got 65.5"
        );
    }

    #[test]
    fn quoted_lines_are_cut_with_their_carets() {
        let line = format!("14 | pairs = \"{}\"", "x".repeat(300));
        let carets = format!("   |         {}", "^".repeat(302));
        let m = readable(&format!("at line 14\n   |\n{line}\n{carets}\nbad"));
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(lines[1], "   |");
        assert!(lines[2].starts_with("14 | pairs = \"xxx"), "{m}");
        assert!(lines[3].starts_with("   |         ^^^"), "{m}");
        assert!(lines[2].chars().count() < SOURCE_LINE + 30, "{m}");
    }
}
