package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/leader"
)

// SingletonMarks are the marks of a warmup step or hook wrapped with Singleton: it
// mutates shared state, and it is guarded. Treat it as a constant.
var SingletonMarks = Marks{MutatesSharedState: true, SingletonGuarded: true}

// LeadershipMarks are the marks to register a leader.Leadership with: every replica
// runs its campaign (so it needs no guard), and the campaign needs a process that
// keeps running. Fleet accepts it; Serverless refuses it. Treat it as a constant.
var LeadershipMarks = Marks{RequiresLongRunning: true}

// maxSingletonRelease bounds the release after the step, whatever the TTL.
const maxSingletonRelease = 5 * time.Second

// SingletonStep runs a start step on the one replica that takes a lock and skips it
// on the others. Make one with Singleton and register its Start and Stop methods as a
// warmup step's, with SingletonMarks.
type SingletonStep struct {
	lock        leader.Lock
	key, owner  string
	ttl         time.Duration
	start, stop func(context.Context) error
	log         *zap.Logger
	ran         atomic.Bool
}

// A SingletonOption configures a SingletonStep.
type SingletonOption func(*SingletonStep)

// WithSingletonLogger sets the logger told when the step runs or is skipped. The
// default discards it.
func WithSingletonLogger(l *zap.Logger) SingletonOption {
	return func(s *SingletonStep) {
		if l != nil {
			s.log = l
		}
	}
}

// Singleton guards a start step (and its optional stop) with lock under key: the
// replica whose Start acquires the lock runs start and then releases the lock;
// replicas that find it held skip start, because the holder is doing the work; stop
// runs only on a replica whose start ran. owner identifies this replica.
//
// The lock is held only while start runs, without renewal: size ttl well above
// start's longest run, or a second replica may start while the first still runs.
// start must be idempotent ("ensure …"): a replica that starts after the holder
// released finds the lock free and runs it again. For work that must stay on one
// replica for the life of the process, use a leader.Leadership instead.
//
// Singleton validates its arguments and returns a *fault.ConfigError (fault.ConfigError)
// listing every problem; it sends nothing to the lock.
func Singleton(lock leader.Lock, key, owner string, ttl time.Duration, start, stop func(ctx context.Context) error, opts ...SingletonOption) (*SingletonStep, error) {
	var l fault.Problems
	if lock == nil {
		l.Addf("lock", "must not be nil")
	}
	switch {
	case key == "":
		l.Addf("key", "must not be empty")
	case strings.HasSuffix(key, leader.WantSuffix):
		l.Addf("key", "must not end in %q, which is reserved for handoff requests, got %q", leader.WantSuffix, key)
	}
	if owner == "" {
		l.Addf("owner", "must not be empty")
	}
	if ttl <= 0 {
		l.Addf("ttl", "must be positive, got %v", ttl)
	}
	if start == nil {
		l.Addf("start", "must not be nil")
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	s := &SingletonStep{lock: lock, key: key, owner: owner, ttl: ttl, start: start, stop: stop, log: zap.NewNop()}
	for _, o := range opts {
		o(s)
	}
	s.log = s.log.With(zap.String("singleton", key), zap.String("owner", owner))
	return s, nil
}

// Start acquires the lock. When it is held elsewhere, Start logs the skip and returns
// nil. When acquired, Start runs start with ctx, then releases the lock (within the
// TTL, at most 5 s, even when ctx is done) and returns start's error. An acquire that
// fails for another reason (the backend is down) is returned wrapped: whether the
// step ran somewhere cannot be told, so startup should not go on as if it had.
func (s *SingletonStep) Start(ctx context.Context) error {
	lease, err := s.lock.Acquire(ctx, s.key, s.owner, s.ttl)
	if errors.Is(err, leader.ErrHeld) {
		s.log.Info("singleton step skipped: another replica holds the lock and runs it")
		return nil
	}
	if err != nil {
		return fmt.Errorf("singleton %q: acquire: %w", s.key, err)
	}
	s.ran.Store(true)
	s.log.Info("singleton step running on this replica", zap.Uint64("token", lease.Token))
	begun := time.Now()
	runErr := s.start(ctx)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(s.ttl, maxSingletonRelease))
	defer cancel()
	switch err := s.lock.Release(rctx, lease); {
	case errors.Is(err, leader.ErrNotHeld):
		s.log.Warn("singleton lock lapsed before the step finished; another replica may have run it too: raise the TTL",
			zap.Duration("ttl", s.ttl), zap.Duration("took", time.Since(begun)))
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
