package main

import (
	"fmt"
	"regexp"
)

// grpcVariants are BenchmarkUnary's rows that grpcFigure runs, each run in turn.
var grpcVariants = []string{"bare", "grpcentry", "grpcentry+trace-all", "grpcentry+trace-1pct"}

// grpcFigure compares unary RPC throughput through grpcentry (Gate, panic recovery,
// RED metrics), and through grpcentry tracing every call or 1 % of them (the
// interceptor's span, batch processor, discarding exporter), with a bare grpc.Server
// serving the same handler. Each run measures every variant, one right after the
// other in separate processes, starting one variant further on each time; the
// figure is the median of the runs' ratios, each against the bare run beside it,
// with their spread, so that neither the machine's load drifting between runs nor
// going first favours one side.
func grpcFigure(e env) ([]row, error) {
	// The verdict is taken on the process's CPU time per call (bare's over the
	// variant's: a throughput ratio), which holds on a machine shared with other
	// work where rpc/s swings; the ratio of rpc/s is printed beside.
	got, cpu := map[string][]float64{}, map[string][]float64{}
	for i := range e.runs {
		for j := range grpcVariants {
			v := grpcVariants[(i+j)%len(grpcVariants)]
			r, err := goBench("./entrypoint/grpcentry/", "^BenchmarkUnary$/^"+regexp.QuoteMeta(v)+"$", 1, "-benchtime", "2s")
			if err != nil {
				return nil, err
			}
			m := r["BenchmarkUnary/"+v]
			rps, c := median(m["rpc/s"]), median(m["cpu-µs/op"])
			if rps == 0 || c == 0 {
				return nil, fmt.Errorf("BenchmarkUnary/%s reported no rpc/s or cpu-µs/op", v)
			}
			got[v], cpu[v] = append(got[v], rps), append(cpu[v], c)
		}
	}
	bare := median(got["bare"])
	ratioRow := func(figure, v, target string, ok func(float64) bool) row {
		r, spread := ratios(cpu["bare"], cpu[v])
		_, tspread := ratios(got[v], got["bare"])
		return row{
			Figure:   figure,
			Target:   target,
			Measured: fmt.Sprintf("%.1f µs CPU/call (ratio %s); %.0f rpc/s (ratio %s)", median(cpu[v]), spread, median(got[v]), tspread),
			Baseline: fmt.Sprintf("bare grpc.Server %.1f µs CPU/call, %.0f rpc/s", median(cpu["bare"]), bare),
			Verdict:  verdict(ok(r)),
		}
	}
	reported := func(r float64) bool { return r > 0 }
	return []row{
		ratioRow("grpcentry vs bare grpc-go, same handler, unary RPCs on loopback", "grpcentry",
			fmt.Sprintf("throughput ratio ≥ 0.97, as CPU per call (median of %d interleaved runs)", e.runs), func(r float64) bool { return r >= 0.97 }),
		ratioRow("grpcentry, every call traced (the interceptor's span, AlwaysSample, batch processor, discarding exporter) vs bare grpc-go",
			"grpcentry+trace-all", "reported", reported),
		ratioRow("grpcentry, 1 % of calls traced (ParentBased(TraceIDRatioBased(0.01)), batch processor) vs bare grpc-go",
			"grpcentry+trace-1pct", "reported", reported),
	}, nil
}
