package host_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// refusingFlush is a span processor whose Shutdown fails at once, as an exporter
// whose collector refuses the connection.
type refusingFlush struct{}

func (refusingFlush) OnStart(context.Context, trace.ReadWriteSpan) {}
func (refusingFlush) OnEnd(trace.ReadOnlySpan)                     {}
func (refusingFlush) Shutdown(context.Context) error               { return errors.New("connection refused") }
func (refusingFlush) ForceFlush(context.Context) error             { return nil }

// waitingFlush is one whose Shutdown waits for its ctx, as an exporter whose
// collector accepts and never answers.
type waitingFlush struct{}

func (waitingFlush) OnStart(context.Context, trace.ReadWriteSpan) {}
func (waitingFlush) OnEnd(trace.ReadOnlySpan)                     {}
func (waitingFlush) Shutdown(ctx context.Context) error           { <-ctx.Done(); return ctx.Err() }
func (waitingFlush) ForceFlush(context.Context) error             { return nil }

// TestUndeliveredTelemetry: whether the backend refuses or hangs, the exit is a
// success, bounded by StepTimeout; the loss is one warning, a report field and
// servicewright_telemetry_undelivered_total.
func TestUndeliveredTelemetry(t *testing.T) {
	for name, p := range map[string]trace.SpanProcessor{"refused": refusingFlush{}, "hung": waitingFlush{}} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				core, logs := observer.New(zap.InfoLevel)
				reg := prometheus.NewRegistry()
				j := &journal{}
				x := start(t, j, host.AppSpec{
					Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
					Budgets:     host.Budgets{StepTimeout: time.Second},
					Telemetry: host.TelemetryConfig{Logger: zap.New(core), Registry: reg,
						SpanProcessors: []trace.SpanProcessor{p}},
				})
				x.WaitStage(host.StageServe)
				x.Stop()
				x.WaitStage(host.StageFlush)
				began := time.Now()
				if err := x.Wait(); err != nil || x.Host().Shutdown().Result() != host.ResultSuccess {
					t.Errorf("Run = %v, Result %s; want nil and success", err, x.Host().Shutdown().Result())
				}
				if d := time.Since(began); d > time.Second {
					t.Errorf("the flush took %s, want at most StepTimeout", d)
				}
				if n := logs.FilterMessage("telemetry not delivered at exit; the exit is not failed for it").Len(); n != 1 {
					t.Errorf("%d warnings, want 1", n)
				}
				rep := logs.FilterMessage("shutdown report").All()
				lost, _ := rep[0].ContextMap()["telemetry_undelivered"].([]any)
				if len(lost) != 1 || !strings.HasPrefix(lost[0].(string), "spans:") {
					t.Errorf("report's telemetry_undelivered = %v, want the spans", lost)
				}
				if v := undelivered(t, reg, "spans"); v != 1 {
					t.Errorf("servicewright_telemetry_undelivered_total{signal=spans} = %v, want 1", v)
				}
			})
		})
	}
}

// undelivered is servicewright_telemetry_undelivered_total{signal} as gathered
// from reg, 0 when absent.
func undelivered(t *testing.T, reg *prometheus.Registry, signal string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "servicewright_telemetry_undelivered_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "signal" && l.GetValue() == signal {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestLateReportsAreFlushed: a panic in a post_shutdown hook, reported after the
// flush, reaches the error reporter through a second flush.
func TestLateReportsAreFlushed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := &journal{}
		rep := &flushCounting{}
		reg := &hooks.Registry{}
		reg.AddPostShutdown("final", func(context.Context) error { panic("late") })
		x := start(t, j, host.AppSpec{
			Entrypoints: []host.Registration{{Entrypoint: newFake("a", j)}},
			Lifecycle:   reg,
			Telemetry:   host.TelemetryConfig{Reporter: rep},
		})
		x.WaitStage(host.StageServe)
		x.Stop()
		_ = x.Wait()
		rep.mu.Lock()
		defer rep.mu.Unlock()
		if rep.reports != 1 || rep.flushedAfter != 1 {
			t.Errorf("%d reports, %d of them flushed; want the panic reported and flushed", rep.reports, rep.flushedAfter)
		}
	})
}

// flushCounting records how many reports a Flush found queued.
type flushCounting struct {
	mu                            sync.Mutex
	reports, queued, flushedAfter int
}

func (r *flushCounting) Report(context.Context, error, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports++
	r.queued++
}

func (r *flushCounting) Flush(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushedAfter += r.queued
	r.queued = 0
	return nil
}
