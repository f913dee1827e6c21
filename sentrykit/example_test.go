package sentrykit_test

import (
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/sentrykit"
)

// The Host's Reporter receives what the entrypoints recover from on their own (a
// handler's panic, a dead-lettered message) and the failure that ends the run,
// each tagged with the service, the instance and the trace. Empty Config fields
// take SENTRY_DSN, SENTRY_ENVIRONMENT and SENTRY_RELEASE; New opens no connection.
func ExampleNew() {
	r, err := sentrykit.New(sentrykit.Config{Environment: "production"})
	if err != nil {
		panic(err) // a *fault.ConfigError that never repeats the DSN
	}
	host.Main(host.AppSpec{ServiceName: "orders", Telemetry: host.TelemetryConfig{Reporter: r}})
}
