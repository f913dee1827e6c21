package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/fleet"
	"github.com/servicewright/servicewright/lock"
)

// maxSingletonRelease bounds the release after the step, whatever the TTL.
const maxSingletonRelease = 5 * time.Second

// SingletonConfig configures a SingletonStep.
type SingletonConfig struct {
	// Lock is the lock every replica shares (rediskit.Lock or pgkit.Lock across
	// processes, lock.Memory within one).
	Lock lock.Lock
	// Key names the lock. It must not end in ":want".
	Key string
	// Owner identifies this replica (the instance id).
	Owner string
	// TTL is how long the lock is held at most, without renewal: size it well above
	// start's longest run, or a second replica may start while the first still
	// runs. Required.
	TTL time.Duration
}

// resolve records every problem with c in l under its field name. No field has a
// default.
func (c SingletonConfig) resolve(l *fault.Problems) SingletonConfig {
	checkIdentity(l, c.Lock, c.Key, c.Owner)
	if c.TTL <= 0 {
		l.Addf("TTL", "must be positive, got %v", c.TTL)
	}
	return c
}

// SingletonStep runs a start step on the one replica that takes a lock and skips it
// on the others. Make one with NewSingleton and register its Start and Stop methods
// as a warmup step's, with its Marks.
type SingletonStep struct {
	cfg         SingletonConfig
	start, stop func(context.Context) error
	log         *zap.Logger
	ran         atomic.Bool
}

// NewSingleton guards a start step (and its optional stop) with cfg.Lock under
// cfg.Key (WithTelemetry's logger is told when the step runs or is skipped; the
// other options' fields are not used): the replica whose Start acquires the lock runs start and then releases
// the lock; replicas that find it held skip start, because the holder is doing the
// work; stop runs only on a replica whose start ran.
//
// The lock is held only while start runs, without renewal. start must be idempotent
// ("ensure …"): a replica that starts after the holder released finds the lock free
// and runs it again. For work that must stay on one replica for the life of the
// process, use a Leadership instead.
//
// NewSingleton validates cfg and returns a *fault.ConfigError naming each field; it
// sends nothing to the lock.
func NewSingleton(cfg SingletonConfig, start, stop func(ctx context.Context) error, opts ...Option) (*SingletonStep, error) {
	var l fault.Problems
	cfg = cfg.resolve(&l)
	if start == nil {
		l.Addf("start", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	log := cmp.Or(newOptions(opts).given.Logger, zap.NewNop())
	return &SingletonStep{cfg: cfg, start: start, stop: stop,
		log: log.With(zap.String("singleton", cfg.Key), zap.String("owner", cfg.Owner))}, nil
}

// Marks returns the marks to register the step with: it mutates shared state (why
// else guard it) and it is singleton-guarded, so the Fleet profile accepts it.
func (s *SingletonStep) Marks() fleet.Marks {
	return fleet.Marks{MutatesSharedState: true, SingletonGuarded: true}
}

// Start acquires the lock. When it is held elsewhere, Start logs the skip and returns
// nil. When acquired, Start runs start with ctx, then releases the lock (within the
// TTL, at most 5 s, even when ctx is done) and returns start's error. An acquire that
// fails for another reason (the backend is down) is returned wrapped: whether the
// step ran somewhere cannot be told, so startup should not go on as if it had.
func (s *SingletonStep) Start(ctx context.Context) error {
	lease, err := s.cfg.Lock.Acquire(ctx, s.cfg.Key, s.cfg.Owner, s.cfg.TTL)
	if errors.Is(err, lock.ErrHeld) {
		s.log.Info("singleton step skipped: another replica holds the lock and runs it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("singleton %q: acquire: %w", s.cfg.Key, err)
	}
	s.ran.Store(true)
	s.log.Info("singleton step running on this replica", zap.Uint64("token", lease.Token))
	begun := time.Now()
	runErr := s.start(ctx)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(s.cfg.TTL, maxSingletonRelease))
	defer cancel()
	switch err := s.cfg.Lock.Release(rctx, lease); {
	case errors.Is(err, lock.ErrNotHeld):
		s.log.Warn("singleton lock lapsed before the step finished; another replica may have run it too: raise the TTL",
			zap.Duration("ttl", s.cfg.TTL), zap.Duration("took", time.Since(begun)))
	case err != nil:
		s.log.Warn("singleton lock release failed; it lapses at its TTL", zap.Error(err))
	}
	return runErr
}

// Stop runs stop with ctx if this replica's Start ran start, and returns its error;
// otherwise, or when there is no stop, it returns nil.
func (s *SingletonStep) Stop(ctx context.Context) error {
	if s.stop == nil || !s.ran.Load() {
		return nil
	}
	return s.stop(ctx)
}

// Ran reports whether start ran on this replica.
func (s *SingletonStep) Ran() bool { return s.ran.Load() }
