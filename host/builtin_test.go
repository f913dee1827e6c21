package host_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// A built-in entrypoint registered with no option logs through the Host's logger —
// with the service and instance fields — and reports through the Host's reporter,
// over a real loopback connection.
func TestBuiltinEntrypointTakesTheHostsTelemetry(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	rep := &reported{}
	serving := make(chan struct{})
	h, err := host.New(host.AppSpec{
		ServiceName: "orders",
		Telemetry:   host.TelemetryConfig{Logger: zap.New(core), Reporter: rep},
		Probes:      probesOff(),
		Budgets:     host.Budgets{DrainGrace: time.Second, StepTimeout: time.Second},
	}, env("INSTANCE_ID", "orders-7"), host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(serving)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	api, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, mux)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Register(host.Registration{Entrypoint: api}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- h.Run(context.Background()) }()
	select {
	case <-serving:
	case err := <-ran:
		t.Fatalf("Run = %v before serving", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the Host did not reach the serve stage")
	}

	resp, err := http.Get("http://" + api.Addr().String() + "/panic")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.Shutdown().Begin()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}

	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET /panic = %d, want 500", resp.StatusCode)
	}
	lines := logs.FilterMessage("http handler panicked").All()
	if len(lines) != 1 {
		t.Fatalf("%d panic lines through the Host's logger, want 1", len(lines))
	}
	f := lines[0].ContextMap()
	if f["service"] != "orders" || f["instance"] != "orders-7" || f["entrypoint"] != "http" || f["stack"] == nil {
		t.Errorf("the panic line lacks the Host's fields: %v", f)
	}
	errs, tags, _ := rep.get()
	var pe *fault.PanicError
	var found bool
	for i, err := range errs {
		if errors.As(err, &pe) {
			found = true
			if len(pe.Stack) == 0 || tags[i][fault.TagService] != "orders" || tags[i][fault.TagInstance] != "orders-7" ||
				tags[i][fault.TagEntrypoint] != "http" || tags[i]["route"] != "GET /panic" {
				t.Errorf("the panic's report: %v, tags %v", err, tags[i])
			}
		}
	}
	if !found {
		t.Errorf("no panic reported through the Host's reporter: %v", errs)
	}
}
