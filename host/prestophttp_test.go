package host_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
)

// TestPreStopEndpoint: the probe listener serves Host.PreStop at /prestop (GET and
// POST): readiness is withdrawn, the phases run once, and the stop does not run them
// again; other methods get 405.
func TestPreStopEndpoint(t *testing.T) {
	j := &journal{}
	var runs atomic.Int32
	lc := &hooks.Registry{}
	lc.AddDrainPhase(hooks.DrainPhase{Name: "hand-over", Run: func(context.Context, time.Duration) error {
		runs.Add(1)
		return nil
	}})
	serving := make(chan struct{})
	h, err := host.New(host.AppSpec{
		ServiceName: "prestop", Telemetry: quiet(), Lifecycle: lc,
		Probes:      health.ListenerConfig{Addr: "127.0.0.1:0"},
		Entrypoints: []host.Registration{{Entrypoint: newFake("http", j)}},
		Budgets:     host.Budgets{DrainDelay: 100 * time.Millisecond},
	}, env(), host.WithObserver(func(e host.Event) {
		if e.Stage == host.StageServe {
			close(serving)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	<-serving
	url := "http://" + h.ProbeAddr() + host.PreStopPath
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE %s = %v %v, want 405", host.PreStopPath, resp, err)
	} else {
		resp.Body.Close()
	}
	if h.Readiness() != health.Ready {
		t.Errorf("readiness %s after a refused DELETE, want ready", h.Readiness())
	}
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		req, _ := http.NewRequest(method, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "{\"status\":\"draining\"}\n" {
			t.Errorf("%s %s = %d %q", method, host.PreStopPath, resp.StatusCode, body)
		}
	}
	if h.Readiness() != health.Draining || runs.Load() != 1 || h.Stage() != host.StageServe {
		t.Errorf("after /prestop: readiness %s, %d phase runs, stage %s; want draining, 1, serve",
			h.Readiness(), runs.Load(), h.Stage())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Errorf("the phase ran %d times in all, want once", runs.Load())
	}
}
