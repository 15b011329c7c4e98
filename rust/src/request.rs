//! What the receiver asks of the core, and what it gets back: one build
//! ([`BuildRequest`] → [`BuildOutput`]) or one scan of a CAS store set
//! ([`CasRequest`] → [`CasOutput`]).

use std::path::PathBuf;

use crate::cas::{CasKind, ScanLimits, StoreStats};
// Defined in a leaf for the parsers; a request carries one.
pub use crate::limits::Limits;

/// Which OTLP signals to produce. A signal without a consumer in the
/// collector is not asked for, so its work is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signals {
    pub traces: bool,
    pub metrics: bool,
}

impl Signals {
    pub fn all() -> Self {
        Self {
            traces: true,
            metrics: true,
        }
    }
}

/// One build to turn into OTLP.
#[derive(Debug, Clone)]
pub struct BuildRequest {
    /// The invocation directory (`<parent>/YYYYMMDDTHHMMSS-PID`) that holds `timing.json`.
    pub invocation_dir: PathBuf,
    /// A ccache statslog holding this build's events (captured or configured).
    pub statslog: Option<PathBuf>,
    /// A `rule_outcomes.log` for this build (captured).
    pub outcomes: Option<PathBuf>,
    /// The build's generated `build.ninja` (ninja backend) or Makefile (make
    /// backend), for the exact critical path; `{variant}` in it stands for
    /// the build's variant. Absent or unusable: the path is estimated.
    pub build_graph: Option<PathBuf>,
    /// `host.name`; also an input of the trace id.
    pub host_name: String,
    /// `service.name`.
    pub service_name: String,
    /// User resource attributes; built-in keys win over these.
    pub resource_attributes: Vec<(String, String)>,
    /// `git.commit.sha` when the receiver could read it in time.
    pub git_commit_sha: Option<String>,
    pub signals: Signals,
    pub limits: Limits,
    /// Emit ccache snapshots as `ct.ccache.snapshot` spans instead of metrics.
    pub metrics_as_spans: bool,
    /// `cicd.pipeline.name` (configured, or derived by the receiver from
    /// the build's location); empty: omitted.
    pub pipeline_name: String,
    /// The `vcs.*` resource attributes the receiver read from the source
    /// tree, under the same lag rule as `git_commit_sha`.
    pub vcs: Vcs,
    /// The root span as the CI/CD conventions' pipeline run (name
    /// `{action} {pipeline}`, kind SERVER) instead of ct-cake's
    /// `compiletools.build`, INTERNAL (the receiver's `semconv_root_span`).
    pub semconv_root_span: bool,
    /// The receiver's compile history (time saved, duration deltas); the
    /// build is evaluated against it and staged under its invocation
    /// directory until the receiver commits it. `None`: no history numbers.
    pub history: Option<std::sync::Arc<crate::history::History>>,
    /// Also produce the build metrics (`cicd.pipeline.run.*`,
    /// `ct.rule.duration`, `ct.compiles`) with the metrics signal.
    pub build_metrics: bool,
    /// What the metrics' series identify: each build (ct-cake's form) or the
    /// host, whose builds then share series.
    pub metric_identity: MetricIdentity,
    /// Also produce the build's log records (`ct.clang.header`, ...): the
    /// logs signal, kept apart from [`Signals`] which only live builds
    /// used before.
    pub logs: bool,
    /// The clang `-ftime-trace` files of the build's compiles.
    pub time_trace: crate::timetrace::TimeTraceConfig,
}

/// What a build's metrics are the series of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricIdentity {
    /// The build's own resource (`service.instance.id` = host:pid,
    /// `ct.invocation_id`, …): every build is new series, each point
    /// cumulative over its build. ct-cake's form, byte for byte.
    Build,
    /// A resource that is the same for every build of the host
    /// (`service.instance.id` = the host name): points are the build's
    /// deltas, per-build keys (`ct.variant`, `cicd.pipeline.name`) move to
    /// the points.
    Host,
}

/// What the receiver knows of the source tree's version control; an empty
/// field is omitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vcs {
    /// `vcs.ref.head.name`: the branch or tag HEAD points to (empty when detached).
    pub ref_head_name: String,
    /// `vcs.ref.head.type`: `branch` or `tag`.
    pub ref_head_type: String,
    /// `vcs.repository.url.full`: the `origin` remote, without credentials.
    pub repository_url_full: String,
    /// `vcs.provider.name`: `github`, `gitlab`, … when the host makes it obvious.
    pub provider_name: String,
}

impl BuildRequest {
    pub fn new(invocation_dir: impl Into<PathBuf>, host_name: impl Into<String>) -> Self {
        Self {
            invocation_dir: invocation_dir.into(),
            statslog: None,
            outcomes: None,
            build_graph: None,
            host_name: host_name.into(),
            service_name: "compiletools".to_owned(),
            resource_attributes: Vec::new(),
            git_commit_sha: None,
            signals: Signals::all(),
            limits: Limits::default(),
            metrics_as_spans: false,
            pipeline_name: String::new(),
            vcs: Vcs::default(),
            semconv_root_span: false,
            history: None,
            build_metrics: false,
            metric_identity: MetricIdentity::Build,
            logs: true,
            time_trace: crate::timetrace::TimeTraceConfig::default(),
        }
    }
}

/// Counts the receiver turns into self-metrics and warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub spans: u64,
    pub metric_points: u64,
    /// Rules skipped because their start was 0.0 or outside the root window.
    pub unanchored_rules: u64,
    /// Metadata values that could not become attributes.
    pub dropped_attributes: u64,
    /// Human-readable warnings (non-fatal oddities in the input).
    pub warnings: Vec<String>,
    /// clang traces read for the build's compiles.
    pub clang_traces: u64,
    /// clang traces found but refused (hostile, unreadable, not a trace).
    pub clang_traces_refused: u64,
}

/// Serialized OTLP requests for one build.
#[derive(Debug, Clone, Default)]
pub struct BuildOutput {
    /// `ExportTraceServiceRequest` bytes, when traces were asked for.
    pub traces: Option<Vec<u8>>,
    /// `ExportMetricsServiceRequest` bytes, when metrics were asked for and exist.
    pub metrics: Option<Vec<u8>>,
    /// `ExportLogsServiceRequest` bytes, when logs were asked for and exist.
    pub logs: Option<Vec<u8>>,
    pub summary: Summary,
}

impl BuildOutput {
    /// Frees the output, keeping its large buffers for the next build
    /// (bounded, see [`crate::retain`]): what a caller does once the bytes
    /// are sent.
    pub fn recycle(self) {
        for bytes in [self.traces, self.metrics, self.logs].into_iter().flatten() {
            crate::retain::give_bytes(bytes);
        }
    }
}

/// One cell of a CAS scan: one variant's directory of one store kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasCell {
    pub kind: CasKind,
    pub path: PathBuf,
    /// Configured explicitly: a missing cell reports zeros (ct-cache-report
    /// with the store named on its command line). Otherwise a missing cell
    /// is left out (formats.md §6.8).
    pub explicit: bool,
}

/// One scan of a CAS store set (typically one variant's obj/pch/pcm/exe
/// cells), sent as one OTLP request.
#[derive(Debug, Clone)]
pub struct CasRequest {
    pub cells: Vec<CasCell>,
    /// `host.name`; also an input of the snapshot span's ids.
    pub host_name: String,
    /// `service.name`.
    pub service_name: String,
    /// `ct.variant`; empty: omitted.
    pub variant: String,
    /// User resource attributes; built-in keys win over these.
    pub resource_attributes: Vec<(String, String)>,
    /// Time of the data points (or of the snapshot span), Unix ns.
    pub time_unix_nano: u64,
    /// Send the numbers as one `ct.cache.snapshot` span instead of gauges.
    pub metrics_as_spans: bool,
    pub limits: ScanLimits,
}

impl CasRequest {
    pub fn new(host_name: impl Into<String>, time_unix_nano: u64) -> Self {
        Self {
            cells: Vec::new(),
            host_name: host_name.into(),
            service_name: "compiletools".to_owned(),
            variant: String::new(),
            resource_attributes: Vec::new(),
            time_unix_nano,
            metrics_as_spans: false,
            limits: ScanLimits::default(),
        }
    }
}

/// What one CAS scan produced.
#[derive(Debug, Clone, Default)]
pub struct CasOutput {
    /// `ExportMetricsServiceRequest` bytes (the gauges), unless
    /// metrics-as-spans; empty when no cell was scanned.
    pub metrics: Option<Vec<u8>>,
    /// `ExportTraceServiceRequest` bytes (`ct.cache.snapshot`), with
    /// metrics-as-spans; empty when no cell was scanned.
    pub traces: Option<Vec<u8>>,
    /// The stores that were scanned and reported, in cell order.
    pub stores: Vec<(CasKind, StoreStats)>,
    /// Gauge data points (or span attributes) produced.
    pub points: u64,
    /// Anomalies met (manifests treated as missing, unreadable dirs, cells
    /// that could not be listed, …).
    pub anomalies: u64,
    /// Human-readable warnings.
    pub warnings: Vec<String>,
}
