// Command fleetdemo is `make fleet-demo`: three replicas of the example behind HAProxy,
// with real Redis, PostgreSQL and one Kafka-protocol broker, all on loopback. It
// restarts the replicas one by one under load, printing a line a second, then a
// summary: requests, failures, leader changes, orders lost or handled twice.
// Everything it started is stopped at the end, also on Ctrl+C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/servicewright/servicewright/internal/testenv"
	"github.com/servicewright/servicewright/kafkakit/kafkadev"
)

func main() {
	rounds := flag.Int("rounds", 2, "how many times each replica is restarted")
	rate := flag.Int("rate", 300, "requests per second through HAProxy")
	lockBackend := flag.String("lock", "redis", "where the replicas lead: redis (REDIS_URL set) or postgres (DATABASE_URL only)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *lockBackend != "redis" && *lockBackend != "postgres" {
		fmt.Fprintf(os.Stderr, "fleetdemo: -lock must be redis or postgres, got %q\n", *lockBackend)
		os.Exit(2)
	}
	if err := run(ctx, *rounds, *rate, *lockBackend); err != nil {
		fmt.Fprintln(os.Stderr, "fleet-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rounds, rate int, lockBackend string) error {
	dir, err := os.MkdirTemp("", "sw-fleet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "example")
	build := exec.Command("go", "build", "-o", bin, "./cmd/example")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the example: %w", err)
	}

	say("starting Redis, PostgreSQL and a Kafka-protocol broker on loopback")
	rdb, err := testenv.StartRedis()
	if err != nil {
		return err
	}
	defer rdb.Stop()
	pg, err := testenv.StartPostgres()
	if err != nil {
		return err
	}
	defer pg.Stop()
	kafka, err := kafkadev.NewEmbedded(kafkadev.EmbeddedConfig{Topics: map[string]int{"orders": 6, "orders.dlq": 1}})
	if err != nil {
		return err
	}
	defer kafka.Close()

	f := &fleet{bin: bin, logDir: dir, env: []string{
		"DATABASE_URL=" + pg.DSN(), "KAFKA_BROKERS=" + kafka.Addr(),
		"SW_DRAIN_DELAY=1s", "EXAMPLE_LEADER_TTL=3s", "EXAMPLE_CAMPAIGN_EVERY=300ms",
	}}
	if lockBackend == "redis" { // without REDIS_URL the example leads through PostgreSQL
		f.env = append(f.env, "REDIS_URL="+rdb.URL())
	}
	defer f.stopAll()
	var backends []testenv.Backend
	for i := range 3 {
		r, err := f.add(fmt.Sprintf("replica-%d", i+1))
		if err != nil {
			return err
		}
		backends = append(backends, testenv.Backend{Name: r.name, Addr: r.http, ProbePort: r.probePort})
	}
	for _, r := range f.replicas {
		if err := r.start(ctx); err != nil {
			return err
		}
	}
	lb, err := testenv.StartHAProxy(backends, 250*time.Millisecond)
	if err != nil {
		return err
	}
	defer lb.Stop()
	for _, r := range f.replicas {
		if err := lb.WaitStatus(r.name, "UP", 10*time.Second); err != nil {
			return err
		}
	}
	say("3 replicas up behind HAProxy at %s; load: %d req/s (1 in 10 a POST /orders)", lb.Addr(), rate)

	l := newLoad(lb.Addr())
	loadCtx, stopLoad := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.run(loadCtx, rate) }()
	mon := newMonitor(f, l)
	monCtx, stopMon := context.WithCancel(ctx)
	monDone := make(chan struct{})
	go func() { defer close(monDone); mon.run(monCtx) }()

	restartErr := f.rollingRestart(ctx, lb, rounds)
	stopLoad()
	<-done
	stopMon()
	<-monDone
	summary(l, mon, pg.DSN())
	if ctx.Err() != nil {
		say("interrupted: stopping everything")
		return nil
	}
	return restartErr
}

func say(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
