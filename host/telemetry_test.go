package host_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/otlp"
)

// reported is a fault.Reporter that keeps what it is given.
type reported struct {
	mu      sync.Mutex
	errs    []error
	tags    []map[string]string
	flushed int
}

func (r *reported) Report(_ context.Context, err error, tags map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
	r.tags = append(r.tags, tags)
}

func (r *reported) Flush(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushed++
	return nil
}

func (r *reported) get() ([]error, []map[string]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs), slices.Clone(r.tags), r.flushed
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func TestTelemetry(t *testing.T) {
	t.Run("warmup steps, hooks, drain hooks and cleanup steps run in spans under their stage", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			rec := tracetest.NewSpanRecorder()
			reg := &hooks.Registry{}
			reg.AddPreStart("migrate", func(context.Context) error { return nil })
			reg.AddPreShutdown("flush-outbox", func(ctx context.Context) error {
				if !trace.SpanContextFromContext(ctx).IsValid() {
					return errors.New("no span in the hook's ctx")
				}
				return nil
			})
			reg.AddDrainHook(hooks.DrainHook{Name: "handover", Run: func(context.Context, time.Duration) error { return nil }})
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Warmups: []host.Step{{Name: "prime", Start: func(context.Context) error { return nil },
					Stop: func(context.Context) error { return nil }}},
				Lifecycle: reg,
				Telemetry: host.TelemetryConfig{SpanProcessors: []sdktrace.SpanProcessor{rec}},
			})
			x.WaitStage(host.StageServe)
			x.Stop()
			if err := x.Wait(); err != nil {
				t.Fatalf("Run = %v", err)
			}
			spans := tracetest.SpanStubsFromReadOnlySpans(rec.Ended())
			byName := map[string]tracetest.SpanStub{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			for child, stage := range map[string]string{
				`warmup "prime"`:                   "servicewright.warmup",
				`pre_start hook "migrate"`:         "servicewright.pre_start",
				`drain hook "handover"`:            "servicewright.drain_hooks",
				`entrypoint "a" Drain`:             "servicewright.drain",
				`entrypoint "a" Stop`:              "servicewright.stop",
				`pre_shutdown hook "flush-outbox"`: "servicewright.pre_shutdown",
				`warmup "prime" Stop`:              "servicewright.warmup_stop",
			} {
				c, ok := byName[child]
				if !ok {
					t.Errorf("no span %s; got %v", child, spanNames(spans))
					continue
				}
				p := byName[stage]
				if c.Parent.SpanID() != p.SpanContext.SpanID() || !p.SpanContext.IsValid() {
					t.Errorf("span %s is not a child of %s", child, stage)
				}
				if c.Status.Code != 0 && c.Status.Code != 1 {
					t.Errorf("span %s failed: %v", child, c.Status)
				}
			}
			for stage, root := range map[string]string{
				"servicewright.bootstrap": "servicewright.startup", "servicewright.post_start": "servicewright.startup",
				"servicewright.drain_delay": "servicewright.shutdown", "servicewright.warmup_stop": "servicewright.shutdown",
			} {
				if byName[stage].Parent.SpanID() != byName[root].SpanContext.SpanID() || !byName[root].SpanContext.IsValid() {
					t.Errorf("stage span %s is not under %s", stage, root)
				}
			}
			if byName["servicewright.startup"].SpanContext.TraceID() == byName["servicewright.shutdown"].SpanContext.TraceID() {
				t.Error("startup and exit share a trace; want one each")
			}
		})
	})

	t.Run("an essential entrypoint's failure is reported with its tags and the reporter flushed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			rep := &reported{}
			f := newFake("chaos", j)
			f.serve = func(context.Context, <-chan struct{}) error { return errors.New("boom") }
			x := start(t, j, host.AppSpec{
				ServiceName: "orders",
				Instance:    "i-1",
				Entrypoints: []host.Registration{{Entrypoint: f}},
				Telemetry:   host.TelemetryConfig{Reporter: rep},
			})
			err := x.Wait()
			if _, ok := errors.AsType[*host.EntrypointError](err); !ok {
				t.Fatalf("Run = %v, want an EntrypointError", err)
			}
			errs, tags, flushed := rep.get()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), "boom") {
				t.Fatalf("reported %v, want the one failure", errs)
			}
			want := map[string]string{fault.TagService: "orders", fault.TagInstance: "i-1",
				fault.TagEntrypoint: "chaos", fault.TagStage: "serve"}
			for k, v := range want {
				if tags[0][k] != v {
					t.Errorf("tag %s = %q, want %q", k, tags[0][k], v)
				}
			}
			if len(tags[0][fault.TagTraceID]) != 32 {
				t.Errorf("trace_id tag = %q, want a trace id", tags[0][fault.TagTraceID])
			}
			if flushed != 1 {
				t.Errorf("reporter flushed %d times, want once", flushed)
			}
		})
	})

	t.Run("a panic in a shutdown hook is reported once, with its stack", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			rep := &reported{}
			reg := &hooks.Registry{}
			reg.AddPreShutdown("explode", func(context.Context) error { panic("kaboom") })
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Lifecycle:   reg,
				Telemetry:   host.TelemetryConfig{Reporter: rep},
			})
			x.WaitStage(host.StageServe)
			x.Stop()
			_ = x.Wait()
			errs, tags, _ := rep.get()
			if len(errs) != 1 {
				t.Fatalf("reported %v, want the panic once", errs)
			}
			pe, ok := errors.AsType[*fault.PanicError](errs[0])
			if !ok || !strings.Contains(string(pe.Stack), "telemetry_test.go") {
				t.Fatalf("reported %v, want a PanicError whose stack shows the hook", errs[0])
			}
			if tags[0][fault.TagStage] != "pre_shutdown" {
				t.Errorf("stage tag = %q, want pre_shutdown", tags[0][fault.TagStage])
			}
		})
	})

	t.Run("a reporter whose Flush hangs is abandoned at StepTimeout, the exit goes on and is not failed for it", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			release := make(chan struct{})
			reg := &hooks.Registry{}
			var postShutdown bool
			reg.AddPostShutdown("after", func(context.Context) error { postShutdown = true; return nil })
			x := start(t, j, host.AppSpec{
				Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
				Lifecycle:   reg,
				Budgets:     host.Budgets{StepTimeout: time.Second},
				Telemetry:   host.TelemetryConfig{Reporter: hangingReporter{release}},
			})
			x.WaitStage(host.StageServe)
			x.Stop()
			x.WaitStage(host.StageFlush)
			began := time.Now()
			err := x.Wait()
			close(release)
			if d := time.Since(began); d > time.Second+100*time.Millisecond {
				t.Errorf("the exit took %s after flush began; want StepTimeout (1s) and a courtesy", d)
			}
			if err != nil || !postShutdown || x.Host().Shutdown().Result() != host.ResultSuccess {
				t.Errorf("Run = %v, Result %s (post_shutdown ran: %v), want nil, success and the hooks after it run",
					err, x.Host().Shutdown().Result(), postShutdown)
			}
		})
	})

	t.Run("a startup failure is reported with its stage", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			j := &journal{}
			rep := &reported{}
			x := start(t, j, host.AppSpec{
				Warmups:   []host.Step{{Name: "db", Start: func(context.Context) error { return errors.New("refused") }}},
				Telemetry: host.TelemetryConfig{Reporter: rep},
			})
			if _, ok := errors.AsType[*host.StartupError](x.Wait()); !ok {
				t.Fatal("want a StartupError")
			}
			errs, tags, _ := rep.get()
			if len(errs) != 1 || tags[0][fault.TagStage] != "warmup" {
				t.Fatalf("reported %v with %v, want the warmup failure", errs, tags)
			}
		})
	})

	t.Run("SW_LOG_FORMAT accepts json and console and refuses anything else", func(t *testing.T) {
		for _, tc := range []struct {
			value string
			ok    bool
		}{{"json", true}, {"console", true}, {"CONSOLE", true}, {"xml", false}} {
			env := map[string]string{"SW_LOG_FORMAT": tc.value}
			h, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff()},
				host.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
			ce, isConfig := errors.AsType[*fault.ConfigError](err)
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s: New = %v", tc.value, err)
			case !tc.ok && (!isConfig || ce.Problems[0].String() != `SW_LOG_FORMAT (Telemetry.Logger): unknown format "xml" (want json or console)`):
				t.Errorf("%s: New = %v, want a ConfigError naming SW_LOG_FORMAT and Telemetry.Logger", tc.value, err)
			}
			_ = h
		}
	})

	t.Run("with nowhere to send spans, none is recorded but those an upstream sampled", func(t *testing.T) {
		t.Setenv("OTEL_TRACES_SAMPLER", "")
		t.Setenv("OTEL_TRACES_EXPORTER", "")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		h, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff()})
		if err != nil {
			t.Fatal(err)
		}
		tr := h.TracerProvider().Tracer("t")
		_, root := tr.Start(context.Background(), "root")
		if root.IsRecording() || !root.SpanContext().IsValid() || root.SpanContext().IsSampled() {
			t.Errorf("root span: recording %v, context %v; want a trace id and nothing recorded", root.IsRecording(), root.SpanContext())
		}
		upstream := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1},
			TraceFlags: trace.FlagsSampled, Remote: true})
		_, child := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), upstream), "child")
		if !child.SpanContext().IsSampled() || child.SpanContext().TraceID() != upstream.TraceID() {
			t.Errorf("child of a sampled upstream: %v, want it sampled in the same trace", child.SpanContext())
		}
	})

	t.Run("LoggerFor adds the trace and span ids of the span in ctx", func(t *testing.T) {
		core, logs := observer.New(zap.InfoLevel)
		log := zap.New(core)
		tp := sdktrace.NewTracerProvider()
		ctx, span := tp.Tracer("t").Start(context.Background(), "op")
		host.LoggerFor(ctx, log).Info("inside")
		span.End()
		host.LoggerFor(context.Background(), log).Info("outside")
		entries := logs.All()
		in, out := entries[0].ContextMap(), entries[1].ContextMap()
		if in["trace_id"] != span.SpanContext().TraceID().String() || in["span_id"] != span.SpanContext().SpanID().String() {
			t.Errorf("inside: %v, want the span's ids", in)
		}
		if _, ok := out["trace_id"]; ok {
			t.Errorf("outside a span: %v, want no trace_id", out)
		}
	})
}

func TestOpenTelemetryDiagnostics(t *testing.T) {
	const token = "tok-s3cret"
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"} {
		t.Run("a malformed "+name+" is a ConfigError naming it, and its value is in no line", func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			t.Setenv(name, "authorization=Bearer "+token+",x-key")
			core, logs := observer.New(zap.DebugLevel)
			_, err := host.New(host.AppSpec{ServiceName: "x", Probes: probesOff(),
				Telemetry: host.TelemetryConfig{Logger: zap.New(core)}}, otlp.FromEnv())
			ce, ok := errors.AsType[*fault.ConfigError](err)
			if !ok || ce.Problems[0].Variable != name || host.ExitCode(err) != 78 {
				t.Fatalf("err = %v, want a ConfigError naming %s", err, name)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error quotes the header: %v", err)
			}
			for _, e := range logs.All() {
				if line := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(line, token) {
					t.Errorf("a line quotes the header: %s", line)
				}
			}
		})
	}
}

// hangingReporter's Flush ignores its ctx until released.
type hangingReporter struct{ release chan struct{} }

func (hangingReporter) Report(context.Context, error, map[string]string) {}
func (r hangingReporter) Flush(context.Context) error {
	<-r.release
	return nil
}
