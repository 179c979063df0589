//! `--set path=value` overrides, applied to the TOML document before serde reads it.

/// Applies one `path=value` override to a TOML document.
///
/// The path is dotted keys with optional `[index]` for arrays (`flows[0].size`); the value
/// is read as TOML if it parses (`3`, `true`, `0.5`, `"x"`, `{ rate = "1Gbps" }`) and as a
/// bare string otherwise (`10Gbps`, `1MB`). Missing tables are created.
pub(super) fn apply_set(doc: &mut toml_edit::DocumentMut, set: &str) -> Result<(), String> {
    let (path, raw) = set.split_once('=').ok_or("expected path=value")?;
    let (path, raw) = (path.trim(), raw.trim());
    if let Some(e) = integer_out_of_range(raw) {
        return Err(e);
    }
    let value: toml_edit::Value = raw.parse().unwrap_or_else(|_| toml_edit::Value::from(raw));
    let mut segs: Vec<(&str, Option<usize>)> = Vec::new();
    for part in path.split('.') {
        let (key, idx) = match part.split_once('[') {
            Some((k, rest)) => {
                let i = rest
                    .strip_suffix(']')
                    .and_then(|s| s.parse().ok())
                    .ok_or(format!("bad index in {part:?}"))?;
                (k, Some(i))
            }
            None => (part, None),
        };
        if key.is_empty() {
            return Err(format!("empty key in path {path:?}"));
        }
        segs.push((key, idx));
    }
    set_path(doc.as_table_mut(), &segs, value)
}

/// The message for a bare integer that TOML cannot hold (its integers are 64-bit signed),
/// which would otherwise be read as a string and reported as a type error.
pub(super) fn integer_out_of_range(raw: &str) -> Option<String> {
    let digits = raw.strip_prefix(['+', '-']).unwrap_or(raw).replace('_', "");
    let is_int = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    (is_int && raw.replace('_', "").parse::<i64>().is_err()).then(|| {
        format!(
            "{raw} is out of range: scenario integers are 64-bit signed, from {} to {}",
            i64::MIN,
            i64::MAX
        )
    })
}

fn set_path(
    table: &mut dyn toml_edit::TableLike,
    segs: &[(&str, Option<usize>)],
    value: toml_edit::Value,
) -> Result<(), String> {
    use toml_edit::{Item, Value};
    let ((key, idx), rest) = segs.split_first().ok_or("empty path")?;
    let last = rest.is_empty();
    match idx {
        None if last => {
            // A table given a different kind starts afresh: `--set transport.kind=
            // expresspass` on a TCP transport drops `cc`, which ExpressPass does not know.
            if *key == "kind"
                && let Some(old) = table.get(key).and_then(Item::as_str)
                && Some(old) != value.as_str()
            {
                table.clear();
            }
            table.insert(key, Item::Value(value));
            Ok(())
        }
        None => {
            if table.get(key).is_none() {
                table.insert(
                    key,
                    Item::Value(Value::InlineTable(toml_edit::InlineTable::new())),
                );
            }
            let inner = table
                .get_mut(key)
                .and_then(Item::as_table_like_mut)
                .ok_or(format!("{key:?} is not a table"))?;
            set_path(inner, rest, value)
        }
        Some(i) => match table.get_mut(key) {
            Some(Item::ArrayOfTables(a)) => {
                let len = a.len();
                let t = a
                    .get_mut(*i)
                    .ok_or(format!("{key} has only {len} entries"))?;
                if last {
                    return Err(format!(
                        "cannot replace the whole table {key}[{i}]; set one of its keys"
                    ));
                }
                set_path(t, rest, value)
            }
            Some(Item::Value(Value::Array(arr))) => {
                let len = arr.len();
                let v = arr
                    .get_mut(*i)
                    .ok_or(format!("{key} has only {len} entries"))?;
                if last {
                    *v = value;
                    return Ok(());
                }
                match v {
                    Value::InlineTable(t) => set_path(t, rest, value),
                    _ => Err(format!("{key}[{i}] is not a table")),
                }
            }
            Some(_) => Err(format!("{key:?} is not an array")),
            None => Err(format!("there is no array {key:?} to index")),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::tests::{BASE, build};

    #[test]
    fn set_overrides_nested_keys_and_array_elements() {
        let s = build(
            BASE,
            &[
                "sim.seed=7",
                "topology.pairs=3",
                "flows[0].size=1MB",
                "topology.bottleneck.rate=1Gbps",
                "topology.bottleneck.delay=5us",
            ],
        )
        .unwrap();
        assert_eq!(s.spec.sim.seed, 7);
        assert_eq!(s.graph.hosts.len(), 6);
        assert_eq!(s.flows[0].size_bytes, Some(1_000_000));
        let e = build(BASE, &["flows[3].size=1MB"]).unwrap_err();
        assert!(e.message.contains("only 1 entries"), "{e}");
    }

    /// A new kind drops the old kind's parameters, whichever order the overrides come in,
    /// and keeps those given for the new kind; the same kind keeps everything.
    #[test]
    fn a_new_kind_starts_its_table_afresh() {
        let tcp = BASE.replace(
            "[[flows]]",
            "[transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n[[flows]]",
        );
        for sets in [
            ["transport.kind=expresspass", "transport.alpha=0.25"],
            ["transport.alpha=0.25", "transport.kind=expresspass"],
        ] {
            let s = build(&tcp, &sets).unwrap();
            let dcsim_transport::TransportSpec::Expresspass(x) = &s.spec.transport else {
                panic!("{sets:?}: {:?}", s.spec.transport);
            };
            assert_eq!(x.alpha, Some(0.25), "{sets:?}");
        }
        let s = build(&tcp, &["transport.kind=tcp"]).unwrap();
        assert_eq!(s.spec.transport.label(), "dctcp");
    }
}
