package main

import "fmt"

// outboxFigures runs the outbox package's BenchmarkPublish (one measurement per
// run, each on a fresh database and in-process broker): publishing through the
// outbox — a committed transaction, published by a Relay woken by its NOTIFY —
// beside a direct produce with the same producer, in the same process.
func outboxFigures(e env) ([]row, error) {
	r, err := goBench("./outbox/", "^BenchmarkPublish$", e.runs, "-benchtime", "1x")
	if err != nil {
		return nil, err
	}
	ob, direct := r["BenchmarkPublish/outbox"], r["BenchmarkPublish/direct"]
	for _, unit := range []string{"p50-ms", "p99-ms", "events/s"} {
		if len(ob[unit]) == 0 || len(direct[unit]) == 0 {
			return nil, fmt.Errorf("BenchmarkPublish: no %s in %v", unit, r)
		}
	}
	p50, p99, rate := median(ob["p50-ms"]), median(ob["p99-ms"]), median(ob["events/s"])
	dp50, dp99, drate := median(direct["p50-ms"]), median(direct["p99-ms"]), median(direct["events/s"])
	return []row{{
		Figure:   "outbox publish latency, commit → consumer, 300 events one at a time (`-only outbox`)",
		Target:   "p50 within 10 ms of a direct produce: a NOTIFY round trip, not the relay's 1 s tick",
		Measured: fmt.Sprintf("p50 %.1f ms, p99 %.1f ms", p50, p99),
		Baseline: fmt.Sprintf("direct produce (call → consumer): p50 %.1f ms, p99 %.1f ms", dp50, dp99),
		Verdict:  verdict(p50 <= dp50+10),
	}, {
		Figure:   "outbox throughput, 8 writers × 250 events, a transaction each",
		Target:   "≥ 0.5× a direct produce (one WriteMessages per event)",
		Measured: fmt.Sprintf("%.0f events/s (%.2f×)", rate, rate/drate),
		Baseline: fmt.Sprintf("direct produce: %.0f events/s", drate),
		Verdict:  verdict(rate >= 0.5*drate),
	}}, nil
}
