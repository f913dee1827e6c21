package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/segmentio/kafka-go"
	"go.uber.org/zap"

	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/internal/wait"
	"github.com/servicewright/servicewright/kafkakit"
	"github.com/servicewright/servicewright/pgkit"
)

// Relay defaults.
const (
	defaultEvery = time.Second
	defaultBatch = 100
	// maxBatch bounds RelayConfig.Batch: kafka-go splits a write into batches of
	// 100 messages per partition, so that a key's messages of one pass leave in one
	// batch.
	maxBatch = 100
)

// The wait after a failed pass: jittered, from 100ms doubling up to 5s.
const (
	retryInitial = 100 * time.Millisecond
	retryMax     = 5 * time.Second
)

// RelayConfig configures a Relay. Zero fields take the defaults.
type RelayConfig struct {
	// Name identifies the entrypoint. Default "outbox-relay".
	Name string
	// Every is the wait between passes when no NOTIFY wakes the relay: it bounds how
	// late an event whose notice was lost (the listening connection was down) is
	// published. Default 1s.
	Every time.Duration
	// Jitter widens each wait to Every ± Jitter, so replicas do not poll the claim
	// query in step. Default Every/5.
	Jitter time.Duration
	// Batch is how many events a pass claims at most. Default and maximum 100.
	Batch int
	// CreateTable makes Bind create the table (Outbox.Create) instead of only
	// verifying it.
	CreateTable bool
}

// resolve fills in the defaults and records every problem in l, each under its
// field's name.
func (c RelayConfig) resolve(l *fault.Problems) RelayConfig {
	if c.Every < 0 {
		l.Addf("Every", "must not be negative, got %v", c.Every)
	}
	if c.Jitter < 0 {
		l.Addf("Jitter", "must not be negative, got %v", c.Jitter)
	}
	if c.Batch < 0 || c.Batch > maxBatch {
		l.Addf("Batch", "must be from 1 to %d (0: %d), got %d", maxBatch, defaultBatch, c.Batch)
	}
	c.Name = cmp.Or(c.Name, "outbox-relay")
	c.Every = cmp.Or(c.Every, defaultEvery)
	c.Jitter = cmp.Or(c.Jitter, c.Every/5)
	if c.Jitter > c.Every {
		l.Addf("Jitter", "must not exceed Every (%v), got %v", c.Every, c.Jitter)
	}
	c.Batch = cmp.Or(c.Batch, defaultBatch)
	return c
}

// A RelayOption adds an optional part to a Relay.
type RelayOption func(*entrypoint.Telemetry)

// WithTelemetry gives the Relay the logger failed passes are reported to and the
// registry its metrics are registered with. Its nil fields are taken from the Host
// (SetDefaults); with neither, the Relay logs nothing and registers no metrics. The
// Relay uses no other field.
func WithTelemetry(t entrypoint.Telemetry) RelayOption {
	return func(d *entrypoint.Telemetry) { *d = t.Or(*d) }
}

var _ interface {
	entrypoint.Entrypoint
	entrypoint.InFlighter
	entrypoint.DefaultsUser
} = (*Relay)(nil)

// Relay is the entrypoint that publishes an Outbox's events. Run one on every
// replica: they share the work through the claim and need no leader.
//
// Each pass, in one transaction: claim the oldest Batch events with FOR UPDATE
// SKIP LOCKED (rows another replica holds are skipped, not waited for); hold back
// those of a key with an older event still pending (claimed elsewhere), so a key's
// events are published in order and by one replica at a time; publish the rest in
// one WriteMessages, each with its id in the outbox-event-id header; delete them; commit. A pass
// that claimed a full batch is followed by another at once; otherwise the relay
// waits for a NOTIFY (each Write's commit sends one), or Every ± Jitter. A failed
// pass (a broker or database down) rolls back, so its events stay for the next
// pass — of this replica after a jittered backoff, or of another — and some may have
// been published already: delivery is at least once.
//
// Drain lets the pass in flight publish and commit what it claimed, and starts no
// other: what is left is for the other replicas. Stop cuts the pass in flight; its
// transaction rolls back and its events stay pending. The Relay does not close the
// pool or the producer.
type Relay struct {
	*entrypoint.Runner
	cfg      RelayConfig
	box      *Outbox
	pool     *pgxpool.Pool
	producer *kafkakit.Producer

	// Set before Bind by the telemetry the Runner hands over (use).
	log     *zap.Logger
	metrics *metrics // nil until a registerer is given
}

// NewRelay checks cfg and returns the Relay of box, claiming with pool and
// publishing with producer. Every problem is reported in one *fault.ConfigError
// naming its field. Nothing is sent until Bind.
func NewRelay(box *Outbox, pool *pgxpool.Pool, producer *kafkakit.Producer, cfg RelayConfig, opts ...RelayOption) (*Relay, error) {
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if box == nil {
		l.Addf("box", "must not be nil")
	}
	if pool == nil {
		l.Addf("pool", "must not be nil")
	}
	if producer == nil {
		l.Addf("producer", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	r := &Relay{Runner: entrypoint.NewRunner(cfg.Name), cfg: cfg, box: box, pool: pool, producer: producer}
	var given entrypoint.Telemetry
	for _, o := range opts {
		o(&given)
	}
	if err := r.UseTelemetry(given, r.use); err != nil {
		l.Addf("WithTelemetry", "%v", err)
		return nil, l.Err()
	}
	return r, nil
}

// use takes t's logger, and registers the metrics with t's registry unless they are
// registered already. The Runner calls it from NewRelay with what WithTelemetry gave,
// and again from SetDefaults (the Host's telemetry for what the option did not give).
// A registration that clashes (two relays of one name) is returned.
func (r *Relay) use(t entrypoint.Telemetry) error {
	r.log = cmp.Or(t.Logger, zap.NewNop()).With(zap.String("entrypoint", r.cfg.Name))
	if r.metrics != nil {
		return nil
	}
	m, err := newMetrics(t.Registerer, r.cfg.Name, r.box.name)
	if err != nil {
		return err
	}
	r.metrics = m
	return nil
}

// Name returns RelayConfig.Name.
func (r *Relay) Name() string { return r.cfg.Name }

// Bind verifies the table (or creates it, with CreateTable).
func (r *Relay) Bind(ctx context.Context) error {
	return r.Runner.Bind(ctx, func(ctx context.Context) error {
		if r.cfg.CreateTable {
			if err := r.box.Create(ctx, r.pool); err != nil {
				return err
			}
		}
		return r.box.Verify(ctx, r.pool)
	})
}

// Serve starts the relay's loop and returns at stop, with the loop still running
// until Drain.
func (r *Relay) Serve(ctx context.Context, stop <-chan struct{}) error {
	return r.Runner.Serve(ctx, stop, r.work)
}

// work runs passes until draining closes, woken by the listener.
func (r *Relay) work(ctx context.Context, draining <-chan struct{}) error {
	wake := make(chan struct{}, 1)
	lctx, stopListening := context.WithCancel(ctx)
	var listening sync.WaitGroup
	listening.Go(func() {
		pgkit.Listen(lctx, r.connect, r.box.channel, func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	})
	defer listening.Wait()
	defer stopListening()

	retry := wait.Backoff{Initial: retryInitial, Max: retryMax}
	var observed time.Time
	for {
		full, err := r.pass(ctx)
		// The gauges are read at most once per Every, and after every failed pass: an
		// outage is when an operator looks at them.
		if err != nil || time.Since(observed) >= r.cfg.Every {
			observed = time.Now()
			r.observe(ctx)
		}
		var d time.Duration
		switch {
		case err != nil:
			d = retry.Next()
			if ctx.Err() == nil {
				r.log.Warn("outbox relay pass failed; its events stay pending", zap.Error(err), zap.Duration("retry_in", d))
			}
		case full:
			retry.Reset()
			d = 0
		default:
			retry.Reset()
			d = wait.Jitter(r.cfg.Every, r.cfg.Jitter)
		}
		if ok, _ := wait.SleepOrWake(d, draining, wake); !ok {
			return nil
		}
	}
}

// connect opens the listener's own connection, with the pool's settings.
func (r *Relay) connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
}

// claimSQL: $1 batch. The CTE claims; blocked marks an event whose key has an
// older event this pass did not claim (held by another replica).
const claimSQL = `WITH claimed AS (SELECT seq FROM %[1]s ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
SELECT o.seq, o.id::text, o.topic, o.key, o.value,
	o.key IS NOT NULL AND EXISTS (SELECT 1 FROM %[1]s p WHERE p.key = o.key AND p.seq < o.seq
		AND p.seq NOT IN (SELECT seq FROM claimed)) AS blocked
FROM %[1]s o JOIN claimed USING (seq) ORDER BY o.seq`

// pass claims, publishes, deletes and commits one batch. full reports a claim of
// a whole batch with nothing held back: there may be more.
func (r *Relay) pass(ctx context.Context) (full bool, err error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("outbox relay: begin: %w", err)
	}
	defer rollback(ctx, tx)
	rows, err := tx.Query(ctx, fmt.Sprintf(claimSQL, r.box.quoted), r.cfg.Batch)
	if err != nil {
		return false, fmt.Errorf("outbox relay: claim: %w", err)
	}
	var (
		msgs    []kafka.Message
		seqs    []int64
		claimed int
	)
	for rows.Next() {
		var (
			seq     int64
			id      string
			topic   string
			key     *string
			value   []byte
			blocked bool
		)
		if err := rows.Scan(&seq, &id, &topic, &key, &value, &blocked); err != nil {
			rows.Close()
			return false, fmt.Errorf("outbox relay: claim: %w", err)
		}
		claimed++
		if blocked {
			continue
		}
		m := kafka.Message{Topic: topic, Value: value, Headers: []kafka.Header{{Key: headerEventID, Value: []byte(id)}}}
		if key != nil {
			m.Key = []byte(*key)
		}
		msgs = append(msgs, m)
		seqs = append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("outbox relay: claim: %w", err)
	}
	if len(msgs) == 0 {
		return false, tx.Commit(ctx)
	}
	if err := r.producer.WriteMessages(ctx, msgs...); err != nil {
		r.metrics.fail(len(msgs))
		return false, fmt.Errorf("outbox relay: publish %d events: %w", len(msgs), err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM %s WHERE seq = ANY($1)`, r.box.quoted), seqs); err != nil {
		r.metrics.fail(len(msgs))
		return false, fmt.Errorf("outbox relay: delete the published: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		r.metrics.fail(len(msgs))
		return false, fmt.Errorf("outbox relay: commit: %w", err)
	}
	r.metrics.publish(len(msgs))
	return claimed == r.cfg.Batch && len(msgs) == claimed, nil
}

// rollbackTimeout bounds a rollback on a connection that may be gone.
const rollbackTimeout = 5 * time.Second

func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		_ = err // the connection is broken; the pool discards it, and the server rolls back
	}
}

// observe reads the number of pending events (counted up to pendingCap) and the age
// of the oldest into the gauges. A failure leaves them as they were.
func (r *Relay) observe(ctx context.Context) {
	if r.metrics == nil {
		return
	}
	var (
		n   int64
		age float64
	)
	err := r.pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM (SELECT 1 FROM %[1]s LIMIT %[2]d) c),
		coalesce((SELECT extract(epoch FROM clock_timestamp() - created_at)::float8 FROM %[1]s ORDER BY seq LIMIT 1), 0)`,
		r.box.quoted, pendingCap)).Scan(&n, &age)
	if err == nil {
		r.metrics.pending.Set(float64(n))
		r.metrics.oldest.Set(age)
	}
}

// pendingCap bounds the count behind the pending gauge, so a large backlog costs
// one bounded scan per tick.
const pendingCap = 100000
