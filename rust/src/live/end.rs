//! The `ct.build.end` event: once the build's `timing.json` was delivered,
//! it links to the build's trace, whose ids follow from `timing.json`'s
//! `timestamp` (README "Deterministic IDs") — which is why no live record
//! before the end can carry a trace context.

use std::path::Path;

use super::{LiveEvent, LiveRequest};
use crate::cancel::CancelToken;
use crate::ids::{self, canonical_dir, path_bytes};
use crate::strings::truncate;
use crate::timing::{self, clock::parse_timestamp, TIMING_FILE};
use crate::warnings::Warnings;

/// The end event of `req`'s build. Without `link_trace` (abandoned, or no
/// trace delivered) it has no trace; an unreadable `timing.json` costs the
/// link and a warning, never the event.
pub fn end_event(req: &LiveRequest, warnings: &mut Vec<String>) -> LiveEvent {
    let mut trace = None;
    let mut end_unix_ns = None;
    if req.link_trace && !req.abandoned {
        match timestamp_of(&req.invocation_dir, req) {
            Ok(ts) => {
                let dir = canonical_dir(&req.invocation_dir);
                let trace_id = ids::trace_id(&req.host_name, &path_bytes(&dir), &ts);
                trace = Some((trace_id, ids::span_id(&trace_id, &[])));
                end_unix_ns = parse_timestamp(&ts);
            }
            Err(e) => warnings.push(format!("{e}; the end record is not linked to the trace")),
        }
    }
    LiveEvent::BuildEnd {
        abandoned: req.abandoned,
        trace,
        end_unix_ns,
    }
}

/// `timing.json`'s top-level `timestamp` as written ("" when absent, as the
/// trace id hashes it then). compiletools writes it
/// as the second key at two spaces of indentation (formats.md §2.1, §2.2), found
/// without decoding the events; any other layout is decoded in full.
fn timestamp_of(dir: &Path, req: &LiveRequest) -> Result<String, crate::error::Error> {
    let path = dir.join(TIMING_FILE);
    let mut w = Warnings::new();
    let text = timing::load(&path, &req.limits, &mut w)?;
    if let Some(ts) = written_timestamp(&text.text) {
        return Ok(ts);
    }
    let build = timing::decode::decode(&text.text, &path, &req.limits, &CancelToken::new(), &mut w)?;
    Ok(build.timestamp.unwrap_or_default())
}

/// The value of the line `  "timestamp": "<string>",` among the first lines.
fn written_timestamp(text: &str) -> Option<String> {
    const KEY: &str = "\n  \"timestamp\":";
    let head = truncate(text, 4096);
    let at = head.find(KEY)? + KEY.len();
    let rest = text[at..].trim_start();
    let mut de = serde_json::Deserializer::from_str(rest);
    serde::Deserialize::deserialize(&mut de).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_written_timestamp_is_found_in_the_head() {
        let text = "{\n  \"version\": 1,\n  \"timestamp\": \"2026-11-30T03:43:45.418084+00:00\",\n  \"phases\": []\n}\n";
        assert_eq!(
            written_timestamp(text).as_deref(),
            Some("2026-11-30T03:43:45.418084+00:00")
        );
        assert_eq!(
            written_timestamp("{\"timestamp\": \"x\"}"),
            None,
            "other layouts are decoded in full"
        );
        assert_eq!(written_timestamp("{\n  \"timestamp\": 5\n}"), None);
        // A multi-byte character across the head's end must not panic.
        let long = format!("{{\n  \"x\": \"{}\"}}", "é".repeat(3000));
        assert_eq!(written_timestamp(&long), None);
    }
}
