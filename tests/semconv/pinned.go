// Package semconvcheck carries the pinned copy of the OpenTelemetry
// semantic-conventions model that the checker reads (testdata/registry:
// the registry's own YAML of the cicd, vcs, error and test namespaces at
// the release named in VERSION, with the repository's LICENSE). Embedded,
// so the checker needs neither the network nor a module cache to know the
// registry.
package semconvcheck

import "embed"

// Model is testdata/registry: VERSION, LICENSE and model/<namespace>/*.yaml.
//
//go:embed testdata/registry/VERSION testdata/registry/LICENSE testdata/registry/model
var Model embed.FS

// ModelRoot is the directory of Model that holds VERSION and model/.
const ModelRoot = "testdata/registry"
