// Command peers measures overload protection: one CPU-bound handler (about 2 ms of
// CPU per request) in one server process at GOMAXPROCS=1, offered an open-loop load
// at 0.1× (the unloaded latency), 0.5×, 1×, 2× and 4× its measured capacity, served
// bare by net/http, by httpentry (adaptive admission on by default), behind go-zero's
// adaptive shedder and behind kratos's BBR limiter. It prints goodput (2xx answered within 1 s, per
// second) and the p99 of the admitted requests, as a markdown table, and for
// httpentry and grpcentry each level's p99 over the unloaded one. Latency counts
// from each request's scheduled instant; internal/cmd/openloop measures the same
// shape with a vegeta-like generator (net/http, a connection per outstanding
// request) and reports both that and the latency from the send.
//
// With -grpc it compares, the same way, bare grpc-go with grpcentry (admission on)
// on one unary method, peers.Burn/Do (a hand-written service descriptor, Empty in
// and out), burning the same CPU; a RESOURCE_EXHAUSTED or UNAVAILABLE is a refusal.
//
// It is its own module so that the framework's go.mod never requires the peers.
//
// Environment: PEERS_SERVER_CPU=1 pins each server process to that CPU (taskset),
// away from the load generator; PEERS_PROFILE=file writes each server's CPU profile
// there (the last server's survives); PEERS_DEBUG=1 prints httpentry's limit, in
// flight and shed counts every 250ms.
//
//	cd bench/peers && go run .
//	cd bench/peers && go run . -grpc
package main
