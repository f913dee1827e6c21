package admission

import (
	"math"
	"testing"
	"time"
)

// FuzzLimiter drives a Limiter with whatever it may measure — latencies negative,
// zero or of hours, windows of one sample or a million, a scheduler that reports
// any wait, CPU time that stands still or leaps — and holds it to its promise:
// the limit is never NaN, never below MinLimit (so never zero or negative) and
// never above MaxLimit, and the share is a fraction. The seed corpus runs in every
// `go test`; `go test -fuzz FuzzLimiter` explores further.
//
// Each op is three bytes: what happens, and two arguments.
func FuzzLimiter(f *testing.F) {
	// Latencies of 0 (a clock too coarse for the handler) over a whole window.
	zero := make([]byte, 0, 33)
	for range minSamples + 1 {
		zero = append(zero, 0, 0, 1)
	}
	f.Add(uint16(1), uint16(1000), uint16(10), append(zero, 2, 200, 1, 0, 0, 1))
	f.Add(uint16(1), uint16(1000), uint16(100), []byte{0, 10, 5, 2, 200, 0, 0, 63, 1, 1, 0, 0})
	f.Add(uint16(1), uint16(1), uint16(10), []byte{0, 0, 0, 0, 0, 0, 2, 255, 255, 0, 0, 0})
	f.Add(uint16(5), uint16(50), uint16(10), []byte{3, 255, 255, 0, 128, 1, 2, 11, 0, 0, 200, 9, 4, 1, 1})
	f.Add(uint16(1), uint16(65535), uint16(1000), []byte{0, 62, 255, 0, 62, 255, 2, 1, 0, 0, 62, 255, 1, 0, 0, 2, 0, 1})
	f.Add(uint16(2), uint16(20), uint16(10), []byte{0, 128, 3, 0, 130, 3, 0, 129, 3, 2, 10, 0, 0, 1, 3, 0, 0, 3})
	f.Fuzz(func(t *testing.T, minLimit, maxLimit, windowMs uint16, ops []byte) {
		cfg := Config{MinLimit: int(minLimit), MaxLimit: int(maxLimit), Window: time.Duration(windowMs) * time.Millisecond}
		cfg.ProbeInterval = max(floorProbeInterval, probeWindows*cfg.Window)
		l, err := New(cfg)
		if err != nil {
			return // refused: TestConfigBounds holds the refusals to their floors and ceilings
		}
		m := &machine{procs: 1, window: l.cfg.Window}
		l.cpuTime = m.cpuTime
		l.waitedTime = m.waited
		l.queueLong = m.long
		l.setWaits(m.read)
		now := int64(0)
		for i := 0; i+2 < len(ops); i += 3 {
			a, b := ops[i+1], ops[i+2]
			switch ops[i] % 5 {
			case 0: // a sample: 0, or ±2^(a%64−1) ns (a ≥ 128 negative), b in flight
				rtt := int64(0)
				if a%64 != 0 {
					rtt = 1 << (a%64 - 1)
				}
				if a >= 128 {
					rtt = -rtt
				}
				l.record(now, rtt, int(b))
			case 1: // a refusal for the limit
				l.refuse()
			case 2: // time passes: a·b ms
				now += int64(a) * int64(b) * int64(time.Millisecond)
			case 3: // the scheduler and the CPU clock move, by anything
				m.waits += uint64(a)
				m.wsum += math.Ldexp(float64(b), int(a%64)-32)
				m.cpu += time.Duration(int64(b) << (a % 40))
				m.held += time.Duration(int64(a) << (b % 40))
			case 4: // a unit asks the run queue
				m.runnable = uint64(a % 4)
				l.admit()
			}
			if lim := l.Limit(); lim < l.cfg.MinLimit || lim > l.cfg.MaxLimit || math.IsNaN(l.est) {
				t.Fatalf("op %d: limit %d (estimate %v), want within [%d, %d]", i/3, lim, l.est, l.cfg.MinLimit, l.cfg.MaxLimit)
			}
			if s := l.Share(); !(s >= 0 && s <= 1) {
				t.Fatalf("op %d: share %v, want a fraction", i/3, s)
			}
		}
	})
}
