//! What identifies one build in its outputs: the trace's ids, clock and
//! resource ([`Identity`]), and the series its metrics belong to
//! ([`metric_series`], by the request's [`MetricIdentity`]).

use std::path::Path;

use opentelemetry_proto::tonic::metrics::v1::AggregationTemporality;
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::history::MetricSeries;
use crate::error::Error;
use crate::ids;
use crate::otlp::{build_resource, host_resource, semconv, with_invocation_id};
use crate::request::{BuildRequest, MetricIdentity};
use crate::timing::{Build, Clock};
use crate::warnings::Warnings;

/// What identifies one build and places it in time, shared by its trace and
/// its metrics.
pub(super) struct Identity {
    pub(super) clock: Clock,
    pub(super) trace_id: [u8; 16],
    /// The trace's resource (`ct.invocation_id` = the directory name).
    pub(super) resource: Resource,
    /// Build start and end, Unix ns.
    pub(super) start: u64,
    pub(super) end: u64,
    /// `ct.variant`, for the points of series the host's builds share.
    pub(super) variant: String,
}

impl Identity {
    pub(super) fn of(
        req: &BuildRequest,
        build: &Build,
        path: &Path,
        warnings: &mut Warnings,
    ) -> Result<Self, Error> {
        let clock = Clock::for_build(build).map_err(|e| Error::Malformed {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let dir = ids::canonical_dir(&req.invocation_dir);
        let trace_id = ids::trace_id(
            &req.host_name,
            &ids::path_bytes(&dir),
            build.timestamp.as_deref().unwrap_or(""),
        );
        let resource = build_resource(req, build, &ids::invocation_id(&dir), warnings);
        let (start, end) = clock.root_interval();
        Ok(Self {
            clock,
            trace_id,
            resource,
            start: unix_nanos(start),
            end: unix_nanos(end),
            variant: build.variant.clone(),
        })
    }
}

/// The series a build's metrics belong to: the trace's resource identified
/// by the trace id, each point cumulative over the build (per-build
/// identity, ct-cake's form); or the host's resource with the build's
/// deltas and its keys on the points (series the host's builds share).
pub(super) fn metric_series(req: &BuildRequest, id: &Identity) -> MetricSeries {
    if req.metric_identity == MetricIdentity::Build {
        let resource = with_invocation_id(
            &id.resource,
            &ids::to_hex(&id.trace_id),
            req.limits.max_attribute_len,
        );
        MetricSeries {
            resource,
            temporality: AggregationTemporality::Cumulative,
            point_attributes: Vec::new(),
        }
    } else {
        MetricSeries {
            resource: host_resource(req),
            temporality: AggregationTemporality::Delta,
            point_attributes: vec![
                ("ct.variant", id.variant.clone()),
                (semconv::PIPELINE_NAME, req.pipeline_name.clone()),
            ],
        }
    }
}

fn unix_nanos(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}
