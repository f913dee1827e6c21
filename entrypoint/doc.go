// Package entrypoint defines how work gets into a servicewright service, and the two
// building blocks every kind of entrypoint shares: the Gate and the Loop.
//
// Where to start: to serve HTTP, gRPC, Kafka or cron, use the package of that kind
// (httpentry, grpcentry, kafkaentry, cronentry). Here, NewLoop makes a background
// poller, NewTask a run-to-completion job (a migration, a backfill), and Runner is
// the base of an entrypoint of your own; the rest is what they share.
//
// # Lifecycle
//
// An Entrypoint is whatever takes work from outside the process: an HTTP listener, a
// Kafka consumer, a scheduler, a background poller. The Host drives each one through
// four calls, each at most once, so that stopping a replica costs nobody a request, a
// message or a write:
//
//  1. Bind acquires what the entrypoint needs — a socket, a subscription — but takes
//     no work yet. Binding happens at startup, in registration order, before
//     readiness turns true; a failure aborts startup.
//  2. Serve takes work until its stop channel closes, and then returns soon after
//     while it is STILL taking work. The Host has withdrawn readiness at that point
//     and waits out a drain delay so that load balancers stop sending traffic; an
//     entrypoint that stopped accepting now would refuse requests still on their
//     way.
//  3. Drain stops intake, refusing late work in a way the sender can retry elsewhere,
//     and waits for the work in flight. Its ctx carries the drain grace: when that
//     expires Drain returns ctx.Err() and leaves whatever still runs to Stop.
//  4. Stop cuts off what Drain left behind and releases everything, by its ctx's
//     deadline. An entrypoint whose Stop does not return in time is abandoned and
//     reported; it does not hold up the others.
//
// The Host calls Drain on every entrypoint at once, each with the whole drain window,
// so that none keeps accepting while another drains; Stop runs in reverse bind order.
// The package does not order entrypoints, handle signals or enforce budgets; the host
// package does.
//
// # Gate
//
// A Gate is the admission control and in-flight count behind Drain. Each unit of work
// calls Enter and, if admitted, the returned leave when it is done; Drain calls Close,
// so later Enters are refused, and then Wait, which returns when the last admitted unit
// has left or when its ctx expires. An Enter that races with Close is either counted
// before Close returns or refused, so Wait never misses admitted work. Enter and leave
// take no lock and allocate nothing; Wait does not poll. A Gate neither refuses work
// on its own (the entrypoint decides what a refusal looks like, an HTTP 503 or an
// uncommitted offset) nor cancels work in flight.
//
// # Loop
//
// NewLoop turns a function into an entrypoint for background work that has no caller to
// refuse: relays, pollers, sweepers. It runs one unit at a time, waiting
// LoopConfig.Every between units — exactly Every unless LoopConfig.Jitter (default 0)
// widens each wait to Every ± Jitter, which spreads replicas that would otherwise run
// in step. Serve returns at stop with the loop still running; Drain
// stops it between units without interrupting the one running; Stop cancels the
// running unit's ctx. A unit that fails or panics is logged and retried after a
// jittered exponential backoff, so a broken dependency neither kills the service nor
// is hammered by it. Like every component of the module, it is built by a
// constructor that checks its LoopConfig at once and reports every problem in one
// *fault.ConfigError.
//
// # Shared helpers
//
// Base is what every entrypoint of the module holds, written once: the call-order
// guard under its lock (one error format wrapping ErrOutOfTurn), the rules that make
// Drain and Stop do nothing when there is nothing to undo (Turn), and SetDefaults,
// which takes the Host's Telemetry for what the entrypoint's WithTelemetry option
// left nil. Spread closes long-lived connections or
// streams a few at a time over a window, for a drain that moves clients elsewhere
// gradually.
//
// # Writing one by hand
//
// Runner is the safe base for a hand-written entrypoint: it is a Base that runs the
// work in a goroutine it owns, gives the work a draining channel, and implements Drain
// (wait for the work, then for the units it admitted through the Runner's Gate), Stop
// (cut the work's ctx; safe before Serve and twice) and InFlight; Init and
// SetDefaults hand it the telemetry the entrypoint reports through. The entrypoint
// supplies only its Name, its Bind and its Work.
//
// A network entrypoint adds a conntrack.Tracker (package entrypoint/conntrack) on its
// listener: connections busy while they read or answer a request and idle between
// requests, and a drain that answers the connections queued in the kernel's accept
// queue, tells idle connections goodbye and closes them spread over a window, closes
// busy ones after their answer, and waits for them without polling; a connection cap
// too. Its Drain calls the Tracker's Drain then the Runner's, its Stop the Tracker's
// Close then the Runner's, its DrainReport the Tracker's Report. httpentry is built on
// the same Tracker; the README's line server is a complete example.
//
// # Capabilities the Host looks for
//
// Beyond the four methods, the Host asks each registered entrypoint for these optional
// interfaces, and uses each one it finds:
//
//	interface                  method                          the Host uses it for
//	entrypoint.InFlighter      InFlight() int                  /debug/lifecycle, the drain report
//	entrypoint.DrainReporter   DrainReport() string            the shutdown report (conntrack.Tracker.Report)
//	entrypoint.StatusDetailer  StatusDetail() string           /debug/lifecycle's detail
//	entrypoint.DrainTimer      DrainTime() time.Duration        refusing a DrainGrace too short for it
//	entrypoint.DefaultsUser    SetDefaults(Telemetry) error     the Host's logger, registry, tracing
//	entrypoint.Finite          Finished() bool                 a task: its end ends the service
//	fleet.Marker               Marks() fleet.Marks             the fleet posture check
//	health.MonitorUser         UseMonitor(*health.Monitor)     following readiness (gRPC health)
//	host.Campaigner            Leadership() map[string]lock.Status  /debug/lifecycle's leadership
//
// The last three live beside the types they return, which this package may not import.
package entrypoint
