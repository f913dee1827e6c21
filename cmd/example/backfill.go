package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/health"
	"github.com/servicewright/servicewright/host"
	"github.com/servicewright/servicewright/host/hostfx"
)

// backfillPermanentExitCode is what `example backfill` exits with when its work fails
// permanently; testdata/k8s/backfill-job.yaml names it in a FailJob rule.
const backfillPermanentExitCode = host.ExitPermanent

// backfillFailAfter is how many units the failure knob lets through before failing.
const backfillFailAfter = 5

// backfillKnobs are `example backfill`'s test knobs (documented in the README as such).
type backfillKnobs struct {
	n     int           // EXAMPLE_BACKFILL_N: orders b1 … bN (default 1000)
	delay time.Duration // EXAMPLE_BACKFILL_DELAY: each unit takes this long (default 0)
	fail  string        // EXAMPLE_BACKFILL_FAIL: "transient" or "permanent", after the first few units
}

// The backfill's test knobs are bounded like the service's (knobs.go).
const (
	maxBackfillN     = 1_000_000
	maxBackfillDelay = time.Minute
)

func readBackfillKnobs() (backfillKnobs, error) {
	b := backfillKnobs{n: 1000}
	var l fault.Problems
	if v := os.Getenv("EXAMPLE_BACKFILL_N"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > maxBackfillN {
			l.Addf("EXAMPLE_BACKFILL_N", "must be a whole number from 1 to %d, got %q", maxBackfillN, v)
		}
		b.n = n
	}
	if v := os.Getenv("EXAMPLE_BACKFILL_DELAY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxBackfillDelay {
			l.Addf("EXAMPLE_BACKFILL_DELAY", "must be a duration from 0s to %s, got %q", maxBackfillDelay, v)
		}
		b.delay = d
	}
	switch b.fail = os.Getenv("EXAMPLE_BACKFILL_FAIL"); b.fail {
	case "", "transient", "permanent":
	default:
		l.Addf("EXAMPLE_BACKFILL_FAIL", "must be transient or permanent, got %q", b.fail)
	}
	return b, l.Err()
}

// backfillSpec declares `example backfill`, what a Job's args say: the same Host as the
// service — telemetry, container, the store's warmup, the probe listener — with one
// task instead of the servers. The task ends the run: 0 when every order is stored,
// 1 on a failure worth retrying, backfillPermanentExitCode on one that is not, and
// host.ExitInterrupted when a stop came first.
func backfillSpec(k knobs, b backfillKnobs) host.AppSpec {
	return host.AppSpec{
		ServiceName: "orders-backfill",
		Container: hostfx.Container(logModule(), k.module(), storeModule(),
			hostfx.Provide(host.Registration{Order: 10}, func(s store, log *zap.Logger) (*entrypoint.Task, error) {
				bs, ok := s.(backfillStore)
				if !ok {
					return nil, fmt.Errorf("store %T has no idempotent insert", s)
				}
				return newBackfill(b, bs, log)
			})),
		Warmups: []host.Step{{
			Name:  "prime-cache",
			Start: func(ctx context.Context) error { return sleep(ctx, k.warmupDelay) },
		}},
		Probes: health.ListenerConfig{Addr: k.probeAddr},
		// No traffic to drain: no DrainDelay. DrainGrace is how long the work gets to
		// reach its next unit boundary after a stop.
		Budgets: host.Budgets{DrainGrace: 5 * time.Second, StepTimeout: 1500 * time.Millisecond},
	}
}

// backfillStore is the store's idempotent insert: a row already there is left alone,
// so a rerun after an interruption skips what was done and completes the rest.
type backfillStore interface {
	Insert(ctx context.Context, o Order) (inserted bool, err error)
}

// Insert stores o unless an order with its id exists (ON CONFLICT DO NOTHING).
func (s pgStore) Insert(ctx context.Context, o Order) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO orders (id, item, qty, deliveries) VALUES ($1, $2, $3, 1)
		ON CONFLICT (id) DO NOTHING`, o.ID, o.Item, o.Qty)
	return tag.RowsAffected() == 1, err
}

// Insert stores o unless an order with its id exists.
func (m *memStore) Insert(_ context.Context, o Order) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.orders[o.ID]; ok {
		return false, nil
	}
	o.Deliveries = 1
	m.orders[o.ID] = o
	return true, nil
}

// newBackfill is the task: upsert orders b1 … bN, one unit each, checking for a stop
// between units and logging progress.
func newBackfill(b backfillKnobs, s backfillStore, log *zap.Logger) (*entrypoint.Task, error) {
	every := max(10, b.n/20)
	return entrypoint.NewTask(entrypoint.TaskConfig{Name: "backfill", PermanentExitCode: backfillPermanentExitCode},
		func(ctx context.Context) error {
			inserted := 0
			for i := 1; i <= b.n; i++ {
				if err := entrypoint.Checkpoint(ctx); err != nil {
					log.Info("backfill stopped at a unit boundary; a rerun completes the rest",
						zap.Int("done", i-1), zap.Int("of", b.n))
					return err
				}
				if b.fail != "" && i > backfillFailAfter {
					err := fmt.Errorf("order b%d: the %s failure asked for by EXAMPLE_BACKFILL_FAIL", i, b.fail)
					if b.fail == "permanent" {
						return fault.Permanent(err)
					}
					return err
				}
				o := Order{ID: fmt.Sprintf("b%d", i), Item: "backfill", Qty: 1}
				ok, err := s.Insert(ctx, o)
				if err != nil {
					return fmt.Errorf("order %s: %w", o.ID, err)
				}
				if ok {
					inserted++
				}
				_ = sleep(ctx, b.delay) // a stop cuts it short; the checkpoint reports it
				if i%every == 0 || i == b.n {
					log.Info("backfill progress", zap.Int("done", i), zap.Int("of", b.n))
				}
			}
			log.Info("backfill done", zap.Int("orders", b.n), zap.Int("inserted", inserted),
				zap.Int("already_there", b.n-inserted))
			return nil
		})
}
