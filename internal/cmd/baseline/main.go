// Command baseline is the bare net/http process that make bench measures the
// framework against: it answers 200 on /readyz at PROBE_ADDR and, on SIGTERM, shuts
// the server down and exits 0 — no lifecycle, no drain, no telemetry.
package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Addr: os.Getenv("PROBE_ADDR"), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})}
	go func() { _ = srv.ListenAndServe() }()
	<-ctx.Done()
	_ = srv.Shutdown(context.Background())
}
