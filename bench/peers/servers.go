package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/go-kratos/aegis/ratelimit"
	"github.com/go-kratos/aegis/ratelimit/bbr"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/servicewright/servicewright/entrypoint/admission"
	"github.com/servicewright/servicewright/entrypoint/httpentry"
)

// burn does work rounds of hashing: the CPU a request costs, the same for every
// server.
func burn(work int) byte {
	var sum [32]byte
	for range work {
		sum = sha256.Sum256(sum[:])
	}
	return sum[0]
}

// handler answers 200 after burning work rounds of CPU.
func handler(work int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		b := burn(work)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "ok %d\n", b)
	}
}

// unavailable is the peers' refusal, as their own HTTP middleware answers it.
func unavailable(w http.ResponseWriter) {
	w.WriteHeader(http.StatusServiceUnavailable)
}

// serve runs the server of kind on a loopback port, prints the port on stdout and
// serves until SIGTERM.
func serve(kind string, work int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	h := handler(work)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	if path := os.Getenv("PEERS_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	var wrapped http.Handler
	switch kind {
	case "httpentry", "httpentry-off":
		var opts []httpentry.Option
		if kind == "httpentry-off" {
			opts = append(opts, httpentry.WithAdmission(admission.Config{Off: true}))
		}
		s, err := httpentry.New(httpentry.Config{}, h, append(opts, httpentry.WithListener(ln))...)
		if err != nil {
			return err
		}
		if err := s.Bind(ctx); err != nil {
			return err
		}
		if os.Getenv("PEERS_DEBUG") != "" {
			go func() {
				for range time.Tick(250 * time.Millisecond) {
					fmt.Fprintf(os.Stderr, "limit %d in flight %d shed %d\n", s.AdmissionLimit(), s.InFlight(), s.ShedOverload())
				}
			}()
		}
		if err := s.Serve(context.Background(), ctx.Done()); err != nil {
			return err
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Drain(dctx)
		return s.Stop(dctx)
	case "bare":
		wrapped = h
	case "go-zero":
		logx.Disable()
		logx.DisableStat()
		shedder := load.NewAdaptiveShedder() // go-zero's defaults: CPU threshold 90 %, 5s window
		wrapped = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := shedder.Allow()
			if err != nil {
				unavailable(w)
				return
			}
			h.ServeHTTP(w, r)
			p.Pass()
		})
	case "kratos":
		limiter := bbr.NewLimiter() // aegis's defaults: CPU threshold 80 %, 10s window
		wrapped = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			done, err := limiter.Allow()
			if err != nil {
				unavailable(w)
				return
			}
			h.ServeHTTP(w, r)
			done(ratelimit.DoneInfo{})
		})
	default:
		return fmt.Errorf("unknown server %q", kind)
	}
	// The same timeouts as httpentry's defaults.
	srv := &http.Server{Handler: wrapped, ReadHeaderTimeout: httpentry.DefaultReadHeaderTimeout,
		ReadTimeout: httpentry.DefaultReadTimeout, IdleTimeout: httpentry.DefaultIdleTimeout}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
