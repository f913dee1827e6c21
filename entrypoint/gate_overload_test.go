package entrypoint

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servicewright/servicewright/entrypoint/admission"
)

// simulate offers a Gate with the default limiter a constant arrival rate for d on a
// simulated server whose every request takes service: on one core, served in order
// (a FIFO queue: a request admitted behind n others waits for them), or, with
// parallel, all at once (a service waiting on I/O). It returns
// the goodput (answers within a second, per second) and the p99 latency of the
// answered requests over the second half of d.
func simulate(t *testing.T, rate float64, service time.Duration, parallel bool, d time.Duration) (goodput float64, p99 time.Duration) {
	return simulateWith(t, admission.Config{}, rate, service, parallel, d)
}

func simulateWith(t *testing.T, cfg admission.Config, rate float64, service time.Duration, parallel bool, d time.Duration) (goodput float64, p99 time.Duration) {
	lim, err := admission.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var g Gate
	if lim != nil { // nil: admission off
		g.SetLimiter(lim)
	}
	type req struct {
		t      Ticket
		arrive time.Time
		done   time.Time
	}
	var queue []req
	var lat []time.Duration
	start := time.Now()
	measureFrom := start.Add(d / 2)
	finish := func(upTo time.Time) {
		for len(queue) > 0 && !queue[0].done.After(upTo) {
			r := queue[0]
			queue = queue[1:]
			time.Sleep(time.Until(r.done))
			r.t.Leave()
			if !r.arrive.Before(measureFrom) && r.done.Sub(r.arrive) <= time.Second {
				lat = append(lat, r.done.Sub(r.arrive))
			}
		}
	}
	interval := time.Duration(float64(time.Second) / rate)
	var last time.Time
	for at := start; at.Before(start.Add(d)); at = at.Add(interval) {
		finish(at)
		time.Sleep(time.Until(at))
		tk, v := g.Admit(Ordinary)
		if v != Admitted {
			continue
		}
		begin := at
		if last.After(begin) && !parallel {
			begin = last
		}
		last = begin.Add(service)
		queue = append(queue, req{t: tk, arrive: at, done: last})
	}
	finish(start.Add(d + time.Hour))
	slices.Sort(lat)
	if len(lat) == 0 {
		return 0, 0
	}
	return float64(len(lat)) / (d / 2).Seconds(), lat[len(lat)*99/100]
}

// Under a simulated overload the default limiter keeps goodput near capacity and
// the latency of what it admits near the unloaded latency: the goal make bench
// measures on a real server (bench/peers), here on a deterministic model of one.
// With admission off, the same model at 2× admits everything and answers nothing in
// time.
func TestGateOverloadSimulated(t *testing.T) {
	const service = 2 * time.Millisecond // capacity 500/s
	var p99Half time.Duration
	for _, load := range []float64{0.5, 1, 2, 4} {
		synctest.Test(t, func(t *testing.T) {
			goodput, p99 := simulate(t, load*500, service, false, 60*time.Second)
			t.Logf("%.1f× capacity: goodput %.0f/s (%.2f×), p99 %v", load, goodput, goodput/500, p99)
			want := min(load, 1) * 500 * 0.9
			if goodput < want {
				t.Errorf("%.1f× capacity: goodput %.0f/s, want ≥ %.0f", load, goodput, want)
			}
			if load == 0.5 {
				p99Half = p99
			} else if p99 > 3*p99Half {
				t.Errorf("%.1f× capacity: p99 %v, want ≤ 3× the %v at 0.5×", load, p99, p99Half)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		goodput, _ := simulateWith(t, admission.Config{Off: true}, 1000, service, false, 60*time.Second)
		if goodput > 50 {
			t.Errorf("admission off at 2×: goodput %.0f/s; the model should collapse without a limit", goodput)
		}
	})
}

// A service that waits rather than computes answers as fast under any concurrency:
// the limiter must climb out of the way, not shed.
func TestGateOverloadSimulatedIOBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2000/s of 50 ms each: 100 in flight, five times the initial limit.
		goodput, p99 := simulate(t, 2000, 50*time.Millisecond, true, 60*time.Second)
		if goodput < 0.99*2000 || p99 != 50*time.Millisecond {
			t.Fatalf("goodput %.0f/s, p99 %v; want all 2000/s answered in 50ms once the limit climbed", goodput, p99)
		}
	})
}
