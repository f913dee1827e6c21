// Package admission decides how much concurrent work an entrypoint admits, so that
// under overload it refuses the surplus at once instead of queueing it until every
// client times out.
//
// A Limiter keeps a concurrency limit that adapts to the latency it measures; an
// entrypoint.Gate given a Limiter (Gate.SetLimiter) refuses an ordinary unit of work
// while the units in flight are at the limit, and feeds the latency of a sample of
// the admitted ones back to the Limiter. httpentry and grpcentry do this by default;
// a custom entrypoint uses the same Gate and Limiter.
//
// The Limiter watches two signals. Latency in the handlers moves a concurrency
// limit: the controller is a gradient limiter after Netflix's concurrency-limits
// (GradientLimit and Gradient2Limit, github.com/Netflix/concurrency-limits) with the
// no-load latency measured as Envoy's adaptive concurrency filter measures its
// minRTT (at the minimum concurrency, periodically). The queue in front of the
// handlers — runnable goroutines waiting for a CPU, which a concurrency limit cannot
// see — decides whether the process is saturated, as CoDel judges a queue by how
// long its packets wait; while it is, an ordinary unit is admitted only while the
// scheduler's run queue is short, as a bounded queue drops what arrives when it is
// full: see Limiter.
//
// Routes of different cost need not share a limit: Limiter.NewClass gives a class
// of routes a limit and a latency baseline of its own (Gate.AdmitTo admits through
// it; httpentry.WithRouteClass and grpcentry.WithRouteClass declare one), so that a
// slow write route does not drag down the limit of the cheap reads beside it.
//
// Every knob of Config has a floor and a ceiling that keep the controller
// meaningful, and New refuses a value outside them; whatever it measures, the limit
// stays a number within [MinLimit, MaxLimit] (FuzzLimiter).
//
// Why not a library. failsafe-go's adaptivelimiter allocates a permit per request,
// reads the wall clock twice per request, takes one mutex per completion and brings
// a t-digest and failsafe-go's policy packages (its module requires gRPC);
// go-concurrency-limits likewise allocates a listener per request behind a mutex and
// is not obtainable from the module proxy this project builds against. Neither fits
// a lock-free gate whose enter+leave costs a few atomic operations; the controller
// itself is some eighty lines.
package admission
