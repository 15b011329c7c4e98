//! One live call (issue 16) from the receiver's bytes to OTLP logs: the
//! records [`crate::live`] finds in them, encoded by
//! [`crate::otlp::logs`].

use crate::error::Error;
use crate::live::{
    end, make_timing, ninja_log, statslog, LiveEvent, LiveKind, LiveOutput, LiveRequest, OutcomeCounts,
    Parsed,
};
use crate::otlp::logs::encode_live_logs;

/// Runs one live call: parse the appended bytes (or make the start or end
/// event), then encode the events as OTLP log records.
pub fn live_records(req: &LiveRequest) -> Result<LiveOutput, Error> {
    let mut warnings = Vec::new();
    let parsed = match req.kind {
        LiveKind::Statslog => statslog::parse(req.data, req.final_chunk, req.max_records),
        LiveKind::MakeTiming => make_timing::parse(req.data, req.final_chunk, req.max_records),
        LiveKind::NinjaLog => ninja_log::parse(req.data, req.final_chunk, req.max_records),
        LiveKind::BuildStart => Parsed {
            events: vec![LiveEvent::BuildStart],
            ..Parsed::default()
        },
        LiveKind::BuildEnd => Parsed {
            events: vec![end::end_event(req, &mut warnings)],
            ..Parsed::default()
        },
    };
    let mut outcomes = OutcomeCounts::default();
    for e in &parsed.events {
        if let LiveEvent::Compile { outcome, .. } = e {
            outcomes.add(*outcome);
        }
    }
    if parsed.skipped > 0 {
        warnings.push(format!(
            "{} line(s) of a live {:?} file were not records and were skipped",
            parsed.skipped, req.kind
        ));
    }
    let records = parsed.events.len() as u64;
    let logs = (!parsed.events.is_empty()).then(|| encode_live_logs(req, &parsed.events));
    Ok(LiveOutput {
        logs,
        consumed: parsed.consumed as u64,
        records,
        skipped: parsed.skipped,
        outcomes,
        warnings,
    })
}
