package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/fx"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
	"github.com/servicewright/servicewright/entrypoint/httpentry/httpfx"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// httpModule serves the example's API on HTTP_ADDR through the HTTP entrypoint.
func httpModule(addr string) fx.Option {
	return fx.Options(
		// GET /slow holds each request for as long as it is asked (a test knob): its
		// duration says nothing of load, so it stays out of the admission limiter, as
		// a long poll would.
		hostfx.Provide(host.Registration{Order: 10}, httpfx.Provider(httpentry.Config{Addr: addr, MaxConns: maxConns("HTTP_MAX_CONNS")},
			httpentry.WithExempt("GET /slow"))),
		plain("GET /hello", hello),
		plain("GET /slow", slow),
		plain("GET /events", events),
		route("POST /orders", func(o *orders) http.HandlerFunc { return o.create }),
		route("GET /orders/{id}", func(o *orders) http.HandlerFunc { return o.get }),
	)
}

// plain contributes a handler that needs nothing from the container.
func plain(pattern string, h http.HandlerFunc) fx.Option {
	return httpfx.AsRoute(func() httpfx.Route { return httpfx.Route{Pattern: pattern, Handler: h} })
}

// route contributes one handler, built from the container, to the server's mux.
func route[T any](pattern string, ctor func(T) http.HandlerFunc) fx.Option {
	return httpfx.AsRoute(func(dep T) httpfx.Route {
		return httpfx.Route{Pattern: pattern, Handler: ctor(dep)}
	})
}

func hello(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello") }

// slow holds the request for ?d= (default 1s), then answers 200: an in-flight request
// for drain tests. A client that goes away ends it early.
func slow(w http.ResponseWriter, r *http.Request) {
	d := time.Second
	if v := r.URL.Query().Get("d"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 || d > time.Minute {
			httpError(w, http.StatusBadRequest, "d must be a duration between 0 and 1m")
			return
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		fmt.Fprintf(w, "slept %s\n", d)
	case <-r.Context().Done():
	}
}

// events is a server-sent event stream, one event every 100 ms. When the drain
// reaches it, it sends a last "bye" event and ends, so the client reconnects elsewhere.
func events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-r.Context().Done():
			if errors.Is(context.Cause(r.Context()), entrypoint.ErrStreamDrained) {
				fmt.Fprint(w, "event: bye\ndata: draining, reconnect\n\n")
				flusher.Flush()
			}
			return
		case <-tick.C:
			fmt.Fprintf(w, "data: %d\n\n", n)
			flusher.Flush()
		}
	}
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// orders is the API over the store. submit is how a new order enters the system.
type orders struct {
	store      store
	submit     func(context.Context, Order) error
	retryAfter string // Retry-After of a 503 when submit fails
}

func (o *orders) create(w http.ResponseWriter, r *http.Request) {
	ord, err := decodeOrder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := o.submit(r.Context(), ord); err != nil {
		if o.retryAfter != "" {
			w.Header().Set("Retry-After", o.retryAfter)
		}
		httpError(w, http.StatusServiceUnavailable, "could not accept the order, retry")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(ord)
}

func (o *orders) get(w http.ResponseWriter, r *http.Request) {
	ord, ok, err := o.store.Get(r.Context(), r.PathValue("id"))
	switch {
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, "store unavailable")
	case !ok:
		httpError(w, http.StatusNotFound, "no such order")
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ord)
	}
}
