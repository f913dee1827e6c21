//go:build e2e

package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/host"
)

// testKnobs are the knobs only the end-to-end tests (internal/e2e) need: they build
// the example with -tags e2e. A plain or production build has none of them
// (knobs_user.go): no failing entrypoint, no GET /panic, no GET /burn.
type testKnobs struct {
	failAfter time.Duration // EXAMPLE_FAIL_AFTER: an essential entrypoint fails after this long
}

// readTestKnobs reads EXAMPLE_FAIL_AFTER: 0 (off) or 1ms–24h.
func readTestKnobs(l *fault.Problems) testKnobs {
	var t testKnobs
	readDurations(l, []durationKnob{{"EXAMPLE_FAIL_AFTER", &t.failAfter, time.Millisecond, 24 * time.Hour, true}})
	return t
}

// entrypoints is the chaos entrypoint when EXAMPLE_FAIL_AFTER asks for it.
func (t testKnobs) entrypoints() []host.Registration {
	if t.failAfter <= 0 {
		return nil
	}
	return []host.Registration{{Entrypoint: &chaos{after: t.failAfter}, Order: 90}}
}

// routes are the test routes GET /panic and GET /burn.
func (testKnobs) routes() fx.Option {
	return fx.Options(plain("GET /panic", panics), plain("GET /burn", burn))
}

// chaos is an essential entrypoint that fails after a set time (EXAMPLE_FAIL_AFTER),
// for testing that a failing entrypoint stops the service with exit code 1. It is
// also the smallest complete Entrypoint there is.
type chaos struct {
	after time.Duration
}

func (c *chaos) Name() string                { return "chaos" }
func (c *chaos) Bind(context.Context) error  { return nil }
func (c *chaos) Drain(context.Context) error { return nil }
func (c *chaos) Stop(context.Context) error  { return nil }

func (c *chaos) Serve(ctx context.Context, stop <-chan struct{}) error {
	t := time.NewTimer(c.after)
	defer t.Stop()
	select {
	case <-stop:
		return nil
	case <-ctx.Done():
		return nil
	case <-t.C:
		return fmt.Errorf("failed on purpose after %s (EXAMPLE_FAIL_AFTER)", c.after)
	}
}

// panics is a test route: its handler panics, so that a handler panic can be seen
// answered 500, logged with its stack and reported to error tracking (SENTRY_DSN),
// while the server keeps serving.
func panics(http.ResponseWriter, *http.Request) { panic("GET /panic: a test route that always panics") }

// burn is a test route that costs CPU: it hashes ?n= rounds of SHA-256 (default
// 1000, at most 1,000,000; a round is some hundreds of nanoseconds) and answers 200.
// Unlike /slow it goes through admission, so overload can be offered to the example.
func burn(w http.ResponseWriter, r *http.Request) {
	n := 1000
	if v := r.URL.Query().Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1_000_000 {
			httpError(w, http.StatusBadRequest, "n must be a whole number between 1 and 1000000")
			return
		}
	}
	var sum [32]byte
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	fmt.Fprintf(w, "burnt %d rounds: %x\n", n, sum[:4])
}
