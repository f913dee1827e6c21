package main

import "fmt"

// grpcFigure compares unary RPC throughput through grpcentry (Gate, panic recovery,
// RED metrics) with a bare grpc.Server serving the same handler. Each run measures
// both, one right after the other, and gives one ratio; the figure is the median of
// the runs' ratios, so that the machine's load drifting between runs cancels out.
func grpcFigure(e env) ([]row, error) {
	var ratios, entries, bares []float64
	for range e.runs {
		r, err := goBench("./entrypoint/grpcentry/", "^BenchmarkUnary$", 1, "-benchtime", "2s")
		if err != nil {
			return nil, err
		}
		entry, bare := median(r["BenchmarkUnary/grpcentry"]["rpc/s"]), median(r["BenchmarkUnary/bare"]["rpc/s"])
		if bare == 0 {
			return nil, fmt.Errorf("BenchmarkUnary reported no rpc/s")
		}
		ratios, entries, bares = append(ratios, entry/bare), append(entries, entry), append(bares, bare)
	}
	ratio := median(ratios)
	return []row{{
		Figure:   "grpcentry vs bare grpc-go, same handler, unary RPCs on loopback",
		Target:   "throughput ratio ≥ 0.97",
		Measured: fmt.Sprintf("%.0f rpc/s (median ratio %.3f)", median(entries), ratio),
		Baseline: fmt.Sprintf("bare grpc.Server %.0f rpc/s", median(bares)),
		Verdict:  verdict(ratio >= 0.97),
	}}, nil
}
