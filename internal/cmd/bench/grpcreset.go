package main

import (
	"fmt"
	"time"
)

// grpcResetFigure measures a normal unary call's median latency during an HTTP/2
// rapid-reset flood (2 attackers, reconnecting when cut) against its median with no
// flood, through grpcentry, beside a bare grpc.Server with grpc-go's defaults under
// the same flood (BenchmarkRapidReset). The attackers run in the benchmark's process,
// so they take the same cores as the server.
func grpcResetFigure(e env) ([]row, error) {
	r, err := goBench("./entrypoint/grpcentry/", "^BenchmarkRapidReset$", e.runs, "-benchtime", "1000x")
	if err != nil {
		return nil, err
	}
	p := func(name, metric string) time.Duration {
		return time.Duration(median(r["BenchmarkRapidReset/"+name][metric]))
	}
	quiet, flood := p("grpcentry/quiet", "p50-ns"), p("grpcentry/flood", "p50-ns")
	if quiet == 0 || flood == 0 {
		return nil, fmt.Errorf("BenchmarkRapidReset reported no p50-ns")
	}
	ratio := float64(flood) / float64(quiet)
	return []row{{
		Figure: "grpcentry: a normal call during an HTTP/2 rapid-reset flood (2 attackers, loopback)",
		Target: "p50 ≤ 3× its p50 without the flood",
		Measured: fmt.Sprintf("p50 %s during, %s before (%.2f×); p99 %s during",
			flood.Round(time.Microsecond), quiet.Round(time.Microsecond), ratio, p("grpcentry/flood", "p99-ns").Round(time.Millisecond)),
		Baseline: fmt.Sprintf("bare grpc-go: p50 %s during, %s before; p99 %s during",
			p("bare/flood", "p50-ns").Round(time.Microsecond), p("bare/quiet", "p50-ns").Round(time.Microsecond),
			p("bare/flood", "p99-ns").Round(time.Millisecond)),
		Verdict: verdict(ratio <= 3),
	}}, nil
}
