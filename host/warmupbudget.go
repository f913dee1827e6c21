package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/servicewright/servicewright/hooks"
	"github.com/servicewright/servicewright/internal/safe"
)

// warmupStep runs one step's Start under the warmup stage's ctx, which expires with
// Budgets.WarmupTimeout (cause ErrWarmupTimeout) and is cancelled by a stop or by a
// failing sibling. A step that has not returned hooks.AbandonAfter after its ctx is
// done is abandoned: startup does not wait on a step that ignores its ctx. A step
// still running when the budget expired fails with an error wrapping
// ErrWarmupTimeout; the caller names the step.
func (r *run) warmupStep(ctx context.Context, s Step) error {
	err := safe.Bounded(ctx, fmt.Sprintf("warmup %q", s.Name), hooks.AbandonAfter, s.Start)
	if err != nil && errors.Is(context.Cause(ctx), ErrWarmupTimeout) {
		return fmt.Errorf("%w (%s) while it was still running: %w", ErrWarmupTimeout, r.h.budgets.WarmupTimeout, err)
	}
	return err
}
