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
// 0); on a machine of one CPU both run unpinned.
package main
