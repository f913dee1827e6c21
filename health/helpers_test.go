package health_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/health"
)

type answer struct {
	code   int
	header http.Header
	body   string
	answer health.Answer
}

// get asks h for target in memory: no socket, so it works inside a synctest bubble.
func get(t *testing.T, h http.Handler, target string) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	a := answer{code: rec.Code, header: rec.Header(), body: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.answer); err != nil {
		t.Fatalf("body %q is not JSON: %v", a.body, err)
	}
	return a
}

func newReadiness(t *testing.T, src health.Source, opts health.ReadinessConfig) http.Handler {
	t.Helper()
	h, err := health.NewReadiness(opts, src)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func ready() *health.State {
	var s health.State
	s.Set(health.StatusReady)
	return &s
}

// observed returns a logger whose entries the test can read. Unlike zaptest, it may be
// written to after the test ends, as an abandoned check's goroutine may.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zap.DebugLevel)
	return zap.New(core), logs
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func newRequest(ctx context.Context, target string) *http.Request {
	return httptest.NewRequestWithContext(ctx, http.MethodGet, target, nil)
}
