package health

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Check answers whether one dependency the process needs is reachable. Health returns
// nil when it is. A failing check degrades readiness (200 "degraded") unless it is
// declared with Gating, which makes it withdraw readiness (503): see Gating for the
// rule and its reason. It should return soon after ctx is done: the evaluator
// stops waiting at the check's timeout and cancels ctx then, but the goroutine running
// Health ends only when Health returns.
//
// The error's message is never served (it may carry a DSN or a password); the probe body
// shows only its type. See Readiness.
type Check interface {
	Health(ctx context.Context) error
}

// Gating declares that c's failure means this replica cannot take traffic, so that
// readiness is withdrawn (503) while it fails. Use it for what belongs to this
// replica alone: its own sidecar, its local disk, a cache it must load, a pool it
// exhausted. Gating(nil) is nil, which NewReadiness and NewMonitor refuse. It keeps
// a timing given with Every, in either order.
//
// A check not declared gating only degrades readiness: while it fails /readyz answers
// 200 with status "degraded" and the check named, and the failure is logged. That is
// the default because the dependencies a service checks are nearly always shared by
// every replica — the database, the cache, the broker — and a check on a shared
// dependency fails on every replica at once: withdrawing readiness for it takes the
// whole fleet out of the load balancer together, including the routes that do not
// need the dependency, and leaves callers no backend at all instead of a fast error
// from the one route that does. Readiness answers "can this replica take traffic?";
// whether the dependency is up is the same answer on every replica, and belongs to
// the status, the logs and the dependency's own alerts.
func Gating(c Check) Check {
	if isNil(c) {
		return nil
	}
	d := declarationOf(c)
	d.gates = true
	return d
}

// Every declares c's own timing: a running Monitor runs it every interval, each run
// under timeout, instead of MonitorConfig.CheckInterval and CheckTimeout. A zero
// interval or timeout keeps the Monitor's. A negative one, or a timeout not shorter
// than the interval it ends up with, is refused by NewMonitor (and NewReadiness) with
// a *fault.ConfigError naming Checks[name].Interval or Checks[name].Timeout. Every(nil,
// …) is nil. It keeps a Gating declaration, in either order.
//
// Give a slow or expensive dependency a longer interval; give one whose failure must
// be noticed quickly a short one. The interval is the query rate the process adds to
// the dependency, whatever the number of probes.
func Every(c Check, interval, timeout time.Duration) Check {
	if isNil(c) {
		return nil
	}
	d := declarationOf(c)
	d.interval, d.timeout = interval, timeout
	return d
}

// declared is a Check with what Gating and Every declared of it; it delegates
// Health to the check it wraps.
type declared struct {
	Check
	gates             bool
	interval, timeout time.Duration // 0: the Monitor's
}

func declarationOf(c Check) declared {
	if d, ok := c.(declared); ok {
		return d
	}
	return declared{Check: c}
}

// CheckFunc adapts a function to Check.
type CheckFunc func(ctx context.Context) error

// Health calls f(ctx).
func (f CheckFunc) Health(ctx context.Context) error { return f(ctx) }

var _ Check = CheckFunc(nil)

// Pinger is a client with a context-aware Ping, such as *pgxpool.Pool or *pgx.Conn.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Postgres checks a PostgreSQL client, normally a *pgxpool.Pool, with its Ping (an
// empty query on a pooled connection). It takes the Pinger interface rather than the
// pool type so this package does not link pgxpool; any client with Ping(ctx) error
// fits. A *pgx.Conn fits too, but it is not safe for concurrent use, and probes run
// concurrently: give it a lock of its own. Postgres(nil) returns nil, which
// NewReadiness and NewMonitor refuse.
func Postgres(p Pinger) Check {
	if p == nil {
		return nil
	}
	return CheckFunc(p.Ping)
}

var errNoAddress = errors.New("health: Dial check has no address")

// Dial checks that at least one of addrs accepts a connection on network ("tcp" for
// Kafka brokers): the addresses are dialled concurrently, the first connection that
// succeeds ends the check healthy and cancels the others, and every connection opened
// is closed at once. When all fail the error joins theirs. With no address the check
// always fails. Health returns only after every dial it started has returned; dials
// honour ctx.
func Dial(network string, addrs ...string) Check {
	addrs = append([]string(nil), addrs...)
	return CheckFunc(func(ctx context.Context) error {
		if len(addrs) == 0 {
			return errNoAddress
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs = make([]error, len(addrs))
			ok   bool
		)
		var d net.Dialer
		for i, a := range addrs {
			wg.Go(func() {
				c, err := d.DialContext(ctx, network, a)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs[i] = err
					return
				}
				c.Close()
				ok = true
				cancel()
			})
		}
		wg.Wait()
		if ok {
			return nil
		}
		return errors.Join(errs...)
	})
}
