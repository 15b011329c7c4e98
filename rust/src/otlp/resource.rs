//! The OTLP resources: of one build (formats.md §3.1, design.md §2) and of one CAS
//! store set (design.md §5), with the same rules for user attributes.

use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use opentelemetry_proto::tonic::resource::v1::Resource;

use super::attributes::{key_value, AttrBuilder};
use super::semconv;
use crate::request::BuildRequest;
use crate::strings::truncate;
use crate::timing::Build;
use crate::warnings::Warnings;

/// `service.namespace` of everything the receiver emits.
pub const SERVICE_NAMESPACE: &str = "compiletools";
/// `service.name` when the request leaves it empty (compiletools' default).
pub const DEFAULT_SERVICE_NAME: &str = "compiletools";

/// Resource keys the receiver sets itself. User attributes with these keys
/// are ignored even when the built-in value is absent: `git.commit.sha` and
/// the `vcs.*` keys must never be guessed (design.md §4), and `service.name`
/// and `cicd.pipeline.name` have their own settings.
pub const BUILT_IN_KEYS: [&str; 17] = [
    "service.name",
    "service.namespace",
    "host.name",
    "service.instance.id",
    "ct.variant",
    "ct.backend",
    "ct.invocation_id",
    "git.commit.sha",
    semconv::PIPELINE_NAME,
    semconv::PIPELINE_RUN_ID,
    semconv::WORKER_ID,
    semconv::WORKER_NAME,
    semconv::VCS_REPOSITORY_URL_FULL,
    semconv::VCS_PROVIDER_NAME,
    semconv::VCS_REF_HEAD_NAME,
    semconv::VCS_REF_HEAD_TYPE,
    semconv::VCS_REF_HEAD_REVISION,
];

/// The invocation id (directory name) and the PID it carries, if it has the
/// `YYYYMMDDTHHMMSS-PID` shape of formats.md §1.2.
pub fn invocation_pid(invocation_id: &str) -> Option<&str> {
    let (stamp, pid) = invocation_id.split_once('-')?;
    let b = stamp.as_bytes();
    let stamp_ok = b.len() == 15
        && b[8] == b'T'
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[9..].iter().all(u8::is_ascii_digit);
    let pid_ok = !pid.is_empty() && pid.bytes().all(|c| c.is_ascii_digit());
    (stamp_ok && pid_ok).then_some(pid)
}

/// Builds the resource; `invocation_id` is the directory name.
pub fn build_resource(
    req: &BuildRequest,
    build: &Build,
    invocation_id: &str,
    warnings: &mut Warnings,
) -> Resource {
    let mut a = AttrBuilder::with_capacity(
        req.limits.max_attribute_len,
        BUILT_IN_KEYS.len() + req.resource_attributes.len(),
    );
    let service = if req.service_name.is_empty() {
        DEFAULT_SERVICE_NAME
    } else {
        &req.service_name
    };
    a.string("service.name", service);
    a.string("service.namespace", SERVICE_NAMESPACE);
    a.non_empty_string("host.name", &req.host_name);
    match invocation_pid(invocation_id) {
        // Without a host the id would not identify an instance.
        Some(pid) if !req.host_name.is_empty() => a.string("service.instance.id", &format!("{}:{pid}", req.host_name)),
        Some(_) => warnings.push("empty host name: service.instance.id omitted"),
        None => warnings.push(format!(
            "invocation directory name {invocation_id:?} is not YYYYMMDDTHHMMSS-PID: service.instance.id omitted"
        )),
    }
    a.non_empty_string("ct.variant", &build.variant);
    a.non_empty_string("ct.backend", &build.backend);
    a.non_empty_string("ct.invocation_id", invocation_id);
    if let Some(sha) = &req.git_commit_sha {
        a.non_empty_string("git.commit.sha", sha);
    }
    semconv::push_resource_attributes(&mut a, req, invocation_id);
    for (key, value) in user_attributes(&req.resource_attributes) {
        a.string(key, value);
    }
    let (attributes, _) = a.finish();
    Resource {
        attributes,
        ..Default::default()
    }
}

/// The user resource attributes that survive: non-empty keys and values,
/// no built-in key (built-ins always win), the first occurrence of a key.
pub fn user_attributes(user: &[(String, String)]) -> impl Iterator<Item = (&str, &str)> {
    let mut seen: Vec<&str> = Vec::with_capacity(user.len());
    user.iter().filter_map(move |(key, value)| {
        if key.is_empty()
            || value.is_empty()
            || BUILT_IN_KEYS.contains(&key.as_str())
            || seen.contains(&key.as_str())
        {
            return None;
        }
        seen.push(key);
        Some((key.as_str(), value.as_str()))
    })
}

/// The resource of a build's metrics when builds of one host share series
/// ([`crate::request::MetricIdentity::Host`]): only what every build of the
/// host has in common — the service, the host (also as
/// `service.instance.id`: the host's receiver is the instance, and a
/// Prometheus exporter's `instance` label), the CI/CD worker, the user
/// attributes. Everything that differs between builds (`ct.invocation_id`,
/// the PID, the commit, the VCS ref, the variant, backend and pipeline) is
/// left out: on a shared resource it would make every build a new series.
pub fn host_resource(req: &BuildRequest) -> Resource {
    let mut a = AttrBuilder::with_capacity(req.limits.max_attribute_len, 6 + req.resource_attributes.len());
    let service = if req.service_name.is_empty() {
        DEFAULT_SERVICE_NAME
    } else {
        &req.service_name
    };
    a.string("service.name", service);
    a.string("service.namespace", SERVICE_NAMESPACE);
    a.non_empty_string("host.name", &req.host_name);
    a.non_empty_string("service.instance.id", &req.host_name);
    a.non_empty_string(semconv::WORKER_ID, &req.host_name);
    a.non_empty_string(semconv::WORKER_NAME, &req.host_name);
    for (key, value) in user_attributes(&req.resource_attributes) {
        a.string(key, value);
    }
    let (attributes, _) = a.finish();
    Resource {
        attributes,
        ..Default::default()
    }
}

/// The resource of a CAS store scan: the service, the host and the store
/// set's variant, then the user attributes by the same rules as a build's
/// resource. No value is cut: a scan has no attribute length limit.
pub fn store_resource(service: &str, host: &str, variant: &str, user: &[(String, String)]) -> Resource {
    let service = if service.is_empty() {
        DEFAULT_SERVICE_NAME
    } else {
        service
    };
    let mut a = AttrBuilder::with_capacity(u32::MAX, 4 + user.len());
    a.string("service.name", service);
    a.string("service.namespace", SERVICE_NAMESPACE);
    a.non_empty_string("host.name", host);
    a.non_empty_string("ct.variant", variant);
    for (key, value) in user_attributes(user) {
        a.string(key, value);
    }
    let (attributes, _) = a.finish();
    Resource {
        attributes,
        ..Default::default()
    }
}

/// A copy of `resource` whose `ct.invocation_id` is `invocation_id`: the
/// resource of the ccache metrics, which compiletools identifies by the
/// build's trace id in hex instead of the directory name (formats.md §3.5, §8
/// item 4). The key keeps its position, or is appended if the trace's
/// resource had none (an empty directory name). `cicd.pipeline.run.id` is
/// left out: the CI/CD conventions make the pipeline run entity opt-in on
/// metrics (cardinality).
pub fn with_invocation_id(resource: &Resource, invocation_id: &str, max_attribute_len: u32) -> Resource {
    let mut out = resource.clone();
    out.attributes.retain(|kv| kv.key != semconv::PIPELINE_RUN_ID);
    let max = usize::try_from(max_attribute_len).unwrap_or(usize::MAX);
    let value = Value::StringValue(truncate(invocation_id, max).to_owned());
    match out.attributes.iter_mut().find(|kv| kv.key == "ct.invocation_id") {
        Some(kv) => kv.value = Some(AnyValue { value: Some(value) }),
        None => out
            .attributes
            .push(key_value("ct.invocation_id".to_owned(), value)),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_resource_user_attributes_lose_to_built_ins() {
        let user = vec![
            ("host.name".to_owned(), "x".to_owned()),
            ("team".to_owned(), "t".to_owned()),
            ("team".to_owned(), "second".to_owned()),
            ("".to_owned(), "e".to_owned()),
        ];
        let r = attrs(&store_resource("", "h", "v", &user));
        let keys: Vec<&str> = r.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "service.name",
                "service.namespace",
                "host.name",
                "ct.variant",
                "team"
            ]
        );
        assert_eq!(
            (r[0].1.as_str(), r[2].1.as_str(), r[4].1.as_str()),
            ("compiletools", "h", "t")
        );
    }

    fn attrs(r: &Resource) -> Vec<(String, String)> {
        r.attributes
            .iter()
            .map(|kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(Value::StringValue(s)) => (kv.key.clone(), s.clone()),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn pid_from_invocation_id() {
        assert_eq!(invocation_pid("20261130T034340-24175"), Some("24175"));
        assert_eq!(invocation_pid("20261130T034340-1"), Some("1"));
        assert_eq!(invocation_pid("20261130T034340-"), None);
        assert_eq!(invocation_pid("20261130-034340-1"), None);
        assert_eq!(invocation_pid("2026113T034340-1"), None);
        assert_eq!(invocation_pid("20261130T034340-12a"), None);
        assert_eq!(invocation_pid("diag"), None);
        assert_eq!(invocation_pid("２0261130T034340-1"), None);
    }

    #[test]
    fn built_ins_win_and_empties_are_dropped() {
        let mut req = BuildRequest::new("/x/20261130T034340-24175", "vm");
        req.git_commit_sha = Some("abc".into());
        req.resource_attributes = vec![
            ("team".into(), "build".into()),
            ("host.name".into(), "evil".into()),
            ("git.commit.sha".into(), "guess".into()),
            ("vcs.ref.head.name".into(), "guess".into()),
            ("empty".into(), "".into()),
            ("team".into(), "other".into()),
        ];
        let mut build = Build::default();
        build.variant = "gcc.debug".to_owned();
        let mut w = Warnings::new();
        let r = build_resource(&req, &build, "20261130T034340-24175", &mut w);
        let got = attrs(&r);
        let want: Vec<(String, String)> = [
            ("service.name", "compiletools"),
            ("service.namespace", "compiletools"),
            ("host.name", "vm"),
            ("service.instance.id", "vm:24175"),
            ("ct.variant", "gcc.debug"),
            ("ct.invocation_id", "20261130T034340-24175"),
            ("git.commit.sha", "abc"),
            ("cicd.pipeline.run.id", "20261130T034340-24175"),
            ("cicd.worker.id", "vm"),
            ("cicd.worker.name", "vm"),
            ("vcs.ref.head.revision", "abc"),
            ("team", "build"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
        assert!(w.is_empty());
    }

    #[test]
    fn metrics_resource_swaps_the_invocation_id() {
        let req = BuildRequest::new("/x/20261130T034340-24175", "vm");
        let mut w = Warnings::new();
        let r = build_resource(&req, &Build::default(), "20261130T034340-24175", &mut w);
        let m = with_invocation_id(&r, "00ff", 100);
        let (mut a, b) = (attrs(&r), attrs(&m));
        // The pipeline run is opt-in on metrics: the only key dropped.
        let run_id = a.iter().position(|(k, _)| k == "cicd.pipeline.run.id");
        assert_eq!(
            run_id.map(|i| a.remove(i).1).as_deref(),
            Some("20261130T034340-24175")
        );
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.0, y.0, "same keys in the same order");
            if x.0 == "ct.invocation_id" {
                assert_eq!((x.1.as_str(), y.1.as_str()), ("20261130T034340-24175", "00ff"));
            } else {
                assert_eq!(x.1, y.1);
            }
        }
        let bare = with_invocation_id(&Resource::default(), "00ff", 100);
        assert_eq!(attrs(&bare), [("ct.invocation_id".to_owned(), "00ff".to_owned())]);
    }

    #[test]
    fn odd_directory_name_omits_instance_id() {
        let req = BuildRequest::new("/x/latest", "vm");
        let mut w = Warnings::new();
        let r = build_resource(&req, &Build::default(), "latest", &mut w);
        assert!(!attrs(&r).iter().any(|(k, _)| k == "service.instance.id"));
        assert_eq!(w.into_lines().len(), 1);
    }
}
