package host_test

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// queue is a custom entrypoint built on entrypoint.Runner: it takes jobs from a
// channel, one at a time. The README shows this code.
type queue struct {
	*entrypoint.Runner // the guard, the work goroutine, Drain, Stop, InFlight
	jobs               chan string
	handle             func(job string)
}

func newQueue(jobs chan string, handle func(job string)) *queue {
	return &queue{Runner: entrypoint.NewRunner("queue"), jobs: jobs, handle: handle}
}

func (q *queue) Name() string                   { return "queue" }
func (q *queue) Bind(ctx context.Context) error { return q.Runner.Bind(ctx, nil) }

func (q *queue) Serve(ctx context.Context, stop <-chan struct{}) error {
	return q.Runner.Serve(ctx, stop, q.work) // returns at stop; work goes on until Drain
}

// work takes one job at a time until the drain. A job it took is always finished (Drain
// waits for work to return); jobs it did not take stay queued for whoever reads next.
func (q *queue) work(ctx context.Context, draining <-chan struct{}) error {
	for {
		select {
		case <-draining:
			return nil
		case job := <-q.jobs:
			q.handle(job)
		}
	}
}

func Example_customEntrypoint() {
	handled := make(chan string, 1)
	q := newQueue(make(chan string, 1), func(job string) { handled <- job })
	lc := &hooks.Registry{}
	lc.AddPreShutdown("flush", func(context.Context) error { fmt.Println("flushed"); return nil })

	ctx, stop := context.WithCancel(context.Background())
	lc.AddPostStart("demo", func(context.Context) error {
		q.jobs <- "order-1"
		go func() { fmt.Println("handled", <-handled); stop() }()
		return nil
	})
	err := host.Run(ctx, host.AppSpec{
		ServiceName: "worker",
		Entrypoints: []host.Registration{{Entrypoint: q}},
		Lifecycle:   lc,
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Telemetry:   host.TelemetryConfig{Logger: zap.NewNop()},
	})
	fmt.Println("exit code", host.ExitCode(err))
	// Output:
	// handled order-1
	// flushed
	// exit code 0
}
