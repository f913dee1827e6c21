// Package hooks holds the application's own code that the Host runs at fixed points of
// its sequence: four kinds of hook, and drain hooks.
//
// # Hook points
//
// A hook is a Func, registered by name on a Registry. Hooks of one kind run one after
// the other, in registration order.
//
//   - PreStart runs after warmup and before the first entrypoint is bound. It is
//     fail-fast: the first hook that fails (or panics) stops the rest and aborts startup.
//     Migrations and one-off checks belong here.
//   - PostStart runs right after readiness turns true, before entrypoints serve. It is
//     fail-fast too: a failure aborts startup and the service goes to cleanup.
//   - PreShutdown runs after every entrypoint has drained and stopped, while the
//     application scope (the fx container) is still open, so its pools and clients still
//     work: flush the outbox, send final events. It is best-effort: each hook is
//     time-boxed, a failure is logged, and the next hook still runs.
//   - PostShutdown runs last, after the application scope has closed and telemetry has
//     been flushed. Best-effort, like PreShutdown. Only what the hook brings with it is
//     still usable; its logs may not reach an exporter that has already shut down.
//
// The Host runs them with those two disciplines; hooks registered while it starts are
// taken in when startup reaches pre_start. Shutdown hooks run only when startup
// reached pre_start: none runs after a failure in the container's start or in warmup.
//
// # Drain hooks
//
// A drain hook is work that has to happen while the replica still serves but is on its
// way out: handing a lease to another replica, closing long-lived streams gently over a
// window so their clients reconnect elsewhere a few at a time. The Host runs the phases
// once per run, after readiness has been withdrawn and the drain delay has passed, while
// every entrypoint still accepts, and before the entrypoints drain.
//
// Phases run in ascending Order (registration order among equals) and share one budget,
// and only after a complete startup. The Host gives each phase min(MaxDuration, budget
// left) and tells it that figure, cancels one that overruns it (its ctx's cause is
// ErrDrainHookDeadline), abandons one that ignores the cancellation AbandonAfter later,
// skips one that would get less than 100ms, and moves on after a phase that
// fails. The shutdown report says what happened to each.
//
// Nothing here validates registrations or applies fleet marks: the Host checks names,
// functions and durations and reports every problem in one ConfigError, and applies
// fleet.Profile.Check to each hook's and phase's Marks.
package hooks
