package livebuilds

import "go.opentelemetry.io/collector/pdata/pcommon"

// builtInResourceKeys are the resource keys the core sets itself on a
// build's resource (rust/src/otlp/resource.rs BUILT_IN_KEYS): a configured
// attribute with one of these keys is ignored there, so it is here too.
var builtInResourceKeys = map[string]bool{
	"service.name": true, "service.namespace": true, "host.name": true, "service.instance.id": true,
	"ct.variant": true, "ct.backend": true, "ct.invocation_id": true, "git.commit.sha": true,
	"cicd.pipeline.name": true, "cicd.pipeline.run.id": true, "cicd.worker.id": true, "cicd.worker.name": true,
	"vcs.repository.url.full": true, "vcs.provider.name": true, "vcs.ref.head.name": true,
	"vcs.ref.head.type": true, "vcs.ref.head.revision": true,
}

// putHostResource writes the resource of the live metrics: the one the
// core gives the host's build metrics (host_resource in
// rust/src/otlp/resource.rs) — the service, the host, the host as
// service.instance.id and as the CI/CD worker, the configured attributes
// — so that one host has one metrics resource (one Prometheus instance).
func putHostResource(res pcommon.Map, o Options) {
	res.PutStr("service.name", o.ServiceName)
	res.PutStr("service.namespace", "compiletools")
	if o.HostName != "" {
		res.PutStr("host.name", o.HostName)
		res.PutStr("service.instance.id", o.HostName)
		res.PutStr("cicd.worker.id", o.HostName)
		res.PutStr("cicd.worker.name", o.HostName)
	}
	for _, a := range o.ResourceAttributes {
		if a.Key == "" || a.Value == "" || builtInResourceKeys[a.Key] {
			continue
		}
		if _, seen := res.Get(a.Key); !seen {
			res.PutStr(a.Key, a.Value)
		}
	}
}
