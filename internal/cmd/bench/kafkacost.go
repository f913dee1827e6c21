package main

import (
	"fmt"
	"slices"
)

// kafkaVariants are BenchmarkConsume's Consumer variants, each compared with the raw
// kafka-go loop of the same run.
var kafkaVariants = []struct {
	name, figure string
	target       float64
}{
	{"kafkaentry", "kafkaentry vs a raw kafka-go fetch/commit loop, same kfake broker", 0.95},
	{"kafkaentry-traced", "kafkaentry traced, every span sampled into a batch processor (exporter discards) vs raw kafka-go", 0.70},
	{"kafkaentry-traced-1pct", "kafkaentry traced, 1% ratio sampler, batch processor vs raw kafka-go", 0.95},
}

// kafkaCostFigures runs BenchmarkConsume in at least 5 separate processes, one after
// the other; each run measures raw kafka-go and every Consumer variant in turn, so
// that the ratio of a run compares figures taken moments apart on this shared
// machine. A variant's ratio is raw kafka-go's CPU time per message over the
// variant's (the process's user and system time from the first message handled to
// the last, the in-process broker's included: the cost per message, which
// contention on a shared machine disturbs less than the throughput); the row prints
// the median of the runs' ratios with their minimum and maximum, and the median of
// the throughput ratios beside it.
func kafkaCostFigures(e env) ([]row, error) {
	runs := max(e.runs, 5)
	rates := map[string][]float64{} // msgs/s ratio to raw, per run
	costs := map[string][]float64{} // cpu-ns/msg ratio, raw's over the variant's, per run
	cpu := map[string][]float64{}   // cpu-ns/msg, per run
	var raws []float64              // raw msgs/s, per run
	for range runs {
		r, err := goBench("./entrypoint/kafkaentry/", "^BenchmarkConsume$", 1, "-benchtime", "10x")
		if err != nil {
			return nil, err
		}
		raw := r["BenchmarkConsume/raw-kafka-go"]
		if len(raw["msgs/s"]) != 1 {
			return nil, fmt.Errorf("BenchmarkConsume/raw-kafka-go: no msgs/s in %v", r)
		}
		if len(raw["cpu-ns/msg"]) != 1 {
			return nil, fmt.Errorf("BenchmarkConsume/raw-kafka-go: no cpu-ns/msg in %v", r)
		}
		raws = append(raws, raw["msgs/s"][0])
		cpu["raw-kafka-go"] = append(cpu["raw-kafka-go"], raw["cpu-ns/msg"]...)
		for _, v := range kafkaVariants {
			ours := r["BenchmarkConsume/"+v.name]
			if len(ours["msgs/s"]) != 1 || len(ours["cpu-ns/msg"]) != 1 {
				return nil, fmt.Errorf("BenchmarkConsume/%s: no msgs/s in %v", v.name, r)
			}
			rates[v.name] = append(rates[v.name], ours["msgs/s"][0]/raw["msgs/s"][0])
			costs[v.name] = append(costs[v.name], raw["cpu-ns/msg"][0]/ours["cpu-ns/msg"][0])
			cpu[v.name] = append(cpu[v.name], ours["cpu-ns/msg"]...)
		}
	}
	var rows []row
	for _, v := range kafkaVariants {
		ratio := median(costs[v.name])
		rows = append(rows, row{
			Figure: fmt.Sprintf("%s (%d runs)", v.figure, runs),
			Target: fmt.Sprintf("CPU-per-message ratio ≥ %.2f", v.target),
			Measured: fmt.Sprintf("ratio %.2f (min %.2f, max %.2f), %.0f CPU-ns/msg; throughput ratio %.2f (min %.2f, max %.2f)",
				ratio, slices.Min(costs[v.name]), slices.Max(costs[v.name]), median(cpu[v.name]),
				median(rates[v.name]), slices.Min(rates[v.name]), slices.Max(rates[v.name])),
			Baseline: fmt.Sprintf("raw kafka-go %.0f msgs/s, %.0f CPU-ns/msg (the in-process broker's included)",
				median(raws), median(cpu["raw-kafka-go"])),
			Verdict: verdict(ratio >= v.target),
		})
	}
	return rows, nil
}
