package leader

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/lock"
)

// leadOnce runs a Leadership made by New with opts, given d as the Host would, until
// it has led one term, then stops it as the Host does.
func leadOnce(t *testing.T, d entrypoint.Telemetry, opts ...Option) {
	t.Helper()
	c := campaignOnce(t, d, func(ctx context.Context, term *Term) error {
		<-term.Ended()
		return nil
	}, opts...)
	if !c.l.Leadership()[c.l.conf.Key].Held {
		t.Fatal("no term won")
	}
	c.end(t)
}

// campaign is a Leadership being served.
type campaign struct {
	l      *Leadership
	stop   chan struct{}
	served chan error
}

// campaignOnce serves a Leadership made by New with lead and opts, given d as the
// Host would, until its first campaign has won.
func campaignOnce(t *testing.T, d entrypoint.Telemetry, lead func(context.Context, *Term) error, opts ...Option) campaign {
	t.Helper()
	l, err := New(vSpec(lock.NewMemory(), "a"), lead, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetDefaults(d); err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := campaign{l: l, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { c.served <- l.Serve(context.Background(), c.stop) }()
	time.Sleep(vCE + time.Millisecond) // virtual time: the first campaign has won
	return c
}

// end stops the campaign as the Host does: the stop, then Drain and Stop.
func (c campaign) end(t *testing.T) {
	t.Helper()
	close(c.stop)
	if err := <-c.served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := c.l.Drain(context.Background()); err != nil {
		t.Errorf("Drain = %v", err)
	}
	if err := c.l.Stop(context.Background()); err != nil {
		t.Errorf("Stop = %v", err)
	}
}

func TestSetDefaults(t *testing.T) {
	t.Run("built with no option, a Leadership logs, counts and traces with the Host's telemetry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			reg := prometheus.NewRegistry()
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer tp.Shutdown(context.Background())
			leadOnce(t, entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg, TracerProvider: tp})
			if logs.Len() == 0 || logs.All()[0].ContextMap()["key"] != "job" {
				t.Errorf("nothing logged through the Host's logger with the key: %v", logs.All())
			}
			if n := gatheredNames(t, reg); !n["servicewright_leadership_held"] || !n["servicewright_leadership_terms_ended_total"] {
				t.Errorf("the leadership metrics are not on the Host's registry: %v", n)
			}
			if ended := spans.Ended(); len(ended) != 1 || ended[0].Name() != "leadership.term" {
				t.Errorf("spans through the Host's tracer provider: %v, want one leadership.term", ended)
			}
		})
	})

	t.Run("an option wins over the Host's default", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mine, myLogs := observer.New(zap.DebugLevel)
			host, hostLogs := observer.New(zap.DebugLevel)
			myReg, hostReg := prometheus.NewRegistry(), prometheus.NewRegistry()
			hostSpans := tracetest.NewSpanRecorder()
			hostTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(hostSpans))
			defer hostTP.Shutdown(context.Background())
			myTP := sdktrace.NewTracerProvider()
			defer myTP.Shutdown(context.Background())
			leadOnce(t, entrypoint.Telemetry{Logger: zap.New(host), Registerer: hostReg, TracerProvider: hostTP},
				WithTelemetry(entrypoint.Telemetry{Logger: zap.New(mine), Registerer: myReg, TracerProvider: myTP}))
			if myLogs.Len() == 0 || hostLogs.Len() != 0 {
				t.Errorf("logs: %d to WithTelemetry's, %d to the Host's", myLogs.Len(), hostLogs.Len())
			}
			if n := gatheredNames(t, hostReg); len(n) != 0 {
				t.Errorf("metrics on the Host's registry: %v, want none", n)
			}
			if len(hostSpans.Ended()) != 0 {
				t.Error("a span went to the Host's tracer provider")
			}
		})
	})
}

func gatheredNames(t *testing.T, reg *prometheus.Registry) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

// A replica that has not led is scraped with servicewright_leadership_held 0, not
// without the series.
func TestHeldZeroBeforeLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		l, err := New(vSpec(lock.NewMemory(), "a"), func(ctx context.Context, term *Term) error { return nil },
			WithTelemetry(entrypoint.Telemetry{Registerer: reg}))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Bind(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer l.Stop(context.Background())
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "servicewright_leadership_held" {
				if m := mf.GetMetric(); len(m) == 1 && m[0].GetGauge().GetValue() == 0 {
					return
				}
				t.Fatalf("held = %v, want one series at 0", mf.GetMetric())
			}
		}
		t.Error("no servicewright_leadership_held series before the first term")
	})
}

func TestReportsPanics(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ownRep bool
	}{
		{"a panic of lead goes to the Host's reporter", false},
		{"WithTelemetry's reporter wins over the Host's", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				host, own := &testenv.Reports{}, &testenv.Reports{}
				var opts []Option
				want, other := host, own
				if tc.ownRep {
					opts, want, other = []Option{WithTelemetry(entrypoint.Telemetry{Reporter: own})}, own, host
				}
				c := campaignOnce(t, entrypoint.Telemetry{Reporter: host}, func(context.Context, *Term) error { panic("nil map") }, opts...)
				c.end(t) // the first term was won, and its lead panicked
				l := c.l
				errs, tags := want.Get()
				if len(errs) == 0 {
					t.Fatal("no report, want the panic of lead")
				}
				for i, err := range errs {
					if pe, ok := errors.AsType[*fault.PanicError](err); !ok || pe.Value != "nil map" || tags[i][fault.TagEntrypoint] != l.Name() {
						t.Errorf("reported %v with %v, want lead's *fault.PanicError tagged entrypoint=%s", err, tags[i], l.Name())
					}
				}
				if errs, _ := other.Get(); len(errs) != 0 {
					t.Errorf("the other reporter got %v", errs)
				}
			})
		})
	}
}
