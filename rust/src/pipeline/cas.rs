//! One CAS store set in, one OTLP request out (design.md §5).
//!
//! Each cell is scanned on its own: a cell that cannot be listed becomes a
//! warning and an anomaly and is left out, and the other cells still
//! report. A missing cell is reported as zeros when it was configured
//! explicitly and left out otherwise, as `ct-cache-report` does in its
//! default scope (formats.md §6.8).

use crate::cancel::CancelToken;
use crate::cas::{self, ScanCache};
use crate::error::Error;
use crate::otlp::cas::METRIC_NAMES;
use crate::otlp::{encode_cas_metrics_request, encode_cas_snapshot_span_request, store_resource};
use crate::request::{CasOutput, CasRequest};

/// Scans the cells of `req` and returns their gauges, or their snapshot span
/// under `metrics_as_spans`. With a `cache`, obj shards unchanged since the
/// previous scan of the same cache are not listed again. Fails only when
/// `cancel` fires.
pub fn scan_set(
    req: &CasRequest,
    cancel: &CancelToken,
    mut cache: Option<&mut ScanCache>,
) -> Result<CasOutput, Error> {
    let mut output = CasOutput::default();
    for cell in &req.cells {
        cancel.check()?;
        // Explicit cells are configuration; the others are entries of a
        // pool that the store's users write to, never followed.
        let origin = if cell.explicit {
            cas::CellOrigin::Configured
        } else {
            cas::CellOrigin::PoolMember
        };
        let scanned = match cache.as_deref_mut() {
            Some(c) => cas::scan_cell_cached(cell.kind, &cell.path, origin, cancel, req.limits, c),
            None => cas::scan_cell_with(cell.kind, &cell.path, origin, cancel, req.limits),
        };
        match scanned {
            Ok(stats) => {
                output.anomalies += stats.anomalies.counters().iter().map(|(_, n)| n).sum::<u64>();
                for w in &stats.warnings {
                    output
                        .warnings
                        .push(format!("{}: {}", w.path.display(), w.detail));
                }
                if !stats.exists {
                    if !cell.explicit {
                        continue; // not scanned: no points, as ct-cache-report in default scope
                    }
                    output.warnings.push(format!(
                        "{}: configured {} store does not exist; reporting zeros",
                        cell.path.display(),
                        cell.kind.as_str()
                    ));
                }
                output.stores.push((cell.kind, stats));
            }
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => {
                output.anomalies += 1;
                output
                    .warnings
                    .push(format!("{} store not scanned: {e}", cell.kind.as_str()));
            }
        }
    }
    output.points = output.stores.len() as u64 * METRIC_NAMES.len() as u64;
    let resource = store_resource(
        &req.service_name,
        &req.host_name,
        &req.variant,
        &req.resource_attributes,
    );
    if req.metrics_as_spans {
        output.traces = Some(encode_cas_snapshot_span_request(
            &output.stores,
            &resource,
            &req.host_name,
            req.time_unix_nano,
        ));
    } else {
        output.metrics = Some(encode_cas_metrics_request(
            &output.stores,
            &resource,
            req.time_unix_nano,
        ));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cas::CasKind;
    use crate::request::CasCell;

    #[test]
    fn missing_cells_explicit_vs_default() {
        let dir = std::env::temp_dir().join("ct-ffi-cas-missing-cell-test-does-not-exist");
        let mk = |explicit| {
            let mut req = CasRequest::new("h", 1);
            req.cells.push(CasCell {
                kind: CasKind::Obj,
                path: dir.clone(),
                explicit,
            });
            req
        };
        let token = CancelToken::new();
        let skipped = scan_set(&mk(false), &token, None).unwrap();
        assert_eq!(
            (skipped.stores.len(), skipped.metrics.unwrap_or_default().len()),
            (0, 0)
        );
        let mut cache = ScanCache::new();
        let zeros = scan_set(&mk(true), &token, Some(&mut cache)).unwrap();
        assert_eq!(zeros.stores.len(), 1);
        assert!(!zeros.metrics.unwrap_or_default().is_empty());
        assert!(zeros.warnings.iter().any(|w| w.contains("does not exist")));
    }

    #[test]
    fn metrics_as_spans_fills_traces_only() {
        let mut req = CasRequest::new("h", 1);
        req.cells.push(CasCell {
            kind: CasKind::Exe,
            path: std::env::temp_dir().join("ct-cas-set-as-spans-does-not-exist"),
            explicit: true,
        });
        req.metrics_as_spans = true;
        let out = scan_set(&req, &CancelToken::new(), None).unwrap();
        assert!(out.metrics.is_none());
        assert!(!out.traces.unwrap_or_default().is_empty());
        assert_eq!(out.points, 5);
    }

    #[test]
    fn cancelled_before_the_first_cell() {
        let mut req = CasRequest::new("h", 1);
        req.cells.push(CasCell {
            kind: CasKind::Obj,
            path: std::env::temp_dir(),
            explicit: true,
        });
        let token = CancelToken::new();
        token.cancel();
        assert!(matches!(scan_set(&req, &token, None), Err(Error::Cancelled)));
    }
}
