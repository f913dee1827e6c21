package leader

import (
	"github.com/servicewright/servicewright/entrypoint"
	"github.com/servicewright/servicewright/lock"

	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/servicewright/servicewright/internal/testenv"
)

var env testenv.Env

// TestMain starts the package's services once; testenv.Run stops them and then
// checks for leaked goroutines with goleak.Find, as goleak.VerifyTestMain would.
func TestMain(m *testing.M) {
	if os.Getenv(replicaEnv) != "" { // a replica process of the process tests
		os.Exit(replicaMain())
	}
	os.Exit(testenv.Run(m, &env, testenv.WithRedis(), testenv.WithPostgres()))
}

// Timings of the virtual-time tests: life = TTL − Margin − YieldGrace − ReleaseTimeout = 8s.
const (
	vTTL     = 12 * time.Second
	vCE      = time.Second
	vRenew   = 4 * time.Second
	vYield   = 2 * time.Second
	vRelease = time.Second
	vMargin  = time.Second
	vLife    = vTTL - vMargin - vYield - vRelease
)

func vSpec(lock lock.Lock, owner string) Config {
	return Config{Lock: lock, Key: "job", Owner: owner, TTL: vTTL, CampaignEvery: vCE,
		YieldGrace: vYield, ReleaseTimeout: vRelease, Margin: vMargin}
}

// call is one call a spyLock saw.
type spyCall struct {
	op, key, owner string
	token          uint64
	at             time.Time
	err            error
}

// spyLock records every call to the lock.Lock it wraps, and lets a test make a call fail,
// block or land late through hooks run before the call is passed on. A hook that
// returns an error fails the call without passing it on; failAfter makes the call
// land and then return the error (an answer lost after it landed).
type spyLock struct {
	lock.Lock
	mu      sync.Mutex
	calls   []spyCall
	acquire func(ctx context.Context, key, owner string) (err error, failAfter bool)
	renew   func(ctx context.Context, l lock.Lease) error
	release func(ctx context.Context, l lock.Lease) error
	inspect func(ctx context.Context, key string) error
}

func (s *spyLock) record(c spyCall) {
	c.at = time.Now()
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *spyLock) hooks() *spyLock {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &spyLock{acquire: s.acquire, renew: s.renew, release: s.release, inspect: s.inspect}
	return h
}

func (s *spyLock) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (lock.Lease, error) {
	var lost error
	if h := s.hooks().acquire; h != nil {
		err, after := h(ctx, key, owner)
		if err != nil && !after {
			s.record(spyCall{op: "acquire", key: key, owner: owner, err: err})
			return lock.Lease{}, err
		}
		lost = err
	}
	l, err := s.Lock.Acquire(ctx, key, owner, ttl)
	s.record(spyCall{op: "acquire", key: key, owner: owner, token: l.Token, err: errors.Join(err, lost)})
	if lost != nil {
		return lock.Lease{}, lost
	}
	return l, err
}

func (s *spyLock) Renew(ctx context.Context, l lock.Lease) error {
	err := func() error {
		if h := s.hooks().renew; h != nil {
			if err := h(ctx, l); err != nil {
				return err
			}
		}
		return s.Lock.Renew(ctx, l)
	}()
	s.record(spyCall{op: "renew", key: l.Key, owner: l.Owner, token: l.Token, err: err})
	return err
}

func (s *spyLock) Release(ctx context.Context, l lock.Lease) error {
	err := func() error {
		if h := s.hooks().release; h != nil {
			if err := h(ctx, l); err != nil {
				return err
			}
		}
		return s.Lock.Release(ctx, l)
	}()
	s.record(spyCall{op: "release", key: l.Key, owner: l.Owner, token: l.Token, err: err})
	return err
}

func (s *spyLock) Inspect(ctx context.Context, key string) (lock.Holder, error) {
	if h := s.hooks().inspect; h != nil {
		if err := h(ctx, key); err != nil {
			return lock.Holder{}, err
		}
	}
	h, err := s.Lock.Inspect(ctx, key)
	s.record(spyCall{op: "inspect", key: key, owner: h.Owner, token: h.Token, err: err})
	return h, err
}

func (s *spyLock) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// find returns the calls matching op, key and owner ("" matches any), and when ok
// is set only those that succeeded.
func (s *spyLock) find(op, key, owner string, ok bool) []spyCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.calls), func(c spyCall) bool {
		return c.op != op || (key != "" && c.key != key) || (owner != "" && c.owner != owner) || (ok && c.err != nil)
	})
}

// replica is a Leadership served as the Host would: Bind, Serve until stop, Drain, Stop.
type replica struct {
	t      *testing.T
	l      *Leadership
	logs   *observer.ObservedLogs
	reg    *prometheus.Registry
	stop   chan struct{}
	served chan error
	once   sync.Once
}

func startReplica(t *testing.T, conf Config, lead func(context.Context, *Term) error, opts ...Option) *replica {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	reg := prometheus.NewRegistry()
	opts = append([]Option{WithTelemetry(entrypoint.Telemetry{Logger: zap.New(core), Registerer: reg})}, opts...)
	l, err := New(conf, lead, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := l.Bind(context.Background()); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	r := &replica{t: t, l: l, logs: logs, reg: reg, stop: make(chan struct{}), served: make(chan error, 1)}
	go func() { r.served <- l.Serve(context.Background(), r.stop) }()
	t.Cleanup(func() { r.shutdown() })
	return r
}

// stopServing closes stop and checks Serve returned nil, once.
func (r *replica) stopServing() {
	r.once.Do(func() {
		close(r.stop)
		if err := <-r.served; err != nil {
			r.t.Errorf("Serve: %v", err)
		}
	})
}

// shutdown stops serving, then drains and stops, as the Host does. It returns how
// long Drain took.
func (r *replica) shutdown() (drain time.Duration) {
	r.stopServing()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	if err := r.l.Drain(ctx); err != nil {
		r.t.Errorf("Drain: %v", err)
	}
	drain = time.Since(begin)
	if err := r.l.Stop(ctx); err != nil {
		r.t.Errorf("Stop: %v", err)
	}
	return drain
}

func (r *replica) held() bool { return r.l.Leadership()[r.l.conf.Key].Held }

// ended reads servicewright_leadership_terms_ended_total for reason.
func (r *replica) ended(reason string) float64 {
	var m dto.Metric
	if err := r.l.m.ended.WithLabelValues(r.l.conf.Key, reason).Write(&m); err != nil {
		r.t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func (r *replica) gauge() float64 {
	var m dto.Metric
	if err := r.l.m.held.WithLabelValues(r.l.conf.Key).Write(&m); err != nil {
		r.t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// termLog records the terms a lead function saw.
type termLog struct {
	mu    sync.Mutex
	terms []termRec
}

type termRec struct {
	token      uint64
	begin, end time.Time
}

func (g *termLog) begin(t *Term) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.terms = append(g.terms, termRec{token: t.Token, begin: time.Now()})
	return len(g.terms) - 1
}

func (g *termLog) finish(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.terms[i].end = time.Now()
}

func (g *termLog) all() []termRec {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.terms)
}

// untilEnded is a lead that records its term and returns when the term ends.
func (g *termLog) untilEnded(_ context.Context, t *Term) error {
	i := g.begin(t)
	<-t.Ended()
	g.finish(i)
	return nil
}

func criticalLogs(logs *observer.ObservedLogs) int {
	n := 0
	for _, e := range logs.FilterLevelExact(zap.ErrorLevel).All() {
		if e.ContextMap()["severity"] == "critical" {
			n++
		}
	}
	return n
}
