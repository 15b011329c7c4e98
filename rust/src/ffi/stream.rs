//! A build's trace handed over in chunks (README, "Large builds"):
//! `ct_build_open` reads the build and returns its metrics and summary now
//! plus a handle; `ct_build_stream_chunk` encodes request `k` of at most
//! `max_chunk_spans` spans into a buffer the caller owns until
//! `ct_chunk_result_free`; `ct_build_stream_close` frees the model.
//!
//! Chunks are random access and pure: chunk `k` is the same bytes however
//! often and in whatever order it is asked for, so the caller can start
//! again at the first chunk a consumer did not accept. A panic while
//! encoding a chunk becomes an error code for that call; the handle stays
//! valid and must still be closed.

use std::sync::atomic::{AtomicU64, Ordering};

use super::buffer::CtBuffer;
use super::export::{export, free_handle, free_result, optional_buffer, CallResult};
use super::guard::guard;
use super::{decode_request, fill_summary, CtBuildRequest, CtBuildResult, CtCancel, CT_FLAG_FORCE_PANIC};
use crate::cancel::CancelToken;
use crate::error::ErrorCode;
use crate::otlp::TraceChunks;
use crate::pipeline::open_build;

/// Flag of `CtBuildRequest.flags` (test hook): `ct_build_stream_chunk`
/// panics for chunk 1, to prove a panic in the middle of a stream is an
/// error code and the handle still closes.
pub const CT_FLAG_FORCE_PANIC_IN_CHUNK: u32 = 0x4000_0000;

/// Handles not closed yet, for leak checks (`ct_build_streams_open`).
static OPEN_STREAMS: AtomicU64 = AtomicU64::new(0);

/// Opaque handle: one build's trace, encoded a chunk at a time.
pub struct CtBuildStream {
    chunks: TraceChunks,
    panic_in_chunk: bool,
}

impl CtBuildStream {
    fn new(chunks: TraceChunks, panic_in_chunk: bool) -> Self {
        OPEN_STREAMS.fetch_add(1, Ordering::Relaxed);
        Self {
            chunks,
            panic_in_chunk,
        }
    }
}

impl Drop for CtBuildStream {
    fn drop(&mut self) {
        OPEN_STREAMS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What identifies a stream's cut: spans in all, chunks, the trace id.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CtTraceStreamInfo {
    pub spans: u64,
    pub chunks: u64,
    pub trace_id: [u8; 16],
}

/// One chunk: `ExportTraceServiceRequest` bytes, or the error message.
#[repr(C)]
#[derive(Debug)]
pub struct CtChunkResult {
    pub traces: CtBuffer,
    pub error_message: CtBuffer,
}

impl CallResult for CtChunkResult {
    fn empty() -> Self {
        Self {
            traces: CtBuffer::empty(),
            error_message: CtBuffer::empty(),
        }
    }

    fn error_message(&mut self) -> &mut CtBuffer {
        &mut self.error_message
    }

    fn buffers(&mut self) -> Vec<&mut CtBuffer> {
        vec![&mut self.traces, &mut self.error_message]
    }
}

/// Reads one build like `ct_process_build`, but leaves `out->traces` empty:
/// when traces were asked for, `*stream` receives a handle whose chunks
/// hold at most `max_chunk_spans` spans each (0: one chunk). `out` is
/// always written and must be freed with `ct_build_result_free`; `*stream`
/// is always written (null on error or without traces) and a non-null
/// handle must be closed with `ct_build_stream_close`.
///
/// # Safety
/// As `ct_process_build`; `stream` must be valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn ct_build_open(
    req: *const CtBuildRequest,
    max_chunk_spans: u64,
    cancel: *const CtCancel,
    out: *mut CtBuildResult,
    stream: *mut *mut CtBuildStream,
) -> i32 {
    if stream.is_null() {
        return ErrorCode::InvalidRequest as i32;
    }
    // SAFETY: non-null and valid for writing, as the caller guarantees.
    unsafe { stream.write(std::ptr::null_mut()) };
    let max_spans = usize::try_from(max_chunk_spans).unwrap_or(usize::MAX);
    let body = |req: &CtBuildRequest, token: &CancelToken| {
        if req.flags & CT_FLAG_FORCE_PANIC != 0 {
            panic!("forced panic (CT_FLAG_FORCE_PANIC test hook)");
        }
        // SAFETY: the caller guarantees every view is valid during the call.
        let request = unsafe { decode_request(req) }.map_err(|m| (ErrorCode::InvalidRequest, m))?;
        let opened = open_build(&request, token, max_spans).map_err(|e| (e.code(), e.to_string()))?;
        let panic_in_chunk = req.flags & CT_FLAG_FORCE_PANIC_IN_CHUNK != 0;
        Ok((opened, panic_in_chunk))
    };
    let fill = |out: &mut CtBuildResult, (opened, panic_in_chunk): (crate::pipeline::BuildStream, bool)| {
        fill_summary(out, &opened.output.summary);
        out.metrics = optional_buffer(opened.output.metrics);
        out.logs = optional_buffer(opened.output.logs);
        // Last: nothing after this can panic, so a handle is never lost.
        if let Some(chunks) = opened.traces {
            let handle = Box::into_raw(Box::new(CtBuildStream::new(chunks, panic_in_chunk)));
            // SAFETY: checked non-null above; the caller owns the handle now.
            unsafe { stream.write(handle) };
        }
    };
    // SAFETY: forwarded to the caller (see above).
    unsafe { export(req, cancel, out, body, fill) }
}

/// Writes what identifies the stream's cut into `info` (zeros for a null
/// stream).
///
/// # Safety
/// `stream` must be null or a live handle; `info` must be writable or null.
#[no_mangle]
pub unsafe extern "C" fn ct_build_stream_info(stream: *const CtBuildStream, info: *mut CtTraceStreamInfo) {
    // SAFETY: the caller guarantees info is writable or null.
    let Some(info) = (unsafe { info.as_mut() }) else {
        return;
    };
    *info = CtTraceStreamInfo::default();
    // SAFETY: the caller guarantees stream is live or null.
    if let Some(s) = unsafe { stream.as_ref() } {
        let _ = guard(|| {
            *info = CtTraceStreamInfo {
                spans: s.chunks.stats().spans,
                chunks: s.chunks.len() as u64,
                trace_id: s.chunks.trace_id(),
            };
        });
    }
}

/// Encodes chunk `index` into `out->traces`. Returns 0, or a non-zero code
/// with `out->error_message` set (`InvalidRequest` past the last chunk,
/// `Cancelled`, `Panic`). `out` is always written and must be freed with
/// `ct_chunk_result_free`. Chunks of one handle may be asked for from one
/// thread at a time or several: encoding only reads the handle.
///
/// # Safety
/// `stream` must be null or a live handle; `out` as in `ct_process_build`.
#[no_mangle]
pub unsafe extern "C" fn ct_build_stream_chunk(
    stream: *const CtBuildStream,
    index: u64,
    cancel: *const CtCancel,
    out: *mut CtChunkResult,
) -> i32 {
    let body = |s: &CtBuildStream, token: &CancelToken| {
        token.check().map_err(|e| (e.code(), e.to_string()))?;
        if s.panic_in_chunk && index == 1 {
            panic!("forced panic in chunk 1 (CT_FLAG_FORCE_PANIC_IN_CHUNK test hook)");
        }
        let k = usize::try_from(index).unwrap_or(usize::MAX);
        s.chunks.chunk(k).ok_or_else(|| {
            (
                ErrorCode::InvalidRequest,
                format!("chunk {index} past the last of {}", s.chunks.len()),
            )
        })
    };
    let fill = |out: &mut CtChunkResult, bytes: Vec<u8>| out.traces = CtBuffer::from_vec(bytes);
    // SAFETY: forwarded to the caller (see above); a null stream is an error.
    unsafe { export(stream, cancel, out, body, fill) }
}

/// Frees the buffers of a chunk result; safe to call twice.
///
/// # Safety
/// `res` must be null or point to a result written by `ct_build_stream_chunk`.
#[no_mangle]
pub unsafe extern "C" fn ct_chunk_result_free(res: *mut CtChunkResult) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_result(res) }
}

/// Frees a handle from `ct_build_open` and the build it holds.
///
/// # Safety
/// `stream` must be null or a handle from `ct_build_open`, closed at most
/// once, with no `ct_build_stream_chunk` call running on it.
#[no_mangle]
pub unsafe extern "C" fn ct_build_stream_close(stream: *mut CtBuildStream) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_handle(stream) }
}

/// Handles opened and not closed yet, in this process (leak checks).
#[no_mangle]
pub extern "C" fn ct_build_streams_open() -> u64 {
    OPEN_STREAMS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStrExt;

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;

    use super::super::tests::request;
    use super::super::{
        ct_build_result_free, ct_cancel_free, ct_cancel_new, ct_cancel_set, ct_process_build,
    };
    use super::*;

    /// An invocation directory with a timing.json of `rules` rules.
    fn build_dir(rules: usize) -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("20261130T034340-7");
        std::fs::create_dir(&dir).unwrap();
        let rules: Vec<String> = (0..rules)
            .map(|i| {
                format!(
                    r#"{{"name": "r{i}.cpp", "rule_type": "compile", "target": "/o/r{i}.o", "source": "/s/d{}/r{i}.cpp", "start_s": {}, "end_s": 109.0}}"#,
                    i % 7,
                    101.0 + i as f64 * 1e-3
                )
            })
            .collect();
        let doc = format!(
            r#"{{"timestamp": "2026-11-30T03:43:45+00:00", "start_s": 100.0, "total_elapsed_s": 10.0,
                "phases": [{{"name": "build_execution", "start_s": 100.5, "end_s": 109.5, "rules": [{}]}}]}}"#,
            rules.join(",")
        );
        std::fs::write(dir.join("timing.json"), doc).unwrap();
        (tmp, dir)
    }

    /// Opens `dir`; returns the code, the handle (maybe null) and the result.
    fn open(
        dir: &[u8],
        flags: u32,
        max: u64,
        cancel: *const CtCancel,
    ) -> (i32, *mut CtBuildStream, CtBuildResult) {
        let req = request(dir, flags);
        let mut out = std::mem::MaybeUninit::<CtBuildResult>::uninit();
        let mut handle = std::ptr::NonNull::<CtBuildStream>::dangling().as_ptr();
        // SAFETY: the request's views outlive the call; out and handle are writable.
        let code = unsafe { ct_build_open(&req, max, cancel, out.as_mut_ptr(), &mut handle) };
        // SAFETY: ct_build_open always writes out.
        (code, handle, unsafe { out.assume_init() })
    }

    fn chunk(handle: *const CtBuildStream, k: u64, cancel: *const CtCancel) -> (i32, Vec<u8>, String) {
        let mut out = std::mem::MaybeUninit::<CtChunkResult>::uninit();
        // SAFETY: handle is live or null; out is writable.
        let code = unsafe { ct_build_stream_chunk(handle, k, cancel, out.as_mut_ptr()) };
        // SAFETY: ct_build_stream_chunk always writes out.
        let mut out = unsafe { out.assume_init() };
        let view = |b: &CtBuffer| {
            if b.ptr.is_null() {
                Vec::new()
            } else {
                // SAFETY: a filled buffer is valid for len bytes until freed.
                unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
            }
        };
        let (bytes, message) = (
            view(&out.traces),
            String::from_utf8_lossy(&view(&out.error_message)).into_owned(),
        );
        // SAFETY: out was written by ct_build_stream_chunk; twice is a no-op.
        unsafe {
            ct_chunk_result_free(&mut out);
            ct_chunk_result_free(&mut out);
        }
        (code, bytes, message)
    }

    fn spans_of(bytes: &[u8]) -> Vec<Vec<u8>> {
        let req = ExportTraceServiceRequest::decode(bytes).unwrap();
        req.resource_spans[0].scope_spans[0]
            .spans
            .iter()
            .map(|s| s.span_id.clone())
            .collect()
    }

    /// Streams are counted process-wide and other tests open some too:
    /// one lock for the tests that check the count.
    static COUNT_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn chunks_add_up_to_the_whole_trace_and_repeat_exactly() {
        let _count = COUNT_LOCK.lock();
        let before = ct_build_streams_open();
        let (_tmp, dir) = build_dir(25);
        let dir = dir.as_os_str().as_bytes();
        let (code, handle, mut out) = open(dir, 0, 10, std::ptr::null());
        assert_eq!(code, 0);
        assert!(!handle.is_null());
        assert!(out.traces.ptr.is_null(), "the trace comes in chunks, not whole");
        assert_eq!(out.summary.spans, 27);
        assert_eq!(ct_build_streams_open(), before + 1);
        let mut info = CtTraceStreamInfo::default();
        // SAFETY: a live handle and a writable info.
        unsafe { ct_build_stream_info(handle, &mut info) };
        assert_eq!((info.spans, info.chunks), (27, 3));

        // The whole trace, as ct_process_build gives it.
        let req = request(dir, 0);
        let mut whole = std::mem::MaybeUninit::<CtBuildResult>::uninit();
        // SAFETY: as in open().
        let code = unsafe { ct_process_build(&req, std::ptr::null(), whole.as_mut_ptr()) };
        assert_eq!(code, 0);
        // SAFETY: written by ct_process_build.
        let mut whole = unsafe { whole.assume_init() };
        // SAFETY: a filled buffer, valid until freed.
        let whole_bytes = unsafe { std::slice::from_raw_parts(whole.traces.ptr, whole.traces.len) }.to_vec();
        let trace_id = ExportTraceServiceRequest::decode(whole_bytes.as_slice())
            .unwrap()
            .resource_spans[0]
            .scope_spans[0]
            .spans[0]
            .trace_id
            .clone();
        assert_eq!(trace_id, info.trace_id);

        // Out of order and twice: the same bytes.
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        for k in [2, 0, 1, 2, 0] {
            let (code, bytes, _) = chunk(handle, k, std::ptr::null());
            assert_eq!(code, 0);
            let (again_code, again, _) = chunk(handle, k, std::ptr::null());
            assert_eq!((again_code, &again), (0, &bytes));
            sizes.push((k, spans_of(&bytes).len()));
            got.push((k, spans_of(&bytes)));
        }
        assert_eq!(sizes[..3], [(2, 7), (0, 10), (1, 10)]);
        let mut in_order: Vec<Vec<u8>> = Vec::new();
        for k in 0..3 {
            in_order.extend(got.iter().find(|(i, _)| *i == k).unwrap().1.clone());
        }
        assert_eq!(in_order, spans_of(&whole_bytes));
        let (code, bytes, message) = chunk(handle, 3, std::ptr::null());
        assert_eq!(code, ErrorCode::InvalidRequest as i32);
        assert!(bytes.is_empty() && message.contains("past the last"), "{message}");

        // SAFETY: each freed once here (then no-ops).
        unsafe {
            ct_build_result_free(&mut whole);
            ct_build_result_free(&mut out);
            ct_build_stream_close(handle);
        }
        assert_eq!(ct_build_streams_open(), before);
    }

    #[test]
    fn a_panic_in_the_middle_of_a_stream_is_an_error_and_the_handle_still_closes() {
        let _count = COUNT_LOCK.lock();
        let before = ct_build_streams_open();
        let (_tmp, dir) = build_dir(25);
        let (code, handle, mut out) = open(
            dir.as_os_str().as_bytes(),
            CT_FLAG_FORCE_PANIC_IN_CHUNK,
            10,
            std::ptr::null(),
        );
        assert_eq!(code, 0);
        assert_eq!(chunk(handle, 0, std::ptr::null()).0, 0);
        let (code, bytes, message) = chunk(handle, 1, std::ptr::null());
        assert_eq!(code, ErrorCode::Panic as i32);
        assert!(bytes.is_empty());
        assert!(message.contains("forced panic in chunk 1"), "{message}");
        // The handle is intact: other chunks still come.
        assert_eq!(chunk(handle, 2, std::ptr::null()).0, 0);
        // SAFETY: freed once.
        unsafe {
            ct_build_result_free(&mut out);
            ct_build_stream_close(handle);
        }
        assert_eq!(ct_build_streams_open(), before);
    }

    #[test]
    fn a_cancelled_stream_stops_and_failed_opens_give_no_handle() {
        let _count = COUNT_LOCK.lock();
        let before = ct_build_streams_open();
        let (_tmp, dir) = build_dir(5);
        let cancel = ct_cancel_new();
        let (code, handle, mut out) = open(dir.as_os_str().as_bytes(), 0, 2, cancel);
        assert_eq!(code, 0);
        assert_eq!(chunk(handle, 0, cancel).0, 0);
        // SAFETY: a live token.
        unsafe { ct_cancel_set(cancel) };
        let (code, bytes, _) = chunk(handle, 1, cancel);
        assert_eq!(code, ErrorCode::Cancelled as i32);
        assert!(bytes.is_empty());
        // SAFETY: freed once each.
        unsafe {
            ct_build_result_free(&mut out);
            ct_build_stream_close(handle);
        }
        // A cancelled open, a missing build, a panic in open: no handle.
        for (dir, flags) in [
            (dir.as_os_str().as_bytes().to_vec(), 0),
            (b"/nonexistent/20261130T034340-1".to_vec(), 0),
            (dir.as_os_str().as_bytes().to_vec(), CT_FLAG_FORCE_PANIC),
        ] {
            let (code, handle, mut out) = open(&dir, flags, 2, cancel);
            assert_ne!(code, 0);
            assert!(handle.is_null());
            // SAFETY: written by ct_build_open.
            unsafe { ct_build_result_free(&mut out) };
        }
        // SAFETY: no call uses the token any more.
        unsafe { ct_cancel_free(cancel) };
        // A null handle is an error, not a crash; closing null is a no-op.
        assert_eq!(
            chunk(std::ptr::null(), 0, std::ptr::null()).0,
            ErrorCode::InvalidRequest as i32
        );
        // SAFETY: null is allowed.
        unsafe { ct_build_stream_close(std::ptr::null_mut()) };
        assert_eq!(ct_build_streams_open(), before);
    }
}
