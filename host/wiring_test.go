package host_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/hosttest"
)

var _ entrypoint.DefaultsUser = (*taker)(nil)

// taker is a fake entrypoint that takes the Host's telemetry.
type taker struct {
	*fake
	log *zap.Logger
	reg prometheus.Registerer
	tp  trace.TracerProvider
	d   entrypoint.Telemetry
}

func (t *taker) SetDefaults(d entrypoint.Telemetry) error {
	t.log, t.reg, t.tp, t.d = d.Logger, d.Registerer, d.TracerProvider, d
	return nil
}

func TestPlainWiring(t *testing.T) {
	t.Run("what the Host builds first is reachable before any entrypoint exists", func(t *testing.T) {
		h, err := host.New(host.AppSpec{ServiceName: "orders", Telemetry: quiet(), Probes: probesOff()},
			env("INSTANCE_ID", "orders-7"))
		if err != nil {
			t.Fatal(err)
		}
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "orders_seen_total", Help: "x"})
		if err := h.Registerer().Register(c); err != nil {
			t.Fatal(err)
		}
		mfs, err := h.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, m := range mfs {
			names[m.GetName()] = true
		}
		if !names["orders_seen_total"] || !names["servicewright_ready"] {
			t.Errorf("the registerer and /metrics disagree: %v", names)
		}
		if h.Logger() == nil || h.TracerProvider() == nil || h.MeterProvider() == nil || h.Shutdown() == nil ||
			h.Instance() != "orders-7" {
			t.Error("something the Host builds first is missing")
		}
	})

	t.Run("with nothing receiving spans, entrypoints get no tracer provider and pay nothing for spans", func(t *testing.T) {
		h, err := host.New(host.AppSpec{ServiceName: "orders", Telemetry: host.TelemetryConfig{Logger: zap.NewNop()},
			Probes: health.ListenerConfig{Disabled: true}})
		if err != nil {
			t.Fatal(err)
		}
		api := &taker{fake: newFake("api", &journal{})}
		if err := h.Register(host.Registration{Entrypoint: api}); err != nil {
			t.Fatal(err)
		}
		if api.tp != nil || api.log != h.Logger() || api.d.Propagator == nil {
			t.Errorf("defaults = %+v, want the logger and propagator and no tracer provider", api.d)
		}
	})

	t.Run("Register validates as New does, gives the Host's telemetry, and the entrypoint runs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			core, logs := observer.New(zap.InfoLevel)
			rep := &reported{}
			x := hosttest.New(t, host.AppSpec{ServiceName: "orders", Telemetry: host.TelemetryConfig{Logger: zap.New(core), Reporter: rep,
				SpanProcessors: []sdktrace.SpanProcessor{tracetest.NewSpanRecorder()}}})
			h := x.Host()
			before := h.WorstCase()

			api := &taker{fake: newFake("api", j)}
			err := h.Register(host.Registration{Entrypoint: api}, host.Registration{Entrypoint: newFake("api", j)}, host.Registration{})
			var ce *fault.ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) != 2 {
				t.Fatalf("Register = %v, want two problems at once", err)
			}
			if len(h.Snapshot().Entrypoints) != 0 || api.log != nil {
				t.Fatal("a refused Register added something")
			}
			if err := h.Register(host.Registration{Entrypoint: api}); err != nil {
				t.Fatal(err)
			}
			if api.log != h.Logger() || api.reg != h.Registerer() || api.tp != h.TracerProvider() ||
				api.d.Propagator == nil || !reflect.DeepEqual(api.d.Propagator, h.Propagator()) || api.d.Reporter == nil {
				t.Error("the entrypoint was not given the Host's telemetry")
			}
			api.d.Reporter.Report(t.Context(), errors.New("dead-lettered"), map[string]string{fault.TagEntrypoint: "api", "topic": "orders"})
			errs, tags, _ := rep.get()
			if len(errs) != 1 || tags[0][fault.TagService] != "orders" || tags[0][fault.TagInstance] != h.Instance() ||
				tags[0][fault.TagStage] != "created" || tags[0][fault.TagEntrypoint] != "api" || tags[0]["topic"] != "orders" {
				t.Errorf("a report through the entrypoint's reporter: %v %v, want the Host's tags beside its own", errs, tags)
			}
			if h.WorstCase().Total <= before.Total {
				t.Error("the worst case does not count the registered entrypoint")
			}
			x.Start()
			x.WaitStage(host.StageServe)
			if err := h.Register(host.Registration{Entrypoint: newFake("late", j)}); !errors.Is(err, host.ErrRegisterAfterRun) {
				t.Errorf("Register after Run = %v", err)
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := names(j); !slices.Equal(got, []string{"api.Bind", "api.Drain", "api.Stop"}) {
				t.Errorf("got %v", got)
			}
			lines := logs.FilterMessage("shutdown budget").All()
			if len(lines) != 1 || lines[0].ContextMap()["stop"] == nil {
				t.Errorf("want one budget line, with the registered entrypoint's stop: %v", lines)
			}
		})
	})
}

// monitored is a fake entrypoint that takes the Host's Monitor.
type monitored struct {
	*fake
	m *health.Monitor
}

func (e *monitored) UseMonitor(m *health.Monitor) { e.m = m }

func TestHostMonitor(t *testing.T) {
	t.Run("one Monitor, given to the entrypoints and the container, with the probe's verdicts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			var fromFx *health.Monitor
			ep := &monitored{fake: newFake("grpc", j)}
			failing := errors.New("db down")
			x := hosttest.New(t, host.AppSpec{
				ServiceName: "orders",
				Entrypoints: []host.Registration{{Entrypoint: ep}},
				Container: hostfx.Container(fx.Options(
					hostfx.Check("db", func() health.Check {
						return health.Gating(health.CheckFunc(func(context.Context) error { return failing }))
					}),
					fx.Invoke(func(m *health.Monitor) { fromFx = m }),
				)),
			})
			h := x.Host()
			late := &monitored{fake: newFake("late", j)}
			if err := h.Register(host.Registration{Entrypoint: late}); err != nil {
				t.Fatal(err)
			}
			if h.Monitor() == nil || ep.m != h.Monitor() || late.m != h.Monitor() || fromFx != h.Monitor() {
				t.Fatalf("not one Monitor: host %p, entrypoint %p, registered %p, container %p", h.Monitor(), ep.m, late.m, fromFx)
			}
			if r := h.Monitor().Evaluate(t.Context()); r.Status != health.AnswerUnavailable {
				t.Errorf("before Run: %+v", r)
			}
			x.Start()
			x.WaitStage(host.StageServe)
			r := h.Monitor().Evaluate(t.Context())
			if r.Serving() || len(r.Checks) != 1 {
				t.Errorf("with the container's gating check failing: %+v, want not serving", r)
			}
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

func TestDefaultsRefused(t *testing.T) {
	// reg already holds the metrics of an HTTP entrypoint called "api", made by hand
	// with WithRegisterer: the Host's own "api" cannot register its metrics there.
	clashing := func(t *testing.T) (*prometheus.Registry, *httpentry.Server) {
		t.Helper()
		reg := prometheus.NewRegistry()
		if _, err := httpentry.New(httpentry.Config{Name: "api"}, http.NotFoundHandler(), httpentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Fatal(err)
		}
		api, err := httpentry.New(httpentry.Config{Name: "api", Addr: "127.0.0.1:0"}, http.NotFoundHandler())
		if err != nil {
			t.Fatal(err)
		}
		return reg, api
	}
	refused := func(t *testing.T, err error) {
		t.Helper()
		ce, ok := errors.AsType[*fault.ConfigError](err)
		if !ok {
			t.Fatalf("err = %v, want a *fault.ConfigError", err)
		}
		if len(ce.Problems) != 1 || ce.Problems[0].Field != `Entrypoints["api"]` ||
			!strings.Contains(ce.Problems[0].Reason, "already registered") {
			t.Errorf("problems = %v, want one of Entrypoints[\"api\"] saying its metrics are already registered", ce.Problems)
		}
	}

	t.Run("at New", func(t *testing.T) {
		reg, api := clashing(t)
		h, err := host.New(host.AppSpec{ServiceName: "orders", Probes: probesOff(),
			Telemetry:   host.TelemetryConfig{Logger: zap.NewNop(), Registry: reg},
			Entrypoints: []host.Registration{{Entrypoint: api}}})
		if h != nil {
			t.Error("New returned a Host")
		}
		refused(t, err)
	})
	t.Run("at Register, which then adds none of its registrations", func(t *testing.T) {
		reg, api := clashing(t)
		h, err := host.New(host.AppSpec{ServiceName: "orders", Probes: probesOff(),
			Telemetry: host.TelemetryConfig{Logger: zap.NewNop(), Registry: reg}})
		if err != nil {
			t.Fatal(err)
		}
		other := &taker{fake: newFake("other", &journal{})}
		refused(t, h.Register(host.Registration{Entrypoint: other}, host.Registration{Entrypoint: api}))
		if err := h.Register(host.Registration{Entrypoint: other}); err != nil {
			t.Errorf("Register(other) after the refused Register = %v, want nil: it was not added", err)
		}
	})
}
