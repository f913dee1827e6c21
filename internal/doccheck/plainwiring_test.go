package doccheck

import (
	"context"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/host"
)

// --- Plain wiring

// queue stands for any entrypoint the application builds.
type queue struct{ handle func(job string) }

func newQueue(handle func(job string)) entrypoint.Entrypoint { return queue{handle} }

func (queue) Name() string                                        { return "queue" }
func (queue) Bind(context.Context) error                          { return nil }
func (queue) Serve(_ context.Context, stop <-chan struct{}) error { <-stop; return nil }
func (queue) Drain(context.Context) error                         { return nil }
func (queue) Stop(context.Context) error                          { return nil }

// store stands for a client main opens: it answers readiness and is closed last.
type store struct{ log *zap.Logger }

func openStore(log *zap.Logger) *store { return &store{log} }

func (s *store) Health(context.Context) error { return nil }
func (s *store) Close(context.Context) error {
	s.log.Info("store closed")
	return nil
}

func plainWiringMain() {
	h, err := host.New(host.AppSpec{ServiceName: "worker"})
	if err != nil {
		os.Exit(host.ExitCode(err)) // the ConfigError is already on stderr
	}
	jobs := prometheus.NewCounter(prometheus.CounterOpts{Name: "worker_jobs_total", Help: "Jobs handled."})
	h.Registerer().MustRegister(jobs)
	log := h.Logger().Named("queue")           // JSON, SW_LOG_LEVEL, service and instance fields
	st := openStore(h.Logger().Named("store")) // a client that is also a health.Check
	if err := h.AddCheck("store", st); err != nil {
		os.Exit(host.ExitCode(err))
	}
	if err := h.OnClose("store", st.Close); err != nil {
		os.Exit(host.ExitCode(err))
	}
	q := newQueue(func(job string) {
		log.Info("job handled", zap.String("job", job))
		jobs.Inc()
	})
	if err := h.Register(host.Registration{Entrypoint: q}); err != nil {
		os.Exit(host.ExitCode(err))
	}
	h.Main() // signals, Run, exit code
}

var _ = plainWiringMain
