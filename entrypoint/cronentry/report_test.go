package cronentry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/testenv"
)

func TestRunReports(t *testing.T) {
	jobs := []Job{
		{Name: "fails", Every: time.Second, Run: func(context.Context, Tick) error { return errors.New("boom") }},
		{Name: "panics", Every: time.Second, Run: func(context.Context, Tick) error { panic("nil map") }},
		{Name: "fine", Every: time.Second, Run: func(context.Context, Tick) error { return nil }},
	}

	t.Run("a failed or panicked run reaches the Host's reporter in its span; a fine one does not", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rep := &testenv.Reports{}
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			defer tp.Shutdown(context.Background())
			x := start(t, jobs, func(s *Scheduler) {
				s.SetDefaults(entrypoint.Telemetry{Reporter: rep, TracerProvider: tp})
			})
			time.Sleep(1500 * time.Millisecond) // one tick of each
			x.shutdown()

			errs, tags := rep.Get()
			if len(errs) != 2 {
				t.Fatalf("%d reports, want 2 (fails, panics): %v", len(errs), errs)
			}
			traces := map[string]string{}
			for _, s := range spans.Ended() {
				for _, a := range s.Attributes() {
					if a.Key == "cron.job" {
						traces[a.Value.AsString()] = s.SpanContext().TraceID().String()
					}
				}
			}
			if len(traces) != 3 {
				t.Errorf("spans for %v, want one per job", traces)
			}
			for i, err := range errs {
				job := tags[i][tagJob]
				if tags[i][fault.TagEntrypoint] != defaultName || tags[i][fault.TagTraceID] != traces[job] || traces[job] == "" {
					t.Errorf("report %d tags %v, want the entrypoint and the trace id of the run's span %q", i, tags[i], traces[job])
				}
				pe, isPanic := errors.AsType[*fault.PanicError](err)
				switch job {
				case "fails":
					if isPanic || tags[i][tagOutcome] != "failed" {
						t.Errorf("the failed run's report: %v %v", err, tags[i])
					}
				case "panics":
					if !isPanic || tags[i][tagOutcome] != "panicked" || !strings.Contains(string(pe.Stack), "TestRunReports") {
						t.Errorf("the panicked run's report: %v %v, want its *fault.PanicError with the stack", err, tags[i])
					}
				default:
					t.Errorf("report of job %q", job)
				}
			}
		})
	})

	t.Run("WithTelemetry's reporter and tracer provider win over the Host's", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			mine, host := &testenv.Reports{}, &testenv.Reports{}
			hostSpans := tracetest.NewSpanRecorder()
			hostTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(hostSpans))
			defer hostTP.Shutdown(context.Background())
			myTP := sdktrace.NewTracerProvider()
			defer myTP.Shutdown(context.Background())
			x := start(t, jobs[:1], func(s *Scheduler) {
				s.SetDefaults(entrypoint.Telemetry{Reporter: host, TracerProvider: hostTP})
			}, WithTelemetry(entrypoint.Telemetry{Reporter: mine, TracerProvider: myTP}))
			time.Sleep(1500 * time.Millisecond)
			x.shutdown()
			m, _ := mine.Get()
			h, _ := host.Get()
			if len(m) != 1 || len(h) != 0 || len(hostSpans.Ended()) != 0 {
				t.Errorf("reports %d to WithTelemetry's, %d to the Host's; %d spans to the Host's", len(m), len(h), len(hostSpans.Ended()))
			}
		})
	})
}
