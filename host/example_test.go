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

// queue is a custom entrypoint: it takes jobs from a channel, one at a time, and
// counts them through a Gate so the Host can drain it. The README shows this code.
type queue struct {
	jobs   chan string
	handle func(job string)
	gate   entrypoint.Gate
	done   chan struct{}
}

func (q *queue) Name() string               { return "queue" }
func (q *queue) Bind(context.Context) error { q.done = make(chan struct{}); return nil }

func (q *queue) Serve(ctx context.Context, stop <-chan struct{}) error {
	go q.work()
	<-stop // return at stop, still taking jobs until Drain
	return nil
}

func (q *queue) work() {
	defer close(q.done)
	for job := range q.jobs {
		leave, ok := q.gate.Enter()
		if !ok {
			return // draining: leave the job for another replica
		}
		q.handle(job)
		leave()
	}
}

func (q *queue) Drain(ctx context.Context) error { q.gate.Close(); return q.gate.Wait(ctx) }

func (q *queue) Stop(ctx context.Context) error {
	close(q.jobs)
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func Example_customEntrypoint() {
	handled := make(chan string, 1)
	q := &queue{jobs: make(chan string, 1), handle: func(job string) { handled <- job }}
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
