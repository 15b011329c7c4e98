//! The C ABI the Go receiver links against (header: cbindgen, committed in
//! `go-receiver/internal/ffi/compiletools_core.h`).
//!
//! Rules every function here follows: its body runs inside the panic guard
//! (`guard`), so no panic crosses the boundary; inputs are borrowed for the
//! call only; outputs are Rust-owned buffers the caller frees with the
//! matching `*_free` function. The two calls, `ct_process_build` and
//! `ct_scan_cas`, share one skeleton (`export`): each only decodes its C
//! request, runs its entry point of [`crate::pipeline`] and fills its result.
//! The library's ABI identity is the hash of that header (`abi`).

mod abi;
mod buffer;
mod cas;
mod export;
mod guard;
mod history;
mod live;
mod stream;

use buffer::{path_of, text_of};
pub use buffer::{CtBuffer, CtByteView};
pub use cas::{CtCasCache, CtCasCacheFootprint, CtCasCell, CtCasRequest, CtCasResult};
use export::{export, free_handle, free_result, lines_buffer, new_handle, optional_buffer, CallResult};
pub use history::{CtHistory, CtHistoryFootprint};
pub use live::{CtLiveRequest, CtLiveResult};

use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::pipeline::process_build;
use crate::request::{BuildOutput, BuildRequest, Limits, MetricIdentity, Signals, Summary, Vcs};
use crate::timetrace::TimeTraceConfig;

pub use abi::ct_header_sha256;
pub use stream::{CtBuildStream, CtChunkResult, CtTraceStreamInfo, CT_FLAG_FORCE_PANIC_IN_CHUNK};

/// Bit of `CtBuildRequest.signals`: produce `ExportTraceServiceRequest` bytes.
pub const CT_SIGNAL_TRACES: u32 = 1;
/// Bit of `CtBuildRequest.signals`: produce `ExportMetricsServiceRequest` bytes.
pub const CT_SIGNAL_METRICS: u32 = 2;
/// Bit of `CtBuildRequest.signals`: produce the build's
/// `ExportLogsServiceRequest` bytes (`ct.clang.header`, ...).
pub const CT_SIGNAL_LOGS: u32 = 4;

/// Flag: emit ccache snapshots as `ct.ccache.snapshot` spans instead of metrics.
pub const CT_FLAG_METRICS_AS_SPANS: u32 = 1;
/// Flag: the root span is the CI/CD conventions' pipeline run — named
/// `{action} {pipeline}` and of kind SERVER — instead of ct-cake's
/// `compiletools.build`, INTERNAL (the receiver's `semconv_root_span`).
pub const CT_FLAG_ROOT_SPAN_SERVER: u32 = 2;
/// Flag: with the metrics signal, also produce the build metrics
/// (`cicd.pipeline.run.*`, `ct.rule.duration`, `ct.compiles`).
pub const CT_FLAG_BUILD_METRICS: u32 = 4;
/// Flag: the metrics' series identify the host, not the build (a resource
/// shared by the host's builds, per-build deltas); without it each build is
/// its own series, as ct-cake sends them.
pub const CT_FLAG_HOST_METRIC_IDENTITY: u32 = 8;
/// Flag: do not look for the compiles' clang `-ftime-trace` files
/// (`time_trace.enabled: false`).
pub const CT_FLAG_TIME_TRACE_OFF: u32 = 16;
/// Flag (test hook): panic inside the call, to prove the guard holds.
pub const CT_FLAG_FORCE_PANIC: u32 = 0x8000_0000;

/// Parser limits; a zero field means "use the default".
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CtLimits {
    pub max_file_bytes: u64,
    pub max_events: u64,
    pub max_depth: u32,
    pub max_attribute_len: u32,
}

/// The `time_trace` settings; a zero field means "use the default".
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CtTimeTrace {
    pub min_event_us: u64,
    pub max_trace_bytes: u64,
    pub max_spans_per_compile: u32,
    pub max_spans_per_build: u32,
    pub top_n: u32,
    pub max_log_records: u32,
}

/// One build to process. Every view is borrowed for the call only; an empty
/// view means "absent".
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CtBuildRequest {
    pub invocation_dir: CtByteView,
    pub statslog_path: CtByteView,
    pub outcomes_path: CtByteView,
    pub host_name: CtByteView,
    pub service_name: CtByteView,
    pub git_commit_sha: CtByteView,
    /// User resource attributes as `key\0value\0key\0value\0…`.
    pub resource_attributes: CtByteView,
    /// `CT_SIGNAL_*` bits.
    pub signals: u32,
    /// `CT_FLAG_*` bits.
    pub flags: u32,
    pub limits: CtLimits,
    /// `cicd.pipeline.name`.
    pub pipeline_name: CtByteView,
    /// `vcs.ref.head.name`, `vcs.ref.head.type`, `vcs.repository.url.full`,
    /// `vcs.provider.name`.
    pub vcs_ref_head_name: CtByteView,
    pub vcs_ref_head_type: CtByteView,
    pub vcs_repository_url_full: CtByteView,
    pub vcs_provider_name: CtByteView,
    /// The receiver's compile history (`ct_history_new`), or null: the
    /// build is evaluated against it and staged until `ct_history_commit`.
    pub history: *const CtHistory,
    /// The build's generated `build.ninja` / Makefile for the exact
    /// critical path (`{variant}` is replaced by the build's variant).
    pub build_graph_path: CtByteView,
    /// How the compiles' clang traces are read (off: `CT_FLAG_TIME_TRACE_OFF`).
    pub time_trace: CtTimeTrace,
}

/// Counts about one processed build.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CtSummary {
    pub spans: u64,
    pub metric_points: u64,
    pub unanchored_rules: u64,
    pub dropped_attributes: u64,
    pub warnings: u64,
    /// clang traces read, and found but refused.
    pub clang_traces: u64,
    pub clang_traces_refused: u64,
}

/// Everything one call returns. All buffers are empty (null) when unused.
#[repr(C)]
#[derive(Debug)]
pub struct CtBuildResult {
    /// `ExportTraceServiceRequest` protobuf.
    pub traces: CtBuffer,
    /// `ExportMetricsServiceRequest` protobuf.
    pub metrics: CtBuffer,
    pub summary: CtSummary,
    /// Warnings, one per line (UTF-8).
    pub warnings: CtBuffer,
    /// The error message when the call returned non-zero (UTF-8).
    pub error_message: CtBuffer,
    /// `ExportLogsServiceRequest` protobuf (`CT_SIGNAL_LOGS`).
    pub logs: CtBuffer,
}

impl CallResult for CtBuildResult {
    fn empty() -> Self {
        Self {
            traces: CtBuffer::empty(),
            metrics: CtBuffer::empty(),
            summary: CtSummary::default(),
            warnings: CtBuffer::empty(),
            error_message: CtBuffer::empty(),
            logs: CtBuffer::empty(),
        }
    }

    fn error_message(&mut self) -> &mut CtBuffer {
        &mut self.error_message
    }

    fn buffers(&mut self) -> Vec<&mut CtBuffer> {
        vec![
            &mut self.traces,
            &mut self.metrics,
            &mut self.warnings,
            &mut self.error_message,
            &mut self.logs,
        ]
    }
}

/// Opaque cancel token shared between a Go goroutine and a running call.
pub struct CtCancel {
    token: CancelToken,
}

/// A new, unset cancel token; free it with `ct_cancel_free`.
#[no_mangle]
pub extern "C" fn ct_cancel_new() -> *mut CtCancel {
    new_handle(|| CtCancel {
        token: CancelToken::new(),
    })
}

/// Sets the token; calls running with it stop at their next check.
///
/// # Safety
/// `cancel` must be null or come from `ct_cancel_new` and not be freed yet.
#[no_mangle]
pub unsafe extern "C" fn ct_cancel_set(cancel: *const CtCancel) {
    // SAFETY: the caller guarantees the pointer is live or null.
    if let Some(c) = unsafe { cancel.as_ref() } {
        c.token.cancel();
    }
}

/// Frees a token from `ct_cancel_new`; no call may still use it.
///
/// # Safety
/// `cancel` must be null or come from `ct_cancel_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn ct_cancel_free(cancel: *mut CtCancel) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_handle(cancel) }
}

/// Processes one build. Returns 0 (`CtErrorCode` Ok) and fills `out`, or a
/// non-zero code with `out->error_message` set. `out` is always written and
/// must be released with `ct_build_result_free`.
///
/// # Safety
/// `req` and `out` must be valid pointers; every view in `req` must be valid
/// for its length during the call; `cancel` may be null.
#[no_mangle]
pub unsafe extern "C" fn ct_process_build(
    req: *const CtBuildRequest,
    cancel: *const CtCancel,
    out: *mut CtBuildResult,
) -> i32 {
    let body = |req: &CtBuildRequest, token: &CancelToken| {
        if req.flags & CT_FLAG_FORCE_PANIC != 0 {
            panic!("forced panic (CT_FLAG_FORCE_PANIC test hook)");
        }
        // SAFETY: the caller guarantees every view is valid during the call.
        let request = unsafe { decode_request(req) }.map_err(|m| (ErrorCode::InvalidRequest, m))?;
        process_build(&request, token).map_err(|e| (e.code(), e.to_string()))
    };
    let fill = |out: &mut CtBuildResult, output: BuildOutput| {
        fill_summary(out, &output.summary);
        out.traces = optional_buffer(output.traces);
        out.metrics = optional_buffer(output.metrics);
        out.logs = optional_buffer(output.logs);
    };
    // SAFETY: forwarded to the caller (see above).
    unsafe { export(req, cancel, out, body, fill) }
}

/// Frees every buffer of a result; safe to call twice.
///
/// # Safety
/// `res` must be null or point to a result filled by `ct_process_build`.
#[no_mangle]
pub unsafe extern "C" fn ct_build_result_free(res: *mut CtBuildResult) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_result(res) }
}

fn fill_summary(out: &mut CtBuildResult, s: &Summary) {
    out.summary = CtSummary {
        spans: s.spans,
        metric_points: s.metric_points,
        unanchored_rules: s.unanchored_rules,
        dropped_attributes: s.dropped_attributes,
        warnings: s.warnings.len() as u64,
        clang_traces: s.clang_traces,
        clang_traces_refused: s.clang_traces_refused,
    };
    out.warnings = lines_buffer(&s.warnings);
}

/// # Safety
/// Every view in `req` must be valid for its length.
unsafe fn decode_request(req: &CtBuildRequest) -> Result<BuildRequest, String> {
    let views = [
        req.invocation_dir,
        req.statslog_path,
        req.outcomes_path,
        req.host_name,
        req.service_name,
        req.git_commit_sha,
        req.resource_attributes,
        req.pipeline_name,
        req.vcs_ref_head_name,
        req.vcs_ref_head_type,
        req.vcs_repository_url_full,
        req.vcs_provider_name,
        req.build_graph_path,
    ];
    // SAFETY: the caller guarantees every view is valid for its length during
    // the call; the slices do not outlive this function.
    let [dir, statslog, outcomes, host, service, sha, attributes, pipeline, ref_name, ref_type, repo_url, provider, graph] =
        views.map(|v| unsafe { v.as_slice() });
    let dir = path_of(dir).ok_or("empty invocation_dir")?;
    let mut request = BuildRequest::new(dir, text_of(host));
    request.statslog = path_of(statslog);
    request.outcomes = path_of(outcomes);
    request.build_graph = path_of(graph);
    if !service.is_empty() {
        request.service_name = text_of(service);
    }
    request.git_commit_sha = (!sha.is_empty()).then(|| text_of(sha));
    request.resource_attributes = decode_pairs(attributes)?;
    request.signals = decode_signals(req.signals);
    request.metrics_as_spans = req.flags & CT_FLAG_METRICS_AS_SPANS != 0;
    request.semconv_root_span = req.flags & CT_FLAG_ROOT_SPAN_SERVER != 0;
    request.build_metrics = req.flags & CT_FLAG_BUILD_METRICS != 0;
    if req.flags & CT_FLAG_HOST_METRIC_IDENTITY != 0 {
        request.metric_identity = MetricIdentity::Host;
    }
    request.limits = decode_limits(&req.limits);
    request.logs = req.signals & CT_SIGNAL_LOGS != 0;
    request.time_trace = decode_time_trace(&req.time_trace, req.flags & CT_FLAG_TIME_TRACE_OFF == 0);
    request.pipeline_name = text_of(pipeline);
    request.vcs = Vcs {
        ref_head_name: text_of(ref_name),
        ref_head_type: text_of(ref_type),
        repository_url_full: text_of(repo_url),
        provider_name: text_of(provider),
    };
    // SAFETY: the caller guarantees the handle is live or null; the clone
    // keeps the history alive for the call whatever happens to the handle.
    request.history = unsafe { req.history.as_ref() }.map(|h| std::sync::Arc::clone(&h.history));
    Ok(request)
}

/// The `CT_SIGNAL_*` bits of a request.
fn decode_signals(mask: u32) -> Signals {
    Signals {
        traces: mask & CT_SIGNAL_TRACES != 0,
        metrics: mask & CT_SIGNAL_METRICS != 0,
    }
}

/// Zero in a `CtLimits` field means "the default".
fn decode_limits(l: &CtLimits) -> Limits {
    fn or<T: PartialEq + Default>(given: T, default: T) -> T {
        if given == T::default() {
            default
        } else {
            given
        }
    }
    let d = Limits::default();
    Limits {
        max_file_bytes: or(l.max_file_bytes, d.max_file_bytes),
        max_events: or(l.max_events, d.max_events),
        max_depth: or(l.max_depth, d.max_depth),
        max_attribute_len: or(l.max_attribute_len, d.max_attribute_len),
    }
}

/// Zero in a `CtTimeTrace` field means "the default".
fn decode_time_trace(t: &CtTimeTrace, enabled: bool) -> crate::timetrace::TimeTraceConfig {
    let d = crate::timetrace::TimeTraceConfig::default();
    let nonzero32 = |v: u32, default: u32| if v == 0 { default } else { v };
    TimeTraceConfig {
        enabled,
        min_event_us: i64::try_from(t.min_event_us)
            .ok()
            .filter(|v| *v != 0)
            .unwrap_or(d.min_event_us),
        max_spans_per_compile: nonzero32(t.max_spans_per_compile, d.max_spans_per_compile),
        max_spans_per_build: nonzero32(t.max_spans_per_build, d.max_spans_per_build),
        top_n: nonzero32(t.top_n, d.top_n),
        max_log_records: nonzero32(t.max_log_records, d.max_log_records),
        max_trace_bytes: if t.max_trace_bytes == 0 {
            d.max_trace_bytes
        } else {
            t.max_trace_bytes
        },
    }
}

pub(crate) fn decode_pairs(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    let fields: Vec<&[u8]> = body.split(|b| *b == 0).collect();
    if fields.len() % 2 != 0 {
        return Err("resource_attributes: odd number of NUL-separated fields".to_owned());
    }
    Ok(fields
        .chunks(2)
        .map(|kv| {
            (
                String::from_utf8_lossy(kv[0]).into_owned(),
                String::from_utf8_lossy(kv[1]).into_owned(),
            )
        })
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(super) fn view(b: &[u8]) -> CtByteView {
        CtByteView {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    pub(super) fn request(dir: &[u8], flags: u32) -> CtBuildRequest {
        let empty = CtByteView {
            ptr: std::ptr::null(),
            len: 0,
        };
        CtBuildRequest {
            invocation_dir: view(dir),
            statslog_path: empty,
            outcomes_path: empty,
            host_name: empty,
            service_name: empty,
            git_commit_sha: empty,
            resource_attributes: empty,
            signals: CT_SIGNAL_TRACES,
            flags,
            limits: CtLimits::default(),
            pipeline_name: empty,
            vcs_ref_head_name: empty,
            vcs_ref_head_type: empty,
            vcs_repository_url_full: empty,
            vcs_provider_name: empty,
            history: std::ptr::null(),
            build_graph_path: empty,
            time_trace: CtTimeTrace::default(),
        }
    }

    #[test]
    fn forced_panic_becomes_error_code() {
        let dir = b"/nonexistent";
        let req = request(dir, CT_FLAG_FORCE_PANIC);
        let mut out = std::mem::MaybeUninit::<CtBuildResult>::uninit();
        // SAFETY: the request's views outlive the call; out is writable.
        let code = unsafe { ct_process_build(&req, std::ptr::null(), out.as_mut_ptr()) };
        // SAFETY: ct_process_build always writes out.
        let mut out = unsafe { out.assume_init() };
        assert_eq!(code, ErrorCode::Panic as i32);
        // SAFETY: a failed call sets a non-empty message, valid until freed.
        let msg = unsafe { std::slice::from_raw_parts(out.error_message.ptr, out.error_message.len) };
        assert!(String::from_utf8_lossy(msg).contains("forced panic"));
        // SAFETY: out was written by ct_process_build; a second free is a no-op.
        unsafe {
            ct_build_result_free(&mut out);
            ct_build_result_free(&mut out);
        }
        assert!(out.error_message.ptr.is_null());
    }

    #[test]
    fn signals_decode() {
        let s = |traces, metrics| Signals { traces, metrics };
        assert_eq!(decode_signals(0), s(false, false));
        assert_eq!(decode_signals(CT_SIGNAL_TRACES), s(true, false));
        assert_eq!(decode_signals(CT_SIGNAL_METRICS), s(false, true));
        assert_eq!(
            decode_signals(CT_SIGNAL_TRACES | CT_SIGNAL_METRICS | 0x40),
            s(true, true)
        );
    }

    #[test]
    fn pairs_decode() {
        assert_eq!(
            decode_pairs(b"a\0b\0c\0d\0").unwrap(),
            vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        );
        assert!(decode_pairs(b"a\0b\0c\0").is_err());
        assert!(decode_pairs(b"").unwrap().is_empty());
    }
}
