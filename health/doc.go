// Package health tells load balancers and Kubernetes where a process stands in the
// servicewright sequence (Bootstrap → Warmup → Ready → Serve → Drain → Cleanup), and
// whether the dependencies it cannot serve without are reachable.
//
// Where to start: a service gives its readiness checks to the Host
// (host.AppSpec.Checks), which serves the probes; a Check is any value with a Check
// method, CheckFunc adapts a function, Postgres and Dial check the usual backends,
// Gating makes a failure withdraw readiness instead of degrading it, and Every gives
// a check its own timing. The rest of this package is what the Host builds on.
//
// # State
//
// A State is Unavailable from bootstrap until the Host has bound every entrypoint,
// Ready from then on, and Draining from the moment shutdown begins (or BeginDraining is
// called) until the process exits. Draining is final.
//
// # Probes
//
//   - Readiness (/readyz, NewReadiness): may traffic be routed here? 503
//     "unavailable" before Ready, 503 "draining" for the whole drain, so routing stops
//     before in-flight work is drained; when Ready, 200 "ok" when every check
//     passes, 200 "degraded" when a check on a shared dependency fails, and 503
//     "failing" when a check declared with Gating fails, with a per-check
//     breakdown (see "Readiness is about this replica" below).
//   - Liveness (/livez): is the process alive? Always 200, no check. Point liveness
//     here and not at readiness: a draining process is alive but not ready, and one
//     endpoint answering both gets the pod killed mid-drain.
//   - Startup (/startupz): has the process finished starting? 503 until it was first
//     Ready, then 200 for good.
//
// # Checks
//
// A Check is anything with Health(ctx) error; Postgres and Dial adapt the usual
// clients (rediskit has Redis's). Nothing is discovered: name each dependency readiness
// depends on.
//
// A started Monitor (Monitor.Start; the Host starts its own) runs each check in the
// background, one run at a time, every CheckInterval (5s) under CheckTimeout (2s), or
// the check's own timing (Every), and every answer — /readyz, Evaluate, Subscribe, the
// gRPC health service — is read from the last results, with their age: a probe never
// waits on a dependency and never adds load to one. A run not answered at its timeout
// is failing, "timed out after 2s"; the check is not run again until that call
// returns; after three intervals without an answer its entry is stale. Failures are
// logged when they begin and recoveries when they end, not per probe. Startup waits
// for the first results (AwaitFirst).
//
// Before Start, and for the handler of NewReadiness, each answer runs the checks
// concurrently instead, each under its own CheckTimeout. The budget is per check, not
// per sweep, deliberately: a driver retrying an unreachable server past a sweep-wide
// deadline would cancel every check and leave an empty breakdown in exactly the
// situation the breakdown is for.
//
// # Readiness is about this replica
//
// Readiness answers one question: can this replica take traffic? A load balancer
// acts on it per replica, so it must not depend on anything every replica shares.
// A check on a shared dependency (the database, the cache, the broker) fails on
// every replica at the same moment; if it withdrew readiness, a blip of that
// dependency would take the whole fleet out of rotation at once — the routes that do
// not need it included — and leave callers with no backend at all instead of a fast
// error from the one route that does. So a failing check degrades: /readyz still
// answers 200, with status "degraded", the check named and its failure type in the
// body, a Warn line naming it with readiness=degraded, and (through a Monitor)
// transports still serving. That is the default, because the checks a service
// registers are nearly always on shared dependencies.
//
// A check on something this replica alone has — its sidecar, its local disk, a cache
// it must load, a pool it exhausted — is declared with Gating: its failure withdraws
// readiness (503 "failing", readiness=withdrawn in the log), and the load balancer
// moves the traffic to the replicas that can take it. Before Ready and while
// draining the state alone decides, as before.
//
// A check reports failure and never becomes one: its panic is recovered, and its error
// is reported by type (*net.OpError), not by message. A driver's message routinely
// carries the host, the user and sometimes the DSN, and the body is served to anything
// that can reach the probe. Messages go to the logger instead. Keep the probe port
// internal, as /metrics.
//
// # Other transports
//
// A Monitor gives readiness to what is not an HTTP probe — the gRPC health service
// (grpcentry.WithHealth), a service registry: Evaluate answers once with the Answer
// /readyz would give, and Subscribe follows it, at once for a State (which says when it
// changes, through Changed) and by polling for any other Source, and at once for a
// change of a check's result on a started Monitor. A Monitor is also an http.Handler answering /readyz, so one set of
// checks gives the probe and the other transports the same answers.
//
// # The probe listener
//
// Processes that serve no HTTP (consumers, relays, schedulers) get the probes from the
// Host's probe listener, on a port of its own (":8079" by default; ListenerConfig, as
// host.AppSpec.Probes), stdlib net/http, which also serves /metrics and
// /debug/lifecycle. The Host starts it at bootstrap, before warmup, and closes it
// last, after cleanup, so it answers for the whole life of the process.
//
// Every constructor validates its input and returns a *fault.ConfigError (fault.ConfigError)
// naming each bad field; nothing panics on bad configuration.
package health
