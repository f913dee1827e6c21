package httpentry_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
)

// Shedding is not unreadiness: while the entrypoint sheds for overload, the Host's
// /readyz, on its own listener outside the Gate, stays 200.
func TestShedLeavesReadinessAlone(t *testing.T) {
	serving := make(chan struct{})
	h, err := host.New(host.AppSpec{
		ServiceName: "orders",
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Budgets:     host.Budgets{DrainGrace: time.Second, StepTimeout: time.Second},
	}, host.WithEnv(func(string) (string, bool) { return "", false }), host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(serving)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})
	api, err := httpentry.New(httpentry.Config{Addr: "127.0.0.1:0"}, mux,
		httpentry.WithAdmission(admission.Config{MinLimit: 1, MaxLimit: 1}))
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
	defer func() {
		h.Shutdown().Begin()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after the stop")
		}
	}()

	base := "http://" + api.Addr().String()
	held := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request never reached its handler")
	}
	defer func() { close(release); <-held }()

	resp, err := http.Get(base + "/hold")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("request beyond the limit = %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	ready, err := http.Get("http://" + h.ProbeAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ready.Body)
	ready.Body.Close()
	if ready.StatusCode != http.StatusOK {
		t.Fatalf("/readyz while shedding = %d %s, want 200: shedding is not unreadiness", ready.StatusCode, body)
	}
}
