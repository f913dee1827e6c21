// Command openloop measures overload as a client fleet sees it, the second harness
// beside bench/peers: a server with a 2 ms CPU handler at GOMAXPROCS=1 pinned to one
// core (taskset), and on the other core a load generator shaped like vegeta — every
// request sent at its scheduled instant from a goroutine of its own, through
// net/http's Transport with as many keep-alive connections as the load needs —
// for 10 s at a trickle (0.1× capacity: the unloaded latency), 0.5× and 4×.
//
// Each admitted (2xx) request's latency is taken twice: from the moment the
// request was sent, as vegeta reports it, and from its scheduled instant, which is
// what a client that meant to send then waits (no coordinated omission: a sender
// held up by the generator still counts its wait). It prints goodput (2xx within
// 1 s, per second, over capacity) and the p99 of the admitted requests over the
// unloaded p99, for bare net/http (the baseline) and httpentry (admission on).
//
//	go run ./internal/cmd/openloop             # both servers, 10 s per level
//	go run ./internal/cmd/openloop -measure 5s -servers httpentry
//
// OPENLOOP_SERVER_CPU and OPENLOOP_CLIENT_CPU choose the two cores (default 1 and
// 0); on a machine of one CPU, or without taskset, both run unpinned and the
// header says so. Below the table, a line per level says how much of the span the
// server ran (from /proc/<pid>/task/*/schedstat), its CPU per 2xx, the refusals per
// second and the connections the generator opened: a CPU-bound server at 4× its
// capacity that ran much less than the whole span was waiting for a neighbour on
// its core, and its figures are the neighbour's. OPENLOOP_PROFILE=file writes each
// server's CPU profile there (the last server's survives).
//
// What it measures that bench/peers does not. Both send open-loop and count latency
// from each request's scheduled instant; they differ in the client and the machine.
// bench/peers's generator is a hand-written HTTP/1.1 client with at most 512
// connections, a request waiting for a free one (as wrk2), and it pins only the
// server, only when PEERS_SERVER_CPU is set (make bench does not): the server never
// sees a connection opened under load, and the generator's CPU shares the server's
// cores. Here every request is an ordinary net/http client request, which opens a
// connection whenever none is idle — the accept, the new connection's goroutine and
// the request's read all wait in the server's run queue before any Gate can refuse
// them — on a core of its own. This harness is what a fleet of ordinary clients
// sees; bench/peers compares limiters with each other at a generator cost low and
// equal for all, and reports the median of three runs per cell, which hides a bad
// run's tail. Take the p99 bound from here.
package main
