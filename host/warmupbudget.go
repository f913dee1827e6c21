package host

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/safe"
	"github.com/servicewright/servicewright/internal/wait"
)

// How a warmup step that has not answered is reported: a first line after about
// warmupWaitLogAfter, then one at each step of a jittered backoff that doubles up to
// warmupWaitLogMax, until it returns or its ctx ends.
const (
	warmupWaitLogAfter = 2 * time.Second
	warmupWaitLogMax   = 30 * time.Second
)

// warmupStep runs one step's Start under the warmup stage's ctx, which expires with
// Budgets.WarmupTimeout (cause ErrWarmupTimeout) and is cancelled by a stop or by a
// failing sibling. While Start has not returned, a warning names the step and what
// it waits on (Step.Backend) within a few seconds, then again at a backoff
// (waitingOn). A step that has not returned hooks.AbandonAfter after its ctx is done
// is abandoned: startup does not wait on a step that ignores its ctx. A step still
// running when the budget expired fails with an error wrapping ErrWarmupTimeout and
// naming the backend; the caller names the step.
func (r *run) warmupStep(ctx context.Context, s Step) error {
	done := make(chan struct{})
	var reporter sync.WaitGroup
	reporter.Go(func() { r.waitingOn(ctx, s, done) })
	err := safe.Bounded(ctx, fmt.Sprintf("warmup %q", s.Name), hooks.AbandonAfter, s.Start)
	close(done)
	reporter.Wait()
	if err != nil && errors.Is(context.Cause(ctx), ErrWarmupTimeout) {
		return fmt.Errorf("%w (%s) while it was still running%s: %w", ErrWarmupTimeout, r.h.budgets.WarmupTimeout, onBackend(s), err)
	}
	return err
}

// waitingOn logs, until done or ctx ends, that step s has not answered yet: its name,
// its backend, how long it has waited and how much of the warmup budget is left.
func (r *run) waitingOn(ctx context.Context, s Step, done <-chan struct{}) {
	began := time.Now()
	deadline, _ := ctx.Deadline()
	b := wait.Backoff{Initial: warmupWaitLogAfter, Max: warmupWaitLogMax}
	for {
		t := time.NewTimer(b.Next())
		select {
		case <-done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		fields := []zap.Field{zap.String("step", s.Name), zap.Duration("waited", time.Since(began).Round(time.Millisecond))}
		if b := backendName(s.Backend); b != "" {
			fields = append(fields, zap.String("backend", b))
		}
		if !deadline.IsZero() {
			fields = append(fields, zap.Duration("budget_left", time.Until(deadline).Round(time.Millisecond)))
		}
		r.log().Warn("warmup step has not answered yet; still waiting", fields...)
	}
}

// onBackend is ", waiting on <backend>" for an error, or "" without one.
func onBackend(s Step) string {
	if b := backendName(s.Backend); b != "" {
		return ", waiting on " + b
	}
	return ""
}

// backendName is Step.Backend as it may be logged: a URL given by mistake loses its
// user and password, and its path and query (a DSN's options may carry a password).
func backendName(b string) string {
	if !strings.Contains(b, "://") {
		return b
	}
	u, err := url.Parse(b)
	if err != nil {
		return "(unparsable backend)"
	}
	return u.Scheme + " " + u.Host
}
