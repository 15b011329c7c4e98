//! The live-build call of the C ABI (issue 16): decodes a `CtLiveRequest`
//! (the bytes appended to one growing file of a running build, or a
//! build's start or end), runs [`crate::pipeline::live_records`] and fills a
//! `CtLiveResult` with the log records and how many bytes were consumed.

use super::buffer::{path_of, text_of, CtBuffer, CtByteView};
use super::export::{export, free_result, lines_buffer, optional_buffer, CallResult};
use super::{decode_pairs, CtCancel};
use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::live::{LiveKind, LiveOutput, LiveRequest};
use crate::pipeline::live_records;
use crate::request::Limits;

/// `CtLiveRequest.kind`: bytes appended to an auto `ccache.statslog`.
pub const CT_LIVE_STATSLOG: u32 = 1;
/// `CtLiveRequest.kind`: bytes appended to `.ct-make-timing.<pid>.*.jsonl`.
pub const CT_LIVE_MAKE_TIMING: u32 = 2;
/// `CtLiveRequest.kind`: bytes appended to `.ninja_log`.
pub const CT_LIVE_NINJA_LOG: u32 = 3;
/// `CtLiveRequest.kind`: the `ct.build.start` record.
pub const CT_LIVE_BUILD_START: u32 = 4;
/// `CtLiveRequest.kind`: the `ct.build.end` record.
pub const CT_LIVE_BUILD_END: u32 = 5;

/// `CtLiveRequest.flags`: no more bytes will come; a last line without its
/// newline is a record too.
pub const CT_LIVE_FLAG_FINAL: u32 = 1;
/// `CtLiveRequest.flags` (end): the build died without `timing.json`.
pub const CT_LIVE_FLAG_ABANDONED: u32 = 2;
/// `CtLiveRequest.flags` (end): the build's trace was delivered; link to it.
pub const CT_LIVE_FLAG_LINK_TRACE: u32 = 4;

/// One live call. Views are borrowed for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CtLiveRequest {
    /// `CT_LIVE_*` kind.
    pub kind: u32,
    /// `CT_LIVE_FLAG_*` bits.
    pub flags: u32,
    pub invocation_dir: CtByteView,
    pub host_name: CtByteView,
    pub service_name: CtByteView,
    /// User resource attributes as `key\0value\0…`.
    pub resource_attributes: CtByteView,
    /// The bytes appended since the last call (file kinds).
    pub data: CtByteView,
    /// When the bytes were read, Unix ns.
    pub observed_unix_nano: u64,
    /// Most records returned; 0: no cap.
    pub max_records: u32,
    /// Longest string attribute value; 0: the default.
    pub max_attribute_len: u32,
}

/// What one live call returns; buffers are empty (null) when unused.
#[repr(C)]
#[derive(Debug)]
pub struct CtLiveResult {
    /// `ExportLogsServiceRequest` protobuf; empty when no record.
    pub logs: CtBuffer,
    /// Bytes of `data` consumed; the rest is to be passed again next time.
    pub consumed: u64,
    pub records: u64,
    /// Lines that were not records.
    pub skipped: u64,
    /// Compiles seen, by ccache outcome.
    pub direct_hits: u64,
    pub preprocessed_hits: u64,
    pub misses: u64,
    pub uncacheable: u64,
    /// Warnings, one per line (UTF-8).
    pub warnings: CtBuffer,
    /// The error message when the call returned non-zero (UTF-8).
    pub error_message: CtBuffer,
}

impl CallResult for CtLiveResult {
    fn empty() -> Self {
        Self {
            logs: CtBuffer::empty(),
            consumed: 0,
            records: 0,
            skipped: 0,
            direct_hits: 0,
            preprocessed_hits: 0,
            misses: 0,
            uncacheable: 0,
            warnings: CtBuffer::empty(),
            error_message: CtBuffer::empty(),
        }
    }

    fn error_message(&mut self) -> &mut CtBuffer {
        &mut self.error_message
    }

    fn buffers(&mut self) -> Vec<&mut CtBuffer> {
        vec![&mut self.logs, &mut self.warnings, &mut self.error_message]
    }
}

/// Turns one live request into log records. Returns 0, or a `CtErrorCode`
/// with `out->error_message`; `out` is always written and must be released
/// with `ct_live_result_free`.
///
/// # Safety
/// `req` and `out` must be valid; every view must be valid for its length
/// during the call; `cancel` may be null.
#[no_mangle]
pub unsafe extern "C" fn ct_live_records(
    req: *const CtLiveRequest,
    cancel: *const CtCancel,
    out: *mut CtLiveResult,
) -> i32 {
    let body = |req: &CtLiveRequest, token: &CancelToken| {
        token.check().map_err(|e| (e.code(), e.to_string()))?;
        // SAFETY: the caller guarantees every view is valid during the call.
        let request = unsafe { decode(req) }.map_err(|m| (ErrorCode::InvalidRequest, m))?;
        live_records(&request).map_err(|e| (e.code(), e.to_string()))
    };
    let fill = |out: &mut CtLiveResult, done: LiveOutput| {
        out.consumed = done.consumed;
        out.records = done.records;
        out.skipped = done.skipped;
        out.direct_hits = done.outcomes.direct_hits;
        out.preprocessed_hits = done.outcomes.preprocessed_hits;
        out.misses = done.outcomes.misses;
        out.uncacheable = done.outcomes.uncacheable;
        out.warnings = lines_buffer(&done.warnings);
        out.logs = optional_buffer(done.logs);
    };
    // SAFETY: forwarded to the caller (see above).
    unsafe { export(req, cancel, out, body, fill) }
}

/// Frees every buffer of a live result; safe to call twice.
///
/// # Safety
/// `res` must be null or point to a result filled by `ct_live_records`.
#[no_mangle]
pub unsafe extern "C" fn ct_live_result_free(res: *mut CtLiveResult) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_result(res) }
}

/// # Safety
/// Every view in `req` must be valid for its length during the call.
unsafe fn decode(req: &CtLiveRequest) -> Result<LiveRequest<'_>, String> {
    let kind = match req.kind {
        CT_LIVE_STATSLOG => LiveKind::Statslog,
        CT_LIVE_MAKE_TIMING => LiveKind::MakeTiming,
        CT_LIVE_NINJA_LOG => LiveKind::NinjaLog,
        CT_LIVE_BUILD_START => LiveKind::BuildStart,
        CT_LIVE_BUILD_END => LiveKind::BuildEnd,
        other => return Err(format!("unknown live kind {other}")),
    };
    let views = [
        req.invocation_dir,
        req.host_name,
        req.service_name,
        req.resource_attributes,
        req.data,
    ];
    // SAFETY: the caller guarantees every view is valid for its length during
    // the call; the slices do not outlive it (LiveRequest borrows `data`
    // only for the call).
    let [dir, host, service, attributes, data] = views.map(|v| unsafe { v.as_slice() });
    let mut limits = Limits::default();
    if req.max_attribute_len > 0 {
        limits.max_attribute_len = req.max_attribute_len;
    }
    Ok(LiveRequest {
        kind,
        invocation_dir: path_of(dir).ok_or("empty invocation_dir")?,
        host_name: text_of(host),
        service_name: text_of(service),
        resource_attributes: decode_pairs(attributes)?,
        data,
        final_chunk: req.flags & CT_LIVE_FLAG_FINAL != 0,
        abandoned: req.flags & CT_LIVE_FLAG_ABANDONED != 0,
        link_trace: req.flags & CT_LIVE_FLAG_LINK_TRACE != 0,
        observed_unix_nano: req.observed_unix_nano,
        max_records: req.max_records as usize,
        limits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use prost::Message;

    fn view(b: &[u8]) -> CtByteView {
        CtByteView {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    fn request(kind: u32, dir: &[u8], data: &[u8]) -> CtLiveRequest {
        CtLiveRequest {
            kind,
            flags: 0,
            invocation_dir: view(dir),
            host_name: view(b"h"),
            service_name: view(b""),
            resource_attributes: view(b""),
            data: view(data),
            observed_unix_nano: 7,
            max_records: 0,
            max_attribute_len: 0,
        }
    }

    /// Runs the call; returns the code, the message, the logs and `consumed`.
    fn run(req: &CtLiveRequest) -> (i32, String, Vec<u8>, u64) {
        let mut out = std::mem::MaybeUninit::<CtLiveResult>::uninit();
        // SAFETY: the request's views outlive the call; out is writable.
        let code = unsafe { ct_live_records(req, std::ptr::null(), out.as_mut_ptr()) };
        // SAFETY: ct_live_records always writes out.
        let mut out = unsafe { out.assume_init() };
        let bytes = |b: &CtBuffer| {
            if b.ptr.is_null() {
                Vec::new()
            } else {
                // SAFETY: a non-null buffer of the result, valid until freed.
                unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
            }
        };
        let got = (
            code,
            String::from_utf8_lossy(&bytes(&out.error_message)).into_owned(),
            bytes(&out.logs),
            out.consumed,
        );
        // SAFETY: written by ct_live_records; a second free is a no-op.
        unsafe {
            ct_live_result_free(&mut out);
            ct_live_result_free(&mut out);
        }
        got
    }

    #[test]
    fn statslog_bytes_become_records_with_event_names() {
        let data = b"# /s/a.cpp\ndirect_cache_hit\n# /s/b.cpp\ncache_";
        let (code, message, logs, consumed) = run(&request(CT_LIVE_STATSLOG, b"/d/20260101T000000-42", data));
        assert_eq!((code, message.as_str(), consumed), (0, "", 28));
        let req = ExportLogsServiceRequest::decode(logs.as_slice()).unwrap();
        let records = &req.resource_logs[0].scope_logs[0].log_records;
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].event_name, "ct.rule.finished");
        let attr = |k: &str| {
            records[0]
                .attributes
                .iter()
                .find(|a| a.key == k)
                .and_then(|a| a.value.clone())
        };
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        assert_eq!(
            attr("ct.ccache.outcome").and_then(|v| v.value),
            Some(Value::StringValue("direct_cache_hit".into()))
        );
        assert_eq!(
            attr("ct.invocation_id").and_then(|v| v.value),
            Some(Value::StringValue("20260101T000000-42".into()))
        );
        assert!(records[0].trace_id.is_empty(), "no trace context before the end");
    }

    #[test]
    fn bad_requests_are_error_codes() {
        let (code, message, _, _) = run(&request(99, b"/d/x", b""));
        assert_eq!(
            (code, message.as_str()),
            (ErrorCode::InvalidRequest as i32, "unknown live kind 99")
        );
        let (code, message, _, _) = run(&request(CT_LIVE_BUILD_START, b"", b""));
        assert_eq!(
            (code, message.as_str()),
            (ErrorCode::InvalidRequest as i32, "empty invocation_dir")
        );
    }

    #[test]
    fn the_end_links_to_the_trace_of_the_delivered_build() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20260101T000000-1");
        std::fs::create_dir(&dir).unwrap();
        let ts = "2026-01-01T00:00:00+00:00";
        std::fs::write(
            dir.join("timing.json"),
            format!("{{\n  \"version\": 1,\n  \"timestamp\": \"{ts}\",\n  \"phases\": []\n}}\n"),
        )
        .unwrap();
        let dir_bytes = dir.to_str().unwrap().as_bytes().to_vec();
        let mut req = request(CT_LIVE_BUILD_END, &dir_bytes, b"");
        req.flags = CT_LIVE_FLAG_LINK_TRACE;
        let (code, message, logs, _) = run(&req);
        assert_eq!((code, message.as_str()), (0, ""));
        let got = ExportLogsServiceRequest::decode(logs.as_slice()).unwrap();
        let rec = &got.resource_logs[0].scope_logs[0].log_records[0];
        assert_eq!(rec.event_name, "ct.build.end");
        let canonical = std::fs::canonicalize(&dir).unwrap();
        let want = crate::ids::trace_id("h", canonical.to_str().unwrap().as_bytes(), ts);
        assert_eq!(rec.trace_id, want.to_vec());
        assert_eq!(rec.span_id, crate::ids::span_id(&want, &[]).to_vec());
        // Abandoned: no link, whatever the flag says.
        req.flags = CT_LIVE_FLAG_LINK_TRACE | CT_LIVE_FLAG_ABANDONED;
        let (_, _, logs, _) = run(&req);
        let got = ExportLogsServiceRequest::decode(logs.as_slice()).unwrap();
        let rec = &got.resource_logs[0].scope_logs[0].log_records[0];
        assert!(rec.trace_id.is_empty());
        assert!(rec
            .attributes
            .iter()
            .any(|a| a.key == "ct.build.abandoned" && format!("{:?}", a.value).contains("BoolValue(true)")));
    }
}
