// Package host runs a service through one sequence —
// Bootstrap → Warmup → Ready → Serve → Drain → Cleanup — so that a deploy, an
// autoscaler or a node going away costs nobody a request, a message or a write.
//
// A service is an AppSpec: its entrypoints (what takes work from outside), warmup
// steps, hooks, readiness checks, budgets and container (a Container; package
// host/hostfx makes one of fx modules, so that this package links no container). New
// validates all of it and reports every problem in one *fault.ConfigError; Run runs
// it. OTLP export from the OTEL_* variables is opt-in: Main(spec, otlp.FromEnv())
// with package host/otlp.
//
// # Startup
//
// Telemetry comes first (zap, OpenTelemetry, Prometheus), so every later failure is
// visible; then the spec is validated and the container built (New; a container's
// constructor that fails for a runtime reason is a *StartupError, exit 1, not a
// configuration error). Run opens the probe listener (answering "unavailable"),
// opens the container's scope (its OnStart hooks),
// warmup by priority group, pre_start hooks, and Bind on each entrypoint in Order;
// then readiness turns true, post_start hooks run, and every Serve starts. A failure
// in any of these tears down only what had started and is returned as a
// *StartupError. A stop that arrives during startup is honoured at the next stage
// boundary: nothing more is bound, readiness never turns true, and it is not a failure.
//
// # Shutdown
//
// A stop — ctx cancelled, Shutdown.Begin, a first SIGTERM under Main, or an essential
// entrypoint's failure — cancels one stop signal, owned by the Shutdown handle, and
// runs, in order: readiness false; DrainDelay with every entrypoint still accepting;
// drain hooks sharing DrainHooksBudget (after a complete startup only); Drain on
// every bound entrypoint at once, each with the whole DrainGrace window; Stop on each
// in reverse Order, each under StepTimeout; pre_shutdown hooks with the container
// still open; warmup steps' Stop and the container's OnStop hooks; telemetry flush;
// post_shutdown hooks; the probe listener closes; and one "shutdown report" log line.
// Shutdown hooks run only when startup reached pre_start. Every wait has a limit, and
// WorstCase, logged at startup, sums them, PreStop's path included: a step that hangs
// is abandoned and reported, never allowed to block the steps after it. The result is
// settled before the post_shutdown hooks run; a telemetry flush that cannot deliver is
// a warning and a count (telemetry_undelivered), never the exit's failure.
//
// # Plain wiring
//
// The *Host that New returns gives what it built first — Logger, Registerer and
// Gatherer, TracerProvider, MeterProvider, Instance, Shutdown — so entrypoints built
// outside an fx container use them, then join with Register before Run.
//
// # Errors and exit codes
//
// ExitCode maps what Run returns to ExitOK (0, graceful), ExitFailure (1: a failure, a
// failed cleanup step or an exit that overran its budgets), ExitPermanent (3: a task's
// failure marked by fault.Permanent), ExitInterrupted (75: a task stopped before it was
// done) or ExitConfig (78: invalid configuration). A budget overrun never masks the
// failure that caused the shutdown, and the report's result (success, failure, timeout
// or interrupted) is what Shutdown.Result says. Main adds ExitSignal+signum for
// a second SIGINT, SIGTERM or SIGHUP; SIGQUIT is left to Go's runtime (ExitQuit, 2).
package host
