package host

import (
	"fmt"
	"time"

	"github.com/servicewright/servicewright/health"
)

// Stage is a step of the Host's sequence, in the order they run. Its String is the
// name used everywhere: the shutdown budget line, the shutdown report, the stage
// metrics' label and /debug/lifecycle.
type Stage int32

const (
	StageCreated      Stage = iota // New returned; Run not called yet
	StageBootstrap                 // the probe listener opens
	StageOpenScope                 // the container's OnStart hooks run (pools open)
	StageWarmup                    // warmup steps, by priority group
	StagePreStart                  // pre_start hooks
	StageBind                      // Bind on each entrypoint, in order
	StagePostStart                 // readiness true, then post_start hooks
	StageServe                     // every Serve runs
	StageDrainDelay                // readiness false; the drain delay passes, everything accepting
	StageDrainHooks                // drain hooks share their budget
	StageDrain                     // Drain on every bound entrypoint at once
	StageStop                      // Stop on each bound entrypoint, in reverse; Serve returns
	StagePreShutdown               // pre_shutdown hooks, container still open
	StageWarmupStop                // warmup steps' Stop, in reverse
	StageCloseScope                // the container's OnStop hooks run (pools close)
	StageFlush                     // spans, metrics and logs are flushed
	StagePostShutdown              // post_shutdown hooks
	StageCloseProbes               // the probe listener closes
	StageStopped                   // Run is about to return
)

var stageNames = [...]string{
	"created", "bootstrap", "open_scope", "warmup", "pre_start", "bind", "post_start", "serve",
	"drain_delay", "drain_hooks", "drain", "stop", "pre_shutdown", "warmup_stop", "close_scope",
	"flush", "post_shutdown", "close_probes", "stopped",
}

func (s Stage) String() string {
	if s >= 0 && int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("Stage(%d)", int32(s))
}

// Event is what an observer (WithObserver) is told each time the Host enters a stage.
type Event struct {
	Stage     Stage
	Readiness health.Status // readiness when the stage was entered
	At        time.Time
}
