package otlp_test

import (
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/otlp"
)

// The Host exports spans and metrics as the standard OTEL_* variables say
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, …); with none set it exports
// nothing. Without this option the binary links no exporter.
func ExampleFromEnv() {
	host.Main(host.AppSpec{ServiceName: "orders"}, otlp.FromEnv())
}
