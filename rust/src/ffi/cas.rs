//! The CAS-store scan call of the C ABI: decodes a `CtCasRequest` into a
//! [`CasRequest`], runs [`scan_set`] (one store set, typically one variant's
//! obj/pch/pcm/exe cells, to one OTLP request) and fills in a `CtCasResult`.

use super::buffer::{path_of, text_of, CtBuffer, CtByteView};
use super::export::{
    export, free_handle, free_result, lines_buffer, new_handle, optional_buffer, CallResult,
};
use super::guard::guard;
use super::{decode_pairs, CtCancel, CT_FLAG_METRICS_AS_SPANS};
use crate::cancel::CancelToken;
use crate::cas::{CacheFootprint, CasKind, ScanCache};
use crate::error::ErrorCode;
use crate::pipeline::scan_set;
use crate::request::{CasCell, CasOutput, CasRequest};

/// One cell (one variant's directory of one store kind).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CtCasCell {
    /// `CT_CAS_KIND_*` (a `CtCasKind`; an unknown number is an invalid
    /// request, not undefined behaviour, hence the plain integer).
    pub kind: u32,
    pub path: CtByteView,
    /// Non-zero: configured explicitly, so a missing cell reports zeros
    /// (ct-cache-report with the flag given); zero: a missing cell is skipped.
    pub explicit_: u32,
}

/// One scan. Views and the cell array are borrowed for the call only.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CtCasRequest {
    pub cells: *const CtCasCell,
    pub cell_count: usize,
    pub host_name: CtByteView,
    pub service_name: CtByteView,
    /// `ct.variant` of the resource; empty: omitted.
    pub variant: CtByteView,
    /// User resource attributes as `key\0value\0…`; built-in keys win.
    pub resource_attributes: CtByteView,
    /// Time of the data points (or the snapshot span), Unix ns.
    pub time_unix_nano: u64,
    /// `CT_FLAG_METRICS_AS_SPANS` to get a `ct.cache.snapshot` span instead of gauges.
    pub flags: u32,
    /// Threads per cell scan; 0: the default.
    pub max_threads: u32,
}

/// What one scan returns; buffers are empty (null) when unused.
#[repr(C)]
#[derive(Debug)]
pub struct CtCasResult {
    /// `ExportMetricsServiceRequest` (gauges), unless metrics-as-spans.
    pub metrics: CtBuffer,
    /// `ExportTraceServiceRequest` (`ct.cache.snapshot`), with metrics-as-spans.
    pub traces: CtBuffer,
    /// Cells that produced numbers.
    pub cells_scanned: u32,
    /// Gauge data points (or span attributes) produced.
    pub points: u64,
    /// Anomalies met (manifests treated as missing, unreadable dirs, …).
    pub anomalies: u64,
    /// Warnings, one per line (UTF-8).
    pub warnings: CtBuffer,
    /// The error message when the call returned non-zero (UTF-8).
    pub error_message: CtBuffer,
}

impl CallResult for CtCasResult {
    fn empty() -> Self {
        Self {
            metrics: CtBuffer::empty(),
            traces: CtBuffer::empty(),
            cells_scanned: 0,
            points: 0,
            anomalies: 0,
            warnings: CtBuffer::empty(),
            error_message: CtBuffer::empty(),
        }
    }

    fn error_message(&mut self) -> &mut CtBuffer {
        &mut self.error_message
    }

    fn buffers(&mut self) -> Vec<&mut CtBuffer> {
        vec![
            &mut self.metrics,
            &mut self.traces,
            &mut self.warnings,
            &mut self.error_message,
        ]
    }
}

/// Opaque cache of per-shard results kept between periodic scans: an obj
/// shard whose directory did not change is not listed again.
pub struct CtCasCache {
    cache: std::sync::Mutex<ScanCache>,
}

/// A new, empty scan cache; free it with `ct_cas_cache_free`.
#[no_mangle]
pub extern "C" fn ct_cas_cache_new() -> *mut CtCasCache {
    new_handle(|| CtCasCache {
        cache: std::sync::Mutex::new(ScanCache::new()),
    })
}

/// Frees a cache from `ct_cas_cache_new`; no scan may still use it.
///
/// # Safety
/// `cache` must be null or come from `ct_cas_cache_new`, freed at most once.
#[no_mangle]
pub unsafe extern "C" fn ct_cas_cache_free(cache: *mut CtCasCache) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_handle(cache) }
}

impl CtCasCache {
    /// The cache, whatever an earlier scan's panic left of its lock: the
    /// cache is only ever left consistent (scans commit at the end).
    fn lock(&self) -> std::sync::MutexGuard<'_, ScanCache> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Size of a scan cache (`ct_cas_cache_footprint`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CtCasCacheFootprint {
    pub cells: u64,
    pub shards: u64,
    /// Distinct bucket keys over all cached shards.
    pub buckets: u64,
    /// Estimated heap bytes held.
    pub bytes: u64,
}

/// Drops what `cache` keeps for every cell whose path is not among the
/// `count` views at `paths` (spelled as the cells are scanned): a pool's
/// variant that disappeared is never scanned again, so only this lets go
/// of it. Returns how many cells were dropped (0 for a null cache).
///
/// # Safety
/// `cache` must be null or live; `paths` must point to `count` views, each
/// valid for its length during the call (or `count` must be 0).
#[no_mangle]
pub unsafe extern "C" fn ct_cas_cache_retain(
    cache: *const CtCasCache,
    paths: *const CtByteView,
    count: usize,
) -> u64 {
    // SAFETY: the caller guarantees cache is live or null.
    let Some(cache) = (unsafe { cache.as_ref() }) else {
        return 0;
    };
    let views = if paths.is_null() || count == 0 {
        &[][..]
    } else {
        // SAFETY: non-null, and the caller guarantees `count` views.
        unsafe { std::slice::from_raw_parts(paths, count) }
    };
    guard(|| {
        // SAFETY: the caller guarantees every view is valid during the call.
        let keep: Vec<_> = views
            .iter()
            .filter_map(|v| path_of(unsafe { v.as_slice() }))
            .collect();
        cache.lock().retain_cells(keep.iter().map(|p| p.as_path())) as u64
    })
    .unwrap_or(0)
}

/// The size of `cache` (all zeros for a null cache).
///
/// # Safety
/// `cache` must be null or live.
#[no_mangle]
pub unsafe extern "C" fn ct_cas_cache_footprint(cache: *const CtCasCache) -> CtCasCacheFootprint {
    // SAFETY: the caller guarantees cache is live or null.
    let Some(cache) = (unsafe { cache.as_ref() }) else {
        return CtCasCacheFootprint::default();
    };
    guard(|| {
        let CacheFootprint {
            cells,
            shards,
            buckets,
            bytes,
        } = cache.lock().footprint();
        CtCasCacheFootprint {
            cells: cells as u64,
            shards: shards as u64,
            buckets: buckets as u64,
            bytes: bytes as u64,
        }
    })
    .unwrap_or_default()
}

/// Scans the cells of `req` and returns their gauges (or snapshot span).
/// A cell that cannot be listed becomes a warning and is left out; the other
/// cells still report. Returns 0, or a `CtErrorCode` with `out->error_message`.
/// `out` is always written; release it with `ct_cas_result_free`.
///
/// # Safety
/// `req` and `out` must be valid; `req->cells` must point to `cell_count`
/// cells; every view must be valid during the call; `cancel` and `cache`
/// may be null (no reuse between scans without a cache).
#[no_mangle]
pub unsafe extern "C" fn ct_scan_cas(
    req: *const CtCasRequest,
    cancel: *const CtCancel,
    cache: *const CtCasCache,
    out: *mut CtCasResult,
) -> i32 {
    let body = |req: &CtCasRequest, token: &CancelToken| {
        // SAFETY: forwarded to the caller.
        let request = unsafe { decode(req) }.map_err(|m| (ErrorCode::InvalidRequest, m))?;
        // SAFETY: the caller guarantees cache is live or null.
        match unsafe { cache.as_ref() } {
            Some(c) => scan_set(&request, token, Some(&mut c.lock())),
            None => scan_set(&request, token, None),
        }
        .map_err(|e| (e.code(), e.to_string()))
    };
    let fill = |out: &mut CtCasResult, done: CasOutput| {
        out.cells_scanned = done.stores.len() as u32;
        out.points = done.points;
        out.anomalies = done.anomalies;
        out.warnings = lines_buffer(&done.warnings);
        out.traces = optional_buffer(done.traces);
        out.metrics = optional_buffer(done.metrics);
    };
    // SAFETY: forwarded to the caller (see above).
    unsafe { export(req, cancel, out, body, fill) }
}

/// Frees every buffer of a scan result; safe to call twice.
///
/// # Safety
/// `res` must be null or point to a result filled by `ct_scan_cas`.
#[no_mangle]
pub unsafe extern "C" fn ct_cas_result_free(res: *mut CtCasResult) {
    // SAFETY: forwarded to the caller (see above).
    unsafe { free_result(res) }
}

/// # Safety
/// As `ct_scan_cas`.
unsafe fn decode(req: &CtCasRequest) -> Result<CasRequest, String> {
    let raw_cells = if req.cells.is_null() || req.cell_count == 0 {
        &[][..]
    } else {
        // SAFETY: non-null, and the caller guarantees it points to
        // `cell_count` cells that stay valid during the call.
        unsafe { std::slice::from_raw_parts(req.cells, req.cell_count) }
    };
    let mut cells = Vec::with_capacity(raw_cells.len());
    for (i, c) in raw_cells.iter().enumerate() {
        let kind =
            CasKind::from_number(c.kind).ok_or_else(|| format!("cells[{i}]: unknown kind {}", c.kind))?;
        // SAFETY: the caller guarantees every view is valid during the call.
        let path = path_of(unsafe { c.path.as_slice() }).ok_or_else(|| format!("cells[{i}]: empty path"))?;
        cells.push(CasCell {
            kind,
            path,
            explicit: c.explicit_ != 0,
        });
    }
    let views = [
        req.host_name,
        req.service_name,
        req.variant,
        req.resource_attributes,
    ];
    // SAFETY: the caller guarantees every view is valid for its length during
    // the call; the slices do not outlive this function.
    let [host, service, variant, attributes] = views.map(|v| unsafe { v.as_slice() });
    let mut request = CasRequest::new(text_of(host), req.time_unix_nano);
    request.cells = cells;
    if !service.is_empty() {
        request.service_name = text_of(service);
    }
    request.variant = text_of(variant);
    request.resource_attributes = decode_pairs(attributes)?;
    request.metrics_as_spans = req.flags & CT_FLAG_METRICS_AS_SPANS != 0;
    if req.max_threads > 0 {
        request.limits.max_threads = req.max_threads as usize;
    }
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(b: &[u8]) -> CtByteView {
        CtByteView {
            ptr: b.as_ptr(),
            len: b.len(),
        }
    }

    fn request(cells: &[CtCasCell]) -> CtCasRequest {
        CtCasRequest {
            cells: cells.as_ptr(),
            cell_count: cells.len(),
            host_name: view(b"h"),
            service_name: view(b""),
            variant: view(b"v"),
            resource_attributes: view(b""),
            time_unix_nano: 1,
            flags: 0,
            max_threads: 0,
        }
    }

    /// Runs `ct_scan_cas`; returns the code, the message and the metrics.
    fn scan(req: *const CtCasRequest) -> (i32, String, Vec<u8>) {
        let mut out = std::mem::MaybeUninit::<CtCasResult>::uninit();
        // SAFETY: req is null or points to a request whose views outlive the call.
        let code = unsafe { ct_scan_cas(req, std::ptr::null(), std::ptr::null(), out.as_mut_ptr()) };
        // SAFETY: ct_scan_cas always writes out.
        let mut out = unsafe { out.assume_init() };
        let bytes = |b: &CtBuffer| {
            if b.ptr.is_null() {
                Vec::new()
            } else {
                // SAFETY: a non-null buffer of the result, valid until freed.
                unsafe { std::slice::from_raw_parts(b.ptr, b.len) }.to_vec()
            }
        };
        let message = String::from_utf8_lossy(&bytes(&out.error_message)).into_owned();
        let metrics = bytes(&out.metrics);
        // SAFETY: out was written by ct_scan_cas; freeing twice is allowed.
        unsafe {
            ct_cas_result_free(&mut out);
            ct_cas_result_free(&mut out);
        }
        assert!(out.metrics.ptr.is_null() && out.error_message.ptr.is_null());
        (code, message, metrics)
    }

    #[test]
    fn bad_requests_are_error_codes_with_messages() {
        let (code, message, _) = scan(std::ptr::null());
        assert_eq!(
            (code, message.as_str()),
            (ErrorCode::InvalidRequest as i32, "null request")
        );
        let path = b"/nonexistent-cell";
        let cells = [CtCasCell {
            kind: 4,
            path: view(path),
            explicit_: 1,
        }];
        let (code, message, metrics) = scan(&request(&cells));
        assert_eq!(code, ErrorCode::InvalidRequest as i32);
        assert_eq!(message, "cells[0]: unknown kind 4");
        assert!(metrics.is_empty());
        // SAFETY: a null out is refused before anything is written.
        let code = unsafe {
            ct_scan_cas(
                &request(&cells),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(code, ErrorCode::InvalidRequest as i32);
    }

    #[test]
    fn retain_drops_the_cells_not_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let cells: Vec<Vec<u8>> = ["gcc.debug", "gcc.release"]
            .iter()
            .map(|v| {
                let cell = tmp.path().join(v);
                std::fs::create_dir_all(cell.join("0d")).unwrap();
                cell.into_os_string().into_encoded_bytes()
            })
            .collect();
        let cache = ct_cas_cache_new();
        for path in &cells {
            let cell = [CtCasCell {
                kind: CasKind::Obj as u32,
                path: view(path),
                explicit_: 1,
            }];
            let mut out = std::mem::MaybeUninit::<CtCasResult>::uninit();
            // SAFETY: the request's views and the cache outlive the call.
            let code = unsafe { ct_scan_cas(&request(&cell), std::ptr::null(), cache, out.as_mut_ptr()) };
            assert_eq!(code, 0);
            // SAFETY: ct_scan_cas always writes out.
            unsafe { ct_cas_result_free(out.as_mut_ptr()) };
        }
        // SAFETY: cache is live.
        assert_eq!(unsafe { ct_cas_cache_footprint(cache) }.cells, 2);
        let keep = [view(&cells[1])];
        // SAFETY: cache is live; keep holds one view valid during the call.
        assert_eq!(unsafe { ct_cas_cache_retain(cache, keep.as_ptr(), 1) }, 1);
        // SAFETY: as above.
        assert_eq!(unsafe { ct_cas_cache_footprint(cache) }.cells, 1);
        // SAFETY: as above.
        assert_eq!(unsafe { ct_cas_cache_retain(cache, keep.as_ptr(), 1) }, 0);
        // SAFETY: an empty list drops everything; null caches are no-ops.
        unsafe {
            assert_eq!(ct_cas_cache_retain(cache, std::ptr::null(), 0), 1);
            assert_eq!(ct_cas_cache_footprint(cache), CtCasCacheFootprint::default());
            assert_eq!(ct_cas_cache_retain(std::ptr::null(), keep.as_ptr(), 1), 0);
            ct_cas_cache_free(cache);
        }
    }

    #[test]
    fn a_scan_fills_the_result() {
        let path = b"/nonexistent-cell";
        let cells = [CtCasCell {
            kind: CasKind::Pcm as u32,
            path: view(path),
            explicit_: 1,
        }];
        let (code, message, metrics) = scan(&request(&cells));
        assert_eq!((code, message.as_str()), (0, ""));
        assert!(!metrics.is_empty(), "an explicit missing cell reports zeros");
    }
}
