// Command example is "orders", a service that uses every part of servicewright. It
// runs with no external service: `make run`. See the README for what to try.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
	"github.com/servicewright/servicewright/host/otlp"
)

func main() {
	k, err := readKnobs()
	err = checkMaxConns(err)
	var tel host.TelemetryConfig
	if err == nil {
		tel, err = telemetryConfig()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(host.ExitCode(err))
	}
	command := ""
	if len(os.Args) > 1 {
		command = os.Args[1]
	}
	var s host.AppSpec
	switch command {
	case "", "serve":
		s = spec(k)
	case "backfill": // run once, as a Kubernetes Job (backfill.go)
		b, err := readBackfillKnobs()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(host.ExitCode(err))
		}
		s = backfillSpec(k, b)
	default:
		fmt.Fprintf(os.Stderr, "example: unknown command %q; known: serve (the default), backfill\n", command)
		os.Exit(host.ExitConfig)
	}
	s.Telemetry = tel
	host.Main(s, otlp.FromEnv()) // spans and metrics out over OTLP when OTEL_* ask for it
}

// spec declares the service.
func spec(k knobs) host.AppSpec {
	lc := &hooks.Registry{}
	lc.AddPostStart("print-hints", func(context.Context) error {
		printHints(os.Stdout, k.httpAddr, k.probeAddr)
		return nil
	})
	lc.AddPreShutdown("final-report", func(ctx context.Context) error {
		return sleep(ctx, k.hookDelay)
	})
	// A drain hook: work done once the replica is out of rotation and still serving
	// (here, telling nobody that it leaves). Host.PreStop, served at /prestop on the
	// probe port, runs it ahead of the stop; the shutdown then does not run it again.
	lc.AddDrainHook(hooks.DrainHook{Name: "deregister", MaxDuration: 500 * time.Millisecond,
		Run: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	return host.AppSpec{
		ServiceName: "orders",
		Entrypoints: k.testKnobs.entrypoints(), // none in a user's build (knobs_user.go)
		Warmups: []host.Step{{
			Name:  "prime-cache",
			Start: func(ctx context.Context) error { return sleep(ctx, k.warmupDelay) },
		}},
		Lifecycle: lc,
		Container: hostfx.Container(
			logModule(),
			slowBuildModule(k.buildDelay),
			k.module(),
			tickerModule(),
			storeModule(),
			kafkaModule(k.brokers, k.handleDelay, k.outbox),
			leaderModule(k),
			cronModule(k),
			httpModule(k.httpAddr),
			k.testKnobs.routes(),
			grpcModule(k.grpcAddr),
		),
		Probes: health.ListenerConfig{Addr: k.probeAddr},
		// Sized so the worst-case exit fits the manifest's 45s grace period with 10%
		// headroom (testdata/k8s/orders.yaml, held to it by k8s_test.go); the startup
		// log lists it figure by figure.
		Budgets: host.Budgets{DrainGrace: 6 * time.Second, StepTimeout: 1500 * time.Millisecond,
			DrainHooksBudget: 500 * time.Millisecond},
	}
}

// slowBuildModule is a constructor that takes d, as one waiting on a dependency
// does: a stop signal meanwhile is honoured once it returns (EXAMPLE_BUILD_DELAY).
func slowBuildModule(d time.Duration) fx.Option {
	return fx.Invoke(func(log *zap.Logger) {
		if d > 0 {
			log.Info("slow constructor: building", zap.Duration("takes", d))
			time.Sleep(d)
		}
	})
}

// tickerModule runs tick as a background loop, every second ± 100 ms.
func tickerModule() fx.Option {
	return hostfx.Provide(host.Registration{Order: 10}, func() (*entrypoint.Loop, error) {
		return entrypoint.NewLoop(entrypoint.LoopConfig{Name: "ticker", Every: time.Second, Jitter: 100 * time.Millisecond}, tick)
	})
}

// tick is the ticker's unit of work: a background sweep (here, of nothing) that the
// Host stops between units, never in the middle of one.
func tick(ctx context.Context) error {
	return ctx.Err()
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkMaxConns adds to err, the knobs' ConfigError if any, a problem when
// HTTP_MAX_CONNS, the HTTP listener's connection cap (httpentry.Config.MaxConns; 0 or
// unset takes the default derived from the descriptor limit, so that /livez and
// /readyz keep descriptors), is not a whole number ≥ 0, naming the variable and the
// field it sets.
func checkMaxConns(err error) error {
	var l fault.Problems
	l.Merge("", err)
	if v := os.Getenv("HTTP_MAX_CONNS"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			l.Addf("HTTP_MAX_CONNS", "sets httpentry.Config.MaxConns: must be a whole number, 0 or more "+
				"(0 takes the default from the descriptor limit), got %q", v)
		}
	}
	return l.Err()
}

// maxConns is the connection cap in the variable name, checked by checkMaxConns;
// 0 (the default) when unset.
func maxConns(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// printHints tells the person who ran `make run` what to try, on stdout (the logs go
// to stderr).
func printHints(w io.Writer, httpAddr, probeAddr string) {
	h, p := localAddr(httpAddr), localAddr(probeAddr)
	fmt.Fprintf(w, `
orders is ready. Try:
  curl -s %[1]s/hello
  curl -s -XPOST %[1]s/orders -d '{"id":"o1","item":"tea","qty":2}'
  curl -s %[1]s/orders/o1
  curl -sN %[1]s/events
  curl -s '%[1]s/slow?d=2s'      (press Ctrl+C meanwhile: it still completes)
  curl -s %[2]s/readyz
  curl -s %[2]s/debug/lifecycle
Ctrl+C stops it gracefully.

`, h, p)
}

// localAddr turns a listen address into one curl can reach: ":8080" → "localhost:8080".
func localAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "localhost" + addr
	}
	return addr
}
