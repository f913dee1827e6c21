package host

import (
	"cmp"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/servicewright/servicewright/fault"
	"github.com/servicewright/servicewright/hooks"
)

// lifecycle is the hooks and drain hooks of a service. The Host reads them from two
// registries, AppSpec.Lifecycle and its own (the one the container is given, which
// also holds the container's "hooks" group), and settles them once per run, when
// startup reaches pre_start.
type lifecycle struct {
	hooks  map[hooks.Kind][]hooks.Hook
	phases []hooks.DrainHook
}

var hookKinds = []hooks.Kind{hooks.PreStart, hooks.PostStart, hooks.PreShutdown, hooks.PostShutdown}

// currentLifecycle merges what both registries hold now: AppSpec.Lifecycle's hooks
// first, then the container's; the phases of both sorted by Order, stably.
func (h *Host) currentLifecycle() lifecycle {
	lc := lifecycle{hooks: map[hooks.Kind][]hooks.Hook{}}
	for _, reg := range []*hooks.Registry{h.spec.Lifecycle, h.lifecycle} {
		if reg == nil {
			continue
		}
		for _, k := range hookKinds {
			lc.hooks[k] = append(lc.hooks[k], reg.Hooks(k)...)
		}
		lc.phases = append(lc.phases, reg.DrainHooks()...)
	}
	slices.SortStableFunc(lc.phases, func(a, b hooks.DrainHook) int { return cmp.Compare(a.Order, b.Order) })
	return lc
}

func (lc lifecycle) size() int {
	n := len(lc.phases)
	for _, hs := range lc.hooks {
		n += len(hs)
	}
	return n
}

// settleLifecycle fixes the lifecycle of this run with what was registered up to now
// — including what the container's OnStart hooks and the warmup steps added to either
// registry since New — validated as New validates it. When the worst case grew, the
// shutdown budget is logged again. A problem is a *fault.ConfigError: startup fails.
func (h *Host) settleLifecycle() (lifecycle, error) {
	lc := h.currentLifecycle()
	var problems fault.Problems
	validateLifecycle(h.spec.Profile, lc, &problems)
	if err := problems.Err(); err != nil {
		return lifecycle{}, fmt.Errorf("hooks or drain hooks registered after New: %w", err)
	}
	h.mu.Lock()
	h.settled = &lc
	logged := h.logged
	h.mu.Unlock()
	if h.WorstCase().Total != logged {
		h.log.Info("hooks or drain hooks were registered during startup; logging the shutdown budget again")
		h.logBudgets()
	}
	return lc, nil
}

// refuseLate logs, at teardown, each hook or phase registered after the lifecycle was
// settled: it is not run, and the log says so.
func (h *Host) refuseLate(settled lifecycle) {
	now := h.currentLifecycle()
	if now.size() == settled.size() {
		return
	}
	for _, k := range hookKinds {
		for _, hk := range now.hooks[k][len(settled.hooks[k]):] {
			h.log.Error("hook registered after startup reached pre_start: refused, not run",
				zap.Stringer("kind", k), zap.String("hook", hk.Name))
		}
	}
	if len(now.phases) > len(settled.phases) {
		h.log.Error("drain hooks registered after startup reached pre_start: refused, not run",
			zap.Int("refused", len(now.phases)-len(settled.phases)))
	}
}
