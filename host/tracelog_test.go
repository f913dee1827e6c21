package host_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hosttest"
)

// The Host's own lines written during a stage carry the trace and span ids of that
// stage's span, so a line can be found from its trace and the other way round.
func TestHostLinesCarryTheStageTrace(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	rec := tracetest.NewSpanRecorder()
	x := hosttest.Start(t, host.AppSpec{ServiceName: "x",
		Entrypoints: []host.Registration{{Entrypoint: newFake("a", &journal{})}},
		Budgets:     host.Budgets{DrainDelay: time.Millisecond},
		Telemetry:   host.TelemetryConfig{Logger: zap.New(core), SpanProcessors: []sdktrace.SpanProcessor{rec}}})
	if !x.WaitStage(host.StageServe) {
		t.Fatal(x.Wait())
	}
	x.Stop()
	if err := x.Wait(); err != nil {
		t.Fatal(err)
	}
	spans := map[string]string{} // span id → name
	for _, s := range rec.Ended() {
		spans[s.SpanContext().SpanID().String()] = s.Name()
	}
	lines := logs.FilterMessage("readiness withdrawn; waiting the drain delay with every entrypoint accepting").All()
	if len(lines) != 1 {
		t.Fatalf("%d drain delay lines", len(lines))
	}
	id, _ := lines[0].ContextMap()["span_id"].(string)
	if name := spans[id]; name != "servicewright.drain_delay" {
		t.Errorf("the drain delay line carries span %q (%q), want the drain_delay stage's span", id, name)
	}
	if lines[0].ContextMap()["trace_id"] == nil {
		t.Error("the line carries no trace_id")
	}
}
