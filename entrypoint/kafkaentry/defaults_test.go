package kafkaentry_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/kafkaentry"
	"github.com/servicewright/servicewright/fault"
)

// reports is a fault.Reporter that keeps what it is given and signals each report.
type reports struct {
	mu   sync.Mutex
	errs []error
	tags []map[string]string
	got  chan struct{}
}

func newReports() *reports { return &reports{got: make(chan struct{}, 64)} }

func (r *reports) Report(_ context.Context, err error, tags map[string]string) {
	r.mu.Lock()
	r.errs, r.tags = append(r.errs, err), append(r.tags, tags)
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *reports) Flush(context.Context) error { return nil }

func (r *reports) get() ([]error, []map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...), append([]map[string]string(nil), r.tags...)
}

// wait waits for n reports in all.
func (r *reports) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitFor)
	for i := 0; i < n; i++ {
		select {
		case <-r.got:
		case <-deadline:
			errs, _ := r.get()
			t.Fatalf("%d reports, want %d: %v", len(errs), n, errs)
		}
	}
}

// poison panics on the message "bad" and handles the others.
func poison(col *collector) kafkaentry.Handler {
	return func(ctx context.Context, msg kafka.Message) error {
		if string(msg.Value) == "bad" {
			panic("poison message")
		}
		return col.handle(ctx, msg)
	}
}

func TestSetDefaults(t *testing.T) {
	t.Run("built with no option, the consumer takes the Host's telemetry and reports a panic and its dead letter", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "bad", "ok")
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 2, Initial: time.Millisecond, Max: 2 * time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		col := newCollector()
		c, err := kafkaentry.New(cfg, poison(col))
		if err != nil {
			t.Fatal(err)
		}
		core, logs := observer.New(zap.InfoLevel)
		reg := prometheus.NewRegistry()
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		defer tp.Shutdown(context.Background())
		rep := newReports()
		c.SetDefaults(entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg, TracerProvider: tp,
			Propagator: propagation.TraceContext{}, Reporter: rep})
		r := start(t, c)
		rep.wait(t, 2)
		col.waitCount(t, 1)
		r.mustShutdown(t)

		errs, tags := rep.get()
		if len(errs) != 2 {
			t.Fatalf("%d reports, want 2 (the panic once, then the dead letter): %v", len(errs), errs)
		}
		pe, ok := errors.AsType[*fault.PanicError](errs[0])
		if !ok || pe.Value != "poison message" || !strings.Contains(string(pe.Stack), "poison") {
			t.Errorf("first report = %v, want the handler's *fault.PanicError with its stack:\n%s", errs[0], pe.Stack)
		}
		if tags[0]["attempt"] != "1" {
			t.Errorf("the panic was reported at attempt %q, want 1", tags[0]["attempt"])
		}
		if _, ok := errors.AsType[*fault.PanicError](errs[1]); !ok || !strings.Contains(errs[1].Error(), "dead-lettered to "+dlq) {
			t.Errorf("second report = %v, want the dead letter, wrapping the panic", errs[1])
		}
		var traceID string
		for _, s := range spans.Ended() {
			if s.Name() == "process "+topic {
				traceID = s.SpanContext().TraceID().String()
				break
			}
		}
		for i, tg := range tags {
			for k, want := range map[string]string{fault.TagEntrypoint: c.Name(), "topic": topic,
				"partition": "0", "offset": "0", "group": cfg.GroupID} {
				if tg[k] != want {
					t.Errorf("report %d: tag %s = %q, want %q", i, k, tg[k], want)
				}
			}
			if traceID == "" || tg[fault.TagTraceID] == "" {
				t.Errorf("report %d: trace id %q, a span's %q: the Host's tracer provider was not used", i, tg[fault.TagTraceID], traceID)
			}
		}
		if logs.FilterMessage("message dead-lettered").Len() != 1 {
			t.Error("the dead letter was not logged through the Host's logger")
		}
		mfs, err := reg.Gather()
		if err != nil || len(mfs) == 0 {
			t.Errorf("nothing on the Host's registry: %v", err)
		}
	})

	t.Run("an option wins over the Host's default", func(t *testing.T) {
		topic, dlq := newTopic(t, 1), newTopic(t, 1)
		produceToPartition(t, topic, 0, "bad", "ok")
		cfg := config(t, topic)
		cfg.Retry = kafkaentry.Retry{Attempts: 1, Initial: time.Millisecond, Max: time.Millisecond}
		cfg.OnFailure = kafkaentry.DeadLetter(dlq)
		col := newCollector()
		mine, host := newReports(), newReports()
		myCore, myLogs := observer.New(zap.InfoLevel)
		hostCore, hostLogs := observer.New(zap.InfoLevel)
		hostReg := prometheus.NewRegistry()
		c, err := kafkaentry.New(cfg, poison(col), kafkaentry.WithTelemetry(entrypoint.Telemetry{Reporter: mine, Logger: zap.New(myCore), Registerer: prometheus.NewRegistry()}))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDefaults(entrypoint.Telemetry{Logger: zap.New(hostCore), Reporter: host, Registerer: hostReg})
		r := start(t, c)
		mine.wait(t, 2)
		col.waitCount(t, 1)
		r.mustShutdown(t)
		if errs, _ := host.get(); len(errs) != 0 {
			t.Errorf("%d reports to the Host's reporter, want none", len(errs))
		}
		if myLogs.FilterMessage("message dead-lettered").Len() != 1 || hostLogs.Len() != 0 {
			t.Errorf("logs: %d to WithTelemetry's, %d to the Host's", myLogs.Len(), hostLogs.Len())
		}
		if mfs, _ := hostReg.Gather(); len(mfs) != 0 {
			t.Errorf("%d metrics on the Host's registry, want none", len(mfs))
		}
	})

	t.Run("a registration that fails is returned by SetDefaults", func(t *testing.T) {
		cfg := config(t, newTopic(t, 1))
		reg := prometheus.NewRegistry()
		if _, err := kafkaentry.New(cfg, newCollector().handle, kafkaentry.WithTelemetry(entrypoint.Telemetry{Registerer: reg})); err != nil {
			t.Fatal(err)
		}
		c, err := kafkaentry.New(cfg, newCollector().handle)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetDefaults(entrypoint.Telemetry{Registerer: reg}); err == nil || !strings.Contains(err.Error(), "metrics") {
			t.Errorf("SetDefaults = %v, want the registration's failure", err)
		}
	})
}
