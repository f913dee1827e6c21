package host_test

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// A task is work whose end ends the service; the exit code says how it ended.
func Example_task() {
	for _, outcome := range []error{nil, errors.New("timeout"), fault.Permanent(errors.New("bad row"))} {
		reindex, err := entrypoint.NewTask(entrypoint.TaskConfig{Name: "reindex"},
			func(ctx context.Context) error { return outcome })
		if err != nil {
			panic(err)
		}
		err = host.Run(context.Background(), host.AppSpec{
			ServiceName: "reindex",
			Entrypoints: []host.Registration{{Entrypoint: reindex}},
			Probes:      health.ListenerConfig{Disabled: true},
			Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
		})
		fmt.Println("exit", host.ExitCode(err))
	}
	// Output:
	// exit 0
	// exit 1
	// exit 3
}
