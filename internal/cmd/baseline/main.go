// Command baseline is the bare net/http process that servicewright is measured and
// tested against: the same /hello and /slow endpoints as the example on HTTP_ADDR,
// /readyz on PROBE_ADDR, and on SIGTERM a plain http.Server.Shutdown — no readiness
// withdrawal, no drain delay, no gate. make bench compares against it, and the
// rolling-restart test runs it behind HAProxy to prove the test can fail.
package main

import (
	"context"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("hello\n")) })
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		d, _ := time.ParseDuration(r.URL.Query().Get("d"))
		time.Sleep(d)
		w.Write([]byte("slow\n"))
	})
	api := &http.Server{Addr: os.Getenv("HTTP_ADDR"), Handler: mux}
	probes := &http.Server{Addr: os.Getenv("PROBE_ADDR"), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"status":"ok"}`))
	})}
	if api.Addr != "" {
		go func() { _ = api.ListenAndServe() }()
	}
	go func() { _ = probes.ListenAndServe() }()
	<-ctx.Done()
	_ = probes.Shutdown(context.Background())
	if api.Addr != "" {
		_ = api.Shutdown(context.Background())
	}
}
