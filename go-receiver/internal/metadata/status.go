// Package metadata holds the component's identity and stability levels.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	// Type is the receiver's component type.
	Type = component.MustNewType("compiletools")
	// ScopeName names the receiver's own telemetry.
	ScopeName = "github.com/compiletools-otel/compiletoolsreceiver"
)

const (
	TracesStability  = component.StabilityLevelDevelopment
	MetricsStability = component.StabilityLevelDevelopment
)
