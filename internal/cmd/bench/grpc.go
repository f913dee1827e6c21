package main

import "fmt"

// grpcFigure compares unary RPC throughput through grpcentry (Gate, panic recovery,
// RED metrics) with a bare grpc.Server serving the same handler. Each run measures
// both, one right after the other in separate processes, in alternating order; the
// figure is the median of the runs' ratios, so that neither the machine's load
// drifting between runs nor going first or second favours one side.
func grpcFigure(e env) ([]row, error) {
	var ratios, entries, bares []float64
	for i := range e.runs {
		order := []string{"bare", "grpcentry"}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		got := map[string]float64{}
		for _, v := range order {
			r, err := goBench("./entrypoint/grpcentry/", "^BenchmarkUnary$/^"+v+"$", 1, "-benchtime", "2s")
			if err != nil {
				return nil, err
			}
			got[v] = median(r["BenchmarkUnary/"+v]["rpc/s"])
		}
		if got["bare"] == 0 || got["grpcentry"] == 0 {
			return nil, fmt.Errorf("BenchmarkUnary reported no rpc/s")
		}
		ratios = append(ratios, got["grpcentry"]/got["bare"])
		entries, bares = append(entries, got["grpcentry"]), append(bares, got["bare"])
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
