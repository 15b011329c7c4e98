//! Appended `.ct-make-timing.<pid>.*.jsonl` bytes → one `Recipe` event per
//! complete line (formats.md §7.1): `{"target": …, "start_ns": …, "end_ns": …}`,
//! wall-clock epoch ns. As compiletools' ingest: lines are stripped, empty
//! lines skipped, missing fields default to `""` / 0. Where its ingest would
//! raise (a JSON value that is not an object, a time that is not an
//! integer) or drop the line (invalid JSON), the line is skipped and counted.

use serde_json::Value;

use super::{capped, complete_part, lines_with_ends, LiveEvent, Parsed};

/// Parses the complete lines of `data`, at most `max_records` (0: all).
pub fn parse(data: &[u8], final_chunk: bool, max_records: usize) -> Parsed {
    let data = complete_part(data, final_chunk);
    let mut out = Parsed::default();
    for (line, end) in lines_with_ends(data) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if !text.is_empty() {
            match recipe(text) {
                Some(e) => out.events.push(e),
                None => out.skipped += 1,
            }
        }
        out.consumed = end;
        if capped(out.events.len(), max_records) {
            break;
        }
    }
    out
}

fn recipe(line: &str) -> Option<LiveEvent> {
    let Value::Object(map) = serde_json::from_str::<Value>(line).ok()? else {
        return None;
    };
    let target = match map.get("target") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return None,
    };
    let time = |key: &str| -> Option<Option<i64>> {
        match map.get(key) {
            None => Some(None),
            Some(v) => {
                let ns = v.as_i64()?;
                Some((ns != 0).then_some(ns))
            }
        }
    };
    Some(LiveEvent::Recipe {
        target,
        start_unix_ns: time("start_ns")?,
        end_unix_ns: time("end_ns")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe_event(target: &str, start: Option<i64>, end: Option<i64>) -> LiveEvent {
        LiveEvent::Recipe {
            target: target.to_owned(),
            start_unix_ns: start,
            end_unix_ns: end,
        }
    }

    #[test]
    fn lines_become_recipes_and_bad_lines_are_counted() {
        let data = concat!(
            "{\"target\":\"/o/a.o\",\"start_ns\":1796009765464839000,\"end_ns\":1796009765542899000}\n",
            "\n",
            "not json\n",
            "[1,2]\n",
            "{\"target\":\"b\",\"start_ns\":\"x\"}\n",
            "{\"end_ns\":0}\n",
            "{\"target\":\"/o/c.o\",\"start_ns\":5,"
        );
        let p = parse(data.as_bytes(), false, 0);
        assert_eq!(
            p.events,
            vec![
                recipe_event("/o/a.o", Some(1796009765464839000), Some(1796009765542899000)),
                recipe_event("", None, None),
            ]
        );
        assert_eq!(p.skipped, 3);
        assert_eq!(
            &data.as_bytes()[p.consumed..],
            b"{\"target\":\"/o/c.o\",\"start_ns\":5,"
        );
    }

    #[test]
    fn the_cap_stops_after_that_many_records() {
        let data = b"{\"target\":\"a\"}\n{\"target\":\"b\"}\n";
        let p = parse(data, false, 1);
        assert_eq!(p.events.len(), 1);
        assert_eq!(p.consumed, 15);
    }
}
