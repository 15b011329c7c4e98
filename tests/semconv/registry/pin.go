package registry

// The blank import pins the registry: go.mod's otel version decides which
// semconv packages exist, this import makes `go mod download` fetch them
// and puts the module in the binary's build info, which Locate reads.
import _ "go.opentelemetry.io/otel/semconv/v1.43.0"

// SemconvVersion is the semantic-conventions release whose generated Go
// package is read: the newest one that go.opentelemetry.io/otel v1.47.0
// (the newest otel release) ships. Keep it equal to the import above.
const SemconvVersion = "v1.43.0"

// otelModule is the Go module that carries the generated semconv packages.
const otelModule = "go.opentelemetry.io/otel"
