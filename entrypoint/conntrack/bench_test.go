package conntrack

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// BenchmarkConnMoves measures what a request costs its connection's tracking: one
// move to idle after its answer and one back to busy when the next arrives (Idle,
// Busy), each goroutine on its own connection, as under a load of keep-alive
// clients. cpu-ns/op is the process's CPU time per pair of moves.
func BenchmarkConnMoves(b *testing.B) {
	tr, err := New(Config{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	var ru syscall.Rusage
	cpu := func() int64 {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Utime.Nano() + ru.Stime.Nano()
	}
	b.ReportAllocs()
	start := cpu()
	b.RunParallel(func(pb *testing.PB) {
		server, client := net.Pipe()
		defer client.Close()
		c := tr.follow(server, time.Time{})
		defer c.Close()
		for pb.Next() {
			c.Idle()
			c.Busy()
		}
	})
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
